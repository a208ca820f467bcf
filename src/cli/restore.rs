//! `nightshift restore`: for a machine without the tray app. Sessions whose Nightshift ended while
//! they waited for a usage limit's reset — a logout or reboot, a killed `nightshift run` — are
//! started again (Claude with `--continue`), paused on their limit with their resume re-armed, and
//! supervised here in the foreground until they end. Scheduled starts whose own process is gone
//! are waited for here too, and started at their time (each in a detached `nightshift run` or
//! `loop` of its own). The app does the same when it starts.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use nightshift::logging::{self, Stderr};
use nightshift::paths::Paths;
use nightshift::schedule::{self, Verdict};
use nightshift::store::Store;
use tokio::signal::unix::{signal, SignalKind};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write every event as a JSON line to PATH (appending), or to stdout with `-`
    #[arg(long, value_name = "PATH|-", value_hint = clap::ValueHint::FilePath)]
    events: Option<String>,
}

pub fn run(state_dir: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let paths = Paths::resolve(state_dir)?;
    let _log = logging::init(&paths.log_dir(), Stderr::On);
    let store = Store::open(&paths.journal())?;
    let events = super::run::open_events(args.events.as_deref())?;
    let guard = nightshift::hooks::guard::Rules::load(paths.config_dir.as_deref())?;
    let missed = nightshift::config::Config::load(paths.config_dir.as_deref())?.schedule.missed;
    let cli = std::env::current_exe().context("cannot find the nightshift binary to start scheduled sessions with")?;
    super::runtime()?.block_on(async move {
        let host = super::run::host(&paths, store, events, guard);
        let me = std::process::id();
        let restored = host.supervisor.restore_pending();
        let waiting = host.supervisor.with_store(|s| schedule::watched(s, me, false))?;
        if restored.is_empty() && waiting.is_empty() {
            println!(
                "Nothing to restore: no session was waiting for a usage limit's reset, and none is scheduled \
                 without a Nightshift to start it."
            );
            return Ok(ExitCode::SUCCESS);
        }
        for handle in &restored {
            let due = handle.status().options.resume_due.map_or_else(
                || "as soon as its limit has reset".to_string(),
                |due| format!("at {}", due.with_timezone(&chrono::Local).format("%a %H:%M")),
            );
            println!("Restored session {}: it resumes {due}.", handle.id());
        }
        for row in &waiting {
            let at = row.due.with_timezone(&chrono::Local).format("%a %H:%M:%S");
            println!("Scheduled session {}: it starts {at} ({}).", row.session, row.why);
        }
        super::run::stop_on_signals(&restored, true)?;
        nightshift::paths::ensure_private_dir(&paths.log_dir())?;
        let mut interrupt = signal(SignalKind::interrupt()).context("cannot listen for signals")?;
        let mut terminate = signal(SignalKind::terminate()).context("cannot listen for signals")?;
        loop {
            let clock = host.supervisor.clock().clone();
            let due = host.supervisor.with_store(|s| schedule::due_now(s, clock.as_ref(), me, missed, false))?;
            for (row, launch, verdict) in due {
                match verdict {
                    Verdict::Skip { late_by } => {
                        host.supervisor.with_store(|s| schedule::skip(s, clock.as_ref(), &row, late_by))?;
                        println!("Skipped scheduled session {}: its time passed while no Nightshift ran.", row.session);
                    }
                    _ => start(&host.supervisor, &paths, &cli, &row.session, &launch),
                }
            }
            let live = restored.iter().any(|h| h.status().exit.is_none());
            let watched = host.supervisor.with_store(|s| schedule::watched(s, me, false))?;
            if !live && watched.is_empty() {
                break;
            }
            tokio::select! {
                () = tokio::time::sleep(schedule::CHECK) => {}
                _ = interrupt.recv(), if restored.is_empty() => break,
                _ = terminate.recv(), if restored.is_empty() => break,
            }
        }
        for handle in &restored {
            handle.wait().await;
        }
        host.finish().await;
        Ok(ExitCode::SUCCESS)
    })
}

/// Starts a scheduled session claimed by this process: its command line again, in a process of
/// its own; a start that fails is journalled as such.
fn start(
    supervisor: &nightshift::Supervisor,
    paths: &Paths,
    cli: &std::path::Path,
    session: &str,
    launch: &schedule::Launch,
) {
    let id = nightshift::SessionId::from(session.to_string());
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
