//! What the journal's rows are, as the rest of Nightshift reads them.

use std::path::Path;

use chrono::{DateTime, Utc};
use rusqlite::Row;
use serde::Serialize;

use crate::event::SessionState;
use crate::platform::{Os, Processes};
use crate::usage::Sample;

/// A stored morning run summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryRow {
    pub scheduled_for: String,
    pub created_at: String,
    pub from_ts: String,
    pub to_ts: String,
    pub headline: String,
    pub body: String,
}

/// A stored usage sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageRow {
    pub session: String,
    pub ts: String,
    /// The account it was measured on (`None`: the client's default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// The plan it counts against (`claude`, `codex`): each client has its own windows.
    pub agent: String,
    #[serde(flatten)]
    pub sample: Sample,
}

/// What kind of session: an agent in a terminal, or a loop of fresh headless iterations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionKind {
    #[default]
    Terminal,
    Loop,
}

impl SessionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Terminal => "terminal",
            Self::Loop => "loop",
        }
    }
}

/// A session as the journal knows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionRow {
    pub id: String,
    pub kind: SessionKind,
    pub command: Vec<String>,
    pub cwd: String,
    pub agent: String,
    pub preset: Option<String>,
    pub created: String,
    pub ended: Option<String>,
    pub exit_code: Option<i64>,
    pub exit_signal: Option<String>,
    pub error: Option<String>,
    pub state: SessionState,
    pub reason: Option<String>,
    pub last_event: String,
    pub last_event_at: String,
    pub owner_pid: Option<i64>,
    pub control_socket: Option<String>,
    /// When its Nightshift ended and kept the resume it waited for, while it is so.
    pub kept: Option<String>,
    /// The client account it runs under (`None`: the client's own default).
    pub account: Option<String>,
    /// That account's config directory.
    pub account_dir: Option<String>,
    /// When its owner last renewed its lease on it (`None`: never, an older Nightshift's).
    #[serde(skip)]
    pub lease: Option<String>,
}

/// A scheduled start as the journal keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleRow {
    pub session: String,
    pub due: DateTime<Utc>,
    pub why: String,
    /// How to start it: the JSON of a [`crate::schedule::Launch`].
    pub launch: String,
    /// A process has taken it to start it.
    pub claimed: bool,
    /// That process.
    pub claimed_by: Option<i64>,
    /// The process that scheduled it (or adopted it), which waits for its time.
    pub owner_pid: Option<i64>,
}

impl ScheduleRow {
    /// Whether the process that waits for it is gone (a killed terminal, a reboot, a quit app).
    pub fn orphaned(&self) -> bool {
        !self.owner_pid.is_some_and(nightshift_alive)
    }

    /// Claimed by a process that died before it started the session.
    pub fn stale_claim(&self) -> bool {
        self.claimed && !self.claimed_by.is_some_and(nightshift_alive)
    }
}

/// Whether `pid` is a running Nightshift (the CLI, or the app): after a reboot an old pid is
/// often some other process's, which must not keep a schedule from being taken over.
pub fn nightshift_alive(pid: i64) -> bool {
    Os::is_nightshift(pid)
}

/// Where a session stands beyond its last state: is a Nightshift process behind it?
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// A Nightshift process runs it.
    Live,
    /// Its Nightshift process died without recording an end.
    Lost,
    /// Nightshift ended while it waited for a usage limit's reset: the next Nightshift process (the
    /// app, or `nightshift restore`) starts it again and resumes it.
    Kept,
    /// It is to start later (`--at`, `--after-reset`): the process that scheduled it waits for its
    /// time, or the next Nightshift process (the app, `nightshift restore`) does.
    Scheduled,
    /// It has ended.
    Ended,
}

impl SessionRow {
    /// No process is behind this session any more, by the journal's account.
    pub fn is_final(&self) -> bool {
        self.state.is_final()
    }

    /// The account it runs under now, as journalled (a switch may have moved it).
    pub fn account(&self) -> Option<crate::agent::Account> {
        self.account
            .clone()
            .zip(self.account_dir.clone())
            .map(|(name, dir)| crate::agent::Account { name, dir: dir.into() })
    }

    /// Whether a Nightshift process is behind the session, and if not, why not.
    pub fn standing(&self) -> Standing {
        if self.is_final() {
            Standing::Ended
        } else if self.state == SessionState::Scheduled {
            Standing::Scheduled
        } else if self.owner_alive() {
            Standing::Live
        } else if self.kept.is_some() {
            Standing::Kept
        } else {
            Standing::Lost
        }
    }

    /// Whether the process that supervised this session still exists (whatever became of its
    /// socket).
    pub fn owner_process_alive(&self) -> bool {
        self.owner_pid.is_some_and(pid_alive)
    }

    /// Whether the Nightshift process that supervises this session is still there (its pid exists
    /// and its control socket is in place).
    pub fn owner_alive(&self) -> bool {
        let socket_there = self.control_socket.as_ref().is_none_or(|s| Path::new(s).exists());
        self.owner_pid.is_some_and(pid_alive) && socket_there
    }

    /// The state as people read it (display only; programs look at `state` and `standing`): the
    /// journal's, `lost` or `resume kept` when no process is behind it; exits carry their code or
    /// signal (`exited (3)`, `exited (SIGKILL)`).
    pub fn shown_state(&self) -> String {
        match self.standing() {
            Standing::Lost => return "lost".to_string(),
            Standing::Kept => return "resume kept".to_string(),
            Standing::Live | Standing::Ended | Standing::Scheduled => {}
        }
        match (self.state, self.exit_code, self.exit_signal.as_deref()) {
            (SessionState::Exited, _, Some(signal)) => format!("exited ({signal})"),
            (SessionState::Exited, Some(code), None) => format!("exited ({code})"),
            (state, _, _) => state.to_string(),
        }
    }

    /// How the session stands, in words, for its page: what it is doing now while something runs
    /// it; how it ended once it has; and for one no Nightshift runs, what became of it, never the
    /// reason of a state it is no longer in.
    pub fn in_words(&self) -> String {
        let reason = self.reason.clone().unwrap_or_default();
        match self.standing() {
            Standing::Live | Standing::Scheduled => reason,
            Standing::Lost => format!(
                "Its Nightshift process ended without ending it (killed, crashed, or the machine went down) while \
                 it was {}; nothing runs it now. Resume carries its conversation on.",
                self.state.to_string().replace('_', " ")
            ),
            Standing::Kept => "Nightshift ended while it waited for a usage limit's reset; the app or `nightshift \
                               restore` resumes it at the reset, or Resume does now."
                .to_string(),
            Standing::Ended => {
                let how = match (self.state, self.exit_code, self.exit_signal.as_deref()) {
                    (SessionState::Failed, _, _) => "It failed to start".to_string(),
                    (_, _, Some(signal)) => format!("It ended: killed by {signal}"),
                    (_, Some(0), _) => "It ended: its agent exited cleanly".to_string(),
                    (_, Some(code), _) => format!("It ended: its agent exited with code {code}"),
                    _ => "It ended".to_string(),
                };
                if reason.is_empty() {
                    format!("{how}.")
                } else {
                    format!("{how} ({reason}).")
                }
            }
        }
    }
}

/// A session with the state to show for it, as the CLI's `--json` and the app present it.
#[derive(Debug, Clone, Serialize)]
pub struct SessionSummary {
    #[serde(flatten)]
    pub row: SessionRow,
    /// The state for people to read (`exited (3)`, `lost`): display only.
    pub shown_state: String,
    /// Whether a Nightshift process is behind it.
    pub standing: Standing,
    /// The command as a shell line, quoted where needed.
    pub command_line: String,
    /// How it stands, in words (see [`SessionRow::in_words`]).
    pub how: String,
}

impl From<SessionRow> for SessionSummary {
    fn from(row: SessionRow) -> Self {
        let shown_state = row.shown_state();
        let standing = row.standing();
        let command_line = crate::pty::shell_words(&row.command);
        let how = row.in_words();
        Self { row, shown_state, standing, command_line, how }
    }
}

/// Whether a process with this pid exists (even one we may not signal).
fn pid_alive(pid: i64) -> bool {
    Os::alive(pid)
}

/// What is known of a session when it is created.
#[derive(Debug, Clone)]
pub struct NewSession<'a> {
    pub id: &'a str,
    pub kind: SessionKind,
    pub command: &'a [String],
    pub cwd: &'a str,
    pub agent: &'a str,
    pub preset: Option<&'a str>,
    pub created: DateTime<Utc>,
    pub owner_pid: u32,
    pub control_socket: Option<&'a str>,
}

/// One journal row: the event's JSON and where it sits.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    pub id: i64,
    pub ts: String,
    pub session: String,
    pub event: String,
    pub body: String,
}

/// Which events to read.
#[derive(Debug, Clone, Default)]
pub struct EventQuery {
    pub session: Option<String>,
    pub since: Option<DateTime<Utc>>,
    pub after_id: Option<i64>,
    pub limit: Option<usize>,
}

pub(super) const SESSION_SELECT: &str = "SELECT id, command, cwd, agent, preset, created, ended, exit_code, exit_signal, error,
        state, reason, last_event, last_event_at, owner_pid, control_socket, kept, kind, account, account_dir, lease FROM sessions";

pub(super) fn stored_event(r: &Row<'_>) -> rusqlite::Result<StoredEvent> {
    Ok(StoredEvent { id: r.get(0)?, ts: r.get(1)?, session: r.get(2)?, event: r.get(3)?, body: r.get(4)? })
}

pub(super) fn session_row(r: &Row<'_>) -> rusqlite::Result<SessionRow> {
    let command: String = r.get(1)?;
    Ok(SessionRow {
        id: r.get(0)?,
        command: serde_json::from_str(&command).unwrap_or_else(|_| vec![command]),
        cwd: r.get(2)?,
        agent: r.get(3)?,
        preset: r.get(4)?,
        created: r.get(5)?,
        ended: r.get(6)?,
        exit_code: r.get(7)?,
        exit_signal: r.get(8)?,
        error: r.get(9)?,
        // A state this version does not know (a newer Nightshift wrote it) reads as running.
        state: SessionState::parse(&r.get::<_, String>(10)?).unwrap_or(SessionState::Running),
        reason: r.get(11)?,
        last_event: r.get(12)?,
        last_event_at: r.get(13)?,
        owner_pid: r.get(14)?,
        control_socket: r.get(15)?,
        kept: r.get(16)?,
        kind: if r.get::<_, String>(17)? == "loop" { SessionKind::Loop } else { SessionKind::Terminal },
        account: r.get(18)?,
        account_dir: r.get(19)?,
        lease: r.get(20)?,
    })
}
