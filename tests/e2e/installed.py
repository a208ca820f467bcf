"""Checks of an installed Nightshift, shared by test_install.py (`make install` into a home) and
test_deb.py (the Debian package in /usr): the files, the CLI run from where it was installed, the
desktop entry, the completions as each shell finds them, the man pages, and the app's window."""

import os
import re
import struct
import subprocess
import time
from pathlib import Path

import dbus_fakes
from webdriver import Driver
from x11 import X11

APP_ID = "dev.nightshift.app"
ICON_SIZES = (16, 32, 48, 64, 128, 256, 512)


def tree(root):
    """Every path under `root` (directories too), relative, sorted: what a listing shows."""
    root = Path(root)
    if not root.exists():
        return []
    return sorted(str(p.relative_to(root)) + ("/" if p.is_dir() and not p.is_symlink() else "")
                  for p in root.rglob("*"))


def expected_files(man_pages, zsh_dir, man_suffix=""):
    """The files an install puts under its prefix, relative to it."""
    files = {"bin/nightshift", "bin/nightshift-app", "bin/nightshift-wake", f"share/applications/{APP_ID}.desktop",
             "share/bash-completion/completions/nightshift", f"share/zsh/{zsh_dir}/_nightshift",
             "share/fish/vendor_completions.d/nightshift.fish", "share/systemd/user/nightshift-restore.service"}
    files |= {f"share/icons/hicolor/{s}x{s}/apps/{APP_ID}.png" for s in ICON_SIZES}
    files |= {f"share/man/man1/{page}{man_suffix}" for page in man_pages}
    return files


def check_restore_unit(test, share, cli):
    """The systemd user unit runs the installed CLI's keeper (`restore --keep`) at login, restarted on
    failure."""
    text = (share / "systemd" / "user" / "nightshift-restore.service").read_text()
    test.assertIn(f"ExecStart={cli} restore --keep\n", text)
    test.assertIn("Restart=on-failure", text)
    test.assertIn("WantedBy=default.target", text)


def generated_pages(cli, tmp):
    """The man pages this `nightshift` makes: the ones an install must carry."""
    out = Path(tmp) / "pages"
    subprocess.run([str(cli), "generate", "man", str(out)], check=True)
    pages = sorted(p.name for p in out.iterdir())
    for page in ("nightshift.1", "nightshift-run.1", "nightshift-app.1"):
        assert page in pages, pages
    return pages


def png_size(path):
    data = Path(path).read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def run(args, env=None, **kw):
    # In the test's own folder (where its state directory is), never in the repository the tests run
    # from: a session's end salvages the uncommitted work of the tree it ran in.
    if env and "NIGHTSHIFT_STATE_DIR" in env:
        kw.setdefault("cwd", Path(env["NIGHTSHIFT_STATE_DIR"]).parent)
    return subprocess.run([str(a) for a in args], env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, **kw)


def salvage_refs(root):
    """The refs Nightshift's salvage keeps in the repository at `root` (a suite must add none)."""
    out = subprocess.run(["git", "-C", str(root), "for-each-ref", "--format=%(refname)", "refs/nightshift/"],
                         capture_output=True, text=True)
    return set(out.stdout.split())


def check_icons(tc, share):
    for s in ICON_SIZES:
        tc.assertEqual(png_size(Path(share) / f"icons/hicolor/{s}x{s}/apps/{APP_ID}.png"), (s, s))


def check_cli(tc, bin_dir, env, revision):
    """The installed CLI by its path: its version names the build's revision, and the verbs that need
    no agent work against a fresh state directory."""
    cli = Path(bin_dir) / "nightshift"
    version = run([cli, "--version"], env)
    tc.assertEqual(version.returncode, 0, version.stderr)
    tc.assertRegex(version.stdout.strip(), r"^nightshift \d+\.\d+\.\d+")
    if revision:
        tc.assertIn(f"({revision} ", version.stdout)
    presets = run([cli, "presets", "list"], env)
    tc.assertEqual(presets.returncode, 0, presets.stderr)
    for name in ("solo", "overnight", "ralph"):
        tc.assertIn(name, presets.stdout)
    ran = run([cli, "run", "--", "bash", "-c", "exit 3"], env)
    tc.assertEqual(ran.returncode, 3, ran.stderr)
    missing = run([cli, "run", "--", "no-such-command-nightshift"], env)
    tc.assertEqual(missing.returncode, 127, missing.stderr)
    sessions = run([cli, "sessions"], env)
    tc.assertEqual(sessions.returncode, 0, sessions.stderr)
    tc.assertIn("exited (3)", sessions.stdout)
    tc.assertEqual(run([cli, "no-such-verb"], env).returncode, 2)


def check_desktop_entry(tc, path, app):
    out = run(["desktop-file-validate", path])
    tc.assertEqual((out.returncode, out.stdout + out.stderr), (0, ""))
    entry = desktop_entry(path)
    tc.assertEqual(entry["Exec"], str(app))
    tc.assertEqual(entry["Icon"], APP_ID)
    tc.assertEqual(entry["Name"], "Nightshift")
    tc.assertTrue(os.access(app, os.X_OK), app)


def check_bash(tc, env):
    """bash-completion's own loader finds the script where it was installed, the first time
    `nightshift` is completed, and it offers the verbs (not the hidden ones) and the options."""
    script = r"""
        source /usr/share/bash-completion/bash_completion
        __load_completion nightshift || { echo "not found"; exit 1; }
        complete -p nightshift
        COMP_WORDS=(nightshift ""); COMP_CWORD=1; _nightshift nightshift "" nightshift
        echo "verbs: ${COMPREPLY[*]}"
        COMP_WORDS=(nightshift run --re); COMP_CWORD=2; _nightshift nightshift --re run
        echo "run: ${COMPREPLY[*]}"
    """
    out = run(["bash", "--norc", "--noprofile", "-c", script], env)
    tc.assertEqual(out.returncode, 0, out.stdout + out.stderr)
    tc.assertRegex(out.stdout, r"complete .*-F _nightshift nightshift")
    verbs = re.search(r"^verbs: (.*)$", out.stdout, re.M).group(1).split()
    for verb in ("run", "sessions", "journal", "presets", "usage", "digest"):
        tc.assertIn(verb, verbs)
    tc.assertNotIn("statusline", verbs)
    tc.assertNotIn("generate", verbs)
    tc.assertIn("--respawn", re.search(r"^run: (.*)$", out.stdout, re.M).group(1).split())


def check_zsh(tc, env, fpath_dir=None):
    """compinit finds `_nightshift` on zsh's function path and binds it to `nightshift`."""
    extra = f"fpath=({fpath_dir} $fpath); " if fpath_dir else ""
    out = run(["zsh", "-f", "-c", f"{extra}autoload -Uz compinit; compinit -u -D; "
               "print -r -- ${_comps[nightshift]}; autoload +X _nightshift && print loaded"], env)
    tc.assertEqual(out.returncode, 0, out.stdout + out.stderr)
    tc.assertEqual(out.stdout.split(), ["_nightshift", "loaded"])


def check_fish(tc, env):
    """fish loads the vendor completions by itself and completes the verbs."""
    out = run(["fish", "--private", "-c", "complete -C'nightshift '; complete -C'nightshift run --res'"], env)
    tc.assertEqual(out.returncode, 0, out.stdout + out.stderr)
    words = [line.split("\t")[0] for line in out.stdout.splitlines()]
    for word in ("run", "sessions", "presets", "--respawn", "--resume-policy"):
        tc.assertIn(word, words)
    tc.assertNotIn("statusline", words)


def plain(text):
    """man's output to a pipe without its overstrikes (bold is `X\bX`, underline `_\bX`)."""
    return re.sub(".\b", "", text)


def check_man(tc, env, pages):
    """man finds each page by name where it was installed, renders it without a warning, and the
    root page and run's document their exit statuses."""
    for page in pages:
        name = page.split(".")[0]
        where = run(["man", "-w", name], env)
        tc.assertEqual(where.returncode, 0, f"man -w {name}: {where.stderr}")
        path = where.stdout.strip()
        rendered = run(["man", "-l", path], dict(env, MANWIDTH="80"))
        tc.assertEqual(rendered.returncode, 0, rendered.stderr)
        tc.assertIn("NAME", plain(rendered.stdout))
        # -k: through preconv, as man-db does, so UTF-8 in the help (…, ·) is read as UTF-8.
        lint = run(["sh", "-c", f"zcat -f '{path}' | groff -k -Tutf8 -ww -z -man"], env)
        tc.assertEqual(lint.stderr, "", f"{page}: groff warns")
    root = plain(run(["man", "nightshift"], dict(env, MANWIDTH="100")).stdout)
    for part in ("EXIT STATUS", "ENVIRONMENT", "NIGHTSHIFT_STATE_DIR", "NO_COLOR", "nightshift-run(1)"):
        tc.assertIn(part, root)
    runpage = plain(run(["man", "nightshift-run"], dict(env, MANWIDTH="100")).stdout)
    for part in ("EXIT STATUS", "128+N", "127", "--respawn"):
        tc.assertIn(part, runpage)
    return root


def desktop_entry(path):
    return dict(line.split("=", 1) for line in Path(path).read_text().splitlines() if "=" in line)


def check_app(tc, app, cli, env, artifacts, name, entry_path):
    """The installed app, started by its installed path, registers its tray icon and shows its
    window with the journal's sessions, a window the desktop entry claims (StartupWMClass); launch
    at login, switched on in the window, starts this very binary. Returns the autostart entry (left
    on, for the caller to check what uninstall says)."""
    seeded = run([cli, "run", "--events", "-", "--", "bash", "-c", "echo hi; exit 4"], env)
    tc.assertEqual(seeded.returncode, 4, seeded.stderr)
    session = seeded.stdout.split('"session":"')[1].split('"')[0]
    with dbus_fakes.Fakes("watcher") as fakes:
        driver = Driver(app, fakes.env(env), Path(artifacts) / f"{name}-webkitwebdriver.log")
        try:
            d = driver
            fakes.wait_for("watcher", lambda r: r.get("call") == "RegisterStatusNotifierItem", timeout=30,
                           what="the installed app's tray item")
            tc.assertEqual(d.run_js("return document.title"), "Nightshift")
            badge = f'tr[data-session-id="{session}"] .badge'
            state = d.wait_for("the seeded session in the window",
                               lambda: [d.text(e) for e in d.find_all(badge)])
            tc.assertEqual(state, ["exited (4)"])
            x = X11()
            window = x.find("Nightshift", timeout=10)
            tc.assertTrue(x.is_viewable(window))
            tc.assertIn(desktop_entry(entry_path)["StartupWMClass"], window.get_wm_class())
            # Let the window paint what the DOM holds (two animation frames) before the screenshot.
            d.run_js("return new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
            time.sleep(0.3)
            d.screenshot(Path(artifacts) / f"{name}.png")
            # Launch at login, the way a user switches it on.
            d.wait_for("the settings view", lambda: d.click(d.find_all("#nav-settings")[0]) or True)
            d.wait_for("the launch-at-login switch", lambda: d.click(d.find_all("#launch-at-login")[0]) or True)
            autostart = Path(env["HOME"]) / ".config" / "autostart"
            entry = d.wait_for("the autostart entry", lambda: sorted(autostart.glob("*.desktop")))[0]
            execs = [line[5:].strip() for line in entry.read_text().splitlines() if line.startswith("Exec=")]
            tc.assertEqual(execs, [str(app)])
        finally:
            driver.close()
    return entry
