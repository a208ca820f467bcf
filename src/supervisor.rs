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
use crate::detect::DetectConfig;
use crate::event::{Automation, Event, EventKind, SessionId, SessionState, StopKind};
use crate::pty::{self, shell_words, CommandSpec, PtySize, SpawnError};
use crate::session::machine::Start;
use crate::session::{Actor, SessionHandle, DEFAULT_STOP_GRACE};
use crate::store::{NewSession, Standing, Store, StoreError};
use crate::usage::{self, Sample};

/// The longest a session may take to answer its client's hook (the hook itself gives up later).
const HOOK_ANSWER: Duration = Duration::from_millis(1000);

/// Environment variable that tells a child which Nightshift session it runs in.
pub const SESSION_ENV: &str = "NIGHTSHIFT_SESSION";

/// What the journal's row of a scheduled session says (see [`Supervisor::schedule`]): what a
/// session or loop spec will record when it starts.
#[derive(Debug, Clone)]
pub struct Scheduled {
    kind: crate::store::SessionKind,
    command: Vec<String>,
    cwd: String,
    agent: AgentKind,
    preset: Option<String>,
    account: Option<crate::config::Account>,
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
    /// Start paused on this limit (a restored session whose resume was pending).
    pub paused_on: Option<crate::limits::LimitText>,
    /// Start with every automatic action held (a restored session the user had paused).
    pub held: bool,
    /// Refuse, through the client's hooks, commands an unattended session must not run.
    pub guard: Option<std::sync::Arc<crate::hooks::guard::Rules>>,
    /// The client's conversation to resume on restarts (a restored session's).
    pub conversation: Option<String>,
    /// Give a Claude client Nightshift's hooks (exact turns, the guard, handoffs); without them the
    /// session is read from its screen alone. The statusLine exporter is passed either way.
    pub hooks: bool,
    /// What the session may spend before its agent is stopped.
    pub budget: crate::breaker::Budget,
    /// The client account it runs under (its config directory); the client's own default when
    /// `None`.
    pub account: Option<crate::config::Account>,
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
            paused_on: None,
            held: false,
            guard: None,
            conversation: None,
            hooks: true,
            budget: crate::breaker::Budget::default(),
            account: None,
            switch: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The command could not be started; the journal records the failure under `session`.
    #[error("{error}")]
    Spawn { session: SessionId, error: SpawnError },
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
    token: crate::control::Token,
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
        self.launch(id, spec)
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
        self.launch(id, spec)
    }

    /// Takes scheduled session `id` over for this process, with the account it starts under.
    fn adopt_scheduled(&self, id: &SessionId, account: Option<&crate::config::Account>) -> Result<(), StoreError> {
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
        mut spec: crate::loops::LoopSpec,
    ) -> Result<SessionHandle, StartError> {
        self.adopt_scheduled(&id, spec.account.as_ref())?;
        if let (Some(account), Some(var)) = (&spec.account, crate::config::Account::variable(spec.agent)) {
            spec.env.push((var.to_string(), account.dir.display().to_string()));
        }
        let projects: Vec<String> = spec.projects.iter().map(|p| p.cwd.display().to_string()).collect();
        tracing::info!(session = %id, ?projects, "starting a scheduled loop");
        let what = format!("starting a loop of {} in {}, as scheduled", spec.command_line()[0], projects.join(", "));
        self.journal.emit(&id, EventKind::state(SessionState::Starting, what));
        Ok(self.run_loop(id, spec))
    }

    /// Records and starts a loop of headless iterations (see [`crate::loops`]).
    pub fn start_loop(&self, mut spec: crate::loops::LoopSpec) -> Result<SessionHandle, StartError> {
        let id = SessionId::generate();
        let argv = spec.command_line();
        let cwd = spec.projects.first().map(|p| p.cwd.display().to_string()).unwrap_or_default();
        let socket = self.control_socket.as_ref().map(|p| p.display().to_string());
        if let (Some(account), Some(var)) = (&spec.account, crate::config::Account::variable(spec.agent)) {
            spec.env.push((var.to_string(), account.dir.display().to_string()));
        }
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
        Ok(self.run_loop(id, spec))
    }

    /// The actor of a recorded loop.
    fn run_loop(&self, id: SessionId, spec: crate::loops::LoopSpec) -> SessionHandle {
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

    /// Sessions whose Nightshift died while they waited for a usage limit's reset, with auto-resume
    /// on: each is started again (Claude with `--continue`) under its own id, paused on its limit,
    /// with its resume re-armed: due at once if the reset passed while Nightshift was down.
    pub fn restore_pending(&self) -> Vec<SessionHandle> {
        let rows = match self.with_store(|s| s.sessions()) {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!("cannot look for pending resumes: {e}");
                return Vec::new();
            }
        };
        let mut restored = Vec::new();
        // The owner's process must be gone (its socket may vanish with the runtime directory while it
        // still runs: a second copy of the agent must never start) — unless it said itself that it
        // ended and kept the resume (after a reboot its pid may be another process's).
        for row in rows.iter().filter(|r| !r.is_final() && (r.kept.is_some() || !r.owner_process_alive())) {
            let Some(pending) = self.with_store(|s| pending_resume(s, row)) else { continue };
            match self.restore(row, pending) {
                Ok(handle) => restored.push(handle),
                Err(e) => tracing::warn!(session = %row.id, "could not restore the session: {e}"),
            }
        }
        restored
    }

    fn restore(&self, row: &crate::store::SessionRow, pending: Pending) -> Result<SessionHandle, StartError> {
        let mut argv = row.command.clone().into_iter();
        let program = argv.next().unwrap_or_default();
        let mut args: Vec<String> = argv.collect();
        let agent = row.agent.parse().unwrap_or(AgentKind::Generic);
        agent.continue_conversation(&program, &mut args, pending.conversation.as_deref());
        let command =
            CommandSpec { program, args, cwd: row.cwd.clone().into(), env: Vec::new(), size: PtySize::default() };
        let line = shell_words(&command.argv());
        let mut spec = SessionSpec::new(command);
        spec.agent = agent;
        spec.preset.clone_from(&row.preset);
        // The same account as before: a resumed conversation lives in its config directory.
        spec.account = row
            .account
            .clone()
            .zip(row.account_dir.clone())
            .map(|(name, dir)| crate::config::Account { name, dir: dir.into() });
        spec.auto_resume = Some(pending.settings);
        spec.held = pending.held;
        spec.window_guard = pending.guard;
        spec.conversation = pending.conversation;
        // Respawn is armed again for what is left of its duration.
        if let Some((preset, mut settings, until)) = pending.respawn {
            if let Ok(left) = (until - self.journal.now()).to_std() {
                settings.duration = left;
                spec.preset = preset.or(spec.preset);
                spec.respawn = Some(settings);
            }
        }
        spec.paused_on = Some(crate::limits::LimitText {
            kind: crate::limits::LimitKind::Unspecified,
            resets_at: pending.resets_at,
            line: "the resume that was pending when Nightshift stopped".into(),
        });
        let id = SessionId::from(row.id.clone());
        let socket = self.control_socket.as_ref().map(|p| p.display().to_string());
        self.journal.write(|s| s.adopt_session(&row.id, std::process::id(), socket.as_deref()))?;
        tracing::info!(session = %id, "restoring a session with a pending resume");
        self.journal.emit(
            &id,
            EventKind::state(SessionState::Starting, format!("restarting {line} to resume after the limit")),
        );
        self.launch(id, spec)
    }

    /// Starts the process of a recorded session and its actor.
    fn launch(&self, id: SessionId, mut spec: SessionSpec) -> Result<SessionHandle, StartError> {
        spec.command.env.push((SESSION_ENV.to_string(), id.to_string()));
        // Before the exporter, which reads Codex's home from the child's environment.
        if let (Some(account), Some(var)) = (&spec.account, crate::config::Account::variable(spec.agent)) {
            spec.command.env.push((var.to_string(), account.dir.display().to_string()));
        }
        self.attach_exporter(&id, &mut spec);
        if spec.guard.is_none() && spec.respawn.as_ref().is_some_and(|r| r.guard) {
            spec.guard.clone_from(&self.guard_rules);
        }
        let spawned = match pty::spawn(&spec.command) {
            Ok(spawned) => spawned,
            Err(error) => {
                tracing::info!(session = %id, "{error}");
                self.journal.emit(&id, EventKind::failed("failed to start", &error));
                return Err(StartError::Spawn { session: id, error });
            }
        };
        let pid = spawned.pty.pid();
        self.journal.emit(&id, EventKind::running(pid, format!("process {pid} started")));
        let adapter = spec.adapter.take().unwrap_or_else(|| Adapter::builtin(spec.agent));
        let start = Start {
            agent: spec.agent,
            auto_accept: adapter.auto_accepted(),
            respawn: spec.respawn.clone(),
            preset: spec.preset.clone(),
            auto_resume: spec.auto_resume.clone(),
            window_guard: spec.window_guard,
            stop_grace: spec.stop_grace,
            paused_on: spec.paused_on.take(),
            held: spec.held,
            pid,
            guard: spec.guard.take(),
            conversation: spec.conversation.take(),
            budget: spec.budget,
            account: spec.account.clone(),
            switch: spec.switch.take(),
        };
        let actor = Actor {
            id: id.clone(),
            command: spec.command.clone(),
            spawned,
            journal: self.journal.clone(),
            output_tap: spec.output_tap.take(),
            adapter,
            detect: spec.detect,
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
    fn attach_exporter(&self, id: &SessionId, spec: &mut SessionSpec) {
        let (Some(cli_path), Some(socket)) = (&self.cli, &self.control_socket) else { return };
        let program = std::path::Path::new(&spec.command.program).file_name().and_then(|n| n.to_str());
        let claude = spec.agent == AgentKind::Claude && matches!(program, Some("claude" | "claude.exe"));
        // Codex has no statusLine: without its notify there is nothing to pass.
        let codex = spec.agent == AgentKind::Codex && program == Some("codex") && spec.hooks;
        if !claude && !codex {
            return;
        }
        let token = crate::control::Token::random();
        spec.command.env.push((usage::CONTROL_ENV.to_string(), socket.display().to_string()));
        spec.command.env.push((usage::TOKEN_ENV.to_string(), token.expose().to_string()));
        if codex {
            let home = crate::hooks::codex::home(
                child_env(&spec.command, "CODEX_HOME"),
                child_env(&spec.command, "HOME").map(PathBuf::from),
            );
            crate::hooks::codex::attach(&mut spec.command.args, cli_path, home.as_deref());
            lock(&self.reporters).insert(id.clone(), Reporter { token, last: None });
            return;
        }
        let cli = shell_words(&[cli_path.display().to_string()]);
        let mut ours = usage::settings(&format!("{cli} statusline"));
        if spec.hooks {
            ours["hooks"] = crate::hooks::settings(&format!("{cli} hook"));
        }
        let args = &mut spec.command.args;
        match args.iter().position(|a| a == "--settings").filter(|i| *i + 1 < args.len()) {
            Some(i) => {
                let theirs = &args[i + 1];
                let theirs: serde_json::Value = serde_json::from_str(theirs)
                    .or_else(|_| {
                        std::fs::read_to_string(spec.command.cwd.join(theirs))
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
fn child_env(command: &CommandSpec, key: &str) -> Option<std::ffi::OsString> {
    match command.env.iter().rev().find(|(k, _)| k == key) {
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

/// What a session was waiting for when its Nightshift stopped.
#[derive(Debug)]
struct Pending {
    resets_at: Option<chrono::DateTime<chrono::Utc>>,
    settings: crate::limits::resume::Settings,
    /// Its fresh-window guard.
    guard: crate::limits::WindowGuard,
    /// The user had held its automatic actions.
    held: bool,
    /// Its respawn arrangement, if one was armed.
    respawn: Option<Armed>,
    /// The client's conversation, as its hooks last named it.
    conversation: Option<String>,
}

/// Respawn as it was armed: the preset, the settings, and until when.
type Armed = (Option<String>, crate::respawn::Settings, chrono::DateTime<chrono::Utc>);

/// How far back a session's journal is read for its pending resume.
const PENDING_LOOKBACK: usize = 5000;

/// The resume a session was waiting for: the last `resume_armed` with nothing after it that ends
/// the wait (the limit over or failed, the user's stop, an end, auto-resume switched off) — a stop
/// because Nightshift itself ended keeps it; and whether the user held the session. Rows this
/// version cannot read are passed over.
fn pending_resume(store: &Store, row: &crate::store::SessionRow) -> Option<Pending> {
    let events = store.recent_events(&row.id, PENDING_LOOKBACK).ok()?;
    let mut found = None;
    let mut held = None;
    // The respawn arrangement: the last word on it (settings, or switched off or over) wins.
    let mut respawn: Option<Option<Armed>> = None;
    let mut conversation: Option<String> = None;
    for stored in events.iter().rev() {
        let Ok(event) = serde_json::from_str::<Event>(&stored.body) else { continue };
        match &event.kind {
            EventKind::Conversation { id } if conversation.is_none() => conversation = Some(id.clone()),
            EventKind::RespawnSettings { preset, settings, until } if respawn.is_none() => {
                respawn = Some(Some((preset.clone(), (**settings).clone(), *until)));
            }
            EventKind::Respawn {
                action: crate::respawn::Action::Disarmed | crate::respawn::Action::Expired, ..
            } if respawn.is_none() => {
                respawn = Some(None);
            }
            // A journal without the settings (0.1.0): the row's built-in preset, from when it was armed.
            EventKind::Respawn { action: crate::respawn::Action::Armed, .. } if respawn.is_none() => {
                respawn = Some(row.preset.as_deref().and_then(crate::respawn::builtin).map(|settings| {
                    let until = event.ts + chrono::Duration::from_std(settings.duration).unwrap_or_default();
                    (row.preset.clone(), settings, until)
                }));
            }
            _ => {}
        }
        match event.kind {
            EventKind::ResumeArmed { resets_at, settings, guard, .. } if found.is_none() => {
                found = Some((resets_at, settings, guard))
            }
            EventKind::LimitCleared { .. }
            | EventKind::LimitFailed { .. }
            | EventKind::StopRequested { kind: StopKind::User, .. }
                if found.is_none() =>
            {
                return None
            }
            EventKind::Automation { change, .. } => match change {
                Automation::AutoResumeOff if found.is_none() => return None,
                Automation::Held if held.is_none() => held = Some(true),
                Automation::Released if held.is_none() => held = Some(false),
                _ => {}
            },
            EventKind::State { state, .. } if state.is_final() && found.is_none() => return None,
            _ => {}
        }
        if found.is_some() && held.is_some() && respawn.is_some() && conversation.is_some() {
            break;
        }
    }
    found.map(|(resets_at, settings, guard)| Pending {
        resets_at,
        settings,
        guard,
        held: held.unwrap_or(false),
        respawn: respawn.flatten(),
        conversation,
    })
}
