//! `nightshift screen`: what a running session shows now.

use std::path::PathBuf;
use std::process::ExitCode;

use nightshift::control::Request;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (an id or a unique prefix of one)
    session: String,
    /// Print the snapshot as JSON (rows, cursor, title, colours)
    #[arg(long)]
    json: bool,
}

pub fn run(state_dir: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let (_, store) = super::open_store(state_dir)?;
    let row = store.find_session(&args.session)?;
    let response = super::ask(&row, &Request::Screen { session: row.id.clone() })?;
    let screen = response.screen.ok_or_else(|| anyhow::anyhow!("the session's process sent no screen"))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&screen)?);
    } else {
        println!("{}", screen.text());
    }
    Ok(ExitCode::SUCCESS)
}
