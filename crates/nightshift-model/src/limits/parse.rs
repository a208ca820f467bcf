//! The limit-message parser: text in, (kind, reset instant) out.

use std::sync::LazyLock;

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveTime, TimeZone, Utc, Weekday};
use chrono_tz::Tz;
use regex::Regex;
use serde::{Deserialize, Serialize};

use super::HORIZON;

/// Which window ran out, as the message says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    /// The 5-hour (session) window.
    FiveHour,
    Weekly,
    /// A per-model limit (Opus, …).
    Model,
    /// Pay-as-you-go credit ran out.
    ExtraUsage,
    /// The message does not say which.
    Unspecified,
}

/// A limit message found in some text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitText {
    pub kind: LimitKind,
    /// When it resets; `None` when the message gives no time Nightshift can trust.
    pub resets_at: Option<DateTime<Utc>>,
    /// The line it was read from.
    pub line: String,
}

// The limit phrases, each one line of text. Straight or curly apostrophes; `·` or `∙` separators.
static LIMIT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)
        (?: \b(?P<which>5-hour|session|weekly|opus\s+weekly|opus|sonnet)?\s*limit\s+reached\b
          | \byou[’']?ve\s+hit\s+your\s+(?P<which2>5-hour\s+|session\s+|weekly\s+|opus\s+|sonnet\s+|usage\s+)?limit\b
          | \byou[’']?re\s+out\s+of\s+(?P<extra>extra\s+usage)\b
          | \bclaude\s+(?:ai\s+)?usage\s+limit\s+reached\b )",
    )
    .expect("limit regex")
});

/// Every limit phrase (and the epoch form) has one of these words: a line without either is passed
/// over without running the phrases, whose Unicode word boundaries need the slow regex engines.
static MENTIONS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?i)limit|extra").expect("mentions regex"));

static WARNING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bapproaching\s+(?:your\s+)?(?:usage\s+|rate\s+)?limits?\b").expect("warning regex")
});

static EPOCH: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)usage\s+limit\s+reached\|(\d{9,11})\b").expect("epoch regex"));

// "resets 8pm", "resets at 2pm", "reset at 2pm", "resets Mon 12:00am", "resets May 5 at 9pm",
// "resets Oct 6, 1pm", "Try again at 2:09 PM", "continue automatically at 2:33pm"; a zone may follow.
static RESET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)
        \b(?:resets?|try\s+again|continu(?:e|ing)\s+automatically)\s+(?:at\s+)?
        (?: (?P<month>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(?P<mday>\d{1,2})(?:\s*,\s*|\s+at\s+)
          | (?P<wday>mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?\s+ )?
        (?P<hour>\d{1,2})(?::(?P<min>\d{2}))?\s*(?P<ampm>[ap]\.?m\.?)?
        (?:\s*\((?P<zone>[A-Za-z_]+(?:/[A-Za-z0-9_+\-]+)*)\))?",
    )
    .expect("reset regex")
});

/// A reset already this long past is taken as the one that just happened, not tomorrow's.
const JUST_PAST: Duration = Duration::minutes(10);

fn kind_of(caps: &regex::Captures<'_>) -> LimitKind {
    if caps.name("extra").is_some() {
        return LimitKind::ExtraUsage;
    }
    let which = caps.name("which").or(caps.name("which2")).map(|m| m.as_str().trim().to_ascii_lowercase());
    match which.as_deref() {
        Some("5-hour" | "session") => LimitKind::FiveHour,
        Some("weekly" | "opus weekly") => LimitKind::Weekly,
        Some("opus" | "sonnet") => LimitKind::Model,
        _ => LimitKind::Unspecified,
    }
}

/// Reads the first limit message in `text` (one line at a time; the last one found wins, as the
/// newest message is drawn lowest). `now` resolves times without a date; `local` is the zone of
/// times that name none.
pub fn find_limit<Z: TimeZone>(text: &str, now: DateTime<Utc>, local: &Z) -> Option<LimitText> {
    let mut found = None;
    for line in text.lines() {
        if !MENTIONS.is_match(line) || WARNING.is_match(line) && !LIMIT.is_match(line) {
            continue;
        }
        if let Some(caps) = EPOCH.captures(line) {
            let resets_at = caps[1].parse::<i64>().ok().and_then(|s| Utc.timestamp_opt(s, 0).single());
            found = Some(LimitText { kind: LimitKind::Unspecified, resets_at, line: line.trim().to_string() });
            continue;
        }
        let Some(caps) = LIMIT.captures(line) else { continue };
        let after = &line[caps.get(0).map_or(0, |m| m.start())..];
        found = Some(LimitText {
            kind: kind_of(&caps),
            resets_at: parse_reset(after, now, local),
            line: line.trim().to_string(),
        });
    }
    found
}

/// Whether `text` (a screen's limit region, a hook's message) carries the client's word that it
/// now works on the plan's extra usage or credits past a full window ("You're now using extra
/// usage", "Now using usage credits"): no limit, the work goes on (and costs).
pub fn extra_usage_notice(text: &str) -> bool {
    text.lines().any(|line| {
        let line = line.trim().trim_start_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
        (line.starts_with("now using ")
            || line.starts_with("you're now using ")
            || line.starts_with("you’re now using "))
            && ["extra usage", "usage credits", "credits", "usage allocation"].iter().any(|w| line.contains(w))
    })
}

/// The reset instant named in `text`, if it names one Nightshift can trust.
pub fn parse_reset<Z: TimeZone>(text: &str, now: DateTime<Utc>, local: &Z) -> Option<DateTime<Utc>> {
    let caps = RESET.captures(text)?;
    let hour: u32 = caps["hour"].parse().ok()?;
    let minute: u32 = caps.name("min").map_or(Some(0), |m| m.as_str().parse().ok())?;
    let hour = match caps.name("ampm").map(|m| m.as_str().to_ascii_lowercase().starts_with('p')) {
        Some(pm) => {
            if !(1..=12).contains(&hour) {
                return None;
            }
            (hour % 12) + if pm { 12 } else { 0 }
        }
        // Without am/pm only a 24-hour clock time (14:00) is a time; a bare number never is.
        None if caps.name("min").is_some() && hour < 24 => hour,
        None => return None,
    };
    let time = NaiveTime::from_hms_opt(hour, minute, 0)?;
    let zone = caps.name("zone").and_then(|z| z.as_str().parse::<Tz>().ok());
    let at = match zone {
        Some(tz) => resolve(&tz, &caps, time, now),
        None => resolve(local, &caps, time, now),
    }?;
    (at <= now + HORIZON).then_some(at)
}

/// The instant in zone `tz` that the captured date parts and `time` mean, seen from `now`.
fn resolve<Z: TimeZone>(
    tz: &Z,
    caps: &regex::Captures<'_>,
    time: NaiveTime,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let today = now.with_timezone(tz).date_naive();
    let earliest = now - JUST_PAST;
    let at = |date: NaiveDate| local_instant(tz, date, time);
    if let (Some(month), Some(mday)) = (caps.name("month"), caps.name("mday")) {
        let month = month_number(month.as_str())?;
        let day: u32 = mday.as_str().parse().ok()?;
        let this_year = NaiveDate::from_ymd_opt(today.year(), month, day).and_then(at)?;
        return if this_year >= earliest {
            Some(this_year)
        } else {
            NaiveDate::from_ymd_opt(today.year() + 1, month, day).and_then(at)
        };
    }
    if let Some(wday) = caps.name("wday") {
        let target = weekday(wday.as_str())?;
        return (0..8)
            .filter_map(|d| today.checked_add_signed(Duration::days(d)))
            .filter(|d| d.weekday() == target)
            .filter_map(at)
            .find(|t| *t >= earliest);
    }
    let today_at = at(today)?;
    if today_at >= earliest {
        Some(today_at)
    } else {
        today.succ_opt().and_then(at)
    }
}

/// A local date and time as an instant; in a DST gap, the hour after.
fn local_instant<Z: TimeZone>(tz: &Z, date: NaiveDate, time: NaiveTime) -> Option<DateTime<Utc>> {
    let naive = date.and_time(time);
    tz.from_local_datetime(&naive)
        .earliest()
        .or_else(|| tz.from_local_datetime(&(naive + Duration::hours(1))).earliest())
        .map(|t| t.with_timezone(&Utc))
}

fn month_number(text: &str) -> Option<u32> {
    let m = text.get(..3)?.to_ascii_lowercase();
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        .iter()
        .position(|x| *x == m)
        .map(|i| i as u32 + 1)
}

fn weekday(text: &str) -> Option<Weekday> {
    Some(match text.get(..3)?.to_ascii_lowercase().as_str() {
        "mon" => Weekday::Mon,
        "tue" => Weekday::Tue,
        "wed" => Weekday::Wed,
        "thu" => Weekday::Thu,
        "fri" => Weekday::Fri,
        "sat" => Weekday::Sat,
        "sun" => Weekday::Sun,
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
