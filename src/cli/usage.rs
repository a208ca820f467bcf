//! `nightshift usage`: the plan-usage chip, its reset times and the last 24 hours.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use chrono::{DateTime, Duration, Local, Utc};
use nightshift::clock::{Clock, SystemClock};
use nightshift::store::UsageRow;
use nightshift::usage::{chip, sparkline, Band};
use serde_json::json;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the latest sample, the 24 h history and the sparkline as JSON
    #[arg(long)]
    json: bool,
}

/// Hourly buckets over the last 24 h: the highest 5-hour use seen in each.
fn hourly(rows: &[UsageRow], now: DateTime<Utc>) -> Vec<Option<f64>> {
    let start = now - Duration::hours(24);
    let mut buckets = vec![None; 24];
    for row in rows {
        let (Ok(ts), Some(pct)) = (DateTime::parse_from_rfc3339(&row.ts), row.sample.five_hour_pct) else { continue };
        let hour = (ts.with_timezone(&Utc) - start).num_hours();
        if let Some(slot) = usize::try_from(hour).ok().and_then(|h| buckets.get_mut(h)) {
            *slot = Some(slot.map_or(pct, |p: f64| p.max(pct)));
        }
    }
    buckets
}

fn when(t: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    let Some(t) = t else { return "unknown".into() };
    let left = t - now;
    let local = t.with_timezone(&Local);
    let at = if left < Duration::hours(20) {
        local.format("%H:%M").to_string()
    } else {
        local.format("%a %H:%M").to_string()
    };
    if left <= Duration::zero() {
        format!("{at} (passed)")
    } else {
        format!("{at} (in {} h {} min)", left.num_hours(), left.num_minutes() % 60)
    }
}

pub fn run(state_dir: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let (_, store) = super::open_store(state_dir)?;
    let now = SystemClock.now();
    let latest = store.latest_limits()?;
    let history = store.usage(None, Some(now - Duration::hours(24)))?;
    let buckets = hourly(&history, now);
    if args.json {
        let out = json!({
            "latest": latest,
            "chip": latest.as_ref().map(|l| chip(&l.sample, false)),
            "bands": latest.as_ref().map(|l| json!({
                "five_hour": l.sample.five_hour_pct.map(Band::of),
                "seven_day": l.sample.seven_day_pct.map(Band::of),
            })),
            "last_24h_hourly_five_hour_pct": buckets,
            "sparkline": sparkline(&buckets),
            "history": history,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    let Some(latest) = latest else {
        println!(
            "No plan usage yet. It comes from Claude Code sessions that Nightshift runs with a subscription, \
             after their first answer."
        );
        return Ok(ExitCode::SUCCESS);
    };
    let colour = std::io::stdout().is_terminal();
    println!("{}   (session {}, {})", chip(&latest.sample, colour), latest.session, super::local_time(&latest.ts));
    println!("  5-hour window resets {}", when(latest.sample.five_hour_resets_at, now));
    println!("  7-day window resets  {}", when(latest.sample.seven_day_resets_at, now));
    println!("  last 24 h (5-hour use, hourly): {}", sparkline(&buckets));
    Ok(ExitCode::SUCCESS)
}
