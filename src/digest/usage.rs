//! The plan-usage report that `nightshift usage --json` prints and the app's chip reads: the latest
//! sample from the journal, the chip, the bands, and the last 24 hours. The chip is Claude's plan;
//! Codex's windows come beside it, each client's apart (a limit of one never pauses the other).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::agent::AgentKind;
use crate::store::{Store, StoreError, UsageRow};
use crate::usage::{chip, sparkline, Band};

/// Hourly buckets over the 24 h before `now`: the highest 5-hour use seen in each.
pub fn hourly(rows: &[UsageRow], now: DateTime<Utc>) -> Vec<Option<f64>> {
    let start = now - chrono::Duration::hours(24);
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

/// The usage report `nightshift usage --json` prints and the app's chip reads: the latest sample,
/// the chip, the bands (the chip's own and each hour's: the window copies no threshold), the last
/// 24 h hourly and as a sparkline, the history, and each account's latest windows.
pub fn usage_report(store: &Store, now: DateTime<Utc>) -> Result<Value, StoreError> {
    let latest = store.latest_limits(AgentKind::Claude)?;
    let codex = store.latest_limits(AgentKind::Codex)?;
    let history = store.usage(Some(AgentKind::Claude), None, Some(now - chrono::Duration::hours(24)))?;
    let buckets = hourly(&history, now);
    Ok(serde_json::json!({
        "latest": latest,
        "chip": latest.as_ref().map(|l| chip(&l.sample, false)),
        "bands": latest.as_ref().map(|l| serde_json::json!({
            "five_hour": l.sample.five_hour_pct.map(Band::of),
            "seven_day": l.sample.seven_day_pct.map(Band::of),
        })),
        // The chip's colour: the band of the more used window.
        "band": latest.as_ref().and_then(|l| Band::of_sample(&l.sample)),
        "last_24h_hourly_five_hour_pct": buckets,
        // Each hour's band, for the bars drawn of it (null: no reading that hour).
        "last_24h_hourly_five_hour_band": buckets.iter().map(|b| b.map(Band::of)).collect::<Vec<_>>(),
        "sparkline": sparkline(&buckets),
        "history": history,
        // Each account's newest windows (the client's default account without a name), newest first.
        "accounts": accounts(store, AgentKind::Claude)?,
        // Codex's plan, apart: its newest windows and each of its accounts'.
        "codex": {
            "chip": codex.as_ref().map(|l| chip(&l.sample, false)),
            "band": codex.as_ref().and_then(|l| Band::of_sample(&l.sample)),
            "latest": codex,
            "accounts": accounts(store, AgentKind::Codex)?,
        },
    }))
}

/// `agent`'s accounts' newest windows, each labelled with its agent and account.
fn accounts(store: &Store, agent: AgentKind) -> Result<Vec<Value>, StoreError> {
    Ok(store
        .latest_limits_by_account(agent)?
        .iter()
        .map(|a| {
            serde_json::json!({
                "agent": a.agent,
                "account": a.account,
                "chip": chip(&a.sample, false),
                "latest": a,
            })
        })
        .collect())
}
