//! The journal's schema: the numbered migrations, and setting a journal up (create, WAL, migrate)
//! under the lock that keeps two processes from doing it at once.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;
use rusqlite_migration::{Migrations, M};

use super::{StoreError, BUSY_TIMEOUT};

pub(super) fn migrations() -> Migrations<'static> {
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
        // The phone's answers: each token's nonce (or a message no token could be read from) is
        // claimed by the one process that handles it, so it works once, however many listen; and
        // where each listen topic was read to (its messages' id and time), so a reconnect or a
        // restart asks for what came since. A topic is kept as its fingerprint, never its URL. The
        // row of id '' holds what belongs to no session (the listen topic's outages, a button no
        // install of ours signed): the events' session must name a row; every list leaves it out.
        M::up(
            "CREATE TABLE phone_claims (
            claim      TEXT PRIMARY KEY,  -- `nonce:<nonce>` or `message:<id>`
            claimed    TEXT NOT NULL,     -- RFC 3339, ms, UTC
            claimed_by INTEGER NOT NULL
        ) STRICT;
        CREATE TABLE phone_cursor (
            topic   TEXT PRIMARY KEY,
            last_id TEXT NOT NULL,
            time    INTEGER NOT NULL      -- the message's time, Unix seconds
        ) STRICT;
        INSERT INTO sessions (id, command, cwd, agent, created, ended, state, reason, last_event, last_event_at)
        VALUES ('', '[]', '', 'nightshift', '1970-01-01T00:00:00.000Z', '1970-01-01T00:00:00.000Z', 'exited',
                'what belongs to no session', 'created', '1970-01-01T00:00:00.000Z')
        ON CONFLICT (id) DO NOTHING;",
        ),
        // The tokens a sample's total stood at (Codex reports tokens and no cost: its spend is these).
        M::up("ALTER TABLE usage_samples ADD COLUMN tokens INTEGER;"),
        // Ownership as a lease: when the owner last said it still runs the session (a hung owner
        // stops saying so, and another process adopts the session), and the terminal a `nightshift
        // run` was started from (told where its session went when another process adopts it).
        M::up(
            "ALTER TABLE sessions ADD COLUMN lease TEXT;
            ALTER TABLE sessions ADD COLUMN terminal TEXT;",
        ),
        // The agent a sample came from: a session whose work moved to the other agent reports
        // both, each against its own plan (older samples: the session's agent).
        M::up("ALTER TABLE usage_samples ADD COLUMN agent TEXT;"),
    ]
}

pub(super) fn latest_version() -> i64 {
    i64::try_from(steps().len()).expect("few migrations")
}

/// The journal's schema version, or why the file is no journal.
pub(super) fn schema_version(conn: &Connection, shown: &str) -> Result<i64, StoreError> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(|e| refusal(shown, e))?;
    if version > latest_version() {
        return Err(StoreError::TooNew { path: shown.to_string(), found: version, known: latest_version() });
    }
    Ok(version)
}

/// Whether the journal is set up already (current schema, WAL): then no lock is needed.
pub(super) fn is_current(conn: &Connection, shown: &str) -> Result<bool, StoreError> {
    if schema_version(conn, shown)? != latest_version() {
        return Ok(false);
    }
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).map_err(|e| refusal(shown, e))?;
    Ok(mode.eq_ignore_ascii_case("wal"))
}

/// Turns on WAL and migrates: one process at a time (the caller holds the [`SetupLock`]).
pub(super) fn set_up(conn: &mut Connection, shown: &str) -> Result<(), StoreError> {
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
pub(super) struct SetupLock(#[allow(dead_code)] nix::fcntl::Flock<std::fs::File>);

impl SetupLock {
    pub(super) fn take(journal: &Path, shown: &str) -> Result<Self, StoreError> {
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
