//! Follows the journal: pushes new events to the window as `journal` events, raises their
//! notifications and keeps the tray up to date.
//!
//! The journal is the one place every Nightshift process writes to, so following it shows the app's
//! own sessions and those of headless runs alike. The app's own events wake the follower at once;
//! other processes' events are picked up by a short poll.

use std::path::PathBuf;
use std::time::Duration;

use nightshift::store::{EventQuery, Store};
use nightshift::Event;
use serde_json::Value;
use tauri::{AppHandle, Emitter};
use tokio::sync::broadcast::{self, error::RecvError};

const POLL: Duration = Duration::from_millis(400);
/// With nothing new in the journal the tray is looked at again this often (a supervisor that died
/// turns its sessions `lost` without an event).
const TRAY_EVERY: u32 = 12;
const BATCH: usize = 500;

pub fn start(app: AppHandle, journal: PathBuf, mut bus: broadcast::Receiver<Event>) {
    tauri::async_runtime::spawn(async move {
        let store = match Store::open(&journal) {
            Ok(store) => store,
            Err(e) => {
                tracing::error!("cannot follow the journal: {e}");
                return;
            }
        };
        let mut last = store.last_event_id().unwrap_or(0);
        let mut bus_open = true;
        let mut quiet = 0;
        loop {
            tokio::select! {
                () = tokio::time::sleep(POLL) => {}
                received = bus.recv(), if bus_open => {
                    if matches!(received, Err(RecvError::Closed)) {
                        bus_open = false;
                    }
                }
            }
            let query = EventQuery { after_id: Some(last), limit: Some(BATCH), ..Default::default() };
            match store.events(&query) {
                Ok(rows) if !rows.is_empty() => {
                    last = rows.last().map_or(last, |r| r.id);
                    let events: Vec<Value> = crate::commands::views(&rows);
                    if let Err(e) = app.emit("journal", events) {
                        tracing::debug!("could not push journal events to the window: {e}");
                    }
                    crate::notify::on_events(&app, &rows);
                    quiet = TRAY_EVERY;
                }
                Ok(_) => {}
                Err(e) => tracing::warn!("reading the journal failed: {e}"),
            }
            quiet += 1;
            if quiet >= TRAY_EVERY {
                quiet = 0;
                crate::tray::refresh(&app);
            }
        }
    });
}
