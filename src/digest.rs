//! The away digest and the morning run summary: what happened over a range of time, computed from
//! the journal and checked against the repositories themselves (commits and diffs, not the agent's
//! word for it).
//!
//! Each session in the range lands in one section — *needs you* (waiting on a question, a breaker
//! open, a crash, a lost supervisor: what needs the user now, not what did and was met), *done*,
//! *still running* or *idle* — with its time working, idle and paused, every kind of event counted
//! ([`Counts`]), the counts worth a look called out ([`Unusual`]), what happened (met needs and
//! notes, a line said again shown once with its count), its git progress and its usage.

mod counts;
mod ledger;
mod morning;
mod needs;
mod render;
mod shares;
pub mod timeline;
mod usage;

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Local, NaiveTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};

use crate::event::{Event, EventKind, SessionState};
pub use crate::git::GitProgress;
use crate::store::{EventQuery, SessionRow, Standing, Store, StoreError};
pub use counts::{AnsweredBy, Counts, Unusual, UnusualKind, MAX_AN_HOUR};
use ledger::Ledger;
pub use morning::{due_morning, run_mornings, Morning, MorningOutcome, LAST_VIEWED_KEY};
pub use needs::{mark_dismissed, About, Dismissed, Need};
pub use render::{render, Format};
pub use shares::{shares, Share};
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
    /// Why it needs the user now, when it does (the texts of `needs`).
    pub needs_you: Vec<String>,
    /// The same, typed: what each is about, and so what answers it.
    #[serde(default)]
    pub needs: Vec<Need>,
    /// Counts worth a look (more than 3 handoffs in an hour, a breaker that opened twice).
    #[serde(default)]
    pub unusual: Vec<Unusual>,
    /// Every kind of event, counted over the range.
    #[serde(default)]
    pub counts: Counts,
    /// What happened that needs nothing now: needs that were met (a question answered, a breaker
    /// closed again, a limit over, the session restored) and notes, oldest first; the same line
    /// said again is one line with its count.
    #[serde(default)]
    pub happened: Vec<Happening>,
    /// The distinct snapshots salvage kept of the agent's work (each also a line of `needs_you`).
    #[serde(default)]
    pub salvaged: Vec<SalvageKept>,
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
    /// The worktrees it worked in (`--worktree`, a loop's `--worktree-per-task`): each one's
    /// branch, where its work stands, and the commands to look at it and merge it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub worktrees: Vec<WorktreeWork>,
    /// Each account's and agent's share of the work, when the work moved between them (none
    /// when one worker did it all: the session's own figures are its).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<Share>,
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

/// A line of what happened.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Happening {
    pub kind: HappeningKind,
    /// The line; with its times when it happened once, else with its count and first and last time.
    pub text: String,
    pub count: u32,
    #[serde(with = "crate::clock::ts")]
    pub first: DateTime<Utc>,
    #[serde(with = "crate::clock::ts")]
    pub last: DateTime<Utc>,
}

/// What a line of what happened is about.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum HappeningKind {
    /// A dialog the agent showed was answered (by whom, when known).
    Answered,
    /// A dialog went away unanswered: nothing was typed, or the agent exited under it.
    Unanswered,
    BreakerClosed,
    /// A usage limit ended and the agent worked on.
    LimitOver,
    /// Nightshift brought the session back after its own end.
    Restored,
    /// A running Nightshift took the session over when its own died or hung.
    Adopted,
    Slept,
    PushFailed,
    /// A phone's button was pressed: applied, or refused and why.
    Phone,
    /// The phone's answers could not be heard for a while.
    PhoneListen,
    HandoffMissing,
    ContextHigh,
    JournalGap,
    AccountSwitch,
    /// Salvage kept only files that were there before the session began.
    SalvagePreexisting,
    /// The agent's sandbox refused a command (a write outside its folders, a host not allowed).
    SandboxBlocked,
    /// The session ran without the sandbox it would have had (`[sandbox] allow_unsandboxed`).
    Unsandboxed,
    /// The network fence refused a host (one line a host, with how many times).
    NetRefused,
    /// The pace parked the cycles for a stretch (a morning reserve, a weekly pace).
    Parked,
    /// Nightshift sent an input by itself (a resume, a kickstart, …), marked as automated: one
    /// line a kind, with how many times.
    Automated,
}

/// A snapshot salvage kept, followed through the later salvages that found it unchanged.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SalvageKept {
    pub repo: String,
    pub reference: String,
    pub files: usize,
    pub bytes: u64,
    /// When it was kept.
    #[serde(with = "crate::clock::ts")]
    pub at: DateTime<Utc>,
    /// The last salvage that found it unchanged (`at` when none did).
    #[serde(with = "crate::clock::ts")]
    pub last: DateTime<Utc>,
    /// Later salvages that found the work unchanged.
    pub unchanged: u32,
    /// Its files that were there before the session began, untouched since (journals from
    /// before: now such files are left out, as `users`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preexisting: Vec<String>,
    /// The user's own files left out of it (there before the session began, untouched since).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<String>,
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
    /// Whether any reading carried a cost (Codex's carry none: its spend is its tokens).
    #[serde(default)]
    pub cost_reported: bool,
    /// Tokens used over the range, as the readings' totals rose.
    #[serde(default)]
    pub tokens: u64,
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
    /// The night's counts: the sessions' added up, a commit or a suspend they share counted once.
    #[serde(default)]
    pub counts: Counts,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Totals {
    pub sessions: usize,
    pub needs_you: usize,
    pub commits: usize,
    pub limit_pauses: u32,
    pub respawn_cycles: u32,
    pub cost_usd: f64,
    /// Counts called out as unusual, over all sessions.
    #[serde(default)]
    pub unusual: usize,
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
        if self.totals.unusual > 0 {
            parts.push(format!("{} unusual", self.totals.unusual));
        }
        parts.join(" · ")
    }
}

fn parse_ts(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text).ok().map(|t| t.with_timezone(&Utc))
}

/// What the phone's listener journalled under no session in `[from, to)`: buttons refused before
/// any session of this install could be trusted (a forged or unreadable token), and the times the
/// answers could not be heard. Counted, and each kind told in one line.
fn loose_phone_events(
    store: &Store,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    counts: &mut Counts,
    informational: &mut Vec<String>,
) -> Result<(), StoreError> {
    let query = EventQuery { session: Some(String::new()), since: Some(from), ..Default::default() };
    let events: Vec<Event> = store.events(&query)?.iter().filter_map(|e| serde_json::from_str(&e.body).ok()).collect();
    let mut refused: Vec<(DateTime<Utc>, String)> = Vec::new();
    let mut outages = Vec::new();
    for ev in events.iter().filter(|e| e.ts >= from && e.ts < to) {
        match &ev.kind {
            crate::EventKind::RemoteAction { applied: false, refused: why, .. } => {
                refused.push((ev.ts, why.clone().unwrap_or_default()));
            }
            crate::EventKind::PhoneListen { working: false, reason } => outages.push((ev.ts, reason.clone())),
            _ => {}
        }
    }
    if let Some((first, why)) = refused.first() {
        counts.phone_refused += u32::try_from(refused.len()).unwrap_or(u32::MAX);
        informational.push(format!(
            "{} on the answers' topic refused, for no session of this install (the first at {}: {why})",
            if refused.len() == 1 { "1 phone action".to_string() } else { format!("{} phone actions", refused.len()) },
            first.with_timezone(&chrono::Local).format("%H:%M")
        ));
    }
    for (at, reason) in outages {
        informational.push(format!(
            "the phone's answers could not be heard from {}: {reason}",
            at.with_timezone(&chrono::Local).format("%H:%M")
        ));
    }
    Ok(())
}

/// A session's worktree in the morning.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct WorktreeWork {
    pub branch: String,
    pub path: String,
    #[serde(flatten)]
    pub standing: crate::git::worktree::Standing,
    /// Its work in one line.
    pub work: String,
    /// Its salvage refs.
    pub salvage: Vec<String>,
    /// How to look at its work, and how to merge it.
    pub look: String,
    pub merge: String,
    /// The task it was made for (a loop's `--worktree-per-task`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
}

/// The worktrees session `id` worked in, as they stand now.
fn worktree_work(store: &Store, id: &str) -> Result<Vec<WorktreeWork>, StoreError> {
    let mut out = Vec::new();
    for made in store.worktrees(id)? {
        let salvage = store.worktree_salvage(&made)?;
        let crate::store::MadeWorktree { worktree: w, task, .. } = made;
        let s = crate::git::worktree::standing(&w);
        out.push(WorktreeWork {
            look: w.look(),
            merge: w.merge(),
            salvage,
            branch: w.branch,
            path: w.path.display().to_string(),
            work: s.words(),
            standing: s,
            task,
        });
    }
    Ok(out)
}

/// Computes the digest of `[from, to)` from the journal (and each session's repository).
pub fn build(store: &Store, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Digest, StoreError> {
    let mut sessions = Vec::new();
    let mut informational = Vec::new();
    let dismissed = Dismissed::load(store)?;
    let mut suspends = std::collections::BTreeSet::new();
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
        let rows = usage_rows(store, &row.id, from, to)?;
        let trees = salvage_trees(&events);
        // A session begun in the range spent all its readings' totals in it.
        let from_zero = created >= from;
        let usage = usage_delta(&rows, from_zero);
        let (mut digest, slept) = session_digest(&row, &events, from, to, usage, &trees, &dismissed);
        digest.workers = worker_shares(&events, &rows, &digest, from, to, from_zero);
        suspends.extend(slept);
        // Where to see what it did: its recorded lives, read by `nightshift log`.
        let state_dir = store.path().and_then(|p| p.parent());
        let lives = state_dir.map(|d| crate::record::lives(d, &row.id)).unwrap_or_default();
        if !lives.is_empty() {
            digest.recording = Some(format!("{} life(s) recorded; see them: nightshift log {}", lives.len(), row.id));
        }
        digest.worktrees = worktree_work(store, &row.id)?;
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
        unusual: sessions.iter().map(|s| s.unusual.len()).sum(),
    };
    let mut counts = Counts::default();
    for s in &sessions {
        counts.add(&s.counts);
    }
    loose_phone_events(store, from, to, &mut counts, &mut informational)?;
    // What sessions share happened once: a commit in a shared repository, the machine's sleep.
    counts.commits = u32::try_from(totals.commits).unwrap_or(u32::MAX);
    counts.suspends = u32::try_from(suspends.len()).unwrap_or(u32::MAX);
    Ok(Digest { from, to, sessions, informational, totals, counts })
}

/// The tree of each commit the session's salvage kept, from its repositories (snapshots that
/// repeat the one before are shown as one).
fn salvage_trees(events: &[Event]) -> std::collections::HashMap<String, String> {
    let mut by_repo: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for e in events {
        if let EventKind::Salvaged { repo, commit, .. } = &e.kind {
            by_repo.entry(repo.as_str()).or_default().push(commit.as_str());
        }
    }
    let mut trees = std::collections::HashMap::new();
    for (repo, commits) in by_repo {
        let found = crate::git::salvage::trees(std::path::Path::new(repo), &commits);
        for (commit, tree) in commits.iter().zip(found) {
            if let Some(tree) = tree {
                trees.insert((*commit).to_string(), tree);
            }
        }
    }
    trees
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

/// The session's usage readings in `[from, to)`, oldest first.
fn usage_rows(
    store: &Store,
    session: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<crate::store::UsageRow>, StoreError> {
    Ok(store
        .usage(None, Some(session), Some(from))?
        .into_iter()
        .filter(|r| parse_ts(&r.ts).is_some_and(|t| t < to))
        .collect())
}

/// What the session spent over its readings, each agent's and account's totals followed on their
/// own (a moved session's readings are of more than one).
fn usage_delta(rows: &[crate::store::UsageRow], from_zero: bool) -> Option<UsageDelta> {
    shares::delta(rows.iter().zip(shares::rises(rows, from_zero)))
}

/// Who did what, when the work moved: each worker's stretch with its commits (of the ones the
/// digest counts) and its spend.
fn worker_shares(
    events: &[Event],
    rows: &[crate::store::UsageRow],
    digest: &SessionDigest,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    from_zero: bool,
) -> Vec<Share> {
    let workers = timeline::workers(events, from, to);
    if workers.len() < 2 {
        return Vec::new();
    }
    let counted: std::collections::HashSet<&str> =
        digest.git.iter().flat_map(|g| g.commits.iter().map(|c| c.hash.as_str())).collect();
    let mut commits = crate::git::commits_between(std::path::Path::new(&digest.cwd), from, to);
    commits.retain(|(_, c)| counted.contains(c.hash.as_str()));
    shares(&workers, &commits, rows, from_zero, events)
}

fn session_digest(
    row: &SessionRow,
    events: &[Event],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    usage: Option<UsageDelta>,
    trees: &std::collections::HashMap<String, String>,
    dismissed: &Dismissed,
) -> (SessionDigest, Vec<DateTime<Utc>>) {
    let standing = row.standing();
    let l = Ledger::read(&row.id, events, from, to, standing == Standing::Live, trees);
    let state = row.state;

    // What needs the user now.
    let mut needs = Vec::new();
    if state == SessionState::WaitingInput && standing == Standing::Live {
        // Unless the journal heard it answered (and not yet the state after it).
        if let Some(question) = &l.waiting {
            needs.push(Need::new(
                About::Question,
                match question {
                    Some(q) => format!("waiting on a question: {q}"),
                    None => "waiting for the user".to_string(),
                },
            ));
        }
    }
    // Open by the journal's state, unless the breakers' own events closed it again since.
    let still_open = !l.breakers_open.is_empty() || !l.breakers_seen;
    if state == SessionState::BreakerOpen && still_open {
        needs.push(Need::new(About::Breaker, format!("breaker open: {}", row.reason.clone().unwrap_or_default())));
    }
    if l.resume_failed {
        needs.push(Need::new(About::ResumeFailed, "a usage-limit resume failed"));
    }
    match standing {
        Standing::Lost => {
            let mut line = "its Nightshift process was killed; the session is lost".to_string();
            if let (SessionState::WaitingInput, Some(waiting)) = (state, &l.waiting) {
                line.push_str(&match waiting {
                    Some(q) => format!("; it was waiting on a question: {q}"),
                    None => "; it was waiting for the user".to_string(),
                });
            }
            needs.push(Need::new(About::Lost, line));
        }
        Standing::Kept => needs.push(Need::new(
            About::Kept,
            "Nightshift ended while it waited for a usage limit's reset: it resumes when the app starts \
             (or run `nightshift restore`)",
        )),
        Standing::Live | Standing::Ended | Standing::Scheduled => {}
    }
    if state == SessionState::Failed {
        needs.push(Need::new(About::Failed, format!("failed to start: {}", row.error.clone().unwrap_or_default())));
    }
    needs.extend(l.salvaged.iter().map(|(kept, line)| {
        Need::new(About::Salvage { repo: kept.repo.clone(), reference: kept.reference.clone() }, line.clone())
    }));
    let delivery = crate::git::delivery(std::path::Path::new(&row.cwd), from);
    if let Some(line) = delivery.as_ref().and_then(crate::git::Delivery::needs_you) {
        let text = format!("{line}; look: git -C {} log --branches --not --remotes", row.cwd);
        needs.push(Need::new(About::Delivery { repo: row.cwd.clone() }, text));
    }
    let crashed = state == SessionState::Exited
        && !l.stopped
        && (row.exit_code.is_some_and(|c| c != 0) || row.exit_signal.is_some());
    if crashed {
        let text = format!("exited with {}", l.exits.last().cloned().unwrap_or_else(|| "an error".into()));
        let resume = events.iter().any(|e| matches!(e.kind, EventKind::Conversation { .. }));
        needs.push(Need::new(About::Crashed { resume }, text));
    }
    // What the user dismissed is theirs: it needs them no more.
    needs.retain(|n| !dismissed.contains(&row.id, n));
    let section = if !needs.is_empty() {
        Section::NeedsYou
    } else if row.is_final() {
        Section::Done
    } else if state == SessionState::Idle {
        Section::Idle
    } else {
        Section::StillRunning
    };
    let git = crate::git::progress(std::path::Path::new(&row.cwd), from, to);
    let mut counts = l.counts;
    counts.commits = git.as_ref().map_or(0, |g| u32::try_from(g.commits.len()).unwrap_or(u32::MAX));
    let digest = SessionDigest {
        id: row.id.clone(),
        agent: row.agent.clone(),
        command_line: crate::pty::shell_words(&row.command),
        cwd: row.cwd.clone(),
        state: row.shown_state(),
        section,
        needs_you: needs.iter().map(|n| n.text.clone()).collect(),
        needs,
        unusual: l.unusual,
        happened: l.happened,
        salvaged: l.salvaged.into_iter().map(|(kept, _)| kept).collect(),
        working_secs: l.working_secs,
        idle_secs: l.idle_secs,
        paused_secs: l.paused_secs,
        respawn_cycles: counts.respawn_cycles,
        restarts: counts.restarts,
        limits_hit: counts.limits,
        resumes: counts.resumes,
        breaker_trips: counts.breakers_opened,
        exits: l.exits,
        guard_denials: l.denials,
        account_switches: l.switches,
        iterations: l.iterations,
        tasks_done: l.tasks_done,
        loop_cost_usd: l.loop_cost,
        counts,
        git,
        delivery,
        recording: None,
        worktrees: Vec::new(),
        workers: Vec::new(),
        usage,
    };
    (digest, l.suspends)
}
