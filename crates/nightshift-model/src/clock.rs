//! Wall-clock time as an input: the [`Clock`] a decision is given, never the system's own (this
//! crate's `chrono` has no clock; the runtime's `SystemClock` reads it).
//!
//! Durations (quiet windows, grace periods, back-off) use tokio time so tests can pause it; wall-clock
//! instants (event timestamps, "resets at 3pm") come from a [`Clock`] so tests can set and jump them.

use std::fmt;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, FixedOffset, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeZone, Utc};

/// A source of wall-clock time.
pub trait Clock: Send + Sync + fmt::Debug {
    fn now(&self) -> DateTime<Utc>;
}

/// Offsets of a time zone, as a [`Zone`] asks them: any `chrono` zone is one (the runtime's
/// `chrono::Local`, a `chrono_tz` zone, a fixed offset).
pub trait Offsets: Send + Sync + fmt::Debug {
    /// The zone's offset at `utc`.
    fn of_utc(&self, utc: &NaiveDateTime) -> FixedOffset;
    /// The zone's offsets at the local time `local` (none in a gap, two in a fold).
    fn of_local(&self, local: &NaiveDateTime) -> LocalResult<FixedOffset>;
}

impl<Z> Offsets for Z
where
    Z: TimeZone + Send + Sync + fmt::Debug,
{
    fn of_utc(&self, utc: &NaiveDateTime) -> FixedOffset {
        self.offset_from_utc_datetime(utc).fix()
    }

    fn of_local(&self, local: &NaiveDateTime) -> LocalResult<FixedOffset> {
        self.offset_from_local_datetime(local).map(|o| o.fix())
    }
}

/// The user's time zone, given to the decisions that read or say a local time ("resets 3pm", a
/// morning reserve at 07:00) as an input, like the time: the runtime gives the system's, a test a
/// zone of its own. A `chrono` [`TimeZone`], with its daylight saving.
#[derive(Clone)]
pub struct Zone(Arc<dyn Offsets>);

impl Zone {
    pub fn new(zone: impl Offsets + 'static) -> Self {
        Self(Arc::new(zone))
    }

    /// UTC, for tests and for a machine with no zone of its own.
    pub fn utc() -> Self {
        Self::new(Utc)
    }
}

impl fmt::Debug for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A [`Zone`]'s offset at one instant (it carries the zone, so a local time formats as the zone's).
#[derive(Clone, Debug)]
pub struct ZoneOffset {
    fixed: FixedOffset,
    zone: Zone,
}

impl Offset for ZoneOffset {
    fn fix(&self) -> FixedOffset {
        self.fixed
    }
}

impl fmt::Display for ZoneOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fixed.fmt(f)
    }
}

impl TimeZone for Zone {
    type Offset = ZoneOffset;

    fn from_offset(offset: &ZoneOffset) -> Self {
        offset.zone.clone()
    }

    fn offset_from_local_date(&self, local: &NaiveDate) -> LocalResult<ZoneOffset> {
        self.offset_from_local_datetime(&local.and_time(NaiveTime::MIN))
    }

    fn offset_from_local_datetime(&self, local: &NaiveDateTime) -> LocalResult<ZoneOffset> {
        self.0.of_local(local).map(|fixed| ZoneOffset { fixed, zone: self.clone() })
    }

    fn offset_from_utc_date(&self, utc: &NaiveDate) -> ZoneOffset {
        self.offset_from_utc_datetime(&utc.and_time(NaiveTime::MIN))
    }

    fn offset_from_utc_datetime(&self, utc: &NaiveDateTime) -> ZoneOffset {
        ZoneOffset { fixed: self.0.of_utc(utc), zone: self.clone() }
    }
}

/// A clock that only moves when told to; for tests of wall-clock behaviour.
#[derive(Debug, Clone)]
pub struct FakeClock {
    now: Arc<Mutex<DateTime<Utc>>>,
}

impl FakeClock {
    pub fn new(start: DateTime<Utc>) -> Self {
        Self { now: Arc::new(Mutex::new(start)) }
    }

    pub fn set(&self, to: DateTime<Utc>) {
        *self.now.lock().unwrap_or_else(|e| e.into_inner()) = to;
    }

    /// The fake time now (the same as [`Clock::now`], without importing the trait).
    pub fn now_utc(&self) -> DateTime<Utc> {
        *self.now.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn advance(&self, by: chrono::Duration) {
        let mut now = self.now.lock().unwrap_or_else(|e| e.into_inner());
        *now += by;
    }
}

impl Clock for FakeClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Formats an instant the way every Nightshift record does: RFC 3339, milliseconds, UTC (`Z`).
/// The fixed width keeps the text sortable, which the journal's range queries rely on.
pub fn format_ts(ts: DateTime<Utc>) -> String {
    ts.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// The serde form of [`format_ts`], for `#[serde(with = "crate::clock::ts")]`.
pub mod ts {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(ts: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_ts(*ts))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let text = String::deserialize(d)?;
        DateTime::parse_from_rfc3339(&text).map(|t| t.with_timezone(&Utc)).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn timestamps_are_fixed_width_utc_with_millis() {
        let t = Utc.with_ymd_and_hms(2026, 11, 30, 3, 4, 5).unwrap();
        assert_eq!(format_ts(t), "2026-11-30T03:04:05.000Z");
        let t = t + chrono::Duration::milliseconds(7);
        assert_eq!(format_ts(t), "2026-11-30T03:04:05.007Z");
    }

    #[test]
    fn a_zone_keeps_its_daylight_saving_and_says_its_local_times() {
        let berlin = Zone::new(chrono_tz::Europe::Berlin);
        let winter = Utc.with_ymd_and_hms(2026, 1, 15, 12, 0, 0).unwrap();
        let summer = Utc.with_ymd_and_hms(2026, 7, 15, 12, 0, 0).unwrap();
        assert_eq!(winter.with_timezone(&berlin).format("%H:%M %z").to_string(), "13:00 +0100");
        assert_eq!(summer.with_timezone(&berlin).format("%H:%M %z").to_string(), "14:00 +0200");
        let seven = berlin.with_ymd_and_hms(2026, 7, 16, 7, 0, 0).single().unwrap();
        assert_eq!(seven.with_timezone(&Utc), Utc.with_ymd_and_hms(2026, 7, 16, 5, 0, 0).unwrap());
        // 02:30 on the spring-forward night does not exist there.
        assert!(berlin.with_ymd_and_hms(2026, 3, 29, 2, 30, 0).single().is_none());
        assert_eq!(
            Zone::utc().with_ymd_and_hms(2026, 7, 16, 7, 0, 0).unwrap().to_rfc3339(),
            "2026-07-16T07:00:00+00:00"
        );
    }

    #[test]
    fn fake_clock_moves_only_when_told() {
        let start = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let clock = FakeClock::new(start);
        assert_eq!(clock.now(), start);
        clock.advance(chrono::Duration::hours(2));
        assert_eq!(clock.now(), start + chrono::Duration::hours(2));
    }
}

/// Durations as whole or fractional seconds in files and on the wire (`idle_timeout = 10`).
pub mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        if !(secs.is_finite() && (0.0..=1e9).contains(&secs)) {
            return Err(serde::de::Error::custom(format!("{secs} is not a number of seconds")));
        }
        Ok(Duration::from_secs_f64(secs))
    }
}

/// [`secs`] for an optional duration (`null` when absent).
pub mod opt_secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::secs::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        #[derive(Deserialize)]
        struct Secs(#[serde(with = "super::secs")] Duration);
        Ok(Option::<Secs>::deserialize(d)?.map(|s| s.0))
    }
}

/// [`ts`] for an optional instant (`null` when absent).
pub mod opt_ts {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(ts: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
        match ts {
            Some(ts) => crate::clock::ts::serialize(ts, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
        let text = Option::<String>::deserialize(d)?;
        text.map(|t| DateTime::parse_from_rfc3339(&t).map(|t| t.with_timezone(&Utc)).map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// [`secs_list`] that may be empty (`breaker_retry = []`: no retries).
pub mod secs_list_or_none {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(list: &[Duration], s: S) -> Result<S::Ok, S::Error> {
        super::secs_list::serialize(list, s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Duration>, D::Error> {
        super::secs_list::waits(Vec::<f64>::deserialize(d)?)
    }
}

/// A list of durations as seconds (`restart_backoff = [2, 10, 30]`); never empty.
pub mod secs_list {
    use std::time::Duration;

    use serde::ser::SerializeSeq;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(list: &[Duration], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(list.len()))?;
        for d in list {
            seq.serialize_element(&d.as_secs_f64())?;
        }
        seq.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Duration>, D::Error> {
        let list = Vec::<f64>::deserialize(d)?;
        if list.is_empty() {
            return Err(serde::de::Error::custom("give at least one wait, in seconds"));
        }
        waits(list)
    }

    pub(super) fn waits<E: serde::de::Error>(list: Vec<f64>) -> Result<Vec<Duration>, E> {
        list.into_iter()
            .map(|secs| {
                if secs.is_finite() && (0.0..=86_400.0).contains(&secs) {
                    Ok(Duration::from_secs_f64(secs))
                } else {
                    Err(serde::de::Error::custom(format!("{secs} is not a wait of 0 to 86400 seconds")))
                }
            })
            .collect()
    }
}
