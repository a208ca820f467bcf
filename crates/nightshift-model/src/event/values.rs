//! The small values events carry: a session's state, why it was stopped, who answered a dialog,
//! what a night did with the machine's sleep, the notice kinds, a fenced host, what a loop waits for.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a session is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    /// Recorded to start later (`--at`, `--after-reset`): nothing runs yet.
    Scheduled,
    /// Recorded, the process not yet started.
    Starting,
    /// The process runs; its activity is not judged yet.
    Running,
    /// The agent is in a turn.
    Working,
    /// The agent sits at its prompt, its turn over.
    Idle,
    /// The agent is blocked on the user: a permission prompt, a question it asked.
    WaitingInput,
    /// A usage limit stopped the agent until its window resets.
    LimitPaused,
    /// A respawn cycle is running its steps.
    Respawning,
    /// A breaker is open: no cycles or restarts until its next try (half-open) or the user's reset.
    BreakerOpen,
    /// The process ended (its exit code or signal is on the event).
    Exited,
    /// The process could not be started at all.
    Failed,
}

impl SessionState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Scheduled => "scheduled",
            Self::Starting => "starting",
            Self::Running => "running",
            Self::Working => "working",
            Self::Idle => "idle",
            Self::WaitingInput => "waiting_input",
            Self::LimitPaused => "limit_paused",
            Self::Respawning => "respawning",
            Self::BreakerOpen => "breaker_open",
            Self::Exited => "exited",
            Self::Failed => "failed",
        }
    }

    /// No process is behind a session in this state, and none will be.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Exited | Self::Failed)
    }

    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "scheduled" => Self::Scheduled,
            "starting" => Self::Starting,
            "running" => Self::Running,
            "working" => Self::Working,
            "idle" => Self::Idle,
            "waiting_input" => Self::WaitingInput,
            "limit_paused" => Self::LimitPaused,
            "respawning" => Self::Respawning,
            "breaker_open" => Self::BreakerOpen,
            "exited" => Self::Exited,
            "failed" => Self::Failed,
            _ => return None,
        })
    }
}

impl fmt::Display for SessionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a session was asked to stop: the user chose to stop it, or Nightshift itself is ending (Quit,
/// a logout or reboot's SIGTERM, a terminal that closed). Only the first cancels a pending resume.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopKind {
    #[default]
    User,
    Shutdown,
}

/// What became of a session's move to another account (see
/// [`EventKind::AccountSwitch`](super::EventKind::AccountSwitch)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SwitchAction {
    Due,
    Held,
    Switched,
}

/// What a night did with the machine's sleep (see [`EventKind::Sleep`](super::EventKind::Sleep)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SleepAction {
    /// The inhibitors were let go for a long wait, with a wake alarm set for `at`.
    Allowed,
    /// The alarm set for `at` was taken back: the machine is needed before then.
    Cancelled,
    /// The alarm set for `at` went off.
    Woken,
    /// No alarm could be set: the wait is held awake.
    Refused,
}

/// Who answered a dialog the agent waited on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answerer {
    /// Keys at a terminal: `nightshift run`'s own, or `nightshift attach`.
    Terminal,
    /// The tray app's window.
    Window,
    /// `nightshift send`.
    Cli,
    /// An action button of a push notification.
    Phone,
    /// Nightshift itself (a routine confirmation auto-accepted, the limit menu).
    Nightshift,
    /// Nobody typed anything: the dialog went away by itself (the client withdrew it).
    Nobody,
}

impl Answerer {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Terminal => "at the terminal",
            Self::Window => "in the window",
            Self::Cli => "with nightshift send",
            Self::Phone => "from the phone",
            Self::Nightshift => "by Nightshift",
            Self::Nobody => "with nothing typed",
        }
    }

    /// Who typed, as the journal's `input` events name them.
    pub fn source(self) -> &'static str {
        match self {
            Self::Terminal => "the terminal",
            Self::Window => "the app",
            Self::Cli => "nightshift send",
            Self::Phone => "the phone",
            Self::Nightshift | Self::Nobody => "nightshift",
        }
    }
}

/// A change the user made to what a session does by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Automation {
    AutoResumeOn,
    AutoResumeOff,
    /// Every automatic action held ("Pause all").
    Held,
    Released,
    /// Nightshift answered the client's usage-limit menu.
    MenuAnswered,
}

impl Automation {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AutoResumeOn => "auto-resume on",
            Self::AutoResumeOff => "auto-resume off",
            Self::Held => "held: no respawn cycles, restarts or resumes until released",
            Self::Released => "released",
            Self::MenuAnswered => "answered the usage-limit menu",
        }
    }
}

/// The kinds of notification, each with its own switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeKind {
    /// An agent waits on a question or a permission.
    Question,
    /// A usage limit stopped an agent (or its resume failed, or the fresh-window guard held it).
    Limit,
    Resume,
    Breaker,
    /// A session ended.
    Finished,
    Morning,
    /// The guard refused a command (once per kind of command per night).
    Guard,
    /// The network fence refused a host (once per host per night).
    Fence,
    /// What became of a phone's button: done, or why not (always told: the phone asked).
    Answer,
}

/// A host the fence lets through, and why (`the remote origin`, `npm's registry, from .npmrc`,
/// `your [sandbox] network`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FencedHost {
    pub host: String,
    pub why: String,
}

/// What a loop waits for, in its `loop_wait` events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitKind {
    /// A transient failure: the same iteration again.
    Retry,
    /// A usage limit's reset.
    Limit,
    /// A project that settled nothing for several iterations.
    Fruitless,
}
