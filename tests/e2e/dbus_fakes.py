"""Fake desktop services for the end-to-end tests, speaking the real D-Bus protocols (python3-dbus
and GLib), so the app's real clients (notify-rust, keepawake, tray-icon's libayatana-appindicator)
talk to something the test can watch and drive:

  notifications  org.freedesktop.Notifications on the session bus, plus dev.nightshift.Test.InvokeAction
                 to play the user clicking a notification's action
  login1         org.freedesktop.login1.Manager's Inhibit/ListInhibitors, on a private system bus
  watcher        org.kde.StatusNotifierWatcher on the session bus, where the tray item registers
  upower         org.freedesktop.UPower's OnBattery and LidIsPresent, on the private system bus
                 (on battery when NIGHTSHIFT_FAKE_ON_BATTERY=1)

login1 also answers the Manager's HandleLidSwitch properties (`suspend` on battery, `ignore` on AC,
as a stock laptop's logind.conf).

Each fake runs as its own process: `python3 dbus_fakes.py <fake> --log FILE` owns its bus name,
prints `ready`, and appends one JSON object per observed call or event to FILE, one per line.
`python3 dbus_fakes.py system-bus` runs a private system bus and prints its address.

The test side: `Fakes` starts and stops a set of them; `wait_for` polls a log; `sni_items`,
`sni_properties`, `menu_layout` and `menu_click` read and click the tray item and its dbusmenu;
`invoke_action` clicks a notification's action.
"""

import argparse
import collections
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

NOTIFICATIONS = "org.freedesktop.Notifications"
NOTIFICATIONS_PATH = "/org/freedesktop/Notifications"
TEST_IFACE = "dev.nightshift.Test"
LOGIN1 = "org.freedesktop.login1"
LOGIN1_PATH = "/org/freedesktop/login1"
LOGIN1_MANAGER = "org.freedesktop.login1.Manager"
WATCHER = "org.kde.StatusNotifierWatcher"
UPOWER = "org.freedesktop.UPower"
UPOWER_PATH = "/org/freedesktop/UPower"
WATCHER_PATH = "/StatusNotifierWatcher"
SNI = "org.kde.StatusNotifierItem"
DBUSMENU = "com.canonical.dbusmenu"

# NotificationClosed reasons, from the Desktop Notifications spec.
CLOSED_DISMISSED = 2
CLOSED_BY_CALL = 3


def plain(value):
    """dbus-python's typed values as plain Python ones (dbus.Boolean is an int, Struct a tuple...)."""
    if isinstance(value, dbus.Boolean):
        return bool(value)
    if isinstance(value, str):  # also ObjectPath and Signature
        return str(value)
    if isinstance(value, bytes):  # ByteArray
        return bytes(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


class JsonLog:
    """The fake's side of the log: one JSON object per line, flushed as written."""

    def __init__(self, path):
        self.file = open(path, "a", encoding="utf-8")

    def __call__(self, **record):
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()


def _error(name, message):
    return dbus.exceptions.DBusException(message, name=name)


# --- the fakes (run inside the fake's process, under a GLib main loop) ---

class Notifications(dbus.service.Object):
    """A notification server that shows nothing: it logs what it is asked to show and closes a
    notification when told to, or when the test clicks one of its actions."""

    BUS_NAME, PATH = NOTIFICATIONS, NOTIFICATIONS_PATH

    def __init__(self, bus, log):
        super().__init__(bus, self.PATH)
        self.log = log
        self.last_id = 0
        self.shown = {}  # id -> its action keys

    @dbus.service.method(NOTIFICATIONS, in_signature="susssasa{sv}i", out_signature="u")
    def Notify(self, app_name, replaces_id, app_icon, summary, body, actions, hints, timeout):
        if replaces_id:
            nid = int(replaces_id)
        else:
            self.last_id += 1
            nid = self.last_id
        pairs = dict(zip(actions[::2], actions[1::2]))  # actions is [key, label, key, label, ...]
        self.shown[nid] = list(pairs)
        # Scalar hints (urgency, category, desktop-entry...) by value; image data only by its type.
        hint_values = {k: plain(v) if isinstance(v, (str, int, float)) else type(v).__name__
                       for k, v in hints.items()}
        self.log(call="Notify", id=nid, app_name=str(app_name), replaces_id=int(replaces_id),
                 app_icon=str(app_icon), summary=str(summary), body=str(body), actions=plain(pairs),
                 hints=hint_values, timeout=int(timeout))
        return nid

    @dbus.service.method(NOTIFICATIONS, in_signature="u")
    def CloseNotification(self, nid):
        self.log(call="CloseNotification", id=int(nid))
        if self.shown.pop(int(nid), None) is not None:
            self.NotificationClosed(nid, CLOSED_BY_CALL)

    @dbus.service.method(NOTIFICATIONS, out_signature="as")
    def GetCapabilities(self):
        self.log(call="GetCapabilities")
        return ["actions", "body"]

    @dbus.service.method(NOTIFICATIONS, out_signature="ssss")
    def GetServerInformation(self):
        self.log(call="GetServerInformation")
        return "nightshift-fake", "nightshift", "1.0", "1.2"

    @dbus.service.signal(NOTIFICATIONS, signature="uu")
    def NotificationClosed(self, nid, reason):
        pass

    @dbus.service.signal(NOTIFICATIONS, signature="us")
    def ActionInvoked(self, nid, action_key):
        pass

    @dbus.service.method(TEST_IFACE, in_signature="us")
    def InvokeAction(self, nid, action_key):
        """What a real server does when the user clicks an action: ActionInvoked, then the
        notification goes away, dismissed by the user."""
        nid = int(nid)
        if action_key not in self.shown.get(nid, ()):
            raise _error("dev.nightshift.Test.Error.NoSuchAction",
                         f"notification {nid} is not shown with action {str(action_key)!r}")
        self.log(call="InvokeAction", id=nid, action=str(action_key))
        self.ActionInvoked(nid, action_key)
        del self.shown[nid]
        self.NotificationClosed(nid, CLOSED_DISMISSED)


class Login1(dbus.service.Object):
    """logind's inhibitor locks: Inhibit hands out the write end of a pipe and the lock is held
    until every copy of it is closed, which the fake sees as end-of-file on the read end."""

    BUS_NAME, PATH = LOGIN1, LOGIN1_PATH
    WHATS = {"shutdown", "sleep", "idle", "handle-power-key", "handle-suspend-key",
             "handle-hibernate-key", "handle-lid-switch", "handle-reboot-key"}
    MODES = {"block", "delay", "block-weak"}

    def __init__(self, bus, log):
        super().__init__(bus, self.PATH)
        self.log = log
        self.bus_daemon = dbus.Interface(bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus"),
                                         "org.freedesktop.DBus")
        self.last_id = 0
        self.held = {}  # id -> (what, who, why, mode, uid, pid)

    @dbus.service.method(LOGIN1_MANAGER, in_signature="ssss", out_signature="h", sender_keyword="sender")
    def Inhibit(self, what, who, why, mode, sender=None):
        if not what or not set(what.split(":")) <= self.WHATS or mode not in self.MODES:
            raise _error("org.freedesktop.DBus.Error.InvalidArgs", f"invalid what {str(what)!r} or mode {str(mode)!r}")
        self.last_id += 1
        lock = self.last_id
        uid = int(self.bus_daemon.GetConnectionUnixUser(sender))
        pid = int(self.bus_daemon.GetConnectionUnixProcessID(sender))
        self.held[lock] = (str(what), str(who), str(why), str(mode), uid, pid)
        self.log(call="Inhibit", what=str(what), who=str(who), why=str(why), mode=str(mode), id=lock)
        read_end, write_end = os.pipe()
        GLib.io_add_watch(read_end, GLib.PRIORITY_DEFAULT, GLib.IO_IN | GLib.IO_HUP | GLib.IO_ERR,
                          self._on_lock_fd, lock)
        # UnixFd keeps its own duplicate (closed with the object once the reply is sent), so this
        # process must not keep the original: the lock would never be seen released.
        fd = dbus.types.UnixFd(write_end)
        os.close(write_end)
        return fd

    def _on_lock_fd(self, fd, condition, lock):
        if condition & GLib.IO_IN and os.read(fd, 4096):
            return True  # nobody should write to it; ignore data and keep watching
        os.close(fd)
        what = self.held.pop(lock)[0]
        self.log(event="released", id=lock, what=what)
        return False

    @dbus.service.method(LOGIN1_MANAGER, out_signature="a(ssssuu)")
    def ListInhibitors(self):
        self.log(call="ListInhibitors")
        return list(self.held.values())

    PROPERTIES = {"HandleLidSwitch": dbus.String("suspend"), "HandleLidSwitchExternalPower": dbus.String("ignore"),
                  "HandleLidSwitchDocked": dbus.String("ignore")}

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        if interface != LOGIN1_MANAGER or name not in self.PROPERTIES:
            raise _error("org.freedesktop.DBus.Error.UnknownProperty", f"no property {name}")
        self.log(call="Get", name=str(name))
        return self.PROPERTIES[name]

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        if interface != LOGIN1_MANAGER:
            raise _error("org.freedesktop.DBus.Error.UnknownInterface", f"no interface {interface}")
        self.log(call="GetAll")
        return self.PROPERTIES


class UPower(dbus.service.Object):
    """UPower's daemon object: whether the machine runs on battery and has a lid."""

    BUS_NAME, PATH = UPOWER, UPOWER_PATH

    def __init__(self, bus, log):
        super().__init__(bus, self.PATH)
        self.log = log
        self.on_battery = os.environ.get("NIGHTSHIFT_FAKE_ON_BATTERY") == "1"

    def _properties(self):
        return {"OnBattery": dbus.Boolean(self.on_battery), "LidIsPresent": dbus.Boolean(True),
                "DaemonVersion": dbus.String("1.90.2")}

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        props = self._properties()
        if interface != UPOWER or name not in props:
            raise _error("org.freedesktop.DBus.Error.UnknownProperty", f"no property {name}")
        self.log(call="Get", name=str(name))
        return props[name]

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        if interface != UPOWER:
            raise _error("org.freedesktop.DBus.Error.UnknownInterface", f"no interface {interface}")
        self.log(call="GetAll")
        return self._properties()


class Watcher(dbus.service.Object):
    """The StatusNotifierWatcher a desktop's panel runs: tray items register here; a registration
    lasts until the item's bus name goes away."""

    BUS_NAME, PATH = WATCHER, WATCHER_PATH

    def __init__(self, bus, log):
        super().__init__(bus, self.PATH)
        self.log = log
        self.items = []  # (service, path), in registration order
        self.hosts = []
        bus.add_signal_receiver(self._name_owner_changed, "NameOwnerChanged", "org.freedesktop.DBus",
                                "org.freedesktop.DBus", "/org/freedesktop/DBus")

    @dbus.service.method(WATCHER, in_signature="s", sender_keyword="sender")
    def RegisterStatusNotifierItem(self, service_or_path, sender=None):
        # The spec's argument is a bus name (the item is at its /StatusNotifierItem); appindicator
        # and others pass an object path instead, meaning that path on the caller's connection.
        if service_or_path.startswith("/"):
            item = (str(sender), str(service_or_path))
        else:
            item = (str(service_or_path), "/StatusNotifierItem")
        self.log(call="RegisterStatusNotifierItem", arg=str(service_or_path), sender=str(sender),
                 service=item[0], path=item[1])
        if item not in self.items:
            self.items.append(item)
            self.StatusNotifierItemRegistered(item[0] + item[1])

    @dbus.service.method(WATCHER, in_signature="s", sender_keyword="sender")
    def RegisterStatusNotifierHost(self, service, sender=None):
        self.log(call="RegisterStatusNotifierHost", service=str(service), sender=str(sender))
        if service not in self.hosts:
            self.hosts.append(str(service))
            self.StatusNotifierHostRegistered()

    @dbus.service.signal(WATCHER, signature="s")
    def StatusNotifierItemRegistered(self, item):
        pass

    @dbus.service.signal(WATCHER, signature="s")
    def StatusNotifierItemUnregistered(self, item):
        pass

    @dbus.service.signal(WATCHER)
    def StatusNotifierHostRegistered(self):
        pass

    @dbus.service.signal(WATCHER)
    def StatusNotifierHostUnregistered(self):
        pass

    def _name_owner_changed(self, name, old_owner, new_owner):
        if new_owner:
            return
        for item in [i for i in self.items if i[0] == name]:
            self.items.remove(item)
            self.log(event="unregistered", service=item[0], path=item[1])
            self.StatusNotifierItemUnregistered(item[0] + item[1])
        if name in self.hosts:
            self.hosts.remove(name)
            self.StatusNotifierHostUnregistered()

    def _properties(self):
        return {
            "RegisteredStatusNotifierItems": dbus.Array([s + p for s, p in self.items], signature="s"),
            # A panel is always there, as far as items that ask can tell.
            "IsStatusNotifierHostRegistered": dbus.Boolean(True),
            "ProtocolVersion": dbus.Int32(0),
        }

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        props = self.GetAll(interface)
        if name not in props:
            raise _error("org.freedesktop.DBus.Error.UnknownProperty", f"no property {name}")
        return props[name]

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        if interface != WATCHER:
            raise _error("org.freedesktop.DBus.Error.UnknownInterface", f"no interface {interface}")
        return self._properties()


FAKES = {"notifications": (Notifications, "session"), "login1": (Login1, "system"), "watcher": (Watcher, "session"),
         "upower": (UPower, "system")}


def serve(which, log_path):
    """Run one fake until killed: own its name, say `ready`, log what it sees."""
    cls, bus_type = FAKES[which]
    DBusGMainLoop(set_as_default=True)
    if bus_type == "system":
        # Never the machine's system bus: the fake is for a private one (see SystemBus).
        if not os.environ.get("DBUS_SYSTEM_BUS_ADDRESS"):
            sys.exit(f"{which}: DBUS_SYSTEM_BUS_ADDRESS is not set; run it on a private system bus")
        bus = dbus.SystemBus()
    else:
        bus = dbus.SessionBus()
    # Both stay referenced while the loop runs: the object stays exported and the name owned.
    fake = cls(bus, JsonLog(log_path))
    name = dbus.service.BusName(cls.BUS_NAME, bus, do_not_queue=True)  # raises if already owned
    print("ready", flush=True)
    GLib.MainLoop().run()


# --- the test's side ---

SYSTEM_BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
  </policy>
</busconfig>
"""


class SystemBus:
    """A private dbus-daemon standing in for the system bus: point a process at it with
    DBUS_SYSTEM_BUS_ADDRESS=bus.address. Anyone may own any name on it."""

    def __init__(self):
        self.dir = tempfile.TemporaryDirectory(prefix="nightshift-system-bus-")
        config = Path(self.dir.name) / "system.conf"
        config.write_text(SYSTEM_BUS_CONFIG.format(socket=Path(self.dir.name) / "system_bus_socket"))
        self.proc = subprocess.Popen(["dbus-daemon", f"--config-file={config}", "--nofork", "--print-address=1"],
                                     stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        self.address = self.proc.stdout.readline().decode().strip()
        if not self.address:
            self.close()
            raise RuntimeError("dbus-daemon did not start (see its stderr above)")

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.dir.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_log(path):
    """The records a fake has written so far (a line still being written is left for later)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines(keepends=True) if line.endswith("\n")]


def wait_for(path, predicate, timeout=10, what=None, check=None):
    """The first record in the log at `path` for which predicate(record) is true, polling until
    `timeout` seconds have passed. `check()`, if given, runs at each poll and may raise to give up
    early."""
    deadline = time.time() + timeout
    while True:
        records = read_log(path)
        for record in records:
            if predicate(record):
                return record
        if check:
            check()
        if time.time() > deadline:
            raise AssertionError(f"timed out waiting for {what or 'a matching record'} in {path}; "
                                 f"it has: {records[-10:]!r}")
        time.sleep(0.05)


class Fakes:
    """Starts the named fakes (and, for login1, a private system bus) as processes; stops them on
    exit. `logs[name]` is each fake's log; `env()` adds DBUS_SYSTEM_BUS_ADDRESS for the app.

        with Fakes("notifications", "login1", "watcher") as fakes:
            app = subprocess.Popen([...], env=fakes.env(os.environ))
            fakes.wait_for("login1", lambda r: r.get("call") == "Inhibit")
    """

    def __init__(self, *which, log_dir=None, timeout=10):
        unknown = set(which) - set(FAKES)
        if unknown:
            raise ValueError(f"no such fake: {', '.join(sorted(unknown))} (have: {', '.join(FAKES)})")
        self.which = which
        self.timeout = timeout
        self._tmp = None if log_dir else tempfile.TemporaryDirectory(prefix="nightshift-fakes-")
        self.dir = Path(log_dir or self._tmp.name)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.logs = {name: self.dir / f"{name}.jsonl" for name in which}
        self.procs = {}
        self.system_bus = None

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def env(self, base=None):
        env = dict(os.environ if base is None else base)
        if self.system_bus:
            env["DBUS_SYSTEM_BUS_ADDRESS"] = self.system_bus.address
        return env

    def start(self):
        if any(FAKES[name][1] == "system" for name in self.which):
            self.system_bus = SystemBus()
        for name in self.which:
            self.logs[name].write_text("")
            stderr = open(self.dir / f"{name}.stderr", "wb")
            self.procs[name] = subprocess.Popen(
                [sys.executable, __file__, name, "--log", str(self.logs[name])], env=self.env(),
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr)
            stderr.close()
        for name, proc in self.procs.items():
            self._wait_ready(name, proc)

    def _wait_ready(self, name, proc):
        deadline = time.time() + self.timeout
        line = b""
        while time.time() < deadline and not line.endswith(b"\n"):
            if select.select([proc.stdout], [], [], max(0.0, deadline - time.time()))[0]:
                chunk = os.read(proc.stdout.fileno(), 64)
                if not chunk:  # it is exiting
                    try:
                        proc.wait(5)
                    except subprocess.TimeoutExpired:
                        pass
                    break
                line += chunk
        proc.stdout.close()  # it prints nothing after `ready`
        if line.strip() != b"ready":
            state = f"exited with {proc.poll()}" if proc.poll() is not None else f"no `ready` in {self.timeout}s"
            raise RuntimeError(f"fake {name} did not start ({state}); stdout: {line!r}; stderr:\n{self._stderr(name)}")

    def stop(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()  # already closed unless start() failed before reading it
        self.procs = {}
        if self.system_bus:
            self.system_bus.close()
            self.system_bus = None
        if self._tmp:
            self._tmp.cleanup()
            self._tmp = None

    def records(self, name):
        return read_log(self.logs[name])

    def wait_for(self, log, predicate, timeout=10, what=None):
        """The module's wait_for, where `log` is a fake's name or a path; fails early, with the
        fake's stderr, if that fake has died."""
        proc = self.procs.get(log)

        def check():
            if proc is not None and proc.poll() is not None:
                raise AssertionError(f"fake {log} exited with {proc.returncode}; stderr:\n{self._stderr(log)}")

        return wait_for(self.logs.get(log, log), predicate, timeout, what, check)

    def _stderr(self, name):
        return (self.dir / f"{name}.stderr").read_text(errors="replace").strip()


def invoke_action(nid, action_key):
    """Click action `action_key` of notification `nid` in the notifications fake."""
    fake = dbus.SessionBus().get_object(NOTIFICATIONS, NOTIFICATIONS_PATH, introspect=False)
    fake.InvokeAction(dbus.UInt32(nid), action_key, dbus_interface=TEST_IFACE)


def sni_items(log):
    """The (service, path) of each tray item registered, and not since gone, per the watcher's log."""
    items = []
    for record in read_log(log):
        item = (record.get("service"), record.get("path"))
        if record.get("call") == "RegisterStatusNotifierItem" and item not in items:
            items.append(item)
        elif record.get("event") == "unregistered" and item in items:
            items.remove(item)
    return items


def sni_properties(service, path):
    """All org.kde.StatusNotifierItem properties of the item (Id, Title, Status, IconName, Menu...;
    appindicator exports no ToolTip, but XAyatanaLabel), as plain Python values; pixmaps are bytes."""
    item = dbus.SessionBus().get_object(service, path, introspect=False)
    return plain(item.GetAll(SNI, dbus_interface=dbus.PROPERTIES_IFACE, byte_arrays=True))


MenuItem = collections.namedtuple("MenuItem", "id label enabled visible type")


def _strip_mnemonics(label):
    # GTK mnemonics: `_x` underlines x, `__` is a literal underscore.
    return re.sub(r"_(.)", r"\1", label)


def menu_layout(service, menu_path):
    """The dbusmenu's items, depth first, root excluded, as MenuItem(id, label, enabled, visible,
    type): the defaults the spec gives for properties an item leaves out are filled in."""
    menu = dbus.Interface(dbus.SessionBus().get_object(service, menu_path, introspect=False), DBUSMENU)
    _revision, root = menu.GetLayout(0, -1, dbus.Array([], signature="s"))
    items = []

    def walk(node):
        item_id, props, children = node
        items.append(MenuItem(int(item_id), _strip_mnemonics(str(props.get("label", ""))),
                              bool(props.get("enabled", True)), bool(props.get("visible", True)),
                              str(props.get("type", "standard"))))
        for child in children:
            walk(child)

    for child in root[2]:
        walk(child)
    return items


def menu_click(service, menu_path, item_id):
    """Click a dbusmenu item the way a panel does: AboutToShow on the root (opening the menu),
    then the `clicked` event on the item."""
    menu = dbus.Interface(dbus.SessionBus().get_object(service, menu_path, introspect=False), DBUSMENU)
    menu.AboutToShow(0)
    menu.Event(item_id, "clicked", dbus.Int32(0, variant_level=1), dbus.UInt32(int(time.time()) & 0xFFFFFFFF))


def _main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("which", choices=[*FAKES, "system-bus"])
    parser.add_argument("--log", help="the JSON-lines log to append to (for a fake)")
    args = parser.parse_args()
    if args.which == "system-bus":
        # Until SIGTERM or ^C; exit through SystemExit so the temporary directory is removed.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        with SystemBus() as bus:
            print(bus.address, flush=True)
            try:
                bus.proc.wait()
            except KeyboardInterrupt:
                pass
        return
    if not args.log:
        parser.error("a fake needs --log FILE")
    serve(args.which, args.log)


if __name__ == "__main__":
    _main()
