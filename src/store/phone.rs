//! The phone's answers in the journal: each token's nonce claimed by the one process that handles
//! it, and where each listen topic was read to.

use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

use super::{Store, StoreError};
use crate::clock::format_ts;

impl Store {
    /// Claims `claim` (a phone token's nonce, or a message's id) for process `pid`: false when it
    /// was claimed before, by this process or another (one statement, so two processes listening
    /// on one topic never both take it).
    pub fn claim_phone(&mut self, claim: &str, pid: u32, now: DateTime<Utc>) -> Result<bool, StoreError> {
        let taken = self.conn.execute(
            "INSERT INTO phone_claims (claim, claimed, claimed_by) VALUES (?1, ?2, ?3)
             ON CONFLICT (claim) DO NOTHING",
            params![claim, format_ts(now), pid],
        )?;
        Ok(taken == 1)
    }

    /// Whether `claim` was claimed already (a look, not a claim: a press refused for its dialog is
    /// told apart from a replay of one used).
    pub fn phone_claimed(&self, claim: &str) -> Result<bool, StoreError> {
        let found = self
            .conn
            .query_row("SELECT 1 FROM phone_claims WHERE claim = ?1", params![claim], |_| Ok(()))
            .optional()?;
        Ok(found.is_some())
    }

    /// Claims `claim` for process `pid` if nobody claimed it within `every` before `now` (one
    /// statement: of processes racing, one wins): what is done at most once in a while by all of
    /// them together (answering a stranger's message).
    pub fn claim_phone_every(
        &mut self,
        claim: &str,
        every: chrono::Duration,
        pid: u32,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let taken = self.conn.execute(
            "INSERT INTO phone_claims (claim, claimed, claimed_by) VALUES (?1, ?2, ?3)
             ON CONFLICT (claim) DO UPDATE SET claimed = excluded.claimed, claimed_by = excluded.claimed_by
             WHERE phone_claims.claimed <= ?4",
            params![claim, format_ts(now), pid, format_ts(now - every)],
        )?;
        Ok(taken == 1)
    }

    /// Forgets the claims made before `before`: no token lives that long, and no message that old is
    /// asked for again, so the table stays small however long a flood lasts.
    pub fn prune_phone_claims(&mut self, before: DateTime<Utc>) -> Result<usize, StoreError> {
        Ok(self.conn.execute("DELETE FROM phone_claims WHERE claimed < ?1", params![format_ts(before)])?)
    }

    /// Where listen topic `topic` (its fingerprint) was read to: the last message's id and time.
    pub fn phone_cursor(&self, topic: &str) -> Result<Option<(String, i64)>, StoreError> {
        let found = self
            .conn
            .query_row("SELECT last_id, time FROM phone_cursor WHERE topic = ?1", params![topic], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?;
        Ok(found)
    }

    /// Listen topic `topic` was read to message `id`, of `time` (never moves back in time).
    pub fn set_phone_cursor(&mut self, topic: &str, id: &str, time: i64) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT INTO phone_cursor (topic, last_id, time) VALUES (?1, ?2, ?3)
             ON CONFLICT (topic) DO UPDATE SET last_id = ?2, time = ?3 WHERE time <= ?3",
            params![topic, id, time],
        )?;
        Ok(())
    }
}
