//! `nightshift breaker reset`: close a session's breakers now, rather than wait for their next try
//! (an open breaker goes half-open after 15, 30, 60, then 120 minutes, and stays open after that).

use std::path::PathBuf;
use std::process::ExitCode;

use nightshift::control::{Request, Response};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Close the session's open breakers; an agent the crash-loop breaker stopped starts again
    Reset {
        /// The session (an id or a unique prefix of one)
        session: String,
    },
}

pub fn run(state_dir: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let Action::Reset { session } = args.action;
    let (_, store) = super::open_store(state_dir)?;
    let row = store.find_session(&session)?;
    match super::ask(&row, &Request::ResetBreaker { session: row.id.clone() })? {
        Response::Reset(said) => println!("session {}: {said}", row.id),
        other => return Err(other.unexpected("the breaker's reset").into()),
    }
    Ok(ExitCode::SUCCESS)
}
