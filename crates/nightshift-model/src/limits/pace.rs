//! Pacing the night: a plan for the quota instead of a threshold. A **morning reserve** keeps a share
//! of the 5-hour window free for the user at a time they set ("20% at 08:30"); a **weekly pace**
//! spends at most n/7 of the weekly window by its day n, plus a slack. Work parks (no new cycle or
//! iteration, never mid-turn) until the window resets or the next day of the week allows more. A
//! pure decision: the settings, a usage sample of the account, the clock and the time zone in.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Duration, NaiveTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};

use crate::usage::Sample;

/// How long the plan's 5-hour window lasts.
const FIVE_HOURS: Duration = Duration::hours(5);
const WEEK: Duration = Duration::days(7);

/// Keep `pct` of the 5-hour window free at `at`, local time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MorningReserve {
    pub pct: f64,
    pub at: NaiveTime,
}

impl FromStr for MorningReserve {
    type Err = String;

    /// `20% at 08:30`, or `20@08:30`.
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}` is not a morning reserve: write the share and the time, as `20% at 08:30`");
        let (pct, at) = s.split_once(" at ").or_else(|| s.split_once('@')).ok_or_else(bad)?;
        let pct: f64 = pct.trim().trim_end_matches('%').trim().parse().map_err(|_| bad())?;
        if !(pct > 0.0 && pct < 100.0) {
            return Err(format!("a morning reserve of {pct}% is not between 0 and 100: keep, say, `20% at 08:30`"));
        }
        let at = NaiveTime::parse_from_str(at.trim(), "%H:%M").map_err(|_| bad())?;
        Ok(MorningReserve { pct, at })
    }
}

impl fmt::Display for MorningReserve {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}% at {}", self.pct, self.at.format("%H:%M"))
    }
}

impl Serialize for MorningReserve {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MorningReserve {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// How a night paces its spend; off unless set (`[pace]` in config.toml, or `run`/`loop` flags).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PaceSettings {
    /// Keep this share of the 5-hour window free for the morning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub morning_reserve: Option<MorningReserve>,
    /// Spend at most n/7 of the weekly window by its day n, plus this many points.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "slack")]
    pub weekly_pace: Option<f64>,
}

/// A weekly pace's slack: points of the week, from 0 to 100.
fn slack<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let points = f64::deserialize(d)?;
    if !(points.is_finite() && (0.0..=100.0).contains(&points)) {
        return Err(serde::de::Error::custom(format!(
            "a weekly pace's slack is points of the week above n/7, from 0 to 100, not {points}"
        )));
    }
    Ok(Some(points))
}

impl PaceSettings {
    pub fn is_off(&self) -> bool {
        self.morning_reserve.is_none() && self.weekly_pace.is_none()
    }

    /// For people, what is kept.
    pub fn describe(&self) -> Option<String> {
        let mut out = Vec::new();
        if let Some(r) = self.morning_reserve {
            out.push(format!("keeps {}% of the 5-hour window for {}", r.pct, r.at.format("%H:%M")));
        }
        if let Some(slack) = self.weekly_pace {
            out.push(format!("spends at most n/7 of the week by its day n, plus {slack} points"));
        }
        (!out.is_empty()).then(|| out.join("; "))
    }
}

/// Which pace parks the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PaceKind {
    MorningReserve,
    WeeklyPace,
}

/// What the pace says of starting more work now.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Go,
    /// Start nothing new until `until`, for `reason`.
    Park {
        until: DateTime<Utc>,
        kind: PaceKind,
        reason: String,
    },
}

/// Where the pace parked the work, followed from one decision to the next.
#[derive(Debug, Clone, PartialEq)]
pub struct Parking {
    pub until: DateTime<Utc>,
    pub kind: PaceKind,
    pub reason: String,
}

/// What changed between two decisions, to journal.
#[derive(Debug, Clone, PartialEq)]
pub enum Turn {
    /// Parked now, or parked until a new time.
    Parked(Parking),
    /// The park of this kind ended: the work may go on.
    Ended(PaceKind),
}

impl Parking {
    /// Why a park ends, in the journal.
    pub const ENDED: &'static str = "the window reset, or the pace allows more now";

    /// Follows `parked` to `verdict`: what changed, if anything.
    pub fn follow(parked: &mut Option<Parking>, verdict: Verdict) -> Option<Turn> {
        match verdict {
            Verdict::Park { until, kind, reason } => {
                let moved = parked.as_ref().is_none_or(|p| p.until != until);
                let now = Parking { until, kind, reason };
                *parked = Some(now.clone());
                moved.then_some(Turn::Parked(now))
            }
            Verdict::Go => parked.take().map(|p| Turn::Ended(p.kind)),
        }
    }
}

/// `at` (local time in `tz`) on the day of `t`, and the day before and after.
fn mornings<Z: TimeZone>(t: DateTime<Utc>, at: NaiveTime, tz: &Z) -> Vec<DateTime<Utc>> {
    let day = t.with_timezone(tz).date_naive();
    [day - Duration::days(1), day, day + Duration::days(1)]
        .into_iter()
        .filter_map(|d| tz.from_local_datetime(&d.and_time(at)).earliest().map(|m| m.with_timezone(&Utc)))
        .collect()
}

/// Whether more work may start now by `settings`, from the account's latest `sample`.
pub fn decide<Z: TimeZone>(settings: &PaceSettings, sample: &Sample, now: DateTime<Utc>, tz: &Z) -> Verdict {
    let mut parks = Vec::new();
    // The morning reserve: in the 5-hour window that holds the morning (it opened at most five
    // hours before its reset), work stops at 100 - pct until that window resets.
    if let (Some(reserve), Some(used), Some(reset)) =
        (settings.morning_reserve, sample.five_hour_pct, sample.five_hour_resets_at)
    {
        let holds = |m: &DateTime<Utc>| reset - FIVE_HOURS <= *m && *m < reset;
        if reset > now && used >= 100.0 - reserve.pct && mornings(now, reserve.at, tz).iter().any(holds) {
            parks.push(Verdict::Park {
                until: reset,
                kind: PaceKind::MorningReserve,
                reason: format!(
                    "to keep {}% of the 5-hour window for the morning ({}): it is at {used:.0}%",
                    reserve.pct,
                    reserve.at.format("%H:%M")
                ),
            });
        }
    }
    // The weekly pace: by day n (1 to 7) of the window, n/7 of it plus the slack.
    if let (Some(slack), Some(used), Some(reset)) =
        (settings.weekly_pace, sample.seven_day_pct, sample.seven_day_resets_at)
    {
        let start = reset - WEEK;
        let allowed = |day: i64| day as f64 / 7.0 * 100.0 + slack;
        let today = ((now - start).num_seconds().max(0) / 86_400 + 1).clamp(1, 7);
        if reset > now && used >= allowed(today) {
            let day = (today + 1..=7).find(|d| allowed(*d) > used);
            let until = day.map_or(reset, |d| start + Duration::days(d - 1)).min(reset);
            parks.push(Verdict::Park {
                until,
                kind: PaceKind::WeeklyPace,
                reason: format!(
                    "to keep the weekly pace: day {today} of the week allows {:.0}%, and {used:.0}% is spent",
                    allowed(today).min(100.0)
                ),
            });
        }
    }
    // The later wait wins: work may start only when neither holds it.
    parks
        .into_iter()
        .max_by_key(|v| match v {
            Verdict::Park { until, .. } => *until,
            Verdict::Go => now,
        })
        .unwrap_or(Verdict::Go)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn five(pct: f64, reset: &str) -> Sample {
        Sample { five_hour_pct: Some(pct), five_hour_resets_at: Some(t(reset)), ..Sample::default() }
    }

    fn reserve() -> PaceSettings {
        PaceSettings { morning_reserve: Some("20% at 08:30".parse().unwrap()), weekly_pace: None }
    }

    #[test]
    fn a_backlog_that_would_drain_the_window_by_six_parks_to_keep_the_reserve_at_half_past_eight() {
        // The window opened at 04:00 and resets at 09:00: it holds 08:30. Burning 20 %/h from 10 %
        // at 04:30, it would be empty at 09:00... by 06:00 at 40 %/h. At 80 % the work parks.
        let s = reserve();
        assert_eq!(decide(&s, &five(60.0, "2026-12-05T09:00:00Z"), t("2026-12-05T05:10:00Z"), &Utc), Verdict::Go);
        let parked = decide(&s, &five(80.0, "2026-12-05T09:00:00Z"), t("2026-12-05T05:40:00Z"), &Utc);
        let Verdict::Park { until, kind, reason } = parked else { panic!("{parked:?}") };
        assert_eq!((until, kind), (t("2026-12-05T09:00:00Z"), PaceKind::MorningReserve));
        assert_eq!(reason, "to keep 20% of the 5-hour window for the morning (08:30): it is at 80%");
        // Past 08:30 the window still holds the morning: the reserve is the user's until it resets.
        assert!(matches!(
            decide(&s, &five(85.0, "2026-12-05T09:00:00Z"), t("2026-12-05T08:45:00Z"), &Utc),
            Verdict::Park { .. }
        ));
        // A window that resets at 06:20, before the morning, is the night's to spend.
        assert_eq!(decide(&s, &five(95.0, "2026-12-05T06:20:00Z"), t("2026-12-05T05:40:00Z"), &Utc), Verdict::Go);
        // Off by default.
        assert_eq!(
            decide(&PaceSettings::default(), &five(99.0, "2026-12-05T09:00:00Z"), t("2026-12-05T05:40:00Z"), &Utc),
            Verdict::Go
        );
    }

    #[test]
    fn the_weekly_pace_holds_on_day_two_of_a_week_already_half_spent() {
        let s = PaceSettings { morning_reserve: None, weekly_pace: Some(5.0) };
        // The week began Thursday 10:00 and resets next Thursday 10:00; it is Friday 14:00: day 2.
        let week = |pct| Sample {
            seven_day_pct: Some(pct),
            seven_day_resets_at: Some(t("2026-12-10T10:00:00Z")),
            ..Sample::default()
        };
        let now = t("2026-12-04T14:00:00Z");
        let parked = decide(&s, &week(50.0), now, &Utc);
        let Verdict::Park { until, kind, reason } = parked else { panic!("{parked:?}") };
        assert_eq!(kind, PaceKind::WeeklyPace);
        assert_eq!(reason, "to keep the weekly pace: day 2 of the week allows 34%, and 50% is spent");
        // Day 3 allows 47.9 %, day 4 62.1 %: it waits for day 4, which begins Sunday 10:00.
        assert_eq!(until, t("2026-12-06T10:00:00Z"));
        assert_eq!(decide(&s, &week(30.0), now, &Utc), Verdict::Go, "on pace");
    }

    #[test]
    fn a_reserve_is_written_as_a_share_at_a_time() {
        let r: MorningReserve = "20% at 08:30".parse().unwrap();
        assert_eq!((r.pct, r.at), (20.0, NaiveTime::from_hms_opt(8, 30, 0).unwrap()));
        assert_eq!("15@07:00".parse::<MorningReserve>().unwrap().to_string(), "15% at 07:00");
        assert_eq!(
            "eight".parse::<MorningReserve>().unwrap_err(),
            "`eight` is not a morning reserve: write the share and the time, as `20% at 08:30`"
        );
        assert!("120% at 08:00".parse::<MorningReserve>().unwrap_err().contains("not between 0 and 100"));
    }

    #[test]
    fn the_settings_read_from_toml_and_a_bad_one_says_why() {
        let s: PaceSettings = toml::from_str("morning_reserve = \"20% at 08:30\"\nweekly_pace = 5\n").unwrap();
        assert_eq!(
            s.describe().unwrap(),
            "keeps 20% of the 5-hour window for 08:30; spends at most n/7 of the week by its day n, plus 5 points"
        );
        let bad = toml::from_str::<PaceSettings>("weekly_pace = -3\n").unwrap_err().to_string();
        assert!(bad.contains("from 0 to 100, not -3"), "{bad}");
        let bad = toml::from_str::<PaceSettings>("morning_reserve = \"soon\"\n").unwrap_err().to_string();
        assert!(bad.contains("`soon` is not a morning reserve"), "{bad}");
        assert!(toml::from_str::<PaceSettings>("").unwrap().is_off(), "off by default");
    }
}
