//! `nightshift restore`: for a machine without the tray app. Sessions whose Nightshift ended while
//! they waited for a usage limit's reset — a logout or reboot, a killed `nightshift run` — are
//! started again (Claude with `--continue`), paused on their limit with their resume re-armed, and
//! supervised here in the foreground until they end. The app does the same when it starts.

use std::path::PathBuf;
use std::process::ExitCode;

use nightshift::logging::{self, Stderr};
use nightshift::paths::Paths;
use nightshift::store::Store;

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
    super::runtime()?.block_on(async move {
        let host = super::run::host(&paths, store, events, guard);
        let restored = host.supervisor.restore_pending();
        if restored.is_empty() {
            println!("Nothing to restore: no session was waiting for a usage limit's reset.");
            return Ok(ExitCode::SUCCESS);
        }
        for handle in &restored {
            let due = handle.status().options.resume_due.map_or_else(
                || "as soon as its limit has reset".to_string(),
                |due| format!("at {}", due.with_timezone(&chrono::Local).format("%a %H:%M")),
            );
            println!("Restored session {}: it resumes {due}.", handle.id());
        }
        super::run::stop_on_signals(&restored, true)?;
        for handle in &restored {
            handle.wait().await;
        }
        host.finish().await;
        Ok(ExitCode::SUCCESS)
    })
}
