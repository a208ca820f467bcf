//! `nightshift log SESSION`: what a session did. A loop's iterations are read back from the streams
//! it kept, as a person reads them: the agent's words, the tools it called and what came back
//! (`--iteration N`). A terminal session's lives from their recordings: what the screen showed,
//! scrolled (`--life N`).

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use nightshift::loops::{loop_dir, stream, stream_file};
use nightshift::screen::printable;
use nightshift::store::{EventQuery, SessionKind};
use nightshift::{Event, EventKind};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session or loop (an id or a unique prefix)
    #[arg(value_name = "SESSION")]
    session: String,
    /// A loop's: only this iteration (its every attempt)
    #[arg(long, value_name = "N")]
    iteration: Option<u32>,
    /// A terminal session's: only this life (the agent's first run is life 1, each restart one more)
    #[arg(long, value_name = "N")]
    life: Option<u32>,
}

/// A terminal session's recorded lives, as text.
fn lives(state_dir: &std::path::Path, id: &str, only: Option<u32>) -> anyhow::Result<ExitCode> {
    let lives = nightshift::record::lives(state_dir, id);
    let chosen: Vec<_> = lives.iter().filter(|(n, _)| only.is_none_or(|o| o == *n)).collect();
    if chosen.is_empty() {
        match only {
            Some(n) => anyhow::bail!("session {id} has no recorded life {n} ({} recorded)", lives.len()),
            None => println!("session {id} has no recording (sessions record from this version on)"),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    for (n, path) in chosen {
        writeln!(out, "── life {n} — {}", path.display())?;
        let text = nightshift::record::text(path).with_context(|| format!("cannot read {}", path.display()))?;
        out.write_all(nightshift::screen::printable(&text).as_bytes())?;
        writeln!(out)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run(state_dir: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let (paths, store) = super::open_store(state_dir)?;
    let row = store.find_session(&args.session)?;
    if row.kind != SessionKind::Loop {
        if args.iteration.is_some() {
            anyhow::bail!("session {} is not a loop; a terminal session has lives: --life N", row.id);
        }
        return lives(&paths.state_dir, &row.id, args.life);
    }
    let dir = loop_dir(&paths.state_dir, &row.id);
    let events = store.events(&EventQuery { session: Some(row.id.clone()), ..EventQuery::default() })?;
    let mut out = std::io::stdout().lock();
    let mut shown = 0;
    for stored in events {
        let Ok(event) = serde_json::from_str::<Event>(&stored.body) else { continue };
        match &event.kind {
            EventKind::IterationStarted { iteration, attempt, probe, .. } => {
                if args.iteration.is_some_and(|n| n != *iteration) {
                    continue;
                }
                shown += 1;
                writeln!(
                    out,
                    "── {} — {}",
                    super::local_time(&stored.ts),
                    printable(&event.kind.describe(&chrono::Local))
                )?;
                let file = stream_file(&dir, *iteration, *attempt, *probe);
                print_stream(&mut out, &file)?;
            }
            EventKind::IterationEnded { iteration, .. } if args.iteration.is_none_or(|n| n == *iteration) => {
                writeln!(
                    out,
                    "── {} — {}",
                    super::local_time(&stored.ts),
                    printable(&event.kind.describe(&chrono::Local))
                )?;
                writeln!(out)?;
            }
            EventKind::TaskDone { .. } | EventKind::LoopWait { .. } | EventKind::SpendUnknown { .. }
                if args.iteration.is_none() =>
            {
                writeln!(
                    out,
                    "   {} — {}",
                    super::local_time(&stored.ts),
                    printable(&event.kind.describe(&chrono::Local))
                )?;
            }
            _ => {}
        }
    }
    if shown == 0 {
        match args.iteration {
            Some(n) => anyhow::bail!("loop {} has no iteration {n}", row.id),
            None => println!("loop {} has not started an iteration yet", row.id),
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_stream(out: &mut impl Write, file: &std::path::Path) -> anyhow::Result<()> {
    let opened = match std::fs::File::open(file) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            writeln!(out, "   (its stream was not kept: {} is missing)", file.display())?;
            return Ok(());
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
    };
    // A stream cut short (a killed Nightshift) reads up to where it was written.
    let lines = BufReader::new(flate2::read::GzDecoder::new(opened)).split(b'\n');
    for line in lines {
        let Ok(line) = line else { break };
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&line) else { continue };
        for said in stream::readable(&v) {
            writeln!(out, "   {}", printable(&said))?;
        }
    }
    let stderr = file.with_extension("").with_extension("stderr");
    if let Ok(text) = std::fs::read_to_string(&stderr) {
        let tail: Vec<&str> = text.lines().rev().take(5).collect();
        for line in tail.into_iter().rev() {
            writeln!(out, "   ! {}", printable(line))?;
        }
    }
    Ok(())
}
