//! A session as the decisions see it: its [`machine`], and its options as the user reads and
//! changes them (over the control socket, in the window). Owning the child is the runtime's.

pub mod handoff;
pub mod machine;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub use crate::contract::DEFAULT_STOP_GRACE;

/// A setting switched off, or on with its value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Switch<T> {
    Off,
    On(T),
}

/// Respawn cycles as the user arms them: a preset's name (for the record) and every setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RespawnArm {
    #[serde(default)]
    pub preset: Option<String>,
    pub settings: crate::respawn::Settings,
}

/// A change to a running session's options; what is left out stays as it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Change {
    #[serde(default)]
    pub respawn: Option<Switch<RespawnArm>>,
    #[serde(default)]
    pub auto_resume: Option<Switch<crate::limits::resume::Settings>>,
    /// Hold every automatic action (respawn cycles, restarts' prompts, resumes) without forgetting
    /// the settings: "Pause all" in the tray.
    #[serde(default)]
    pub held: Option<bool>,
    /// Who asked, for the journal (`the app`, `nightshift hold`, …).
    #[serde(default)]
    pub source: String,
}

/// What a session does by itself, as it is now.
/// Tonight's network fence of a session, as its options show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FenceView {
    pub fence: crate::agent::Fence,
    /// The hosts let through, and why.
    pub hosts: Vec<crate::event::FencedHost>,
    /// What the project looks like it needs beyond them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The hosts it refused so far, with how many times.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<(String, u32)>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// The respawn settings while armed (also after the duration ended, for the record).
    pub respawn: Option<crate::respawn::Settings>,
    pub preset: Option<String>,
    /// Respawn is armed and its duration has not ended.
    pub respawn_active: bool,
    /// When the armed duration ends.
    pub respawn_until: Option<DateTime<Utc>>,
    pub respawn_cycles: u32,
    pub auto_resume: Option<crate::limits::resume::Settings>,
    /// Every automatic action is held by the user.
    pub held: bool,
    /// The breakers that are not closed.
    pub breakers: Vec<(crate::breaker::BreakerKind, crate::breaker::BreakerState)>,
    /// When an open breaker lets its next probe through (none: it stays open until reset).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::clock::opt_ts")]
    pub breaker_retry_at: Option<DateTime<Utc>>,
    /// Paused on a usage limit.
    pub limit: Option<Paused>,
    /// What of a fresh 5-hour window is left for the user.
    #[serde(default)]
    pub window_guard: crate::limits::WindowGuard,
    /// The pace its cycles keep (a morning reserve, a weekly pace).
    #[serde(default, skip_serializing_if = "crate::limits::pace::PaceSettings::is_off")]
    pub pace: crate::limits::pace::PaceSettings,
    /// Until when the pace parks its cycles, and why.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::clock::opt_ts")]
    pub parked_until: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parked_why: Option<String>,
    /// Whether the session needs the machine awake now, and why (the sleep assertion's policy).
    #[serde(default)]
    pub awake: crate::awake::Want,
    /// When the resume after the usage limit is due, while one is pending: Nightshift's own end
    /// keeps it for the next start.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::clock::opt_ts")]
    pub resume_due: Option<DateTime<Utc>>,
    /// The move to another account before the limit, when the session opted in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_switch: Option<SwitchView>,
    /// What the session may spend, and what it spent since it first started (across restarts
    /// and restores).
    #[serde(default)]
    pub budget: crate::breaker::Budget,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spent_usd: Option<f64>,
    #[serde(default)]
    pub spent_tokens: u64,
    /// Whether the agent runs in its own sandbox, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// Tonight's network fence: its hosts and why, and what it refused so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fence: Option<FenceView>,
    /// The guard the session was started with, in words: what it refuses, or why it cannot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard: Option<String>,
    /// What the canary said of the client the session started on, in words: passed, failed (and
    /// on which signals), or not run on it yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<String>,
}

/// A session's account switch as its options show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwitchView {
    /// The larger window's use, in percent, at which it moves.
    pub threshold: f64,
    /// The account it runs under now (`None`: the client's default).
    pub account: Option<String>,
    /// The accounts it may move to.
    pub accounts: Vec<String>,
    /// The account it is moving to, while a move is due or under way.
    pub due_to: Option<String>,
    /// No switch before this (the window of the last switch or hold resets).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::clock::opt_ts")]
    pub quiet_until: Option<DateTime<Utc>>,
}

/// A usage limit the session is paused on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Paused {
    /// When the limit resets; `None` when the client gave no time.
    pub resets_at: Option<DateTime<Utc>>,
}

impl Options {
    /// The session needs the machine awake now (see [`crate::awake`]).
    pub fn keeps_awake(&self) -> bool {
        self.awake.hold
    }
}
