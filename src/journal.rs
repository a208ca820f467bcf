//! The journal's one writer, and the way its readers get connections of their own.
//!
//! Every event goes the same way: committed to the [`Store`] first, then to the synchronous sinks
//! (the `--events` stream, flushed per line), then to the broadcast bus (the app, followers). A
//! failure to journal is survived: a full disk must not take the agents down with it. The first
//! failure is logged, the rest are counted ([`Journal::failing`], for a banner), and the first write
//! that works again is followed by a `journal_gap` event saying how many are missing, and since when.
//!
//! Readers (the window, the digest, restore) never borrow the writer's connection: each read takes a
//! connection from a small pool of read connections to the same file (WAL lets them read while the
//! writer commits), so a slow digest never holds up the sessions that write through the writer.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::broadcast;

use crate::clock::Clock;
use crate::event::{Event, EventKind, SessionId};
use crate::store::Store;

/// A synchronous observer of every event, called in order right after the journal commit.
pub type EventSink = Box<dyn Fn(&Event) + Send + Sync>;

/// Read connections kept for reuse.
const READERS_KEPT: usize = 4;

struct Shared {
    writer: Mutex<Store>,
    /// The journal's file, for read connections (`None` for a journal in memory).
    path: Option<PathBuf>,
    readers: Mutex<Vec<Store>>,
    clock: Arc<dyn Clock>,
    bus: broadcast::Sender<Event>,
    sinks: Mutex<Vec<EventSink>>,
    failing: Mutex<Option<Failing>>,
    lease: Mutex<Lease>,
}

/// This process's lease on the sessions it owns (see [`crate::supervisor::adopt`]).
#[derive(Default)]
struct Lease {
    /// When it was last renewed, on the monotonic clock, and how often it is renewed; `None` while
    /// nothing keeps it (such a process always owns its sessions).
    renewed: Option<(std::time::Instant, std::time::Duration)>,
    /// Its sessions another process took over while this one did not renew: nothing more of
    /// theirs is journalled here.
    lost: std::collections::HashSet<SessionId>,
}

/// Journal writes are failing: since when, how many events are lost, and the first error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failing {
    pub since: chrono::DateTime<chrono::Utc>,
    pub lost: u64,
    pub error: String,
}

/// Writes events and lends read connections; cloneable, shared by a supervisor and its sessions.
#[derive(Clone)]
pub struct Journal {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal").field("path", &self.shared.path).finish_non_exhaustive()
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Journal {
    pub fn new(store: Store, clock: Arc<dyn Clock>) -> Self {
        let (bus, _) = broadcast::channel(1024);
        let path = store.path().map(PathBuf::from);
        let shared = Shared {
            writer: Mutex::new(store),
            path,
            readers: Mutex::new(Vec::new()),
            clock,
            bus,
            sinks: Mutex::new(Vec::new()),
            failing: Mutex::new(None),
            lease: Mutex::new(Lease::default()),
        };
        Self { shared: Arc::new(shared) }
    }

    /// The wall clock everything of this journal is stamped with.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.shared.clock.now()
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.shared.clock
    }

    /// The journal's file (`None` in memory).
    pub fn path(&self) -> Option<&std::path::Path> {
        self.shared.path.as_deref()
    }

    /// Keeps a usage sample of `session` (the usage table the chip and the plan read) and
    /// journals it as a `usage` event.
    pub fn usage(&self, session: &SessionId, sample: &crate::usage::Sample) {
        let now = self.now();
        if let Err(e) = self.write(|s| s.record_usage(session.as_str(), now, sample)) {
            tracing::error!(session = %session, "could not journal a usage sample: {e}");
        }
        self.emit(session, EventKind::Usage { sample: sample.clone() });
    }

    /// Renews this process's lease on its sessions (renewed again within `every`). Returns those of
    /// `mine` (the sessions it runs) that another process has taken over: from now on nothing of
    /// theirs is journalled here, and the caller stands them down.
    pub fn renew_lease(
        &self,
        every: std::time::Duration,
        mine: &[SessionId],
    ) -> Result<Vec<SessionId>, crate::store::StoreError> {
        let mut lease = lock(&self.shared.lease);
        let owned = self.write(|s| s.renew_leases(std::process::id(), self.now()))?;
        let lost: Vec<SessionId> = mine.iter().filter(|id| !owned.iter().any(|o| o == id.as_str())).cloned().collect();
        lease.lost.extend(lost.iter().cloned());
        lease.renewed = Some((crate::clock::mono_now(), every));
        Ok(lost)
    }

    /// Whether this process still owns `session`. Cheap while its lease is renewed on time; after
    /// a stall longer than two renewals (the process was stopped, or starved), the journal is read
    /// first: another process may have taken the session over since. A session lost so stays lost.
    pub fn owns(&self, session: &SessionId) -> bool {
        let stalled = {
            let lease = lock(&self.shared.lease);
            if lease.lost.contains(session) {
                return false;
            }
            lease.renewed.is_some_and(|(at, every)| crate::clock::mono_now().saturating_duration_since(at) > every * 2)
        };
        if !stalled {
            return true;
        }
        // Renewed now, before anything else is done; what the renewal finds taken is lost.
        let every = lock(&self.shared.lease).renewed.map(|(_, every)| every).unwrap_or_default();
        match self.renew_lease(every, std::slice::from_ref(session)) {
            Ok(lost) if lost.is_empty() => true,
            Ok(_) => {
                tracing::warn!(session = %session, "another Nightshift took the session over while this one stalled");
                false
            }
            // The journal cannot say: the session goes on here.
            Err(e) => {
                tracing::warn!("could not renew the lease on this process's sessions: {e}");
                true
            }
        }
    }

    /// Notes that this process took `session` (back) over: it journals it again.
    pub fn regain(&self, session: &SessionId) {
        lock(&self.shared.lease).lost.remove(session);
    }

    /// Notes that another process took `session` over: nothing more of it is journalled here.
    pub fn disown(&self, session: &SessionId) {
        lock(&self.shared.lease).lost.insert(session.clone());
    }

    /// Journals an event of `session`, then tells the sinks and the bus (nothing, for a session
    /// another process took over: see [`Journal::owns`]).
    pub fn emit(&self, session: &SessionId, kind: EventKind) -> Event {
        let event = Event { ts: self.shared.clock.now(), session: session.clone(), kind };
        if lock(&self.shared.lease).lost.contains(session) {
            tracing::debug!(session = %session, event = event.kind.name(), "not journalled: another process runs it");
            return event;
        }
        let written = lock(&self.shared.writer).record(&event);
        let recovered = {
            let mut failing = lock(&self.shared.failing);
            match (written, failing.as_mut()) {
                (Ok(_), _) => failing.take(),
                (Err(e), Some(f)) => {
                    f.lost += 1;
                    tracing::debug!(session = %session, event = event.kind.name(), "not journalled either: {e}");
                    None
                }
                (Err(e), None) => {
                    tracing::error!(
                        session = %session,
                        event = event.kind.name(),
                        "could not journal an event: {e}; the sessions go on, and the missing events are counted"
                    );
                    *failing = Some(Failing { since: event.ts, lost: 1, error: e.to_string() });
                    None
                }
            }
        };
        self.tell(&event);
        if let Some(gap) = recovered {
            tracing::warn!("journal writes work again: {} events from {} are missing", gap.lost, gap.since);
            self.emit(session, EventKind::JournalGap { since: gap.since, lost: gap.lost, error: gap.error });
        }
        event
    }

    fn tell(&self, event: &Event) {
        for sink in lock(&self.shared.sinks).iter() {
            sink(event);
        }
        let _ = self.shared.bus.send(event.clone());
    }

    /// Whether journal writes are failing now (a full disk), and how many events are missing.
    pub fn failing(&self) -> Option<Failing> {
        lock(&self.shared.failing).clone()
    }

    /// A write other than an event (a new session's row, a usage sample), through the writer.
    pub fn write<R>(&self, f: impl FnOnce(&mut Store) -> R) -> R {
        f(&mut lock(&self.shared.writer))
    }

    /// A read on a connection of its own, opened read-only: whatever a reader does, events go
    /// through [`Journal::emit`] and other writes through [`Journal::write`]. The writer's is lent
    /// only when no other can be opened (a journal in memory, or a file that cannot be opened again).
    pub fn read<R>(&self, f: impl FnOnce(&Store) -> R) -> R {
        let Some(path) = &self.shared.path else { return f(&lock(&self.shared.writer)) };
        let pooled = lock(&self.shared.readers).pop();
        let reader = match pooled.map(Ok).unwrap_or_else(|| Store::open_reader(path)) {
            Ok(reader) => reader,
            Err(e) => {
                tracing::warn!("no read connection to the journal ({e}); reading through the writer's");
                return f(&lock(&self.shared.writer));
            }
        };
        let result = f(&reader);
        let mut readers = lock(&self.shared.readers);
        if readers.len() < READERS_KEPT {
            readers.push(reader);
        }
        result
    }

    pub fn add_sink(&self, sink: EventSink) {
        lock(&self.shared.sinks).push(sink);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.shared.bus.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_do_not_wait_for_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("journal.sqlite3")).unwrap();
        let journal = Journal::new(store, Arc::new(crate::clock::SystemClock));
        // The writer is busy (a long write holds its lock); a read still goes through.
        let held = lock(&journal.shared.writer);
        let (tx, rx) = std::sync::mpsc::channel();
        let j = journal.clone();
        std::thread::spawn(move || tx.send(j.read(|s| s.sessions().map(|r| r.len()))).unwrap());
        let read = rx.recv_timeout(std::time::Duration::from_secs(10)).expect("the read did not wait");
        assert_eq!(read.unwrap(), 0);
        drop(held);
    }
}
