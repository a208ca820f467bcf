//! `nightshift journal`: the events, oldest first.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use nightshift::clock::{Clock, SystemClock};
use nightshift::store::{EventQuery, StoredEvent};
use nightshift::Event;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this session (an id or a unique prefix of one)
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// Only events newer than this (`30s`, `10m`, `2h`, `1day`, `1h 30m`)
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    since: Option<std::time::Duration>,
    /// Print the events as JSON lines, exactly as `nightshift run --events` writes them
    #[arg(long)]
    json: bool,
}

pub fn run(state_dir: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let (_, store) = super::open_store(state_dir)?;
    let session = match &args.session {
        Some(prefix) => Some(store.find_session(prefix)?.id),
        None => None,
    };
    let since = match args.since {
        Some(d) => Some(SystemClock.now() - chrono::Duration::from_std(d).context("--since is too long")?),
        None => None,
    };
    let events = store.events(&EventQuery { session, since, ..Default::default() })?;
    for event in &events {
        if args.json {
            println!("{}", event.body);
        } else {
            println!("{}", line(event));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One event as a person reads it: the words the window shows too.
fn line(event: &StoredEvent) -> String {
    let what = match serde_json::from_str::<Event>(&event.body) {
        Ok(ev) => ev.kind.describe(&chrono::Local),
        // A row this version cannot read (a newer Nightshift's): as it is.
        Err(_) => event.body.clone(),
    };
    let ts = chrono::DateTime::parse_from_rfc3339(&event.ts)
        .map(|t| t.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M:%S%.3f").to_string())
        .unwrap_or_else(|_| event.ts.clone());
    // What an agent wrote (a dialog's question, a refused command) prints, and does not act.
    let what = nightshift::screen::printable(&what);
    format!("{ts}  {}  {:<14} {what}", event.session, event.event)
}
