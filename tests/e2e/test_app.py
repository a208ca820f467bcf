"""End-to-end tests of the real tray app's window under Xvfb, through WebKitWebDriver.

Run by `make test-app` as: xvfb-run -a dbus-run-session -- python3 tests/e2e/test_app.py
Needs the built binaries (target/debug/nightshift and nightshift-app). Screenshots of the views are
written to tests/artifacts/.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import webdriver  # noqa: E402
from webdriver import Driver  # noqa: E402
from x11 import X11  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "debug"
APP = TARGET / "nightshift-app"
CLI = TARGET / "nightshift"
ARTIFACTS = ROOT / "tests" / "artifacts"


class AppWindow(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for binary in (APP, CLI):
            if not binary.exists():
                raise unittest.SkipTest(f"{binary} is not built; run `make test` (it builds it)")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        cls.tmp = tempfile.TemporaryDirectory()
        base = Path(cls.tmp.name)
        cls.env = dict(os.environ, NIGHTSHIFT_STATE_DIR=str(base / "state"),
                       NIGHTSHIFT_RUNTIME_DIR=str(base / "run"), NIGHTSHIFT_CONFIG_DIR=str(base / "config"),
                       XDG_CONFIG_HOME=str(base / "config"),
                       XDG_DATA_HOME=str(base / "data"))
        # A session that ran and ended before the app started: the journal is the app's source.
        out = subprocess.run([str(CLI), "run", "--events", "-", "--", "bash", "-c", "echo hi; exit 3"],
                             env=cls.env, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        assert out.returncode == 3, out.stderr
        cls.seeded = json.loads(out.stdout.splitlines()[0])["session"]
        cls.driver = Driver(APP, cls.env, ARTIFACTS / "webkitwebdriver.log")

    @classmethod
    def tearDownClass(cls):
        cls.driver.close()
        cls.tmp.cleanup()

    def row_state(self, session):
        rows = self.driver.find_all(f'tr[data-session-id="{session}"] .badge')
        return self.driver.text(rows[0]) if rows else None

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
            session = d.wait_for("the new session's row", lambda: self._newest_other_than(self.seeded))
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

    def test_4_usable_at_the_smallest_size(self):
        d = self.driver
        d.set_size(480, 360)
        d.wait_for("the list at 480x360", lambda: self.row_state(self.seeded))
        overflow = d.run_js("return document.documentElement.scrollWidth - window.innerWidth")
        self.assertLessEqual(overflow, 0, "no horizontal scrolling at 480x360")
        d.screenshot(ARTIFACTS / "sessions-480x360.png")

    def test_5_closing_the_window_keeps_the_app_running(self):
        d = self.driver
        x = X11()
        window = x.find("Nightshift")
        self.assertTrue(x.is_viewable(window))
        x.request_close(window)
        d.wait_for("the window to be hidden", lambda: not x.is_viewable(window))
        # The app and its webview are still there, still following the journal.
        run = subprocess.run([str(CLI), "run", "--", "true"], env=self.env, stdin=subprocess.DEVNULL, timeout=30)
        self.assertEqual(run.returncode, 0)
        count = d.wait_for("the hidden window to list the new session",
                           lambda: len(d.find_all("tr[data-session-id]")) >= 3 and len(d.find_all("tr[data-session-id]")))
        self.assertGreaterEqual(count, 3)

    def _newest_other_than(self, known):
        ids = [self.driver.run_js("return arguments[0].dataset.sessionId", {webdriver.ELEMENT: e})
               for e in self.driver.find_all("tr[data-session-id]")]
        others = [i for i in ids if i != known]
        return others[0] if others else None


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    failed = len(result.failures) + len(result.errors)
    skipped = len(result.skipped)
    print(f"e2e: {result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed or not result.wasSuccessful() else 0)
