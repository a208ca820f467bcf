//! Desktop notifications (org.freedesktop.Notifications through notify-rust) for the journal's
//! events: a question, a limit, a resume, a breaker, a finished run, the morning summary.
//!
//! Each kind has a switch in the settings. A failure to notify is logged once (then quietly), never
//! fatal. Clicking a notification opens its session where the desktop supports actions.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use nightshift::notice::{self, Notice, Switches};
use nightshift::store::StoredEvent;
use nightshift::Event;
use tauri::{AppHandle, Emitter, Manager};

use crate::AppState;

/// A session that exits and is not started again within this long has finished.
const FINISHED_AFTER: Duration = Duration::from_secs(3);
/// A dialog still open after this long needs the user (routine ones and the usage-limit menu are
/// answered by Nightshift within a frame or two).
const QUESTION_AFTER: Duration = Duration::from_secs(2);

#[derive(Debug, Default)]
pub struct Notifier {
    switches: Mutex<Switches>,
    failed: AtomicBool,
}

impl Notifier {
    pub fn new(switches: Switches) -> Self {
        Self { switches: Mutex::new(switches), failed: AtomicBool::new(false) }
    }
}

pub fn set_switches(state: &AppState, switches: Switches) {
    *state.notifier.switches.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = switches;
}

/// The notifications new journal rows deserve.
pub fn on_events(app: &AppHandle, rows: &[StoredEvent]) {
    let state = app.state::<AppState>();
    for row in rows {
        let Ok(event) = serde_json::from_str::<Event>(&row.body) else { continue };
        let Ok(Some(session)) = state.supervisor.with_store(|s| s.session(&row.session)) else { continue };
        let label = nightshift::overview::label(&session);
        let Some(notice) = notice::for_event(&row.session, &label, &event.kind, &chrono::Local) else { continue };
        let wait = match notice.kind {
            notice::Kind::Finished => FINISHED_AFTER,
            notice::Kind::Question => QUESTION_AFTER,
            _ => {
                show(app, notice);
                continue;
            }
        };
        let app = app.clone();
        let (id, session) = (row.id, row.session.clone());
        tauri::async_runtime::spawn(async move {
            tokio::time::sleep(wait).await;
            let state = app.state::<AppState>();
            let still = state.supervisor.with_store(|s| -> Result<bool, nightshift::store::StoreError> {
                Ok(match notice.kind {
                    // An exit is a finish only when nothing started the agent again (respawn does).
                    notice::Kind::Finished => s.recent_events(&session, 1)?.last().is_some_and(|e| e.id == id),
                    // Only a dialog nobody answered needs the user.
                    _ => s.session(&session)?.is_some_and(|r| r.state == "waiting_input"),
                })
            });
            if still.unwrap_or(false) {
                show(&app, notice);
            }
        });
    }
}

/// Shows `notice` if its kind is switched on.
pub fn show(app: &AppHandle, notice: Notice) {
    let state = app.state::<AppState>();
    let allowed = state.notifier.switches.lock().map(|s| s.allows(notice.kind)).unwrap_or(true);
    if !allowed {
        return;
    }
    let app = app.clone();
    // The notification's actions are waited for on a thread of their own (notify-rust blocks).
    std::thread::spawn(move || {
        let mut n = notify_rust::Notification::new();
        n.appname("Nightshift").summary(&notice.summary).body(&notice.body).icon("dev.nightshift.app");
        if notice.session.is_some() {
            n.action("default", "Open");
        }
        match n.show() {
            Ok(handle) => {
                let state = app.state::<AppState>();
                if state.notifier.failed.swap(false, Ordering::Relaxed) {
                    tracing::info!("desktop notifications work again");
                }
                if let Some(id) = notice.session {
                    handle.wait_for_action(|action| {
                        if action == "default" {
                            crate::open_session(&app, &id);
                        }
                    });
                }
            }
            Err(e) => {
                let state = app.state::<AppState>();
                if state.notifier.failed.swap(true, Ordering::Relaxed) {
                    tracing::debug!("notification not shown: {e}");
                } else {
                    tracing::warn!("cannot show desktop notifications ({e}); the journal still has every event");
                }
            }
        }
    });
}

/// Says the morning summary is ready, in the window and on the desktop.
pub fn morning(app: &AppHandle, headline: &str) {
    let _ = app.emit("morning", headline.to_string());
    show(app, notice::morning(headline));
}
