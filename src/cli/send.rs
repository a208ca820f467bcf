//! `nightshift send`: type into a session that another Nightshift process runs.

use std::path::PathBuf;
use std::process::ExitCode;

use nightshift::control::Request;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (an id or a unique prefix of one)
    session: String,
    /// The text to type
    text: String,
    /// Press Enter after the text
    #[arg(long)]
    enter: bool,
}

pub fn run(state_dir: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let (_, store) = super::open_store(state_dir)?;
    let row = store.find_session(&args.session)?;
    let request = Request::Send { session: row.id.clone(), text: args.text, enter: args.enter, by: None };
    super::ask(&row, &request)?;
    Ok(ExitCode::SUCCESS)
}
