//! Nightshift's tray app: the core supervisor in-process, a tray icon whose variant and menu follow
//! the sessions, a window over the journal, desktop notifications and the sleep assertion.
//!
//! The app stays alive when its window closes (closing hides it) and runs once per user (a second
//! launch shows the first one's window); Quit in the tray stops the app's own sessions gracefully
//! and exits. Sessions run by other Nightshift processes (a headless `nightshift run`) appear too:
//! the window follows the shared journal and reaches them through their control sockets.

mod awake;
mod commands;
mod error;
mod follow;
mod notify;
mod schedule;
mod terminal;
mod tray;

use std::sync::{Arc, Mutex};

use nightshift::clock::SystemClock;
use nightshift::config::Config;
use nightshift::event::StopKind;
use nightshift::logging::{self, Stderr};
use nightshift::paths::Paths;
use nightshift::store::Store;
use tauri::{Emitter, Manager, RunEvent, WindowEvent};

/// What every command can reach: cloneable handles, no global lock.
#[derive(Debug)]
pub struct AppState {
    pub supervisor: nightshift::Supervisor,
    pub paths: Paths,
    pub notifier: notify::Notifier,
    pub awake: awake::Awake,
    /// The window's open terminals.
    pub terminals: terminal::Terminals,
    /// The phone's notifications of this app's own sessions (settings change in place).
    pub push: nightshift::push::Following,
    /// What the tray shows now.
    shown: Mutex<Option<tray::Shown>>,
    /// The control socket and the phone's answers (heard once they are set up, now or later in
    /// the settings), kept for the life of the app.
    _host: nightshift::host::Host,
}

/// Shows and focuses the main window.
pub fn show_main(app: &tauri::AppHandle) {
    if let Some(window) = app.get_webview_window("main") {
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
    }
}

/// Shows the window on one of its views (`new-session`, `digest`, `morning`, `settings`).
pub fn show_view(app: &tauri::AppHandle, view: &str) {
    show_main(app);
    let _ = app.emit("show-view", view.to_string());
}

/// Shows the window on a session's page.
pub fn open_session(app: &tauri::AppHandle, id: &str) {
    show_main(app);
    let _ = app.emit("open-session", id.to_string());
}

/// The morning run summary, made here (the app is the process that runs all night). Its checks read
/// the journal and run git, so they run on a thread of their own, off the app's async runtime.
fn start_mornings(app: tauri::AppHandle, journal: &std::path::Path) {
    let store = match Store::open(journal) {
        Ok(store) => store,
        Err(e) => {
            tracing::warn!("no morning summaries: {e}");
            return;
        }
    };
    let started = std::thread::Builder::new().name("mornings".into()).spawn(move || {
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_time().build() {
            Ok(runtime) => runtime,
            Err(e) => return tracing::warn!("no morning summaries: {e}"),
        };
        runtime.block_on(nightshift::digest::run_mornings(
            store,
            Arc::new(SystemClock),
            nightshift::digest::Morning::default(),
            chrono::Local,
            move |headline, _| notify::morning(&app, headline),
        ));
    });
    if let Err(e) = started {
        tracing::warn!("no morning summaries: {e}");
    }
}

/// The `nightshift` CLI Claude sessions run as their statusLine exporter and hooks: the one
/// installed beside the app, or the one on PATH.
pub(crate) fn cli_path() -> std::path::PathBuf {
    let beside = std::env::current_exe().ok().and_then(|exe| exe.parent().map(|d| d.join("nightshift")));
    beside.filter(|p| p.exists()).unwrap_or_else(|| "nightshift".into())
}

/// Ends the app as its Quit does when the desktop or a terminal tells it to: SIGTERM (a logout, a
/// reboot, `kill`), SIGHUP (the terminal it was started from closed) or SIGINT (Ctrl-C there). Each
/// session is stopped gracefully and a pending resume is kept for the next start, whatever the
/// setting for Quit says: the user did not choose this end. Left to the signal's default, the app
/// vanished at once and took its agents' terminals with it. A second signal ends it at once.
fn end_on_signals(app: tauri::AppHandle) {
    tauri::async_runtime::spawn(async move {
        let mut signals = match EndSignals::listen() {
            Ok(signals) => signals,
            Err(e) => {
                tracing::warn!("cannot listen for SIGTERM, SIGHUP and SIGINT ({e}): a logout ends the app without stopping its sessions");
                return;
            }
        };
        let name = signals.next().await;
        tracing::info!("{name}: stopping this app's sessions, then exiting");
        let source = format!("{name} to nightshift-app");
        let supervisor = app.state::<AppState>().supervisor.clone();
        tokio::select! {
            _ = supervisor.stop_all(&source, StopKind::Shutdown) => app.exit(0),
            again = signals.next() => {
                tracing::warn!("{again} again: exiting without waiting for the sessions to stop");
                std::process::exit(1)
            }
        }
    });
}

/// The signals that end the app (see [`end_on_signals`]).
struct EndSignals {
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl EndSignals {
    fn listen() -> std::io::Result<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Self {
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    /// The name of the next one to arrive.
    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.hup.recv() => "SIGHUP",
            _ = self.int.recv() => "SIGINT",
        }
    }
}

fn fail(message: String) -> ! {
    eprintln!("nightshift-app: {message}");
    tracing::error!("{message}");
    std::process::exit(1)
}

pub fn run() {
    let paths = Paths::resolve(None).unwrap_or_else(|e| fail(e.to_string()));
    let _log = logging::init(&paths.log_dir(), Stderr::On);
    paths.tighten();
    let store = Store::open(&paths.journal()).unwrap_or_else(|e| fail(e.to_string()));
    let switches = match Config::load(paths.config_dir.as_deref()) {
        Ok(config) => config.notifications,
        Err(e) => {
            tracing::warn!("{e}; notifications use their defaults until it is fixed");
            Default::default()
        }
    };
    // The host every long-lived Nightshift process has; the phone follows from the start, as the
    // window's settings can set a target later (a headless run pushes its own sessions).
    let host = tauri::async_runtime::block_on(async {
        let role =
            nightshift::host::Role { phone: nightshift::host::Phone::Always, name: "the tray app", adopts: true };
        nightshift::host::Host::open(&paths, store, Arc::new(SystemClock), &cli_path(), role)
    });
    let supervisor = host.supervisor.clone();
    let push = host.push.clone().unwrap_or_else(|| fail("the phone's follower did not start".into()));
    let bus = supervisor.subscribe();
    let journal = paths.journal();
    tracing::info!(journal = %journal.display(), "starting the tray app");
    let state = AppState {
        supervisor,
        paths,
        notifier: notify::Notifier::new(switches),
        awake: awake::Awake::default(),
        terminals: terminal::Terminals::default(),
        push,
        shown: Mutex::new(None),
        _host: host,
    };

    let app = tauri::Builder::default()
        // First: a second launch hands over to the running app and exits before anything starts.
        .plugin(tauri_plugin_single_instance::init(|app, _argv, _cwd| {
            tracing::info!("another launch: showing this instance's window");
            show_main(app);
        }))
        .plugin(tauri_plugin_autostart::init(tauri_plugin_autostart::MacosLauncher::LaunchAgent, None))
        .manage(state)
        .invoke_handler(tauri::generate_handler![
            commands::list_sessions,
            commands::session_events,
            commands::session_handoff,
            commands::session_screen,
            commands::session_options,
            commands::allow_host,
            commands::configure_session,
            commands::reset_breaker,
            commands::stop_session,
            commands::send_text,
            commands::resume_session,
            commands::salvage_show,
            commands::salvage_restore,
            commands::dismiss_need,
            commands::worktrees,
            commands::remove_worktree,
            commands::new_session,
            commands::new_loop,
            commands::accounts,
            commands::doctor,
            commands::canary,
            commands::plan,
            commands::problems,
            commands::session_lives,
            commands::session_replay,
            commands::presets,
            commands::save_preset,
            commands::delete_preset,
            commands::usage,
            commands::digest,
            commands::morning,
            commands::app_settings,
            commands::set_notifications,
            commands::set_push,
            commands::phone_setup,
            commands::set_launch_at_login,
            commands::set_keep_resumes_on_quit,
            commands::set_pace,
            commands::pause_all,
            commands::resume_all,
            terminal::terminal_open,
            terminal::terminal_keys,
            terminal::terminal_resize,
            terminal::terminal_drawn,
            terminal::terminal_close,
        ])
        .setup(move |app| {
            end_on_signals(app.handle().clone());
            tray::create(app.handle())?;
            start_mornings(app.handle().clone(), &journal);
            follow::start(app.handle().clone(), journal, bus);
            awake::start(app.handle().clone());
            notify::listen_for_clicks(app.handle().clone());
            schedule::start(app.handle().clone());
            let supervisor = app.state::<AppState>().supervisor.clone();
            tauri::async_runtime::spawn(async move {
                // Sessions whose Nightshift ended without ending them (a crash, a logout, a killed
                // run) go on, when their armed automation has time left; attended ones stay lost.
                let done = supervisor.restore_all();
                for (handle, why) in &done.restored {
                    tracing::info!(session = %handle.id(), "restored: {why}");
                }
                for (row, why) in &done.lost {
                    tracing::info!(session = %row.id, "left as lost: {why}");
                }
                supervisor.watch_suspends().await
            });
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
