//! What a session is started from before its contract exists: the spec the CLI and the app
//! build, and what a scheduled start keeps of it.

use super::*;
use crate::loops::Harness as _;

/// What the journal's row of a scheduled session says (see [`Supervisor::schedule`]): what a
/// session or loop spec will record when it starts.
#[derive(Debug, Clone)]
pub struct Scheduled {
    pub(super) kind: crate::store::SessionKind,
    pub(super) command: Vec<String>,
    pub(super) cwd: String,
    pub(super) agent: AgentKind,
    pub(super) preset: Option<String>,
    pub(super) account: Option<crate::agent::Account>,
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
    /// The pace its cycles keep (a morning reserve, a weekly pace); off by default.
    pub pace: crate::limits::pace::PaceSettings,
    /// Refuse, through the client's hooks, commands an unattended session must not run (with
    /// these rules; the supervisor's when respawn's settings ask for the guard).
    pub guard: Option<std::sync::Arc<crate::hooks::guard::Rules>>,
    /// The user's guard file those rules were read with, kept in the contract.
    pub guard_file: Option<crate::agent::Overrides>,
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
    /// The worktree the session works in (`--worktree`), made before it starts.
    pub worktree: Option<crate::git::worktree::Worktree>,
    /// The agent's own sandbox it runs in.
    pub sandbox: Option<crate::agent::Sandbox>,
    /// Why it runs without the sandbox it would have had (`[sandbox] allow_unsandboxed`).
    pub unsandboxed: Option<String>,
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
            pace: crate::limits::pace::PaceSettings::default(),
            guard: None,
            guard_file: None,
            hooks: true,
            budget: crate::breaker::Budget::default(),
            account: None,
            switch: None,
            worktree: None,
            sandbox: None,
            unsandboxed: None,
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
        let mut env = crate::contract::kept_env();
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
                pace: self.pace,
                budget: self.budget,
                switch: self.switch.clone(),
                guard,
                guard_file: self.guard_file.clone(),
                hooks: self.hooks,
                adapter: self.adapter.as_ref().and_then(|a| a.overrides().cloned()),
                quiet: self.detect.quiet,
                stop_grace: self.stop_grace,
                worktree: self.worktree.clone(),
                sandbox: self.sandbox.clone(),
                unsandboxed: self.unsandboxed.clone(),
            })),
        }
    }
}
