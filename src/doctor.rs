//! "Ready for tonight?": the checks `nightshift doctor` and the window's panel run before a night.
//!
//! Most lost nights are lost before they start: the agent is not on the PATH the app uses, the client
//! is logged out, the permission mode stops the first tool call on a dialog, the laptop is on battery
//! with lid-close set to suspend, a STOP marker is left over. Each check here is a verdict on facts:
//! [`gather`] collects the facts (files, processes, D-Bus), the functions in this file judge them
//! (pure, tested on their own), and [`Report`] says them one line each, `PASS`, `WARN` or `FAIL`,
//! every WARN and FAIL with a one-line remedy.

pub mod canary;
pub mod gather;
pub mod probe;

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

pub use gather::{run, Options};

/// The JSON form's version: bumped when a field changes meaning or goes away.
pub const SCHEMA: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pass,
    Warn,
    Fail,
    /// Not checked, with why (a client the canary cannot run offline).
    Skip,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "PASS",
            Self::Warn => "WARN",
            Self::Fail => "FAIL",
            Self::Skip => "SKIP",
        }
    }
}

/// One check's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// Stable id: `group.what[.which]` (`harness.claude.path`, `cwd.0.git`).
    pub id: String,
    /// What it is about, as shown: `config`, `claude`, `state`, `~/src/api`, `desktop`, `power`.
    pub subject: String,
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// What to do about a WARN or a FAIL: the command to run, the setting to change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
}

impl Check {
    pub fn pass(id: impl Into<String>, subject: impl Into<String>, detail: impl Into<String>) -> Self {
        Self { id: id.into(), subject: subject.into(), status: Status::Pass, detail: detail.into(), remedy: None }
    }

    pub fn warn(
        id: impl Into<String>,
        subject: impl Into<String>,
        detail: impl Into<String>,
        remedy: impl Into<String>,
    ) -> Self {
        Self { status: Status::Warn, remedy: Some(remedy.into()), ..Self::pass(id, subject, detail) }
    }

    pub fn fail(
        id: impl Into<String>,
        subject: impl Into<String>,
        detail: impl Into<String>,
        remedy: impl Into<String>,
    ) -> Self {
        Self { status: Status::Fail, remedy: Some(remedy.into()), ..Self::pass(id, subject, detail) }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub pass: usize,
    pub warn: usize,
    pub fail: usize,
    /// Checks that could not run here, each with why.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skip: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Every check of one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub schema: u32,
    /// No check failed.
    pub ok: bool,
    pub counts: Counts,
    pub checks: Vec<Check>,
}

impl Report {
    pub fn new(checks: Vec<Check>) -> Self {
        let counted: Vec<Status> = checks.iter().map(|c| c.status).collect();
        Self::tallied(checks, &counted)
    }

    /// A report whose tally, and verdict, are of `counted` alone: the canary counts its signals,
    /// not the line of each client that sums them up.
    pub fn tallied(checks: Vec<Check>, counted: &[Status]) -> Self {
        let count = |s: Status| counted.iter().filter(|c| **c == s).count();
        let counts = Counts {
            pass: count(Status::Pass),
            warn: count(Status::Warn),
            fail: count(Status::Fail),
            skip: count(Status::Skip),
        };
        Self { schema: SCHEMA, ok: counts.fail == 0, counts, checks }
    }

    /// One line per check, then the tally.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for c in &self.checks {
            let _ = write!(out, "{}  {}: {}", c.status.as_str(), c.subject, c.detail);
            if let Some(remedy) = &c.remedy {
                let _ = write!(out, " — {remedy}");
            }
            out.push('\n');
        }
        let Counts { pass, warn, fail, skip } = self.counts;
        let verdict = if fail > 0 {
            "not ready: fix the FAILs"
        } else if warn > 0 {
            "ready, with warnings"
        } else {
            "ready for tonight"
        };
        let skipped = if skip > 0 { format!(", {skip} skipped") } else { String::new() };
        let _ = writeln!(out, "{pass} passed, {warn} warning(s), {fail} failed{skipped}: {verdict}");
        out
    }
}

/// The permission settings a Claude session will start with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Permissions {
    /// `--permission-mode`, else `permissions.defaultMode` of the settings; `None`: the client's
    /// default (auto, on the verified client).
    pub mode: Option<String>,
    /// Allow rules, from the settings files and `--allowedTools`.
    pub allow: usize,
    /// `ANTHROPIC_BASE_URL` is set: a gateway, through which auto mode's classifier is not reached.
    pub base_url: Option<String>,
    pub root: bool,
}

/// Whether an unattended Claude session in `subject` will stall on a permission dialog.
pub fn judge_permissions(id: &str, subject: &str, p: &Permissions) -> Check {
    let mode = p.mode.as_deref().unwrap_or("auto");
    let shown = if p.mode.is_some() {
        format!("permission mode {mode}")
    } else {
        "the client's default permission mode (auto)".into()
    };
    match mode {
        "bypassPermissions" if p.root => Check::fail(
            id,
            subject,
            format!("{shown} as root: the client refuses to start"),
            "run Nightshift as your own user, or use --permission-mode acceptEdits with allow rules",
        ),
        "bypassPermissions" => Check::warn(
            id,
            subject,
            format!("{shown}: every tool call runs unasked, destructive ones too"),
            "prefer acceptEdits with allow rules; keep the guard on (--guard true, the overnight preset)",
        ),
        "auto" => match &p.base_url {
            Some(url) => Check::warn(
                id,
                subject,
                format!("{shown} through ANTHROPIC_BASE_URL={url}: its classifier is not reached, so every risky call stops on a dialog all night"),
                "pass --permission-mode acceptEdits with permissions.allow rules for the tools the task needs",
            ),
            None => Check::pass(id, subject, format!("{shown}: risky calls are checked by the client's classifier")),
        },
        "plan" => Check::warn(
            id,
            subject,
            format!("{shown}: the agent plans and changes nothing"),
            "use acceptEdits (or auto) for a night of work",
        ),
        "default" | "acceptEdits" if p.allow == 0 => Check::warn(
            id,
            subject,
            format!("{shown} with no allow rules: the first command the agent runs stops on a permission dialog"),
            "add permissions.allow rules (e.g. \"Bash(cargo test:*)\") to .claude/settings.json, or pass --allowedTools=…",
        ),
        _ => Check::pass(id, subject, format!("{shown} with {} allow rule(s)", p.allow)),
    }
}

/// Whether `agent`'s own sandbox can run tonight (`ready`), and what the unattended starts do
/// about it under `settings`.
pub fn judge_sandbox(
    agent: crate::agent::AgentKind,
    settings: &crate::config::SandboxSettings,
    ready: Result<(), String>,
) -> Check {
    let (id, subject) = (format!("sandbox.{agent}"), "sandbox");
    let codex = agent == crate::agent::AgentKind::Codex;
    let (who, needs) = if codex {
        ("Codex", "`codex sandbox` ran a command and refused it a write outside its folder")
    } else {
        ("Claude", "bubblewrap, socat, user namespaces")
    };
    match (settings.enabled, ready) {
        (false, _) => Check::pass(
            id,
            subject,
            "off ([sandbox] enabled = false): the overnight and ralph presets and loops run the agent unsandboxed",
        ),
        (true, Ok(())) => Check::pass(
            id,
            subject,
            format!("{who}'s sandbox can run ({needs}): the overnight and ralph presets and loops run {who} in it"),
        ),
        // Codex is told to sandbox itself, and sandboxes each command it runs: they fail.
        (true, Err(why)) if codex => Check::fail(
            id,
            subject,
            format!("Codex's sandbox cannot run: {why}; the commands of Codex's overnight, ralph and loop starts fail"),
            "fix what it names (Codex 0.171.0 sandboxes with bubblewrap), or run Codex unsandboxed: [sandbox] \
             enabled = false in config.toml (or start with --no-sandbox)",
        ),
        (true, Err(why)) if settings.allow_unsandboxed => Check::warn(
            id,
            subject,
            format!(
                "{who}'s sandbox cannot run: {why}; unattended sessions start without it ([sandbox] allow_unsandboxed)"
            ),
            "install what it names to run them sandboxed",
        ),
        (true, Err(why)) => Check::fail(
            id,
            subject,
            format!("{who}'s sandbox cannot run: {why}; overnight, ralph and loop starts of {who} are refused"),
            "install what it names, or allow them to run unsandboxed: [sandbox] allow_unsandboxed = true in \
             config.toml (or start with --no-sandbox)",
        ),
    }
}

/// Tonight's network fence for working folder `index`: each host it lets through with why (one
/// check), and each thing the project looks like it needs beyond it (a WARN each, with the fix).
pub fn judge_fence(index: usize, subject: &str, view: &crate::session::FenceView, enabled: bool) -> Vec<Check> {
    use crate::agent::Fence;
    let id = |what: &str| format!("cwd.{index}.fence{what}");
    if !enabled {
        return vec![Check::pass(id(""), subject, "no sandbox tonight ([sandbox] enabled = false): no fence either")];
    }
    let mut out = vec![match (view.fence, view.hosts.as_slice()) {
        (Fence::Open, _) => Check::pass(
            id(""),
            subject,
            "the sandbox's network is open (--network open): every host, each connection journalled",
        ),
        (fence, []) => Check::warn(
            id(""),
            subject,
            format!(
                "the sandbox's network fence ({}) lets no host through: no remote or package index was found",
                fence.as_str()
            ),
            "add the hosts the night needs to [sandbox] network in config.toml, or pass --allow-host HOST",
        ),
        (fence, hosts) => Check::pass(
            id(""),
            subject,
            format!(
                "the sandbox's network fence ({}) lets through: {}",
                fence.as_str(),
                hosts.iter().map(|h| format!("{} ({})", h.host, h.why)).collect::<Vec<_>>().join("; ")
            ),
        ),
    }];
    for (n, warning) in view.warnings.iter().enumerate() {
        out.push(Check::warn(
            id(&format!(".{n}")),
            subject,
            warning.clone(),
            "allow what it needs with --allow-host HOST or [sandbox] network, or change the remote's URL to https",
        ));
    }
    out
}

/// What Codex's fence is, beside Claude's: its sandbox has the network on or off and nothing
/// between, so Nightshift's proxy sees (and refuses) only what a command sends through it.
pub fn judge_codex_fence(fence: crate::agent::Fence) -> Check {
    use crate::agent::Fence;
    match fence {
        Fence::None => Check::pass(
            "codex.fence",
            "codex",
            "a sandboxed Codex session has no network (--network none), as its workspace-write sandbox keeps it",
        ),
        Fence::Project | Fence::Open => Check::warn(
            "codex.fence",
            "codex",
            format!(
                "Codex's sandbox has the network on or off, nothing between: with the {} fence its commands go \
                 through Nightshift's proxy (which refuses and journals what is not allowed) only when they use \
                 HTTP_PROXY, HTTPS_PROXY or ALL_PROXY, as git over https, curl, npm, pip and cargo do; a program \
                 that connects directly is neither fenced nor seen. Its sandbox also keeps the repository's .git \
                 read-only: its commands can push, but not commit",
                fence.as_str()
            ),
            "for a strict fence run Codex sessions with --network none, or the night with Claude Code",
        ),
    }
}

/// Free space where the journal and the iterations' streams are written.
pub fn judge_disk(free: u64, dir: &str) -> Check {
    const MB: u64 = 1 << 20;
    let shown = if free >= 10 * 1024 * MB {
        format!("{} GB free", free / (1024 * MB))
    } else {
        format!("{} MB free", free / MB)
    };
    if free < 100 * MB {
        Check::fail(
            "state.disk",
            "state",
            format!("{shown} in {dir}"),
            "free some disk space: the journal stops recording when it is full",
        )
    } else if free < 1024 * MB {
        Check::warn("state.disk", "state", format!("{shown} in {dir}"), "free some disk space before a long night")
    } else {
        Check::pass("state.disk", "state", format!("{shown} in {dir}"))
    }
}

/// The installed client's version against the one its signals were verified on.
pub fn judge_version(agent: &str, found: &str, verified: Option<&str>) -> Check {
    let id = format!("harness.{agent}.version");
    match verified {
        Some(v) if v == found => {
            Check::pass(id, agent, format!("version {found}, the one Nightshift's screen signals were verified on"))
        }
        Some(v) => Check::warn(
            id,
            agent,
            format!("version {found}; Nightshift's screen signals were verified on {v}"),
            "the drift probe below says whether its screen still reads; if not, report it with the screen it kept",
        ),
        None => Check::pass(id, agent, format!("version {found}")),
    }
}

/// What logind does with the lid, on this power.
pub fn judge_power(on_battery: Option<bool>, lid: Option<&str>) -> Vec<Check> {
    let mut out = Vec::new();
    out.push(match on_battery {
        Some(true) => Check::warn("power.ac", "power", "on battery", "plug the machine in: a night of work drains it"),
        Some(false) => Check::pass("power.ac", "power", "on AC power"),
        None => Check::warn(
            "power.ac",
            "power",
            "UPower is not running: whether the machine is on battery is unknown",
            "install and start upower (apt install upower), or check the power cable yourself",
        ),
    });
    if let Some(action) = lid {
        let sleeps =
            matches!(action, "suspend" | "hibernate" | "hybrid-sleep" | "suspend-then-hibernate" | "poweroff" | "halt");
        out.push(if sleeps {
            Check::warn(
                "power.lid",
                "power",
                format!("closing the lid will {action} the machine, whatever Nightshift holds"),
                "keep the lid open, or set HandleLidSwitch=ignore (and HandleLidSwitchExternalPower) in /etc/systemd/logind.conf",
            )
        } else {
            Check::pass("power.lid", "power", format!("closing the lid does {action}"))
        });
    }
    out
}

/// Whether tonight's long waits sleep and are woken for their end, or are held awake, and why;
/// `can_wake` is [`crate::supervisor::awake::can_wake`].
pub fn judge_wake(
    sleep: &crate::config::SleepConfig,
    can_wake: &Result<std::path::PathBuf, String>,
    on_battery: Option<bool>,
) -> Check {
    let battery = on_battery == Some(true);
    match can_wake {
        _ if !sleep.through_waits => Check::pass(
            "power.wake",
            "power",
            "every wait is held awake, as [sleep] through_waits = false in config.toml asks",
        ),
        Ok(helper) => Check::pass(
            "power.wake",
            "power",
            format!(
                "long waits sleep and are woken for their end: {} ({} sets the alarm)",
                sleep.settings(true).describe(battery),
                helper.display()
            ),
        ),
        Err(why) => {
            let remedy = if why.contains("CAP_WAKE_ALARM") {
                "run the setcap command it names (`make install` asks for sudo to run it)"
            } else if why.contains("not installed") {
                "`make install` or the .deb installs nightshift-wake beside nightshift"
            } else if why.contains("may not suspend") {
                "nothing to do: this machine does not suspend, so its waits cost nothing more"
            } else {
                "check that this kernel has alarm timers and the machine a clock that can wake it (/sys/class/rtc)"
            };
            Check::warn("power.wake", "power", format!("long waits are held awake tonight, as before: {why}"), remedy)
        }
    }
}

/// How the drift probe's settled screen read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeRead {
    /// The composer, nothing running.
    Idle,
    /// A dialog the adapter knows (the folder-trust question of a new folder).
    Dialog { kind: String, text: Option<String> },
    /// A working signal on a screen that has been still for `quiet_ms`.
    Working { signal: String, quiet_ms: u64 },
    /// Neither a prompt nor a dialog.
    Unknown,
    /// The client drew nothing, or exited, within the probe's time.
    NoScreen { why: String },
}

pub fn judge_probe(agent: &str, version: Option<&str>, read: &ProbeRead, kept: Option<&str>) -> Check {
    let id = format!("harness.{agent}.probe");
    let of = match version {
        Some(v) => format!("{agent} {v}"),
        None => agent.to_string(),
    };
    let keep = kept.map(|k| format!(" (its screen is kept in {k})")).unwrap_or_default();
    match read {
        ProbeRead::Idle => Check::pass(id, agent, format!("drift probe: {of}'s idle screen reads idle")),
        ProbeRead::Dialog { kind, text } => {
            let text = text.as_deref().map(|t| format!(" (“{t}”)")).unwrap_or_default();
            Check::pass(id, agent, format!("drift probe: {of}'s first screen reads as a {kind} dialog{text}, waiting for you"))
        }
        ProbeRead::Working { signal, quiet_ms } => Check::fail(
            id,
            agent,
            format!("drift probe: {of}'s screen, still for {:.1} s, reads as working ({signal}){keep}", *quiet_ms as f64 / 1000.0),
            "its screen changed: sessions would never read idle; override the signal in $XDG_CONFIG_HOME/nightshift/agents/ or use the verified version",
        ),
        ProbeRead::Unknown => Check::fail(
            id,
            agent,
            format!("drift probe: {of}'s screen shows neither its prompt nor a known dialog{keep}"),
            "its screen changed: override composer.prompt in $XDG_CONFIG_HOME/nightshift/agents/, or use the verified version",
        ),
        ProbeRead::NoScreen { why } => Check::fail(
            id,
            agent,
            format!("drift probe: {why}"),
            format!("run `{agent}` in a terminal to see what it says"),
        ),
    }
}

/// A working directory's git state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepoState {
    pub repo: bool,
    /// `rebase`, `merge`, `cherry-pick`, `revert`, `bisect` in progress.
    pub operation: Option<&'static str>,
}

pub fn judge_repo(index: usize, subject: &str, state: &RepoState) -> Vec<Check> {
    let id = |what: &str| format!("cwd.{index}.{what}");
    if !state.repo {
        return vec![Check::warn(
            id("git"),
            subject,
            "not a git repository: no progress measure, no salvage of uncommitted work",
            "git init (and commit) before the night",
        )];
    }
    let mut out = vec![Check::pass(id("git"), subject, "a git repository")];
    if let Some(op) = state.operation {
        let how = match op {
            "rebase" => "git rebase --continue, or --abort",
            "merge" => "git merge --continue, or --abort",
            "cherry-pick" => "git cherry-pick --continue, or --abort",
            "revert" => "git revert --continue, or --abort",
            _ => "git bisect reset",
        };
        out.push(Check::fail(
            id("operation"),
            subject,
            format!("a {op} is in progress: the agent would work on a half-finished tree"),
            format!("finish it first: {how}"),
        ));
    }
    out
}

#[cfg(test)]
mod tests;
