//! Usage limits: reading the messages the clients show when a plan's window is used up, and when it
//! resets.
//!
//! Every form the clients have used is recognised (`5-hour limit reached ∙ resets 8pm`, `You've hit
//! your limit · resets 1:40pm (America/New_York)`, `You've hit your weekly limit · resets Mon
//! 12:00am`, `… resets May 5 at 9pm …`, `Claude usage limit reached. Your limit will reset at 2pm …`,
//! `Claude AI usage limit reached|1755309600`, Codex's `You’ve hit your usage limit. Try again at 2:09
//! PM.`). Zones are IANA names; a time alone is the next such time, a weekday the next such day; a
//! reset more than eight days out is not believed, and a bare number is never a time. "Approaching
//! your usage limit" is a warning, not a limit.

mod parse;
pub mod resume;

pub use parse::{find_limit, parse_reset, LimitKind, LimitText};

/// Resets further out than this are not believed (a misread, or a month-day from another year).
pub const HORIZON: chrono::Duration = chrono::Duration::days(8);
