//! Who runs a session: the process that owns it, its lease (renewed while it runs, so a hung owner
//! loses its sessions), the claims by which exactly one process takes over a session whose owner
//! is gone, and the terminal a `nightshift run` was started from.

use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

use super::rows::{session_row, SESSION_SELECT};
use super::{SessionRow, Store, StoreError};
use crate::clock::format_ts;

impl Store {
    /// The sessions that have not ended (running, lost, kept or scheduled): what an adopter looks
    /// at every few seconds, however long the journal's history.
    pub fn unended_sessions(&self) -> Result<Vec<SessionRow>, StoreError> {
        let mut stmt = self.conn.prepare(&format!(
            "{SESSION_SELECT} WHERE id != '' AND state NOT IN ('exited', 'failed') ORDER BY created, id"
        ))?;
        let rows = stmt.query_map([], session_row)?.collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// A lost session taken over by process `owner_pid` (it restarts the agent).
    pub fn adopt_session(&mut self, id: &str, owner_pid: u32, control_socket: Option<&str>) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE sessions SET owner_pid = ?2, control_socket = ?3, ended = NULL, kept = NULL WHERE id = ?1",
            params![id, owner_pid, control_socket],
        )?;
        Ok(())
    }

    /// Renews process `pid`'s lease on the sessions it runs (at `now`): each of them it still owns.
    /// Returns the ids it owns, so the caller sees which of its own another process took.
    pub fn renew_leases(&mut self, pid: u32, now: DateTime<Utc>) -> Result<Vec<String>, StoreError> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "UPDATE sessions SET lease = ?2
             WHERE owner_pid = ?1 AND state NOT IN ('exited', 'failed', 'scheduled')",
            params![pid, format_ts(now)],
        )?;
        let owned = {
            let mut stmt = tx.prepare("SELECT id FROM sessions WHERE owner_pid = ?1")?;
            let ids = stmt.query_map(params![pid], |r| r.get::<_, String>(0))?.collect::<Result<Vec<_>, _>>()?;
            ids
        };
        tx.commit()?;
        Ok(owned)
    }

    /// The process that owns session `id` now, and its lease (when it last renewed it).
    pub fn owner_of(&self, id: &str) -> Result<(Option<i64>, Option<String>), StoreError> {
        Ok(self
            .conn
            .query_row("SELECT owner_pid, lease FROM sessions WHERE id = ?1", params![id], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?
            .unwrap_or((None, None)))
    }

    /// Notes the terminal `nightshift run` was started from for session `id` (its device path).
    pub fn set_terminal(&mut self, id: &str, terminal: &str) -> Result<(), StoreError> {
        self.conn.execute("UPDATE sessions SET terminal = ?2 WHERE id = ?1", params![id, terminal])?;
        Ok(())
    }

    /// The terminal session `id`'s `nightshift run` was started from, when it noted one.
    pub fn terminal_of(&self, id: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT terminal FROM sessions WHERE id = ?1", params![id], |r| r.get(0))
            .optional()?
            .flatten())
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
            "UPDATE sessions SET owner_pid = ?3, control_socket = ?4, ended = NULL, kept = NULL, lease = NULL
             WHERE id = ?1 AND owner_pid IS ?2 AND state NOT IN ('exited', 'failed')",
            params![id, was, pid, control_socket],
        )?;
        Ok(n == 1)
    }
}
