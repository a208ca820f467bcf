//! The events every part of Nightshift speaks: one JSON object per event, the same in the `--events`
//! stream, the journal and the app. Fields are added freely; the names here are never renamed.
//!
//! Its parts: `values` (the small values the events carry), `describe` (each event in words).

use std::fmt;

use chrono::{DateTime, Utc};
use rand::Rng;
use serde::{Deserialize, Serialize};

#[path = "event/describe.rs"]
mod describe;
#[path = "event/values.rs"]
mod values;

pub use values::{
    Answerer, Automation, FencedHost, NoticeKind, SessionState, SleepAction, StopKind, SwitchAction, WaitKind,
};

/// A session's identifier: eight lowercase hex digits, unique in a journal.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionId(String);

impl SessionId {
    pub fn generate() -> Self {
        Self(format!("{:08x}", rand::rng().random::<u32>()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<String> for SessionId {
    fn from(s: String) -> Self {
        Self(s)
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SessionId({})", self.0)
    }
}

impl From<crate::limits::pace::Turn> for EventKind {
    /// A park of the pace, or its end, as the journal says it.
    fn from(turn: crate::limits::pace::Turn) -> Self {
        use crate::limits::pace::{Parking, Turn};
        match turn {
            Turn::Parked(p) => EventKind::Paced { until: Some(p.until), kind: p.kind, reason: p.reason },
            Turn::Ended(kind) => EventKind::Paced { until: None, kind, reason: Parking::ENDED.into() },
        }
    }
}

/// One event of one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    #[serde(with = "crate::clock::ts")]
    pub ts: DateTime<Utc>,
    pub session: SessionId,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What happened. Serialised with the variant's name in the `event` field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    /// The session moved to another state; `reason` says what decided it.
    State {
        state: SessionState,
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pid: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// For `waiting_input`: the dialog on screen.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dialog: Option<crate::agent::Dialog>,
        /// For `exited` with a failure: the last rows the process left on screen.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last_screen: Option<Vec<String>>,
    },
    /// Text was typed into the session from outside (the journal keeps how much, never what).
    Input { source: String, chars: usize, enter: bool },
    /// Someone asked for the session to stop.
    StopRequested {
        source: String,
        #[serde(default)]
        kind: StopKind,
    },
    /// A step of a respawn cycle was sent or ended.
    RespawnStep { cycle: u32, step: crate::respawn::Step, outcome: crate::respawn::StepOutcome },
    /// The respawn arrangement changed, or acted.
    Respawn {
        action: crate::respawn::Action,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cycle: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// The session's total cost so far (cycle_started) or the cycle's cost (cycle_finished).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    /// What the user armed for the session (see [`crate::contract`]), journalled before its
    /// process first starts: every later start builds from it.
    Contract { contract: Box<crate::contract::Contract> },
    /// Respawn was armed with these settings until `until`: kept in the journal so a restored
    /// session is armed again for the rest of its duration.
    RespawnSettings {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preset: Option<String>,
        settings: Box<crate::respawn::Settings>,
        #[serde(with = "crate::clock::ts")]
        until: DateTime<Utc>,
    },
    /// A usage limit stopped the agent. `source` is `text` (the client's own notice) or `data` (its
    /// statusLine's rate limits at 100 %).
    LimitDetected {
        #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::clock::opt_ts")]
        resets_at: Option<DateTime<Utc>>,
        source: crate::limits::Source,
        kind: crate::limits::LimitKind,
        line: String,
    },
    /// The limit is over: the agent works again.
    LimitCleared { reason: String },
    /// Nightshift typed a continuation after a limit (attempt 1, 2, 3).
    ResumeSent { attempt: u32 },
    /// The limit did not end despite the resumes: the session needs the user.
    LimitFailed { reason: String },
    /// The fresh-window guard stopped resuming and respawning.
    WindowGuard { reason: String },
    /// The pace parked the session's cycles until `until` (a morning reserve, a weekly pace), or,
    /// with no `until`, let them run again.
    Paced {
        #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::clock::opt_ts")]
        until: Option<DateTime<Utc>>,
        kind: crate::limits::pace::PaceKind,
        reason: String,
    },
    /// A resume is pending: due at `due` (the reset plus the margin, or the fallback wait). Kept in
    /// the journal so a Nightshift that restarts can pick it up again.
    ResumeArmed {
        #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::clock::opt_ts")]
        resets_at: Option<DateTime<Utc>>,
        #[serde(with = "crate::clock::ts")]
        due: DateTime<Utc>,
        settings: crate::limits::resume::Settings,
        /// The session's fresh-window guard, so a restored session keeps it.
        #[serde(default, skip_serializing_if = "is_default_guard")]
        guard: crate::limits::WindowGuard,
    },
    /// The user changed what the session does by itself (auto-resume, hold), or Nightshift answered
    /// the limit menu for it; `detail` says more, for people.
    Automation {
        change: Automation,
        source: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// Nightshift ended while the session waited for a limit's reset: its agent was stopped and the
    /// resume is kept for the next Nightshift process (the app, or `nightshift restore`).
    ResumeKept {
        #[serde(with = "crate::clock::ts")]
        due: DateTime<Utc>,
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<String>,
    },
    /// The client's conversation, as its hooks name it: a restart or a restore resumes this one.
    Conversation { id: String },
    /// The dialog the agent waited on (`waiting_input`) was answered, `waited_secs` after it was
    /// shown: the session goes on working, or (`replaced`) shows another dialog in its place.
    DialogAnswered {
        dialog: crate::agent::DialogKind,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        by: Answerer,
        waited_secs: u64,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        replaced: bool,
    },
    /// Nightshift brought the session back after its own end (a killed run, a crash, a reboot):
    /// `down_secs` is how long no Nightshift ran it, `reason` what it was armed with.
    Restored { reason: String, down_secs: u64 },
    /// Another running Nightshift process (`by`) took the session over, nobody asking, because its
    /// own was gone or hung (`why`), `down_secs` after it was last heard of, and brought it back as
    /// a restore does (`reason`: what it was armed with). It stands for `restored` then.
    Adopted { by: String, down_secs: u64, why: String, reason: String },
    /// The network fence refused a sandboxed command's connection to `host:port` (`command`: the
    /// Bash command running then, when the client's hooks named it).
    NetRefused {
        host: String,
        port: u16,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command: Option<String>,
    },
    /// `host` was let through the fence for the rest of the session (`by`: who allowed it).
    NetAllowed { host: String, by: String },
    /// Tonight's fence for the session as it started: its kind (`project`, `open`, `none`), each
    /// host with why it is let through, and what the project looks like it needs beyond it.
    Fence {
        fence: crate::agent::Fence,
        hosts: Vec<FencedHost>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        warnings: Vec<String>,
    },
    /// A window is full but the client works on, on the plan's extra usage (until `resets_at`,
    /// when known): no limit, and no account moves.
    ExtraUsage {
        #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::clock::opt_ts")]
        resets_at: Option<DateTime<Utc>>,
    },
    /// The context in use passed the handoff threshold: a handoff is asked at the turn's end (with
    /// respawn, its reset follows; without, the next conversation starts from it).
    ContextThreshold { pct: f64, threshold: f64 },
    /// A fresh conversation after a handoff already starts past the handoff threshold (huge memory
    /// files or system prompt): no handoff again until its context grows by a real amount.
    ContextHigh { pct: f64, threshold: f64 },
    /// The client compacted its context (`manual` or `auto`).
    Compacted { trigger: String },
    /// A routine dialog of the agent (`dialog`, its question `text` when it had one) was answered
    /// by Nightshift, as an unattended preset does.
    AutoAccepted {
        dialog: crate::agent::DialogKind,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    /// The client's hooks and its screen disagreed for seconds: `hook` is what the hooks said,
    /// `screen` what the screen showed, and `capture` where the screen was kept (for a fixture).
    Drift {
        hook: String,
        screen: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        capture: Option<String>,
    },
    /// A handoff was asked for (the `times`th time): the context is near full.
    HandoffAsked { times: u32 },
    /// The agent wrote its handoff (kept in the state directory).
    Handoff { chars: usize },
    /// The handoff was given back to the client as context (`source`: its `SessionStart`'s).
    HandoffGiven { source: String },
    /// The agent did not write a handoff after `times` asks: the cycle went on without.
    HandoffMissing { times: u32 },
    /// Nightshift built a handoff (`chars` long) from what it knows and what the folder holds,
    /// because the agent could not write one (`why`: it met its limit).
    HandoffBuilt { chars: usize, why: String },
    /// The first turn after a move was checked for the handoff: whether its prompt carried it.
    HandoffChecked { received: bool },
    /// Nightshift sent an input of its own (`chars` long, its marker included), marked as
    /// automated with the user's standing instructions (see [`crate::automated`]).
    AutomatedInput { what: crate::automated::Automated, chars: usize },
    /// The session is to start at `due` (`why`: `at 23:30`, `when the 5-hour window resets`).
    Scheduled {
        #[serde(with = "crate::clock::ts")]
        due: DateTime<Utc>,
        why: String,
    },
    /// A scheduled start whose time passed while no Nightshift ran was skipped (the `missed`
    /// setting): the session never started.
    ScheduleSkipped {
        #[serde(with = "crate::clock::ts")]
        due: DateTime<Utc>,
        reason: String,
    },
    /// Moving the session off its account before the account's limit: `due` (a better account was
    /// found; the move waits for the turn's end and a handoff), `held` (no account to move to, or
    /// the restart cap: it stays until `until`), `switched` (restarted under `to`).
    AccountSwitch {
        action: SwitchAction,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::clock::opt_ts")]
        until: Option<DateTime<Utc>>,
        reason: String,
    },
    /// The session's work moves to the other agent at a limit, or back to the first at its
    /// reset (`due` at the turn's end, `switched` as the agent stops, `held` when it cannot).
    AgentSwitch {
        action: SwitchAction,
        from: crate::agent::AgentKind,
        to: crate::agent::AgentKind,
        /// When the work comes back (the first agent's window resets).
        #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::clock::opt_ts")]
        back_at: Option<DateTime<Utc>>,
        reason: String,
    },
    /// A push notification could not be delivered to `target` (ntfy, webhook), retries included;
    /// said once until the target works again.
    PushFailed { target: String, reason: String },
    /// A push notification of `kind` was delivered to `target` (ntfy, webhook).
    PushSent { target: String, kind: NoticeKind },
    /// A push notification of `kind` could not be delivered to `target`, retries included (the
    /// first of an outage also makes a `push_failed`, with the reason).
    PushNotSent { target: String, kind: NoticeKind },
    /// A phone's button was pressed: `action` is what it asked, in words ("answer 'PostgreSQL'"),
    /// `choice` the token's word for it (`option-2`, `allow`, …; empty when no token could be
    /// read), and whether it was applied or, if not, why. A refused token that no install of ours
    /// signed is journalled under no session.
    RemoteAction {
        action: String,
        choice: String,
        applied: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        refused: Option<String>,
    },
    /// Listening for the phone's answers stopped working (the server down, the topic refused);
    /// said once until it works again, which `working` says.
    PhoneListen { working: bool, reason: String },
    /// A command ran in the agent's sandbox (a Bash call of a sandboxed session): `failed` is what
    /// it said when it failed, `blocked` whether the sandbox refused it (a write outside its
    /// folders, a host not allowed).
    SandboxCommand {
        command: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failed: Option<String>,
        #[serde(default)]
        blocked: bool,
    },
    /// The guard refused a command of an unattended session: `rule` is its kind.
    GuardDenied { rule: String, what: String, command: String },
    /// The guard could not judge a command of a guarded session (no Nightshift to ask, no answer
    /// in time, one not understood, a command too long to send), so it was refused: `why` says which.
    GuardUnreachable { command: String, why: String },
    /// A loop made a worktree for `task` (`--worktree-per-task`): the task's iterations work in it.
    WorktreeMade {
        worktree: crate::repo::Worktree,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task: Option<String>,
    },
    /// Uncommitted work of `repo` kept as a commit under `reference` (`refs/nightshift/salvage/…`),
    /// the user's index, branch and files untouched. `users`: the paths left out of it as the
    /// user's own (there before the session began, untouched since). `preexisting`, in journals
    /// from before: paths it held that were there before the session began.
    Salvaged {
        repo: String,
        reference: String,
        commit: String,
        files: usize,
        bytes: u64,
        reason: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        preexisting: Vec<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        users: Vec<String>,
        /// Files left out of the snapshot for their size (listed, not stored).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        too_big: Vec<crate::repo::TooBig>,
    },
    /// Salvage found the uncommitted work of `repo` as the session's latest snapshot, `reference`,
    /// holds it: no new ref was made.
    SalvageUnchanged { repo: String, reference: String, reason: String },
    /// Salvage was not done in `repo`, and why (a rebase under way, conflicts, git failed, or
    /// nothing of the agent's to keep: `users` names the user's own files left as they are).
    SalvageSkipped {
        repo: String,
        why: String,
        reason: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        users: Vec<String>,
    },
    /// Whether the session needs the machine awake changed (the sleep assertion's policy).
    Awake { hold: bool, reason: String },
    /// The machine was asleep (the wall clock moved this much more than the monotonic one).
    Suspended {
        #[serde(with = "crate::clock::ts")]
        from: DateTime<Utc>,
        #[serde(with = "crate::clock::ts")]
        to: DateTime<Utc>,
    },
    /// The night let the machine sleep through a wait, or woke it (`at`: the wake alarm's time;
    /// `due`: what it wakes for).
    Sleep {
        action: SleepAction,
        #[serde(with = "crate::clock::ts")]
        at: DateTime<Utc>,
        #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::clock::opt_ts")]
        due: Option<DateTime<Utc>>,
        reason: String,
    },
    /// A loop started an iteration (`attempt` > 1: the same iteration again, after a failure or a
    /// limit; `probe`: a one-character session probing for an early reset).
    IterationStarted {
        iteration: u32,
        attempt: u32,
        project: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        probe: bool,
    },
    /// A loop's iteration ended: how (`done`, `unfinished`, `limit`, `transient`, `failed`), what it
    /// cost by the harness's own totals (absent: not known), and whether its project's working tree
    /// changed.
    IterationEnded {
        iteration: u32,
        attempt: u32,
        project: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        probe: bool,
        outcome: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        conversation: Option<String>,
        #[serde(default)]
        progress: bool,
    },
    /// A loop checked a task off in its tasks file.
    TaskDone { project: String, task: String },
    /// A loop waits: for a retry, a limit's reset, or a project's back-off to end (`until` absent:
    /// the wait ended).
    LoopWait {
        why: WaitKind,
        #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::clock::opt_ts")]
        until: Option<DateTime<Utc>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        project: Option<String>,
        detail: String,
    },
    /// An iteration's spend could not be measured (its stream ended before the harness's totals).
    SpendUnknown { iteration: u32, reason: String },
    /// A breaker changed.
    Breaker { breaker: crate::breaker::BreakerKind, state: crate::breaker::BreakerState, reason: String },
    /// Journal writes failed from `since` (a full disk, most likely) and work again: `lost` events
    /// of this process were told to the event stream and the app but are not in the journal.
    JournalGap {
        #[serde(with = "crate::clock::ts")]
        since: DateTime<Utc>,
        lost: u64,
        error: String,
    },
    /// The agent's plan usage changed (from its statusLine data).
    Usage {
        #[serde(flatten)]
        sample: crate::usage::Sample,
    },
}

impl EventKind {
    /// A state change with only a reason.
    pub fn state(state: SessionState, reason: impl Into<String>) -> Self {
        Self::State {
            state,
            reason: reason.into(),
            pid: None,
            exit_code: None,
            signal: None,
            error: None,
            dialog: None,
            last_screen: None,
        }
    }

    /// The process `pid` runs (started or restarted, as `reason` says).
    pub fn running(pid: u32, reason: String) -> Self {
        Self::State {
            state: SessionState::Running,
            reason,
            pid: Some(pid),
            exit_code: None,
            signal: None,
            error: None,
            dialog: None,
            last_screen: None,
        }
    }

    /// The command could not be started (`what`: "failed to start", "failed to restart").
    pub fn failed(what: &str, error: &crate::child::SpawnError) -> Self {
        Self::State {
            state: SessionState::Failed,
            reason: format!("{what}: {error}"),
            pid: None,
            exit_code: Some(error.exit_code()),
            signal: None,
            error: Some(error.to_string()),
            dialog: None,
            last_screen: None,
        }
    }

    /// The `event` field's value.
    pub fn name(&self) -> &'static str {
        match self {
            Self::State { .. } => "state",
            Self::Input { .. } => "input",
            Self::StopRequested { .. } => "stop_requested",
            Self::Usage { .. } => "usage",
            Self::JournalGap { .. } => "journal_gap",
            Self::RespawnStep { .. } => "respawn_step",
            Self::Respawn { .. } => "respawn",
            Self::RespawnSettings { .. } => "respawn_settings",
            Self::Contract { .. } => "contract",
            Self::Breaker { .. } => "breaker",
            Self::LimitDetected { .. } => "limit_detected",
            Self::LimitCleared { .. } => "limit_cleared",
            Self::ResumeSent { .. } => "resume_sent",
            Self::LimitFailed { .. } => "limit_failed",
            Self::WindowGuard { .. } => "window_guard",
            Self::Paced { .. } => "paced",
            Self::Automation { .. } => "automation",
            Self::ResumeArmed { .. } => "resume_armed",
            Self::ResumeKept { .. } => "resume_kept",
            Self::Awake { .. } => "awake",
            Self::Conversation { .. } => "conversation",
            Self::Compacted { .. } => "compacted",
            Self::DialogAnswered { .. } => "dialog_answered",
            Self::Restored { .. } => "restored",
            Self::Adopted { .. } => "adopted",
            Self::ContextHigh { .. } => "context_high",
            Self::ContextThreshold { .. } => "context_threshold",
            Self::ExtraUsage { .. } => "extra_usage",
            Self::NetRefused { .. } => "net_refused",
            Self::NetAllowed { .. } => "net_allowed",
            Self::Fence { .. } => "fence",
            Self::Drift { .. } => "drift",
            Self::AutoAccepted { .. } => "auto_accepted",
            Self::GuardDenied { .. } => "guard_denied",
            Self::GuardUnreachable { .. } => "guard_unreachable",
            Self::SandboxCommand { .. } => "sandbox_command",
            Self::PushFailed { .. } => "push_failed",
            Self::PushSent { .. } => "push_sent",
            Self::PushNotSent { .. } => "push_not_sent",
            Self::RemoteAction { .. } => "remote_action",
            Self::PhoneListen { .. } => "phone_listen",
            Self::WorktreeMade { .. } => "worktree_made",
            Self::Salvaged { .. } => "salvaged",
            Self::SalvageSkipped { .. } => "salvage_skipped",
            Self::SalvageUnchanged { .. } => "salvage_unchanged",
            Self::HandoffAsked { .. } => "handoff_asked",
            Self::Handoff { .. } => "handoff",
            Self::HandoffGiven { .. } => "handoff_given",
            Self::HandoffMissing { .. } => "handoff_missing",
            Self::HandoffBuilt { .. } => "handoff_built",
            Self::HandoffChecked { .. } => "handoff_checked",
            Self::AutomatedInput { .. } => "automated_input",
            Self::AccountSwitch { .. } => "account_switch",
            Self::AgentSwitch { .. } => "agent_switch",
            Self::Scheduled { .. } => "scheduled",
            Self::ScheduleSkipped { .. } => "schedule_skipped",
            Self::Suspended { .. } => "suspended",
            Self::Sleep { .. } => "sleep",
            Self::IterationStarted { .. } => "iteration_started",
            Self::IterationEnded { .. } => "iteration_ended",
            Self::TaskDone { .. } => "task_done",
            Self::LoopWait { .. } => "loop_wait",
            Self::SpendUnknown { .. } => "spend_unknown",
        }
    }

    /// The new state, for state changes.
    pub fn new_state(&self) -> Option<SessionState> {
        match self {
            Self::State { state, .. } => Some(*state),
            _ => None,
        }
    }
}

impl Event {
    /// The JSON line of the `--events` stream and the journal.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("events always serialise")
    }

    /// The event for the window: its JSON with `text`, what it means for people (see
    /// [`EventKind::describe`]).
    pub fn view<Z: chrono::TimeZone>(&self, local: &Z) -> serde_json::Value
    where
        Z::Offset: fmt::Display,
    {
        let mut value = serde_json::to_value(self).expect("events always serialise");
        value["text"] = serde_json::Value::String(self.kind.describe(local));
        value
    }
}

fn is_default_guard(guard: &crate::limits::WindowGuard) -> bool {
    *guard == crate::limits::WindowGuard::default()
}

#[cfg(test)]
#[path = "event/tests.rs"]
mod tests;
