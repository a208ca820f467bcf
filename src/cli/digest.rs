//! `nightshift digest`: what happened while you were away, and the morning run summary.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use nightshift::clock::{format_ts, Clock, SystemClock};
use nightshift::digest::{self, Digest, Format, Range, LAST_VIEWED_KEY};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// since-last-viewed (default), 1h, today, 24h, or FROM..TO (RFC 3339 instants)
    #[arg(long, value_name = "RANGE", default_value = "since-last-viewed", value_parser = parse_range)]
    range: Range,
    /// text, markdown or json
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = parse_format)]
    format: Format,
    /// Count this as viewing the digest (the next since-last-viewed starts now)
    #[arg(long)]
    mark_viewed: bool,
    /// Show the latest morning run summary instead
    #[arg(long, conflicts_with_all = ["range", "mark_viewed"])]
    morning: bool,
}

fn parse_range(text: &str) -> Result<Range, String> {
    Ok(match text {
        "since-last-viewed" | "last-viewed" => Range::SinceLastViewed,
        "1h" => Range::LastHour,
        "today" => Range::Today,
        "24h" => Range::Last24h,
        custom => {
            let (from, to) = custom
                .split_once("..")
                .ok_or_else(|| format!("`{custom}`: expected since-last-viewed, 1h, today, 24h or FROM..TO"))?;
            let at = |t: &str| {
                DateTime::parse_from_rfc3339(t.trim())
                    .map(|t| t.with_timezone(&Utc))
                    .map_err(|e| format!("`{t}` is not an RFC 3339 instant (2026-11-30T22:00:00Z): {e}"))
            };
            let (from, to) = (at(from)?, at(to)?);
            if from >= to {
                return Err(format!("the range must start before it ends: {custom}"));
            }
            Range::Custom { from, to }
        }
    })
}

fn parse_format(text: &str) -> Result<Format, String> {
    match text {
        "text" => Ok(Format::Text),
        "markdown" | "md" => Ok(Format::Markdown),
        "json" => Ok(Format::Json),
        other => Err(format!("`{other}`: expected text, markdown or json")),
    }
}

pub fn run(state_dir: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let (_, mut store) = super::open_store(state_dir)?;
    if args.morning {
        let Some(summary) = store.latest_summary()? else {
            println!("No morning run summary yet: the tray app makes one each morning when anything ran.");
            return Ok(ExitCode::SUCCESS);
        };
        match serde_json::from_str::<Digest>(&summary.body) {
            Ok(d) => print!("{}", digest::render(&d, args.format)),
            Err(_) => println!("{} ({})", summary.headline, super::local_time(&summary.scheduled_for)),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let now = SystemClock.now();
    let last_viewed =
        store.meta(LAST_VIEWED_KEY)?.and_then(|t| DateTime::parse_from_rfc3339(&t).ok()).map(|t| t.with_timezone(&Utc));
    let (from, to) = args.range.bounds(now, last_viewed);
    let d = digest::build(&store, from, to)?;
    print!("{}", digest::render(&d, args.format));
    if args.mark_viewed {
        store.set_meta(LAST_VIEWED_KEY, &format_ts(now)).context("could not record the view")?;
    }
    Ok(ExitCode::SUCCESS)
}
