"""What the app's end-to-end suites share: where the built binaries and the captures are, and an
environment that keeps every file the app writes inside a test's temporary directory."""

import json
import os
import subprocess
import threading
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Absolute now: the suites move into folders of their own.
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")).resolve() / "debug"
# The binaries the suites drive: the debug build, or an installed pair (`make test-deb` runs the
# window's suite against /usr/bin).
BIN_DIR = Path(os.environ.get("NIGHTSHIFT_BIN_DIR") or TARGET).resolve()
APP = BIN_DIR / "nightshift-app"
CLI = BIN_DIR / "nightshift"
CAPTURES = ROOT / "tests" / "fixtures" / "claude-code" / "2.1.332" / "nightshift"


def require_binaries():
    """Skips the suite when the binaries are not built."""
    for binary in (APP, CLI):
        if not binary.exists():
            raise unittest.SkipTest(f"{binary} is not built; run `make test` (it builds it)")


def isolated_env(base, **extra):
    """os.environ with Nightshift's state, runtime and config, the XDG directories and HOME (launch
    at login writes under $HOME/.config/autostart) all under `base`."""
    base = Path(base)
    return dict(os.environ, NIGHTSHIFT_STATE_DIR=str(base / "state"), NIGHTSHIFT_RUNTIME_DIR=str(base / "run"),
                NIGHTSHIFT_CONFIG_DIR=str(base / "config"), XDG_CONFIG_HOME=str(base / "config"),
                XDG_DATA_HOME=str(base / "data"), XDG_CACHE_HOME=str(base / "cache"), HOME=str(base / "home"),
                **extra)


# The real Claude Code client (`make claude-client`) and the project's mock Anthropic API it talks to
# (`cargo build --example mock_api`; `make test-app` builds it).
CLAUDE = Path(os.environ.get("NIGHTSHIFT_CLAUDE_BIN")
              or ROOT / ".cache/claude-code/node_modules/@anthropic-ai/claude-code/bin/claude.exe")
MOCK_API = TARGET / "examples" / "mock_api"
API_KEY = "sk-ant-api03-mock-key-0000000000000000000000000000"


def require_real_client(tc):
    """Skips the test without the client or the mock (fails instead under NIGHTSHIFT_REQUIRE_CLAUDE=1)."""
    for path, how in ((CLAUDE, "make claude-client"), (MOCK_API, "cargo build --example mock_api")):
        if not path.exists():
            if os.environ.get("NIGHTSHIFT_REQUIRE_CLAUDE") == "1":
                tc.fail(f"{path} is missing ({how}); NIGHTSHIFT_REQUIRE_CLAUDE=1 needs it")
            raise unittest.SkipTest(f"{path} is missing; `{how}` for this test")


class MockApi:
    """The mock API on 127.0.0.1, and the requests it has answered (the last user text of each)."""

    def __init__(self, log_path):
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen([str(MOCK_API)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.base_url = self.proc.stdout.readline().strip()
        self.lines = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line)
            self.log.write(line)
            self.log.flush()

    def close(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.log.close()


def claude_env(env, base, base_url, workdir):
    """`env` with a home and a config directory of the client's own under `base`, its onboarding
    done and `workdir` trusted, talking to the mock at `base_url` with a mock API key."""
    home, config = Path(base) / "claude-home", Path(base) / "claude-config"
    for d in (home, config, workdir):
        d.mkdir(parents=True, exist_ok=True)
    project = {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True,
               "projectOnboardingSeenCount": 1, "allowedTools": []}
    state = {"hasCompletedOnboarding": True, "lastOnboardingVersion": "2.1.332", "lastReleaseNotesSeen": "2.1.332",
             "theme": "dark", "autoUpdates": False, "bypassPermissionsModeAccepted": True,
             "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
             "projects": {str(workdir): project}}
    (config / ".claude.json").write_text(json.dumps(state))
    # A desktop's environment, not a CI job's: with `CI` set the client draws without colours.
    env = {k: v for k, v in env.items() if k != "CI"}
    return dict(env, HOME=str(home), CLAUDE_CONFIG_DIR=str(config), ANTHROPIC_BASE_URL=base_url,
                ANTHROPIC_API_KEY=API_KEY, TERM="xterm-256color", LANG="C.UTF-8", DISABLE_AUTOUPDATER="1",
                CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1", DISABLE_ERROR_REPORTING="1",
                CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY="1")


class Attached:
    """`nightshift attach SESSION` in a terminal of its own (a PTY, as from tmux): what it drew so
    far, and its keyboard."""

    def __init__(self, env, session, cols=100, rows=30):
        import fcntl
        import pty
        import struct
        import termios
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.proc = subprocess.Popen([str(CLI), "attach", session], env=env, stdin=slave, stdout=slave,
                                     stderr=slave, start_new_session=True)
        os.close(slave)
        self.master = master
        self.out = bytearray()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.out.extend(chunk)

    def text(self):
        return self.out.decode(errors="replace")

    def type(self, data):
        os.write(self.master, data)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        os.close(self.master)


class FakeNtfy:
    """An ntfy server on 127.0.0.1 as far as publishing goes: every POST to a topic is recorded
    (path, headers with lower-case names, body) and answered 200. A subscription (`GET
    <topic>/json?since=…`) is recorded and kept open with ntfy's `open` line and keepalives."""

    def __init__(self):
        import http.server
        import time
        seen = self.seen = []
        subscribed = self.subscribed = []
        stopping = self.stopping = threading.Event()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if not self.path.split("?")[0].endswith("/json"):
                    self.send_error(404)
                    return
                subscribed.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.end_headers()
                try:
                    self.wfile.write(b'{"id":"open","time":0,"event":"open"}\n')
                    self.wfile.flush()
                    while not stopping.wait(1):
                        self.wfile.write(b'{"id":"keep","time":0,"event":"keepalive"}\n')
                        self.wfile.flush()
                except OSError:
                    pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode("utf-8", "replace")
                seen.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                             "body": body})
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, topic):
        return f"http://127.0.0.1:{self.server.server_address[1]}/{topic}"

    def close(self):
        self.stopping.set()
        self.server.shutdown()
