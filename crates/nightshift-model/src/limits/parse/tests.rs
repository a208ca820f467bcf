//! Every message form × zones × "now": DST changes, midnight, weekday roll-over, past times, the
//! horizon. Expected instants were worked out by hand.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use proptest::prelude::*;

use super::*;

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

struct Case {
    text: &'static str,
    now: &'static str,
    local: &'static str,
    /// `None`: not a limit. `Some((kind, None))`: a limit without a trusted reset.
    expect: Option<(LimitKind, Option<&'static str>)>,
}

const fn case(
    text: &'static str,
    now: &'static str,
    local: &'static str,
    expect: Option<(LimitKind, Option<&'static str>)>,
) -> Case {
    Case { text, now, local, expect }
}

use LimitKind::*;

const CASES: &[Case] = &[
    // Time only, with a zone: today's if still ahead (or just past), else tomorrow's.
    case(
        "You've hit your limit · resets 1:40pm (America/New_York)",
        "2026-11-30T15:00:00Z",
        "UTC",
        Some((Unspecified, Some("2026-11-30T18:40:00Z"))),
    ),
    case(
        "You've hit your limit · resets 1:40pm (America/New_York)",
        "2026-11-30T19:00:00Z",
        "UTC",
        Some((Unspecified, Some("2026-12-01T18:40:00Z"))),
    ),
    case(
        "You've hit your limit · resets 1:40pm (America/New_York)",
        "2026-11-30T18:45:00Z",
        "UTC",
        Some((Unspecified, Some("2026-11-30T18:40:00Z"))),
    ),
    // Time only, no zone: the user's.
    case(
        "5-hour limit reached ∙ resets 8pm",
        "2026-11-30T10:00:00Z",
        "Europe/Berlin",
        Some((FiveHour, Some("2026-11-30T19:00:00Z"))),
    ),
    case(
        "Session limit reached ∙ resets 8pm",
        "2026-11-30T10:00:00Z",
        "Asia/Tokyo",
        Some((FiveHour, Some("2026-11-30T11:00:00Z"))),
    ),
    case(
        "Weekly limit reached ∙ resets 6pm",
        "2026-11-30T10:00:00Z",
        "UTC",
        Some((Weekly, Some("2026-11-30T18:00:00Z"))),
    ),
    case(
        "Limit reached · resets 1pm (America/Chicago) · /upgrade to Max or turn on /extra-usage",
        "2026-11-30T12:00:00Z",
        "Europe/Berlin",
        Some((Unspecified, Some("2026-11-30T19:00:00Z"))),
    ),
    case(
        "5-hour limit reached · resets 3pm (Europe/Stockholm) · /upgrade to Max 20x",
        "2026-11-30T09:00:00Z",
        "UTC",
        Some((FiveHour, Some("2026-11-30T14:00:00Z"))),
    ),
    case(
        "You've hit your session limit · resets 3:45pm",
        "2026-11-30T10:00:00Z",
        "UTC",
        Some((FiveHour, Some("2026-11-30T15:45:00Z"))),
    ),
    case(
        "You've hit your Opus limit · resets 3:45pm",
        "2026-11-30T16:00:00Z",
        "UTC",
        Some((Model, Some("2026-12-01T15:45:00Z"))),
    ),
    // The real client 2.1.332, in the transcript and in its footer.
    case(
        "  ⎿  You've hit your 5-hour limit · resets 2:33pm (UTC)",
        "2026-11-30T10:00:00Z",
        "Europe/Berlin",
        Some((FiveHour, Some("2026-11-30T14:33:00Z"))),
    ),
    case(
        "  ⚠ Usage limit reached · limit resets 2:33pm",
        "2026-11-30T10:00:00Z",
        "UTC",
        Some((Unspecified, Some("2026-11-30T14:33:00Z"))),
    ),
    // Weekdays: the next such day, today's when still ahead.
    case(
        "You've hit your weekly limit · resets Mon 12:00am",
        "2026-11-29T20:00:00Z",
        "UTC",
        Some((Weekly, Some("2026-11-30T00:00:00Z"))),
    ),
    case(
        "You've hit your weekly limit · resets Mon 12:00am",
        "2026-11-30T10:00:00Z",
        "UTC",
        Some((Weekly, Some("2026-12-07T00:00:00Z"))),
    ),
    case(
        "You've hit your weekly limit · resets Monday 9am (Europe/Berlin)",
        "2026-11-30T07:00:00Z",
        "UTC",
        Some((Weekly, Some("2026-11-30T08:00:00Z"))),
    ),
    // Month-day forms.
    case(
        "You've hit your limit · resets May 5 at 9pm (America/New_York)",
        "2027-05-01T12:00:00Z",
        "UTC",
        Some((Unspecified, Some("2027-05-06T01:00:00Z"))),
    ),
    case(
        "Opus weekly limit reached ∙ resets Oct 6, 1pm",
        "2026-10-01T00:00:00Z",
        "UTC",
        Some((Weekly, Some("2026-10-06T13:00:00Z"))),
    ),
    case(
        "You've hit your limit · resets Jan 2 at 9am (UTC)",
        "2026-12-30T10:00:00Z",
        "UTC",
        Some((Unspecified, Some("2027-01-02T09:00:00Z"))),
    ),
    // Beyond the 8-day horizon: a limit, with no reset to trust.
    case(
        "You've hit your limit · resets May 5 at 9pm (America/New_York)",
        "2026-11-30T12:00:00Z",
        "UTC",
        Some((Unspecified, None)),
    ),
    // Other vendors' and older forms.
    case(
        "You're out of extra usage · resets 1pm (America/Los_Angeles)",
        "2026-11-30T12:00:00Z",
        "UTC",
        Some((ExtraUsage, Some("2026-11-30T21:00:00Z"))),
    ),
    case(
        "Claude usage limit reached. Your limit will reset at 2pm (America/New_York)",
        "2026-11-30T12:00:00Z",
        "UTC",
        Some((Unspecified, Some("2026-11-30T19:00:00Z"))),
    ),
    case(
        "Claude AI usage limit reached|1755309600",
        "2025-08-15T20:00:00Z",
        "UTC",
        Some((Unspecified, Some("2025-08-16T02:00:00Z"))),
    ),
    case(
        "■ You’ve hit your usage limit. Try again at 2:09 PM.",
        "2026-11-30T10:00:00Z",
        "Europe/Berlin",
        Some((Unspecified, Some("2026-11-30T13:09:00Z"))),
    ),
    case("■ You’ve hit your usage limit. Try again later.", "2026-11-30T10:00:00Z", "UTC", Some((Unspecified, None))),
    // Midnight and noon.
    case(
        "You've hit your limit · resets 12am (UTC)",
        "2026-11-30T23:00:00Z",
        "UTC",
        Some((Unspecified, Some("2026-12-01T00:00:00Z"))),
    ),
    case(
        "You've hit your limit · resets 12pm (UTC)",
        "2026-11-30T09:00:00Z",
        "UTC",
        Some((Unspecified, Some("2026-11-30T12:00:00Z"))),
    ),
    case(
        "You've hit your limit · resets 14:30 (UTC)",
        "2026-11-30T09:00:00Z",
        "UTC",
        Some((Unspecified, Some("2026-11-30T14:30:00Z"))),
    ),
    // DST: a time in the spring-forward gap is the hour after; a repeated autumn time is the first.
    case(
        "You've hit your limit · resets 2:30am (Europe/Berlin)",
        "2026-03-29T00:00:00Z",
        "UTC",
        Some((Unspecified, Some("2026-03-29T01:30:00Z"))),
    ),
    case(
        "You've hit your limit · resets 1:30am (America/New_York)",
        "2026-11-01T04:00:00Z",
        "UTC",
        Some((Unspecified, Some("2026-11-01T05:30:00Z"))),
    ),
    case(
        "You've hit your limit · resets 3pm (Europe/Berlin)",
        "2026-03-28T12:00:00Z",
        "UTC",
        Some((Unspecified, Some("2026-03-28T14:00:00Z"))),
    ),
    case(
        "You've hit your limit · resets 3pm (Europe/Berlin)",
        "2026-03-29T12:00:00Z",
        "UTC",
        Some((Unspecified, Some("2026-03-29T13:00:00Z"))),
    ),
    // An unknown zone falls back to the user's.
    case(
        "You've hit your limit · resets 3pm (Etc/Nowhere)",
        "2026-11-30T09:00:00Z",
        "Europe/Berlin",
        Some((Unspecified, Some("2026-11-30T14:00:00Z"))),
    ),
    // A bare number is never a time.
    case("You've hit your limit · resets 8", "2026-11-30T09:00:00Z", "UTC", Some((Unspecified, None))),
    case("You've hit your limit · resets 13pm", "2026-11-30T09:00:00Z", "UTC", Some((Unspecified, None))),
    // Warnings and look-alikes are not limits.
    case("Approaching your usage limit · resets 3pm", "2026-11-30T09:00:00Z", "UTC", None),
    case("  Approaching rate limits", "2026-11-30T09:00:00Z", "UTC", None),
    case("Continuing automatically at 2:33pm · Esc to cancel", "2026-11-30T09:00:00Z", "UTC", None),
    case("the speed limit here is 30", "2026-11-30T09:00:00Z", "UTC", None),
];

#[test]
fn every_form_zone_and_moment() {
    let mut failures = Vec::new();
    for c in CASES {
        let local: Tz = c.local.parse().unwrap();
        let got = find_limit(c.text, utc(c.now), &local).map(|l| (l.kind, l.resets_at));
        let want = c.expect.map(|(k, at)| (k, at.map(utc)));
        if got != want {
            failures.push(format!("{:?} at {} ({}): got {got:?}, want {want:?}", c.text, c.now, c.local));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_last_message_on_screen_wins() {
    let text =
        "You've hit your limit · resets 1pm (UTC)\nsome output\nYou've hit your weekly limit · resets Mon 12:00am";
    let got = find_limit(text, utc("2026-11-30T10:00:00Z"), &Utc).unwrap();
    assert_eq!(got.kind, LimitKind::Weekly);
    assert_eq!(got.line, "You've hit your weekly limit · resets Mon 12:00am");
}

#[test]
fn the_real_clients_limit_screen() {
    let screen = include_str!("../../../../../tests/fixtures/claude-code/2.1.332/limit/02-limit-t3s.txt");
    let got = find_limit(screen, utc("2026-11-30T10:00:00Z"), &Utc).unwrap();
    assert_eq!(got.resets_at, Some(utc("2026-11-30T14:33:00Z")));
}

proptest! {
    #[test]
    fn never_panics_on_any_text(text in ".{0,200}") {
        let _ = find_limit(&text, utc("2026-11-30T10:00:00Z"), &Utc);
    }

    #[test]
    fn resets_found_are_within_the_horizon(
        prefix in "(You've hit your limit|5-hour limit reached|Limit reached|You're out of extra usage) · resets ",
        month in proptest::option::of("(Jan|May|Oct|Dec) [0-9]{1,2} at "),
        wday in proptest::option::of("(Mon|Tue|Sun) "),
        hour in 0u32..30, minute in proptest::option::of(0u32..70), ampm in proptest::option::of("(am|pm|AM|PM)"),
        zone in proptest::option::of(" \\((UTC|Europe/Berlin|America/New_York|Nowhere/Else)\\)"),
        now_secs in 1_700_000_000i64..1_900_000_000,
    ) {
        let time = match minute { Some(m) => format!("{hour}:{m:02}"), None => hour.to_string() };
        let text = format!("{prefix}{}{}{time}{}{}", month.unwrap_or_default(), wday.unwrap_or_default(), ampm.unwrap_or_default(), zone.unwrap_or_default());
        let now = Utc.timestamp_opt(now_secs, 0).unwrap();
        let found = find_limit(&text, now, &Utc);
        prop_assert!(found.is_some(), "{text}");
        if let Some(at) = found.unwrap().resets_at {
            prop_assert!(at >= now - Duration::minutes(10) && at <= now + HORIZON, "{text} at {now}: {at}");
        }
    }
}

#[test]
fn the_clients_word_that_it_works_on_extra_usage_is_no_limit() {
    for said in ["⚠ You're now using extra usage", "Now using extra usage", "  Now using usage credits · $3.20 of $50"]
    {
        assert!(super::extra_usage_notice(said), "{said}");
        assert_eq!(find_limit(said, utc("2026-12-01T22:00:00Z"), &chrono_tz::UTC), None, "{said}");
    }
    for said in
        ["You're out of extra usage · resets 1pm", "extra usage is on in your plan", "We are now using usage wisely"]
    {
        assert!(!super::extra_usage_notice(said), "{said}");
    }
}
