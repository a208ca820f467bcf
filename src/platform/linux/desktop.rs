//! The desktop session and the machine's power, over D-Bus: the freedesktop names a tray host and a
//! notification service own on the session bus, logind and UPower on the system bus, and systemd's
//! user manager for the session's environment. Each call gives up within seconds.

use std::ffi::OsString;
use std::process::Command;
use std::time::Duration;

use super::Linux;
use crate::platform::{run_bounded, Desktop, Power};

fn bus(system: bool) -> Option<zbus::blocking::Connection> {
    let builder = if system {
        zbus::blocking::connection::Builder::system()
    } else {
        zbus::blocking::connection::Builder::session()
    };
    builder.ok()?.method_timeout(Duration::from_secs(2)).build().ok()
}

fn has_owner(system: bool, name: &str) -> bool {
    let Some(conn) = bus(system) else { return false };
    let Ok(proxy) = zbus::blocking::fdo::DBusProxy::new(&conn) else { return false };
    let Ok(name) = zbus::names::BusName::try_from(name) else { return false };
    proxy.name_has_owner(name).unwrap_or(false)
}

/// One property of a system-bus object, read once (no cache: it would first fetch every property
/// and watch them).
fn property(dest: &str, path: &str, iface: &str, name: &str) -> Option<zbus::zvariant::OwnedValue> {
    let conn = bus(true)?;
    let proxy: zbus::blocking::Proxy<'_> = zbus::blocking::proxy::Builder::new(&conn)
        .destination(dest.to_string())
        .ok()?
        .path(path.to_string())
        .ok()?
        .interface(iface.to_string())
        .ok()?
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .ok()?;
    proxy.get_property::<zbus::zvariant::OwnedValue>(name).ok()
}

fn upower(name: &str) -> Option<bool> {
    property("org.freedesktop.UPower", "/org/freedesktop/UPower", "org.freedesktop.UPower", name)
        .and_then(|v| bool::try_from(v).ok())
}

impl Desktop for Linux {
    fn tray_host() -> bool {
        has_owner(false, "org.kde.StatusNotifierWatcher")
    }

    fn notifications() -> bool {
        has_owner(false, "org.freedesktop.Notifications")
    }

    fn session_path() -> Option<OsString> {
        let out =
            run_bounded(Command::new("systemctl").args(["--user", "show-environment"]), Duration::from_secs(3)).ok()?;
        out.lines().find_map(|l| l.strip_prefix("PATH=")).map(OsString::from)
    }
}

impl Power for Linux {
    fn can_stay_awake() -> bool {
        has_owner(true, "org.freedesktop.login1")
    }

    fn on_battery() -> Option<bool> {
        upower("OnBattery")
    }

    fn can_suspend() -> Option<bool> {
        let conn = bus(true)?;
        let reply = conn
            .call_method(
                Some("org.freedesktop.login1"),
                "/org/freedesktop/login1",
                Some("org.freedesktop.login1.Manager"),
                "CanSuspend",
                &(),
            )
            .ok()?;
        let answer: String = reply.body().deserialize().ok()?;
        // "challenge": allowed after asking the user (a lid close, the menu); "na": no suspend here.
        Some(matches!(answer.as_str(), "yes" | "challenge"))
    }

    fn wake_helper() -> Result<std::path::PathBuf, String> {
        super::wake::helper()
    }

    fn lid_action(on_battery: Option<bool>) -> Option<String> {
        if upower("LidIsPresent") != Some(true) {
            return None;
        }
        let key = if on_battery == Some(true) { "HandleLidSwitch" } else { "HandleLidSwitchExternalPower" };
        property("org.freedesktop.login1", "/org/freedesktop/login1", "org.freedesktop.login1.Manager", key)
            .and_then(|v| String::try_from(v).ok())
    }
}
