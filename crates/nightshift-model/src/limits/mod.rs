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

pub mod menu;
pub mod pace;
mod parse;
pub mod resume;

pub use parse::{extra_usage_notice, find_limit, parse_reset, LimitKind, LimitText};

/// What told Nightshift of a usage limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The client's own notice on its screen.
    Text,
    /// Its statusLine data: a window at 100 % with its reset ahead.
    Data,
    /// Its `StopFailure` hook: the turn ended on a rate limit, with the client's message.
    Hook,
    /// The journal: a session restarted with the resume it was waiting for.
    Journal,
    /// A headless session's event stream (its typed `rate_limit_event` and errors).
    Stream,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Data => "data",
            Self::Hook => "hook",
            Self::Journal => "journal",
            Self::Stream => "stream",
        }
    }
}

/// The fresh-window guard: what of a 5-hour window that opens after a limit is left for the user.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WindowGuard {
    /// Stop resuming and respawning once the fresh window's use passes `100 - reserve_pct`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserve_pct: Option<f64>,
    /// Do not spend the fresh window at all tonight: cancel the client's own continuation too.
    #[serde(default)]
    pub not_tonight: bool,
    /// Stop at the plan's own limits: a full window pauses the session even when the plan has
    /// extra usage, which is never spent unattended (by default the work goes on on it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plan_only: bool,
}

impl WindowGuard {
    /// Whether a sample of the fresh window has reached the reserve.
    pub fn reserve_reached(&self, five_hour_pct: Option<f64>) -> bool {
        match (self.reserve_pct, five_hour_pct) {
            (Some(reserve), Some(pct)) => pct >= 100.0 - reserve,
            _ => false,
        }
    }
}

/// Resets further out than this are not believed (a misread, or a month-day from another year).
pub const HORIZON: chrono::Duration = chrono::Duration::days(8);

/// What a session does when its account meets a usage limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AtLimit {
    /// Waits for the window's reset, and resumes then.
    #[default]
    Wait,
    /// Moves to the account of the same agent with the most headroom the journal knows, with a
    /// handoff; waits when none has any.
    Switch,
    /// As `Switch`, and with no account of the agent that has room, moves the work to the other
    /// agent (`--failover-to`), coming back at the reset.
    Failover,
}

impl std::str::FromStr for AtLimit {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "wait" => Ok(Self::Wait),
            "switch" => Ok(Self::Switch),
            "failover" => Ok(Self::Failover),
            other => Err(format!("--at-limit takes wait, switch or failover, not `{other}`")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_line() {
        let guard = WindowGuard { reserve_pct: Some(30.0), ..WindowGuard::default() };
        assert!(!guard.reserve_reached(Some(69.9)));
        assert!(guard.reserve_reached(Some(70.0)));
        assert!(!guard.reserve_reached(None));
        assert!(!WindowGuard::default().reserve_reached(Some(99.0)));
    }
}
