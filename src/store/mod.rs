//! The journal: a SQLite database in the state directory that outlives every Nightshift process.
//!
//! Every event is committed in its own transaction before anyone is told about it, in WAL mode, so a
//! process killed at any instant loses at most the event it was writing. Several processes (a headless
//! run, the tray app, the CLI reading it) share one journal; writers wait for each other through
//! SQLite's busy timeout. The schema evolves only through the numbered migrations of `schema`.
//!
//! Creating the file, turning on WAL and migrating are done by one process at a time, under an
//! exclusive `flock` of a lock file beside the journal: SQLite alone cannot make "read the schema
//! version, then migrate" atomic across processes, and ten processes started together on a fresh
//! state directory would each try to create the tables. A journal that is already current and in
//! WAL mode is opened without the lock. A journal that is not SQLite, or that a newer Nightshift
//! migrated further than this one knows, is refused with a one-line error and never written.
//!
//! - `schema`: the migrations and the set-up under the lock;
//! - `rows`: the rows as the rest of Nightshift reads them;
//! - `worktrees`: the worktrees sessions worked in.

mod owners;
mod phone;
mod rows;
mod schema;
mod worktrees;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension};

use crate::agent::AgentKind;
use crate::clock::format_ts;
use crate::event::{Event, EventKind, SessionState};
use crate::usage::Sample;
pub use rows::{
    nightshift_alive, EventQuery, NewSession, ScheduleRow, SessionKind, SessionRow, SessionSummary, Standing,
    StoredEvent, SummaryRow, UsageRow,
};
use rows::{session_row, stored_event, SESSION_SELECT};
use schema::{is_current, set_up, SetupLock};
pub use worktrees::MadeWorktree;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("journal {path}: {source}")]
    Open { path: String, source: rusqlite::Error },
    #[error("journal {path} could not be brought to the current schema: {message}")]
    Migrate { path: String, message: String },
    #[error(
        "journal {path} is not a SQLite database ({detail}); Nightshift leaves it as it is: move it aside \
         (or restore a backup) and a new journal is started"
    )]
    NotAJournal { path: String, detail: String },
    #[error(
        "journal {path} has schema version {found}, newer than this Nightshift knows ({known}): a newer \
         Nightshift wrote it, and it is left as it is; run that version, or give this one another --state-dir"
    )]
    TooNew { path: String, found: i64, known: i64 },
    #[error(
        "journal {path} is still being set up by another Nightshift process after {secs} s (it holds \
         {lock}); end that process, or try again"
    )]
    SetupLocked { path: String, lock: String, secs: u64 },
    #[error("cannot open {path}, the lock that keeps two processes from setting up one journal at once: {source}")]
    LockFile { path: String, source: std::io::Error },
    #[error("journal: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("session {0} is being started as scheduled right now; stop it again in a moment")]
    ScheduleStarting(String),
    #[error("no session matches `{0}`; `nightshift sessions` lists them")]
    NoSuchSession(String),
    #[error("`{prefix}` matches several sessions ({candidates}); give more of the id")]
    Ambiguous { prefix: String, candidates: String },
    #[error(
        "session {session}'s Nightshift process (pid {pid}) still runs but cannot be reached (its control \
         socket is gone); stop that process (`kill {pid}`), or stop the session where it runs"
    )]
    OwnerUnreachable { session: String, pid: i64 },
}

/// Usage older than this is thinned to one sample (and one `usage` event) per session per ten
/// minutes: the usage report reads the last 24 hours hour by hour, the digest a night's first and
/// last values and its cost's rises. A chatty statusLine (a sample every few seconds) would
/// otherwise grow the journal by megabytes a night, forever.
const USAGE_IN_FULL: chrono::Duration = chrono::Duration::hours(24);
/// Thinning runs once every this many samples.
const THIN_EVERY: i64 = 500;

/// How long a connection waits for another process's write to finish, and an opening process for
/// another one's migration.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// A connection to the journal.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    /// The file, when the journal is one.
    path: Option<PathBuf>,
}

impl Store {
    /// Opens (creating and migrating when needed) the journal at `path`. Any number of processes
    /// may do so at once: one sets the journal up while the others wait for it.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let shown = path.display().to_string();
        let open = |source| StoreError::Open { path: shown.clone(), source };
        let mut conn = Connection::open(path).map_err(open)?;
        // The journal holds commands and reasons: this user's only. SQLite gives the -wal and -shm
        // files the database's own permissions.
        if let Err(e) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)) {
            tracing::warn!("cannot make {shown} private: {e}");
        }
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open)?;
        if !is_current(&conn, &shown)? {
            let _lock = SetupLock::take(path, &shown)?;
            set_up(&mut conn, &shown)?;
        }
        let mut store = Self::prepare(conn, &shown)?;
        store.path = Some(path.to_path_buf());
        Ok(store)
    }

    /// Another connection to a journal that [`Store::open`] has opened (and migrated), read-only:
    /// for readers, so they never wait on the writer's connection, and never write past it.
    pub fn open_reader(path: &Path) -> Result<Self, StoreError> {
        let shown = path.display().to_string();
        let open = |source| StoreError::Open { path: shown.clone(), source };
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(open)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(open)?;
        Ok(Self { conn, path: Some(path.to_path_buf()) })
    }

    /// A private journal in memory, for tests.
    pub fn open_in_memory() -> Result<Self, StoreError> {
        let mut conn = Connection::open_in_memory()?;
        set_up(&mut conn, ":memory:")?;
        Self::prepare(conn, ":memory:")
    }

    /// The journal's file (`None` in memory).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// This connection's own settings, on a journal that is set up.
    fn prepare(conn: Connection, shown: &str) -> Result<Self, StoreError> {
        let open = |source| StoreError::Open { path: shown.to_string(), source };
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open)?;
        // synchronous=NORMAL keeps every commit across a process crash (only power loss can lose the
        // last ones), at a fraction of FULL's fsyncs.
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(open)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(open)?;
        Ok(Self { conn, path: None })
    }

    pub fn create_session(&mut self, s: &NewSession<'_>) -> Result<(), StoreError> {
        insert_session(&self.conn, s, SessionState::Starting)
    }

    /// Records session `s` as scheduled, with when it is to start and how (`launch`), in one
    /// transaction: a process killed at any moment leaves either nothing or a whole schedule.
    pub fn create_scheduled(
        &mut self,
        s: &NewSession<'_>,
        due: DateTime<Utc>,
        why: &str,
        launch: &str,
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        insert_session(&tx, s, SessionState::Scheduled)?;
        tx.execute(
            "INSERT INTO schedules (session, due, why, launch) VALUES (?1, ?2, ?3, ?4)",
            params![s.id, format_ts(due), why, launch],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// The schedules not started, cancelled or skipped yet (claimed ones included: their process
    /// may have died before it started them), the earliest first.
    pub fn pending_schedules(&self) -> Result<Vec<ScheduleRow>, StoreError> {
        self.schedule_rows("WHERE s.state = 'scheduled' ORDER BY c.due, c.session", params![])
    }

    /// Session `id`'s schedule, whatever became of it.
    pub fn schedule_of(&self, id: &str) -> Result<Option<ScheduleRow>, StoreError> {
        Ok(self.schedule_rows("WHERE c.session = ?1", params![id])?.into_iter().next())
    }

    fn schedule_rows(&self, tail: &str, params: &[&dyn rusqlite::ToSql]) -> Result<Vec<ScheduleRow>, StoreError> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT c.session, c.due, c.why, c.launch, c.claimed, s.owner_pid, c.claimed_by
             FROM schedules c JOIN sessions s ON s.id = c.session {tail}"
        ))?;
        let rows = stmt
            .query_map(params, |r| {
                let due: String = r.get(1)?;
                Ok(ScheduleRow {
                    session: r.get(0)?,
                    due: DateTime::parse_from_rfc3339(&due).map(|t| t.with_timezone(&Utc)).unwrap_or_default(),
                    why: r.get(2)?,
                    launch: r.get(3)?,
                    claimed: r.get::<_, Option<String>>(4)?.is_some(),
                    owner_pid: r.get(5)?,
                    claimed_by: r.get(6)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Takes session `id`'s schedule for process `pid` to start (or skip) it: false when another
    /// process took it first or it is no longer scheduled (cancelled).
    pub fn claim_schedule(&mut self, id: &str, pid: u32, now: DateTime<Utc>) -> Result<bool, StoreError> {
        let taken = self.conn.execute(
            "UPDATE schedules SET claimed = ?2, claimed_by = ?3
             WHERE session = ?1 AND claimed IS NULL
               AND (SELECT state FROM sessions WHERE id = ?1) = 'scheduled'",
            params![id, format_ts(now), pid],
        )?;
        Ok(taken == 1)
    }

    /// What session `id` was armed with: its latest `contract` event (`None` for a session from
    /// before contracts were journalled).
    pub fn contract(&self, id: &str) -> Result<Option<crate::contract::Contract>, StoreError> {
        Ok(self.events_named(id, &["contract"])?.into_iter().rev().find_map(|e| {
            match serde_json::from_str::<Event>(&e.body).ok()?.kind {
                EventKind::Contract { contract } => Some(*contract),
                _ => None,
            }
        }))
    }

    /// Takes over session `id`'s schedule from process `stale`, which claimed it and died before
    /// it started it: false when another process was first.
    pub fn reclaim_schedule(&mut self, id: &str, stale: i64, pid: u32, now: DateTime<Utc>) -> Result<bool, StoreError> {
        let taken = self.conn.execute(
            "UPDATE schedules SET claimed = ?3, claimed_by = ?4
             WHERE session = ?1 AND claimed_by = ?2
               AND (SELECT state FROM sessions WHERE id = ?1) = 'scheduled'",
            params![id, stale, format_ts(now), pid],
        )?;
        Ok(taken == 1)
    }

    /// Records the client account session `id` runs under.
    /// Session `id`'s work moved to another agent: its agent, command and account from now on.
    pub fn set_agent(
        &mut self,
        id: &str,
        agent: AgentKind,
        command: &[String],
        account: Option<(&str, &str)>,
    ) -> Result<(), StoreError> {
        let (name, dir) = account.unzip();
        self.conn.execute(
            "UPDATE sessions SET agent = ?2, command = ?3, account = ?4, account_dir = ?5 WHERE id = ?1",
            params![id, agent.as_str(), serde_json::to_string(command).expect("strings serialise"), name, dir],
        )?;
        Ok(())
    }

    pub fn set_account(&mut self, id: &str, name: &str, dir: &str) -> Result<(), StoreError> {
        self.conn
            .execute("UPDATE sessions SET account = ?2, account_dir = ?3 WHERE id = ?1", params![id, name, dir])?;
        Ok(())
    }

    /// Appends an event and updates its session's summary, in one transaction. Returns the row id.
    pub fn record(&mut self, event: &Event) -> Result<i64, StoreError> {
        let ts = format_ts(event.ts);
        let name = event.kind.name();
        let state = event.kind.new_state().map(|s| s.as_str());
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO events (ts, session, event, state, body) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![ts, event.session.as_str(), name, state, event.to_json()],
        )?;
        let id = tx.last_insert_rowid();
        tx.execute(
            "UPDATE sessions SET last_event = ?2, last_event_at = ?3 WHERE id = ?1",
            params![event.session.as_str(), name, ts],
        )?;
        if let EventKind::ResumeKept { .. } = &event.kind {
            tx.execute("UPDATE sessions SET kept = ?2 WHERE id = ?1", params![event.session.as_str(), ts])?;
        }
        if let EventKind::State { state, reason, exit_code, signal, error, .. } = &event.kind {
            tx.execute(
                "UPDATE sessions SET state = ?2, reason = ?3, kept = NULL WHERE id = ?1",
                params![event.session.as_str(), state.as_str(), reason],
            )?;
            if state.is_final() {
                tx.execute(
                    "UPDATE sessions SET ended = ?2, exit_code = ?3, exit_signal = ?4, error = ?5 WHERE id = ?1",
                    params![event.session.as_str(), ts, exit_code, signal, error],
                )?;
            } else {
                // Started again after an exit (a restart): it has not ended.
                tx.execute(
                    "UPDATE sessions SET ended = NULL WHERE id = ?1 AND ended IS NOT NULL",
                    [event.session.as_str()],
                )?;
            }
        }
        tx.commit()?;
        Ok(id)
    }

    /// Every session, newest first.
    pub fn sessions(&self) -> Result<Vec<SessionRow>, StoreError> {
        let mut stmt = self.conn.prepare(&format!("{SESSION_SELECT} WHERE id != '' ORDER BY created DESC, id"))?;
        let rows = stmt.query_map([], session_row)?.collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    pub fn session(&self, id: &str) -> Result<Option<SessionRow>, StoreError> {
        Ok(self
            .conn
            .query_row(&format!("{SESSION_SELECT} WHERE id = ?1 AND id != ''"), [id], session_row)
            .optional()?)
    }

    /// The one session whose id is or starts with `prefix`.
    pub fn find_session(&self, prefix: &str) -> Result<SessionRow, StoreError> {
        if let Some(exact) = self.session(prefix)? {
            return Ok(exact);
        }
        let pattern = format!("{}%", prefix.replace(['%', '_'], ""));
        let mut stmt = self
            .conn
            .prepare(&format!("{SESSION_SELECT} WHERE id LIKE ?1 AND id != '' ORDER BY created DESC LIMIT 6"))?;
        let mut rows = stmt.query_map([pattern], session_row)?.collect::<Result<Vec<_>, _>>()?;
        match rows.len() {
            0 => Err(StoreError::NoSuchSession(prefix.to_string())),
            1 => Ok(rows.remove(0)),
            _ => Err(StoreError::Ambiguous {
                prefix: prefix.to_string(),
                candidates: rows.iter().map(|r| r.id.as_str()).collect::<Vec<_>>().join(", "),
            }),
        }
    }

    /// Events in the order they were written.
    pub fn events(&self, q: &EventQuery) -> Result<Vec<StoredEvent>, StoreError> {
        let since = q.since.map(format_ts);
        let mut stmt = self.conn.prepare(
            "SELECT id, ts, session, event, body FROM events
             WHERE (?1 IS NULL OR session = ?1) AND (?2 IS NULL OR ts >= ?2) AND (?3 IS NULL OR id > ?3)
             ORDER BY id LIMIT ?4",
        )?;
        let limit = q.limit.map_or(-1, |l| l as i64);
        let rows = stmt
            .query_map(params![q.session, since, q.after_id, limit], stored_event)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// The newest `limit` events of one session, oldest first.
    pub fn recent_events(&self, session: &str, limit: usize) -> Result<Vec<StoredEvent>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT id, ts, session, event, body FROM
               (SELECT * FROM events WHERE session = ?1 ORDER BY id DESC LIMIT ?2)
             ORDER BY id",
        )?;
        let rows = stmt.query_map(params![session, limit as i64], stored_event)?.collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// One session's events of the kinds named, oldest first (a night's `usage` events, its
    /// `contract`, whatever lies beyond [`Self::recent_events`]).
    pub fn events_named(&self, session: &str, names: &[&str]) -> Result<Vec<StoredEvent>, StoreError> {
        let names = serde_json::to_string(names).unwrap_or_else(|_| "[]".into());
        let mut stmt = self.conn.prepare(
            "SELECT id, ts, session, event, body FROM events
             WHERE session = ?1 AND event IN (SELECT value FROM json_each(?2)) ORDER BY id",
        )?;
        let rows = stmt.query_map(params![session, names], stored_event)?.collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// The id of the newest event (0 when there is none): where a live follower starts.
    pub fn last_event_id(&self) -> Result<i64, StoreError> {
        Ok(self.conn.query_row("SELECT COALESCE(MAX(id), 0) FROM events", [], |r| r.get(0))?)
    }

    /// Keeps a usage sample of a session.
    pub fn record_usage(&mut self, session: &str, ts: DateTime<Utc>, s: &Sample) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT INTO usage_samples (session, ts, five_hour_pct, five_hour_resets_at, seven_day_pct,
                                        seven_day_resets_at, context_pct, cost_usd, model, account, tokens, agent)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, (SELECT account FROM sessions WHERE id = ?1), ?10,
                     (SELECT agent FROM sessions WHERE id = ?1))",
            params![
                session,
                format_ts(ts),
                s.five_hour_pct,
                s.five_hour_resets_at.map(format_ts),
                s.seven_day_pct,
                s.seven_day_resets_at.map(format_ts),
                s.context_pct,
                s.cost_usd,
                s.model,
                s.tokens.and_then(|t| i64::try_from(t).ok()),
            ],
        )?;
        if self.conn.last_insert_rowid() % THIN_EVERY == 0 {
            if let Err(e) = self.thin_usage(ts - USAGE_IN_FULL) {
                tracing::warn!("could not thin old usage samples: {e}");
            }
        }
        Ok(())
    }

    /// Thins usage older than `cutoff` to the last sample of each session's ten minutes (the
    /// `substr` of the timestamp), keeping any sample after which the cost or the tokens went down
    /// (a /clear starts them again: the digest adds up the rises), and the `usage` events the same
    /// way.
    /// Returns how many samples and events went.
    pub fn thin_usage(&mut self, cutoff: DateTime<Utc>) -> Result<(usize, usize), StoreError> {
        let cutoff = format_ts(cutoff);
        let tx = self.conn.transaction()?;
        let samples = tx.execute(
            "DELETE FROM usage_samples WHERE ts < ?1 AND id NOT IN (
                SELECT id FROM (
                    SELECT id, cost_usd, tokens,
                        ROW_NUMBER() OVER (PARTITION BY session, substr(ts, 1, 15) ORDER BY id DESC) AS nth,
                        LEAD(cost_usd) OVER (PARTITION BY session ORDER BY id) AS next_cost,
                        LEAD(tokens) OVER (PARTITION BY session ORDER BY id) AS next_tokens
                    FROM usage_samples WHERE ts < ?1)
                WHERE nth = 1 OR next_cost < cost_usd OR next_tokens < tokens)",
            [&cutoff],
        )?;
        let events = tx.execute(
            "DELETE FROM events WHERE event = 'usage' AND ts < ?1 AND id NOT IN (
                SELECT id FROM (
                    SELECT id, ROW_NUMBER() OVER (PARTITION BY session, substr(ts, 1, 15) ORDER BY id DESC) AS nth
                    FROM events WHERE event = 'usage' AND ts < ?1)
                WHERE nth = 1)",
            [&cutoff],
        )?;
        tx.commit()?;
        Ok((samples, events))
    }

    /// Usage samples since `since` (all when `None`), oldest first; `agent` and `session` narrow
    /// them. Each client has its own plan and windows: Claude's and Codex's never mix.
    pub fn usage(
        &self,
        agent: Option<AgentKind>,
        session: Option<&str>,
        since: Option<DateTime<Utc>>,
    ) -> Result<Vec<UsageRow>, StoreError> {
        self.usage_rows(
            "WHERE (?3 IS NULL OR agent = ?3) AND (?1 IS NULL OR session = ?1) AND (?2 IS NULL OR ts >= ?2)
             ORDER BY id",
            params![session, since.map(format_ts), agent.map(|a| a.plan().as_str())],
        )
    }

    /// The newest sample of `agent` that knows the plan windows on each account (the client's
    /// default account as `None`), the most recent first.
    pub fn latest_limits_by_account(&self, agent: AgentKind) -> Result<Vec<UsageRow>, StoreError> {
        self.usage_rows(
            "WHERE id IN (SELECT MAX(u.id) FROM usage_samples u LEFT JOIN sessions s ON s.id = u.session
                          WHERE (u.five_hour_pct IS NOT NULL OR u.seven_day_pct IS NOT NULL)
                            AND (CASE WHEN COALESCE(u.agent, s.agent) = 'codex' THEN 'codex' ELSE 'claude' END) = ?1
                          GROUP BY u.account)
             ORDER BY id DESC",
            params![agent.plan().as_str()],
        )
    }

    /// The newest sample of `agent` that knows the plan windows, from any of its sessions.
    pub fn latest_limits(&self, agent: AgentKind) -> Result<Option<UsageRow>, StoreError> {
        let rows = self.usage_rows(
            "WHERE agent = ?1 AND (five_hour_pct IS NOT NULL OR seven_day_pct IS NOT NULL) ORDER BY id DESC LIMIT 1",
            params![agent.plan().as_str()],
        )?;
        Ok(rows.into_iter().next())
    }

    fn usage_rows(&self, tail: &str, params: &[&dyn rusqlite::ToSql]) -> Result<Vec<UsageRow>, StoreError> {
        // Each sample with the plan it counts against: Codex's for a Codex session, else Claude's
        // (a session no longer kept included: Claude's was the only one reported before Codex's).
        let mut stmt = self.conn.prepare(&format!(
            "SELECT * FROM (SELECT u.id AS id, u.session AS session, u.ts AS ts, u.five_hour_pct AS five_hour_pct,
                    u.five_hour_resets_at AS five_hour_resets_at, u.seven_day_pct AS seven_day_pct,
                    u.seven_day_resets_at AS seven_day_resets_at, u.context_pct AS context_pct,
                    u.cost_usd AS cost_usd, u.model AS model, u.account AS account,
                    (CASE WHEN COALESCE(u.agent, s.agent) = 'codex' THEN 'codex' ELSE 'claude' END) AS agent, u.tokens AS tokens
             FROM usage_samples u LEFT JOIN sessions s ON s.id = u.session) {tail}"
        ))?;
        let parse =
            |t: Option<String>| t.and_then(|t| DateTime::parse_from_rfc3339(&t).ok()).map(|t| t.with_timezone(&Utc));
        let rows = stmt
            .query_map(params, |r| {
                Ok(UsageRow {
                    session: r.get(1)?,
                    ts: r.get(2)?,
                    account: r.get(10)?,
                    agent: r.get(11)?,
                    sample: Sample {
                        five_hour_pct: r.get(3)?,
                        five_hour_resets_at: parse(r.get(4)?),
                        seven_day_pct: r.get(5)?,
                        seven_day_resets_at: parse(r.get(6)?),
                        context_pct: r.get(7)?,
                        cost_usd: r.get(8)?,
                        model: r.get(9)?,
                        tokens: r.get::<_, Option<i64>>(12)?.and_then(|t| u64::try_from(t).ok()),
                    },
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Stores a morning summary; `false` when one for that morning exists already (another process
    /// made it).
    pub fn insert_summary(&mut self, row: &SummaryRow) -> Result<bool, StoreError> {
        let n = self.conn.execute(
            "INSERT OR IGNORE INTO summaries (scheduled_for, created_at, from_ts, to_ts, headline, body)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![row.scheduled_for, row.created_at, row.from_ts, row.to_ts, row.headline, row.body],
        )?;
        Ok(n == 1)
    }

    /// The newest morning summary.
    pub fn latest_summary(&self) -> Result<Option<SummaryRow>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT scheduled_for, created_at, from_ts, to_ts, headline, body FROM summaries ORDER BY scheduled_for DESC LIMIT 1",
                [],
                |r| {
                    Ok(SummaryRow {
                        scheduled_for: r.get(0)?,
                        created_at: r.get(1)?,
                        from_ts: r.get(2)?,
                        to_ts: r.get(3)?,
                        headline: r.get(4)?,
                        body: r.get(5)?,
                    })
                },
            )
            .optional()?)
    }

    pub fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(self.conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0)).optional()?)
    }

    pub fn set_meta(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value],
        )?;
        Ok(())
    }

    /// Whether anything happened in `[from, to)`.
    pub fn any_events_between(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<bool, StoreError> {
        Ok(self.conn.query_row(
            "SELECT EXISTS(SELECT 1 FROM events WHERE ts >= ?1 AND ts < ?2)",
            params![format_ts(from), format_ts(to)],
            |r| r.get(0),
        )?)
    }

    /// SQLite's own consistency check; `ok` when the file is sound.
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        Ok(self.conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?)
    }
}

/// A new session's row, in `state`.
fn insert_session(conn: &Connection, s: &NewSession<'_>, state: SessionState) -> Result<(), StoreError> {
    let created = format_ts(s.created);
    conn.execute(
        "INSERT INTO sessions (id, command, cwd, agent, preset, created, state, last_event, last_event_at,
                               owner_pid, control_socket, kind)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?10, 'created', ?6, ?7, ?8, ?9)",
        params![
            s.id,
            serde_json::to_string(s.command).expect("strings serialise"),
            s.cwd,
            s.agent,
            s.preset,
            created,
            s.owner_pid,
            s.control_socket,
            s.kind.as_str(),
            state.as_str(),
        ],
    )?;
    Ok(())
}

/// The schema version this build migrates to.
#[cfg(test)]
mod tests;
