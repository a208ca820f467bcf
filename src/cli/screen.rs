//! `nightshift screen`: what a running session shows now.

use std::path::PathBuf;
use std::process::ExitCode;

use nightshift::control::{Request, Response};

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
    let screen = match super::ask(&row, &Request::Screen { session: row.id.clone() })? {
        Response::Screen(screen) => screen,
        other => return Err(other.unexpected("the screen").into()),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&screen)?);
    } else {
        println!("{}", screen.text());
    }
    Ok(ExitCode::SUCCESS)
}
