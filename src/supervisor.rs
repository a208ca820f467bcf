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
use crate::session::machine::Start;
use crate::session::{Actor, SessionHandle, DEFAULT_STOP_GRACE};
use crate::store::{NewSession, Standing, Store, StoreError};
use crate::usage::{self, Sample};

/// The longest a session may take to answer its client's hook (the hook itself gives up later).
const HOOK_ANSWER: Duration = Duration::from_millis(1000);

/// What the journal's row of a scheduled session says (see [`Supervisor::schedule`]): what a
/// session or loop spec will record when it starts.
#[derive(Debug, Clone)]
pub struct Scheduled {
    kind: crate::store::SessionKind,
    command: Vec<String>,
    cwd: String,
    agent: AgentKind,
    preset: Option<String>,
    account: Option<crate::agent::Account>,
}

impl Scheduled {
    pub fn session(spec: &SessionSpec) -> Self {
        Self {
            kind: crate::store::SessionKind::Terminal,
            command: spec.command.argv(),
            cwd: spec.command.cwd.display().to_string(),
            agent: spec.agent,
            preset: spec.preset.clone(),
            account: spec.account.clone(),
        }
    }

    pub fn looping(spec: &crate::loops::LoopSpec) -> Self {
        Self {
            kind: crate::store::SessionKind::Loop,
            command: spec.command_line(),
            cwd: spec.projects.first().map(|p| p.cwd.display().to_string()).unwrap_or_default(),
            agent: spec.agent,
            preset: None,
            account: spec.account.clone(),
        }
    }
}

/// What to start.
#[derive(Debug)]
pub struct SessionSpec {
    pub command: CommandSpec,
    pub agent: AgentKind,
    pub preset: Option<String>,
    pub stop_grace: Duration,
    /// Receives a copy of every byte the child writes (the CLI's passthrough).
    pub output_tap: Option<mpsc::UnboundedSender<Vec<u8>>>,
    /// The agent's screen signals; the built-in ones of `agent` when not given.
    pub adapter: Option<Adapter>,
    /// The detector's timing (the quiet window, …).
    pub detect: DetectConfig,
    /// Respawn cycles, armed for their duration, when set.
    pub respawn: Option<crate::respawn::Settings>,
    /// Resume after usage limits, when set.
    pub auto_resume: Option<crate::limits::resume::Settings>,
    /// What of a fresh 5-hour window is left for the user.
    pub window_guard: crate::limits::WindowGuard,
    /// Refuse, through the client's hooks, commands an unattended session must not run (with
    /// these rules; the supervisor's when respawn's settings ask for the guard).
    pub guard: Option<std::sync::Arc<crate::hooks::guard::Rules>>,
    /// Give a Claude client Nightshift's hooks (exact turns, the guard, handoffs); without them the
    /// session is read from its screen alone. The statusLine exporter is passed either way.
    pub hooks: bool,
    /// What the session may spend before its agent is stopped.
    pub budget: crate::breaker::Budget,
    /// The client account it runs under (its config directory); the client's own default when
    /// `None`.
    pub account: Option<crate::agent::Account>,
    /// Move to another account before this one's limit (Claude sessions), when set.
    pub switch: Option<crate::session::machine::SwitchSettings>,
}

impl SessionSpec {
    pub fn new(command: CommandSpec) -> Self {
        let agent = AgentKind::infer(&command.program);
        Self {
            command,
            agent,
            preset: None,
            stop_grace: DEFAULT_STOP_GRACE,
            output_tap: None,
            adapter: None,
            detect: DetectConfig::default(),
            respawn: None,
            auto_resume: None,
            window_guard: crate::limits::WindowGuard::default(),
            guard: None,
            hooks: true,
            budget: crate::breaker::Budget::default(),
            account: None,
            switch: None,
        }
    }
}

impl SessionSpec {
    /// What the spec arms, as the session's contract: the command's opening prompt apart from its
    /// arguments, respawn armed until its duration from `started`.
    pub fn contract(&self, started: chrono::DateTime<chrono::Utc>) -> Contract {
        // The journal keeps instants to the millisecond: the first start keeps the same ones.
        let started = chrono::SubsecRound::trunc_subsecs(started, 3);
        let (args, prompt) = self.agent.split_prompt(&self.command.program, &self.command.args);
        let respawn_until =
            self.respawn.as_ref().map(|r| started + chrono::Duration::from_std(r.duration).unwrap_or_default());
        let guard = self.guard.is_some() || self.respawn.as_ref().is_some_and(|r| r.guard);
        // The places the command's own environment names (its client's config directory) are
        // kept over this process's: a later start finds them too. Nothing else of it is journalled.
        let mut env = Contract::kept_env();
        for (k, v) in self.command.env.iter().filter(|(k, _)| crate::contract::KEPT_ENV.contains(&k.as_str())) {
            env.retain(|(key, _)| key != k);
            env.push((k.clone(), v.clone()));
        }
        Contract {
            version: crate::contract::VERSION,
            started,
            agent: self.agent,
            account: self.account.clone(),
            env,
            kind: Kind::Terminal(Box::new(crate::contract::Terminal {
                program: self.command.program.clone(),
                args,
                prompt,
                cwd: self.command.cwd.clone(),
                cols: self.command.size.cols,
                rows: self.command.size.rows,
                preset: self.preset.clone(),
                respawn: self.respawn.clone(),
                respawn_until,
                auto_resume: self.auto_resume.clone(),
                window_guard: self.window_guard,
                budget: self.budget,
                switch: self.switch.clone(),
                guard,
                hooks: self.hooks,
                adapter: self.adapter.as_ref().and_then(|a| a.overrides().cloned()),
                quiet: self.detect.quiet,
                stop_grace: self.stop_grace,
            })),
        }
    }
}

/// Where a restored session carries on from: what its journal and the state directory say.
#[derive(Debug, Default)]
struct Resumption {
    conversation: Option<String>,
    /// What its client starts with (the kickstart), never the opening prompt.
    prompt: Option<String>,
    paused_on: Option<crate::limits::LimitText>,
    /// That limit's reset is known to the second.
    paused_exact: bool,
    held: bool,
    spent: crate::usage::Tally,
    handoff: Option<(String, chrono::DateTime<chrono::Utc>)>,
}

/// What a launch takes beside the contract: where the session carries on from (`None`: its
/// first start), and this process's own plumbing.
#[derive(Default)]
struct Runtime {
    from: Option<Resumption>,
    /// The first start's own environment for the command (what of it names places is in the
    /// contract too).
    env: Vec<(String, String)>,
    output_tap: Option<mpsc::UnboundedSender<Vec<u8>>>,
    guard: Option<std::sync::Arc<crate::hooks::guard::Rules>>,
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
    /// The guard's rules, for sessions whose settings guard them.
    guard_rules: Option<Arc<crate::hooks::guard::Rules>>,
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
            guard_rules: None,
        }
    }

    /// Gives Claude sessions started from now on this `nightshift` CLI (a path) as their statusLine
    /// exporter and their hooks, and Codex sessions as their notify.
    pub fn set_cli(&mut self, path: &std::path::Path) {
        self.cli = Some(path.to_path_buf());
    }

    /// The guard's rules, for the sessions whose settings (or spec) guard them.
    pub fn set_guard_rules(&mut self, rules: crate::hooks::guard::Rules) {
        self.guard_rules = Some(Arc::new(rules));
    }

    /// Checks that `token` is the one `session`'s client was given.
    fn check_token(&self, session: &str, token: &str) -> Result<(), UsageError> {
        let reporters = lock(&self.reporters);
        let reporter = reporters
            .get(&SessionId::from(session.to_string()))
            .ok_or_else(|| UsageError::UnknownSession(session.to_string()))?;
        if reporter.token.expose() != token {
            return Err(UsageError::BadToken(session.to_string()));
        }
        Ok(())
    }

    /// Takes a hook of `session`'s client: hands it to the session and returns its answer. A session
    /// that cannot answer within the hook's time gets the client going on (a pass).
    pub async fn record_hook(
        &self,
        session: &str,
        token: &str,
        payload: &serde_json::Value,
    ) -> Result<crate::hooks::Answer, UsageError> {
        self.check_token(session, token)?;
        let hook = crate::hooks::Hook::from_payload(payload)?;
        let Some(handle) = self.session(session) else { return Ok(crate::hooks::Answer::Pass) };
        let answered = tokio::time::timeout(HOOK_ANSWER, handle.hook(hook)).await;
        Ok(match answered {
            Ok(Ok(answer)) => answer,
            _ => {
                tracing::warn!(session, "the session did not answer its client's hook in time; it goes on");
                crate::hooks::Answer::Pass
            }
        })
    }

    /// Takes Codex's notify of `session`: a completed turn of its conversation goes to the session
    /// as the client's word. `rollout` says whether Codex keeps a rollout file of the payload's
    /// thread; without one the thread is not the conversation (it names a new thread) and nothing
    /// is said.
    pub async fn record_notify(
        &self,
        session: &str,
        token: &str,
        payload: &serde_json::Value,
        rollout: bool,
    ) -> Result<(), UsageError> {
        self.check_token(session, token)?;
        let notification = crate::hooks::codex::Notification::from_payload(payload)?;
        if !notification.turn_complete() {
            tracing::debug!(session, kind = %notification.kind, "a Codex notification of a kind Nightshift does not read");
            return Ok(());
        }
        if !rollout {
            tracing::debug!(session, thread = ?notification.thread, "Codex notified for a thread it keeps no rollout of (a thread's title): not the conversation");
            return Ok(());
        }
        let Some(handle) = self.session(session) else { return Ok(()) };
        if tokio::time::timeout(HOOK_ANSWER, handle.hook(notification.into_hook())).await.is_err() {
            tracing::warn!(session, "the session did not take Codex's notify in time");
        }
        Ok(())
    }

    /// Takes a statusLine report of `session`; journals and announces the sample when it changed.
    pub fn record_status(&self, session: &str, token: &str, status: &[u8]) -> Result<Option<Sample>, UsageError> {
        let id = SessionId::from(session.to_string());
        let sample = {
            let reporters = lock(&self.reporters);
            let reporter = reporters.get(&id).ok_or_else(|| UsageError::UnknownSession(session.to_string()))?;
            if reporter.token.expose() != token {
                return Err(UsageError::BadToken(session.to_string()));
            }
            let sample = Sample::from_status(status)?;
            if reporter.last.as_ref() == Some(&sample) {
                return Ok(None);
            }
            sample
        };
        let now = self.journal.now();
        if let Err(e) = self.journal.write(|s| s.record_usage(session, now, &sample)) {
            tracing::error!(session, "could not journal a usage sample: {e}");
        }
        self.journal.emit(&id, EventKind::Usage { sample: sample.clone() });
        if let Some(r) = lock(&self.reporters).get_mut(&id) {
            r.last = Some(sample.clone());
        }
        if let Some(handle) = self.session(session) {
            handle.usage(sample.clone());
        }
        Ok(Some(sample))
    }

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

    /// Runs `f` on a read connection of its own (events are written only through the journal's
    /// writer; small writes of the reader's own, such as the digest's last-viewed mark, are fine).
    pub fn with_store<R>(&self, f: impl FnOnce(&mut Store) -> R) -> R {
        self.journal.read(f)
    }

    /// Records and starts a session. A command that cannot start is journalled as `failed` and
    /// returned as [`StartError::Spawn`].
    pub fn start(&self, spec: SessionSpec) -> Result<SessionHandle, StartError> {
        let id = SessionId::generate();
        let argv = spec.command.argv();
        let cwd = spec.command.cwd.display().to_string();
        let socket = self.control_socket.as_ref().map(|p| p.display().to_string());
        self.journal.write(|s| {
            s.create_session(&NewSession {
                id: id.as_str(),
                kind: crate::store::SessionKind::Terminal,
                command: &argv,
                cwd: &cwd,
                agent: spec.agent.as_str(),
                preset: spec.preset.as_deref(),
                created: self.journal.now(),
                owner_pid: std::process::id(),
                control_socket: socket.as_deref(),
            })?;
            match &spec.account {
                Some(a) => s.set_account(id.as_str(), &a.name, &a.dir.display().to_string()),
                None => Ok(()),
            }
        })?;
        tracing::info!(session = %id, command = ?spec.command, "starting session");
        self.journal.emit(&id, EventKind::state(SessionState::Starting, format!("starting {}", shell_words(&argv))));
        self.open(id, spec)
    }

    /// Journals what `spec` arms as the session's contract and starts it from that: the first
    /// start builds from the record every later start builds from.
    fn open(&self, id: SessionId, spec: SessionSpec) -> Result<SessionHandle, StartError> {
        let contract = spec.contract(self.journal.now());
        self.journal.emit(&id, EventKind::Contract { contract: Box::new(contract.clone()) });
        let env = spec.command.env;
        self.launch(id, &contract, Runtime { from: None, env, output_tap: spec.output_tap, guard: spec.guard })
    }

    /// Records a session to start at `due` rather than now (see [`crate::schedule`]): its row in
    /// state `scheduled`, owned by this process, with `launch` for another process to start it by
    /// should this one be gone by then.
    pub fn schedule(
        &self,
        row: Scheduled,
        due: &crate::schedule::Due,
        launch: &crate::schedule::Launch,
    ) -> Result<SessionId, StoreError> {
        let id = SessionId::generate();
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
            crate::schedule::record(s, &new, due, launch)?;
            match &row.account {
                Some(a) => s.set_account(id.as_str(), &a.name, &a.dir.display().to_string()),
                None => Ok(()),
            }
        })?;
        tracing::info!(session = %id, due = %due.at, "scheduled a session");
        for kind in crate::schedule::events(due) {
            self.journal.emit(&id, kind);
        }
        Ok(id)
    }

    /// Starts scheduled session `id` (its schedule claimed by this process) as [`Self::start`]
    /// would a new one.
    pub fn start_scheduled(&self, id: SessionId, spec: SessionSpec) -> Result<SessionHandle, StartError> {
        self.adopt_scheduled(&id, spec.account.as_ref())?;
        let line = shell_words(&spec.command.argv());
        tracing::info!(session = %id, command = ?spec.command, "starting a scheduled session");
        self.journal.emit(&id, EventKind::state(SessionState::Starting, format!("starting {line}, as scheduled")));
        self.open(id, spec)
    }

    /// Takes scheduled session `id` over for this process, with the account it starts under.
    fn adopt_scheduled(&self, id: &SessionId, account: Option<&crate::agent::Account>) -> Result<(), StoreError> {
        let socket = self.control_socket.as_ref().map(|p| p.display().to_string());
        self.journal.write(|s| {
            s.adopt_session(id.as_str(), std::process::id(), socket.as_deref())?;
            match account {
                Some(a) => s.set_account(id.as_str(), &a.name, &a.dir.display().to_string()),
                None => Ok(()),
            }
        })
    }

    /// Starts scheduled loop `id` (its schedule claimed by this process).
    pub fn start_scheduled_loop(
        &self,
        id: SessionId,
        spec: crate::loops::LoopSpec,
    ) -> Result<SessionHandle, StartError> {
        self.adopt_scheduled(&id, spec.account.as_ref())?;
        let projects: Vec<String> = spec.projects.iter().map(|p| p.cwd.display().to_string()).collect();
        tracing::info!(session = %id, ?projects, "starting a scheduled loop");
        let what = format!("starting a loop of {} in {}, as scheduled", spec.command_line()[0], projects.join(", "));
        self.journal.emit(&id, EventKind::state(SessionState::Starting, what));
        Ok(self.open_loop(id, spec))
    }

    /// Journals the loop's contract and runs it from that.
    fn open_loop(&self, id: SessionId, spec: crate::loops::LoopSpec) -> SessionHandle {
        let contract = Contract {
            version: crate::contract::VERSION,
            started: chrono::SubsecRound::trunc_subsecs(self.journal.now(), 3),
            agent: spec.agent,
            account: spec.account.clone(),
            env: Contract::kept_env(),
            kind: Kind::Loop(Box::new(crate::contract::Looping { spec: spec.clone() })),
        };
        self.journal.emit(&id, EventKind::Contract { contract: Box::new(contract) });
        self.run_loop(id, spec)
    }

    /// Runs a restored loop again from its contract, for what is left of its caps: its
    /// iterations, its budget and its time; its tasks file says which task it was on.
    fn restore_loop(
        &self,
        id: SessionId,
        contract: &Contract,
        looping: &crate::contract::Looping,
    ) -> Result<SessionHandle, StartError> {
        let mut spec = looping.spec.clone();
        spec.account.clone_from(&contract.account);
        let (done, cost, tokens) = self.with_store(|s| loop_spent(s, id.as_str()))?;
        let settings = &mut spec.settings;
        settings.max_iterations = settings.max_iterations.map(|max| max.saturating_sub(done).max(1));
        settings.budget.max_cost_usd = settings.budget.max_cost_usd.map(|max| (max - cost).max(0.01));
        settings.budget.max_tokens = settings.budget.max_tokens.map(|max| max.saturating_sub(tokens).max(1));
        let ran = (self.journal.now() - contract.started).to_std().unwrap_or_default();
        settings.budget.max_wall_clock =
            settings.budget.max_wall_clock.map(|max| max.saturating_sub(ran).max(Duration::from_secs(1)));
        let projects: Vec<String> = spec.projects.iter().map(|p| p.cwd.display().to_string()).collect();
        let what = format!("restarting a loop of {} in {}", spec.command_line()[0], projects.join(", "));
        self.journal.emit(&id, EventKind::state(SessionState::Starting, what));
        Ok(self.run_loop(id, spec))
    }

    /// Records and starts a loop of headless iterations (see [`crate::loops`]).
    pub fn start_loop(&self, spec: crate::loops::LoopSpec) -> Result<SessionHandle, StartError> {
        let id = SessionId::generate();
        let argv = spec.command_line();
        let cwd = spec.projects.first().map(|p| p.cwd.display().to_string()).unwrap_or_default();
        let socket = self.control_socket.as_ref().map(|p| p.display().to_string());
        self.journal.write(|s| {
            s.create_session(&NewSession {
                id: id.as_str(),
                kind: crate::store::SessionKind::Loop,
                command: &argv,
                cwd: &cwd,
                agent: spec.agent.as_str(),
                preset: None,
                created: self.journal.now(),
                owner_pid: std::process::id(),
                control_socket: socket.as_deref(),
            })?;
            match &spec.account {
                Some(a) => s.set_account(id.as_str(), &a.name, &a.dir.display().to_string()),
                None => Ok(()),
            }
        })?;
        let projects: Vec<String> = spec.projects.iter().map(|p| p.cwd.display().to_string()).collect();
        tracing::info!(session = %id, ?projects, "starting loop");
        self.journal.emit(
            &id,
            EventKind::state(
                SessionState::Starting,
                format!("starting a loop of {} in {}", argv[0], projects.join(", ")),
            ),
        );
        Ok(self.open_loop(id, spec))
    }

    /// The actor of a recorded loop (its iterations run under its account).
    fn run_loop(&self, id: SessionId, mut spec: crate::loops::LoopSpec) -> SessionHandle {
        if let (Some(account), Some(var)) = (&spec.account, crate::agent::Account::variable(spec.agent)) {
            spec.env.retain(|(k, _)| k != var);
            spec.env.push((var.to_string(), account.dir.display().to_string()));
        }
        let (control_tx, controls) = tokio::sync::mpsc::channel(64);
        let (status, status_rx) = tokio::sync::watch::channel(crate::session::Status {
            state: SessionState::Starting,
            exit: None,
            options: crate::session::Options::default(),
        });
        let handle = SessionHandle::new(id.clone(), control_tx, status_rx, crate::store::SessionKind::Loop);
        let actor = crate::loops::actor::LoopActor {
            id: id.clone(),
            spec,
            journal: self.journal.clone(),
            state_dir: self.journal.path().and_then(|p| p.parent()).map(std::path::Path::to_path_buf),
            status,
        };
        lock(&self.sessions).insert(id.clone(), handle.clone());
        let sessions = Arc::clone(&self.sessions);
        tokio::spawn(async move {
            actor.run(controls).await;
            lock(&sessions).remove(&id);
        });
        handle
    }

    /// Brings back every session and loop whose Nightshift ended without ending them (a killed
    /// `run`, a crash, a logout or reboot; see [`crate::restore`]): each one whose armed automation
    /// has time left is taken over by this process — claimed first, so of two processes restoring
    /// at once only one starts it — and started again under its own id from its contract: the
    /// same conversation, its budget, account and handoff, paused on its limit when a resume was
    /// pending. An attended one is left as it is and listed, for its user to resume.
    pub fn restore_all(&self) -> Restoration {
        let mut done = Restoration::default();
        let rows = match self.with_store(|s| s.sessions()) {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!("cannot look for sessions to restore: {e}");
                return done;
            }
        };
        for row in rows.iter().filter(|r| self.orphaned(r)) {
            let replay = match self.with_store(|s| crate::restore::replay(s, row)) {
                Ok(Some(replay)) => replay,
                Ok(None) => continue,
                Err(e) => {
                    tracing::warn!(session = %row.id, "cannot read the session's journal to restore it: {e}");
                    continue;
                }
            };
            match crate::restore::verdict(&replay, self.journal.now()) {
                crate::restore::Verdict::Restore { why, paused } => match self.restore(row, replay, &why, paused) {
                    Ok(Some(handle)) => done.restored.push((handle, why)),
                    Ok(None) => {}
                    Err(e) => tracing::warn!(session = %row.id, "could not restore the session: {e}"),
                },
                crate::restore::Verdict::Lost { why } => done.lost.push((row.clone(), why)),
            }
        }
        done
    }

    /// Brings back one lost session because its user asked (`nightshift restore ID`, the window's
    /// Resume): whatever it was armed with, on its own conversation; an attended one starts with
    /// no prompt, for its user to type.
    pub fn resume_lost(&self, row: &crate::store::SessionRow) -> Result<SessionHandle, ResumeError> {
        if !self.orphaned(row) {
            return Err(ResumeError::NotLost(row.id.clone(), row.shown_state()));
        }
        let replay = self
            .with_store(|s| crate::restore::replay(s, row))?
            .ok_or_else(|| ResumeError::Unreadable(row.id.clone()))?;
        let paused = replay.pending.is_some();
        let why = "its user asked to resume it".to_string();
        self.restore(row, replay, &why, paused)?.ok_or_else(|| ResumeError::Taken(row.id.clone()))
    }

    /// Whether `row` is a session no Nightshift runs any more and none ended: its owner is gone
    /// (its pid is no Nightshift now: after a reboot an old pid is often another program's), or it
    /// said it ended and kept the resume. A session this very process owns is never taken again.
    fn orphaned(&self, row: &crate::store::SessionRow) -> bool {
        if row.is_final() || row.state == SessionState::Scheduled {
            return false;
        }
        let me = i64::from(std::process::id());
        row.kept.is_some() || !row.owner_pid.is_some_and(|pid| pid == me || crate::store::nightshift_alive(pid))
    }

    /// Takes `row` over and starts it again from `replay`; `None` when another process took it
    /// first.
    fn restore(
        &self,
        row: &crate::store::SessionRow,
        replay: crate::restore::Replay,
        why: &str,
        paused: bool,
    ) -> Result<Option<SessionHandle>, StartError> {
        let id = SessionId::from(row.id.clone());
        let socket = self.control_socket.as_ref().map(|p| p.display().to_string());
        let me = std::process::id();
        if !self.journal.write(|s| s.claim_session(&row.id, row.owner_pid, me, socket.as_deref()))? {
            tracing::info!(session = %id, "another Nightshift took the session over first");
            return Ok(None);
        }
        if let Some(pid) = replay.last_pid {
            // A killed run's client may linger: never two agents on one conversation.
            if crate::pty::end_leftover(pid, crate::session::SESSION_ENV, &row.id, Duration::from_secs(3)) {
                tracing::info!(session = %id, pid, "ended what was left of the agent its Nightshift ran");
            }
        }
        let now = self.journal.now();
        let mut contract = replay.contract;
        // The account it runs under now (a switch may have moved it): its conversation lives there.
        contract.account = row
            .account
            .clone()
            .zip(row.account_dir.clone())
            .map(|(name, dir)| crate::agent::Account { name, dir: dir.into() });
        let down = (now - replay.last_seen).num_seconds().max(0) as u64;
        let state_dir = self.journal.path().and_then(|p| p.parent()).map(std::path::Path::to_path_buf);
        let handoff = state_dir
            .as_deref()
            .and_then(|dir| crate::hooks::handoff::latest(dir, &row.id).ok().flatten())
            .map(|k| (k.text, k.written));
        let Kind::Terminal(t) = &contract.kind else {
            let Kind::Loop(looping) = &contract.kind else { unreachable!() };
            self.journal.emit(&id, EventKind::Restored { reason: why.to_string(), down_secs: down });
            return self.restore_loop(id, &contract, looping).map(Some);
        };
        let kickstart = t.respawn.as_ref().filter(|_| t.respawn_until.is_some_and(|u| u > now));
        let prompt = if paused {
            None
        } else {
            crate::session::machine::continuation(
                handoff.as_ref().map(|(text, at)| (text.as_str(), *at)),
                kickstart.map(|r| r.kickstart_prompt.as_str()),
                now,
            )
        };
        let paused_on = replay.pending.as_ref().filter(|_| paused).map(|p| crate::limits::LimitText {
            kind: crate::limits::LimitKind::Unspecified,
            resets_at: p.resets_at,
            line: "the resume that was pending when Nightshift stopped".into(),
        });
        if let (Some(p), Kind::Terminal(_)) = (&replay.pending, &contract.kind) {
            // The pending resume's own settings and guard, as it was armed.
            if let Kind::Terminal(t) = &mut contract.kind {
                t.auto_resume = Some(p.settings.clone());
                t.window_guard = p.guard;
            }
        }
        let reason =
            if replay.pieced { format!("{why} (read from a journal older than contracts)") } else { why.to_string() };
        tracing::info!(session = %id, down_secs = down, "restoring the session: {reason}");
        self.journal.emit(&id, EventKind::Restored { reason, down_secs: down });
        let resumed = Conversation::Resume { id: replay.conversation.clone(), prompt: prompt.clone() };
        let line = match &contract.kind {
            Kind::Terminal(t) => shell_words(&[vec![t.program.clone()], t.command(contract.agent, &resumed)].concat()),
            Kind::Loop(_) => shell_words(&row.command),
        };
        let what = if paused { "to resume after the limit" } else { "on its conversation" };
        self.journal.emit(&id, EventKind::state(SessionState::Starting, format!("restarting {line} {what}")));
        let paused_exact = replay.pending.as_ref().is_some_and(|p| p.exact);
        let from = Resumption {
            conversation: replay.conversation,
            prompt,
            paused_on,
            paused_exact,
            held: replay.held,
            spent: replay.spent.carried_over(),
            handoff,
        };
        self.launch(id, &contract, Runtime { from: Some(from), ..Runtime::default() }).map(Some)
    }

    /// Starts the agent of a recorded session from its contract, and its actor.
    fn launch(&self, id: SessionId, contract: &Contract, runtime: Runtime) -> Result<SessionHandle, StartError> {
        let Kind::Terminal(armed) = &contract.kind else {
            return Err(StartError::NotTerminal(id));
        };
        let agent = contract.agent;
        let now = self.journal.now();
        let mut t = (**armed).clone();
        let mut env = contract.env.clone();
        env.extend(runtime.env);
        env.push((crate::session::SESSION_ENV.to_string(), id.to_string()));
        // Before the exporter, which reads Codex's home from the child's environment.
        if let (Some(account), Some(var)) = (&contract.account, crate::agent::Account::variable(agent)) {
            env.retain(|(k, _)| k != var);
            env.push((var.to_string(), account.dir.display().to_string()));
        }
        // Our statusLine, hooks or notify ride on every start's arguments.
        self.attach_exporter(&id, agent, t.hooks, &mut t, &mut env);
        let conversation = match &runtime.from {
            None => Conversation::Opening,
            Some(from) => Conversation::Resume { id: from.conversation.clone(), prompt: from.prompt.clone() },
        };
        let size = PtySize::new(t.cols, t.rows);
        let command = CommandSpec {
            program: t.program.clone(),
            args: t.command(agent, &conversation),
            cwd: t.cwd.clone(),
            env,
            size,
        };
        let guard = match runtime.guard {
            Some(rules) => Some(rules),
            None if t.guard => self.guard_rules.clone(),
            None => None,
        };
        let spawned = match pty::spawn(&command) {
            Ok(spawned) => spawned,
            Err(error) => {
                tracing::info!(session = %id, "{error}");
                self.journal.emit(&id, EventKind::failed("failed to start", &error));
                return Err(StartError::Spawn { session: id, error });
            }
        };
        let pid = spawned.pty.pid();
        self.journal.emit(&id, EventKind::running(pid, format!("process {pid} started")));
        let adapter = Adapter::with(agent, t.adapter.as_ref()).unwrap_or_else(|e| {
            tracing::warn!(session = %id, "the session's screen signals no longer read ({e}); using the built-in ones");
            Adapter::builtin(agent)
        });
        // Respawn is armed for what is left of its hours (all of them at the first start).
        let respawn = t.respawn.clone().zip(t.respawn_until).and_then(|(mut settings, until)| {
            settings.duration = (until - now).to_std().ok()?;
            Some(settings)
        });
        let from = runtime.from.unwrap_or_default();
        let start = Start {
            agent,
            auto_accept: adapter.auto_accepted(),
            respawn_until: respawn.as_ref().and(t.respawn_until),
            respawn,
            preset: t.preset.clone(),
            auto_resume: t.auto_resume.clone(),
            window_guard: t.window_guard,
            stop_grace: t.stop_grace,
            paused_on: from.paused_on,
            paused_exact: from.paused_exact,
            held: from.held,
            pid,
            guard,
            conversation: from.conversation,
            budget: t.budget,
            account: contract.account.clone(),
            switch: t.switch.clone(),
            spent: from.spent,
            since: Some(contract.started),
            handoff: from.handoff,
        };
        let detect = DetectConfig { quiet: t.quiet, ..DetectConfig::default() };
        let actor = Actor {
            id: id.clone(),
            terminal: t,
            command,
            spawned,
            journal: self.journal.clone(),
            output_tap: runtime.output_tap,
            adapter,
            detect,
            start,
            state_dir: self.journal.path().and_then(|p| p.parent()).map(std::path::Path::to_path_buf),
        };
        let (handle, task) = actor.start();
        lock(&self.sessions).insert(id.clone(), handle.clone());
        let sessions = Arc::clone(&self.sessions);
        let reporters = Arc::clone(&self.reporters);
        tokio::spawn(async move {
            let _ = task.await;
            lock(&sessions).remove(&id);
            lock(&reporters).remove(&id);
        });
        Ok(handle)
    }

    /// For a Claude session whose command is the `claude` CLI itself: the statusLine exporter and
    /// the hooks, passed with `--settings` (never written to a file; laid over settings the user
    /// passed the same way). For a Codex session whose command is the `codex` CLI: its notify,
    /// passed with `-c notify=[…]` (never written to its config.toml; the user's own notify runs
    /// after ours). And the secret they report with.
    fn attach_exporter(
        &self,
        id: &SessionId,
        agent: AgentKind,
        hooks: bool,
        t: &mut crate::contract::Terminal,
        env: &mut Vec<(String, String)>,
    ) {
        let (Some(cli_path), Some(socket)) = (&self.cli, &self.control_socket) else { return };
        let program = std::path::Path::new(&t.program).file_name().and_then(|n| n.to_str());
        let claude = agent == AgentKind::Claude && matches!(program, Some("claude" | "claude.exe"));
        // Codex has no statusLine: without its notify there is nothing to pass.
        let codex = agent == AgentKind::Codex && program == Some("codex") && hooks;
        if !claude && !codex {
            return;
        }
        let token = crate::token::Token::random();
        env.push((usage::CONTROL_ENV.to_string(), socket.display().to_string()));
        env.push((usage::TOKEN_ENV.to_string(), token.expose().to_string()));
        if codex {
            let home =
                crate::hooks::codex::home(child_env(env, "CODEX_HOME"), child_env(env, "HOME").map(PathBuf::from));
            crate::hooks::codex::attach(&mut t.args, cli_path, home.as_deref());
            lock(&self.reporters).insert(id.clone(), Reporter { token, last: None });
            return;
        }
        let cli = shell_words(&[cli_path.display().to_string()]);
        let mut ours = usage::settings(&format!("{cli} statusline"));
        if hooks {
            ours["hooks"] = crate::hooks::settings(&format!("{cli} hook"));
        }
        let args = &mut t.args;
        match args.iter().position(|a| a == "--settings").filter(|i| *i + 1 < args.len()) {
            Some(i) => {
                let theirs = &args[i + 1];
                let theirs: serde_json::Value = serde_json::from_str(theirs)
                    .or_else(|_| {
                        std::fs::read_to_string(t.cwd.join(theirs))
                            .map_err(|_| ())
                            .and_then(|t| serde_json::from_str(&t).map_err(|_| ()))
                    })
                    .unwrap_or_else(|()| serde_json::json!({}));
                args[i + 1] = crate::hooks::merge_settings(&theirs, &ours).to_string();
            }
            None => args.splice(0..0, ["--settings".to_string(), ours.to_string()]).for_each(drop),
        }
        lock(&self.reporters).insert(id.clone(), Reporter { token, last: None });
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
}

/// A variable as the child will see it: set for it, or else inherited from this process.
fn child_env(env: &[(String, String)], key: &str) -> Option<std::ffi::OsString> {
    match env.iter().rev().find(|(k, _)| k == key) {
        Some((_, v)) => Some(v.into()),
        None => std::env::var_os(key),
    }
}

/// Ends, in the journal, a session that no Nightshift process runs (lost, kept waiting for a
/// limit's reset, or scheduled and not started yet): the user's stop, so nothing will start it
/// again, and its pending resume or its schedule is cancelled. For `nightshift stop` and the window's Stop; `None` when the session is not such a one.
pub fn end_orphan(
    store: &mut Store,
    clock: &dyn Clock,
    row: &crate::store::SessionRow,
    source: &str,
) -> Result<Option<Standing>, StoreError> {
    let standing = row.standing();
    if standing == Standing::Scheduled {
        crate::schedule::cancel(store, clock, row, source)?;
        return Ok(Some(standing));
    }
    if !matches!(standing, Standing::Lost | Standing::Kept) {
        return Ok(None);
    }
    if standing == Standing::Lost && row.owner_process_alive() {
        // Its Nightshift still runs (only its socket is gone): it would go on running the agent.
        return Err(StoreError::OwnerUnreachable { session: row.id.clone(), pid: row.owner_pid.unwrap_or_default() });
    }
    let session = SessionId::from(row.id.clone());
    let mut record = |kind| store.record(&Event { ts: clock.now(), session: session.clone(), kind });
    record(EventKind::StopRequested { source: source.to_string(), kind: StopKind::User })?;
    let reason = match standing {
        Standing::Kept => "stopped on request while no Nightshift ran it; its pending resume is cancelled",
        _ => "stopped on request while no Nightshift ran it; nothing will start it again",
    };
    record(EventKind::state(SessionState::Exited, reason))?;
    Ok(Some(standing))
}

/// What a loop did before its Nightshift ended: the iterations that ran to an end, their cost
/// and their tokens.
fn loop_spent(store: &Store, session: &str) -> Result<(u32, f64, u64), StoreError> {
    let mut done = (0, 0.0, 0);
    for e in store.events_named(session, &["iteration_ended"])? {
        let Ok(Event { kind: EventKind::IterationEnded { probe, cost_usd, tokens, outcome, .. }, .. }) =
            serde_json::from_str(&e.body)
        else {
            continue;
        };
        done.1 += cost_usd.unwrap_or(0.0);
        done.2 += tokens.unwrap_or(0);
        if !probe && outcome != "killed" {
            done.0 += 1;
        }
    }
    Ok(done)
}
