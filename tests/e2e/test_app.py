"""End-to-end tests of the real tray app's window under Xvfb, through WebKitWebDriver.

Run by `make test-app` as: xvfb-run -a dbus-run-session -- python3 tests/e2e/test_app.py
Needs the built binaries (target/debug/nightshift and nightshift-app). Screenshots of the views are
written to tests/artifacts/.
"""

import datetime
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dbus_fakes  # noqa: E402
from apptest import (APP, CAPTURES, CLAUDE, CLI, ROOT, Attached, FakeNtfy, MockApi, claude_env,  # noqa: E402
                     isolated_env, require_binaries, require_real_client)
import webdriver  # noqa: E402
from webdriver import Driver  # noqa: E402
from x11 import X11  # noqa: E402

ARTIFACTS = ROOT / "tests" / "artifacts"
# Every top-level name of the window's nine classic scripts as they were when they shared one global
# scope (issue 29), file by file: core, list, terminal, session, options, views, timeline, ready, main.
# As ES modules none of them may be reachable from the page's global scope.
OLD_GLOBALS = """
    invoke listen $ FAILED app el svg localTime clock ago span plural isLive stateClass errorOf
    showError clearError noticeTimer notice call debounce renderList refresh refreshSoon pauseAll
    resumeAll term terminalTheme openTerminal heard drawn terminalGone closeTerminal takeOver release
    renderTakeOver focusTerminal describe renderFacts loadEvents renderIterations loadEventsSoon
    loadHandoff openSession loadLives closeSession screenTimer startScreen stopScreen loadScreen
    renderScreen stopOpen resumeOpen sendText SOURCE SETTING_FIELDS loadPresets presetByName presetLabel
    fillPresetSelect writeSettings readSettings sameSettings openOptions loadOptions renderOptions
    updatePresetButtons presetPicked settingEdited readSettingsQuiet configure enableRespawn
    disableRespawn RESUME_DEFAULTS writeResume readResume toggleAutoResume applyResume toggleHold
    resetBreakers BUILTIN_NAMES savePreset deletePreset deleteSelectedPreset selectOptionsTab
    prepareNewForm fillAccounts showNewStart newStart newKind showNewKind submitNew BAND_RANK bandName
    drawBars loadUsage toggleUsage renderTotals loadDigest loadMorning renderPower dismissedPowerWarning
    currentPowerWarning dismissPowerBanner renderUserPresets loadSettings notificationChanged renderPush
    savePush keepResumesChanged launchChanged TL tlScale tlTicks tlTitle drawTimeline drawPlan checkItem
    runReady loadPlan prepareReady newReadyAsked checkNewSession VIEWS show focusHeading loadOptionsSoon
    loadProblems
""".split()


class AppWindow(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_binaries()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        cls.tmp = tempfile.TemporaryDirectory()
        base = Path(cls.tmp.name)
        # Sessions started here run in the test's folder, never in the repository the tests run from
        # (a session's end salvages its working tree's uncommitted work).
        os.chdir(base)
        # A `claude` on the PATH that answers like `claude -p --output-format stream-json` (for loops).
        bin_dir = base / "bin"
        bin_dir.mkdir()
        stream = ROOT / "tests" / "fixtures" / "claude-code" / "2.1.332" / "headless" / "stream-json-fast.jsonl"
        # It notes the config directory it was given (the account), one line per run.
        cls.config_dirs = base / "claude-config-dirs"
        (bin_dir / "claude").write_text(
            f"#!/bin/sh\nprintf '%s\\n' \"$CLAUDE_CONFIG_DIR\" >> {cls.config_dirs}\nsleep 1\ncat {stream}\n")
        (bin_dir / "claude").chmod(0o755)
        # No logind here: the sleep assertion must fail as a warning, never a crash.
        cls.env = isolated_env(base, DBUS_SYSTEM_BUS_ADDRESS=f"unix:path={base / 'no-system-bus'}",
                               PATH=f"{bin_dir}:{os.environ['PATH']}")
        # The phone: the app pushes its own sessions' notices (read at start, like a headless run).
        cls.ntfy = FakeNtfy()
        (base / "config").mkdir(exist_ok=True)
        # An account of the user's: a client config directory of its own.
        cls.night_account = base / "claude-night"
        cls.night_account.mkdir()
        (base / "config" / "config.toml").write_text(
            f'[push]\nntfy = "{cls.ntfy.url("night")}"\nclick = "http://127.0.0.1/s/{{session}}"\n'
            f'[accounts.night]\nclaude = "{cls.night_account}"\n')
        # A session that ran and ended before the app started: the journal is the app's source.
        out = subprocess.run([str(CLI), "run", "--events", "-", "--", "bash", "-c", "echo hi; exit 3"],
                             env=cls.env, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        assert out.returncode == 3, out.stderr
        cls.seeded = json.loads(out.stdout.splitlines()[0])["session"]
        # It ran under the `night` account and read that account's plan usage (as the statusLine
        # would have stored it): the usage panel names the account.
        import sqlite3
        db = sqlite3.connect(Path(cls.env["NIGHTSHIFT_STATE_DIR"]) / "journal.sqlite3")
        db.execute("UPDATE sessions SET account = 'night', account_dir = ? WHERE id = ?",
                   (str(cls.night_account), cls.seeded))
        ts = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
        db.execute("INSERT INTO usage_samples (session, ts, five_hour_pct, seven_day_pct, account)"
                   " VALUES (?, ?, 91.0, 40.0, 'night')", (cls.seeded, ts))
        db.commit()
        db.close()
        # A start scheduled from a terminal whose process was then killed (a closed laptop lid, a
        # reboot): the app takes it over when it starts, and starts it at its time.
        cls.cli_marker = base / "scheduled-from-the-cli"
        due = time.strftime("%H:%M:%S", time.localtime(time.time() + 15))
        waiter = subprocess.Popen([str(CLI), "run", "--at", due, "--events", "-", "--", "bash", "-c",
                                   f"echo ran > {cls.cli_marker}"], env=cls.env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        cls.cli_scheduled = json.loads(waiter.stdout.readline())["session"]
        waiter.kill()
        waiter.wait(10)
        waiter.stdout.close()
        launched = time.monotonic()
        cls.driver = Driver(APP, cls.env, ARTIFACTS / "webkitwebdriver.log")
        # A figure for CONTRIBUTING ("Performance"), printed, never asserted: from launch (through
        # WebKitWebDriver) to the window showing the journal's sessions.
        cls.driver.wait_for("the sessions list", lambda: cls.driver.run_js(
            "return !!document.querySelector('#sessions tbody tr')"))
        print(f"\nstart-up: the window showed the sessions {time.monotonic() - launched:.2f} s after launch",
              file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.driver.close()
        cls.ntfy.close()
        cls.tmp.cleanup()

    def row_state(self, session):
        rows = self.driver.find_all(f'tr[data-session-id="{session}"] .badge')
        return self.driver.text(rows[0]) if rows else None

    def test_0_the_window_code_is_modules_that_leave_no_globals(self):
        d = self.driver
        # Only the vendored xterm.js (a UMD script of globals) is a classic script; the window's own
        # code is modules, and every file of ui/js is imported from one of them.
        scripts = d.run_js("return [...document.scripts].map(s => [s.getAttribute('src') || '(inline)', s.type])")
        with self.subTest("classic scripts"):
            classic = [src for src, kind in scripts if kind != "module" and not src.startswith("vendor/")]
            self.assertEqual(classic, [], "the window's own scripts not loaded as modules")
        with self.subTest("files no module imports"):
            js = ROOT / "ui" / "js"
            reached, todo = set(), [src.removeprefix("js/") for src, kind in scripts if kind == "module"]
            while todo:
                name = todo.pop()
                if name not in reached:
                    reached.add(name)
                    todo += re.findall(r'from "\./([\w-]+\.js)";', (js / name).read_text())
            self.assertEqual(sorted(p.name for p in js.glob("*.js") if p.name not in reached), [])
        with self.subTest("global names"):
            # `typeof` reaches the global scope's lexical names (`const app`) as well as window's own;
            # an element is reached by its id (`#notice`, `#release`), and is the page's, not the code's.
            found = d.run_js("return [" + ", ".join(f"typeof {n} === 'undefined' || {n} instanceof Element ? null : '{n}'"
                                                    for n in OLD_GLOBALS) + "].filter(Boolean)")
            self.assertEqual(found, [], "names the window's code leaves in the global scope")

    def test_1_lists_the_journal_sessions(self):
        d = self.driver
        state = d.wait_for("the seeded session in the list", lambda: self.row_state(self.seeded))
        self.assertEqual(state, "exited (3)")
        self.assertEqual(d.run_js("return document.title"), "Nightshift")
        d.screenshot(ARTIFACTS / "sessions.png")

    def test_2_updates_live_from_another_process(self):
        d = self.driver
        flag = Path(self.tmp.name) / "finish"
        run = subprocess.Popen([str(CLI), "run", "--", "bash", "-c", f"while [ ! -e {flag} ]; do sleep 0.05; done"],
                               env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        try:
            session = d.wait_for("the new session's row", lambda: self._newest_other_than(self.seeded, self.cli_scheduled))
            d.wait_for("it to show as running", lambda: self.row_state(session) == "running")
            d.screenshot(ARTIFACTS / "sessions-live.png")
            flag.touch()
            run.wait(20)
            d.wait_for("it to show as exited", lambda: self.row_state(session) == "exited (0)")
        finally:
            flag.touch()
            run.wait(20)

    def test_3_session_page_shows_its_journal(self):
        d = self.driver
        # The list re-renders as events arrive, so find and click in one retried step.
        d.wait_for("a click on the seeded row",
                   lambda: d.click(d.find_all(f'tr[data-session-id="{self.seeded}"] td.id')[0]) or True)
        items = d.wait_for("the session's journal", lambda: [d.text(e) for e in d.find_all("#detail-events li")])
        joined = "\n".join(items)
        for word in ("starting", "running", "exited"):
            self.assertIn(word, joined)
        self.assertIn("process exited with code 3", joined)
        d.screenshot(ARTIFACTS / "session.png")
        d.click(d.find_all("#back")[0])
        d.wait_for("the list again", lambda: d.run_js("return !document.getElementById('list-view').hidden"))

    # The helpers the flows below share: find, click and read in one retried step, since the window
    # re-renders as events arrive.
    def css(self, selector):
        found = self.driver.find_all(selector)
        return found[0] if found else None

    def click(self, selector, what=None):
        d = self.driver
        d.wait_for(what or f"a click on {selector}", lambda: self.css(selector) and (d.click(self.css(selector)) or True))

    def text_of(self, selector):
        e = self.css(selector)
        return self.driver.text(e) if e else ""

    def visible(self, selector):
        return bool(self.driver.run_js(
            "const e = document.querySelector(arguments[0]); return !!e && !e.closest('[hidden]')", selector))

    def terminal_text(self):
        """What the page's terminal shows, row by row."""
        return self.driver.run_js("const r = document.querySelector('#terminal .xterm-rows');"
                                  "return r ? [...r.children].map(c => c.textContent.trimEnd()).join('\\n') : ''")

    def fill(self, selector, text):
        self.driver.type(self.css(selector), text)

    def open_view(self, nav, view):
        # At the smallest size the nav wraps, and a chip that fills in late can move a button between
        # the moment WebDriver measures it and its click: a click that landed elsewhere is given again.
        for attempt in range(3):
            self.click(nav)
            try:
                self.driver.wait_for(f"the {view} view", lambda: self.visible(f"#{view}-view"),
                                     timeout=20 if attempt == 2 else 5)
                return
            except AssertionError:
                if attempt == 2:
                    raise

    def settle(self, top=False):
        """Lets the window paint what the DOM holds (two animation frames) before a screenshot."""
        if top:
            self.driver.run_js("window.scrollTo(0, 0)")
        self.driver.run_js("return new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        time.sleep(0.2)

    def overflow(self):
        return self.driver.run_js("return document.documentElement.scrollWidth - window.innerWidth")

    def test_4_an_invalid_new_session_shows_the_core_error(self):
        d = self.driver
        self.open_view("#nav-new", "new")
        self.assertEqual(self.text_of("#new-submit"), "Start session")
        self.assertTrue(self.visible("label[for=new-cwd]"))
        d.screenshot(ARTIFACTS / "new-session.png")
        missing = Path(self.tmp.name) / "no-such-folder"
        self.fill("#new-command", "bash -c 'echo hi'")
        self.fill("#new-cwd", str(missing))
        self.click('#new-agent option[value="generic"]')
        self.click("#new-submit")
        d.wait_for("the error banner", lambda: self.visible("#error"))
        code, message = self.text_of("#error-code"), self.text_of("#error-message")
        self.assertTrue(code and code != "error", f"a real error code from the core, got {code!r}")
        self.assertIn(str(missing), message)
        self.assertTrue(self.visible("#new-view"), "the form stays open to be corrected")
        d.screenshot(ARTIFACTS / "new-session-error.png")
        self.click("#error-close")
        d.wait_for("the banner to close", lambda: not self.visible("#error"))
        # A failover to the session's own agent is refused by the core, in one line, before it starts.
        project = Path(self.tmp.name) / "failover-project"
        project.mkdir(exist_ok=True)
        self.fill("#new-command", "claude")
        self.fill("#new-cwd", str(project))
        self.click('#new-agent option[value="claude"]')
        self.fill("#new-failover", "claude --model opus")
        self.click("#new-submit")
        d.wait_for("the failover's error", lambda: self.visible("#error"))
        message = self.text_of("#error-message")
        self.assertIn("names a claude command", message)
        self.assertIn("codex", message)
        d.run_js("document.getElementById('new-failover').value = ''")
        self.click('#new-agent option[value="generic"]')
        self.click("#error-close")
        d.wait_for("the banner to close", lambda: not self.visible("#error"))

    def test_5_a_new_session_runs_respawns_and_stops(self):
        d = self.driver
        project = Path(self.tmp.name) / "project"
        project.mkdir(exist_ok=True)
        self.open_view("#nav-new", "new")
        # Output for about eight seconds (working), then quiet (idle) until it is stopped.
        self.fill("#new-command", "bash -c 'for i in $(seq 1 40); do echo step $i; sleep 0.2; done; exec cat'")
        self.fill("#new-cwd", str(project))
        self.click('#new-agent option[value="generic"]')
        self.click('#new-preset option[value=""]')
        self.click("#new-submit")
        d.wait_for("the new session's page", lambda: self.visible("#detail-view") and self.text_of("#detail-title"))
        self.assertFalse(self.visible("#error"), self.text_of("#error-message"))
        session = self.text_of("#detail-title")
        self.assertNotIn(session, (self.seeded, ""))

        # Its row in the list goes working, then idle.
        self.click("#back")
        d.wait_for("the list", lambda: self.visible("#list-view"))
        seen = []

        def idle_after_working():
            state = self.row_state(session)
            if state and (not seen or seen[-1] != state):
                seen.append(state)
            return state == "idle"
        d.wait_for("the new session to go idle", idle_after_working, timeout=40)
        self.assertIn("working", seen, f"states seen in the list: {seen}")
        self.assertLess(seen.index("working"), len(seen) - 1)
        # (The directory cell clips long paths, which WebKitWebDriver counts as not displayed: read its text.)
        self.assertEqual(d.run_js("return document.querySelector(arguments[0]).textContent",
                                  f'tr[data-session-id="{session}"] td.cwd'), str(project))
        d.screenshot(ARTIFACTS / "sessions-new.png")

        # Its page shows the live terminal, watching: no keyboard until Take over.
        self.click(f'tr[data-session-id="{session}"] td.id')
        screen = d.wait_for("the session's terminal", lambda: "step 40" in self.terminal_text() and self.terminal_text())
        self.assertIn("step 39", screen)
        self.assertEqual(self.text_of("#detail-state"), "idle")
        self.assertTrue(self.visible("#take-over") and not self.visible("#release"))
        self.settle()
        d.screenshot(ARTIFACTS / "session-live.png")

        # From another terminal (as from tmux): `nightshift attach` to this session the app runs. The
        # screen appears at once, its keys reach the agent (cat echoes them), the page's terminal
        # shows them too, and the detach key leaves the session running.
        attached = Attached(self.env, session)
        try:
            d.wait_for("the attached terminal's screen", lambda: "step 40" in attached.text())
            attached.type(b"typed from tmux\r")
            d.wait_for("the keys echoed in the page's terminal",
                       lambda: self.terminal_text().count("typed from tmux") >= 2)
            attached.type(b"\x1d")
            attached.proc.wait(15)
            d.wait_for("the attached terminal to say it detached", lambda: "detached from session" in attached.text())
        finally:
            attached.close()
        self.assertEqual(self.row_state(session) or self.text_of("#detail-state"), "idle")

        # Session options → Respawn: pick Overnight and enable it.
        self.click("#open-options")
        d.wait_for("the options", lambda: self.visible("#options-respawn") and self.text_of("#respawn-status"))
        self.assertEqual(d.run_js("return document.getElementById('respawn-status').dataset.armed"), "false")
        self.assertIn("Off", self.text_of("#respawn-status"))
        self.assertEqual(self.text_of("#respawn-enable"), "Enable")
        # Auto-resume is off: its fields hold the core's defaults (`limits::resume::Settings`).
        self.assertEqual([d.value(self.css(f"#resume-{f}")) for f in ("margin", "retries", "fallback", "prompt")],
                         ["5", "3", "30", "continue"])
        self.click('#respawn-preset option[value="overnight"]')
        d.wait_for("the Overnight settings", lambda: d.value(self.css("#set-idle_timeout")) == "10")
        self.assertEqual(d.value(self.css("#set-duration")), "480")
        self.assertIn("overnight", self.text_of("#respawn-preset-description").lower())
        # A list half typed is no error yet (Enable says what is wrong), and leaves the preset picked.
        d.run_js("window.addEventListener('error', (e) => { document.body.dataset.uncaught = e.message; })")
        backoff = self.css("#set-restart_backoff")
        d.cmd("POST", f"/element/{backoff}/value", {"text": "x"})
        self.assertIsNone(d.run_js("return document.body.dataset.uncaught || null"), "an uncaught error")
        self.assertEqual(d.value(self.css("#respawn-preset")), "overnight")
        d.cmd("POST", f"/element/{backoff}/value", {"text": "\ue003"})  # Backspace
        self.click("#respawn-enable")
        status = d.wait_for("respawn to show as armed", lambda: d.run_js(
            "const s = document.getElementById('respawn-status'); return s.dataset.armed === 'true' && s.textContent"))
        self.assertIn("Armed with the Overnight preset", status)
        self.assertFalse(self.visible("#error"), self.text_of("#error-message"))
        self.assertEqual(self.text_of("#respawn-enable"), "Apply changes")
        self.assertTrue(d.run_js("return !document.getElementById('respawn-disable').disabled"))
        self.settle(top=True)
        d.screenshot(ARTIFACTS / "options.png")

        # A preset of one's own, saved from these settings.
        self.fill("#preset-name", "night-owl")
        self.click("#preset-save")
        picked = d.wait_for("the saved preset in the picker (or an error)", lambda: (
            self.visible("#error") and self.text_of("#error")) or d.run_js(
            "return document.getElementById('respawn-preset').value") == "night-owl")
        self.assertIs(picked, True, picked)
        self.assertIn("saved", self.text_of("#notice-text"))
        self.assertTrue(self.visible("#preset-delete"), "a preset of one's own can be deleted here")
        # A built-in's name, in any case, is the core's to refuse; the field is marked.
        self.fill("#preset-name", "Overnight")
        self.click("#preset-save")
        d.wait_for("the refusal", lambda: self.visible("#error"))
        self.assertEqual(self.text_of("#error-code"), "builtin_preset")
        self.assertIn("built-in preset", self.text_of("#error-message"))
        self.assertEqual(d.run_js("return document.getElementById('preset-name').getAttribute('aria-invalid')"), "true")
        self.click("#error-close")
        d.cmd("POST", f"/element/{self.css('#preset-name')}/clear", {})

        # The journal gained the armed row.
        self.click("#options-back")
        row = d.wait_for("the journal's armed row",
                         lambda: self.text_of('#detail-events li[data-event="respawn"][data-action="armed"]'))
        self.assertRegex(row, r"respawn armed")
        self.assertIn("(the app)", row, "configure_session says whose change it is")
        d.screenshot(ARTIFACTS / "session-armed.png")

        # Stop it: it ends, and stays ended.
        self.click("#stop-session")
        state = d.wait_for("the session to end", lambda: self.text_of("#detail-state").startswith("exited")
                           and self.text_of("#detail-state"), timeout=30)
        self.assertTrue(state.startswith("exited"))
        d.wait_for("the stop in the journal", lambda: any(
            "stop requested (the app)" in d.text(e) for e in d.find_all("#detail-events li")))
        self.assertTrue(self.visible("#screen-note") or self.visible("#screen"))
        # What it did: its life, recorded, read back on its page (opened again, as in the morning).
        self.click("#back")
        self.click(f'tr[data-session-id="{session}"] td.id')
        life = d.wait_for("the recorded life", lambda: self.visible("#lives") and self.text_of("#life-text"))
        self.assertIn("step 1\n", life)
        self.assertIn("step 40", life)
        self.assertIn("Life 1 of 1", self.text_of("#life-meta"))
        self.settle()
        d.screenshot(ARTIFACTS / "session-life.png")
        self.click("#back")
        # The app told the phone that its session finished (the headless seed pushed its own).
        pushed = d.wait_for("the app's push of the finish", lambda: [
            p for p in self.ntfy.seen if p["headers"].get("click", "").endswith("/" + session)], timeout=20)
        self.assertEqual(pushed[0]["path"], "/night")
        self.assertEqual(pushed[0]["headers"]["tags"], "checkered_flag,nightshift")
        self.assertIn("stopped on request (the app)", pushed[0]["body"])
        seed = [p for p in self.ntfy.seen if p["headers"].get("click", "").endswith("/" + self.seeded)]
        self.assertEqual(len(seed), 1, "the headless seed pushed its own finish once, the app did not again")

    def test_5b_a_loop_started_from_the_new_session_page(self):
        d = self.driver
        project = Path(self.tmp.name) / "loop-project"
        project.mkdir(exist_ok=True)
        self.open_view("#nav-new", "new")
        self.click("#new-kind-loop")
        d.wait_for("the loop's fields", lambda: self.visible("#new-prompt") and not self.visible("#new-command"))
        self.fill("#new-cwd", str(project))
        self.fill("#new-prompt", "tidy up the docs")
        self.fill("#new-max-iterations", "2")
        self.fill("#new-max-tokens", "900000")
        self.click('#new-agent option[value="claude"]')
        # The account picker lists config.toml's accounts; the loop runs under the one chosen.
        d.wait_for("the account picker", lambda: self.visible("#new-account")
                   and self.css('#new-account option[value="night"]'))
        self.click('#new-account option[value="night"]')
        self.assertEqual(self.text_of("#new-submit"), "Start loop")
        self.settle(top=True)
        d.screenshot(ARTIFACTS / "new-loop.png")
        self.click("#new-submit")
        d.wait_for("the loop's page", lambda: self.visible("#detail-view") and self.text_of("#detail-title"))
        self.assertFalse(self.visible("#error"), self.text_of("#error-message"))
        self.assertTrue(self.visible("#iterations") and not self.visible("#send-form"), "a loop takes no typing")
        rows = d.wait_for("two iterations listed", lambda: len(d.find_all("#iterations-table tbody tr")) == 2
                          and d.find_all("#iterations-table tbody tr"), timeout=40)
        self.assertIn("done", d.text(rows[0]))
        self.assertIn("$0.02", d.text(rows[0]))
        d.wait_for("the loop to end", lambda: self.text_of("#detail-state") == "exited (0)", timeout=20)
        journal = "\n".join(d.text(e) for e in d.find_all("#detail-events li"))
        self.assertIn("ran its 2 iteration(s)", journal)
        # Its token cap is the loop's own budget, in its contract.
        session = self.text_of("#detail-title")
        events = subprocess.run([str(CLI), "journal", "--session", session, "--json"], env=self.env,
                                capture_output=True, text=True, timeout=30).stdout
        contract = next(json.loads(l) for l in events.splitlines() if json.loads(l)["event"] == "contract")
        self.assertIn('"max_tokens":900000', json.dumps(contract, separators=(",", ":")))
        given = self.config_dirs.read_text().splitlines()
        self.assertEqual(given[-2:], [str(self.night_account)] * 2, "both iterations ran under the account")
        self.settle(top=True)
        d.screenshot(ARTIFACTS / "session-loop.png")
        self.click("#back")
        d.wait_for("the list", lambda: self.visible("#list-view"))

    def test_5bb_switch_accounts_from_the_new_session_page(self):
        # With an account in config.toml, the New session page offers the switch; a Claude session
        # started with it shows where it may move in its options; for an agent without usage data it
        # is off, with why.
        d = self.driver
        project = Path(self.tmp.name) / "switch-project"
        project.mkdir(exist_ok=True)
        self.open_view("#nav-new", "new")
        self.click("#new-kind-terminal")
        d.wait_for("the switch option", lambda: self.visible("#new-switch"))
        self.fill("#new-command", "bash -c 'exec cat'")
        self.fill("#new-cwd", str(project))
        self.click('#new-agent option[value="generic"]')
        self.click('#new-account option[value=""]')
        # For an agent that reports no usage the switch is there, off, and says why.
        switch_state = lambda: d.run_js(  # noqa: E731
            "const s = document.getElementById('new-switch'); return [s.disabled, s.checked]")
        d.wait_for("the switch off for another agent", lambda: switch_state() == [True, False])
        self.assertTrue(self.visible("#new-switch-why"))
        self.assertIn("Claude Code and Codex only", self.text_of("#new-switch-why"))
        self.click('#new-agent option[value="codex"]')
        d.wait_for("the switch offered for Codex", lambda: switch_state() == [False, False])
        self.assertFalse(self.visible("#new-switch-why"))
        # A loop's dollar cap cannot be kept for Codex, which reports tokens: off, with why.
        cost_off = "return [document.getElementById('new-max-cost').disabled, document.getElementById('new-max-cost-why').hidden]"
        self.assertEqual(d.run_js(cost_off), [True, False])
        self.click('#new-agent option[value="claude"]')
        self.assertEqual(d.run_js(cost_off), [False, True])
        d.wait_for("the switch back for Claude", lambda: switch_state() == [False, False])
        self.assertFalse(self.visible("#new-switch-why"))
        self.click("#new-switch")
        self.click("#new-submit")
        d.wait_for("the new session's page", lambda: self.visible("#detail-view") and self.text_of("#detail-title"))
        self.assertFalse(self.visible("#error"), self.text_of("#error-message"))
        session = self.text_of("#detail-title")
        self.click("#open-options")
        facts_text = lambda: d.run_js("return document.getElementById('options-facts').textContent")  # noqa: E731
        facts = d.wait_for("the switch in the options", lambda: "Account switch" in facts_text() and facts_text())
        self.assertIn("at 90% to whichever of night has the most left", facts)
        subprocess.run([str(CLI), "stop", session], env=self.env, capture_output=True, timeout=30)
        self.click("#options-back")
        d.wait_for("the session page", lambda: self.visible("#detail-view"))
        # The form keeps its choices for the next session: untick it for the tests after this one.
        # By script: a click can land while the page still lays out its account fields.
        self.open_view("#nav-new", "new")
        d.run_js("const s = document.getElementById('new-switch'); s.checked = false;"
                 " s.dispatchEvent(new Event('change', { bubbles: true }))")
        d.wait_for("the switch unticked", lambda: not d.run_js("return document.getElementById('new-switch').checked"))
        self.open_view("#nav-list", "list")

    def test_5be_a_start_scheduled_from_the_window_and_one_the_app_took_over(self):
        d = self.driver
        project = Path(self.tmp.name) / "scheduled-project"
        project.mkdir(exist_ok=True)
        self.open_view("#nav-new", "new")
        self.click("#new-kind-terminal")
        self.fill("#new-command", "bash -c 'echo the-scheduled-start; exec cat'")
        self.fill("#new-cwd", str(project))
        self.click('#new-agent option[value="generic"]')
        self.click('#new-account option[value=""]')
        self.click('#new-start option[value="at"]')
        d.wait_for("the time field", lambda: self.visible("#new-start-at"))
        due = time.time() + 6
        at = time.strftime("%H:%M:%S", time.localtime(due))
        d.run_js("document.getElementById('new-start-at').value = arguments[0]", at)
        self.click("#new-submit")
        d.wait_for("the scheduled session's page", lambda: self.visible("#detail-view") and self.text_of("#detail-title"))
        self.assertFalse(self.visible("#error"), self.text_of("#error-message"))
        session = self.text_of("#detail-title")
        if time.time() < due - 1:
            self.assertEqual(self.text_of("#detail-state"), "scheduled")
            self.assertEqual(self.text_of("#stop-session"), "Cancel")
        self.assertEqual(d.run_js("return document.getElementById('new-start').value"), "now", "for this one only")
        # At its time the app starts it: its terminal shows the command's output.
        d.wait_for("the scheduled start", lambda: "the-scheduled-start" in self.terminal_text(), timeout=30)
        self.assertGreaterEqual(time.time(), due - 0.5, "not before its time")
        listed = json.loads(subprocess.run([str(CLI), "sessions", "--json"], env=self.env, capture_output=True,
                                           text=True, timeout=30).stdout)
        row = next(r for r in listed if r["id"] == session)
        self.assertEqual(row["standing"], "live")
        subprocess.run([str(CLI), "stop", session], env=self.env, capture_output=True, timeout=30)

        # One for an hour from now, cancelled from its page: it never starts.
        self.open_view("#nav-new", "new")
        self.fill("#new-command", "bash -c 'touch never-started; exec cat'")
        self.fill("#new-cwd", str(project))
        self.click('#new-start option[value="at"]')
        later = time.strftime("%H:%M", time.localtime(time.time() + 3600))
        d.run_js("document.getElementById('new-start-at').value = arguments[0]", later)
        self.click("#new-submit")
        d.wait_for("the second scheduled page", lambda: self.visible("#detail-view")
                   and self.text_of("#detail-title") not in ("", session))
        d.wait_for("its Cancel", lambda: self.text_of("#stop-session") == "Cancel")
        self.settle(top=True)
        d.screenshot(ARTIFACTS / "session-scheduled.png")
        self.click("#stop-session")
        d.wait_for("it cancelled", lambda: self.text_of("#detail-state") == "exited")
        facts = d.run_js("return document.getElementById('detail-facts').textContent")
        self.assertIn("cancelled before it started", facts)
        self.assertFalse((project / "never-started").exists())

        # The one scheduled from a terminal whose process was killed before the app started: the
        # app took it over and started it at its time.
        journal = lambda: subprocess.run([str(CLI), "journal", "--session", self.cli_scheduled],  # noqa: E731
                                         env=self.env, capture_output=True, text=True, timeout=30).stdout
        try:
            d.wait_for("the command-line schedule to have run", lambda: self.cli_marker.exists(), timeout=40)
        except AssertionError:
            log = Path(self.env["NIGHTSHIFT_STATE_DIR"]) / "logs" / "scheduled.log"
            print(journal(), log.read_text() if log.exists() else "(no scheduled.log)", file=sys.stderr)
            raise
        journal = journal()
        self.assertIn("as scheduled", journal)
        self.open_view("#nav-list", "list")

    def test_5bf0_a_run_killed_mid_work_is_taken_over_by_the_app_on_its_conversation(self):
        """Nobody is needed when Nightshift dies: a `nightshift run --preset overnight` of the real
        client, killed -9 mid-turn, works again within 30 s, taken over by this app, nothing typed."""
        require_real_client(self)
        d = self.driver
        base = Path(self.tmp.name) / "adopted"
        mock = MockApi(ARTIFACTS / "adoption-mock-api.log")
        workdir = base / "project"
        run = session = None
        opening = "mock:slow:25 Begin the night on the adopted project"
        started = time.time()
        journal = lambda: [json.loads(line) for line in subprocess.run(  # noqa: E731
            [str(CLI), "journal", "--json", "--session", session], env=self.env, capture_output=True, text=True,
            timeout=30).stdout.splitlines() if line.strip()]
        try:
            env = claude_env(self.env, base, mock.base_url, workdir)
            # The client's own sandbox needs more than this machine lends a window test; the night's
            # rehearsal runs it sandboxed.
            run = subprocess.Popen([str(CLI), "run", "--events", "-", "--preset", "overnight", "--no-sandbox",
                                    "--agent", "claude", "--", str(CLAUDE), opening], env=env, cwd=workdir,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                   text=True)
            session = json.loads(run.stdout.readline())["session"]
            d.wait_for("the slow first turn under way", lambda: any("Begin the night" in line for line in mock.lines),
                       timeout=90)
            asked = len(mock.lines)
            killed = time.monotonic()
            run.kill()  # SIGKILL: no end is journalled
            run.wait(10)
            run.stdout.close()
            adopted = d.wait_for("this app to take it over", lambda: next(
                (e for e in journal() if e.get("event") == "adopted"), None), timeout=30)
            self.assertTrue(adopted["by"].startswith("the tray app (process"), adopted)
            d.wait_for("the resumed conversation's first request", lambda: len(mock.lines) > asked, timeout=30)
            took = time.monotonic() - killed
            print(f"kill to the next request, taken over by the app: {took:.1f} s", file=sys.stderr)
            self.assertLess(took, 30)
            restart = [e for e in journal() if e.get("state") == "starting"][-1]
            self.assertIn("--resume", restart["reason"])
            self.assertEqual(sum("Begin the night" in line for line in mock.lines), 1, "the opening prompt, once")
            # The morning counts it; its page shows it.
            at = lambda t: datetime.datetime.fromtimestamp(t, datetime.timezone.utc).isoformat()  # noqa: E731
            span = f"{at(started - 5)}..{at(time.time() + 5)}"
            digest = json.loads(subprocess.run([str(CLI), "digest", "--range", span, "--format", "json"], env=self.env,
                                               capture_output=True, text=True, timeout=60).stdout)
            counts = next(s for s in digest["sessions"] if s["id"] == session)["counts"]
            self.assertEqual(counts.get("adoptions"), 1, counts)
            self.open_view("#nav-list", "list")
            self.click(f'tr[data-session-id="{session}"] td.id')
            d.wait_for("the adoption on its page", lambda: any(
                "taken over by the tray app" in d.text(e) for e in d.find_all("#detail-events li")))
            d.screenshot(ARTIFACTS / "session-adopted.png")
        finally:
            if session:
                subprocess.run([str(CLI), "stop", session], env=self.env, capture_output=True, timeout=30)
            if run is not None and run.poll() is None:
                run.kill()
                run.wait()
            mock.close()

    def test_5bf_a_lost_session_is_stopped_from_its_page(self):
        # Its `nightshift run` killed (a closed terminal, the OOM killer): no Nightshift runs it and
        # none ended it. Its page offers Resume, and Stop, which ends it in the journal as
        # `nightshift stop` does: the core says which (`actions`), the window does not guess.
        d = self.driver
        run = subprocess.Popen([str(CLI), "run", "--events", "-", "--", "bash", "-c", "exec sleep 600"],
                               env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
        try:
            session = json.loads(run.stdout.readline())["session"]
            d.wait_for("it in the list", lambda: self.row_state(session) not in (None, "starting"))
        finally:
            run.kill()
            run.wait(30)
            run.stdout.close()
        self.open_view("#nav-list", "list")
        d.wait_for("it lost", lambda: self.row_state(session) == "lost")
        self.click(f'tr[data-session-id="{session}"] td.id')
        d.wait_for("its page", lambda: self.visible("#detail-view") and self.text_of("#detail-title") == session)
        self.assertTrue(self.visible("#resume-session"), "a lost session can be resumed")
        self.assertTrue(d.run_js("return !document.getElementById('stop-session').disabled"), "and stopped")
        self.assertTrue(d.run_js("return document.getElementById('send-text').disabled"), "but not typed to")
        self.click("#stop-session")
        d.wait_for("it ended", lambda: self.text_of("#detail-state") == "exited")
        self.assertFalse(self.visible("#error"), self.text_of("#error-message"))
        d.wait_for("why, in its facts", lambda: "while no Nightshift ran it" in d.run_js(
            "return document.getElementById('detail-facts').textContent"))
        self.assertFalse(self.visible("#resume-session"), "an ended one is not resumed")
        self.click("#back")
        d.wait_for("the list", lambda: self.visible("#list-view"))

    def test_5c_ready_for_tonight_checks_and_the_new_page_warns_first(self):
        d = self.driver
        plain = Path(self.tmp.name) / "not-a-repo"
        plain.mkdir(exist_ok=True)
        set_value = ("const e = document.querySelector(arguments[0]); e.value = arguments[1];"
                     " e.dispatchEvent(new Event('change'))")
        # The New session page: the folder's WARNs show before the start, which stays possible.
        self.open_view("#nav-new", "new")
        self.click("#new-kind-terminal")
        self.click('#new-agent option[value="claude"]')
        d.run_js(set_value, "#new-cwd", str(plain))
        item = d.wait_for("the folder's warning", lambda: [
            d.text(e) for e in d.find_all("#new-ready-list li") if "not a git repository" in d.text(e)], timeout=30)
        self.assertIn("WARN", item[0])
        self.assertTrue(self.visible("#new-ready"))
        self.assertTrue(d.run_js("return !document.getElementById('new-submit').disabled"), "nothing is blocked")
        self.settle(top=True)
        d.screenshot(ARTIFACTS / "new-ready.png")

        self.open_view("#nav-ready", "ready")
        d.run_js(set_value, "#ready-cwd", str(plain))
        self.click("#ready-run")
        summary = d.wait_for("the checks", lambda: (lambda t: t if t and t != "Checking…" else None)(
            self.text_of("#ready-summary")), timeout=60)
        self.assertRegex(summary, r"^(Not ready|Ready)")
        listed = d.run_js("return [...document.querySelectorAll('#ready-list li')]"
                          ".map(e => [e.dataset.id, e.dataset.status, e.textContent])")
        rows = {i: (status, text) for i, status, text in listed}
        self.assertEqual(rows["cwd.0.git"][0], "warn", rows)
        self.assertIn("git init", rows["cwd.0.git"][1])
        self.assertEqual(rows["state.writable"][0], "pass", rows)
        self.assertIn("harness.claude.path", rows)
        statuses = [status for _, status, _ in listed]
        self.assertEqual(statuses, sorted(statuses, key=["fail", "warn", "pass"].index), "problems first")
        plan = d.wait_for("tonight's plan", lambda: self.text_of("#plan-text"))
        self.assertIn("Work is expected to stop at", plan)
        self.assertTrue(d.find_all("#plan-timeline svg"), "the plan is drawn")
        self.assertFalse(self.visible("#error"), self.text_of("#error-message"))
        self.settle(top=True)
        d.screenshot(ARTIFACTS / "ready.png")

    def check_timeline(self, figure):
        """Every band of the drawn timeline starts at a state event of its session with that state (or at
        the range's start) and ends at the session's next state event (or at the range's end)."""
        d = self.driver
        d.wait_for("the timeline", lambda: self.visible(figure) and d.find_all(f"{figure} rect.band"))
        svg_range = d.run_js("const s = document.querySelector(arguments[0] + ' svg');"
                             " return [s.dataset.from, s.dataset.to]", figure)
        bands = d.run_js("return [...document.querySelectorAll(arguments[0] + ' rect.band')]"
                         ".map(r => [r.dataset.session, r.dataset.state, r.dataset.from, r.dataset.to])", figure)
        self.assertTrue(bands)
        workers = d.run_js("return [...document.querySelectorAll(arguments[0] + ' rect.worker')]"
                           ".map(r => [r.dataset.session, r.dataset.agent])", figure)
        by_session = {}
        for session, state, start, end in bands:
            by_session.setdefault(session, []).append((state, start, end))
        for session, drawn in by_session.items():
            out = subprocess.run([str(CLI), "journal", "--session", session, "--json"], env=self.env,
                                 capture_output=True, text=True, timeout=30)
            journal = [json.loads(line) for line in out.stdout.splitlines()]
            states = [(e["ts"], e["state"]) for e in journal if e["event"] == "state"]
            # Who worked it: the strip under the lane names its contract's agent.
            contracts = [e["contract"]["agent"] for e in journal if e["event"] == "contract"]
            if contracts:
                self.assertIn([session, contracts[-1]], workers, f"session {session}'s worker")
            expected = []
            for i, (ts, state) in enumerate(states):
                if state in ("exited", "failed"):
                    continue
                end = states[i + 1][0] if i + 1 < len(states) else svg_range[1]
                start, end = max(ts, svg_range[0]), min(end, svg_range[1])
                if start < end:
                    expected.append((state, start, end))
            self.assertEqual(drawn, expected, f"session {session}")
        self.settle(top=True)

    def test_5cc_check_tonights_client_runs_the_canary_and_shows_each_line(self):
        d = self.driver
        self.open_view("#nav-ready", "ready")
        self.click("#ready-canary")
        summary = d.wait_for("the canary's verdict", lambda: (lambda t: t if t.startswith("Tonight's client is") else None)(
            self.text_of("#canary-summary")), timeout=150)
        listed = d.run_js("return [...document.querySelectorAll('#canary-list li')]"
                          ".map(e => [e.dataset.id, e.dataset.status, e.textContent])")
        rows = {i: (status, text) for i, status, text in listed}
        # This PATH's `claude` only prints a headless answer: the canary says it cannot run it, and why.
        self.assertEqual(rows["canary.claude"][0], "fail", rows)
        self.assertIn("the canary could not run", rows["canary.claude"][1])
        self.assertIn("--version", rows["canary.claude"][1])
        self.assertTrue(summary.startswith("Tonight's client is not ready: "), summary)
        self.assertEqual(d.run_js("return document.getElementById('ready-canary').disabled"), False)
        self.assertFalse(self.visible("#error"), self.text_of("#error-message"))
        self.settle(top=True)
        d.screenshot(ARTIFACTS / "ready-canary.png")

    def test_5d_the_terminal_shows_the_real_client_and_can_take_over(self):
        require_real_client(self)
        d = self.driver
        base = Path(self.tmp.name)
        mock = MockApi(ARTIFACTS / "terminal-mock-api.log")
        workdir = base / "claude-project"
        run = session = None
        try:
            env = claude_env(self.env, base, mock.base_url, workdir)
            run = subprocess.Popen([str(CLI), "run", "--events", "-", "--agent", "claude", "--cols", "110", "--rows", "32",
                                    "--", str(CLAUDE)], env=env, cwd=workdir, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            session = json.loads(run.stdout.readline())["session"]
            cli_screen = lambda: subprocess.run([str(CLI), "screen", session], env=self.env, capture_output=True,
                                                text=True, timeout=30).stdout
            ready = lambda screen: "Claude Code v" in screen and "auto mode on" in screen
            d.wait_for("the client's composer", lambda: ready(cli_screen()), timeout=60)
            self.open_view("#nav-list", "list")
            self.click(f'tr[data-session-id="{session}"] td.id')
            d.wait_for("the client's screen in the page's terminal", lambda: ready(self.terminal_text()), timeout=30)
            # The same screen `nightshift screen` prints (the client redraws its footer now and then:
            # compared until the two agree), every row that has text.
            def same_rows():
                rows = [r.strip() for r in cli_screen().splitlines() if r.strip()]
                shown = self.terminal_text()
                return len(rows) >= 5 and all(r in shown for r in rows) and rows
            rows = d.wait_for("the page's terminal to show the rows `nightshift screen` prints", same_rows)
            self.assertTrue(any("Claude Code v" in r for r in rows), rows)
            self.assertEqual(d.run_js("return document.getElementById('terminal').dataset.size"), "110x32")
            # In the client's colours: cells drawn in a true colour or a palette colour of the theme.
            colours = d.run_js("""return [...document.querySelectorAll('#terminal .xterm-rows span')]
                .filter(s => s.textContent.trim() && (s.style.color || /xterm-fg-/.test(s.className)))
                .map(s => getComputedStyle(s).color)""")
            self.assertTrue(len(set(colours)) >= 2, f"colours on the client's screen: {set(colours)}")
            d.run_js("document.getElementById('terminal').scrollIntoView()")
            self.settle()
            d.screenshot(ARTIFACTS / "session-terminal-claude.png")

            # Take over: the keys go to the agent (its composer shows them; Enter sends them to the API).
            self.click("#take-over")
            d.wait_for("the terminal to take the keyboard", lambda: self.visible("#release")
                       and d.run_js("return !!document.activeElement.closest('#terminal')"))
            d.keys("hello from the window")
            d.wait_for("the typed text in the client's composer", lambda: "hello from the window" in cli_screen())
            d.keys("\r")
            d.wait_for("the mock API to receive it", lambda: any("hello from the window" in l for l in mock.lines),
                       timeout=30)
            # The session follows the window's size now: the fitted size at Take over, then the new
            # window's when it is resized (the session says so, the page's terminal draws that many
            # rows, and `nightshift screen` agrees).
            def fitted(*before):
                size = d.run_js("return document.getElementById('terminal').dataset.size")
                rows = d.run_js("return document.querySelectorAll('#terminal .xterm-rows > div').length")
                return size not in (None, *before) and size.endswith(f"x{rows}") and size
            taken = d.wait_for("the session at the fitted size", lambda: fitted("110x32"))
            d.set_size(700, 560)
            sized = d.wait_for("the session at the window's new size", lambda: fitted("110x32", taken))
            cols, rows = (int(n) for n in sized.split("x"))
            d.wait_for("`nightshift screen` at the new size", lambda: tuple(json.loads(subprocess.run(
                [str(CLI), "screen", "--json", session], env=self.env, capture_output=True, text=True,
                timeout=30).stdout)["size"]) == (cols, rows))
            # Release: the keyboard is the user's own again.
            self.click("#release")
            d.wait_for("watching again", lambda: self.visible("#take-over"))
            self.assertIn("Watching", self.text_of("#terminal-hint"))
            d.keys("zzz-not-sent")
            time.sleep(1.5)
            self.assertNotIn("zzz-not-sent", cli_screen())
            d.run_js("document.getElementById('terminal').scrollIntoView()")
            self.settle()
            d.screenshot(ARTIFACTS / "session-terminal-claude-released.png")
            subprocess.run([str(CLI), "stop", session], env=self.env, capture_output=True, timeout=30)
            run.wait(30)
        finally:
            if run is not None and run.poll() is None:
                # Failed part way: the session must not outlive this test and disturb the next ones.
                if session:
                    subprocess.run([str(CLI), "stop", session], env=self.env, capture_output=True, timeout=30)
                try:
                    run.wait(30)
                except subprocess.TimeoutExpired:
                    run.kill()
                    run.wait()
            d.set_size(820, 520)
            mock.close()

    def test_6_digest_morning_settings_and_usage(self):
        d = self.driver
        self.open_view("#nav-digest", "digest")
        text = d.wait_for("the digest", lambda: self.text_of("#digest-cards"))
        self.assertTrue(text.strip())
        self.assertFalse(self.visible("#error"), self.text_of("#error-message"))
        self.click('#digest-range option[value="24h"]')
        sessions = d.wait_for("the 24-hour totals", lambda: d.run_js(
            "return document.getElementById('digest-cards').dataset.range === '24h' &&"
            " document.querySelector('#digest-totals [data-total=sessions]').textContent"))
        self.assertRegex(sessions, r"^[1-9]\d* sessions?$")
        self.check_timeline("#digest-timeline")
        self.assertFalse(self.visible("#error"), self.text_of("#error-message"))
        self.click("#digest-mark")
        d.wait_for("the digest marked as read", lambda: "Marked as read" in self.text_of("#notice-text"))
        self.assertFalse(self.visible("#error"), self.text_of("#error-message"))
        self.settle(top=True)
        d.screenshot(ARTIFACTS / "digest.png")

        self.open_view("#nav-morning", "morning")
        shown = d.wait_for("the morning summary or its absence", lambda: (
            self.visible("#morning-empty") and self.text_of("#morning-empty")) or (
            self.visible("#morning-body") and self.text_of("#morning-headline")))
        self.assertTrue(shown.startswith("No morning summary yet") or self.text_of("#morning-cards"), shown)
        self.settle(top=True)
        d.screenshot(ARTIFACTS / "morning.png")

        self.open_view("#nav-settings", "settings")
        d.wait_for("the power status", lambda: self.text_of("#power-status"))
        self.assertIn(d.run_js("return document.getElementById('power-status').dataset.holding"), ("true", "false"))
        for kind in ("question", "limit", "resume", "breaker", "finished", "guard", "morning"):
            self.assertTrue(self.visible(f'label[for="notify-{kind}"]'), kind)
        # A switch turned off stays off when the settings are read again from the core.
        loaded = lambda: d.run_js("return document.getElementById('settings-view').dataset.loaded") == "true"  # noqa: E731
        d.wait_for("the settings from the core", loaded)
        was = d.run_js("return document.getElementById('notify-resume').checked")
        self.click("#notify-resume")
        time.sleep(0.5)
        self.open_view("#nav-list", "list")
        self.open_view("#nav-settings", "settings")
        d.wait_for("the settings read again", loaded)
        self.assertEqual(d.run_js("return document.getElementById('notify-resume').checked"), not was)
        self.click("#notify-resume")
        self.assertFalse(self.visible("#error"), self.text_of("#error-message"))
        # The phone: the settings show config.toml's [push]; a bad URL is refused with the fix and
        # nothing saved; a new topic is saved and takes the app's next notice.
        config = Path(self.env["NIGHTSHIFT_CONFIG_DIR"]) / "config.toml"
        self.assertEqual(d.run_js("return document.getElementById('push-ntfy').value"), self.ntfy.url("night"))
        self.assertIn("there is none now", self.text_of("#push-token-state"))
        set_url = lambda url: d.run_js("document.getElementById('push-ntfy').value = arguments[0]", url)  # noqa: E731
        before = config.read_text()
        set_url("ntfy.sh/my-night")
        self.click("#push-save")
        error = d.wait_for("the refusal", lambda: self.visible("#error") and self.text_of("#error-message"))
        self.assertIn("push.ntfy", error)
        self.assertIn("https://", error)
        self.assertEqual(config.read_text(), before, "nothing saved")
        set_url(self.ntfy.url("phone"))
        self.click("#push-save")
        d.wait_for("the new topic saved", lambda: self.ntfy.url("phone") in config.read_text())
        self.assertFalse(self.visible("#error"), self.text_of("#error-message"))
        self.open_view("#nav-new", "new")
        self.fill("#new-command", "bash -c 'exit 7'")
        self.fill("#new-cwd", self.tmp.name)
        self.click('#new-agent option[value="generic"]')
        self.click('#new-preset option[value=""]')
        self.click('#new-account option[value=""]')
        self.click("#new-submit")
        pushed = d.wait_for("the finish on the new topic", lambda: [
            p for p in self.ntfy.seen if p["path"] == "/phone"], timeout=30)
        self.assertEqual(pushed[0]["body"], "process exited with code 7")
        self.open_view("#nav-settings", "settings")
        d.wait_for("the settings read again", loaded)
        set_url(self.ntfy.url("night"))
        self.click("#push-save")
        d.wait_for("the first topic back", lambda: self.ntfy.url("night") in config.read_text())
        # Answers from the phone, set up here: two new topics on the same server and a key of the
        # owner's alone; the topic the phone subscribes to is shown as a QR code, the key never; the
        # app listens on the other topic at once.
        self.assertEqual(self.text_of("#phone-setup"), "Set up answers from the phone")
        self.click("#phone-setup")
        d.wait_for("the QR code", lambda: d.run_js("return !!document.querySelector('#phone-qr svg')"))
        self.assertFalse(self.visible("#error"), self.text_of("#error-message"))
        self.assertIn("listen = ", config.read_text())
        self.assertIn(self.ntfy.url("ns-"), self.text_of("#phone-topic"))
        key = Path(self.env["NIGHTSHIFT_CONFIG_DIR"]) / "phone.key"
        self.assertEqual(key.stat().st_mode & 0o777, 0o600)
        self.assertNotIn(key.read_text().strip(), d.run_js("return document.body.innerHTML"))
        self.assertEqual(self.text_of("#phone-setup"), "Make new topics and a new key")
        d.wait_for("the app listening for answers", lambda: [
            p for p in self.ntfy.subscribed if p.startswith("/ns-") and "/json?since=" in p], timeout=30)
        d.screenshot(ARTIFACTS / "phone-setup.png")
        # The pushes go back to the test's topic; the answers' topic stays.
        set_url(self.ntfy.url("night"))
        self.click("#push-save")
        d.wait_for("the first topic back again", lambda: f'ntfy = "{self.ntfy.url("night")}"' in config.read_text())
        self.assertIn("listen = ", config.read_text())
        # Launch at login: an XDG autostart entry in the (test's) home, and gone again.
        autostart = Path(self.env["HOME"]) / ".config" / "autostart"
        entries = lambda: sorted(p.name for p in autostart.glob("*.desktop"))  # noqa: E731
        self.assertFalse(d.run_js("return document.getElementById('launch-at-login').checked"))
        self.click("#launch-at-login")
        entry = d.wait_for("the autostart entry", entries)
        self.assertIn("nightshift-app", (autostart / entry[0]).read_text())
        self.click("#launch-at-login")
        d.wait_for("the autostart entry removed", lambda: not entries())
        self.assertFalse(self.visible("#error"), self.text_of("#error-message"))
        # The preset saved from the session's options is listed, and can be deleted.
        d.wait_for("the saved preset", lambda: self.css('#presets-list li[data-preset="night-owl"]'))
        self.settle(top=True)
        d.screenshot(ARTIFACTS / "settings.png")
        self.click('[data-delete-preset="night-owl"]')
        d.wait_for("the preset to go", lambda: not self.css('#presets-list li[data-preset="night-owl"]'))
        self.assertTrue(self.visible("#presets-empty"))
        self.assertFalse(self.visible("#error"), self.text_of("#error-message"))

        # A Codex session reported its own plan's windows: they show beside Claude's, apart.
        out = subprocess.run([str(CLI), "run", "--agent", "codex", "--events", "-", "--", "bash", "-c", "exit 0"],
                             env=self.env, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        codex_session = json.loads(out.stdout.splitlines()[0])["session"]
        import sqlite3
        db = sqlite3.connect(Path(self.env["NIGHTSHIFT_STATE_DIR"]) / "journal.sqlite3")
        ts = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
        db.execute("INSERT INTO usage_samples (session, ts, five_hour_pct, seven_day_pct)"
                   " VALUES (?, ?, 20.0, 12.0)", (codex_session, ts))
        db.commit()
        db.close()
        # The usage chip is in the header, with its 24-hour sparkline (24 bars, read or not).
        self.click("#usage-chip")
        self.click("#usage-chip")
        d.wait_for("Codex's windows in the chip", lambda: "│ Codex 5h 20% · 7d 12%" in self.text_of("#usage-text"))
        self.assertRegex(self.text_of("#usage-text"), r"^5h .* · 7d ")
        self.assertEqual(d.run_js("return document.querySelectorAll('#usage-spark rect').length"), 24)
        self.click("#usage-chip")
        d.wait_for("the usage panel", lambda: self.visible("#usage-panel") and self.text_of("#usage-facts"))
        self.assertIn("Account night", self.text_of("#usage-facts"))
        self.assertIn("5h 91% · 7d 40%", self.text_of("#usage-facts"))
        self.assertIn("Codex", self.text_of("#usage-facts"))
        # The chip and each hour's bar in the band the core gave them (the window has no thresholds).
        def bands_as_the_core_says():
            report = json.loads(subprocess.run([str(CLI), "usage", "--json"], env=self.env, capture_output=True,
                                               text=True, timeout=30).stdout)
            order = ["none", "green", "yellow", "red"]
            chip = max(report["band"] or "none", report["codex"]["band"] or "none", key=order.index)
            core = [chip] + [b or "none" for b in report["last_24h_hourly_five_hour_band"]]
            drawn = d.run_js("return [document.getElementById('usage-chip').dataset.band,"
                             " ...[...document.querySelectorAll('#usage-spark-big rect')].map(r => r.getAttribute('class'))]")
            return drawn == core and any(b != "none" for b in core) and drawn
        d.wait_for("the bands the core gave", bands_as_the_core_says)
        self.settle(top=True)
        d.screenshot(ARTIFACTS / "usage.png")
        self.click("#usage-chip")
        self.open_view("#nav-list", "list")

    def test_6bb_the_nights_pace_is_set_in_settings(self):
        d = self.driver
        loaded = lambda: d.run_js("return document.getElementById('settings-view').dataset.loaded") == "true"  # noqa: E731
        config = Path(self.env["NIGHTSHIFT_CONFIG_DIR"]) / "config.toml"
        self.open_view("#nav-settings", "settings")
        d.wait_for("the settings read", loaded)
        self.assertEqual(d.run_js("return document.getElementById('pace-morning').value"), "", "off by default")
        before = config.read_text() if config.exists() else ""
        self.fill("#pace-morning", "eight")
        self.click("#pace-save")
        error = d.wait_for("the refusal", lambda: self.visible("#error") and self.text_of("#error-message"))
        self.assertIn("`eight` is not a morning reserve", error)
        self.assertEqual(config.read_text() if config.exists() else "", before, "nothing saved")
        self.fill("#pace-morning", "20% at 08:30")
        self.fill("#pace-weekly", "5")
        self.click("#pace-save")
        d.wait_for("the pace saved", lambda: 'morning_reserve = "20% at 08:30"' in config.read_text())
        self.assertIn("weekly_pace = 5", config.read_text())
        self.assertFalse(self.visible("#error"), self.text_of("#error-message"))
        # Read back as saved; then both off again.
        self.open_view("#nav-list", "list")
        self.open_view("#nav-settings", "settings")
        d.wait_for("the settings read again", loaded)
        self.assertEqual(d.run_js("return document.getElementById('pace-morning').value"), "20% at 08:30")
        d.run_js("for (const id of ['pace-morning', 'pace-weekly']) document.getElementById(id).value = ''")
        self.click("#pace-save")
        d.wait_for("the pace off", lambda: "[pace]" not in config.read_text())

    def test_6c_what_needs_you_is_acted_on_from_the_digest(self):
        # A stand-in for the client that names its conversation through Nightshift's hook, as
        # Claude's SessionStart does: started fresh it leaves work uncommitted and exits 5; started
        # on its conversation (`--resume ID`) it stays, as an agent does. It notes how it was started.
        d = self.driver
        base = Path(self.tmp.name)
        fake = base / "fake-client"
        fake.mkdir(exist_ok=True)
        starts = base / "fake-client-starts"
        (fake / "claude").write_text(
            "#!/bin/sh\n"
            f"printf '%s\\n' \"$*\" >> {starts}\n"
            "printf '{\"hook_event_name\":\"SessionStart\",\"session_id\":\"conv-morning-1\",\"source\":\"startup\"}'"
            f" | {CLI} hook\n"
            "echo 'fake client ready'\n"
            "case \" $* \" in *' --resume '*) exec sleep 600;; esac\n"
            "echo 'half done' > work.txt\n"
            "sleep 1\n"
            "exit 5\n")
        (fake / "claude").chmod(0o755)
        repo = base / "morning-repo"
        repo.mkdir(exist_ok=True)
        git = lambda *args: subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,  # noqa: E731
                                           check=True).stdout
        git("init", "-q", "-b", "main")
        (repo / "README").write_text("the project\n")
        git("add", "README")
        git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "start")
        run = subprocess.run([str(CLI), "run", "--agent", "claude", "--events", "-", "--", str(fake / "claude")],
                             env=self.env, cwd=repo, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=60)
        self.assertEqual(run.returncode, 5, run.stderr)
        session = json.loads(run.stdout.splitlines()[0])["session"]
        user_status = git("status", "--porcelain")

        self.open_view("#nav-digest", "digest")
        self.click('#digest-range option[value="24h"]')
        card = f'#digest-cards article[data-session="{session}"]'
        d.wait_for("the session's card", lambda: self.visible(card) and self.css(f'{card} li[data-need="salvage"]'))
        needs = d.run_js("return [...document.querySelectorAll(arguments[0] + ' li[data-need]')].map(l => l.dataset.need)",
                         card)
        self.assertEqual(sorted(needs), ["crashed", "salvage"], needs)
        # What it did: the night's commit in its repository, with its subject.
        did = self.text_of(f"{card} .did")
        self.assertIn("1 commit", did)
        self.assertIn("start", did)
        self.settle()
        d.screenshot(ARTIFACTS / "digest-cards.png")

        # The kept work, shown and then restored onto a branch of its own; the user's checkout is as
        # it was.
        self.click(f'{card} li[data-need="salvage"] [data-action="show"]')
        shown = d.wait_for("the kept work", lambda: self.text_of(f'{card} li[data-need="salvage"] .need-out'))
        self.assertIn("work.txt", shown)
        self.click(f'{card} li[data-need="salvage"] [data-action="restore"]')
        said = d.wait_for("the branch said", lambda: "now holds the kept work" in self.text_of("#notice-text")
                          and self.text_of("#notice-text"))
        branch = re.search(r"Branch (\S+) in", said).group(1)
        self.assertTrue(branch.startswith("nightshift/salvage-"), said)
        self.assertIn("work.txt", git("show", "--stat", branch))
        self.assertEqual(git("symbolic-ref", "--short", "HEAD").strip(), "main", "the checkout stays on its branch")
        self.assertEqual(git("status", "--porcelain"), user_status, "the working tree is as it was")
        self.assertFalse(self.visible("#error"), self.text_of("#error-message"))

        # Dismissed, the row is gone, from the window and from `nightshift digest` alike.
        self.click(f'{card} li[data-need="salvage"] [data-action="dismiss"]')
        d.wait_for("the row gone", lambda: not self.css(f'{card} li[data-need="salvage"]'))
        out = subprocess.run([str(CLI), "digest", "--range", "24h", "--format", "json"], env=self.env,
                             capture_output=True, text=True, timeout=60)
        ours = next(s for s in json.loads(out.stdout)["sessions"] if s["id"] == session)
        self.assertEqual([n["kind"] for n in ours["needs"]], ["crashed"], ours["needs"])

        # The ended session's page says how it ended, offers no typing, and offers Resume.
        self.click(f'{card} [data-open="{session}"]')
        d.wait_for("its page", lambda: self.visible("#detail-view") and self.text_of("#detail-title") == session)
        facts = d.run_js("return document.getElementById('detail-facts').textContent")
        self.assertIn("How it ended", facts)
        self.assertIn("exited with code 5", facts)
        self.assertFalse(self.visible("#send-form"), "nothing to type to")
        self.assertTrue(self.visible("#resume-session"))
        self.settle(top=True)
        d.screenshot(ARTIFACTS / "session-ended.png")
        try:
            d.set_size(480, 360)
            d.wait_for("the window at 480x360", lambda: d.run_js("return window.innerWidth <= 480"))
            self.assertLessEqual(self.overflow(), 0, "no horizontal scrolling of an ended session at 480x360")
            self.settle(top=True)
            d.screenshot(ARTIFACTS / "session-ended-480x360.png")
        finally:
            d.set_size(820, 520)

        # Resume, from the digest's row: the conversation goes on in a new session, which runs.
        self.open_view("#nav-digest", "digest")
        d.wait_for("the card again", lambda: self.css(f'{card} li[data-need="crashed"] [data-action="resume"]'))
        self.click(f'{card} li[data-need="crashed"] [data-action="resume"]')
        resumed = d.wait_for("the new session's page", lambda: self.visible("#detail-view")
                             and self.text_of("#detail-title") not in ("", session) and self.text_of("#detail-title"))
        try:
            d.wait_for("the client started on its conversation", lambda: starts.exists()
                       and "--resume conv-morning-1" in starts.read_text())
            standing = lambda: next((r["standing"] for r in json.loads(subprocess.run(  # noqa: E731
                [str(CLI), "sessions", "--json"], env=self.env, capture_output=True, text=True, timeout=30).stdout)
                if r["id"] == resumed), None)
            d.wait_for("it running", lambda: standing() == "live", timeout=30)
            self.assertIn(f"carrying on session {session}'s conversation", subprocess.run(
                [str(CLI), "journal", "--session", resumed], env=self.env, capture_output=True, text=True,
                timeout=30).stdout)
        finally:
            subprocess.run([str(CLI), "stop", resumed], env=self.env, capture_output=True, timeout=30)

        # The morning summary is the same cards, from the digest stored at its hour; a row dismissed
        # after it was written is left out when it is shown.
        import sqlite3
        stored = subprocess.run([str(CLI), "digest", "--range", "24h", "--format", "json"], env=self.env,
                                capture_output=True, text=True, timeout=60).stdout
        night = json.loads(stored)
        db = sqlite3.connect(Path(self.env["NIGHTSHIFT_STATE_DIR"]) / "journal.sqlite3")
        db.execute("INSERT INTO summaries (scheduled_for, created_at, from_ts, to_ts, headline, body)"
                   " VALUES (?, ?, ?, ?, ?, ?)", (night["to"], night["to"], night["from"], night["to"],
                                                  "the night, as stored", stored))
        db.commit()
        db.close()
        self.open_view("#nav-morning", "morning")
        morning = f'#morning-cards article[data-session="{session}"]'
        d.wait_for("the session's card in the morning", lambda: self.css(f'{morning} li[data-need="crashed"]'))
        self.click(f'{morning} li[data-need="crashed"] [data-action="dismiss"]')
        d.wait_for("the row gone from the morning", lambda: self.css(morning)
                   and not self.css(f'{morning} li[data-need="crashed"]'))
        self.settle(top=True)
        d.screenshot(ARTIFACTS / "morning-cards.png")
        self.open_view("#nav-list", "list")

    def replay_text(self):
        return self.driver.run_js("const r = document.querySelector('#replay-terminal .xterm-rows');"
                                  "return r ? [...r.children].map(c => c.textContent.trimEnd()).join('\\n') : ''")

    def test_6d_a_life_is_replayed_and_its_limit_mark_shows_that_screen(self):
        # A life of the real client's screens as captured: the composer, then a weekly limit.
        d = self.driver
        script = (f"cat {CAPTURES / 'typed-one-char.ansi.txt'}; sleep 3; "
                  f"cat {CAPTURES / 'weekly-limit.ansi.txt'}; sleep 4")
        run = subprocess.run([str(CLI), "run", "--agent", "claude", "--cols", "120", "--rows", "40", "--events", "-",
                              "--", "bash", "-c", script], env=self.env, stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=60)
        session = json.loads(run.stdout.splitlines()[0])["session"]
        events = [json.loads(l) for l in subprocess.run(
            [str(CLI), "journal", "--session", session, "--json"], env=self.env, capture_output=True, text=True,
            timeout=30).stdout.splitlines() if l.strip()]
        limits = [e for e in events if e["event"] == "limit_detected"]
        self.assertTrue(limits, "the journal saw the limit")
        line = limits[0]["line"]

        self.open_view("#nav-list", "list")
        self.click(f'tr[data-session-id="{session}"] td.id')
        d.wait_for("its page", lambda: self.visible("#detail-view") and self.text_of("#detail-title") == session)
        d.wait_for("the replay", lambda: self.visible("#replay") and self.css("#replay-marks [data-kind]"))
        self.assertTrue(self.visible("#replay-open"), "the page offers Replay")
        kinds = d.run_js("return [...document.querySelectorAll('#replay-marks [data-kind]')].map(m => m.dataset.kind)")
        self.assertIn("limit", kinds)
        # At 16x, to its end: the last screen is the limit's. Played from the keyboard: Enter on the
        # focused button, as a keyboard user presses it (the player is far down the page, where
        # WebKitWebDriver's pointer does not always reach).
        def press(sel, key="\ue007"):
            d.run_js("document.querySelector(arguments[0]).focus()", sel)
            d.cmd("POST", f"/element/{self.css(sel)}/value", {"text": key})
        self.click('#replay-speed option[value="16"]')
        press("#replay-play")
        d.wait_for("the replay played to its end", lambda: d.run_js(
            "return document.getElementById('replay').dataset.ended") == "true", timeout=30)
        d.wait_for("the limit's screen at the end", lambda: line in self.replay_text())
        # Back to the start, then to the limit's mark: the screen the journal says was there.
        d.run_js("const s = document.getElementById('replay-seek'); s.value = '0';"
                 " s.dispatchEvent(new Event('input'))")
        d.wait_for("the start again", lambda: line not in self.replay_text())
        press('#replay-marks [data-kind="limit"]')
        d.wait_for("the limit's screen", lambda: line in self.replay_text())
        mark_t = float(d.run_js("return document.querySelector('#replay-marks [data-kind=\"limit\"]').dataset.t"))
        shown_t = float(d.run_js("return document.getElementById('replay-seek').dataset.t"))
        self.assertAlmostEqual(shown_t, mark_t, places=1)
        # The still stretch between the two screens plays as two seconds; as the life went, three.
        self.assertTrue(self.text_of("#replay-clock").endswith("/ 0:02"), self.text_of("#replay-clock"))
        press("#replay-cut", " ")  # Space ticks a checkbox
        d.wait_for("the life's own clock", lambda: self.text_of("#replay-clock").endswith("/ 0:03"))
        self.assertIn(line, self.replay_text(), "the same moment on the other clock")
        d.run_js("document.getElementById('replay').scrollIntoView()")
        self.settle()
        d.screenshot(ARTIFACTS / "replay.png")
        # From the digest's timeline: the session's limit band opens its replay at that moment.
        self.open_view("#nav-digest", "digest")
        band = f'#digest-timeline rect.band[data-session="{session}"][data-state="limit_paused"]'
        d.wait_for("the limit's band on the timeline", lambda: self.css(band))
        d.run_js("document.querySelector(arguments[0]).dispatchEvent(new MouseEvent('click', {bubbles: true}))", band)
        d.wait_for("its page", lambda: self.visible("#detail-view") and self.text_of("#detail-title") == session)
        d.wait_for("the replay at the limit", lambda: self.visible("#replay") and line in self.replay_text())
        try:
            d.set_size(480, 360)
            d.wait_for("the window at 480x360", lambda: d.run_js("return window.innerWidth <= 480"))
            self.assertLessEqual(self.overflow(), 0, "no horizontal scrolling of the page at 480x360")
            d.run_js("document.getElementById('replay').scrollIntoView()")
            self.settle()
            d.screenshot(ARTIFACTS / "replay-480x360.png")
            self.open_view("#nav-digest", "digest")
            self.assertLessEqual(self.overflow(), 0, "no horizontal scrolling of the digest at 480x360")
            self.settle(top=True)
            d.screenshot(ARTIFACTS / "digest-480x360.png")
            self.open_view("#nav-morning", "morning")
            self.assertLessEqual(self.overflow(), 0, "no horizontal scrolling of the morning at 480x360")
            self.settle(top=True)
            d.screenshot(ARTIFACTS / "morning-480x360.png")
        finally:
            d.set_size(820, 520)
        self.open_view("#nav-list", "list")

    def test_6e_a_question_is_answered_and_a_lost_session_resumed_from_the_digest(self):
        # The real client's question dialog, as captured, in a session of a headless run.
        d = self.driver
        title = (CAPTURES / "question-mock.title.txt").read_text().strip()
        script = (f"printf '\\033]0;%s\\007' {json.dumps(title)}; cat {CAPTURES / 'question-mock.ansi.txt'}; "
                  "exec sleep 600")
        run = subprocess.Popen([str(CLI), "run", "--agent", "claude", "--cols", "120", "--rows", "40", "--events", "-",
                                "--", "bash", "-c", script], env=self.env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        sessions = lambda: {r["id"]: r for r in json.loads(subprocess.run(  # noqa: E731
            [str(CLI), "sessions", "--json"], env=self.env, capture_output=True, text=True, timeout=30).stdout)}
        session = None
        try:
            session = json.loads(run.stdout.readline())["session"]
            d.wait_for("it waiting on the question", lambda: sessions()[session]["state"] == "waiting_input")
            card = f'#digest-cards article[data-session="{session}"]'
            self.open_view("#nav-digest", "digest")
            d.wait_for("the question's row", lambda: self.css(f'{card} li[data-need="question"]'))
            self.assertIn("Which database", self.text_of(f'{card} li[data-need="question"]'))
            # Answer: its page, the terminal focused on the dialog.
            self.click(f'{card} li[data-need="question"] [data-action="answer"]')
            d.wait_for("its page", lambda: self.visible("#detail-view") and self.text_of("#detail-title") == session)
            d.wait_for("the dialog in its terminal", lambda: "Which database" in self.terminal_text())
            d.wait_for("the terminal focused", lambda: d.run_js(
                "return !!document.activeElement && !!document.activeElement.closest('#terminal')"))
            # Its life so far plays back too, said to be still going on (not cut short).
            d.wait_for("the live life's replay", lambda: self.visible("#replay")
                       and "still going on" in self.text_of("#replay-note"))
        finally:
            # Its Nightshift killed (a closed lid, the OOM killer): the session is lost.
            run.kill()
            run.wait(30)
            run.stdout.close()
        self.open_view("#nav-digest", "digest")
        d.wait_for("the lost row", lambda: self.css(f'{card} li[data-need="lost"] [data-action="resume"]'))
        self.click(f'{card} li[data-need="lost"] [data-action="resume"]')
        try:
            d.wait_for("its page again", lambda: self.visible("#detail-view") and self.text_of("#detail-title") == session)
            d.wait_for("it running here", lambda: sessions()[session]["standing"] == "live"
                       and sessions()[session]["owner_pid"] != run.pid)
            d.wait_for("the dialog again", lambda: "Which database" in self.terminal_text(), timeout=30)
        finally:
            subprocess.run([str(CLI), "stop", session], env=self.env, capture_output=True, timeout=30)
        self.click("#back")
        d.wait_for("the list", lambda: self.visible("#list-view"))

    def test_6f_a_kept_resume_a_breaker_and_unpushed_commits_are_acted_on_from_the_digest(self):
        d = self.driver
        base = Path(self.tmp.name)
        sessions = lambda: {r["id"]: r for r in json.loads(subprocess.run(  # noqa: E731
            [str(CLI), "sessions", "--json"], env=self.env, capture_output=True, text=True, timeout=30).stdout)}
        row = lambda s, kind: f'#digest-cards article[data-session="{s}"] li[data-need="{kind}"]'  # noqa: E731
        started = []

        def start(*args, script):
            run = subprocess.Popen([str(CLI), "run", *args, "--events", "-", "--", "bash", "-c", script],
                                   env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True)
            session = json.loads(run.stdout.readline())["session"]
            started.append((run, session))
            return run, session

        try:
            # A weekly limit waited for with auto-resume, and its Nightshift ended (a logout): kept.
            title = (CAPTURES / "weekly-limit.title.txt").read_text().strip()
            kept_run, kept = start("--agent", "claude", "--auto-resume", "--cols", "120", "--rows", "40", script=(
                f"printf '\\033]0;%s\\007' {json.dumps(title)}; cat {CAPTURES / 'weekly-limit.ansi.txt'}; exec sleep 600"))
            d.wait_for("the resume armed", lambda: sessions()[kept]["state"] == "limit_paused", timeout=30)
            time.sleep(1)
            kept_run.send_signal(signal.SIGTERM)
            kept_run.wait(30)
            d.wait_for("the resume kept", lambda: sessions()[kept]["standing"] == "kept")
            # An agent that dies at once, with respawn armed: the crash-loop breaker opens.
            _, looped = start("--respawn", "--restart-backoff", "0.2", script="exit 1")
            d.wait_for("the breaker open", lambda: sessions()[looped]["state"] == "breaker_open", timeout=60)
            # A commit of tonight's on no remote branch.
            remote, clone = base / "remote.git", base / "delivery-clone"
            subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
            subprocess.run(["git", "clone", "-q", str(remote), str(clone)], check=True, capture_output=True)
            git = lambda *a: subprocess.run(["git", "-C", str(clone), "-c", "user.name=t",  # noqa: E731
                                            "-c", "user.email=t@example.com", *a], check=True, capture_output=True)
            (clone / "a.txt").write_text("a\n")
            git("add", "a.txt")
            git("commit", "-q", "-m", "first, pushed")
            git("push", "-q", "origin", "HEAD")
            (clone / "b.txt").write_text("b\n")
            git("add", "b.txt")
            git("commit", "-q", "-m", "the night's work, not pushed")
            out = subprocess.run([str(CLI), "run", "--events", "-", "--", "true"], env=self.env, cwd=clone,
                                 stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
            pushed = json.loads(out.stdout.splitlines()[0])["session"]

            self.open_view("#nav-digest", "digest")
            d.wait_for("the three rows", lambda: self.css(row(kept, "kept")) and self.css(row(looped, "breaker"))
                       and self.css(row(pushed, "delivery")))
            # Show the commits: the one on no remote branch, with its subject.
            self.click(f'{row(pushed, "delivery")} [data-action="commits"]')
            shown = d.wait_for("the commits", lambda: self.text_of(f'{row(pushed, "delivery")} .need-out'))
            self.assertIn("the night's work, not pushed", shown)
            self.assertNotIn("first, pushed", shown)
            # Reset the breaker: the session that runs it says what it reset.
            self.click(f'{row(looped, "breaker")} [data-action="reset"]')
            said = d.wait_for("the reset said", lambda: f"Session {looped}" in self.text_of("#notice-text")
                              and self.text_of("#notice-text"))
            self.assertIn("crash_loop", said)
            events = subprocess.run([str(CLI), "journal", "--session", looped, "--json"], env=self.env,
                                    capture_output=True, text=True, timeout=30).stdout
            self.assertTrue(any(e["event"] == "breaker" and e["state"] == "closed"
                                for e in map(json.loads, events.splitlines())), "the breaker closed")
            # Resume now: the kept session runs again here, paused on its limit.
            self.open_view("#nav-digest", "digest")
            d.wait_for("the kept row", lambda: self.css(f'{row(kept, "kept")} [data-action="resume"]'))
            self.click(f'{row(kept, "kept")} [data-action="resume"]')
            d.wait_for("its page", lambda: self.visible("#detail-view") and self.text_of("#detail-title") == kept)
            d.wait_for("it running here, paused on its limit", lambda: sessions()[kept]["standing"] == "live"
                       and sessions()[kept]["state"] == "limit_paused", timeout=30)
            self.assertFalse(self.visible("#error"), self.text_of("#error-message"))
        finally:
            for run, session in started:
                subprocess.run([str(CLI), "stop", session], env=self.env, capture_output=True, timeout=30)
                if run.poll() is None:
                    try:
                        run.wait(30)
                    except subprocess.TimeoutExpired:
                        run.kill()
                        run.wait()
                run.stdout.close()
        self.click("#back")
        d.wait_for("the list", lambda: self.visible("#list-view"))

    def test_6g_a_card_tells_who_did_what_when_the_work_moved(self):
        # A session whose work moved from Claude to Codex at a limit: made of two real runs' events
        # (Claude's, then Codex's contract laid after it, as a failover journals it) with usage
        # readings each agent reported, and a commit in each stretch of its repository.
        d = self.driver
        base = Path(self.tmp.name)
        repo = base / "moved-repo"
        repo.mkdir(exist_ok=True)
        now = time.time()
        stamp = lambda t: time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(t))  # noqa: E731
        t0, t1, t2 = now - 3 * 3600, now - 2 * 3600, now - 3600

        def git(*args, when=None):
            env = dict(os.environ)
            if when:
                env.update(GIT_AUTHOR_DATE=stamp(when), GIT_COMMITTER_DATE=stamp(when))
            subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                           capture_output=True, text=True, check=True, env=env)
        git("init", "-q", "-b", "main")
        git("commit", "-q", "--allow-empty", "-m", "before", when=now - 4 * 3600)

        def run(agent):
            out = subprocess.run([str(CLI), "run", "--agent", agent, "--events", "-", "--", "bash", "-c", "exit 0"],
                                 env=self.env, cwd=repo, capture_output=True, text=True, timeout=30,
                                 stdin=subprocess.DEVNULL)
            self.assertEqual(out.returncode, 0, out.stderr)
            return json.loads(out.stdout.splitlines()[0])["session"]
        session, codex = run("claude"), run("codex")
        git("commit", "-q", "--allow-empty", "-m", "claude: the parser", when=t0 + 1800)
        git("commit", "-q", "--allow-empty", "-m", "codex: the lexer", when=t1 + 1800)
        import sqlite3
        db = sqlite3.connect(Path(self.env["NIGHTSHIFT_STATE_DIR"]) / "journal.sqlite3")
        # Claude's run at t0, its end at t1.
        for (event_id, state) in db.execute("SELECT id, state FROM events WHERE session = ?", (session,)).fetchall():
            db.execute("UPDATE events SET ts = ?1, body = json_set(body, '$.ts', ?1) WHERE id = ?2",
                       (stamp(t1 if state == "exited" else t0), event_id))

        def add(ts, body):
            body = dict(body, ts=stamp(ts), session=session)
            db.execute("INSERT INTO events (ts, session, event, state, body) VALUES (?, ?, ?, ?, ?)",
                       (stamp(ts), session, body["event"], body.get("state"), json.dumps(body)))
        add(t1, {"event": "agent_switch", "action": "switched", "from": "claude", "to": "codex",
                 "reason": "claude met its 5-hour limit"})
        add(t1, {"event": "handoff_built", "chars": 1800, "why": "claude met its 5-hour limit"})
        contract = db.execute("SELECT body FROM events WHERE session = ? AND event = 'contract'", (codex,)).fetchone()
        add(t1, json.loads(contract[0]))
        add(t1 + 60, {"event": "handoff_checked", "received": True})
        add(t1, {"event": "state", "state": "working", "reason": "the work moved"})
        add(t2, {"event": "state", "state": "exited", "reason": "process exited with code 0", "exit_code": 0})
        for ts, agent, five, cost, tokens in [(t0 + 600, "claude", 40.0, 0.25, 1000),
                                              (t1 - 600, "claude", 100.0, 1.25, 9000),
                                              (t1 + 600, "codex", 3.0, None, 500),
                                              (t2 - 600, "codex", 20.0, None, 4500)]:
            db.execute("INSERT INTO usage_samples (session, ts, five_hour_pct, cost_usd, tokens, agent)"
                       " VALUES (?, ?, ?, ?, ?, ?)", (session, stamp(ts), five, cost, tokens, agent))
        db.commit()
        db.close()

        self.open_view("#nav-list", "list")
        self.open_view("#nav-digest", "digest")
        self.click('#digest-range option[value="24h"]')
        card = f'#digest-cards article[data-session="{session}"]'
        d.wait_for("the moved session's workers", lambda: self.css(f"{card} li.worker"))
        workers = d.run_js("return [...document.querySelectorAll(arguments[0] + ' li.worker')]"
                           ".map(w => [w.dataset.agent, w.textContent, w.title])", card)
        took = d.run_js("return [...document.querySelectorAll(arguments[0] + ' li.worker')]"
                        ".map(w => (w.querySelector('.took-over') || {}).textContent || null)", card)
        self.assertEqual(took, [None, "took over from a handoff Nightshift built (1800 chars), and its first prompt"
                                      " carried it"])
        self.assertEqual([w[0] for w in workers], ["claude", "codex"], workers)
        # Begun in the range: each client's first reading is spend of the night too.
        self.assertRegex(workers[0][1], r"1 commit · \$1\.25 · 9000 tokens · 5h 40% → 100%")
        self.assertRegex(workers[1][1], r"1 commit · 4500 tokens · 5h 3% → 20%")
        self.assertNotIn("$", workers[1][1], "Codex reports no cost")
        self.assertEqual([w[2] for w in workers], ["claude: the parser", "codex: the lexer"])
        d.run_js("document.querySelector(arguments[0] + ' li.workers').scrollIntoView({ block: 'center' })", card)
        self.settle()
        d.screenshot(ARTIFACTS / "digest-workers.png")
        self.open_view("#nav-list", "list")

    def test_6b_tray_and_notification_events_open_views(self):
        # The tray menu and notification clicks reach the window as `show-view` and `open-session`.
        d = self.driver
        emit = "window.__TAURI__.event.emit(arguments[0], arguments[1])"
        d.run_js(emit, "show-view", "new-session")
        d.wait_for("the new session form", lambda: self.visible("#new-view"))
        d.run_js(emit, "show-view", "digest")
        d.wait_for("the digest", lambda: self.visible("#digest-view") and self.text_of("#digest-cards"))
        d.run_js(emit, "open-session", self.seeded)
        d.wait_for("the seeded session's page", lambda: self.visible("#detail-view")
                   and self.text_of("#detail-title") == self.seeded)
        self.click("#back")
        d.wait_for("the list", lambda: self.visible("#list-view"))

    def test_7_usable_at_the_smallest_size(self):
        d = self.driver
        d.set_size(480, 360)
        d.wait_for("the window at 480x360", lambda: d.run_js("return window.innerWidth <= 480 && window.innerHeight <= 360"))
        d.wait_for("the list at 480x360", lambda: self.row_state(self.seeded))
        self.assertLessEqual(self.overflow(), 0, "no horizontal scrolling at 480x360")
        self.settle(top=True)
        d.screenshot(ARTIFACTS / "sessions-480x360.png")
        for nav, view in (("#nav-new", "new"), ("#nav-digest", "digest"), ("#nav-morning", "morning"),
                          ("#nav-settings", "settings")):
            self.open_view(nav, view)
            self.assertLessEqual(self.overflow(), 0, f"no horizontal scrolling in {view} at 480x360")
            self.assertTrue(self.visible("#nav-new"))
        self.settle(top=True)
        d.screenshot(ARTIFACTS / "settings-480x360.png")
        self.open_view("#nav-list", "list")
        # By keyboard: Enter on a focused row opens its session.
        row = f'tr[data-session-id="{self.seeded}"]'
        d.wait_for("Enter on the seeded row",
                   lambda: d.cmd("POST", f"/element/{self.css(row)}/value", {"text": "\ue007"}) or True)
        d.wait_for("the session page", lambda: self.visible("#detail-view"))
        self.assertEqual(self.text_of("#detail-title"), self.seeded)
        self.assertLessEqual(self.overflow(), 0, "no horizontal scrolling on a session's page at 480x360")
        self.click("#open-options")
        d.wait_for("the options", lambda: self.visible("#options-view") and self.text_of("#respawn-status"))
        self.assertLessEqual(self.overflow(), 0, "no horizontal scrolling in the options at 480x360")
        self.settle(top=True)
        d.screenshot(ARTIFACTS / "options-480x360.png")
        self.click("#options-back")
        self.click("#back")
        d.wait_for("the list again", lambda: self.visible("#list-view"))

    def test_8_closing_the_window_keeps_the_app_running(self):
        d = self.driver
        x = X11()
        window = x.find("Nightshift")
        self.assertTrue(x.is_viewable(window))
        x.request_close(window)
        d.wait_for("the window to be hidden", lambda: not x.is_viewable(window))
        # The app and its webview are still there, still following the journal.
        before = len(d.find_all("tr[data-session-id]"))
        run = subprocess.run([str(CLI), "run", "--", "true"], env=self.env, stdin=subprocess.DEVNULL, timeout=30)
        self.assertEqual(run.returncode, 0)
        count = d.wait_for("the hidden window to list the new session",
                           lambda: len(d.find_all("tr[data-session-id]")) > before and len(d.find_all("tr[data-session-id]")))
        self.assertGreaterEqual(count, before + 1)

    def test_9_notifications_and_the_tray_menu_open_sessions(self):
        d = self.driver
        x = X11()
        window = x.find("Nightshift")
        log_dir = Path(self.env["NIGHTSHIFT_STATE_DIR"]) / "logs"
        warned = lambda: sum(p.read_text(errors="replace").count("cannot show desktop notifications")
                             for p in log_dir.glob("*"))
        # Until now there was no notification service: the finished runs' notifications failed,
        # logged once, and the app went on.
        self.assertEqual(d.wait_for("the failure logged", warned), 1, "logged once, not once per notification")
        # An armed run with no logind: a warning in the window, not a crash.
        armed = subprocess.Popen([str(CLI), "run", "--preset", "overnight", "--", "bash", "-c", "exec sleep 600"],
                                 env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        with dbus_fakes.Fakes("notifications", "watcher") as fakes:
            try:
                title = (CAPTURES / "question-mock.title.txt").read_text().strip()
                script = (f"printf '\\033]0;%s\\007' {json.dumps(title)}; "
                          f"cat {CAPTURES / 'question-mock.ansi.txt'}; exec sleep 600")
                asking = subprocess.Popen([str(CLI), "run", "--events", "-", "--agent", "claude", "--cols", "120",
                                           "--rows", "40", "--", "bash", "-c", script], env=self.env,
                                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
                session = json.loads(asking.stdout.readline())["session"]
                shown = fakes.wait_for("notifications", lambda r: r.get("call") == "Notify"
                                       and "waiting for you" in r["summary"], timeout=30, what="the question")
                self.assertEqual(shown["body"], "Which database should the new service use?")
                self.assertIn("default", shown["actions"])
                # A click on it (the app waits for it on its own connection; give it a moment).
                time.sleep(1)
                if x.is_viewable(window):
                    x.request_close(window)
                    d.wait_for("the window hidden", lambda: not x.is_viewable(window))
                dbus_fakes.invoke_action(shown["id"], "default")
                d.wait_for("the window shown on the asking session", lambda: x.is_viewable(window)
                           and self.visible("#detail-view") and self.text_of("#detail-title") == session)
                # Its terminal has the focus, on the question.
                d.wait_for("the question in the page's terminal",
                           lambda: "Which database should the new service use?" in self.terminal_text())
                self.assertTrue(d.run_js("return !!document.activeElement.closest('#terminal')"),
                                "the terminal has the focus")
                self.click("#back")
                d.wait_for("the list", lambda: self.visible("#list-view"))

                # The tray menu lists it; clicking its entry opens it too.
                item = fakes.wait_for("watcher", lambda r: r.get("call") == "RegisterStatusNotifierItem",
                                      timeout=20, what="the tray item")
                menu_path = str(dbus_fakes.sni_properties(item["service"], item["path"])["Menu"])
                entry = d.wait_for("the session in the tray menu", lambda: [
                    m for m in dbus_fakes.menu_layout(item["service"], menu_path) if "waiting input" in m.label])
                dbus_fakes.menu_click(item["service"], menu_path, entry[0].id)
                d.wait_for("the session's page from the tray", lambda: self.visible("#detail-view")
                           and self.text_of("#detail-title") == session)

                self.open_view("#nav-settings", "settings")
                warning = d.wait_for("the sleep-assertion warning", lambda: self.text_of("#power-warning"))
                self.assertIn("Cannot keep the machine awake", warning)
                self.settle(top=True)
                d.screenshot(ARTIFACTS / "settings-power-warning.png")
                subprocess.run([str(CLI), "stop", session], env=self.env, timeout=30, capture_output=True)
                asking.wait(30)
            finally:
                armed.terminate()
                armed.wait(30)

    def test_9c_guard_denials_notify_once_per_kind_and_the_handoff_shows(self):
        d = self.driver
        # A client named `claude` gets Nightshift's hooks; this one runs them as the real one would on
        # three tool calls: two merges (one kind) and a release.
        fake = Path(self.tmp.name) / "guarded" / "claude"
        fake.parent.mkdir(parents=True, exist_ok=True)
        fake.write_text(
            "#!/bin/sh\n"
            "for cmd in 'gh pr merge 7' 'gh pr merge 8' 'gh release create v1'; do\n"
            "  printf '{\"session_id\":\"c1\",\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\","
            "\"tool_input\":{\"command\":\"%s\"},\"cwd\":\"%s\"}' \"$cmd\" \"$PWD\" | \"$NS_CLI\" hook >> \"$0.answers\"\n"
            "  echo >> \"$0.answers\"\n"
            "done\n"
            "exec sleep 600\n")
        fake.chmod(0o755)
        env = dict(self.env, NS_CLI=str(CLI))
        with dbus_fakes.Fakes("notifications") as fakes:
            run = subprocess.Popen([str(CLI), "run", "--events", "-", "--agent", "claude", "--guard", "true", "--",
                                    str(fake)], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
            try:
                session = json.loads(run.stdout.readline())["session"]
                guard = lambda r: r.get("call") == "Notify" and "the guard refused" in r.get("summary", "")  # noqa: E731
                fakes.wait_for("notifications", lambda r: guard(r) and "publishing a release" in r["summary"],
                               timeout=30, what="the release's notification")
                time.sleep(1.5)
                shown = [r for r in dbus_fakes.read_log(fakes.logs["notifications"]) if guard(r)]
                self.assertEqual(len(shown), 2, f"one per kind: {shown}")
                self.assertIn("merging a pull request", shown[0]["summary"])
                self.assertIn("gh pr merge 7", shown[0]["body"])
                answers = fake.with_name("claude.answers").read_text()
                self.assertEqual(answers.count('"permissionDecision":"deny"'), 3, answers)

                # The agent's handoff, kept in the state directory, on the session's page.
                kept = Path(self.env["NIGHTSHIFT_STATE_DIR"]) / "handoffs" / session / "latest.md"
                kept.parent.mkdir(parents=True, exist_ok=True)
                kept.write_text("Done: the parser. Next: the tests in tests/parse.rs. Check: cargo test.")
                self.open_view("#nav-list", "list")
                self.click(f'tr[data-session-id="{session}"] td.id')
                d.wait_for("the handoff on the page", lambda: self.visible("#handoff")
                           and "Next: the tests" in self.text_of("#handoff-text"))
                self.assertIn("latest.md", self.text_of("#handoff-meta"))
                journal = "\n".join(d.text(e) for e in d.find_all("#detail-events li"))
                self.assertIn("the guard refused merging a pull request: gh pr merge 7", journal)
                self.settle(top=True)
                d.screenshot(ARTIFACTS / "session-handoff.png")
                self.click("#back")
            finally:
                subprocess.run([str(CLI), "stop", session], env=self.env, timeout=30, capture_output=True)
                run.wait(30)

    def _newest_other_than(self, *known):
        ids = [self.driver.run_js("return arguments[0].dataset.sessionId", {webdriver.ELEMENT: e})
               for e in self.driver.find_all("tr[data-session-id]")]
        others = [i for i in ids if i not in known]
        return others[0] if others else None

    def test_9d_a_bad_config_file_is_shown_until_it_is_fixed(self):
        d = self.driver
        config = Path(self.env["NIGHTSHIFT_CONFIG_DIR"]) / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text("[notifications]\nfinished = maybe\n")
        try:
            shown = d.wait_for("the problem banner", lambda: self.visible("#problem-banner")
                               and self.text_of("#problem-list"), timeout=20)
            self.assertIn("config.toml", shown)
            self.assertIn("line 2", shown)
            self.assertIn("defaults", shown)
            self.settle(top=True)
            d.screenshot(ARTIFACTS / "problem-banner.png")
        finally:
            config.unlink()
        d.wait_for("the banner gone once fixed", lambda: not self.visible("#problem-banner"), timeout=20)

    def test_9e_a_session_in_a_worktree_of_its_own_from_the_new_session_page(self):
        # The checkbox: the session commits on a branch nightshift/… in a folder of its own, and the
        # user's checkout (HEAD, index, files) stays as it was.
        d = self.driver
        repo = Path(self.tmp.name) / "worktree-repo"
        repo.mkdir()
        git = lambda *args: subprocess.run(  # noqa: E731
            ["git", "-c", "user.name=u", "-c", "user.email=u@u", *args], cwd=repo, check=True,
            capture_output=True, text=True).stdout.strip()
        git("init", "-q")
        (repo / "README").write_text("the project\n")
        git("add", "README")
        git("commit", "-qm", "The project")
        (repo / "README").write_text("half edited\n")
        head, status = git("rev-parse", "HEAD"), git("status", "--porcelain")
        config = Path(self.env["NIGHTSHIFT_CONFIG_DIR"]) / "config.toml"
        root = Path(self.tmp.name) / "worktrees"
        # The app writes an empty [worktree] table when it saves its settings: give it the folder.
        text = config.read_text() if config.exists() else ""
        text = re.sub(r"(?m)^\[worktree\]\n(dir = .*\n)?", "", text)
        config.write_text(text + f'\n[worktree]\ndir = "{root}"\n')
        remembered = d.run_js("return localStorage.getItem('nightshift.cwd')")
        self.open_view("#nav-new", "new")
        self.fill("#new-command", "bash -c 'git -c user.name=a -c user.email=a@a commit -q --allow-empty -m from-the-window'")
        self.fill("#new-cwd", str(repo))
        self.click('#new-agent option[value="generic"]')
        self.click('#new-preset option[value=""]')
        # No account: the field is hidden when config.toml names none.
        d.run_js("document.getElementById('new-account').value = ''")
        self.assertFalse(d.run_js("return document.getElementById('new-worktree').checked"), "off unless asked")
        d.run_js("document.getElementById('new-worktree').click()")
        self.click("#new-submit")
        branch = d.wait_for("its branch", lambda: git("for-each-ref", "--format=%(refname:short)", "refs/heads/nightshift/"),
                            timeout=30)
        d.wait_for("its commit on it", lambda: git("log", "-1", "--format=%s", branch) == "from-the-window", timeout=30)
        self.assertFalse(self.visible("#error"), self.text_of("#error-message"))
        self.assertEqual((git("rev-parse", "HEAD"), git("status", "--porcelain")), (head, status))
        self.assertEqual((repo / "README").read_text(), "half edited\n")
        listed = subprocess.run([str(CLI), "worktree", "list"], env=self.env, capture_output=True, text=True).stdout
        self.assertIn(branch, listed)
        self.assertIn(str(root), listed)
        # The Sessions view lists it; Remove is refused while its commit is neither merged nor pushed,
        # and Remove anyway removes its folder and keeps its branch.
        self.open_view("#nav-list", "list")
        row = f'#worktrees-table tr[data-worktree="{branch.removeprefix("nightshift/")}"]'
        d.wait_for("the worktree listed", lambda: self.visible(row), timeout=30)
        self.assertIn("1 commit", self.text_of(row))
        folder = Path(d.run_js("return document.querySelector(arguments[0] + ' td.cwd').title", row))
        self.assertTrue(folder.is_dir())
        self.click(row + ' button[data-action="remove"]')
        d.wait_for("the refusal", lambda: self.visible(row + " .worktree-said"), timeout=30)
        self.assertIn("neither merged nor pushed", self.text_of(row + " .worktree-said"))
        self.assertTrue(folder.is_dir(), "nothing removed")
        self.assertFalse(self.visible("#error"), "said in its row, not as an error")
        d.run_js("document.querySelector(arguments[0]).scrollIntoView({block: 'center'})", row + ' button[data-action="force"]')
        self.click(row + ' button[data-action="force"]')
        d.wait_for("removed", lambda: not folder.exists() or self.visible("#error"), timeout=30)
        self.assertFalse(self.visible("#error"), self.text_of("#error-message"))
        d.wait_for("its row gone", lambda: not self.visible(row), timeout=30)
        self.assertEqual(git("log", "-1", "--format=%s", branch), "from-the-window", "its branch is kept")
        # The form as the next test finds it: no worktree, the folder it remembered.
        d.run_js("document.getElementById('new-worktree').checked = false")
        if remembered:
            d.run_js("localStorage.setItem('nightshift.cwd', arguments[0])", remembered)


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    # A test counts once however many of its subtests failed.
    failed = len({getattr(test, "test_case", test).id() for test, _ in result.failures + result.errors})
    skipped = len(result.skipped)
    print(f"e2e: {result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed or not result.wasSuccessful() else 0)
