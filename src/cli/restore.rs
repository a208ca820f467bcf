//! `nightshift restore`: for a machine without the tray app (the systemd user unit runs it at login,
//! and at boot with lingering). Every session and loop whose Nightshift ended without ending them —
//! a killed `nightshift run`, a crash, a logout or reboot, a power cut — and whose armed automation
//! has time left is started again from its contract and supervised here in the foreground until it
//! ends: Claude on its conversation (`--resume <id>`) with the kickstart, a session that waited for
//! a limit's reset paused on it with its resume re-armed, a loop on its interrupted task. An
//! attended session is listed, not resumed: `nightshift restore ID` resumes it. Scheduled starts
//! whose own process is gone are waited for here too, and started at their time from their
//! contracts, supervised here like the restored ones (one an older Nightshift journalled as its
//! command line, in a detached `nightshift run` or `loop` of its own). The app does the same when
//! it starts.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use nightshift::logging::{self, Stderr};
use nightshift::paths::Paths;
use nightshift::schedule::{self, Verdict};
use nightshift::session::SessionHandle;
use nightshift::store::Store;
use tokio::signal::unix::{signal, SignalKind};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A lost session to resume although nothing was armed to run it without you, or an ended one
    /// whose conversation to carry on in a new session (its id, or the start of it)
    #[arg(value_name = "SESSION")]
    session: Option<String>,
    /// Write every event as a JSON line to PATH (appending), or to stdout with `-`
    #[arg(long, value_name = "PATH|-", value_hint = clap::ValueHint::FilePath)]
    events: Option<String>,
    /// Stay after: take over, within seconds, the armed sessions of any Nightshift that dies or
    /// hangs from now on, and start the schedules left to nobody, until stopped (the user service
    /// runs this; the tray app does the same while it runs)
    #[arg(long, conflicts_with = "session")]
    keep: bool,
}

pub fn run(state_dir: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let paths = Paths::resolve(state_dir)?;
    let _log = logging::init(&paths.log_dir(), Stderr::On);
    paths.tighten();
    let store = Store::open(&paths.journal())?;
    let row = args.session.as_deref().map(|prefix| store.find_session(prefix)).transpose()?;
    let events = super::run::open_events(args.events.as_deref())?;
    let config = nightshift::config::Config::load(paths.config_dir.as_deref())?;
    let (missed, sleep) = (config.schedule.missed, config.sleep);
    let cli = std::env::current_exe().context("cannot find the nightshift binary to start scheduled sessions with")?;
    super::runtime()?.block_on(async move {
        let name = if args.keep { "nightshift restore --keep" } else { "nightshift restore" };
        let role = nightshift::host::Role { phone: nightshift::host::Phone::IfSet, name, adopts: true };
        let host = super::run::host(&paths, store, events, role);
        let _suspends = host.supervisor.watch_suspends();
        let me = std::process::id();
        let restored: Vec<SessionHandle> = match &row {
            Some(row) if row.is_final() => {
                let handle = host.supervisor.continue_ended(row)?;
                println!("Session {} had ended: its conversation goes on in session {}.", row.id, handle.id());
                vec![handle]
            }
            Some(row) => {
                let handle = host.supervisor.resume_lost(row)?;
                println!("Resumed session {} on its conversation.", handle.id());
                vec![handle]
            }
            None => {
                let done = host.supervisor.restore_all();
                for (handle, why) in &done.restored {
                    let when = match handle.status().options.resume_due {
                        Some(due) => format!("it resumes at {}", due.with_timezone(&chrono::Local).format("%a %H:%M")),
                        None if handle.status().options.limit.is_some() => "it resumes once its limit has reset".into(),
                        None => "it works again".into(),
                    };
                    println!("Restored session {} ({why}): {when}.", handle.id());
                }
                for (lost, why) in &done.lost {
                    println!("Left session {} as it is: {why}. To resume it: nightshift restore {}", lost.id, lost.id);
                }
                done.handles()
            }
        };
        let waiting = host.supervisor.with_store(|s| schedule::watched(s, me, false))?;
        if args.keep {
            println!(
                "Keeping the night: sessions whose Nightshift dies or hangs are taken over here (Ctrl-C ends it)."
            );
        } else if restored.is_empty() && waiting.is_empty() {
            println!(
                "Nothing to restore: no session has armed automation left to run, and none is scheduled without a \
                 Nightshift to start it."
            );
            host.finish().await;
            return Ok(ExitCode::SUCCESS);
        }
        for row in &waiting {
            let at = row.due.with_timezone(&chrono::Local).format("%a %H:%M:%S");
            println!("Scheduled session {}: it starts {at} ({}).", row.session, row.why);
        }
        // What this process runs: the restored sessions, and the scheduled ones it starts later.
        let supervisor = host.supervisor.clone();
        if !args.keep {
            super::run::stop_on_signals(move || supervisor.sessions(), true)?;
        }
        // Awake while a restored session or a schedule this process starts needs it, as in the app.
        let supervisor = host.supervisor.clone();
        let sessions = move || super::awake::sessions_want(&supervisor.sessions())();
        let supervisor = host.supervisor.clone();
        let awake = super::awake::keep_awake(
            &host.supervisor,
            sleep,
            "Nightshift restored sessions are armed".into(),
            move || {
                let mut wants = sessions();
                let now = supervisor.clock().now();
                let pending = supervisor.with_store(|s| schedule::watched(s, me, false)).unwrap_or_default();
                wants.extend(
                    pending.into_iter().map(|row| (row.session, nightshift::awake::want_scheduled(row.due, now))),
                );
                wants
            },
            false,
        )
        .await;
        nightshift::paths::ensure_private_dir(&paths.log_dir())?;
        let mut interrupt = signal(SignalKind::interrupt()).context("cannot listen for signals")?;
        let mut terminate = signal(SignalKind::terminate()).context("cannot listen for signals")?;
        loop {
            let clock = host.supervisor.clock().clone();
            let due = host.supervisor.write_store(|s| schedule::due_now(s, clock.as_ref(), me, missed, false))?;
            for (row, launch, verdict) in due {
                match verdict {
                    Verdict::Skip { late_by } => {
                        let session = nightshift::SessionId::from(row.session.clone());
                        for kind in schedule::skip(&row, late_by) {
                            host.supervisor.emit(&session, kind);
                        }
                        println!("Skipped scheduled session {}: its time passed while no Nightshift ran.", row.session);
                    }
                    _ => start(&host.supervisor, &paths, &cli, &row.session, &launch),
                }
            }
            let live = host.supervisor.sessions().iter().any(|h| h.status().exit.is_none());
            let watched = host.supervisor.with_store(|s| schedule::watched(s, me, false))?;
            if !live && watched.is_empty() && !args.keep {
                break;
            }
            // A keeper ends on a signal whatever it runs: its sessions stop as at a logout, their
            // pending resumes kept, and the next Nightshift takes them over.
            tokio::select! {
                () = tokio::time::sleep(schedule::CHECK) => {}
                _ = interrupt.recv(), if !live || args.keep => {
                    host.supervisor.stop_all("SIGINT to nightshift", nightshift::event::StopKind::Shutdown).await;
                    break;
                }
                _ = terminate.recv(), if !live || args.keep => {
                    host.supervisor.stop_all("SIGTERM to nightshift", nightshift::event::StopKind::Shutdown).await;
                    break;
                }
            }
        }
        for handle in host.supervisor.sessions() {
            handle.wait().await;
        }
        drop(awake);
        host.finish().await;
        Ok(ExitCode::SUCCESS)
    })
}

/// Starts a scheduled session claimed by this process: here, from its contract; one an older
/// Nightshift journalled as its command line, in a process of its own. A start that fails is
/// journalled as such.
fn start(
    supervisor: &nightshift::Supervisor,
    paths: &Paths,
    cli: &std::path::Path,
    session: &str,
    launch: &schedule::Launch,
) {
    let id = nightshift::SessionId::from(session.to_string());
    if let schedule::Launch::Contract { .. } = launch {
        match supervisor.start_scheduled(id.clone(), None) {
            Ok(_) => println!("Started scheduled session {session}."),
            Err(e) => failure(supervisor, &id, &e.to_string()),
        }
        return;
    }
    let (me, failing) = (supervisor.clone(), id.clone());
    let failed = move |why: String| failure(&me, &failing, &why);
    let log = paths.log_dir().join("scheduled.log");
    match schedule::start_elsewhere(cli, &paths.state_dir, session, launch, &log, failed) {
        Ok(()) => println!("Started scheduled session {session}."),
        Err(why) => failure(supervisor, &id, &why),
    }
}

/// A scheduled start that failed, journalled unless the session started after all.
fn failure(supervisor: &nightshift::Supervisor, id: &nightshift::SessionId, why: &str) {
    let state = supervisor.with_store(|s| s.session(id.as_str())).ok().flatten().map(|r| r.state);
    if state != Some(nightshift::SessionState::Scheduled) {
        return;
    }
    eprintln!("nightshift: scheduled session {id} did not start: {why}");
    supervisor.emit(
        id,
        nightshift::EventKind::state(nightshift::SessionState::Failed, format!("the scheduled start failed: {why}")),
    );
}
