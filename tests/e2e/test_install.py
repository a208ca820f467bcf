"""`make install` and `make uninstall`, for real, into a home of the test's own.

Run by `make test-install` as: xvfb-run -a dbus-run-session -- python3 tests/e2e/test_install.py
It installs the debug build that `make test` has made (PROFILE=debug: a release build would add a
quarter of an hour; the release build is what `make test-deb` checks) with the default PREFIX,
~/.local, of a HOME under a temporary directory that already holds a file and a directory of the
user's. The installed CLI and app are run from there, each shell finds its completions where they
were put, man finds the pages, and `make uninstall` leaves the home exactly as it was.

Then a PREFIX two folders deep that does not exist yet: install makes it, the CLI runs from it, and
uninstall takes away the folders install made, and nothing above them. And a PREFIX that cannot be
made or written: `make install` stops at once with one line naming it and the fix, before the build.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import installed  # noqa: E402
from apptest import ROOT, TARGET, isolated_env, require_binaries  # noqa: E402

ARTIFACTS = ROOT / "tests" / "artifacts"


def git_revision():
    out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=10", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 and (ROOT / ".git").exists() else None


def make_env(env):
    """make and cargo as the user runs them, only HOME (and what `env` sets) moved."""
    out = dict(env, CARGO_TARGET_DIR=str(TARGET.parent),
               CARGO_HOME=os.environ.get("CARGO_HOME", str(Path.home() / ".cargo")),
               RUSTUP_HOME=os.environ.get("RUSTUP_HOME", str(Path.home() / ".rustup")))
    out.pop("MAKEFLAGS", None)
    out.pop("MAKELEVEL", None)
    return out


def make(env, *args, wrap=()):
    """`make ARGS` in the repository (under the command `wrap`, if any)."""
    return subprocess.run([*wrap, "make", "--no-print-directory", "-C", str(ROOT), *args], env=env,
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)


def make_ok(env, *args):
    out = make(env, *args)
    assert out.returncode == 0, f"make {' '.join(args)}:\n{out.stdout}\n{out.stderr}"
    return out.stdout


class MakeInstall(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_binaries()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        cls.refs_before = installed.salvage_refs(ROOT)
        cls.tmp = tempfile.TemporaryDirectory()
        base = Path(cls.tmp.name)
        cls.env = isolated_env(base)
        cls.home = Path(cls.env["HOME"])
        cls.prefix = cls.home / ".local"
        # What the user had before: a program of theirs and a menu entry of theirs.
        (cls.prefix / "bin").mkdir(parents=True)
        (cls.prefix / "bin" / "their-tool").write_text("#!/bin/sh\n")
        (cls.prefix / "share" / "applications").mkdir(parents=True)
        (cls.prefix / "share" / "applications" / "theirs.desktop").write_text("[Desktop Entry]\n")
        cls.before = installed.tree(cls.home)
        # HOME moved, so the default PREFIX is under it.
        cls.make_env = make_env(cls.env)
        # Twice: the second is an upgrade over the first, and must still uninstall cleanly.
        for _ in range(2):
            cls.installed = cls.make("install", "PROFILE=debug")
        cls.bin = cls.prefix / "bin"
        # The user's shell: ~/.local/bin on PATH, and the XDG data directory at its default (~/.local/share),
        # where bash-completion and fish look for a user's completions.
        cls.user_env = dict(cls.env, PATH=f"{cls.bin}:{os.environ['PATH']}")
        for name in ("MANPATH", "XDG_DATA_HOME", "XDG_DATA_DIRS"):
            cls.user_env.pop(name, None)
        cls.pages = installed.generated_pages(TARGET / "nightshift", base)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_9_the_repository_the_tests_run_from_is_left_alone(self):
        # The sessions the checks start run in the test's folder: none salvages this repository.
        self.assertEqual(installed.salvage_refs(ROOT) - self.refs_before, set())

    @classmethod
    def make(cls, *args):
        return make_ok(cls.make_env, *args)

    def test_1_every_file_in_its_standard_place(self):
        self.assertIn(f"Installed Nightshift in {self.prefix}", self.installed)
        ours = set(installed.tree(self.home)) - set(self.before)
        files = {p[len(".local/"):] for p in ours if not p.endswith("/")}
        expected = installed.expected_files(self.pages, "site-functions") | {"share/nightshift/installed"}
        self.assertEqual(files, expected)
        for exe in ("nightshift", "nightshift-app", "nightshift-wake"):
            self.assertEqual((self.bin / exe).read_bytes(), (TARGET / exe).read_bytes(), f"{exe} is the build's")
            self.assertTrue(os.access(self.bin / exe, os.X_OK))
        installed.check_icons(self, self.prefix / "share")

    def test_1b_the_wake_helper_gets_its_capability_and_doctor_says_long_waits_sleep(self):
        helper = self.bin / "nightshift-wake"
        # It can set wake alarms: nobody but its owner (and, installed by sudo, one group) runs it.
        self.assertEqual(helper.stat().st_mode & 0o007, 0, oct(helper.stat().st_mode))
        if os.geteuid() == 0:
            self.assertIn(f"Gave {helper} the capability to set wake alarms (CAP_WAKE_ALARM).", self.installed)
            caps = subprocess.run(["/usr/sbin/getcap", str(helper)], capture_output=True, text=True)
            self.assertIn("cap_wake_alarm=ep", caps.stdout, caps.stderr)
        else:
            self.assertIn(f"run `sudo setcap cap_wake_alarm+ep {helper}`", self.installed)
        doctor = subprocess.run([self.bin / "nightshift", "doctor", "--json"], env=self.user_env,
                                capture_output=True, text=True, timeout=120)
        wake = next(c for c in json.loads(doctor.stdout)["checks"] if c["id"] == "power.wake")
        if os.geteuid() == 0:
            self.assertEqual(wake["status"], "pass", wake)
            self.assertIn(f"({helper} sets the alarm)", wake["detail"])
        else:
            self.assertEqual(wake["status"], "warn", wake)

    def test_2_the_installed_cli_runs_from_where_it_was_put(self):
        installed.check_cli(self, self.bin, self.user_env, git_revision())
        installed.check_restore_unit(self, self.prefix / "share", self.bin / "nightshift")

    def test_3_the_desktop_entry_validates_and_starts_the_installed_app(self):
        entry = self.prefix / "share" / "applications" / f"{installed.APP_ID}.desktop"
        installed.check_desktop_entry(self, entry, self.bin / "nightshift-app")

    def test_4_each_shell_finds_its_completions(self):
        installed.check_bash(self, self.user_env)
        # zsh has no directory of its own under ~/.local: the README says to add this one to fpath.
        installed.check_zsh(self, self.user_env, self.prefix / "share" / "zsh" / "site-functions")
        installed.check_fish(self, self.user_env)

    def test_5_man_finds_and_renders_every_page(self):
        installed.check_man(self, self.user_env, self.pages)

    def test_6_the_installed_app_shows_its_window_and_launches_itself_at_login(self):
        app = self.bin / "nightshift-app"
        entry = self.prefix / "share" / "applications" / f"{installed.APP_ID}.desktop"
        self.__class__.autostart = installed.check_app(self, app, self.bin / "nightshift", self.env, ARTIFACTS,
                                                       "installed-app", entry)

    def test_7_uninstall_leaves_the_home_as_it_was(self):
        out = self.make("uninstall")
        self.assertIn(f"Removed Nightshift from {self.prefix}", out)
        # Launch at login is the user's setting, outside the install: it is named, not removed.
        autostart = getattr(self, "autostart", None)
        if autostart:
            self.assertIn(f"launch at login still starts {self.bin / 'nightshift-app'}", out)
            self.assertTrue(autostart.exists())
            autostart.unlink()
            autostart.parent.rmdir()
            (self.home / ".config").rmdir()
        self.assertEqual(installed.tree(self.home), self.before)
        self.assertIn("Nothing to uninstall", self.make("uninstall"))


class NewPrefix(unittest.TestCase):
    """`make install PREFIX=…/apps/nightshift` where neither apps nor nightshift exists yet."""

    @classmethod
    def setUpClass(cls):
        require_binaries()
        cls.tmp = tempfile.TemporaryDirectory()
        base = Path(cls.tmp.name)
        cls.env = isolated_env(base)
        cls.make_env = make_env(cls.env)
        # The folder above, the user's, with a file of theirs: it stays, and so does all above it.
        cls.top = base / "opt"
        cls.top.mkdir()
        (cls.top / "theirs").write_text("")
        cls.top_before = installed.tree(cls.top)
        cls.prefix = cls.top / "apps" / "nightshift"
        # Twice: the second finds the prefix there, and must still know that it made it.
        cls.installs = [make(cls.make_env, "install", "PROFILE=debug", f"PREFIX={cls.prefix}") for _ in range(2)]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_1_install_makes_the_prefix_and_its_parent(self):
        for out in self.installs:
            self.assertEqual(out.returncode, 0, f"{out.stdout}\n{out.stderr}")
            self.assertIn(f"Installed Nightshift in {self.prefix}", out.stdout)
        pages = installed.generated_pages(TARGET / "nightshift", Path(self.tmp.name))
        files = {p for p in installed.tree(self.prefix) if not p.endswith("/")}
        self.assertEqual(files, installed.expected_files(pages, "site-functions") | {"share/nightshift/installed"})

    def test_2_the_installed_cli_runs_from_there(self):
        installed.check_cli(self, self.prefix / "bin", self.env, git_revision())

    def test_3_uninstall_removes_the_folders_install_made_and_nothing_above(self):
        out = make_ok(self.make_env, "uninstall", f"PREFIX={self.prefix}")
        self.assertIn(f"Removed Nightshift from {self.prefix}", out)
        self.assertFalse((self.top / "apps").exists(), installed.tree(self.top))
        self.assertEqual(installed.tree(self.top), self.top_before)

    def test_4_a_new_destdir_is_made_and_removed_the_same_way(self):
        stage = self.top / "stage" / "root"
        make_ok(self.make_env, "install", "PROFILE=debug", f"DESTDIR={stage}", "PREFIX=/usr")
        self.assertTrue((stage / "usr" / "bin" / "nightshift").is_file())
        make_ok(self.make_env, "uninstall", f"DESTDIR={stage}", "PREFIX=/usr")
        self.assertFalse((self.top / "stage").exists(), installed.tree(self.top))


# What read-only means for root too: a bind mount of the folder onto itself, made read-only, in a mount
# namespace of the command's own (it ends with the command, whatever becomes of the test).
READ_ONLY = ["unshare", "--mount", "sh", "-ec", 'mount --bind "$0" "$0"; mount -o remount,bind,ro "$0"; exec "$@"']


class UnwritablePrefix(unittest.TestCase):
    """A PREFIX (or DESTDIR) that cannot be made or written stops `make install` at once, before the
    build: one line that names it and the fix, and nothing made. The tests may run as root, whom file
    modes do not stop, so "cannot" is made in ways that hold for root: a PREFIX under a regular file (no
    one can make a folder there, on any file system, with no privilege needed to set it up), and an
    existing PREFIX on a read-only mount (as root; another user gets chmod 555)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.base = Path(cls.tmp.name)
        cls.make_env = make_env(isolated_env(cls.base))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def refused(self, *args, wrap=()):
        """`make install ARGS` fails fast with one line of its own; returns that line."""
        before = installed.tree(self.base)
        start = time.monotonic()
        out = make(self.make_env, "install", "PROFILE=debug", *args, wrap=wrap)
        took = time.monotonic() - start
        print(f"[{' '.join(args)}: refused in {took:.2f} s] ", end="", file=sys.stderr, flush=True)
        self.assertNotEqual(out.returncode, 0, out.stdout)
        # make adds a line of its own when a recipe fails.
        ours = [line for line in out.stderr.splitlines() if not re.match(r"make(\[\d+\])?: \*\*\* ", line)]
        self.assertEqual(len(ours), 1, out.stderr)
        self.assertNotIn("cargo", out.stdout + out.stderr, "the build must not start")
        self.assertEqual(installed.tree(self.base), before, "nothing is made")
        self.assertLess(took, 10)
        return ours[0]

    def test_1_a_prefix_under_a_file(self):
        (self.base / "a-file").write_text("")
        prefix = self.base / "a-file" / "apps" / "nightshift"
        line = self.refused(f"PREFIX={prefix}")
        self.assertIn(str(prefix), line)
        self.assertIn("choose another PREFIX", line)

    def test_2_a_prefix_that_cannot_be_written(self):
        prefix = self.base / "read-only"
        prefix.mkdir()
        if os.geteuid() != 0:
            prefix.chmod(0o555)
            try:
                line = self.refused(f"PREFIX={prefix}")
            finally:
                prefix.chmod(0o755)
            self.assertIn("sudo make install", line)
        else:
            probe = subprocess.run([*READ_ONLY, str(prefix), "sh", "-c", '! touch "$0/probe"', str(prefix)],
                                   capture_output=True, text=True)
            if probe.returncode != 0:
                self.skipTest(f"no read-only mount can be made here: {probe.stderr.strip()}")
            line = self.refused(f"PREFIX={prefix}", wrap=[*READ_ONLY, str(prefix)])
        self.assertIn(str(prefix), line)
        self.assertIn("choose another PREFIX", line)

    def test_3_a_destdir_under_a_file(self):
        (self.base / "a-stage").write_text("")
        stage = self.base / "a-stage" / "root"
        line = self.refused(f"DESTDIR={stage}", "PREFIX=/usr")
        self.assertIn(f"{stage}/usr", line)
        self.assertIn("choose another DESTDIR", line)


if __name__ == "__main__":
    unittest.main(verbosity=2)
