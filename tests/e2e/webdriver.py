"""A small W3C WebDriver client (standard library only) for driving the real app through Debian's
WebKitWebDriver, the way tauri-driver does on Linux: the app binary is the "browser", started by
the driver with TAURI_WEBVIEW_AUTOMATION=true in its environment."""

import base64
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


class WebDriverError(Exception):
    pass


def descendants(pid):
    """The live processes under `pid`, read from /proc: the app WebKitWebDriver started, and the
    app's own WebKit web and network processes."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces; the parent's pid follows it.
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def signal_live(pids, sig):
    for pid in pids:
        if alive(pid):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Driver:
    """Starts WebKitWebDriver and one session on `binary`; use as a context manager."""

    def __init__(self, binary, env, log_path):
        self.port = free_port()
        env = dict(env, TAURI_WEBVIEW_AUTOMATION="true", NO_AT_BRIDGE="1")
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen(
            ["WebKitWebDriver", f"--port={self.port}", "--host=127.0.0.1"],
            env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.time() + 20
        while True:
            try:
                self._call("GET", "/status")
                break
            except (OSError, WebDriverError):
                if time.time() > deadline or self.proc.poll() is not None:
                    raise WebDriverError("WebKitWebDriver did not start")
                time.sleep(0.1)
        caps = {"capabilities": {"alwaysMatch": {"webkitgtk:browserOptions": {"binary": str(binary), "args": []}}}}
        self.session = self._call("POST", "/session", caps, timeout=90)["sessionId"]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Ends the session, then the app and every process it started. Neither ending the session
        nor stopping WebKitWebDriver ends the app: closing its window leaves a tray app running, as
        it should. Left running, the app and its WebKit processes went on writing their caches
        (mesa_shader_cache) into the test's directory while the test removed it."""
        started = descendants(self.proc.pid)
        try:
            self._call("DELETE", f"/session/{self.session}", timeout=15)
        except Exception:
            pass
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        signal_live(started, signal.SIGTERM)
        deadline = time.time() + 10
        while any(alive(pid) for pid in started) and time.time() < deadline:
            time.sleep(0.05)
        signal_live(started, signal.SIGKILL)
        self.log.close()

    def _call(self, method, path, body=None, timeout=30):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                payload = json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as e:
            payload = json.loads(e.read() or b"{}")
            raise WebDriverError(f"{method} {path}: {payload.get('value', payload)}") from None
        return payload.get("value", payload)

    def cmd(self, method, path, body=None, timeout=30):
        return self._call(method, f"/session/{self.session}{path}", body, timeout)

    def run_js(self, script, *args):
        return self.cmd("POST", "/execute/sync", {"script": script, "args": list(args)})

    def find_all(self, css):
        return [e[ELEMENT] for e in self.cmd("POST", "/elements", {"using": "css selector", "value": css})]

    def text(self, element):
        return self.cmd("GET", f"/element/{element}/text")

    def click(self, element):
        self.cmd("POST", f"/element/{element}/click", {})

    def type(self, element, text):
        """Clears a field and types `text` into it, as a user would."""
        self.cmd("POST", f"/element/{element}/clear", {})
        self.cmd("POST", f"/element/{element}/value", {"text": text})

    def keys(self, text):
        """Types `text` on the keyboard, into whatever has the focus (as a user would; "\r" is Enter)."""
        strokes = []
        for ch in text:
            key = "\ue007" if ch == "\r" else ch
            strokes += [{"type": "keyDown", "value": key}, {"type": "keyUp", "value": key}]
        self.cmd("POST", "/actions", {"actions": [{"type": "key", "id": "keyboard", "actions": strokes}]})
        self.cmd("DELETE", "/actions")

    def value(self, element):
        return self.cmd("GET", f"/element/{element}/property/value")

    def displayed(self, element):
        return self.cmd("GET", f"/element/{element}/displayed")

    def screenshot(self, path):
        png = base64.b64decode(self.cmd("GET", "/screenshot"))
        with open(path, "wb") as f:
            f.write(png)

    def set_size(self, width, height):
        self.cmd("POST", "/window/rect", {"width": width, "height": height})

    def wait_for(self, what, fn, timeout=20):
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            try:
                last = fn()
                if last:
                    return last
            except WebDriverError as e:
                last = e
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what} (last: {last!r})")
