//! The sleep assertion: held exactly while at least one session needs the machine awake by the
//! core's policy ([`nightshift::awake`]: its agent works, a cycle or a restart is due, or a resume
//! is due within reach), released when none does. When everything waits long enough, it is let go
//! and a wake alarm set a little before the earliest wait ends (`[sleep]` in config.toml).
//!
//! It inhibits idle and sleep (systemd-logind's `Inhibit("idle")` and `Inhibit("sleep")` through
//! keepawake), never the display. When the service is not there the app says so in the window and
//! carries on: the run goes on, the machine may sleep.

use std::sync::Mutex;
use std::time::Duration;

use nightshift::awake::{Change, Want};
use nightshift::control::{self, Request};
use nightshift::supervisor::awake::NightKeeper;
use serde::Serialize;
use tauri::{AppHandle, Emitter, Manager};

use crate::AppState;

/// How often the armed sessions are looked at (durations end, other processes' sessions change).
const CHECK: Duration = Duration::from_secs(5);

#[derive(Default)]
pub struct Awake {
    inner: Mutex<Inner>,
    /// The inhibitors and the wake alarm, by the core's policy; one recheck at a time (the
    /// service is asked in order). Made at the first recheck, by the settings then.
    keeper: tokio::sync::Mutex<Option<NightKeeper>>,
}

/// What the window shows, as of the last recheck.
#[derive(Default)]
struct Inner {
    holding: bool,
    /// Why the machine is kept awake, or why it is not.
    reason: String,
    warning: Option<String>,
    /// Other processes' sessions that could not say whether they are armed (said once each).
    unanswered: std::collections::HashSet<String>,
}

impl std::fmt::Debug for Awake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Awake").finish_non_exhaustive()
    }
}

/// What the window shows of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PowerStatus {
    pub holding: bool,
    pub reason: String,
    pub warning: Option<String>,
}

pub fn status(app: &AppHandle) -> PowerStatus {
    let state = app.state::<AppState>();
    let inner = state.awake.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    PowerStatus { holding: inner.holding, reason: inner.reason.clone(), warning: inner.warning.clone() }
}

/// What every live session needs of the machine: the app's own by their status, other processes'
/// by asking them; and which of them are the app's own.
async fn wants(state: &AppState) -> (Vec<(String, Want)>, std::collections::HashSet<String>) {
    let mut wants: Vec<(String, Want)> = state
        .supervisor
        .sessions()
        .iter()
        .filter(|h| h.status().exit.is_none())
        .map(|h| (h.id().to_string(), h.status().options.awake))
        .collect();
    // The scheduled starts this app will make: the machine must be awake at their time.
    let now = state.supervisor.clock().now();
    let pending = state.supervisor.with_store(|s| nightshift::schedule::watched(s, std::process::id(), true));
    for row in pending.unwrap_or_default() {
        wants.push((row.session.clone(), nightshift::awake::want_scheduled(row.due, now)));
    }
    let own: std::collections::HashSet<String> = wants.iter().map(|(id, _)| id.clone()).collect();
    let rows = state.supervisor.with_store(|s| s.sessions()).unwrap_or_default();
    let live = |r: &&nightshift::store::SessionRow| r.standing() != nightshift::store::Standing::Scheduled;
    for row in rows.iter().filter(|r| !r.is_final() && state.supervisor.session(&r.id).is_none()).filter(live) {
        let Ok(socket) = control::owner_socket(row) else { continue };
        let request = Request::Options { session: row.id.clone() };
        match control::request(socket, &request).await {
            Ok(control::Response::Options(options)) => wants.push((row.id.clone(), options.awake)),
            Ok(_) => {}
            Err(e) => {
                let mut inner = state.awake.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if inner.unanswered.insert(row.id.clone()) {
                    tracing::warn!(session = %row.id, "cannot tell whether it needs the machine awake ({e}); it does not keep it awake");
                }
            }
        }
    }
    (wants, own)
}

/// Looks again now (after the user changed something).
pub fn recheck(app: &AppHandle) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move { apply(&app).await });
}

async fn apply(app: &AppHandle) {
    let state = app.state::<AppState>();
    let mut keeper = state.awake.keeper.lock().await;
    if keeper.is_none() {
        let sleep =
            nightshift::config::Config::load(state.paths.config_dir.as_deref()).map(|c| c.sleep).unwrap_or_default();
        *keeper = Some(NightKeeper::start(sleep).await);
    }
    let keeper = keeper.as_mut().expect("made above");
    let (wants, own) = wants(&state).await;
    let verdict = nightshift::awake::verdict(&wants);
    let before = status(app);
    let why = format!("Nightshift keeps {} session(s) running", verdict.holding_for.len());
    for change in keeper.apply(&state.supervisor, &wants, |id| own.contains(id), &why).await {
        if let Change::Failed(e) = change {
            tracing::warn!("{}", capitalised(&e));
        }
    }
    {
        let mut inner = state.awake.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let k = keeper.keeper();
        inner.holding = k.holding();
        inner.warning = k.warning().map(capitalised);
        inner.reason = match k.alarm() {
            Some(wake_at) => {
                nightshift::awake::sleeping(wake_at, wake_at + k.settings(false).lead, &nightshift::clock::local_zone())
            }
            None => verdict.reason(k.holding()),
        };
    }
    let after = status(app);
    if after != before {
        let _ = app.emit("power", &after);
    }
}

/// Looks every few seconds for as long as the app runs.
pub fn start(app: AppHandle) {
    tauri::async_runtime::spawn(async move {
        loop {
            apply(&app).await;
            tokio::time::sleep(CHECK).await;
        }
    });
}

/// `text` as a sentence: its first letter upper-case, a full stop at the end.
fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    let mut out: String = chars.next().map(|c| c.to_uppercase().collect()).unwrap_or_default();
    out.extend(chars);
    if !out.ends_with('.') {
        out.push('.');
    }
    out
}
