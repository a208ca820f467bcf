//! Nightshift's tray app: the core supervisor in-process, a tray icon with a menu, and a window that
//! lists the journal's sessions, updated live.
//!
//! The app stays alive when its window closes (closing hides it); Quit in the tray stops the app's own
//! sessions gracefully and exits. Sessions run by other Nightshift processes (a headless
//! `nightshift run`) appear too: the window follows the shared journal.

mod commands;
mod error;
mod follow;
mod tray;

use std::sync::{Arc, Mutex};

use nightshift::clock::SystemClock;
use nightshift::control::ControlServer;
use nightshift::logging::{self, Stderr};
use nightshift::paths::Paths;
use nightshift::store::Store;
use nightshift::Supervisor;
use tauri::{Manager, RunEvent, WindowEvent};

/// What every command can reach: cloneable handles, no global lock.
#[derive(Debug)]
pub struct AppState {
    pub supervisor: Supervisor,
    /// Kept for the life of the app; dropping it removes the socket.
    _control: Mutex<Option<ControlServer>>,
}

/// Shows and focuses the main window.
pub fn show_main(app: &tauri::AppHandle) {
    if let Some(window) = app.get_webview_window("main") {
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
    }
}

/// The morning run summary, made here (the app is the process that runs all night).
fn start_mornings(app: tauri::AppHandle, journal: &std::path::Path) {
    let store = match Store::open(journal) {
        Ok(store) => store,
        Err(e) => {
            tracing::warn!("no morning summaries: {e}");
            return;
        }
    };
    tauri::async_runtime::spawn(nightshift::digest::run_mornings(
        store,
        Arc::new(SystemClock),
        nightshift::digest::Morning::default(),
        chrono::Local,
        move |headline, _| {
            use tauri::Emitter;
            let _ = app.emit("morning", headline.to_string());
        },
    ));
}

/// The statusLine exporter for Claude sessions: the `nightshift` CLI installed beside the app, or
/// the one on PATH.
fn exporter_command() -> String {
    let beside = std::env::current_exe().ok().and_then(|exe| exe.parent().map(|d| d.join("nightshift")));
    let cli = beside.filter(|p| p.exists()).map_or_else(|| "nightshift".to_string(), |p| p.display().to_string());
    format!("{} statusline", nightshift::supervisor::shell_words(&[cli]))
}

fn fail(message: String) -> ! {
    eprintln!("nightshift-app: {message}");
    tracing::error!("{message}");
    std::process::exit(1)
}

pub fn run() {
    let paths = Paths::resolve(None).unwrap_or_else(|e| fail(e.to_string()));
    let _log = logging::init(&paths.log_dir(), Stderr::On);
    let store = Store::open(&paths.journal()).unwrap_or_else(|e| fail(e.to_string()));
    let mut supervisor = Supervisor::new(store, Arc::new(SystemClock));
    let socket = paths.control_socket(std::process::id());
    let control = tauri::async_runtime::block_on(async { ControlServer::bind(&socket, supervisor.clone()) });
    let control = match control {
        Ok(server) => {
            supervisor.set_control_socket(socket);
            supervisor.set_statusline_exporter(exporter_command());
            Some(server)
        }
        Err(e) => {
            tracing::warn!(
                "no control socket at {}: {e}; `nightshift send/stop` cannot reach this app's sessions",
                socket.display()
            );
            None
        }
    };
    let bus = supervisor.subscribe();
    let journal = paths.journal();
    tracing::info!(journal = %journal.display(), "starting the tray app");

    let app = tauri::Builder::default()
        .manage(AppState { supervisor, _control: Mutex::new(control) })
        .invoke_handler(tauri::generate_handler![commands::list_sessions, commands::session_events])
        .setup(move |app| {
            tray::create(app.handle())?;
            start_mornings(app.handle().clone(), &journal);
            follow::start(app.handle().clone(), journal, bus);
            Ok(())
        })
        .on_window_event(|window, event| {
            // A tray app outlives its window: closing it only hides it.
            if let WindowEvent::CloseRequested { api, .. } = event {
                api.prevent_close();
                let _ = window.hide();
            }
        })
        .build(tauri::generate_context!())
        .unwrap_or_else(|e| fail(format!("cannot start the window system: {e}")));
    app.run(|_, event| {
        if let RunEvent::ExitRequested { code: None, api, .. } = event {
            api.prevent_exit();
        }
    });
}
