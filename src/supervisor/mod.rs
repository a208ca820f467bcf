//! The set of sessions of one Nightshift process and the commands the CLI and the app call. Events
//! go through the [`Journal`] (committed, then told to the sinks and the bus).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{broadcast, mpsc};

use crate::journal::{lock, EventSink, Journal};

use crate::agent::{Adapter, AgentKind};
use crate::clock::Clock;
use crate::contract::{Contract, Conversation, Kind};
use crate::detect::DetectConfig;
use crate::event::{Event, EventKind, SessionId, SessionState, StopKind};
use crate::pty::{self, shell_words, CommandSpec, PtySize, SpawnError};
use crate::session::machine::{Resumed, Start};
use crate::session::{Actor, SessionHandle};
use crate::store::{NewSession, Standing, Store, StoreError};
use crate::usage::{self, Sample};

pub mod adopt;
pub mod awake;
pub mod build;
pub mod fence;
mod launch;
mod loops;
mod relay;
mod reports;
mod restore;
mod spec;

pub use adopt::Adoption;
pub use restore::end_orphan;
pub use spec::SessionSpec;
use spec::{keep_env, Row};

/// The longest a session may take to answer its client's hook (the hook itself gives up later).
const HOOK_ANSWER: Duration = Duration::from_millis(1000);
/// The longest a guarded session may take to answer for a Bash command before it is refused here
/// (inside the hook's own [`crate::hooks::GUARD_TIMEOUT`], so the refusal says why).
const GUARD_ANSWER: Duration = Duration::from_millis(3000);

/// What a launch takes beside the contract: where the session carries on from (`None`: its
/// first start), and this process's own plumbing.
#[derive(Default)]
struct Runtime {
    from: Option<Resumed>,
    /// The first start's own environment for the command (what of it names places is in the
    /// contract too).
    env: Vec<(String, String)>,
    output_tap: Option<mpsc::UnboundedSender<Vec<u8>>>,
    /// It starts a fresh conversation with `from`'s prompt (the other agent taking the work over).
    fresh: bool,
}

/// What [`Supervisor::restore_all`] did.
#[derive(Debug, Default)]
pub struct Restoration {
    /// The sessions started again, with why.
    pub restored: Vec<(SessionHandle, String)>,
    /// The sessions left to their users, with why.
    pub lost: Vec<(crate::store::SessionRow, String)>,
}

impl Restoration {
    pub fn handles(&self) -> Vec<SessionHandle> {
        self.restored.iter().map(|(h, _)| h.clone()).collect()
    }
}

/// Why a lost session could not be resumed.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    #[error("session {0} is not lost ({1}): nothing to resume")]
    NotLost(String, String),
    #[error("session {0}'s journal has nothing to resume it from")]
    Unreadable(String),
    #[error("session {0} has not ended ({1}): open it, or resume it if it is lost")]
    NotEnded(String, String),
    #[error("session {0}'s client named no conversation to carry on; start a new session instead")]
    NoConversation(String),
    #[error("session {0} is a loop: start it again from the New session page")]
    NotTerminal(String),
    #[error("session {0} was just taken over by another Nightshift")]
    Taken(String),
    #[error(transparent)]
    Start(#[from] StartError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The command could not be started; the journal records the failure under `session`.
    #[error("{error}")]
    Spawn { session: SessionId, error: SpawnError },
    /// A loop's contract was given to start a terminal session.
    #[error("session {0} is a loop, not a terminal session")]
    NotTerminal(SessionId),
    /// A scheduled session's journal holds no contract to start it from.
    #[error("scheduled session {0} has no contract in the journal to start from")]
    NoContract(SessionId),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why a statusLine report was not taken.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error("session {0} does not report usage to this process")]
    UnknownSession(String),
    #[error("the token does not match session {0}")]
    BadToken(String),
    #[error(transparent)]
    NotAStatus(#[from] usage::NotAStatus),
    #[error(transparent)]
    NotAHook(#[from] crate::hooks::NotAHook),
    #[error(transparent)]
    NotANotification(#[from] crate::hooks::codex::NotANotification),
}

/// What the exporter of one session may report, and what it last did.
#[derive(Debug)]
struct Reporter {
    token: crate::token::Token,
    last: Option<Sample>,
    /// Its guard is armed: a Bash command it cannot judge in time is refused.
    guarded: bool,
}

/// The sessions this process supervises.
#[derive(Clone)]
pub struct Supervisor {
    journal: Journal,
    sessions: Arc<Mutex<HashMap<SessionId, SessionHandle>>>,
    reporters: Arc<Mutex<HashMap<SessionId, Reporter>>>,
    control_socket: Option<PathBuf>,
    /// The `nightshift` CLI that Claude sessions run as their statusLine and hooks, and Codex
    /// sessions as their notify.
    cli: Option<PathBuf>,
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor").field("control_socket", &self.control_socket).finish_non_exhaustive()
    }
}

impl Supervisor {
    pub fn new(store: Store, clock: Arc<dyn Clock>) -> Self {
        Self {
            journal: Journal::new(store, clock),
            sessions: Arc::new(Mutex::new(HashMap::new())),
            reporters: Arc::new(Mutex::new(HashMap::new())),
            control_socket: None,
            cli: None,
        }
    }

    /// Gives Claude sessions started from now on this `nightshift` CLI (a path) as their statusLine
    /// exporter and their hooks, and Codex sessions as their notify.
    pub fn set_cli(&mut self, path: &std::path::Path) {
        self.cli = Some(path.to_path_buf());
    }
}

impl Supervisor {
    /// Records, with every session started from now on, the socket through which this process
    /// takes commands for it.
    pub fn set_control_socket(&mut self, path: PathBuf) {
        self.control_socket = Some(path);
    }

    pub fn add_sink(&self, sink: EventSink) {
        self.journal.add_sink(sink);
    }

    /// Journals an event of `session` that no session's actor decides (a push that failed).
    pub fn emit(&self, session: &SessionId, kind: crate::EventKind) -> Event {
        self.journal.emit(session, kind)
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.journal.subscribe()
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        self.journal.clock()
    }

    /// Whether journal writes are failing now (a full disk), and how many events are missing.
    pub fn journal_failing(&self) -> Option<crate::journal::Failing> {
        self.journal.failing()
    }

    /// Runs `f` on a read-only connection of its own: events are written through [`Supervisor::emit`]
    /// only, so the sinks and the bus hear every one, and other writes through
    /// [`Supervisor::write_store`].
    pub fn with_store<R>(&self, f: impl FnOnce(&Store) -> R) -> R {
        self.journal.read(f)
    }

    /// A write other than an event (a schedule's claim, a mark of the window's), through the
    /// journal's one writer.
    pub fn write_store<R>(&self, f: impl FnOnce(&mut Store) -> R) -> R {
        self.journal.write(f)
    }

    /// Records and starts a session. A command that cannot start is journalled as `failed` and
    /// returned as [`StartError::Spawn`].
    pub fn start(&self, spec: SessionSpec) -> Result<SessionHandle, StartError> {
        let id = SessionId::generate();
        let row = Row::of(spec.contract.contract());
        self.record(&id, &row)?;
        tracing::info!(session = %id, command = ?row.command, cwd = %row.cwd, "starting session");
        self.journal
            .emit(&id, EventKind::state(SessionState::Starting, format!("starting {}", shell_words(&row.command))));
        self.open(id, spec)
    }

    /// Journals the contract `spec` arms, begun now, and starts the session from that: the first
    /// start builds from the record every later start builds from.
    fn open(&self, id: SessionId, spec: SessionSpec) -> Result<SessionHandle, StartError> {
        let SessionSpec { contract, env, output_tap } = spec;
        let mut contract = contract.into_contract().begun(self.journal.now());
        keep_env(&mut contract, &env);
        self.journal.emit(&id, EventKind::Contract { contract: Box::new(contract.clone()) });
        self.launch(id, &contract, Runtime { from: None, env, output_tap, fresh: false })
    }

    /// Records `contract` to start at `due` rather than now (see [`crate::schedule`]): its row in
    /// state `scheduled`, owned by this process, and the contract with this process's places
    /// ([`crate::contract::KEPT_ENV`]) for whichever Nightshift process starts it then
    /// ([`Self::start_scheduled`]).
    pub fn schedule(&self, mut contract: Contract, due: &crate::schedule::Due) -> Result<SessionId, StoreError> {
        let id = SessionId::generate();
        keep_env(&mut contract, &[]);
        let row = Row::of(&contract);
        let launch = crate::schedule::Launch::Contract { contract: Box::new(contract) };
        self.journal.write(|s| {
            let new = NewSession {
                id: id.as_str(),
                kind: row.kind,
                command: &row.command,
                cwd: &row.cwd,
                agent: row.agent.as_str(),
                preset: row.preset.as_deref(),
                created: self.journal.now(),
                owner_pid: std::process::id(),
                control_socket: None,
            };
            crate::schedule::record(s, &new, due, &launch)?;
            record_account(s, &id, row.account.as_ref())
        })?;
        tracing::info!(session = %id, due = %due.at, "scheduled a session");
        for kind in crate::schedule::events(due) {
            self.journal.emit(&id, kind);
        }
        Ok(id)
    }

    /// Starts scheduled session `id` (its schedule claimed by this process) from the contract its
    /// schedule journalled, a terminal session's or a loop's; `output_tap` hears a terminal
    /// session's bytes.
    pub fn start_scheduled(
        &self,
        id: SessionId,
        output_tap: Option<mpsc::UnboundedSender<Vec<u8>>>,
    ) -> Result<SessionHandle, StartError> {
        let launch = self.with_store(|s| s.schedule_of(id.as_str()))?.map(|s| s.launch);
        let contract = match launch.as_deref().map(serde_json::from_str::<crate::schedule::Launch>) {
            Some(Ok(crate::schedule::Launch::Contract { contract })) => *contract,
            _ => return Err(StartError::NoContract(id)),
        };
        match contract.kind {
            Kind::Terminal(_) => {
                let contract = crate::contract::Armed::new(contract).expect("a terminal session's");
                self.start_rebuilt(id, SessionSpec { contract, env: Vec::new(), output_tap })
            }
            Kind::Loop(looping) => {
                let mut spec = looping.spec;
                spec.account = contract.account;
                self.start_rebuilt_loop(id, spec)
            }
        }
    }

    /// Starts scheduled session `id` (its schedule claimed by this process) from `spec`: a
    /// schedule's journalled contract, or one built again from what an older Nightshift
    /// journalled instead (its command line, the window's form).
    pub fn start_rebuilt(&self, id: SessionId, spec: SessionSpec) -> Result<SessionHandle, StartError> {
        let row = Row::of(spec.contract.contract());
        self.adopt_scheduled(&id, row.account.as_ref())?;
        let line = shell_words(&row.command);
        tracing::info!(session = %id, command = ?row.command, "starting a scheduled session");
        self.journal.emit(&id, EventKind::state(SessionState::Starting, format!("starting {line}, as scheduled")));
        self.open(id, spec)
    }

    /// Takes scheduled session `id` over for this process, with the account it starts under.
    fn adopt_scheduled(&self, id: &SessionId, account: Option<&crate::agent::Account>) -> Result<(), StoreError> {
        let socket = self.control_socket.as_ref().map(|p| p.display().to_string());
        self.journal.write(|s| {
            s.adopt_session(id.as_str(), std::process::id(), socket.as_deref())?;
            record_account(s, id, account)
        })
    }
    /// A live session of this process.
    pub fn session(&self, id: &str) -> Option<SessionHandle> {
        lock(&self.sessions).get(&SessionId::from(id.to_string())).cloned()
    }

    /// The live sessions of this process.
    pub fn sessions(&self) -> Vec<SessionHandle> {
        lock(&self.sessions).values().cloned().collect()
    }

    /// Watches for the machine's suspends for as long as the supervisor lives, journalling each
    /// one in every live session (the wall clock jumping ahead of the monotonic one).
    pub fn watch_suspends(&self) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            let mut watch = crate::power::SuspendWatch::new(me.journal.now(), tokio::time::Instant::now());
            loop {
                tokio::time::sleep(crate::power::CHECK_EVERY).await;
                let Some((from, to)) = watch.observe(me.journal.now(), tokio::time::Instant::now()) else { continue };
                tracing::info!(%from, %to, "the machine was asleep");
                for handle in me.sessions() {
                    me.journal.emit(handle.id(), EventKind::Suspended { from, to });
                    handle.woke(from);
                }
            }
        })
    }

    /// Stops every live session and waits for them to end: as the user's stop (`StopKind::User`,
    /// which cancels pending resumes), or because Nightshift is ending (`StopKind::Shutdown`: a
    /// session waiting for a limit's reset keeps its resume for the next Nightshift process).
    pub async fn stop_all(&self, source: &str, kind: StopKind) {
        let handles = self.sessions();
        for handle in &handles {
            let _ = match kind {
                StopKind::User => handle.stop(source).await,
                StopKind::Shutdown => handle.shut_down(source).await,
            };
        }
        for handle in &handles {
            handle.wait().await;
        }
    }

    /// The live sessions waiting for a usage limit's reset with a resume pending, and when it is due.
    pub fn pending_resumes(&self) -> Vec<(SessionId, chrono::DateTime<chrono::Utc>)> {
        self.sessions().iter().filter_map(|h| h.status().options.resume_due.map(|due| (h.id().clone(), due))).collect()
    }

    /// Journals a new terminal session owned by this process, with its account.
    fn record(&self, id: &SessionId, row: &Row) -> Result<(), StoreError> {
        let socket = self.control_socket.as_ref().map(|p| p.display().to_string());
        self.journal.write(|s| {
            s.create_session(&NewSession {
                id: id.as_str(),
                kind: row.kind,
                command: &row.command,
                cwd: &row.cwd,
                agent: row.agent.as_str(),
                preset: row.preset.as_deref(),
                created: self.journal.now(),
                owner_pid: std::process::id(),
                control_socket: socket.as_deref(),
            })?;
            record_account(s, id, row.account.as_ref())
        })
    }
}

/// Records the account session `id` runs under, when it names one (none: the client's default).
fn record_account(
    store: &mut Store,
    id: &SessionId,
    account: Option<&crate::agent::Account>,
) -> Result<(), StoreError> {
    match account {
        Some(a) => store.set_account(id.as_str(), &a.name, &a.dir.display().to_string()),
        None => Ok(()),
    }
}
