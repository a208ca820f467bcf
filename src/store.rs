//! The journal: a SQLite database in the state directory that outlives every Nightshift process.
//!
//! Every event is committed in its own transaction before anyone is told about it, in WAL mode, so a
//! process killed at any instant loses at most the event it was writing. Several processes (a headless
//! run, the tray app, the CLI reading it) share one journal; writers wait for each other through
//! SQLite's busy timeout. The schema evolves only through the numbered migrations below.
//!
//! Creating the file, turning on WAL and migrating are done by one process at a time, under an
//! exclusive `flock` of a lock file beside the journal: SQLite alone cannot make "read the schema
//! version, then migrate" atomic across processes, and ten processes started together on a fresh
//! state directory would each try to create the tables. A journal that is already current and in
//! WAL mode is opened without the lock. A journal that is not SQLite, or that a newer Nightshift
//! migrated further than this one knows, is refused with a one-line error and never written.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension, Row};
use rusqlite_migration::{Migrations, M};
use serde::Serialize;

use crate::clock::format_ts;
use crate::event::{Event, EventKind, SessionState};
use crate::usage::Sample;

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

fn migrations() -> Migrations<'static> {
    Migrations::new(steps())
}

/// The numbered migrations, oldest first; the schema version is how many have run.
fn steps() -> Vec<M<'static>> {
    vec![
        M::up(
            "CREATE TABLE sessions (
            id             TEXT PRIMARY KEY,
            command        TEXT NOT NULL,   -- JSON array: the argv
            cwd            TEXT NOT NULL,
            agent          TEXT NOT NULL,
            preset         TEXT,
            created        TEXT NOT NULL,   -- RFC 3339, ms, UTC
            ended          TEXT,
            exit_code      INTEGER,
            exit_signal    TEXT,
            error          TEXT,
            state          TEXT NOT NULL,
            reason         TEXT,
            last_event     TEXT NOT NULL,
            last_event_at  TEXT NOT NULL,
            owner_pid      INTEGER,         -- the Nightshift process that supervises it
            control_socket TEXT             -- where that process takes commands
        ) STRICT;
        CREATE TABLE events (
            id      INTEGER PRIMARY KEY AUTOINCREMENT,
            ts      TEXT NOT NULL,
            session TEXT NOT NULL REFERENCES sessions(id),
            event   TEXT NOT NULL,
            state   TEXT,
            body    TEXT NOT NULL           -- the event's JSON, as the --events stream carries it
        ) STRICT;
        CREATE INDEX events_by_session ON events(session, id);
        CREATE INDEX events_by_ts ON events(ts);",
        ),
        // Plan usage from the statusLine exporter, stored when it changes.
        M::up(
            "CREATE TABLE usage_samples (
            id                  INTEGER PRIMARY KEY AUTOINCREMENT,
            session             TEXT NOT NULL REFERENCES sessions(id),
            ts                  TEXT NOT NULL,
            five_hour_pct       REAL,
            five_hour_resets_at TEXT,
            seven_day_pct       REAL,
            seven_day_resets_at TEXT,
            context_pct         REAL,
            cost_usd            REAL,
            model               TEXT
        ) STRICT;
        CREATE INDEX usage_by_ts ON usage_samples(ts);",
        ),
        // Morning run summaries (one per scheduled morning, whichever process makes it) and small
        // bits of state such as when the digest was last viewed.
        M::up(
            "CREATE TABLE summaries (
            id            INTEGER PRIMARY KEY AUTOINCREMENT,
            scheduled_for TEXT NOT NULL UNIQUE,
            created_at    TEXT NOT NULL,
            from_ts       TEXT NOT NULL,
            to_ts         TEXT NOT NULL,
            headline      TEXT NOT NULL,
            body          TEXT NOT NULL     -- the digest as JSON
        ) STRICT;
        CREATE TABLE meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        ) STRICT;",
        ),
        // 0.1.0 journalled a user's change of what a session does by itself as a sentence
        // (`"what":"held: …"`); it is an enum now (`"change":"held"`), with the sentence kept as the
        // detail. The only place the old words are read, once.
        M::up(
            "UPDATE events SET body = json_set(json_remove(body, '$.what'),
                '$.change', CASE
                    WHEN json_extract(body, '$.what') = 'auto-resume off' THEN 'auto_resume_off'
                    WHEN json_extract(body, '$.what') LIKE 'held:%' THEN 'held'
                    WHEN json_extract(body, '$.what') = 'released' THEN 'released'
                    WHEN json_extract(body, '$.what') LIKE 'auto-resume on%' THEN 'auto_resume_on'
                    WHEN json_extract(body, '$.what') LIKE 'answered the usage-limit menu%' THEN 'menu_answered'
                END,
                '$.detail', json_extract(body, '$.what'))
            WHERE event = 'automation' AND json_extract(body, '$.change') IS NULL;",
        ),
        // When Nightshift ended while the session waited for a limit's reset and kept its resume
        // (its next state, or an adoption, clears it).
        M::up("ALTER TABLE sessions ADD COLUMN kept TEXT;"),
        // A session is a terminal one (an agent in a PTY) or a loop of headless iterations.
        M::up("ALTER TABLE sessions ADD COLUMN kind TEXT NOT NULL DEFAULT 'terminal';"),
        // The client account a session runs under (its name and config directory), and the account
        // each usage sample was measured on: windows are per account.
        M::up(
            "ALTER TABLE sessions ADD COLUMN account TEXT;
            ALTER TABLE sessions ADD COLUMN account_dir TEXT;
            ALTER TABLE usage_samples ADD COLUMN account TEXT;",
        ),
        // Scheduled starts: when a session recorded as `scheduled` is to start, and how (the
        // command line or the window's form); the process that starts it claims it first, so two
        // processes never start one schedule twice.
        M::up(
            "CREATE TABLE schedules (
            session    TEXT PRIMARY KEY REFERENCES sessions(id),
            due        TEXT NOT NULL,   -- RFC 3339, ms, UTC
            why        TEXT NOT NULL,   -- `at 23:30`, `when the 5-hour window resets`
            launch     TEXT NOT NULL,   -- JSON: how to start it (schedule::Launch)
            claimed    TEXT,            -- when a process took it to start it
            claimed_by INTEGER
        ) STRICT;",
        ),
    ]
}

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
    pid_alive(pid)
        && std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|comm| comm.starts_with("nightshift"))
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
}

impl From<SessionRow> for SessionSummary {
    fn from(row: SessionRow) -> Self {
        let shown_state = row.shown_state();
        let standing = row.standing();
        let command_line = crate::pty::shell_words(&row.command);
        Self { row, shown_state, standing, command_line }
    }
}

/// Whether a process with this pid exists (even one we may not signal).
fn pid_alive(pid: i64) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    !matches!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None), Err(nix::errno::Errno::ESRCH))
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

    /// Another connection to a journal that [`Store::open`] has opened (and migrated): for readers,
    /// so they never wait on the writer's connection.
    pub fn open_reader(path: &Path) -> Result<Self, StoreError> {
        let shown = path.display().to_string();
        let open = |source| StoreError::Open { path: shown.clone(), source };
        let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE).map_err(open)?;
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
    pub fn set_account(&mut self, id: &str, name: &str, dir: &str) -> Result<(), StoreError> {
        self.conn
            .execute("UPDATE sessions SET account = ?2, account_dir = ?3 WHERE id = ?1", params![id, name, dir])?;
        Ok(())
    }

    /// A lost session taken over by process `owner_pid` (it restarts the agent).
    pub fn adopt_session(&mut self, id: &str, owner_pid: u32, control_socket: Option<&str>) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE sessions SET owner_pid = ?2, control_socket = ?3, ended = NULL, kept = NULL WHERE id = ?1",
            params![id, owner_pid, control_socket],
        )?;
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
        let mut stmt = self.conn.prepare(&format!("{SESSION_SELECT} ORDER BY created DESC, id"))?;
        let rows = stmt.query_map([], session_row)?.collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    pub fn session(&self, id: &str) -> Result<Option<SessionRow>, StoreError> {
        Ok(self.conn.query_row(&format!("{SESSION_SELECT} WHERE id = ?1"), [id], session_row).optional()?)
    }

    /// The one session whose id is or starts with `prefix`.
    pub fn find_session(&self, prefix: &str) -> Result<SessionRow, StoreError> {
        if let Some(exact) = self.session(prefix)? {
            return Ok(exact);
        }
        let pattern = format!("{}%", prefix.replace(['%', '_'], ""));
        let mut stmt =
            self.conn.prepare(&format!("{SESSION_SELECT} WHERE id LIKE ?1 ORDER BY created DESC LIMIT 6"))?;
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

    /// Takes a session whose Nightshift is gone over for process `pid` (with its control socket),
    /// if its owner is still `was` (another process did not take it first). True when it did: of
    /// two processes restoring at once (the app and `nightshift restore` at login), exactly one
    /// starts the agent again.
    pub fn claim_session(
        &mut self,
        id: &str,
        was: Option<i64>,
        pid: u32,
        control_socket: Option<&str>,
    ) -> Result<bool, StoreError> {
        let n = self.conn.execute(
            "UPDATE sessions SET owner_pid = ?3, control_socket = ?4, ended = NULL, kept = NULL
             WHERE id = ?1 AND owner_pid IS ?2 AND state NOT IN ('exited', 'failed')",
            params![id, was, pid, control_socket],
        )?;
        Ok(n == 1)
    }

    /// The id of the newest event (0 when there is none): where a live follower starts.
    pub fn last_event_id(&self) -> Result<i64, StoreError> {
        Ok(self.conn.query_row("SELECT COALESCE(MAX(id), 0) FROM events", [], |r| r.get(0))?)
    }

    /// Keeps a usage sample of a session.
    pub fn record_usage(&mut self, session: &str, ts: DateTime<Utc>, s: &Sample) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT INTO usage_samples (session, ts, five_hour_pct, five_hour_resets_at, seven_day_pct,
                                        seven_day_resets_at, context_pct, cost_usd, model, account)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, (SELECT account FROM sessions WHERE id = ?1))",
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
    /// `substr` of the timestamp), keeping any sample after which the cost went down (a /clear
    /// starts it again: the digest adds up the rises), and the `usage` events the same way.
    /// Returns how many samples and events went.
    pub fn thin_usage(&mut self, cutoff: DateTime<Utc>) -> Result<(usize, usize), StoreError> {
        let cutoff = format_ts(cutoff);
        let tx = self.conn.transaction()?;
        let samples = tx.execute(
            "DELETE FROM usage_samples WHERE ts < ?1 AND id NOT IN (
                SELECT id FROM (
                    SELECT id, cost_usd,
                        ROW_NUMBER() OVER (PARTITION BY session, substr(ts, 1, 15) ORDER BY id DESC) AS nth,
                        LEAD(cost_usd) OVER (PARTITION BY session ORDER BY id) AS next_cost
                    FROM usage_samples WHERE ts < ?1)
                WHERE nth = 1 OR next_cost < cost_usd)",
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

    /// Usage samples since `since` (all when `None`), oldest first; `session` narrows to one.
    pub fn usage(&self, session: Option<&str>, since: Option<DateTime<Utc>>) -> Result<Vec<UsageRow>, StoreError> {
        self.usage_rows(
            "WHERE (?1 IS NULL OR session = ?1) AND (?2 IS NULL OR ts >= ?2) ORDER BY id",
            params![session, since.map(format_ts)],
        )
    }

    /// The newest sample that knows the plan windows on each account (the client's default account
    /// as `None`), the most recent first.
    pub fn latest_limits_by_account(&self) -> Result<Vec<UsageRow>, StoreError> {
        self.usage_rows(
            "WHERE id IN (SELECT MAX(id) FROM usage_samples
                          WHERE five_hour_pct IS NOT NULL OR seven_day_pct IS NOT NULL GROUP BY account)
             ORDER BY id DESC",
            params![],
        )
    }

    /// The newest sample that knows the plan windows, from any session.
    pub fn latest_limits(&self) -> Result<Option<UsageRow>, StoreError> {
        let rows = self.usage_rows(
            "WHERE five_hour_pct IS NOT NULL OR seven_day_pct IS NOT NULL ORDER BY id DESC LIMIT 1",
            params![],
        )?;
        Ok(rows.into_iter().next())
    }

    fn usage_rows(&self, tail: &str, params: &[&dyn rusqlite::ToSql]) -> Result<Vec<UsageRow>, StoreError> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT session, ts, five_hour_pct, five_hour_resets_at, seven_day_pct, seven_day_resets_at,
                    context_pct, cost_usd, model, account FROM usage_samples {tail}"
        ))?;
        let parse =
            |t: Option<String>| t.and_then(|t| DateTime::parse_from_rfc3339(&t).ok()).map(|t| t.with_timezone(&Utc));
        let rows = stmt
            .query_map(params, |r| {
                Ok(UsageRow {
                    session: r.get(0)?,
                    ts: r.get(1)?,
                    account: r.get(9)?,
                    sample: Sample {
                        five_hour_pct: r.get(2)?,
                        five_hour_resets_at: parse(r.get(3)?),
                        seven_day_pct: r.get(4)?,
                        seven_day_resets_at: parse(r.get(5)?),
                        context_pct: r.get(6)?,
                        cost_usd: r.get(7)?,
                        model: r.get(8)?,
                        // Not kept: the budget reads them live.
                        tokens: None,
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
fn latest_version() -> i64 {
    i64::try_from(steps().len()).expect("few migrations")
}

/// The journal's schema version, or why the file is no journal.
fn schema_version(conn: &Connection, shown: &str) -> Result<i64, StoreError> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(|e| refusal(shown, e))?;
    if version > latest_version() {
        return Err(StoreError::TooNew { path: shown.to_string(), found: version, known: latest_version() });
    }
    Ok(version)
}

/// Whether the journal is set up already (current schema, WAL): then no lock is needed.
fn is_current(conn: &Connection, shown: &str) -> Result<bool, StoreError> {
    if schema_version(conn, shown)? != latest_version() {
        return Ok(false);
    }
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).map_err(|e| refusal(shown, e))?;
    Ok(mode.eq_ignore_ascii_case("wal"))
}

/// Turns on WAL and migrates: one process at a time (the caller holds the [`SetupLock`]).
fn set_up(conn: &mut Connection, shown: &str) -> Result<(), StoreError> {
    // Read again under the lock: another process may have done it meanwhile, or may be newer.
    schema_version(conn, shown)?;
    // WAL: readers never block the writer and a killed writer leaves committed events intact.
    conn.pragma_update(None, "journal_mode", "WAL").map_err(|e| refusal(shown, e))?;
    migrations().to_latest(conn).map_err(|e| {
        let message = match e {
            // Its message only: the error's own Display dumps the migration's SQL.
            rusqlite_migration::Error::RusqliteError { err, .. } => sqlite_message(&err),
            other => other.to_string(),
        };
        StoreError::Migrate { path: shown.to_string(), message: format!("{message}; it is left as it was") }
    })
}

/// SQLite's own words, without the statement they came from (a migration's is a page of SQL).
fn sqlite_message(e: &rusqlite::Error) -> String {
    match e {
        rusqlite::Error::SqliteFailure(_, Some(msg)) | rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
        other => other.to_string(),
    }
}

/// A refusal to open, in words that say the fix.
fn refusal(shown: &str, e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => {
            StoreError::NotAJournal { path: shown.to_string(), detail: "file is not a database".into() }
        }
        _ => StoreError::Open { path: shown.to_string(), source: e },
    }
}

/// An exclusive `flock` of `<journal>.lock`, held while one process creates or migrates the journal.
/// (Not of the journal itself: closing any descriptor of a file drops SQLite's POSIX locks on it.)
struct SetupLock(#[allow(dead_code)] nix::fcntl::Flock<std::fs::File>);

impl SetupLock {
    fn take(journal: &Path, shown: &str) -> Result<Self, StoreError> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut lock_path = journal.as_os_str().to_owned();
        lock_path.push(".lock");
        let lock_path = PathBuf::from(lock_path);
        let lock_err = |source| StoreError::LockFile { path: lock_path.display().to_string(), source };
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock_path)
            .map_err(lock_err)?;
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        loop {
            match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
                Ok(lock) => return Ok(Self(lock)),
                Err((f, nix::errno::Errno::EWOULDBLOCK | nix::errno::Errno::EINTR))
                    if std::time::Instant::now() < deadline =>
                {
                    file = f;
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err((_, nix::errno::Errno::EWOULDBLOCK)) => {
                    return Err(StoreError::SetupLocked {
                        path: shown.to_string(),
                        lock: lock_path.display().to_string(),
                        secs: BUSY_TIMEOUT.as_secs(),
                    })
                }
                Err((_, errno)) => return Err(lock_err(std::io::Error::from(errno))),
            }
        }
    }
}

const SESSION_SELECT: &str = "SELECT id, command, cwd, agent, preset, created, ended, exit_code, exit_signal, error,
        state, reason, last_event, last_event_at, owner_pid, control_socket, kept, kind, account, account_dir FROM sessions";

fn stored_event(r: &Row<'_>) -> rusqlite::Result<StoredEvent> {
    Ok(StoredEvent { id: r.get(0)?, ts: r.get(1)?, session: r.get(2)?, event: r.get(3)?, body: r.get(4)? })
}

fn session_row(r: &Row<'_>) -> rusqlite::Result<SessionRow> {
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
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::SessionId;
    use chrono::TimeZone;

    fn new_session<'a>(id: &'a str, command: &'a [String]) -> NewSession<'a> {
        NewSession {
            id,
            kind: crate::store::SessionKind::Terminal,
            command,
            cwd: "/tmp",
            agent: "generic",
            preset: None,
            created: Utc.with_ymd_and_hms(2026, 11, 30, 22, 0, 0).unwrap(),
            owner_pid: 42,
            control_socket: None,
        }
    }

    #[test]
    fn migrations_are_valid() {
        migrations().validate().unwrap();
    }

    #[test]
    fn old_usage_is_thinned_to_ten_minutes_keeping_cost_resets_and_the_last_day_whole() {
        let mut store = Store::open_in_memory().unwrap();
        let cmd = vec!["claude".to_string()];
        store.create_session(&new_session("0a0a0a0a", &cmd)).unwrap();
        let t0 = Utc.with_ymd_and_hms(2026, 11, 30, 22, 0, 0).unwrap();
        // An hour at one sample a minute; the cost starts again (a /clear) at minute 33.
        for m in 0..60 {
            let cost = if m < 33 { m as f64 } else { (m - 33) as f64 };
            let sample = Sample { cost_usd: Some(cost), context_pct: Some(m as f64), ..Sample::default() };
            let ts = t0 + chrono::Duration::minutes(m);
            store.record_usage("0a0a0a0a", ts, &sample).unwrap();
            let ev = Event { ts, session: SessionId::from("0a0a0a0a".to_string()), kind: EventKind::Usage { sample } };
            store.record(&ev).unwrap();
        }
        // Thin what is older than minute 40: its last ten minutes are 22:30–22:39.
        let (samples, events) = store.thin_usage(t0 + chrono::Duration::minutes(40)).unwrap();
        let kept: Vec<i64> =
            store.usage(None, None).unwrap().iter().map(|r| r.sample.context_pct.unwrap() as i64).collect();
        let mut expected = vec![9, 19, 29, 32, 39];
        expected.extend(40..60);
        assert_eq!(kept, expected, "the last of each ten minutes, the one before the cost's reset, the rest whole");
        assert_eq!(samples, 60 - expected.len());
        assert_eq!(events, 40 - 4, "usage events: the last of each ten minutes");
        assert_eq!(store.integrity_check().unwrap(), "ok");
    }

    #[test]
    fn threads_opening_a_fresh_journal_together_all_get_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.sqlite3");
        let barrier = std::sync::Barrier::new(16);
        let results: Vec<Result<(), String>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..16)
                .map(|i| {
                    let (path, barrier) = (&path, &barrier);
                    s.spawn(move || {
                        barrier.wait();
                        let mut store = Store::open(path).map_err(|e| e.to_string())?;
                        let id = format!("{i:08x}");
                        store.create_session(&new_session(&id, &["true".to_string()])).map_err(|e| e.to_string())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(results.iter().all(Result::is_ok), "{results:?}");
        assert_eq!(Store::open(&path).unwrap().sessions().unwrap().len(), 16);
    }

    /// The file's bytes and its WAL's, to show a refused journal was not written.
    fn contents(path: &Path) -> (Vec<u8>, Option<Vec<u8>>) {
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        (std::fs::read(path).unwrap(), std::fs::read(PathBuf::from(wal)).ok())
    }

    #[test]
    fn a_journal_from_a_newer_nightshift_is_refused_and_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.sqlite3");
        drop(Store::open(&path).unwrap());
        let newer = latest_version() + 1;
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", newer).unwrap();
        conn.execute_batch("CREATE TABLE from_the_future (x TEXT)").unwrap();
        drop(conn);
        let before = contents(&path);
        let err = Store::open(&path).unwrap_err();
        assert!(matches!(err, StoreError::TooNew { found, .. } if found == newer), "{err:?}");
        let shown = err.to_string();
        assert!(!shown.contains('\n') && shown.contains(&path.display().to_string()), "{shown}");
        assert!(shown.contains("newer Nightshift") && shown.contains("left as it is"), "{shown}");
        assert_eq!(contents(&path), before, "a journal this version cannot read is never written");
    }

    #[test]
    fn a_file_that_is_not_sqlite_is_refused_and_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.sqlite3");
        let text = "these are someone's notes, not a journal\n".repeat(200);
        std::fs::write(&path, &text).unwrap();
        let err = Store::open(&path).unwrap_err();
        assert!(matches!(err, StoreError::NotAJournal { .. }), "{err:?}");
        let shown = err.to_string();
        assert!(!shown.contains('\n') && shown.contains("move it aside"), "{shown}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn a_failed_migration_names_the_file_without_its_sql() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.sqlite3");
        // A version-0 file that already has a table of the first migration's: it cannot migrate.
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE sessions (id TEXT)").unwrap();
        drop(conn);
        let shown = Store::open(&path).unwrap_err().to_string();
        assert!(shown.contains("table sessions already exists"), "{shown}");
        assert!(!shown.contains("CREATE") && !shown.contains('\n'), "no SQL dumped: {shown}");
        assert!(shown.contains(&path.display().to_string()), "{shown}");
    }

    #[test]
    fn events_update_the_session_summary() {
        let mut store = Store::open_in_memory().unwrap();
        let cmd = vec!["bash".to_string(), "-c".to_string(), "exit 3".to_string()];
        store.create_session(&new_session("0a0a0a0a", &cmd)).unwrap();
        let at = Utc.with_ymd_and_hms(2026, 11, 30, 22, 0, 1).unwrap();
        let ev = |kind| Event { ts: at, session: SessionId::from("0a0a0a0a".to_string()), kind };
        store.record(&ev(EventKind::state(SessionState::Running, "process started"))).unwrap();
        store
            .record(&ev(EventKind::State {
                state: SessionState::Exited,
                reason: "process exited with code 3".into(),
                pid: None,
                exit_code: Some(3),
                signal: None,
                error: None,
                dialog: None,
                last_screen: None,
            }))
            .unwrap();
        let row = store.find_session("0a0a").unwrap();
        assert_eq!(row.state, SessionState::Exited);
        assert_eq!(row.exit_code, Some(3));
        assert_eq!(row.command, cmd);
        assert_eq!(row.ended.as_deref(), Some("2026-11-30T22:00:01.000Z"));
        let events = store.events(&EventQuery { session: Some(row.id.clone()), ..Default::default() }).unwrap();
        assert_eq!(events.iter().map(|e| e.event.as_str()).collect::<Vec<_>>(), ["state", "state"]);
        let last: Event = serde_json::from_str(&events[1].body).unwrap();
        assert_eq!(last.kind.new_state(), Some(SessionState::Exited));
        assert_eq!(store.last_event_id().unwrap(), events[1].id);
        let recent = store.recent_events("0a0a0a0a", 1).unwrap();
        assert_eq!(recent, events[1..]);
        // Started again after that exit (a respawn restart): not ended, and a restore can claim it.
        store.record(&ev(EventKind::state(SessionState::Running, "process 7 restarted"))).unwrap();
        let row = store.find_session("0a0a").unwrap();
        assert_eq!(row.ended, None, "a session that runs again has not ended");
        assert!(store.claim_session("0a0a0a0a", row.owner_pid, 4242, None).unwrap());
    }

    #[test]
    fn prefixes_resolve_or_say_why_not() {
        let mut store = Store::open_in_memory().unwrap();
        let cmd = vec!["true".to_string()];
        store.create_session(&new_session("abc11111", &cmd)).unwrap();
        store.create_session(&new_session("abc22222", &cmd)).unwrap();
        assert_eq!(store.find_session("abc1").unwrap().id, "abc11111");
        let err = store.find_session("abc").unwrap_err().to_string();
        assert!(err.contains("abc11111") && err.contains("abc22222"), "{err}");
        let err = store.find_session("ffff").unwrap_err().to_string();
        assert!(err.contains("nightshift sessions"), "{err}");
    }
}
