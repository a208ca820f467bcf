//! The away digest and the morning run summary: what happened over a range of time, computed from
//! the journal and checked against the repositories themselves (commits and diffs, not the agent's
//! word for it).
//!
//! Each session in the range lands in one section — *needs you* (waiting on a question, a breaker
//! open, a crash, a lost supervisor), *done*, *still running* or *idle* — with its time working, idle
//! and paused, its respawn cycles, limits, breaker trips and exits, its git progress and its usage.

mod morning;
mod render;
pub mod timeline;
mod usage;

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Local, NaiveTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};

use crate::breaker::BreakerState;
use crate::event::{Event, EventKind, SessionState};
pub use crate::git::GitProgress;
use crate::respawn;
use crate::store::{EventQuery, SessionRow, Standing, Store, StoreError};
pub use morning::{due_morning, run_mornings, Morning, MorningOutcome, LAST_VIEWED_KEY};
pub use render::{render, Format};
pub use usage::{hourly, usage_report};

/// Which stretch of time a digest covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Range {
    /// Since the digest was last viewed (the last 24 h if never).
    SinceLastViewed,
    LastHour,
    /// Since local midnight.
    Today,
    Last24h,
    Custom {
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    },
}

impl Range {
    /// The instants this range means at `now`.
    pub fn bounds(self, now: DateTime<Utc>, last_viewed: Option<DateTime<Utc>>) -> (DateTime<Utc>, DateTime<Utc>) {
        match self {
            Self::SinceLastViewed => (last_viewed.unwrap_or(now - Duration::hours(24)), now),
            Self::LastHour => (now - Duration::hours(1), now),
            Self::Last24h => (now - Duration::hours(24), now),
            Self::Today => {
                let local = now.with_timezone(&Local).date_naive().and_time(NaiveTime::MIN);
                let midnight = Local
                    .from_local_datetime(&local)
                    .earliest()
                    .map_or(now - Duration::hours(24), |t| t.with_timezone(&Utc));
                (midnight, now)
            }
            Self::Custom { from, to } => (from, to),
        }
    }
}

/// Where a session stands at the end of the range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    NeedsYou,
    Done,
    StillRunning,
    Idle,
}

/// One session over the range.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionDigest {
    pub id: String,
    pub agent: String,
    pub command_line: String,
    pub cwd: String,
    pub state: String,
    pub section: Section,
    /// Why it needs the user, when it does.
    pub needs_you: Vec<String>,
    pub working_secs: i64,
    pub idle_secs: i64,
    pub paused_secs: i64,
    pub respawn_cycles: u32,
    /// Times the agent was started again after it exited.
    #[serde(default)]
    pub restarts: u32,
    pub limits_hit: u32,
    pub resumes: u32,
    pub breaker_trips: u32,
    /// Each exit in the range: `code 3`, `SIGKILL`.
    pub exits: Vec<String>,
    /// Each command the guard refused in the range.
    #[serde(default)]
    pub guard_denials: Vec<GuardDenial>,
    /// Each account switch made or held in the range, as a line.
    #[serde(default)]
    pub account_switches: Vec<String>,
    /// A loop's: each iteration that ended in the range (probes left out).
    #[serde(default)]
    pub iterations: Vec<IterationLine>,
    /// A loop's: the tasks it checked off in the range.
    #[serde(default)]
    pub tasks_done: Vec<String>,
    /// A loop's: what its iterations and probes cost by the harness's own totals (the known ones).
    #[serde(default)]
    pub loop_cost_usd: f64,
    pub git: Option<GitProgress>,
    /// Whether the range's commits reached a remote.
    #[serde(default)]
    pub delivery: Option<crate::git::Delivery>,
    /// Its recordings, and the command that shows them.
    #[serde(default)]
    pub recording: Option<String>,
    pub usage: Option<UsageDelta>,
}

/// One iteration of a loop.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct IterationLine {
    pub iteration: u32,
    pub attempt: u32,
    pub task: Option<String>,
    /// `done`, `unfinished`, `limit`, `transient`, `failed`.
    pub outcome: String,
    /// `None`: not known (or, for Codex, never reported).
    pub cost_usd: Option<f64>,
    /// `None`: not known.
    #[serde(default)]
    pub tokens: Option<u64>,
    pub project: String,
}

/// A command the guard refused.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct GuardDenial {
    #[serde(with = "crate::clock::ts")]
    pub at: DateTime<Utc>,
    /// What it would have done (`a force push to the default branch`).
    pub what: String,
    pub command: String,
}

/// How the plan windows and cost moved over the range.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct UsageDelta {
    pub five_hour_from: Option<f64>,
    pub five_hour_to: Option<f64>,
    pub seven_day_from: Option<f64>,
    pub seven_day_to: Option<f64>,
    pub cost_usd: f64,
}

/// The whole digest.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Digest {
    #[serde(with = "crate::clock::ts")]
    pub from: DateTime<Utc>,
    #[serde(with = "crate::clock::ts")]
    pub to: DateTime<Utc>,
    pub sessions: Vec<SessionDigest>,
    /// Notes that need no action (limits met and resumed, cycles run).
    pub informational: Vec<String>,
    pub totals: Totals,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Totals {
    pub sessions: usize,
    pub needs_you: usize,
    pub commits: usize,
    pub limit_pauses: u32,
    pub respawn_cycles: u32,
    pub cost_usd: f64,
}

impl Digest {
    pub fn section(&self, section: Section) -> impl Iterator<Item = &SessionDigest> {
        self.sessions.iter().filter(move |s| s.section == section)
    }

    /// One line for a notification: "3 sessions · 14 commits · 2 limit pauses · 1 needs you".
    pub fn headline(&self) -> String {
        let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut parts =
            vec![plural(self.totals.sessions, "session", "sessions"), plural(self.totals.commits, "commit", "commits")];
        if self.totals.limit_pauses > 0 {
            parts.push(plural(self.totals.limit_pauses as usize, "limit pause", "limit pauses"));
        }
        if self.totals.needs_you > 0 {
            parts.push(format!("{} needs you", self.totals.needs_you));
        }
        parts.join(" · ")
    }
}

fn parse_ts(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text).ok().map(|t| t.with_timezone(&Utc))
}

/// Computes the digest of `[from, to)` from the journal (and each session's repository).
pub fn build(store: &Store, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Digest, StoreError> {
    let mut sessions = Vec::new();
    let mut informational = Vec::new();
    for row in store.sessions()? {
        let created = parse_ts(&row.created).unwrap_or(to);
        let ended = row.ended.as_deref().and_then(parse_ts);
        let overlaps = created < to && (ended.is_none_or(|e| e >= from) || !row.is_final());
        if !overlaps {
            continue;
        }
        // Rows this version cannot read (a newer Nightshift's) are passed over.
        let events: Vec<Event> = store
            .events(&EventQuery { session: Some(row.id.clone()), ..Default::default() })?
            .iter()
            .filter_map(|e| serde_json::from_str(&e.body).ok())
            .collect();
        let usage = usage_delta(store, &row.id, from, to)?;
        let mut digest = session_digest(&row, &events, from, to, usage);
        // Where to see what it did: its recorded lives, read by `nightshift log`.
        let state_dir = store.path().and_then(|p| p.parent());
        let lives = state_dir.map(|d| crate::record::lives(d, &row.id)).unwrap_or_default();
        if !lives.is_empty() {
            digest.recording = Some(format!("{} life(s) recorded; see them: nightshift log {}", lives.len(), row.id));
        }
        if digest.limits_hit > 0 {
            informational.push(format!(
                "{}: {} usage-limit pause(s), {} resume(s)",
                digest.id, digest.limits_hit, digest.resumes
            ));
        }
        if digest.respawn_cycles > 0 {
            informational.push(format!("{}: {} respawn cycle(s)", digest.id, digest.respawn_cycles));
        }
        sessions.push(digest);
    }
    let totals = Totals {
        sessions: sessions.len(),
        needs_you: sessions.iter().filter(|s| s.section == Section::NeedsYou).count(),
        commits: commits_counted_once(&sessions),
        limit_pauses: sessions.iter().map(|s| s.limits_hit).sum(),
        respawn_cycles: sessions.iter().map(|s| s.respawn_cycles).sum(),
        // A float sum starts from -0.0: with nothing to add it would print as "$-0.00".
        cost_usd: sessions.iter().filter_map(|s| s.usage.as_ref()).map(|u| u.cost_usd).sum::<f64>()
            + sessions.iter().map(|s| s.loop_cost_usd).sum::<f64>()
            + 0.0,
    };
    Ok(Digest { from, to, sessions, informational, totals })
}

/// Sessions sharing a repository share its commits: count each commit once.
fn commits_counted_once(sessions: &[SessionDigest]) -> usize {
    let mut seen = std::collections::HashSet::new();
    for git in sessions.iter().filter_map(|s| s.git.as_ref()) {
        for c in &git.commits {
            seen.insert(c.hash.clone());
        }
    }
    seen.len()
}

fn usage_delta(
    store: &Store,
    session: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Option<UsageDelta>, StoreError> {
    let rows: Vec<_> = store
        .usage(Some(session), Some(from))?
        .into_iter()
        .filter(|r| parse_ts(&r.ts).is_some_and(|t| t < to))
        .collect();
    if rows.is_empty() {
        return Ok(None);
    }
    let first_with = |f: fn(&crate::usage::Sample) -> Option<f64>| rows.iter().find_map(|r| f(&r.sample));
    let last_with = |f: fn(&crate::usage::Sample) -> Option<f64>| rows.iter().rev().find_map(|r| f(&r.sample));
    // The statusLine's cost starts again after /clear: add up the rises.
    let mut cost = 0.0;
    let mut before: Option<f64> = None;
    for c in rows.iter().filter_map(|r| r.sample.cost_usd) {
        cost += match before {
            Some(b) if c >= b => c - b,
            Some(_) => c,
            None => 0.0,
        };
        before = Some(c);
    }
    Ok(Some(UsageDelta {
        five_hour_from: first_with(|s| s.five_hour_pct),
        five_hour_to: last_with(|s| s.five_hour_pct),
        seven_day_from: first_with(|s| s.seven_day_pct),
        seven_day_to: last_with(|s| s.seven_day_pct),
        cost_usd: cost,
    }))
}

fn session_digest(
    row: &SessionRow,
    events: &[Event],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    usage: Option<UsageDelta>,
) -> SessionDigest {
    #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    enum Bucket {
        Working,
        Idle,
        Paused,
    }
    let bucket = |state: SessionState| match state {
        SessionState::Working | SessionState::Respawning => Some(Bucket::Working),
        SessionState::Idle => Some(Bucket::Idle),
        SessionState::LimitPaused | SessionState::BreakerOpen | SessionState::WaitingInput => Some(Bucket::Paused),
        _ => None,
    };
    let mut time: BTreeMap<Bucket, i64> = BTreeMap::new();
    let mut close = |state: SessionState, start: DateTime<Utc>, end: DateTime<Utc>| {
        let (a, b) = (start.max(from), end.min(to));
        if let (Some(key), true) = (bucket(state), b > a) {
            *time.entry(key).or_default() += (b - a).num_seconds();
        }
    };
    let mut current: Option<(SessionState, DateTime<Utc>)> = None;
    let mut last_event_at = from;
    let (mut cycles, mut restarts, mut limits, mut resumes, mut trips) = (0, 0, 0, 0, 0);
    let mut exits = Vec::new();
    let mut denials = Vec::new();
    let mut switches = Vec::new();
    let mut salvaged = Vec::new();
    let mut iterations = Vec::new();
    let mut tasks_done = Vec::new();
    let mut loop_cost = 0.0;
    // A stop was asked for in this life (the user's, or Nightshift's own end): its exit is no crash.
    let mut stop_asked = false;
    let mut stopped = false;
    let mut resume_failed = false;
    let mut question = None;
    for ev in events {
        if ev.ts >= to {
            break;
        }
        last_event_at = last_event_at.max(ev.ts);
        let in_range = ev.ts >= from;
        match &ev.kind {
            EventKind::State { state, exit_code, signal, dialog, .. } => {
                if let Some((prev, start)) = current.take() {
                    close(prev, start, ev.ts);
                }
                match state {
                    SessionState::Exited if in_range => {
                        exits.push(match (signal, exit_code) {
                            (Some(sig), _) => sig.clone(),
                            (None, Some(code)) => format!("code {code}"),
                            _ => "unknown".to_string(),
                        });
                        stopped = stop_asked;
                    }
                    SessionState::Running => stop_asked = false,
                    SessionState::WaitingInput => question = dialog.as_ref().and_then(|d| d.text.clone()),
                    _ => {}
                }
                current = Some((*state, ev.ts));
            }
            EventKind::StopRequested { .. } => stop_asked = true,
            EventKind::Respawn { action: respawn::Action::CycleStarted, .. } if in_range => cycles += 1,
            EventKind::Respawn { action: respawn::Action::Restart, .. } if in_range => restarts += 1,
            EventKind::LimitDetected { .. } if in_range => limits += 1,
            EventKind::ResumeSent { .. } if in_range => resumes += 1,
            EventKind::LimitFailed { .. } if in_range => resume_failed = true,
            EventKind::Breaker { state: BreakerState::Open, .. } if in_range => trips += 1,
            EventKind::GuardDenied { what, command, .. } if in_range => {
                denials.push(GuardDenial { at: ev.ts, what: what.clone(), command: command.clone() })
            }
            EventKind::AccountSwitch { action, reason, .. }
                if in_range && *action != crate::event::SwitchAction::Due =>
            {
                let at = ev.ts.with_timezone(&Local).format("%H:%M");
                switches.push(match action {
                    crate::event::SwitchAction::Switched => format!("switched accounts at {at}: {reason}"),
                    _ => format!("held an account switch at {at}: {reason}"),
                });
            }
            EventKind::Salvaged { repo, reference, files, bytes, .. } if in_range => {
                let n = reference.rsplit('/').next().unwrap_or("1").to_string();
                salvaged.push(format!(
                    "work kept by salvage: {files} uncommitted file(s) ({}) of {repo} as {reference}; \
                     look: nightshift salvage show {}/{n}",
                    crate::event::bytes(*bytes),
                    row.id
                ));
            }
            EventKind::IterationEnded {
                iteration, attempt, task, probe, outcome, cost_usd, tokens, project, ..
            } if in_range => {
                loop_cost += cost_usd.unwrap_or(0.0);
                if *probe {
                    continue;
                }
                iterations.push(IterationLine {
                    iteration: *iteration,
                    attempt: *attempt,
                    task: task.clone(),
                    outcome: outcome.clone(),
                    cost_usd: *cost_usd,
                    tokens: *tokens,
                    project: project.clone(),
                })
            }
            EventKind::TaskDone { task, .. } if in_range => tasks_done.push(task.clone()),
            _ => {}
        }
    }
    // The state in force at the end runs to the end of the range, unless no process is behind it.
    let standing = row.standing();
    if let Some((state, start)) = current {
        let end = if standing == Standing::Live { to } else { last_event_at.max(start) };
        close(state, start, end);
    }

    let mut needs = Vec::new();
    let state = row.state;
    if state == SessionState::WaitingInput {
        needs.push(match question {
            Some(q) => format!("waiting on a question: {q}"),
            None => "waiting for the user".to_string(),
        });
    }
    if state == SessionState::BreakerOpen {
        needs.push(format!("breaker open: {}", row.reason.clone().unwrap_or_default()));
    }
    if resume_failed {
        needs.push("a usage-limit resume failed".to_string());
    }
    match standing {
        Standing::Lost => needs.push("its Nightshift process was killed; the session is lost".to_string()),
        Standing::Kept => needs.push(
            "Nightshift ended while it waited for a usage limit's reset: it resumes when the app starts \
             (or run `nightshift restore`)"
                .to_string(),
        ),
        Standing::Live | Standing::Ended | Standing::Scheduled => {}
    }
    if state == SessionState::Failed {
        needs.push(format!("failed to start: {}", row.error.clone().unwrap_or_default()));
    }
    needs.extend(salvaged);
    let delivery = crate::git::delivery(std::path::Path::new(&row.cwd), from);
    if let Some(line) = delivery.as_ref().and_then(crate::git::Delivery::needs_you) {
        needs.push(format!("{line}; look: git -C {} log --branches --not --remotes", row.cwd));
    }
    let crashed = state == SessionState::Exited
        && !stopped
        && (row.exit_code.is_some_and(|c| c != 0) || row.exit_signal.is_some());
    if crashed {
        needs.push(format!("exited with {}", exits.last().cloned().unwrap_or_else(|| "an error".into())));
    }
    let section = if !needs.is_empty() {
        Section::NeedsYou
    } else if row.is_final() {
        Section::Done
    } else if state == SessionState::Idle {
        Section::Idle
    } else {
        Section::StillRunning
    };
    SessionDigest {
        id: row.id.clone(),
        agent: row.agent.clone(),
        command_line: crate::pty::shell_words(&row.command),
        cwd: row.cwd.clone(),
        state: row.shown_state(),
        section,
        needs_you: needs,
        working_secs: time.get(&Bucket::Working).copied().unwrap_or(0),
        idle_secs: time.get(&Bucket::Idle).copied().unwrap_or(0),
        paused_secs: time.get(&Bucket::Paused).copied().unwrap_or(0),
        respawn_cycles: cycles,
        restarts,
        limits_hit: limits,
        resumes,
        breaker_trips: trips,
        exits,
        guard_denials: denials,
        account_switches: switches,
        iterations,
        tasks_done,
        loop_cost_usd: loop_cost,
        git: crate::git::progress(std::path::Path::new(&row.cwd), from, to),
        delivery,
        recording: None,
        usage,
    }
}
