//! `nightshift stop`: end a session that another Nightshift process runs — or, when none runs it
//! (its Nightshift died, or ended while it waited for a limit's reset), end it in the journal so
//! nothing starts it again.

use std::path::PathBuf;
use std::process::ExitCode;

use nightshift::clock::{Clock, SystemClock};
use nightshift::control::Request;
use nightshift::store::Standing;
use nightshift::supervisor::end_orphan;
use nightshift::{Event, SessionId};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (an id or a unique prefix of one)
    session: String,
}

pub fn run(state_dir: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let (_, mut store) = super::open_store(state_dir)?;
    let row = store.find_session(&args.session)?;
    let ended = end_orphan(&mut store, &SystemClock, &row, "nightshift stop")?;
    if let Some((_, said)) = &ended {
        // This command runs no session, so its store is the one writer here, and nobody listens.
        let session = SessionId::from(row.id.clone());
        for kind in said {
            store.record(&Event { ts: SystemClock.now(), session: session.clone(), kind: kind.clone() })?;
        }
    }
    match ended.map(|(standing, _)| standing) {
        Some(Standing::Kept) => println!("session {} will not be resumed: its pending resume is cancelled", row.id),
        Some(Standing::Scheduled) => println!("session {} is cancelled: it will not start", row.id),
        Some(_) => println!("session {} is marked stopped: no Nightshift ran it any more", row.id),
        None => {
            super::ask(&row, &Request::Stop { session: row.id.clone(), source: None })?;
            println!("stopping session {}", row.id);
        }
    }
    Ok(ExitCode::SUCCESS)
}
