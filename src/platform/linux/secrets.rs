//! The desktop's keyring, through the Secret Service D-Bus API (`org.freedesktop.secrets`: GNOME
//! Keyring, KWallet, KeePassXC): the only place Nightshift reads a secret from it. Only lookups —
//! the user stores a secret with their keyring's own tools, e.g.
//! `secret-tool store --label='Nightshift ntfy token' application nightshift service ntfy`.
//!
//! Without a session bus or a Secret Service, or with the item locked, there is nothing to read
//! and the caller falls back to its file; a call that hangs gives up after [`TIMEOUT`].

use std::collections::HashMap;
use std::time::Duration;

use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};

use super::Linux;
use crate::platform::{Found, Secrets};

/// The longest a lookup may take (a Secret Service that is being started, or stuck).
const TIMEOUT: Duration = Duration::from_secs(3);

const SERVICE: &str = "org.freedesktop.secrets";
const PATH: &str = "/org/freedesktop/secrets";

impl Secrets for Linux {
    fn holds(attributes: &[(&str, &str)]) -> Found {
        holds(attributes)
    }

    fn lookup(attributes: &[(&str, &str)]) -> Result<Found, String> {
        lookup(attributes)
    }
}

fn holds(attributes: &[(&str, &str)]) -> Found {
    let attributes: HashMap<String, String> =
        attributes.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect();
    std::thread::scope(|s| s.spawn(|| search(&attributes)).join().ok().flatten()).map_or(
        Found::Nothing,
        |(unlocked, locked)| match (unlocked, locked) {
            (true, _) => Found::Secret(String::new()),
            (false, true) => Found::Locked,
            _ => Found::Nothing,
        },
    )
}

fn search(attributes: &HashMap<String, String>) -> Option<(bool, bool)> {
    let conn = zbus::blocking::connection::Builder::session().ok()?.method_timeout(TIMEOUT).build().ok()?;
    if !has_owner(&conn) {
        return None;
    }
    let service = zbus::blocking::Proxy::new(&conn, SERVICE, PATH, "org.freedesktop.Secret.Service").ok()?;
    let (unlocked, locked): (Vec<OwnedObjectPath>, Vec<OwnedObjectPath>) =
        service.call("SearchItems", &(attributes,)).ok()?;
    Some((!unlocked.is_empty(), !locked.is_empty()))
}

/// Runs on a thread of its own, so it may be called from async code.
fn lookup(attributes: &[(&str, &str)]) -> Result<Found, String> {
    let attributes: HashMap<String, String> =
        attributes.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect();
    std::thread::scope(|s| s.spawn(|| ask(&attributes)).join().unwrap_or_else(|_| Err("the lookup failed".into())))
}

fn ask(attributes: &HashMap<String, String>) -> Result<Found, String> {
    let Ok(builder) = zbus::blocking::connection::Builder::session() else { return Ok(Found::Nothing) };
    let Ok(conn) = builder.method_timeout(TIMEOUT).build() else { return Ok(Found::Nothing) };
    if !has_owner(&conn) {
        return Ok(Found::Nothing);
    }
    let service = zbus::blocking::Proxy::new(&conn, SERVICE, PATH, "org.freedesktop.Secret.Service")
        .map_err(|e| format!("the keyring: {e}"))?;
    let said = |e: zbus::Error| format!("the keyring ({SERVICE}) did not answer: {e}");
    let (unlocked, locked): (Vec<OwnedObjectPath>, Vec<OwnedObjectPath>) =
        service.call("SearchItems", &(attributes,)).map_err(said)?;
    let Some(item) = unlocked.into_iter().next() else {
        return Ok(if locked.is_empty() { Found::Nothing } else { Found::Locked });
    };
    // A plain session: the secret crosses this user's own bus unencrypted, as secret-tool's does.
    let (_, session): (OwnedValue, OwnedObjectPath) =
        service.call("OpenSession", &("plain", Value::from(""))).map_err(said)?;
    type Secret = (OwnedObjectPath, Vec<u8>, Vec<u8>, String);
    let secrets: Result<HashMap<OwnedObjectPath, Secret>, _> =
        service.call("GetSecrets", &(vec![item.clone()], &session));
    if let Ok(s) = zbus::blocking::Proxy::new(&conn, SERVICE, session.as_str(), "org.freedesktop.Secret.Session") {
        let _: Result<(), _> = s.call("Close", &());
    }
    let secret = secrets.map_err(said)?.remove(&item).map(|s| s.2).unwrap_or_default();
    let text = String::from_utf8(secret).map_err(|_| "the keyring's item is not text".to_string())?;
    let text = text.trim().to_string();
    Ok(if text.is_empty() { Found::Nothing } else { Found::Secret(text) })
}

/// Whether a Secret Service runs now (never starting one through bus activation).
fn has_owner(conn: &zbus::blocking::Connection) -> bool {
    let Ok(dbus) = zbus::blocking::fdo::DBusProxy::new(conn) else { return false };
    let Ok(name) = zbus::names::BusName::try_from(SERVICE) else { return false };
    dbus.name_has_owner(name).unwrap_or(false)
}
