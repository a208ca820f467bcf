//! `nightshift stop`: end a session that another Nightshift process runs.

use std::path::PathBuf;
use std::process::ExitCode;

use nightshift::control::Request;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (an id or a unique prefix of one)
    session: String,
}

pub fn run(state_dir: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let (_, store) = super::open_store(state_dir)?;
    let row = store.find_session(&args.session)?;
    super::ask(&row, &Request::Stop { session: row.id.clone(), source: None })?;
    println!("stopping session {}", row.id);
    Ok(ExitCode::SUCCESS)
}
