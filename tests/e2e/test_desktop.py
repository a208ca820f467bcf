"""The tray app on the desktop's buses, under Xvfb on a private D-Bus session bus.

Run by `make test-app` as: xvfb-run -a dbus-run-session -- python3 tests/e2e/test_desktop.py

Fakes that speak the real protocols (tests/e2e/dbus_fakes.py) stand in for what a CI machine does
not have: a tray host (org.kde.StatusNotifierWatcher), a notification daemon
(org.freedesktop.Notifications) and systemd-logind on a private system bus (login1 Inhibit). The
sessions are headless `nightshift run` processes: the app sees them through the shared journal and
reaches them through their control sockets, as it does on a real desktop.
"""

import json
import os
import random
import sqlite3
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dbus_fakes  # noqa: E402
from apptest import APP, CAPTURES, CLI, ROOT, isolated_env, require_binaries  # noqa: E402
from x11 import X11  # noqa: E402



def replay(name):
    """A shell line that draws one of the real client's screens and stays."""
    title = (CAPTURES / f"{name}.title.txt").read_text().strip()
    return (f"printf '\\033]0;%s\\007' {json.dumps(title)}; cat {CAPTURES / (name + '.ansi.txt')}; "
            "exec sleep 600")


def wait(what, fn, timeout=20, every=0.2):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


class Desktop(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_binaries()
        cls.tmp = tempfile.TemporaryDirectory()
        base = Path(cls.tmp.name)
        # The fake UPower reports a laptop on battery (its lid set to suspend by the fake logind).
        os.environ["NIGHTSHIFT_FAKE_ON_BATTERY"] = "1"
        cls.fakes = dbus_fakes.Fakes("watcher", "notifications", "login1", "upower").__enter__()
        cls.env = cls.fakes.env(isolated_env(base, NO_AT_BRIDGE="1"))
        cls.app_log = open(base / "app.log", "wb")
        launched = time.monotonic()
        cls.app = subprocess.Popen([str(APP)], env=cls.env, stdin=subprocess.DEVNULL,
                                   stdout=cls.app_log, stderr=subprocess.STDOUT)
        registered = cls.fakes.wait_for("watcher", lambda r: r.get("call") == "RegisterStatusNotifierItem",
                                        timeout=30, what="the tray item to register")
        # A figure for CONTRIBUTING ("Performance"), printed, never asserted.
        print(f"\nstart-up: the tray item registered {time.monotonic() - launched:.2f} s after launch",
              file=sys.stderr)
        cls.item = (registered["service"], registered["path"])
        cls.runs = []

    @classmethod
    def tearDownClass(cls):
        for run in cls.runs:
            if run.poll() is None:
                run.kill()
                run.wait()
        if cls.app.poll() is None:
            cls.app.kill()
            cls.app.wait()
        cls.app_log.close()
        cls.fakes.__exit__(None, None, None)
        cls.tmp.cleanup()

    def app_output(self):
        return (Path(self.tmp.name) / "app.log").read_text(errors="replace")[-3000:]

    def menu(self):
        props = dbus_fakes.sni_properties(*self.item)
        return dbus_fakes.menu_layout(self.item[0], str(props["Menu"]))

    def labels(self):
        return [m.label for m in self.menu() if m.visible and m.type != "separator"]

    def start_run(self, *args, script, cwd=None):
        """A headless session (in `cwd`, else the test's own folder); returns its id."""
        # In a folder of the test's own: never the repository the tests run from.
        run = subprocess.Popen([str(CLI), "run", "--events", "-", *args, "--", "bash", "-c", script],
                               env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=cwd or self.tmp.name)
        self.runs.append(run)
        first = json.loads(run.stdout.readline())
        return run, first["session"]

    def stop_run(self, run, session):
        out = subprocess.run([str(CLI), "stop", session], env=self.env, capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        run.wait(30)

    def journal(self, session):
        out = subprocess.run([str(CLI), "journal", "--session", session, "--json"], env=self.env, capture_output=True,
                             text=True, timeout=30)
        return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]

    def test_1_the_tray_item_registers_and_its_menu_has_the_actions(self):
        props = dbus_fakes.sni_properties(*self.item)
        self.assertTrue(str(props.get("IconName", "")).endswith(".png"), props)
        type(self).idle_icon = Path(str(props["IconName"])).read_bytes()
        labels = wait("the menu", self.labels)
        for wanted in ("Nightshift — no sessions running", "New session…", "Ready for tonight?", "Pause all", "Resume all",
                       "Open Nightshift", "Quit"):
            self.assertIn(wanted, labels)

    def test_2_an_armed_run_holds_the_sleep_assertion_until_it_ends(self):
        # In a repository with work not committed: its end is salvaged after the exit, and the run
        # is still told as finished.
        repo = Path(self.tmp.name) / "armed-repo"
        repo.mkdir(exist_ok=True)
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        (repo / "draft.txt").write_text("not committed\n")
        run, session = self.start_run("--preset", "overnight", script="echo armed; exec sleep 600", cwd=repo)
        # The menu lists it, by directory and program, with its state.
        entry = wait("the session in the menu", lambda: [l for l in self.labels() if "· bash —" in l])
        self.assertTrue(any(s in entry[0] for s in ("working", "idle", "running")), entry)
        inhibits = wait("Inhibit for idle and sleep", lambda: [
            r for r in self.fakes.records("login1") if r.get("call") == "Inhibit"] if {
            r.get("what") for r in self.fakes.records("login1") if r.get("call") == "Inhibit"} >= {"idle", "sleep"}
            else None, timeout=30)
        for lock in inhibits:
            self.assertEqual((lock["who"], lock["mode"]), ("Nightshift", "block"))
        self.assertNotIn("handle-lid-switch", {r["what"] for r in inhibits}, "only idle and sleep")
        time.sleep(6)  # more than one of the app's checks (every 5 s)
        released = [r for r in self.fakes.records("login1") if r.get("event") == "released"]
        self.assertEqual(released, [], "held while the run is armed")

        self.stop_run(run, session)
        done = wait("both locks released", lambda: len(
            [r for r in self.fakes.records("login1") if r.get("event") == "released"]) >= 2 or None, timeout=30)
        self.assertTrue(done)
        finished = self.fakes.wait_for("notifications", lambda r: r.get("call") == "Notify"
                                       and r["summary"].endswith("finished"), timeout=20,
                                       what="the run-finished notification")
        self.assertIn("stopped on request", finished["body"])
        self.assertEqual(finished["app_name"], "Nightshift")

    def test_3_a_question_and_a_limit_are_notified_with_their_text(self):
        q_run, q = self.start_run("--agent", "claude", "--cols", "120", "--rows", "40", script=replay("question-mock"))
        question = self.fakes.wait_for("notifications", lambda r: r.get("call") == "Notify"
                                       and "waiting for you" in r["summary"], timeout=20, what="the question")
        self.assertEqual(question["body"], "Which database should the new service use?")
        self.assertIn("default", question["actions"], "clicking opens the session")

        l_run, l = self.start_run("--agent", "claude", "--cols", "120", "--rows", "40", script=replay("weekly-limit"))
        limit = self.fakes.wait_for("notifications", lambda r: r.get("call") == "Notify"
                                    and "usage limit" in r["summary"], timeout=20, what="the limit")
        self.assertRegex(limit["body"], r"^Resets at \d\d:\d\d\. ")
        # The question's session needs the user: the menu says so, and the icon is not the idle one.
        self.assertTrue(wait("the count", lambda: [x for x in self.labels() if "needs you" in x]))
        icon = Path(str(dbus_fakes.sni_properties(*self.item)["IconName"]))
        self.assertNotEqual(icon.read_bytes(), self.idle_icon, "the needs-you icon")

        # The usage-limit menu with auto-resume on is answered by Nightshift: a limit notification,
        # and no "waiting for you" for a dialog nobody has to answer.
        def count(what):
            return len([r for r in self.fakes.records("notifications")
                        if r.get("call") == "Notify" and what in r["summary"]])
        questions, limits = count("waiting for you"), count("usage limit")
        m_run, m = self.start_run("--agent", "claude", "--auto-resume", "--cols", "120", "--rows", "40",
                                  script=replay("weekly-menu.screen"))
        wait("the menu's limit notification", lambda: count("usage limit") > limits)
        answered = wait("the menu answered", lambda: [e for e in self.journal(m) if e["event"] == "automation"])
        self.assertEqual(answered[0]["change"], "menu_answered")
        self.assertTrue(answered[0]["detail"].startswith("with 2"), answered[0])
        time.sleep(3)
        self.assertEqual(count("waiting for you"), questions, "no question notification for the answered menu")
        for run, session in ((q_run, q), (l_run, l), (m_run, m)):
            self.stop_run(run, session)

    def test_4_a_second_launch_shows_the_first_ones_window(self):
        x = X11()
        window = x.find("Nightshift")
        x.request_close(window)
        wait("the window to hide", lambda: not x.is_viewable(window))
        second = subprocess.run([str(APP)], env=self.env, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        self.assertEqual(second.returncode, 0, second.stderr[-2000:])
        wait("the first instance's window to show again", lambda: x.is_viewable(window))
        self.assertIsNone(self.app.poll(), "the first instance runs on")

    def test_5_quit_in_the_tray_menu_quits(self):
        quit_item = [m for m in self.menu() if m.label == "Quit"][0]
        dbus_fakes.menu_click(self.item[0], str(dbus_fakes.sni_properties(*self.item)["Menu"]), quit_item.id)
        try:
            code = self.app.wait(20)
        except subprocess.TimeoutExpired:
            self.fail(f"the app did not quit; its output:\n{self.app_output()}")
        self.assertEqual(code, 0, self.app_output())

    def test_6_a_resume_outlives_a_logout_and_a_quit(self):
        # A headless run waits on a usage limit with auto-resume on; the logout's SIGTERM ends it.
        run, session = self.start_run("--agent", "claude", "--auto-resume", "--cols", "120", "--rows", "40",
                                      script=replay("weekly-limit"))
        wait("the resume armed", lambda: any(e["event"] == "resume_armed" for e in self.journal(session)))
        run.send_signal(signal.SIGTERM)
        run.wait(30)
        self.assertTrue(any(e["event"] == "resume_kept" for e in self.journal(session)), self.journal(session))

        # The next app start takes it up again, and its Quit says it keeps it.
        with open(Path(self.tmp.name) / "app2.log", "wb") as log:
            app = subprocess.Popen([str(APP)], env=self.env, stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.STDOUT)
            try:
                registered = self.fakes.wait_for("watcher", lambda r: r.get("call") == "RegisterStatusNotifierItem"
                                                 and (r["service"], r["path"]) != self.item, timeout=30,
                                                 what="the new app's tray item")
                item = (registered["service"], registered["path"])
                restored = wait("the session restored", lambda: [e for e in self.journal(session)
                                                                if e["event"] == "limit_detected"
                                                                and e["source"] == "journal"])
                self.assertTrue(restored)

                labels = []

                def quit_item():
                    props = dbus_fakes.sni_properties(*item)
                    items = dbus_fakes.menu_layout(item[0], str(props["Menu"]))
                    labels[:] = [m.label for m in items]
                    return [m for m in items if m.label.startswith("Quit (keeps 1 pending resume")]
                try:
                    found = wait("Quit saying it keeps the resume", quit_item)
                except AssertionError as e:
                    raise AssertionError(f"{e}; the menu: {labels}; the journal: {self.journal(session)}") from e
                dbus_fakes.menu_click(item[0], str(dbus_fakes.sni_properties(*item)["Menu"]), found[0].id)
                self.assertEqual(app.wait(30), 0)
            finally:
                if app.poll() is None:
                    app.kill()
                    app.wait()
        said = self.fakes.wait_for("notifications", lambda r: r.get("call") == "Notify"
                                   and "pending resumes are kept" in r["summary"], timeout=10, what="the quit notice")
        self.assertIn("resumes when Nightshift next starts", said["body"])
        kept = [e for e in self.journal(session) if e["event"] == "resume_kept"]
        self.assertEqual(len(kept), 2, "kept again at the Quit")
        listed = subprocess.run([str(CLI), "sessions"], env=self.env, capture_output=True, text=True, timeout=30).stdout
        self.assertIn("resume kept", next(line for line in listed.splitlines() if line.startswith(session)))

    def test_7_a_headless_loop_holds_its_own_sleep_inhibitor_until_it_ends(self):
        # A harness that answers like `claude -p --output-format stream-json` after a few seconds.
        stream = ROOT / "tests" / "fixtures" / "claude-code" / "2.1.332" / "headless" / "stream-json-fast.jsonl"
        harness = Path(self.tmp.name) / "fake-claude"
        harness.write_text(f"#!/bin/sh\nsleep 3\ncat {stream}\n")
        harness.chmod(0o755)
        work = Path(self.tmp.name) / "loop-project"
        work.mkdir(exist_ok=True)
        # A stand-in harness has no place for the client's sandbox: it runs without one, as said.
        loop = subprocess.Popen([str(CLI), "loop", "--program", str(harness), "--prompt", "tidy up",
                                 "--max-iterations", "2", "--cwd", str(work), "--no-sandbox", "--events", "-"],
                                env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.runs.append(loop)
        session = json.loads(loop.stdout.readline())["session"]
        ours = lambda: [r for r in self.fakes.records("login1")  # noqa: E731
                        if r.get("call") == "Inhibit" and session in r.get("why", "")]
        locks = wait("the loop's own Inhibit", lambda: ours() if {r["what"] for r in ours()} >= {"idle", "sleep"}
                     else None, timeout=30)
        self.assertTrue(all(r["who"] == "Nightshift" and r["mode"] == "block" for r in locks), locks)
        ids = {r["id"] for r in locks}
        self.assertEqual(loop.wait(60), 0, loop.stderr.read())
        released = wait("the loop's locks released", lambda: {
            r["id"] for r in self.fakes.records("login1") if r.get("event") == "released"} >= ids or None)
        self.assertTrue(released)


    def doctor(self, env):
        out = subprocess.run([str(CLI), "doctor", "--json", "--no-probe", "--agent", "claude",
                              "--cwd", self.tmp.name], env=env, capture_output=True, text=True, timeout=60)
        report = json.loads(out.stdout)
        self.assertEqual(out.returncode, 0 if report["ok"] else 1, out.stderr)
        return {c["id"]: c for c in report["checks"]}

    def test_8_doctor_reads_the_desktop_and_the_power_from_their_buses(self):
        checks = self.doctor(self.env)
        for id in ["desktop.display", "desktop.tray", "desktop.notifications", "desktop.logind"]:
            self.assertEqual(checks[id]["status"], "pass", checks[id])
        self.assertEqual((checks["power.ac"]["status"], checks["power.ac"]["detail"]), ("warn", "on battery"))
        lid = checks["power.lid"]
        self.assertEqual(lid["status"], "warn", lid)
        self.assertIn("closing the lid will suspend the machine", lid["detail"])
        self.assertIn("HandleLidSwitch=ignore", lid["remedy"])
        asked = {r.get("name") for r in self.fakes.records("upower") if r.get("call") == "Get"}
        self.assertTrue({"OnBattery", "LidIsPresent"} <= asked, asked)

        # The same desktop with none of them: an empty session bus and no system bus at all.
        empty = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1"],
                                 stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        try:
            address = empty.stdout.readline().strip()
            bare = dict(self.env, DBUS_SESSION_BUS_ADDRESS=address,
                        DBUS_SYSTEM_BUS_ADDRESS=f"unix:path={self.tmp.name}/no-system-bus")
            checks = self.doctor(bare)
        finally:
            empty.terminate()
            empty.wait(10)
            empty.stdout.close()
        for id in ["desktop.tray", "desktop.notifications", "desktop.logind"]:
            self.assertEqual(checks[id]["status"], "warn", checks[id])
            self.assertTrue(checks[id]["remedy"], checks[id])
        self.assertIn("UPower is not running", checks["power.ac"]["detail"])
        self.assertNotIn("power.lid", checks)

    def test_9_the_app_killed_at_random_moments_loses_nothing(self):
        """SIGKILL of the app at random moments, a working headless run beside it: the journal stays
        whole, no session goes missing, the restarted app restores its session with its pending resume,
        and no agent ever runs twice. NIGHTSHIFT_SOAK_KILLS sets how many (20 for the figures)."""
        if self.app.poll() is None:  # the suite's own app (test_5 quits it; alone, this test does)
            self.app.terminate()
            self.app.wait(30)
        kills = int(os.environ.get("NIGHTSHIFT_SOAK_KILLS", "5"))
        rng = random.Random(int(os.environ.get("NIGHTSHIFT_SOAK_SEED", "7")))
        # The app's session: one kept while it waited for a limit, taken up by every app start.
        run, waiting = self.start_run("--agent", "claude", "--auto-resume", "--cols", "120", "--rows", "40",
                                      script=replay("weekly-limit"))
        wait("the resume armed", lambda: any(e["event"] == "resume_armed" for e in self.journal(waiting)))
        run.send_signal(signal.SIGTERM)
        run.wait(30)
        # Beside it, a headless run that keeps working throughout.
        beside, working = self.start_run(script="while true; do echo tick; sleep 0.2; done")
        journal = Path(self.env["NIGHTSHIFT_STATE_DIR"]) / "journal.sqlite3"

        def agents():
            """The session's agents: processes whose environment names the session (an exec keeps it)
            and whose parent's does not. The agent's own children (the `cat` of its script, for a
            moment) inherit the environment, and are part of that one agent."""
            needle = f"NIGHTSHIFT_SESSION={waiting}".encode()
            parents = {}
            for proc in Path("/proc").iterdir():
                try:
                    environ = (proc / "environ").read_bytes().split(b"\0")
                    status = (proc / "status").read_text()
                except OSError:
                    continue
                if needle in environ and "\nState:\tZ" not in status:
                    ppid = next((l.split()[1] for l in status.splitlines() if l.startswith("PPid:")), "")
                    parents[proc.name] = ppid
            return sum(1 for ppid in parents.values() if ppid not in parents)

        survived = 0
        for n in range(kills):
            restores = len([e for e in self.journal(waiting) if e["event"] == "limit_detected" and e["source"] == "journal"])
            with open(Path(self.tmp.name) / f"soak-app-{n}.log", "wb") as log:
                app = subprocess.Popen([str(APP)], env=self.env, stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=subprocess.STDOUT)
            try:
                wait("the session restored", lambda: len([e for e in self.journal(waiting)
                                                         if e["event"] == "limit_detected"
                                                         and e["source"] == "journal"]) > restores, timeout=30)
                self.assertEqual(agents(), 1, f"start {n}: one agent")
                time.sleep(rng.uniform(0.0, 1.5))
            finally:
                app.kill()
                app.wait(10)
            wait("the app's agent gone with it", lambda: agents() == 0, timeout=10)
            with sqlite3.connect(journal) as db:
                self.assertEqual(db.execute("PRAGMA integrity_check").fetchone()[0], "ok", f"kill {n}")
            listed = subprocess.run([str(CLI), "sessions", "--json"], env=self.env, capture_output=True, text=True,
                                    timeout=30)
            ids = {r["id"] for r in json.loads(listed.stdout)}
            self.assertTrue({waiting, working} <= ids, f"kill {n}: {ids}")
            self.assertIsNone(beside.poll(), "the headless run beside goes on")
            survived += 1
        print(f"\napp soak: {survived} of {kills} SIGKILLs survived (seed {os.environ.get('NIGHTSHIFT_SOAK_SEED', '7')})")
        # One last start restores it once more, with exactly one agent. A logout's SIGTERM then ends
        # the app as its Quit does: the agent stopped, the resume kept, and a clean exit.
        kept = lambda: [e for e in self.journal(waiting) if e["event"] == "resume_kept"]  # noqa: E731
        before = len(kept())
        with open(Path(self.tmp.name) / "soak-app-last.log", "wb") as log:
            app = subprocess.Popen([str(APP)], env=self.env, stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.STDOUT)
        try:
            wait("one agent", lambda: agents() == 1, timeout=30)
            time.sleep(1)
            self.assertEqual(agents(), 1, "never twice")
            app.send_signal(signal.SIGTERM)
            code = app.wait(30)
            log_text = (Path(self.tmp.name) / "soak-app-last.log").read_text(errors="replace")[-3000:]
            self.assertEqual(code, 0, f"the app ends on SIGTERM as on Quit; its output:\n{log_text}")
            self.assertEqual(agents(), 0, "its agent was stopped with it")
            self.assertEqual(len(kept()), before + 1, self.journal(waiting)[-5:])
            stops = [e for e in self.journal(waiting) if e["event"] == "stop_requested"]
            self.assertEqual((stops[-1]["kind"], stops[-1]["source"]), ("shutdown", "SIGTERM to nightshift-app"))
        finally:
            if app.poll() is None:
                app.kill()
                app.wait()
        self.stop_run(beside, working)

    def test_9b_the_app_start_brings_back_a_night_whose_nightshift_was_killed(self):
        """A working session with respawn armed for 8 hours and a budget; its `nightshift run` is
        SIGKILLed (no word to the journal). The next app start restores it, working again within 30 s,
        with the same armed hours and budget, and journals why and how long it was down."""
        if self.app.poll() is None:  # alone, this test ends the suite's own app first
            self.app.terminate()
            self.app.wait(30)
        run, session = self.start_run("--respawn", "--duration", "8h", "--max-cost-usd", "5",
                                      script="while true; do echo tick; sleep 0.2; done")
        wait("the session working", lambda: self.row(session)["state"] == "working")
        armed = self.options(session)
        self.assertTrue(armed["respawn_until"], armed)
        run.kill()
        run.wait(30)
        with open(Path(self.tmp.name) / "restore-app.log", "wb") as log:
            launched = time.monotonic()
            app = subprocess.Popen([str(APP)], env=self.env, stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.STDOUT)
        try:
            row = wait("the session working again under the app",
                       lambda: (lambda r: r if r["state"] == "working" and r["owner_pid"] == app.pid else None)(
                           self.row(session)), timeout=60)
            latency = time.monotonic() - launched
            # A figure for CONTRIBUTING, asserted against the bound.
            print(f"\napp start to working again: {latency:.1f} s", file=sys.stderr)
            self.assertLess(latency, 30, row)
            said = [e for e in self.journal(session) if e["event"] == "restored"]
            self.assertEqual(len(said), 1, said)
            self.assertIn("respawn was armed", said[0]["reason"])
            now = self.options(session)
            self.assertEqual(now["respawn_until"], armed["respawn_until"], "the same armed hours, not a fresh 8")
            self.assertEqual(now["budget"]["max_cost_usd"], 5.0, now)
            out = subprocess.run([str(CLI), "stop", session], env=self.env, capture_output=True, text=True,
                                 timeout=30)
            self.assertEqual(out.returncode, 0, out.stderr)
        finally:
            app.terminate()
            try:
                app.wait(30)
            except subprocess.TimeoutExpired:
                app.kill()
                app.wait()

    def test_9c_the_app_killed_with_two_sessions_the_keeper_takes_both_over(self):
        """The app hosting two armed sessions is SIGKILLed (an OOM kill, a crash of the webview): the
        keeper (`nightshift restore --keep`, what the user service runs) takes both over within 30 s,
        each once, nothing typed."""
        if self.app.poll() is None:  # alone, this test ends the suite's own app first
            self.app.terminate()
            self.app.wait(30)
        sessions = []
        for _ in range(2):
            run, session = self.start_run("--respawn", "--duration", "8h",
                                          script="while true; do echo tick; sleep 0.2; done")
            wait("the session working", lambda: self.row(session)["state"] == "working")
            run.kill()
            run.wait(30)
            sessions.append(session)
        logs = Path(self.tmp.name)
        with open(logs / "adopt-app.log", "wb") as log:
            app = subprocess.Popen([str(APP)], env=self.env, stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.STDOUT)
        keeper = None
        try:
            for session in sessions:
                wait("the app's own session", lambda: self.row(session)["owner_pid"] == app.pid
                     and self.row(session)["state"] == "working", timeout=60)
            with open(logs / "adopt-keeper.log", "wb") as log:
                keeper = subprocess.Popen([str(CLI), "restore", "--keep"], env=self.env, stdin=subprocess.DEVNULL,
                                          stdout=log, stderr=subprocess.STDOUT)
            time.sleep(4)  # past the keeper's first look: what follows is an adoption
            killed = time.monotonic()
            app.kill()
            app.wait(10)
            for session in sessions:
                wait("the keeper's session working", lambda: self.row(session)["owner_pid"] == keeper.pid
                     and self.row(session)["state"] == "working", timeout=30)
            took = time.monotonic() - killed
            print(f"\napp killed to both sessions working under the keeper: {took:.1f} s", file=sys.stderr)
            self.assertLess(took, 30)
            for session in sessions:
                adopted = [e for e in self.journal(session) if e["event"] == "adopted"]
                self.assertEqual(len(adopted), 1, adopted)
                self.assertIn(f"process {app.pid}) was gone", adopted[0]["why"])
                self.assertTrue(adopted[0]["by"].startswith("nightshift restore --keep (process"), adopted)
                out = subprocess.run([str(CLI), "stop", session], env=self.env, capture_output=True, text=True,
                                     timeout=30)
                self.assertEqual(out.returncode, 0, out.stderr)
        finally:
            for proc in (app, keeper):
                if proc is not None and proc.poll() is None:
                    proc.terminate()
                    try:
                        proc.wait(30)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait()

    def row(self, session):
        listed = subprocess.run([str(CLI), "sessions", "--json"], env=self.env, capture_output=True, text=True,
                                timeout=30)
        return next(r for r in json.loads(listed.stdout) if r["id"] == session)

    def options(self, session):
        """What the session is armed with, asked over its control socket."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(self.row(session)["control_socket"])
            s.sendall((json.dumps({"op": "options", "session": session}) + "\n").encode())
            reply = s.makefile().readline()
        return json.loads(reply)["options"]


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    failed = len(result.failures) + len(result.errors)
    skipped = len(result.skipped)
    print(f"desktop: {result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed or not result.wasSuccessful() else 0)
