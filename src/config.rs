//! Settings the user keeps: their own respawn presets and the app's notification switches, in
//! `$XDG_CONFIG_HOME/nightshift/config.toml`.
//!
//! ```toml
//! [notifications]
//! finished = false
//!
//! [app]
//! keep_resumes_on_quit = true
//!
//! [presets.my-night]
//! idle_timeout = 20
//! duration = 21600
//! ...every respawn setting...
//! ```
//!
//! Built-in presets cannot be overwritten or deleted. The file is written atomically (a temporary
//! file renamed over it), so a crash never leaves half a configuration.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::agent::{Account, AgentKind};
use crate::respawn::{self, Settings};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("`{0}` is a built-in preset and cannot be changed; save your version under another name")]
    Builtin(String),
    #[error("no preset `{0}`; `nightshift presets` lists them")]
    NoPreset(String),
    #[error("a preset name is letters, digits, `-` and `_` (1 to 40 of them), not `{0}`")]
    BadName(String),
    #[error("no configuration directory could be found; set NIGHTSHIFT_CONFIG_DIR")]
    NoDir,
    #[error("{0}")]
    Account(String),
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Which desktop notifications the tray app shows (`[notifications] finished = false`).
    #[serde(default)]
    pub notifications: crate::notice::Switches,
    #[serde(default)]
    pub presets: BTreeMap<String, Settings>,
    /// The tray app's own settings (`[app] keep_resumes_on_quit = false`).
    #[serde(default)]
    pub app: AppSettings,
    /// Notifications for the phone (`[push] ntfy = "https://ntfy.sh/my-night"`).
    #[serde(default)]
    pub push: crate::notice::PushSettings,
    /// The user's client accounts, each a config directory of its own
    /// (`[accounts.work] claude = "~/.claude-work"`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub accounts: BTreeMap<String, AccountDirs>,
    /// Scheduled starts (`[schedule] missed = "skip"`).
    #[serde(default)]
    pub schedule: ScheduleSettings,
    /// Where sessions' worktrees are made (`[worktree] dir = "~/worktrees"`).
    #[serde(default)]
    pub worktree: WorktreeSettings,
    /// The agents' own sandboxes for unattended work (`[sandbox] network = ["crates.io"]`).
    #[serde(default, skip_serializing_if = "SandboxSettings::is_default")]
    pub sandbox: SandboxSettings,
    /// What a start asks of the canary (`[canary] required = true`).
    #[serde(default, skip_serializing_if = "CanarySettings::is_default")]
    pub canary: CanarySettings,
    /// Pacing the night's spend (`[pace] morning_reserve = "20% at 08:30"`, `weekly_pace = 5`).
    #[serde(default, skip_serializing_if = "crate::limits::pace::PaceSettings::is_off")]
    pub pace: crate::limits::pace::PaceSettings,
    /// Sleeping through long waits (`[sleep] min_wait = 1800`).
    #[serde(default, skip_serializing_if = "SleepConfig::is_default")]
    pub sleep: SleepConfig,
    /// Taking over sessions whose Nightshift died or hung (`[adoption] lease = 60`).
    #[serde(default, skip_serializing_if = "AdoptionSettings::is_default")]
    pub adoption: AdoptionSettings,
}

/// The lease when `[adoption] lease` does not say: a minute.
pub const DEFAULT_LEASE: std::time::Duration = std::time::Duration::from_secs(60);

/// How long a Nightshift process may go without renewing its lease on its sessions before another
/// takes them over (see [`crate::supervisor::adopt`]). Seconds, 10 at the least; one whose process
/// is gone is taken over at once whatever this says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdoptionSettings {
    #[serde(serialize_with = "crate::clock::secs::serialize", deserialize_with = "lease")]
    pub lease: std::time::Duration,
}

impl Default for AdoptionSettings {
    fn default() -> Self {
        Self { lease: DEFAULT_LEASE }
    }
}

impl AdoptionSettings {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// A lease of at least 10 s: shorter, a busy machine would lose its own sessions.
fn lease<'de, D: serde::Deserializer<'de>>(d: D) -> Result<std::time::Duration, D::Error> {
    let secs = f64::deserialize(d)?;
    if !(secs.is_finite() && (10.0..=86_400.0).contains(&secs)) {
        return Err(serde::de::Error::custom(format!(
            "a lease of {secs} s: give between 10 and 86400 seconds (60 by default)"
        )));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// When the night lets the machine sleep through a wait, and wakes it for its end (see
/// [`crate::awake::night`]). Durations are seconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SleepConfig {
    /// Sleep through long waits when a wake alarm can be set; `false` holds every wait awake.
    pub through_waits: bool,
    /// A wait at least this long lets the machine sleep.
    #[serde(with = "crate::clock::secs")]
    pub min_wait: std::time::Duration,
    /// On battery, a wait at least this long does.
    #[serde(with = "crate::clock::secs")]
    pub battery_min_wait: std::time::Duration,
    /// The wake alarm goes off this long before what it wakes for.
    #[serde(with = "crate::clock::secs")]
    pub wake_before: std::time::Duration,
}

impl Default for SleepConfig {
    fn default() -> Self {
        let d = crate::awake::SleepSettings::default();
        let std = |d: chrono::Duration| d.to_std().unwrap_or_default();
        SleepConfig {
            through_waits: true,
            min_wait: std(d.min_wait),
            battery_min_wait: std(d.battery_min_wait),
            wake_before: std(d.lead),
        }
    }
}

impl SleepConfig {
    fn is_default(&self) -> bool {
        *self == SleepConfig::default()
    }

    /// The policy's settings, `can_wake` saying whether a wake alarm can be set here.
    pub fn settings(&self, can_wake: bool) -> crate::awake::SleepSettings {
        let chrono = |d: std::time::Duration| chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX);
        crate::awake::SleepSettings {
            min_wait: chrono(self.min_wait),
            battery_min_wait: chrono(self.battery_min_wait),
            lead: chrono(self.wake_before),
            can_wake: can_wake && self.through_waits,
        }
    }
}

/// What a start asks of the canary (`nightshift doctor --canary`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CanarySettings {
    /// Refuse to start a Claude or Codex session or loop on a client whose canary has not passed.
    pub required: bool,
}

impl CanarySettings {
    fn is_default(&self) -> bool {
        self == &Self::default()
    }
}

/// When sessions and loops run in the agent's own sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxSettings {
    /// The unattended presets (overnight, ralph) and loops run sandboxed; `false` turns that off.
    pub enabled: bool,
    /// Where the sandbox cannot run, start without it (said in the session's options) instead of
    /// refusing the start.
    pub allow_unsandboxed: bool,
    /// Hosts sandboxed commands may reach besides the fence's own (names, `host:port`,
    /// `*.domain`); every other is refused without asking.
    pub network: Vec<String>,
    /// How far sandboxed commands reach: `project` (the project's own hosts, the default),
    /// `open` (any, every connection seen) or `none` (the hosts of `network` alone).
    pub fence: crate::agent::Fence,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        SandboxSettings {
            enabled: true,
            allow_unsandboxed: false,
            network: Vec::new(),
            fence: crate::agent::Fence::Project,
        }
    }
}

impl SandboxSettings {
    fn is_default(&self) -> bool {
        *self == SandboxSettings::default()
    }

    /// The sandbox a start of `agent` running `program` with the user's `args` gets, as
    /// [`Self::sandbox_for`] decides with this machine's readiness. The sandbox is set on the
    /// agent's own command line, so a wrapper (`npx claude`, `bash -c …`) or a renamed client has
    /// none to set it on, and the user's own flags may turn it off (Codex's `--yolo`): such a start
    /// of the claude or codex agent is refused where the sandbox is wanted, or, with
    /// `allow_unsandboxed`, goes on with a note saying why it is not sandboxed.
    pub fn sandbox_for_command(
        &self,
        agent: AgentKind,
        program: &str,
        args: &[String],
        asked: Option<bool>,
        unattended: bool,
    ) -> Result<(Option<crate::agent::Sandbox>, Option<String>), String> {
        let wanted = asked.unwrap_or(self.enabled && unattended);
        let own = AgentKind::infer(program) == agent;
        let why_not = match agent {
            AgentKind::Generic => None,
            _ if !own => Some(format!(
                "`{program}` is not the {agent} CLI itself, so its command line has no place for the sandbox"
            )),
            _ => crate::agent::turned_off(agent, args).map(|flag| format!("`{flag}` turns Codex's sandbox off")),
        };
        match why_not {
            Some(why) if wanted && self.allow_unsandboxed => Ok((None, Some(format!("not sandboxed: {why}")))),
            Some(why) if wanted => Err(format!(
                "{why}, and this start must run sandboxed; run the {agent} CLI itself without that, or start without \
                 the sandbox (--no-sandbox, or [sandbox] allow_unsandboxed = true in config.toml)"
            )),
            _ => {
                let ready = <crate::platform::Os as crate::platform::Sandboxes>::claude_sandbox;
                self.sandbox_for(if own { agent } else { AgentKind::Generic }, asked, unattended, ready)
            }
        }
    }

    /// The sandbox a start of `agent` gets: `asked` (`--sandbox`, `--no-sandbox`), else the
    /// setting for `unattended` work. `ready` says whether Claude's can run here. With it, a note
    /// for the options when the start goes on without one it would have had; an error (one line,
    /// with the fix) when it must not start.
    pub fn sandbox_for(
        &self,
        agent: AgentKind,
        asked: Option<bool>,
        unattended: bool,
        ready: impl FnOnce() -> Result<(), String>,
    ) -> Result<(Option<crate::agent::Sandbox>, Option<String>), String> {
        if !asked.unwrap_or(self.enabled && unattended) {
            return Ok((None, None));
        }
        let sandbox = crate::agent::Sandbox { write: Vec::new(), network: self.network.clone(), fence: self.fence };
        match agent {
            AgentKind::Generic if asked == Some(true) => {
                Err("only the claude and codex commands have a sandbox of their own to set; start without --sandbox"
                    .into())
            }
            AgentKind::Generic => {
                Ok((None, Some("not sandboxed: only the claude and codex commands have a sandbox to set".into())))
            }
            AgentKind::Codex => Ok((Some(sandbox), None)),
            AgentKind::Claude => match ready() {
                Ok(()) => Ok((Some(sandbox), None)),
                Err(why) if self.allow_unsandboxed => Ok((None, Some(format!("not sandboxed: {why}")))),
                Err(why) => Err(format!(
                    "the agent's sandbox cannot run here: {why}; or start without it (--no-sandbox, or [sandbox] \
                     allow_unsandboxed = true in config.toml)"
                )),
            },
        }
    }
}

/// What a sandboxed agent's commands must not read: Nightshift's own state (the journal, the
/// recordings, the handoffs), its control sockets and its configuration (the phone's key, the
/// push token), and every client account of `config.toml` but `own` (the config directory the
/// session runs under). Only folders that exist: a path the client cannot find it warns about.
pub fn hidden_from_agents(state_dir: Option<&Path>, own: Option<&Path>) -> Vec<PathBuf> {
    let config_dir = crate::paths::Paths::config_dir();
    let mut hidden: Vec<PathBuf> =
        [state_dir.map(Path::to_path_buf), Some(crate::paths::runtime_dir()), config_dir.clone()]
            .into_iter()
            .flatten()
            .collect();
    if let Ok(config) = Config::load(config_dir.as_deref()) {
        for dirs in config.accounts.values() {
            hidden.extend([&dirs.claude, &dirs.codex].into_iter().flatten().map(|d| expand_home(d)));
        }
    }
    let own = own.map(|o| std::fs::canonicalize(o).unwrap_or_else(|_| o.to_path_buf()));
    let mut kept: Vec<PathBuf> = Vec::new();
    for dir in hidden {
        let Ok(real) = std::fs::canonicalize(&dir) else { continue };
        if own.as_ref().is_some_and(|o| o == &real || o.starts_with(&real)) || kept.contains(&real) {
            continue;
        }
        kept.push(real);
    }
    kept
}

/// Where `--worktree` makes a session's worktree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorktreeSettings {
    /// The folder that holds them, one folder per repository inside
    /// [default: `$XDG_DATA_HOME/nightshift/worktrees`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
}

impl WorktreeSettings {
    /// The folder worktrees are made in: the setting (`~` is the home), else the XDG data folder's.
    pub fn root(&self) -> Option<PathBuf> {
        if let Some(dir) = &self.dir {
            let text = dir.to_string_lossy();
            return Some(match text.strip_prefix("~/") {
                Some(rest) => directories::BaseDirs::new()?.home_dir().join(rest),
                None => dir.clone(),
            });
        }
        directories::ProjectDirs::from("", "", "nightshift").map(|d| d.data_dir().join("worktrees"))
    }
}

/// What scheduled starts do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScheduleSettings {
    /// A start whose time passed while no Nightshift ran: `start` it at once (the default), or
    /// `skip` it.
    pub missed: Missed,
}

/// What a scheduled start whose time passed while no Nightshift ran becomes (see
/// [`crate::schedule`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Missed {
    /// It starts at once.
    #[default]
    Start,
    /// It is skipped: the session never starts.
    Skip,
}

/// One account: the config directory each client keeps its login and state in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AccountDirs {
    /// What `CLAUDE_CONFIG_DIR` names for Claude Code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claude: Option<PathBuf>,
    /// What `CODEX_HOME` names for Codex.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub codex: Option<PathBuf>,
}

/// An account of `agent` from `dir` given on the command line (`--config-dir`), named by itself; a
/// relative one is taken from the current directory, not the session's. The directory is checked.
pub fn account_from_dir(agent: crate::agent::AgentKind, dir: &Path) -> Result<Account, ConfigError> {
    let dir = expand_home(dir);
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    check_account_dir(agent, &dir.display().to_string(), &dir)?;
    Ok(Account { name: dir.display().to_string(), dir })
}

fn expand_home(dir: &Path) -> PathBuf {
    match (dir.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => dir.to_path_buf(),
    }
}

/// The variable that points `agent` at its config directory, or why it has none.
fn variable_of(agent: crate::agent::AgentKind) -> Result<&'static str, ConfigError> {
    Account::variable(agent).ok_or_else(|| {
        ConfigError::Account(format!(
            "an account is a client's config directory, and a {agent} command has none; pass --agent claude or codex"
        ))
    })
}

fn check_account_dir(agent: crate::agent::AgentKind, name: &str, dir: &Path) -> Result<(), ConfigError> {
    let var = variable_of(agent)?;
    if !dir.is_dir() {
        return Err(ConfigError::Account(format!(
            "account `{name}`: {} is not a directory; log in there first ({var}={} {agent})",
            dir.display(),
            dir.display()
        )));
    }
    Ok(())
}

/// The tray app's behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AppSettings {
    /// Quit keeps the resumes sessions wait for (they resume at the next start); off, Quit cancels
    /// them as a stop would.
    pub keep_resumes_on_quit: bool,
}

impl Default for AppSettings {
    fn default() -> Self {
        Self { keep_resumes_on_quit: true }
    }
}

/// Where a preset comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Builtin,
    User,
}

impl Config {
    pub fn path(dir: &Path) -> PathBuf {
        dir.join("config.toml")
    }

    /// The configuration in `dir` (empty when there is no file).
    pub fn load(dir: Option<&Path>) -> Result<Self, ConfigError> {
        let Some(dir) = dir else { return Ok(Self::default()) };
        let path = Self::path(dir);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        let config = Self::parse(&path, &text)?;
        if let Some(name) = config.presets.keys().find(|n| respawn::builtin(n).is_some()) {
            return Err(ConfigError::Invalid {
                path,
                message: format!("`{name}` is the name of a built-in preset; rename yours"),
            });
        }
        Ok(config)
    }

    /// The configuration in `text`, the contents of `path` (named in errors).
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let config: Self = toml::from_str(text).map_err(|e| ConfigError::Invalid {
            path: path.to_path_buf(),
            message: format!(
                "{}; fix it, or move the file aside to use the defaults",
                crate::toml_error::one_line(text, &e)
            ),
        })?;
        match config.push.problem() {
            Some(message) => Err(ConfigError::Invalid { path: path.to_path_buf(), message }),
            None => Ok(config),
        }
    }

    /// The configuration as `save` writes it.
    pub fn to_text(&self) -> Result<String, String> {
        toml::to_string_pretty(self).map_err(|e| e.to_string())
    }

    /// Writes the settings to `dir/config.toml`, its owner's alone, whole or not at all: a file
    /// of its own, synced, moved into place, and the folder synced, so a power cut leaves the old
    /// file or the new one. To change what is there, use [`Config::update`]: a save of settings
    /// read earlier undoes what another process saved since.
    pub fn save(&self, dir: Option<&Path>) -> Result<PathBuf, ConfigError> {
        let dir = dir.ok_or(ConfigError::NoDir)?;
        let path = Self::path(dir);
        let text = self.to_text().map_err(|message| ConfigError::Invalid { path: path.clone(), message })?;
        let write = || -> std::io::Result<()> {
            crate::paths::private_dirs(dir)?;
            // Made 0600 by tempfile, and named apart from any other process's.
            let mut tmp = tempfile::Builder::new().prefix(".config.toml.").suffix(".tmp").tempfile_in(dir)?;
            std::io::Write::write_all(&mut tmp, text.as_bytes())?;
            tmp.as_file().sync_all()?;
            tmp.persist(&path).map_err(|e| e.error)?;
            std::fs::File::open(dir)?.sync_all()
        };
        write().map_err(|source| ConfigError::Write { path: path.clone(), source })?;
        Ok(path)
    }

    /// Reads `dir/config.toml`, lets `change` change it, and saves it, with every other
    /// Nightshift process's update of the file waiting its turn (a lock beside it), so two that
    /// change it at once both count. Returns what `change` returned and where the file is.
    pub fn update<T>(
        dir: Option<&Path>,
        change: impl FnOnce(&mut Config) -> Result<T, ConfigError>,
    ) -> Result<(T, PathBuf), ConfigError> {
        let dir = dir.ok_or(ConfigError::NoDir)?;
        let locked = |source| ConfigError::Write { path: dir.join(".config.lock"), source };
        crate::paths::private_dirs(dir).map_err(locked)?;
        let file = crate::paths::private_append(&dir.join(".config.lock")).map_err(locked)?;
        let _held = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, e)| locked(std::io::Error::from(e)))?;
        let mut config = Self::load(Some(dir))?;
        let out = change(&mut config)?;
        let path = config.save(Some(dir))?;
        Ok((out, path))
    }

    /// A preset by name: a built-in one or the user's.
    pub fn preset(&self, name: &str) -> Result<(Settings, Source), ConfigError> {
        if let Some(settings) = respawn::builtin(name) {
            return Ok((settings, Source::Builtin));
        }
        self.presets.get(name).map(|s| (s.clone(), Source::User)).ok_or_else(|| ConfigError::NoPreset(name.to_string()))
    }

    /// Every preset, built-in ones first.
    pub fn all(&self) -> Vec<(String, Settings, Source)> {
        let builtin = respawn::BUILTIN_PRESETS
            .iter()
            .map(|p| (p.0.to_string(), respawn::builtin(p.0).expect("built-in"), Source::Builtin));
        builtin.chain(self.presets.iter().map(|(n, s)| (n.clone(), s.clone(), Source::User))).collect()
    }

    /// Every account with a config directory for `agent`, checked: what a session may switch to.
    pub fn accounts_for(&self, agent: crate::agent::AgentKind) -> Result<Vec<Account>, ConfigError> {
        let has_dir = |d: &AccountDirs| match agent {
            crate::agent::AgentKind::Claude => d.claude.is_some(),
            crate::agent::AgentKind::Codex => d.codex.is_some(),
            crate::agent::AgentKind::Generic => false,
        };
        self.accounts.iter().filter(|(_, d)| has_dir(d)).map(|(name, _)| self.account(name, agent)).collect()
    }

    /// What a session of `agent` on `current` may switch to before its account's limit, at `at` %
    /// (the default when `None`): every other account for the agent. The CLI's `--switch-accounts`
    /// and the window's checkbox both ask here, so both refuse alike.
    pub fn switch_settings(
        &self,
        agent: crate::agent::AgentKind,
        current: Option<&Account>,
        at: Option<u8>,
    ) -> Result<crate::contract::SwitchSettings, ConfigError> {
        if agent == crate::agent::AgentKind::Generic {
            return Err(ConfigError::Account(
                "switching accounts moves Claude and Codex sessions (their own usage data reports each \
                 account's windows); turn it off for a generic session"
                    .into(),
            ));
        }
        let accounts = self.accounts_for(agent)?;
        if !accounts.iter().any(|a| current.is_none_or(|c| c.name != a.name && c.dir != a.dir)) {
            return Err(ConfigError::Account(format!(
                "there is no other account to switch to; add one to config.toml as [accounts.NAME] {agent} = \"DIR\""
            )));
        }
        let threshold = at.map_or(crate::contract::DEFAULT_SWITCH_THRESHOLD, f64::from);
        Ok(crate::contract::SwitchSettings { threshold, accounts, ahead: true, at_limit: false })
    }

    /// The account `name` for `agent`'s sessions.
    pub fn account(&self, name: &str, agent: crate::agent::AgentKind) -> Result<Account, ConfigError> {
        let Some(dirs) = self.accounts.get(name) else {
            let known: Vec<&str> = self.accounts.keys().map(String::as_str).collect();
            let have = if known.is_empty() {
                "there are none yet".to_string()
            } else {
                format!("there are {}", known.join(", "))
            };
            return Err(ConfigError::Account(format!(
                "no account `{name}` in config.toml ({have}); add [accounts.{name}] with claude = \"DIR\" or codex = \"DIR\""
            )));
        };
        let dir = match agent {
            crate::agent::AgentKind::Claude => dirs.claude.as_ref(),
            crate::agent::AgentKind::Codex => dirs.codex.as_ref(),
            crate::agent::AgentKind::Generic => None,
        };
        let Some(dir) = dir.map(|d| expand_home(d)) else {
            variable_of(agent)?;
            return Err(ConfigError::Account(format!(
                "account `{name}` has no {agent} directory; add {agent} = \"DIR\" under [accounts.{name}]"
            )));
        };
        check_account_dir(agent, name, &dir)?;
        Ok(Account { name: name.to_string(), dir })
    }

    pub fn save_preset(&mut self, name: &str, settings: Settings) -> Result<(), ConfigError> {
        if respawn::builtin(name).is_some() {
            return Err(ConfigError::Builtin(name.to_string()));
        }
        let valid = !name.is_empty()
            && name.len() <= 40
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid {
            return Err(ConfigError::BadName(name.to_string()));
        }
        self.presets.insert(name.to_string(), settings);
        Ok(())
    }

    pub fn delete_preset(&mut self, name: &str) -> Result<(), ConfigError> {
        if respawn::builtin(name).is_some() {
            return Err(ConfigError::Builtin(name.to_string()));
        }
        self.presets.remove(name).map(|_| ()).ok_or_else(|| ConfigError::NoPreset(name.to_string()))
    }
}

#[cfg(test)]
#[path = "config/tests.rs"]
mod tests;
