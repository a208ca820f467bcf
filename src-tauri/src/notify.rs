//! Desktop notifications (org.freedesktop.Notifications through notify-rust) for the journal's
//! events: a question, a limit, a resume, a breaker, a finished run, a command the guard refused
//! (once per kind per night), the morning summary.
//!
//! Each kind has a switch in the settings. A failure to notify is logged once (then quietly), never
//! fatal. Clicking a notification opens its session where the desktop supports actions: one
//! listener on the session bus hears every click (`ActionInvoked`) and looks up the notification's
//! session among the latest ones shown, so no thread waits on a notification the desktop may
//! keep forever.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use nightshift::notice::{self, Notice, Switches};
use nightshift::store::StoredEvent;
use nightshift::Event;
use tauri::{AppHandle, Emitter, Manager};

use crate::AppState;

/// How many shown notifications are remembered for their clicks.
const CLICKABLE: usize = 64;

#[derive(Debug, Default)]
pub struct Notifier {
    switches: Mutex<Switches>,
    failed: AtomicBool,
    /// The latest notifications shown for a session: (notification id, session).
    shown: Mutex<VecDeque<(u32, String)>>,
    /// What was told once per night already.
    told: Mutex<notice::Told>,
    /// The one thread that hands notifications to the desktop, in the journal's order.
    queue: Mutex<Option<std::sync::mpsc::Sender<(AppHandle, Notice)>>>,
}

impl Notifier {
    pub fn new(switches: Switches) -> Self {
        Self { switches: Mutex::new(switches), ..Self::default() }
    }

    fn remember(&self, id: u32, session: String) {
        let mut shown = self.shown.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if shown.len() == CLICKABLE {
            shown.pop_front();
        }
        shown.push_back((id, session));
    }

    fn session_of(&self, id: u32) -> Option<String> {
        let shown = self.shown.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        shown.iter().find(|(n, _)| *n == id).map(|(_, s)| s.clone())
    }
}

/// Hears clicks on Nightshift's notifications for as long as the app runs.
pub fn listen_for_clicks(app: AppHandle) {
    std::thread::spawn(move || {
        if let Err(e) = clicks(&app) {
            tracing::info!("notification clicks will not open sessions: {e}");
        }
    });
}

fn clicks(app: &AppHandle) -> zbus::Result<()> {
    let bus = zbus::blocking::Connection::session()?;
    let rule = zbus::MatchRule::builder()
        .msg_type(zbus::message::Type::Signal)
        .interface("org.freedesktop.Notifications")?
        .member("ActionInvoked")?
        .build();
    for message in zbus::blocking::MessageIterator::for_match_rule(rule, &bus, Some(CLICKABLE))? {
        let Ok((id, action)) = message?.body().deserialize::<(u32, String)>() else { continue };
        let session = app.state::<AppState>().notifier.session_of(id);
        if let (Some(session), "default") = (session, action.as_str()) {
            crate::open_session(app, &session);
        }
    }
    Ok(())
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
        let mut told = state.notifier.told.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !told.first(&notice, event.ts, &chrono::Local) {
            continue;
        }
        drop(told);
        let Some(wait) = notice::settle_for(notice.kind) else {
            show(app, notice);
            continue;
        };
        let app = app.clone();
        let (session, kind) = (row.session.clone(), event.kind);
        tauri::async_runtime::spawn(async move {
            tokio::time::sleep(wait).await;
            let state = app.state::<AppState>();
            let still = state.supervisor.with_store(|s| notice::still_due(s, notice.kind, &session, &kind));
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
    // Showing is a blocking D-Bus call: off the async threads, on one thread so that two events
    // of one journal batch are shown in their order.
    let mut queue = state.notifier.queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let sender = queue.get_or_insert_with(|| {
        let (tx, rx) = std::sync::mpsc::channel::<(AppHandle, Notice)>();
        std::thread::Builder::new()
            .name("notifications".into())
            .spawn(move || {
                for (app, notice) in rx {
                    deliver(&app, notice);
                }
            })
            .expect("a thread for notifications");
        tx
    });
    if sender.send((app.clone(), notice)).is_err() {
        tracing::warn!("the notification thread is gone; the journal still has every event");
        *queue = None;
    }
}

fn deliver(app: &AppHandle, notice: Notice) {
    let mut n = notify_rust::Notification::new();
    // The body is read as markup by notification servers: the agent's words show as written.
    n.appname("Nightshift").summary(&notice.summary).body(&notice::markup(&notice.body)).icon("dev.nightshift.app");
    if notice.session.is_some() {
        n.action("default", "Open");
    }
    match n.show() {
        Ok(handle) => {
            let state = app.state::<AppState>();
            if state.notifier.failed.swap(false, Ordering::Relaxed) {
                tracing::info!("desktop notifications work again");
            }
            if let Some(session) = notice.session {
                state.notifier.remember(handle.id(), session);
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
}

/// Says, as the app quits, that the resumes sessions wait for are kept for the next start. Waits
/// until the desktop has it, since the app is about to exit.
pub async fn resumes_kept(app: &AppHandle, pending: &[(nightshift::SessionId, chrono::DateTime<chrono::Utc>)]) {
    let due: Vec<_> = pending.iter().map(|(_, due)| *due).collect();
    let notice = notice::resumes_kept(&due, &chrono::Local);
    let state = app.state::<AppState>();
    if !state.notifier.switches.lock().map(|s| s.allows(notice.kind)).unwrap_or(true) {
        return;
    }
    let shown = tauri::async_runtime::spawn_blocking(move || {
        notify_rust::Notification::new()
            .appname("Nightshift")
            .summary(&notice.summary)
            .body(&notice::markup(&notice.body))
            .icon("dev.nightshift.app")
            .show()
            .map(|_| ())
    })
    .await;
    if let Ok(Err(e)) = shown {
        tracing::warn!("could not say that pending resumes are kept: {e}");
    }
}

/// Says the morning summary is ready, in the window and on the desktop.
pub fn morning(app: &AppHandle, headline: &str) {
    let _ = app.emit("morning", headline.to_string());
    show(app, notice::morning(headline));
}
