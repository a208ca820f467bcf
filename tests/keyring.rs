//! The ntfy token from the desktop's keyring: a fake Secret Service (`org.freedesktop.secrets`,
//! speaking the real D-Bus API: SearchItems, OpenSession, GetSecrets, Session.Close) on a private
//! session bus holds the token, and a headless run's push carries it to a fake ntfy server on
//! 127.0.0.1. A locked item, or no keyring at all, falls back to the 0600 file.

use crate::common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{wait_for, Env};
use zbus::zvariant::{ObjectPath, OwnedObjectPath, OwnedValue, Value};

/// A private session bus: a dbus-daemon with no service directories (nothing is activated).
struct Bus {
    daemon: Child,
    address: String,
    _dir: tempfile::TempDir,
}

impl Bus {
    fn start() -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("bus.conf");
        std::fs::write(
            &config,
            format!(
                "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\" \
                 \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\
                 <busconfig><type>session</type><listen>unix:dir={}</listen><auth>EXTERNAL</auth>\
                 <policy context=\"default\"><allow send_destination=\"*\" eavesdrop=\"true\"/>\
                 <allow eavesdrop=\"true\"/><allow own=\"*\"/></policy></busconfig>",
                dir.path().display()
            ),
        )
        .unwrap();
        let spawned = Command::new("dbus-daemon")
            .args(["--nofork", "--print-address=1", "--config-file"])
            .arg(&config)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn();
        let mut daemon = match spawned {
            Ok(child) => child,
            Err(e) => {
                let why = format!("dbus-daemon cannot run here ({e}); `make deps-test` installs it");
                if std::env::var_os("NIGHTSHIFT_REQUIRE_DBUS").is_some() {
                    panic!("{why}");
                }
                eprintln!("skipped: {why}");
                return None;
            }
        };
        let mut line = String::new();
        BufReader::new(daemon.stdout.take().unwrap()).read_line(&mut line).unwrap();
        Some(Self { daemon, address: line.trim().to_string(), _dir: dir })
    }
}

impl Drop for Bus {
    fn drop(&mut self) {
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
    }
}

/// One item of the fake keyring: its attributes, its secret, whether it is unlocked.
type Item = (HashMap<String, String>, Vec<u8>, bool);

/// What the fake keyring holds, and what it was asked.
#[derive(Clone, Default)]
struct Keyring {
    items: Arc<Mutex<Vec<Item>>>,
    calls: Arc<Mutex<Vec<String>>>,
}

fn item_path(i: usize) -> OwnedObjectPath {
    OwnedObjectPath::try_from(format!("/org/freedesktop/secrets/collection/login/{i}")).unwrap()
}

#[zbus::interface(name = "org.freedesktop.Secret.Service")]
impl Keyring {
    fn open_session(&self, algorithm: &str, _input: Value<'_>) -> zbus::fdo::Result<(OwnedValue, OwnedObjectPath)> {
        self.calls.lock().unwrap().push(format!("OpenSession {algorithm}"));
        if algorithm != "plain" {
            return Err(zbus::fdo::Error::NotSupported(algorithm.into()));
        }
        let empty = OwnedValue::try_from(Value::from("")).unwrap();
        Ok((empty, OwnedObjectPath::try_from("/org/freedesktop/secrets/session/1").unwrap()))
    }

    fn search_items(&self, attributes: HashMap<String, String>) -> (Vec<OwnedObjectPath>, Vec<OwnedObjectPath>) {
        self.calls.lock().unwrap().push(format!("SearchItems {}", attributes.len()));
        let (mut unlocked, mut locked) = (Vec::new(), Vec::new());
        for (i, (attrs, _, open)) in self.items.lock().unwrap().iter().enumerate() {
            if attributes.iter().all(|(k, v)| attrs.get(k) == Some(v)) {
                if *open {
                    unlocked.push(item_path(i))
                } else {
                    locked.push(item_path(i))
                }
            }
        }
        (unlocked, locked)
    }

    #[allow(clippy::type_complexity)]
    fn get_secrets(
        &self,
        items: Vec<OwnedObjectPath>,
        session: ObjectPath<'_>,
    ) -> HashMap<OwnedObjectPath, (OwnedObjectPath, Vec<u8>, Vec<u8>, String)> {
        self.calls.lock().unwrap().push("GetSecrets".into());
        let held = self.items.lock().unwrap();
        items
            .into_iter()
            .filter_map(|path| {
                let i: usize = path.as_str().rsplit('/').next()?.parse().ok()?;
                let (_, secret, open) = held.get(i)?;
                open.then(|| {
                    (path.clone(), (session.clone().into(), Vec::new(), secret.clone(), "text/plain".to_string()))
                })
            })
            .collect()
    }
}

struct Session {
    calls: Arc<Mutex<Vec<String>>>,
}

#[zbus::interface(name = "org.freedesktop.Secret.Session")]
impl Session {
    fn close(&self) {
        self.calls.lock().unwrap().push("Close".into());
    }
}

fn serve(bus: &Bus, keyring: &Keyring) -> zbus::blocking::Connection {
    let calls = Arc::clone(&keyring.calls);
    zbus::blocking::connection::Builder::address(bus.address.as_str())
        .unwrap()
        .name("org.freedesktop.secrets")
        .unwrap()
        .serve_at("/org/freedesktop/secrets", keyring.clone())
        .unwrap()
        .serve_at("/org/freedesktop/secrets/session/1", Session { calls })
        .unwrap()
        .build()
        .unwrap()
}

fn attrs(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect()
}

/// A fake ntfy: every publish's Authorization header.
fn ntfy() -> (String, Arc<Mutex<Vec<Option<String>>>>) {
    let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let (tx, rx) = std::sync::mpsc::channel();
    let s = Arc::clone(&seen);
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let app = axum::Router::new().fallback(move |headers: axum::http::HeaderMap| {
                let s = Arc::clone(&s);
                async move {
                    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).map(String::from);
                    s.lock().unwrap().push(auth);
                    "{}"
                }
            });
            axum::serve(listener, app).await.unwrap();
        });
    });
    (format!("http://{}/night", rx.recv().unwrap()), seen)
}

/// A headless run that finishes at once (`[push]` set up by the caller): the Authorization its
/// finish notice was pushed with.
fn pushed_with(env: &Env, bus: &Bus, seen: &Arc<Mutex<Vec<Option<String>>>>) -> Option<String> {
    let before = seen.lock().unwrap().len();
    let out = env
        .cmd(&["run", "--", "bash", "-c", "exit 3"])
        .env("DBUS_SESSION_BUS_ADDRESS", &bus.address)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    wait_for("the finish pushed", Duration::from_secs(20), || seen.lock().unwrap().get(before).cloned())
}

/// `[push]` at `topic` in this environment's config.toml; the config directory.
fn push_to(env: &Env, topic: &str) -> PathBuf {
    let config = env.path("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), format!("[push]\nntfy = \"{topic}\"\n")).unwrap();
    config
}

/// `token` in the 0600 file beside config.toml.
fn token_file(config: &std::path::Path, token: &str) {
    let file = config.join(nightshift::push::TOKEN_FILE);
    std::fs::write(&file, format!("{token}\n")).unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
}

#[test]
fn the_ntfy_token_comes_from_the_keyring_and_else_from_its_file() {
    let Some(bus) = Bus::start() else { return };
    let env = Env::new();
    let (topic, seen) = ntfy();
    let config = push_to(&env, &topic);
    let keyring = Keyring::default();
    keyring.items.lock().unwrap().push((attrs(&[("application", "other")]), b"not-ours".to_vec(), true));
    keyring.items.lock().unwrap().push((
        attrs(&[("application", "nightshift"), ("service", "ntfy"), ("xdg:schema", "org.freedesktop.Secret.Generic")]),
        b"tk_from_the_keyring\n".to_vec(),
        true,
    ));
    let _served = serve(&bus, &keyring);

    assert_eq!(pushed_with(&env, &bus, &seen).as_deref(), Some("Bearer tk_from_the_keyring"));
    let calls = keyring.calls.lock().unwrap().clone();
    assert!(calls.contains(&"OpenSession plain".to_string()) && calls.contains(&"Close".to_string()), "{calls:?}");
    // The keyring wins over the file.
    token_file(&config, "tk_from_the_file");
    assert_eq!(pushed_with(&env, &bus, &seen).as_deref(), Some("Bearer tk_from_the_keyring"));
    // Locked: the file.
    keyring.items.lock().unwrap()[1].2 = false;
    assert_eq!(pushed_with(&env, &bus, &seen).as_deref(), Some("Bearer tk_from_the_file"));
    let log: String = std::fs::read_dir(env.state_dir().join("logs"))
        .unwrap()
        .map(|f| std::fs::read_to_string(f.unwrap().path()).unwrap())
        .collect();
    assert!(log.contains("the keyring holds the ntfy token but is locked"), "the lock is said: {log}");
    assert!(!log.contains("tk_from_the"), "no token in the log");
}

#[test]
fn without_a_keyring_the_file_is_used() {
    let Some(bus) = Bus::start() else { return };
    let env = Env::new();
    let (topic, seen) = ntfy();
    token_file(&push_to(&env, &topic), "tk_only_the_file");
    // A bus, but no Secret Service on it.
    assert_eq!(pushed_with(&env, &bus, &seen).as_deref(), Some("Bearer tk_only_the_file"));
}
