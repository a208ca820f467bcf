//! `nightshift usage`: the plan-usage chip, its reset times and the last 24 hours.

use std::path::PathBuf;
use std::process::ExitCode;

use chrono::{DateTime, Duration, Local, Utc};
use nightshift::clock::{Clock, SystemClock};
use nightshift::digest::{hourly, usage_report};
use nightshift::usage::{chip, sparkline};
use nightshift::AgentKind;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the latest sample, the 24 h history and the sparkline as JSON
    #[arg(long)]
    json: bool,
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
    if args.json {
        println!("{}", serde_json::to_string_pretty(&usage_report(&store, now)?)?);
        return Ok(ExitCode::SUCCESS);
    }
    let latest = store.latest_limits(AgentKind::Claude)?;
    let codex = store.latest_limits_by_account(AgentKind::Codex)?;
    if latest.is_none() && codex.is_empty() {
        println!(
            "No plan usage yet. It comes from the Claude Code and Codex sessions that Nightshift runs with a \
             subscription, after their first answer."
        );
        return Ok(ExitCode::SUCCESS);
    }
    let colour = nightshift::logging::colour(&std::io::stdout());
    let show = |row: &nightshift::store::UsageRow| {
        let on = row.account.as_deref().map(|a| format!("account {a}, ")).unwrap_or_default();
        println!("{}   ({on}session {}, {})", chip(&row.sample, colour), row.session, super::local_time(&row.ts));
        println!("  5-hour window resets {}", when(row.sample.five_hour_resets_at, now));
        println!("  7-day window resets  {}", when(row.sample.seven_day_resets_at, now));
    };
    if let Some(latest) = latest {
        if !codex.is_empty() {
            println!("Claude Code:");
        }
        let buckets = hourly(&store.usage(Some(AgentKind::Claude), None, Some(now - Duration::hours(24)))?, now);
        let accounts = store.latest_limits_by_account(AgentKind::Claude)?;
        // One account (the client's default): as it always was. Several: each with its own windows.
        let each =
            if accounts.len() > 1 || accounts.iter().any(|a| a.account.is_some()) { accounts } else { vec![latest] };
        each.iter().for_each(show);
        println!("  last 24 h (5-hour use, hourly): {}", sparkline(&buckets));
    }
    if !codex.is_empty() {
        println!("Codex:");
        codex.iter().for_each(show);
    }
    Ok(ExitCode::SUCCESS)
}
