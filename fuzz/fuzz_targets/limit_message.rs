//! The limit-message parser: any text, any "now", in a zone with DST and in UTC.
#![no_main]

use chrono::{TimeZone, Utc};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first eight bytes pick "now" (any instant chrono can hold); the rest is the screen text.
    let (now, text) = match data.split_first_chunk::<8>() {
        Some((secs, rest)) => (i64::from_le_bytes(*secs) % 10_000_000_000, rest),
        None => (1_764_540_000, data),
    };
    let Some(now) = Utc.timestamp_opt(now, 0).single() else { return };
    let text = String::from_utf8_lossy(text);
    let _ = nightshift::limits::find_limit(&text, now, &Utc);
    let _ = nightshift::limits::find_limit(&text, now, &chrono_tz::America::New_York);
    let _ = nightshift::limits::parse_reset(&text, now, &chrono_tz::Australia::Lord_Howe);
    let _ = nightshift::limits::menu::read(&text.lines().map(str::to_string).collect::<Vec<_>>());
});
