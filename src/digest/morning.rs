//! The morning run summary: at 08:00 local time ([`Morning::default`]; no setting changes it), when
//! anything ran since the last summary, the digest since then is made, stored and announced. A
//! morning missed while the machine slept is made at the next check after it wakes; the journal's
//! unique key on the morning keeps two Nightshift processes from making it twice.

use chrono::{DateTime, Duration, NaiveTime, TimeZone, Utc};

use super::{build, Digest};
use crate::clock::format_ts;
use crate::store::{Store, StoreError, SummaryRow};

/// Where "last viewed" is kept (`meta` table), for the since-last-viewed range.
pub const LAST_VIEWED_KEY: &str = "digest.last_viewed";

/// The latest scheduled morning at or before `now` that has no summary yet (`last` is the newest
/// summary's morning), in the zone `tz`.
pub fn due_morning<Z: TimeZone>(
    at: NaiveTime,
    now: DateTime<Utc>,
    last: Option<DateTime<Utc>>,
    tz: &Z,
) -> Option<DateTime<Utc>> {
    let local_now = now.with_timezone(tz);
    let scheduled_on = |date: chrono::NaiveDate| {
        // A time that does not exist that day (a DST gap) is taken an hour later.
        let naive = date.and_time(at);
        tz.from_local_datetime(&naive)
            .earliest()
            .or_else(|| tz.from_local_datetime(&(naive + Duration::hours(1))).earliest())
            .map(|t| t.with_timezone(&Utc))
    };
    let today = local_now.date_naive();
    let mut scheduled = scheduled_on(today)?;
    if scheduled > now {
        scheduled = scheduled_on(today.pred_opt()?)?;
    }
    if last.is_some_and(|l| l >= scheduled) {
        return None;
    }
    Some(scheduled)
}

/// What a check did.
#[derive(Debug)]
pub enum MorningOutcome {
    /// A summary was made and stored: announce it.
    Made { headline: String, digest: Box<Digest> },
    /// Nothing ran since the last summary: stored as such, nothing to announce.
    NothingRan,
    /// Another Nightshift process made this morning's summary first.
    MadeElsewhere,
}

/// The morning summary's schedule: the tray app makes it at the default, 08:00 local time.
#[derive(Debug, Clone, Copy)]
pub struct Morning {
    pub at: NaiveTime,
}

impl Default for Morning {
    fn default() -> Self {
        Self { at: NaiveTime::from_hms_opt(8, 0, 0).expect("08:00") }
    }
}

impl Morning {
    /// Makes the summary if one is due at `now`.
    pub fn check<Z: TimeZone>(
        &self,
        store: &mut Store,
        now: DateTime<Utc>,
        tz: &Z,
    ) -> Result<Option<MorningOutcome>, StoreError> {
        let last = store.latest_summary()?;
        let parse = |t: &str| DateTime::parse_from_rfc3339(t).ok().map(|t| t.with_timezone(&Utc));
        let last_morning = last.as_ref().and_then(|l| parse(&l.scheduled_for));
        let Some(scheduled) = due_morning(self.at, now, last_morning, tz) else { return Ok(None) };
        let from = last.as_ref().and_then(|l| parse(&l.to_ts)).unwrap_or(scheduled - Duration::hours(24));
        let ran = store.any_events_between(from, now)?;
        let (headline, body, digest) = if ran {
            let mut digest = build(store, from, now)?;
            if let Some(state_dir) = store.path().and_then(|p| p.parent()) {
                digest.informational.extend(clients(&digest, state_dir));
            }
            (digest.headline(), serde_json::to_string(&digest).expect("digests serialise"), Some(digest))
        } else {
            ("nothing ran".to_string(), "{}".to_string(), None)
        };
        let row = SummaryRow {
            scheduled_for: format_ts(scheduled),
            created_at: format_ts(now),
            from_ts: format_ts(from),
            to_ts: format_ts(now),
            headline: headline.clone(),
            body,
        };
        if !store.insert_summary(&row)? {
            return Ok(Some(MorningOutcome::MadeElsewhere));
        }
        Ok(Some(match digest {
            Some(digest) => MorningOutcome::Made { headline, digest: Box::new(digest) },
            None => MorningOutcome::NothingRan,
        }))
    }
}

/// What the morning says of the clients the night's sessions ran: a newer one installed, one the
/// canary never ran, or one it failed on (see [`crate::agent::canary::morning_note`]).
fn clients(digest: &Digest, state_dir: &std::path::Path) -> Vec<String> {
    use crate::agent::canary::{morning_note, Standing};
    use crate::agent::AgentKind;
    [AgentKind::Claude, AgentKind::Codex]
        .into_iter()
        .filter(|agent| digest.sessions.iter().any(|s| s.agent == agent.as_str()))
        .filter_map(|agent| morning_note(agent, Standing::installed(agent, state_dir)?, state_dir))
        .collect()
}

/// How often the wall clock is looked at: a morning passed while the machine slept is made within
/// this long of waking.
pub const CHECK_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// Checks for a due morning now and every [`CHECK_EVERY`] after, against the wall `clock` (never a
/// long monotonic sleep, which stops while a laptop is suspended); `made` is told each new summary.
pub async fn run_mornings<Z: TimeZone + Send + Sync>(
    mut store: Store,
    clock: std::sync::Arc<dyn crate::clock::Clock>,
    morning: Morning,
    tz: Z,
    made: impl Fn(&str, &Digest) + Send,
) {
    loop {
        match morning.check(&mut store, clock.now(), &tz) {
            Ok(Some(MorningOutcome::Made { headline, digest })) => {
                tracing::info!("morning run summary: {headline}");
                made(&headline, &digest);
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("could not make the morning summary: {e}"),
        }
        tokio::time::sleep(CHECK_EVERY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::FixedOffset;

    fn at(h: u32) -> NaiveTime {
        NaiveTime::from_hms_opt(h, 0, 0).unwrap()
    }

    #[test]
    fn the_due_morning_is_the_last_one_passed_without_a_summary() {
        let tz = FixedOffset::east_opt(3600).unwrap(); // 08:00 local is 07:00 UTC
        let day1_0659 = Utc.with_ymd_and_hms(2026, 12, 1, 6, 59, 0).unwrap();
        let day1_0700 = Utc.with_ymd_and_hms(2026, 12, 1, 7, 0, 0).unwrap();
        assert_eq!(
            due_morning(at(8), day1_0659, None, &tz),
            Some(day1_0700 - Duration::days(1)),
            "yesterday's, never made"
        );
        assert_eq!(due_morning(at(8), day1_0659, Some(day1_0700 - Duration::days(1)), &tz), None);
        assert_eq!(due_morning(at(8), day1_0700, Some(day1_0700 - Duration::days(1)), &tz), Some(day1_0700));
        assert_eq!(due_morning(at(8), day1_0700 + Duration::hours(3), Some(day1_0700), &tz), None);
        // Asleep for two days: only the latest morning is due, once.
        let day3_1000 = day1_0700 + Duration::days(2) + Duration::hours(3);
        assert_eq!(due_morning(at(8), day3_1000, Some(day1_0700), &tz), Some(day1_0700 + Duration::days(2)));
    }
}
