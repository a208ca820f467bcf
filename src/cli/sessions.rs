//! `nightshift sessions`: one line per session in the journal.

use std::path::PathBuf;
use std::process::ExitCode;

use nightshift::pty::shell_words;
use nightshift::store::{SessionRow, SessionSummary};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print a JSON array instead of a table
    #[arg(long)]
    json: bool,
}

pub fn run(state_dir: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let (_, store) = super::open_store(state_dir)?;
    let rows = store.sessions()?;
    if args.json {
        let listed: Vec<SessionSummary> = rows.into_iter().map(SessionSummary::from).collect();
        println!("{}", serde_json::to_string_pretty(&listed)?);
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        println!("No sessions yet. Start one with: nightshift run -- claude");
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", table(&rows));
    Ok(ExitCode::SUCCESS)
}

fn table(rows: &[SessionRow]) -> String {
    let header = ["ID", "AGENT", "STATE", "CWD", "STARTED", "LAST EVENT", "COMMAND"].map(String::from);
    let mut lines = vec![header.to_vec()];
    for row in rows {
        lines.push(vec![
            row.id.clone(),
            row.agent.clone(),
            row.shown_state(),
            row.cwd.clone(),
            super::local_time(&row.created),
            format!("{} {}", row.last_event, super::local_time(&row.last_event_at)),
            truncate(&shell_words(&row.command), 40),
        ]);
    }
    let widths: Vec<usize> =
        (0..header.len()).map(|i| lines.iter().map(|l| l[i].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for line in lines {
        let cells: Vec<String> =
            line.iter().zip(&widths).map(|(cell, width)| format!("{cell:<width$}", width = *width)).collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max - 1).collect::<String>())
    }
}
