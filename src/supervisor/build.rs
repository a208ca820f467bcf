//! One way in: what a user asks for, at the command line (`nightshift run`) or in the window (New
//! session), made into the [`Contract`] the supervisor starts, now or at a scheduled time. Both ask
//! here, so both infer the agent, find its command, arm a preset, pick an account and refuse a bad
//! request alike. (A restore and an account switch start from the journalled contract; see
//! [`super::Supervisor::launch`].)

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::agent::{AdapterError, AgentKind};
use crate::breaker::Budget;
use crate::config::{Config, ConfigError};
use crate::contract::{Armed, Contract, Terminal};
use crate::hooks::guard::GuardError;
use crate::limits::{resume, AtLimit, WindowGuard};
use crate::paths::Paths;
use crate::pty::PtySize;

/// Which account a session runs under.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AccountChoice {
    /// The client's own default.
    #[default]
    Default,
    /// An account of `config.toml`'s `[accounts]`.
    Named(String),
    /// A client config directory (`CLAUDE_CONFIG_DIR`, or `CODEX_HOME` for Codex).
    Dir(PathBuf),
}

/// What a user asks for when starting a session.
#[derive(Debug, Clone)]
pub struct Request {
    /// Where the agent runs: an absolute path to a directory.
    pub cwd: PathBuf,
    /// The command and its arguments; empty: the agent's own CLI.
    pub command: Vec<String>,
    /// The agent; inferred from the command when `None`.
    pub agent: Option<AgentKind>,
    pub size: PtySize,
    /// Respawn armed with this preset of `config.toml` (or a built-in one).
    pub preset: Option<String>,
    pub auto_resume: Option<resume::Settings>,
    pub account: AccountChoice,
    /// Move to another account before the limit, at this percent (the default when `None`).
    pub switch_accounts: Option<Option<u8>>,
    pub window_guard: WindowGuard,
    /// The pace cycles keep; `None`: `[pace]` in config.toml.
    pub pace: Option<crate::limits::pace::PaceSettings>,
    /// The guard, without respawn (with respawn, its preset says).
    pub guard: bool,
    /// The client's hooks (the guard, handoffs and first-hand limits need them).
    pub hooks: bool,
    pub budget: Budget,
    pub stop_grace: Option<Duration>,
    /// How long the screen stays still before the agent counts as idle.
    pub quiet: Option<Duration>,
    /// The agent's own sandbox: `--sandbox`, `--no-sandbox`; `None`: as the preset and
    /// `[sandbox]` say.
    pub sandbox: Option<bool>,
    /// Its network fence (`--network`); `None`: as `[sandbox] fence` says.
    pub fence: Option<crate::agent::Fence>,
    /// Hosts it may reach besides the fence's own (`--allow-host`).
    pub allow_hosts: Vec<String>,
    /// The user's standing instructions for the night (`--standing`); `None`: the preset's.
    pub standing: Option<String>,
    /// What it does at a usage limit (`--at-limit`); `None`: the preset's, else wait.
    pub at_limit: Option<AtLimit>,
    /// The other agent the work moves to at a limit (`--failover-to`), for `--at-limit failover`.
    pub failover: Option<FailoverAsk>,
}

/// The other agent a session's work may move to at a limit.
#[derive(Debug, Clone, Default)]
pub struct FailoverAsk {
    /// Its command and arguments (`codex --model gpt-5.5`); empty: none given.
    pub command: Vec<String>,
    /// The account it runs under.
    pub account: AccountChoice,
    /// The work comes back at the first agent's reset.
    pub back: bool,
}

impl Request {
    /// The agent's own CLI (or `command`) in `cwd`, with nothing armed.
    pub fn new(cwd: PathBuf, command: Vec<String>) -> Self {
        Self {
            cwd,
            command,
            agent: None,
            size: PtySize::default(),
            preset: None,
            auto_resume: None,
            account: AccountChoice::Default,
            switch_accounts: None,
            window_guard: WindowGuard::default(),
            pace: None,
            guard: false,
            hooks: true,
            budget: Budget::default(),
            stop_grace: None,
            quiet: None,
            sandbox: None,
            fence: None,
            allow_hosts: Vec::new(),
            standing: None,
            at_limit: None,
            failover: None,
        }
    }
}

/// Why a request cannot start a session: each says what to change.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("{0}")]
    Cwd(String),
    #[error("{0}")]
    Command(String),
    #[error(transparent)]
    Adapter(#[from] AdapterError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The account switch cannot be armed for this session.
    #[error("{0}")]
    Switch(ConfigError),
    #[error(transparent)]
    Guard(#[from] GuardError),
    #[error("{0}")]
    Setting(String),
    /// The agent's sandbox cannot run, or cannot be had.
    #[error("{0}")]
    Sandbox(String),
    /// The loop cannot run as asked.
    #[error(transparent)]
    Loop(#[from] crate::loops::LoopError),
}

impl AccountChoice {
    /// The account it names for `agent`'s session, if it names one (`config` read only then).
    pub fn resolve(
        self,
        agent: AgentKind,
        config: impl FnOnce() -> Result<Config, ConfigError>,
    ) -> Result<Option<crate::agent::Account>, ConfigError> {
        Ok(match self {
            AccountChoice::Default => None,
            AccountChoice::Named(name) => Some(config()?.account(&name, agent)?),
            AccountChoice::Dir(dir) => Some(crate::config::account_from_dir(agent, &dir)?),
        })
    }
}

/// What a user asks for when starting a loop, beyond its plan ([`crate::loops::LoopRequest`]).
#[derive(Debug, Clone, Default)]
pub struct LoopAsk {
    pub request: crate::loops::LoopRequest,
    pub account: AccountChoice,
    /// The pace its iterations keep; `None`: `[pace]` in config.toml.
    pub pace: Option<crate::limits::pace::PaceSettings>,
    /// `--no-sandbox`; `None`: as `[sandbox]` says (a loop is unattended work: sandboxed).
    pub sandbox: Option<bool>,
    /// Its network fence (`--network`); `None`: as `[sandbox] fence` says.
    pub fence: Option<crate::agent::Fence>,
    /// Hosts it may reach besides the fence's own (`--allow-host`).
    pub allow_hosts: Vec<String>,
}

/// A loop as the command line and the window both build it: planned in `here` (a relative tasks
/// file or project is read from there), under its account, paced, checked by the canary when that
/// is required, in its sandbox and fence. `tweak` changes its settings first (the CLI's retry
/// ladder). Returns what to warn of too, a line each.
pub fn build_loop(
    paths: &Paths,
    here: &Path,
    ask: LoopAsk,
    tweak: impl FnOnce(&mut crate::loops::machine::Settings),
) -> Result<(crate::loops::LoopSpec, Vec<String>), BuildError> {
    use crate::loops::Prepare as _;
    let (mut spec, mut warnings) = ask.request.plan(here, &paths.state_dir)?;
    let config = Config::load(paths.config_dir.as_deref())?;
    spec.account = ask.account.resolve(spec.agent, || Ok(config.clone()))?;
    tweak(&mut spec.settings);
    spec.settings.pace = ask.pace.unwrap_or(config.pace);
    spec.canary_checked(&config.canary, &paths.state_dir).map_err(BuildError::Setting)?;
    if let Some(note) = spec.sandboxed(&config.sandbox, ask.sandbox).map_err(BuildError::Sandbox)? {
        warnings.push(format!("the agent is {note}"));
    }
    if let Some(sandbox) = &mut spec.sandbox {
        sandbox.fenced(ask.fence, &ask.allow_hosts).map_err(BuildError::Sandbox)?;
    }
    Ok((spec, warnings))
}

/// Makes `spec`'s iterations work in worktrees, where `config.toml`'s `[worktree] dir` says: one
/// for the loop (`name`, its branch `nightshift/<name>`; a random one when empty), or a new one per
/// task. Done last before a start (or a schedule), as [`in_worktree`] is.
pub fn loop_in_worktrees(
    spec: &mut crate::loops::LoopSpec,
    config_dir: Option<&Path>,
    name: &str,
    per_task: bool,
) -> Result<(), String> {
    use crate::loops::Prepare as _;
    let root = worktree_root(config_dir)?;
    spec.isolate(&root, name, per_task)
}

/// Where worktrees are made: `config.toml`'s `[worktree] dir`, else the XDG data folder's.
pub fn worktree_root(config_dir: Option<&Path>) -> Result<PathBuf, String> {
    let config = crate::config::Config::load(config_dir).map_err(|e| e.to_string())?;
    config.worktree.root().ok_or_else(|| "no folder for worktrees: set [worktree] dir in config.toml".to_string())
}

/// Makes `contract`'s session work in a new worktree `name` (a random one when empty) of the
/// repository its folder is in, where `config.toml`'s `[worktree] dir` says, in the same subfolder:
/// done last before a start (or a schedule), once nothing else can refuse it, so a refused start
/// leaves no worktree.
pub fn in_worktree(contract: &mut Armed, config_dir: Option<&Path>, name: &str) -> Result<(), String> {
    let root = worktree_root(config_dir)?;
    let name = if name.is_empty() { format!("{:08x}", rand::random::<u32>()) } else { name.to_string() };
    let t = contract.terminal_mut();
    let made = crate::git::worktree::make(&t.cwd, &name, &root).map_err(|e| e.to_string())?;
    // The same subfolder of it; a sandboxed agent may write all of it.
    t.cwd = crate::git::worktree::inside(&made, &t.cwd);
    if let Some(sandbox) = t.sandbox.as_mut().filter(|_| t.cwd != made.path) {
        sandbox.write.push(made.path.clone());
    }
    t.worktree = Some(made);
    Ok(())
}

/// The contract `request` asks for; `tweak` changes the preset's respawn settings first (the
/// CLI's `--idle-timeout` and the like). Its time counts from when it begins.
pub fn build(
    paths: &Paths,
    request: Request,
    tweak: impl FnOnce(&mut crate::respawn::Settings) -> Result<(), String>,
) -> Result<Armed, BuildError> {
    let cwd = request.cwd;
    if !cwd.is_absolute() {
        return Err(BuildError::Cwd(format!("{}: give the full path of the directory", cwd.display())));
    }
    if !cwd.is_dir() {
        return Err(BuildError::Cwd(format!("{} is not a directory; create it or choose another", cwd.display())));
    }
    let agent =
        request.agent.or_else(|| request.command.first().map(|p| AgentKind::infer(p))).unwrap_or(AgentKind::Generic);
    let adapter = crate::agent::load_adapter(agent, paths.agents_dir().as_deref())?;
    let mut argv = request.command.into_iter();
    let (program, args) = match argv.next() {
        Some(program) => (program, argv.collect::<Vec<_>>()),
        None => match adapter.launch() {
            Some((program, args)) => (program.to_string(), args.to_vec()),
            None => {
                return Err(BuildError::Command(format!(
                    "the {agent} agent has no CLI of its own: give the command that starts it"
                )))
            }
        },
    };
    let mut t = Terminal::new(agent, program, &args, cwd, (request.size.cols, request.size.rows));
    t.adapter = adapter.overrides().cloned();
    // Read once, when the request needs it: a broken config.toml refuses only what uses it.
    let mut loaded: Option<Config> = None;
    let mut config = || -> Result<Config, ConfigError> {
        if loaded.is_none() {
            loaded = Some(Config::load(paths.config_dir.as_deref())?);
        }
        Ok(loaded.clone().expect("loaded just now"))
    };
    let account = request.account.resolve(agent, &mut config)?;
    if let Some(name) = request.preset {
        let (mut settings, _) = config()?.preset(&name)?;
        tweak(&mut settings).map_err(BuildError::Setting)?;
        t.preset = Some(name);
        t.respawn = Some(settings);
    }
    // At a limit: the user's word, else the preset's, else wait.
    let at_limit = request.at_limit.or(t.respawn.as_ref().map(|r| r.at_limit)).unwrap_or_default();
    let failing_over = at_limit == AtLimit::Failover;
    if request.switch_accounts.is_some() || at_limit != AtLimit::Wait {
        if agent == AgentKind::Codex && !request.hooks {
            return Err(BuildError::Switch(ConfigError::Account(
                "a Codex session's account usage and its handoff come through Codex's notify, which --no-hooks \
                 turns off; drop one of them"
                    .into(),
            )));
        }
        let at = request.switch_accounts.flatten();
        match config()?.switch_settings(agent, account.as_ref(), at) {
            Ok(mut settings) => {
                settings.ahead = request.switch_accounts.is_some();
                settings.at_limit = at_limit != AtLimit::Wait;
                t.switch = Some(settings);
            }
            // A failover with no other account of this agent goes straight to the other agent.
            Err(_) if failing_over && request.switch_accounts.is_none() => {}
            Err(e) => return Err(BuildError::Switch(e)),
        }
    }
    t.auto_resume = request.auto_resume;
    // Restated by every input Nightshift types by itself: the user's words, else the preset's.
    let preset_standing = t.respawn.as_ref().map(|r| r.standing.as_str());
    t.standing = request.standing.as_deref().or(preset_standing).and_then(crate::automated::standing);
    t.window_guard = request.window_guard;
    // The pace parks respawn cycles: config.toml's is read only for a session that has them.
    t.pace = match request.pace {
        Some(pace) => pace,
        None if t.respawn.is_some() => config()?.pace,
        None => crate::limits::pace::PaceSettings::default(),
    };
    // The guard's rules are read for a guarded session alone, and a file that does not read
    // refuses it: never the built-in rules in place of the ones the user wrote.
    let guarded = (request.guard && t.respawn.is_none()) || t.respawn.as_ref().is_some_and(|r| r.guard);
    if guarded {
        let (_, file) = crate::hooks::guard::load_kept(paths.config_dir.as_deref())?;
        t.guard = true;
        t.guard_file = file;
    }
    if !request.hooks && guarded {
        return Err(BuildError::Setting(
            "the guard works through the client's hooks, which --no-hooks turns off; add --guard false".into(),
        ));
    }
    t.hooks = request.hooks;
    if let Some(cost) = request.budget.max_cost_usd.filter(|c| !(c.is_finite() && *c > 0.0)) {
        return Err(BuildError::Setting(format!("--max-cost-usd must be a positive number of dollars, not {cost}")));
    }
    if agent == AgentKind::Codex && request.budget.max_cost_usd.is_some() {
        return Err(BuildError::Setting(
            "Codex reports tokens but no cost, so --max-cost-usd cannot be kept; cap the session with --max-tokens"
                .into(),
        ));
    }
    t.budget = request.budget;
    if let Some(grace) = request.stop_grace {
        t.stop_grace = grace;
    }
    if let Some(quiet) = request.quiet {
        t.quiet = quiet;
    }
    // A broken config.toml refuses what reads it; it does not stop every start here.
    let required = config().is_ok_and(|c| c.canary.required);
    if required {
        let standing = crate::agent::canary::Standing::of(agent, &t.program, &t.cwd, &paths.state_dir);
        if let Some(why) = standing.and_then(|s| s.refusal(agent)) {
            return Err(BuildError::Setting(why));
        }
    }
    let unattended = t.respawn.as_ref().is_some_and(|r| r.sandbox);
    if request.sandbox.is_some() || unattended {
        // As the command line has it, its opening prompt included.
        let line = t.command(agent, &crate::contract::Conversation::Opening);
        (t.sandbox, t.unsandboxed) = config()?
            .sandbox
            .sandbox_for_command(agent, &t.program, &line, request.sandbox, unattended)
            .map_err(BuildError::Sandbox)?;
    }
    if let Some(sandbox) = &mut t.sandbox {
        sandbox.fenced(request.fence, &request.allow_hosts).map_err(BuildError::Sandbox)?;
    }
    if failing_over {
        // The user's word, else the preset's.
        let preset_to = t.respawn.as_ref().map(|r| r.failover_to.trim()).filter(|c| !c.is_empty());
        let preset_account = t.respawn.as_ref().map(|r| r.failover_account.trim()).filter(|a| !a.is_empty());
        let account = preset_account.map_or(AccountChoice::Default, |a| AccountChoice::Named(a.to_string()));
        let from_preset = preset_to.and_then(shlex::split).map(|command| FailoverAsk { command, account, back: true });
        let ask = request.failover.or(from_preset).ok_or_else(|| {
            BuildError::Setting(
                "--at-limit failover moves the work to the other agent: name it with --failover-to codex (or \
                 claude), with its options"
                    .into(),
            )
        })?;
        let envelope = (request.size, request.sandbox, request.fence, request.allow_hosts);
        t.failover = Some(failover_contract(paths, &t, agent, ask, envelope)?);
    }
    let mut contract = Contract::session(agent, t);
    *contract.account_mut() = account;
    Ok(contract)
}

/// The other agent's session a failover starts, built now so a bad one is refused now: in the
/// same folder, under the same preset's cycles, auto-resume, guard, budget, sandbox and fence, and
/// the same standing instructions; it waits at its own limits, and never fails over itself.
fn failover_contract(
    paths: &Paths,
    first: &Terminal,
    agent: AgentKind,
    ask: FailoverAsk,
    (size, sandbox, fence, allow_hosts): (PtySize, Option<bool>, Option<crate::agent::Fence>, Vec<String>),
) -> Result<crate::contract::Failover, BuildError> {
    let command = if ask.command.is_empty() {
        return Err(BuildError::Setting(
            "--failover-to needs the other agent's command: codex, or claude, with its options".into(),
        ));
    } else {
        ask.command
    };
    let mut other = Request::new(first.cwd.clone(), command);
    other.size = size;
    other.preset.clone_from(&first.preset);
    other.auto_resume.clone_from(&first.auto_resume);
    other.account = ask.account;
    other.window_guard = first.window_guard;
    other.pace = Some(first.pace);
    other.guard = first.guard;
    other.budget = first.budget;
    other.stop_grace = Some(first.stop_grace);
    other.quiet = Some(first.quiet);
    other.sandbox = sandbox;
    other.fence = fence;
    other.allow_hosts = allow_hosts;
    other.standing.clone_from(&first.standing);
    other.at_limit = Some(AtLimit::Wait);
    let mut built = build(paths, other, |_| Ok(()))?.into_contract();
    if built.agent == agent || built.agent == AgentKind::Generic {
        return Err(BuildError::Setting(format!(
            "--failover-to names a {} command; the work moves to the other agent: {}",
            built.agent,
            if agent == AgentKind::Claude { "codex" } else { "claude" }
        )));
    }
    // Not installed (or not runnable) is refused now, not found at the night's limit.
    if let crate::contract::Kind::Terminal(t) = &built.kind {
        let path = built.env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| std::ffi::OsString::from(v));
        let path = path.or_else(|| std::env::var_os("PATH"));
        if let Err(e) = crate::pty::resolve_program(&t.program, &t.cwd, path.as_deref()) {
            return Err(BuildError::Command(format!("--failover-to: {e}; install it, or give its full path")));
        }
    }
    // Nor is a client with no login, which would ask for one with nobody awake to give it.
    if let Err(why) = crate::session::login::contract_login(&built) {
        return Err(BuildError::Setting(format!("--failover-to: {why}, or name an account with --failover-account")));
    }
    if let crate::contract::Kind::Terminal(t) = &mut built.kind {
        // The cycles as this session has them, its tweaks included.
        t.respawn.clone_from(&first.respawn);
        t.respawn_until = first.respawn_until;
    }
    Ok(crate::contract::Failover { contract: Box::new(built), back: ask.back })
}

#[cfg(test)]
#[path = "build/tests.rs"]
mod tests;
