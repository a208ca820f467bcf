//! The night contract: what the user armed for a session or a loop, as one typed record written
//! into the journal when it starts — the command and agent, the respawn cycles and until when,
//! auto-resume, the budget, the account and its switch, the guard, the screen signals' overrides,
//! the working directory and the terminal's size.
//!
//! Every start of the session builds from it and nothing else: the first start, a restart after
//! the agent exited, a restore after Nightshift itself ended (a kill, a crash, a reboot), an
//! account switch. The contract keeps the command's opening prompt apart from its arguments: it
//! starts the first conversation only. A later start resumes the conversation by its id and is
//! given the kickstart instead (with the handoff, when one is fresh); see
//! [`Terminal::command`].

use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::agent::{Account, AgentKind, Overrides, Sandbox};
use crate::breaker::Budget;

/// How long a stopped child gets between SIGHUP and SIGKILL, unless the session says otherwise.
pub const DEFAULT_STOP_GRACE: Duration = Duration::from_secs(3);

/// The shape of the record this build writes.
pub const VERSION: u32 = 1;

/// The variables a session's later starts keep from its first: where programs, the clients'
/// config directories and their APIs are (never a token or a key). A restore at login runs with
/// the login's environment, which may not find `claude` on its `PATH`.
pub const KEPT_ENV: [&str; 6] =
    ["PATH", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "LANG", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"];

/// What the user armed, as the journal keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Contract {
    pub version: u32,
    /// When the session first started: the budget's time counts from here, across restores.
    #[serde(with = "crate::clock::ts")]
    pub started: DateTime<Utc>,
    pub agent: AgentKind,
    /// The client account it started under (a switch may move it; the journal's row says where
    /// it is now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<Account>,
    /// The variables of [`KEPT_ENV`] the first start had.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<(String, String)>,
    #[serde(flatten)]
    pub kind: Kind,
}

/// A terminal session or a loop, with what each arms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Kind {
    Terminal(Box<Terminal>),
    Loop(Box<Looping>),
}

/// A terminal session's command and automation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Terminal {
    pub program: String,
    /// The command's arguments, without its opening prompt.
    pub args: Vec<String>,
    /// The opening prompt: given to the first conversation only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    pub cwd: PathBuf,
    pub cols: u16,
    pub rows: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Respawn cycles, armed until `respawn_until`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub respawn: Option<crate::respawn::Settings>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::clock::opt_ts")]
    pub respawn_until: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_resume: Option<crate::limits::resume::Settings>,
    #[serde(default)]
    pub window_guard: crate::limits::WindowGuard,
    /// The pace its cycles keep (a morning reserve, a weekly pace).
    #[serde(default, skip_serializing_if = "crate::limits::pace::PaceSettings::is_off")]
    pub pace: crate::limits::pace::PaceSettings,
    #[serde(default)]
    pub budget: Budget,
    /// The move to another account before this one's limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch: Option<SwitchSettings>,
    /// Commands an unattended session must not run are refused through the client's hooks.
    #[serde(default)]
    pub guard: bool,
    /// The user's guard file (`guard.toml`) laid over the built-in rules, as read when it was
    /// armed: a restart and a restore judge by the rules the session started with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard_file: Option<Overrides>,
    /// The client is given Nightshift's hooks (Claude) or notify (Codex).
    #[serde(default = "yes")]
    pub hooks: bool,
    /// The user's screen signals laid over the built-in ones, as read at the first start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<Overrides>,
    /// How long the terminal must be quiet before the agent counts as idle.
    #[serde(with = "crate::clock::secs")]
    pub quiet: Duration,
    /// How long a stopped agent gets between SIGHUP and SIGKILL.
    #[serde(with = "crate::clock::secs")]
    pub stop_grace: Duration,
    /// The worktree it works in (`--worktree`): `cwd` is in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<crate::repo::Worktree>,
    /// The agent's own sandbox it runs in (the unattended presets', `--sandbox`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Sandbox>,
    /// Why it runs without the sandbox it would have had (`[sandbox] allow_unsandboxed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsandboxed: Option<String>,
    /// The user's standing instructions for the night (`--standing`, or the preset's), restated by
    /// every input Nightshift sends by itself (see [`crate::automated`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standing: Option<String>,
    /// The other agent the work moves to at a limit no account of this one has room past
    /// (`--at-limit failover`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover: Option<Failover>,
    /// This session took the work over at another agent's limit: where it goes back, and when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub returns: Option<Return>,
}

/// The other agent a session's work moves to at a limit, built when the session was: the same
/// folder, sandbox, fence, guard, budget and standing instructions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failover {
    /// Its session, as it starts (a fresh conversation, from the handoff).
    pub contract: Box<Contract>,
    /// The work comes back at the first agent's reset (`--return-at-reset`).
    pub back: bool,
}

/// Where the work of a session that took it over goes back to, and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Return {
    /// The first agent's session, as it started (its own failover armed again).
    pub contract: Box<Contract>,
    /// Its conversation, which it resumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<String>,
    /// When its window resets: the work goes back at the first turn's end after it.
    #[serde(with = "crate::clock::ts")]
    pub at: DateTime<Utc>,
}

fn yes() -> bool {
    true
}

/// The switch's threshold when none is given: the larger window at 90 %.
pub const DEFAULT_SWITCH_THRESHOLD: f64 = 90.0;

/// The switch as a session is armed with it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SwitchSettings {
    /// The larger of the 5-hour and 7-day use, in percent, at which the session moves; an account
    /// it moves to must have more than `100 − threshold` left.
    pub threshold: f64,
    /// The accounts it may move to (its own is never chosen).
    pub accounts: Vec<Account>,
    /// It moves before the limit, at the threshold (`--switch-accounts`).
    #[serde(default = "yes")]
    pub ahead: bool,
    /// It moves at the limit too, instead of waiting for the reset (`--at-limit switch`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub at_limit: bool,
}

/// A loop: its projects, their tasks, its harness and its settings (budget and caps included).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Looping {
    pub spec: LoopSpec,
}

/// One project of a loop.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProjectSpec {
    pub cwd: PathBuf,
    pub tasks: TaskSource,
    /// Where its iterations work instead of `cwd` (`loop --worktree`, `--worktree-per-task`).
    #[serde(default, skip_serializing_if = "Isolation::is_none")]
    pub isolation: Isolation,
}

impl ProjectSpec {
    /// A project whose iterations work in `cwd` itself.
    pub fn new(cwd: PathBuf, tasks: TaskSource) -> ProjectSpec {
        ProjectSpec { cwd, tasks, isolation: Isolation::None }
    }
}

/// Where a loop project's iterations work.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// In the project's folder.
    #[default]
    None,
    /// In one worktree of its own for the whole loop (`cwd`'s subfolder of it).
    Worktree(crate::repo::Worktree),
    /// In a new worktree for each task, under `root`, on a branch `nightshift/<name>-<iteration>-<task
    /// words>` made from the user's HEAD when the task starts (journalled as `worktree_made`).
    PerTask { root: PathBuf, name: String },
}

impl Isolation {
    pub fn is_none(&self) -> bool {
        matches!(self, Isolation::None)
    }
}

/// A loop to run (its contract, as the journal keeps it).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LoopSpec {
    pub agent: AgentKind,
    /// The harness's program (`claude`, `codex`, or a path to one).
    pub program: String,
    /// The user's own flags for the harness (model, permission mode), after Nightshift's.
    pub args: Vec<String>,
    pub projects: Vec<ProjectSpec>,
    pub settings: LoopSettings,
    /// Extra environment for every iteration.
    #[serde(default)]
    pub env: Vec<(String, String)>,
    /// The client account every iteration runs under (its config directory).
    #[serde(default)]
    pub account: Option<crate::agent::Account>,
    /// The agent's own sandbox every iteration runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Sandbox>,
}

/// Where a loop's tasks come from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskSource {
    /// The same task every iteration.
    Prompt(String),
    /// The first open item of this file, every iteration.
    File(PathBuf),
}

/// How a loop behaves: its caps, budget and ladders.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct LoopSettings {
    /// Iterations that ran to an end (a retry or a limit's re-run is the same iteration).
    pub max_iterations: Option<u32>,
    pub budget: Budget,
    /// Transient failures of one iteration retried before the loop gives up; 0: never give up.
    pub max_retries: u32,
    #[serde(with = "crate::clock::secs")]
    pub retry_first: Duration,
    #[serde(with = "crate::clock::secs")]
    pub retry_cap: Duration,
    /// Past a limit's reset before the iteration runs again.
    #[serde(with = "crate::clock::secs")]
    pub limit_margin: Duration,
    /// How often a limit wait probes for an early reset (a one-word, marked prompt, no tools).
    #[serde(with = "crate::clock::secs")]
    pub probe_every: Duration,
    /// Iterations in a row that settle nothing before a project is backed off.
    pub fruitless_after: u32,
    /// The back-off waits, the last repeated.
    #[serde(with = "crate::clock::secs_list")]
    pub fruitless_waits: Vec<Duration>,
    /// The pace new iterations keep (a morning reserve, a weekly pace).
    #[serde(skip_serializing_if = "crate::limits::pace::PaceSettings::is_off")]
    pub pace: crate::limits::pace::PaceSettings,
    /// The user's standing instructions, restated by the loop's own probes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub standing: Option<String>,
}

impl Default for LoopSettings {
    fn default() -> Self {
        Self {
            max_iterations: None,
            budget: Budget::default(),
            max_retries: 0,
            retry_first: Duration::from_secs(30),
            retry_cap: Duration::from_secs(300),
            limit_margin: Duration::from_secs(60),
            probe_every: Duration::from_secs(30 * 60),
            fruitless_after: 3,
            fruitless_waits: [15, 30, 60, 120].map(|m| Duration::from_secs(m * 60)).to_vec(),
            pace: crate::limits::pace::PaceSettings::default(),
            standing: None,
        }
    }
}

/// Which conversation a start of the agent carries on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conversation {
    /// The first start: the command as the user gave it, with its opening prompt.
    Opening,
    /// The conversation of a start before (its id, when its hooks named it), with `prompt` to go
    /// on from.
    Resume { id: Option<String>, prompt: Option<String> },
    /// A fresh conversation (another account's), with `prompt` to start from.
    Fresh { prompt: Option<String> },
}

impl Terminal {
    /// `program args` of `agent` in `cwd` on a terminal of `cols` × `rows`, with nothing armed: the
    /// opening prompt apart from the arguments, the built-in timings, the client's hooks on.
    pub fn new(agent: AgentKind, program: String, args: &[String], cwd: PathBuf, (cols, rows): (u16, u16)) -> Self {
        let (args, prompt) = agent.split_prompt(&program, args);
        Terminal {
            program,
            args,
            prompt,
            cwd,
            cols,
            rows,
            preset: None,
            respawn: None,
            respawn_until: None,
            auto_resume: None,
            window_guard: crate::limits::WindowGuard::default(),
            pace: crate::limits::pace::PaceSettings::default(),
            budget: Budget::default(),
            switch: None,
            guard: false,
            guard_file: None,
            hooks: true,
            adapter: None,
            quiet: crate::detect::DetectConfig::default().quiet,
            stop_grace: DEFAULT_STOP_GRACE,
            worktree: None,
            sandbox: None,
            unsandboxed: None,
            standing: None,
            failover: None,
            returns: None,
        }
    }

    /// The command's arguments for a start of the agent: the opening prompt only on the opening.
    pub fn command(&self, agent: AgentKind, conversation: &Conversation) -> Vec<String> {
        let mut args = self.args.clone();
        match conversation {
            Conversation::Opening => args.extend(self.prompt.clone()),
            Conversation::Resume { id, prompt } => {
                agent.continue_conversation(&self.program, &mut args, id.as_deref());
                args.extend(prompt.clone());
            }
            Conversation::Fresh { prompt } => {
                agent.start_fresh(&self.program, &mut args);
                args.extend(prompt.clone());
            }
        }
        args
    }

    /// Whether any automation is armed: respawn cycles or auto-resume.
    pub fn automated(&self) -> bool {
        self.respawn.is_some() || self.auto_resume.is_some()
    }
}

/// A terminal session's contract: what a session machine starts from (a loop's is not one).
#[derive(Debug, Clone, PartialEq)]
pub struct Armed(Contract);

impl Armed {
    /// `contract`, when it is a terminal session's.
    pub fn new(contract: Contract) -> Option<Self> {
        matches!(contract.kind, Kind::Terminal(_)).then_some(Self(contract))
    }

    pub fn contract(&self) -> &Contract {
        &self.0
    }

    /// What it arms.
    pub fn terminal(&self) -> &Terminal {
        match &self.0.kind {
            Kind::Terminal(t) => t,
            Kind::Loop(_) => unreachable!("an Armed contract is a terminal session's (Armed::new)"),
        }
    }

    /// What it arms, to change (a spec's session, a test's).
    pub fn terminal_mut(&mut self) -> &mut Terminal {
        match &mut self.0.kind {
            Kind::Terminal(t) => t,
            Kind::Loop(_) => unreachable!("an Armed contract is a terminal session's (Armed::new)"),
        }
    }

    /// The account it runs under, to choose.
    pub fn account_mut(&mut self) -> &mut Option<Account> {
        &mut self.0.account
    }

    pub fn into_contract(self) -> Contract {
        self.0
    }
}

impl Contract {
    /// A terminal session of `agent` armed with `terminal`: its time counts from when it begins
    /// ([`Contract::begun`]), its environment is the starter's to keep.
    pub fn session(agent: AgentKind, terminal: Terminal) -> Armed {
        Armed(Contract {
            version: VERSION,
            started: DateTime::UNIX_EPOCH,
            agent,
            account: None,
            env: Vec::new(),
            kind: Kind::Terminal(Box::new(terminal)),
        })
    }

    /// A loop of `spec`, under its account; it begins as [`Contract::session`] does.
    pub fn looping(spec: LoopSpec) -> Contract {
        Contract {
            version: VERSION,
            started: DateTime::UNIX_EPOCH,
            agent: spec.agent,
            account: spec.account.clone(),
            env: Vec::new(),
            kind: Kind::Loop(Box::new(Looping { spec })),
        }
    }

    /// The contract as its session begins at `now` (a first start, or a scheduled one at its
    /// time): its budget's time counts from here, to the millisecond the journal keeps, and its
    /// respawn cycles are armed for their duration from here (with the guard, when they ask).
    pub fn begun(mut self, now: DateTime<Utc>) -> Self {
        let started = chrono::SubsecRound::trunc_subsecs(now, 3);
        self.started = started;
        if let Kind::Terminal(t) = &mut self.kind {
            // Respawn armed with the guard arms it.
            t.guard |= t.respawn.as_ref().is_some_and(|r| r.guard);
            t.respawn_until =
                t.respawn.as_ref().map(|r| started + chrono::Duration::from_std(r.duration).unwrap_or_default());
        }
        self
    }

    /// Where it works: the session's folder, or the loop's first project's.
    pub fn cwd(&self) -> PathBuf {
        match &self.kind {
            Kind::Terminal(t) => t.cwd.clone(),
            Kind::Loop(l) => l.spec.projects.first().map(|p| p.cwd.clone()).unwrap_or_default(),
        }
    }
}

impl Contract {
    pub fn terminal(&self) -> Option<&Terminal> {
        match &self.kind {
            Kind::Terminal(t) => Some(t),
            Kind::Loop(_) => None,
        }
    }

    /// What was armed, in a line for the journal.
    pub fn describe(&self) -> String {
        match &self.kind {
            Kind::Terminal(t) => {
                let mut armed = Vec::new();
                if let (Some(r), Some(until)) = (&t.respawn, t.respawn_until) {
                    let preset = t.preset.as_deref().map(|p| format!(" ({p})")).unwrap_or_default();
                    armed.push(format!(
                        "respawn{preset} until {}, idle timeout {} s",
                        crate::clock::format_ts(until),
                        r.idle_timeout.as_secs_f64()
                    ));
                }
                if let Some(r) = &t.auto_resume {
                    armed.push(format!("auto-resume {} s after the reset", r.margin.as_secs()));
                }
                if t.budget != Budget::default() {
                    armed.push("a budget".into());
                }
                if let Some(s) = &t.switch {
                    armed.push(format!("an account switch at {}%", s.threshold.round()));
                }
                if t.guard {
                    armed.push("the guard".into());
                }
                let armed = if armed.is_empty() { "nothing armed (attended)".to_string() } else { armed.join(", ") };
                let prompt = if t.prompt.is_some() { ", with an opening prompt" } else { "" };
                format!("the {} session in {} is armed with {armed}{prompt}", self.agent, t.cwd.display())
            }
            Kind::Loop(l) => {
                let dirs: Vec<String> = l.spec.projects.iter().map(|p| p.cwd.display().to_string()).collect();
                format!("a loop of {} in {}", self.agent, dirs.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terminal() -> Terminal {
        let args: Vec<String> = ["--model", "opus", "Work through TASKS.md"].map(String::from).to_vec();
        let (args, prompt) = AgentKind::Claude.split_prompt("claude", &args);
        Terminal {
            program: "claude".into(),
            args,
            prompt,
            cwd: "/work/p".into(),
            cols: 120,
            rows: 40,
            preset: Some("overnight".into()),
            respawn: Some(crate::respawn::Settings::default()),
            respawn_until: Some("2026-12-02T06:00:00Z".parse().unwrap()),
            auto_resume: Some(crate::limits::resume::Settings::default()),
            window_guard: crate::limits::WindowGuard { reserve_pct: Some(20.0), ..Default::default() },
            pace: Default::default(),
            budget: Budget {
                max_cost_usd: Some(12.5),
                max_tokens: None,
                max_wall_clock: Some(Duration::from_secs(8 * 3600)),
            },
            switch: Some(SwitchSettings {
                threshold: 90.0,
                accounts: vec![Account { name: "work".into(), dir: "/home/u/.claude-work".into() }],
                ahead: true,
                at_limit: true,
            }),
            guard: true,
            guard_file: Some(Overrides { file: "guard.toml".into(), text: "protected = [\"release/*\"]\n".into() }),
            hooks: true,
            adapter: Some(Overrides { file: "claude.toml".into(), text: "verified = \"2.1.332\"\n".into() }),
            quiet: Duration::from_secs(2),
            stop_grace: Duration::from_secs(3),
            worktree: Some(crate::repo::Worktree {
                repo: "/work/p".into(),
                path: "/home/u/.local/share/nightshift/worktrees/p-1a2b3c4d/night".into(),
                branch: "nightshift/night".into(),
                base: "0123456789abcdef0123456789abcdef01234567".into(),
            }),
            sandbox: Some(Sandbox {
                write: vec!["/wt/night".into()],
                network: vec!["crates.io".into()],
                ..Sandbox::default()
            }),
            unsandboxed: None,
            standing: None,
            failover: None,
            returns: None,
        }
    }

    #[test]
    fn a_contract_begins_when_its_session_starts_not_when_it_was_built() {
        let args: Vec<String> = ["--model", "opus", "Work through TASKS.md"].map(String::from).to_vec();
        let mut t = Terminal::new(AgentKind::Claude, "claude".into(), &args, "/work/p".into(), (100, 30));
        assert_eq!((t.args.as_slice(), t.prompt.as_deref()), (&args[..2], Some("Work through TASKS.md")));
        assert!(!t.guard && t.hooks && t.respawn_until.is_none());
        t.respawn =
            Some(crate::respawn::Settings { duration: Duration::from_secs(3600), guard: true, ..Default::default() });
        let built = Contract::session(AgentKind::Claude, t).into_contract();
        assert_eq!(built.started, DateTime::UNIX_EPOCH, "not begun");
        // Scheduled at 18:00, begun at 23:30:00.123456: its time counts from then, to the millisecond.
        let at: DateTime<Utc> = "2026-12-01T23:30:00.123456Z".parse().unwrap();
        let begun = built.begun(at);
        assert_eq!(begun.started, "2026-12-01T23:30:00.123Z".parse::<DateTime<Utc>>().unwrap());
        let t = begun.terminal().unwrap();
        assert_eq!(t.respawn_until, Some("2026-12-02T00:30:00.123Z".parse().unwrap()));
        assert!(t.guard, "respawn armed with the guard arms it");
        let mut unguarded = t.clone();
        unguarded.respawn.as_mut().unwrap().guard = false;
        unguarded.guard = false;
        let begun = Contract::session(AgentKind::Claude, unguarded).into_contract().begun(at);
        assert!(!begun.terminal().unwrap().guard, "nor without");
    }

    #[test]
    fn a_contract_reads_back_as_it_was_written() {
        let contract = Contract {
            version: VERSION,
            started: "2026-12-01T22:00:00Z".parse().unwrap(),
            agent: AgentKind::Claude,
            account: Some(Account { name: "home".into(), dir: "/home/u/.claude".into() }),
            env: vec![("PATH".into(), "/usr/bin".into())],
            kind: Kind::Terminal(Box::new(terminal())),
        };
        let text = serde_json::to_string(&contract).unwrap();
        assert!(text.contains(r#""kind":"terminal""#), "{text}");
        assert_eq!(serde_json::from_str::<Contract>(&text).unwrap(), contract);
        let spec = LoopSpec {
            agent: AgentKind::Claude,
            program: "claude".into(),
            args: vec!["--model".into(), "opus".into()],
            projects: vec![
                ProjectSpec::new("/work/p".into(), TaskSource::File("/work/p/TASKS.md".into())),
                ProjectSpec {
                    isolation: Isolation::PerTask { root: "/data/worktrees".into(), name: "night".into() },
                    ..ProjectSpec::new("/work/q".into(), TaskSource::Prompt("go".into()))
                },
            ],
            settings: LoopSettings::default(),
            env: vec![],
            account: None,
            sandbox: Some(Sandbox::default()),
        };
        let looping = Contract { kind: Kind::Loop(Box::new(Looping { spec })), ..contract };
        let text = serde_json::to_string(&looping).unwrap();
        assert_eq!(serde_json::from_str::<Contract>(&text).unwrap(), looping);
    }

    #[test]
    fn the_opening_prompt_is_given_once_per_conversation() {
        let t = terminal();
        let first = t.command(AgentKind::Claude, &Conversation::Opening);
        assert_eq!(first, ["--model", "opus", "Work through TASKS.md"]);
        let kick = Some("Continue the work.".to_string());
        let resumed =
            t.command(AgentKind::Claude, &Conversation::Resume { id: Some("0b2c".into()), prompt: kick.clone() });
        assert_eq!(resumed, ["--model", "opus", "--resume", "0b2c", "Continue the work."]);
        let unknown = t.command(AgentKind::Claude, &Conversation::Resume { id: None, prompt: None });
        assert_eq!(unknown, ["--model", "opus", "--continue"]);
        let fresh = t.command(AgentKind::Claude, &Conversation::Fresh { prompt: kick });
        assert_eq!(fresh, ["--model", "opus", "Continue the work."]);
        assert!(
            [resumed, unknown, fresh].iter().all(|a| !a.iter().any(|w| w.contains("TASKS.md"))),
            "no later start gives the opening prompt again"
        );
    }
}
