//! Nobody is needed when Nightshift dies. Every long-lived Nightshift process renews a lease on the
//! sessions it runs; those that adopt (the tray app, `nightshift keep`, `nightshift restore`) look
//! every few seconds for armed sessions and loops whose owner is gone, or has not renewed its lease
//! for a whole lease, and take each one over as a restore does: claimed first in the journal (of
//! several adopters exactly one wins), on the same conversation, from its contract.
//!
//! A lease is judged on the adopter's own monotonic clock, which stops while the machine sleeps: a
//! suspend, or a jump of the wall clock, costs no owner its sessions. An owner whose process is gone
//! loses them at once; one that is alive but stopped or starved loses them only after a lease
//! without a renewal, and when it runs again it stands down without a word or a signal to the agent
//! (the adopter ended that agent before it started its own). An owner that never renewed a lease
//! (a Nightshift from before leases) is never judged hung.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use super::*;

/// How long an owner may go without renewing its lease, by default (`[adoption] lease`).
pub const LEASE: Duration = crate::config::DEFAULT_LEASE;
/// How often an adopter looks at the journal.
pub const LOOK_EVERY: Duration = Duration::from_secs(3);

/// How a process keeps its lease and whether it adopts.
#[derive(Debug, Clone)]
pub struct Adoption {
    /// Who this process is, in the journal's words (`the tray app (process 123)`).
    pub by: String,
    /// How long an owner may go without renewing before its sessions are taken.
    pub lease: Duration,
    /// Whether this process takes over others' sessions, or only keeps its own lease.
    pub adopts: bool,
}

/// What this process has seen of other owners' leases, on its own monotonic clock.
#[derive(Debug, Default)]
pub struct Watched {
    /// Each session's lease as last seen, and since when it has not changed.
    seen: HashMap<String, (String, Instant)>,
    /// Sessions judged not to adopt (attended, out of hours, their folder gone), with the owner
    /// they had then: judged again only once that changes.
    left: HashSet<(String, Option<i64>)>,
}

impl Watched {
    /// Whether session `id`'s owner has gone `lease` without renewing (`lease_now`), as watched
    /// from here at `now`: a lease seen for the first time is given a whole lease from then; one
    /// never renewed never lapses.
    pub fn lapsed(&mut self, id: &str, lease_now: Option<&str>, now: Instant, lease: Duration) -> bool {
        let Some(value) = lease_now else {
            self.seen.remove(id);
            return false;
        };
        match self.seen.get(id) {
            Some((seen, since)) if seen == value => now.saturating_duration_since(*since) >= lease,
            _ => {
                self.seen.insert(id.to_string(), (value.to_string(), now));
                false
            }
        }
    }

    /// How long `id`'s lease has gone unrenewed, as watched from here.
    fn unrenewed(&self, id: &str, now: Instant) -> Option<Duration> {
        self.seen.get(id).map(|(_, since)| now.saturating_duration_since(*since))
    }
}

impl Supervisor {
    /// Keeps this process's lease on its sessions for as long as the supervisor lives, standing
    /// down from any another process took over, and (when `adoption.adopts`) adopts the sessions
    /// whose owner is gone or hung.
    pub fn keep_night(&self, adoption: Adoption) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            let renew_every = adoption.lease / 4;
            let mut renewed: Option<Instant> = None;
            let mut watched = Watched::default();
            // The first look comes a moment after the start: a process that restores at its start
            // (the app, `restore`) does so first, and says so as a restore.
            let mut first = true;
            loop {
                let now = crate::clock::mono_now();
                if renewed.is_none_or(|at| now.saturating_duration_since(at) >= renew_every) {
                    me.renew(renew_every);
                    renewed = Some(now);
                }
                if adoption.adopts && !first {
                    me.adopt(&adoption, &mut watched);
                }
                first = false;
                tokio::time::sleep(LOOK_EVERY.min(renew_every)).await;
            }
        })
    }

    /// Renews this process's lease, and stands down from the sessions another process took.
    fn renew(&self, every: Duration) {
        let mine: Vec<SessionId> = self.sessions().iter().map(|h| h.id().clone()).collect();
        match self.journal.renew_lease(every, &mine) {
            Ok(lost) => {
                for id in lost {
                    if let Some(handle) = self.session(id.as_str()) {
                        handle.stand_down();
                    }
                }
            }
            // A full disk: the lease lapses, and another process may take the sessions over; this
            // one stands down when it sees that.
            Err(e) => tracing::warn!("could not renew the lease on this process's sessions: {e}"),
        }
    }

    /// One look for sessions to adopt: each armed one whose owner is gone or hung is taken over.
    fn adopt(&self, adoption: &Adoption, watched: &mut Watched) {
        let rows = match self.with_store(|s| s.unended_sessions()) {
            Ok(rows) => rows,
            Err(e) => return tracing::warn!("cannot look for sessions to adopt: {e}"),
        };
        let me = i64::from(std::process::id());
        let now = crate::clock::mono_now();
        for row in rows {
            if row.is_final() || row.state == SessionState::Scheduled || row.owner_pid == Some(me) {
                watched.seen.remove(&row.id);
                continue;
            }
            if watched.left.contains(&(row.id.clone(), row.owner_pid)) {
                continue;
            }
            // A kept resume is an end its Nightshift chose (Quit, a logout, a SIGTERM): the next
            // start takes it up, and the user may act on it meanwhile; only a death is adopted.
            if row.kept.is_some() {
                continue;
            }
            let owner =
                row.owner_pid.map_or_else(|| "its Nightshift".to_string(), |p| format!("its Nightshift (process {p})"));
            let why = if !row.owner_pid.is_some_and(crate::store::nightshift_alive) {
                format!("{owner} was gone")
            } else if watched.lapsed(&row.id, row.lease.as_deref(), now, adoption.lease) {
                let quiet = watched.unrenewed(&row.id, now).unwrap_or(adoption.lease).as_secs();
                format!("{owner} had not renewed its lease for {quiet} s")
            } else {
                continue;
            };
            match self.adopt_one(&row, &adoption.by, &why) {
                Ok(true) => {}
                Ok(false) => {
                    watched.left.insert((row.id.clone(), row.owner_pid));
                }
                Err(e) => tracing::warn!(session = %row.id, "could not adopt the session: {e}"),
            }
        }
    }

    /// Takes `row` over when it has armed work left and its folder is still there; false when it
    /// is left as it is (another process took it first counts as taken).
    fn adopt_one(&self, row: &crate::store::SessionRow, by: &str, why: &str) -> Result<bool, StartError> {
        let Some(replay) = self.with_store(|s| crate::restore::replay(s, row))? else { return Ok(false) };
        let (why_restored, paused) = match crate::restore::verdict(&replay, self.journal.now()) {
            crate::restore::Verdict::Restore { why, paused } => (why, paused),
            crate::restore::Verdict::Lost { why } => {
                tracing::info!(session = %row.id, "not adopted: {why}");
                return Ok(false);
            }
        };
        if let Some(gone) = gone_folder(&replay.contract) {
            tracing::warn!(session = %row.id, "not adopted: its folder {} is gone", gone.display());
            return Ok(false);
        }
        let adopted = Some((by.to_string(), why.to_string()));
        let Some(handle) = self.restore_as(row, replay, &why_restored, paused, adopted)? else {
            return Ok(true);
        };
        tracing::info!(session = %row.id, "adopted: {why}");
        let terminal = self.with_store(|s| s.terminal_of(&row.id)).ok().flatten();
        if let Some(terminal) = terminal {
            let id = handle.id();
            tell_terminal(
                &terminal,
                &format!("nightshift: session {id} goes on in {by}; `nightshift attach {id}` shows it"),
            );
        }
        Ok(true)
    }
}

/// The folder `contract`'s work is in, when it is gone (deleted, a worktree removed): no session is
/// adopted into a folder that no longer holds its work.
pub(super) fn gone_folder(contract: &Contract) -> Option<std::path::PathBuf> {
    let folders: Vec<std::path::PathBuf> = match &contract.kind {
        Kind::Terminal(t) => vec![t.cwd.clone()],
        Kind::Loop(l) => l.spec.projects.iter().map(|p| p.cwd.clone()).collect(),
    };
    folders.into_iter().find(|f| !f.is_dir())
}

/// Writes `line` to the terminal a `nightshift run` was started from, if it is still one of this
/// user's terminals (its run was killed: the shell is back, perhaps in raw mode, so the line ends
/// with a carriage return too). Never waits on it.
fn tell_terminal(path: &str, line: &str) {
    use std::io::Write as _;
    use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, OpenOptionsExt as _};
    if !(path.starts_with("/dev/pts/") || path.starts_with("/dev/tty")) {
        return;
    }
    let mine = std::fs::metadata(path)
        .is_ok_and(|m| m.file_type().is_char_device() && m.uid() == nix::unistd::getuid().as_raw());
    if !mine {
        return;
    }
    let opened =
        std::fs::OpenOptions::new().write(true).custom_flags(nix::libc::O_NOCTTY | nix::libc::O_NONBLOCK).open(path);
    if let Ok(mut tty) = opened {
        let _ = tty.write_all(format!("\r\n{line}\r\n").as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_lapses_only_after_a_whole_lease_unrenewed_as_watched_here() {
        let mut w = Watched::default();
        let lease = Duration::from_secs(60);
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        // First seen: a whole lease from now, whatever its wall time says.
        assert!(!w.lapsed("a", Some("2026-12-01T23:00:00.000Z"), at(0), lease));
        assert!(!w.lapsed("a", Some("2026-12-01T23:00:00.000Z"), at(59), lease));
        // Renewed: counted again from when the change was seen.
        assert!(!w.lapsed("a", Some("2026-12-01T23:00:15.000Z"), at(59), lease));
        assert!(!w.lapsed("a", Some("2026-12-01T23:00:15.000Z"), at(100), lease));
        assert!(w.lapsed("a", Some("2026-12-01T23:00:15.000Z"), at(119), lease));
        assert_eq!(w.unrenewed("a", at(119)), Some(Duration::from_secs(60)));
        // Never renewed (a Nightshift from before leases): never judged hung.
        assert!(!w.lapsed("old", None, at(0), lease));
        assert!(!w.lapsed("old", None, at(10_000), lease));
    }
}
