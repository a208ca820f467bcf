//! The facts behind the doctor's checks: files, the agents' binaries, the desktop's D-Bus services.
//! Nothing here reads a credential's contents, writes outside `<state>/doctor/`, or changes the
//! user's settings; the judging is in the parent module.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::{judge_disk, judge_permissions, judge_power, judge_probe, judge_repo, judge_sandbox, judge_version};
use super::{Check, Permissions, RepoState, Report};
use crate::agent::Adapter;
use crate::agent::AgentKind;
use crate::config::Config;
use crate::loops::{global_marker, marker_name};
use crate::paths::Paths;
use crate::platform::{run_bounded, Desktop, Os, Power, Sandboxes};
use crate::store::{EventQuery, Store};

/// What to check.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The agents the night will run; empty: Claude, and Codex when it is installed.
    pub agents: Vec<AgentKind>,
    /// The working directories; empty: the current one.
    pub cwds: Vec<PathBuf>,
    /// The agent's own flags the sessions will get (`--permission-mode`, `--allowedTools=…`).
    pub agent_args: Vec<String>,
    /// Skip the drift probe (it starts each client in a terminal for a few seconds).
    pub no_probe: bool,
}

/// Runs every check. Blocking (it starts processes and waits on D-Bus, each bounded in time);
/// the window calls it off its async threads.
pub fn run(paths: &Paths, here: &Path, opts: &Options) -> Report {
    let mut checks = Vec::new();
    let agents_dir = paths.agents_dir();
    checks.extend(config(paths.config_dir.as_deref(), agents_dir.as_deref()));

    let explicit = !opts.agents.is_empty();
    let agents = if explicit { opts.agents.clone() } else { vec![AgentKind::Claude, AgentKind::Codex] };
    let cwds: Vec<PathBuf> =
        if opts.cwds.is_empty() { vec![here.to_path_buf()] } else { opts.cwds.iter().map(|c| here.join(c)).collect() };
    let mut used = Vec::new();
    let mut codex_bin = None;
    for kind in agents {
        if kind == AgentKind::Generic {
            continue;
        }
        let adapter =
            crate::agent::load_adapter(kind, agents_dir.as_deref()).unwrap_or_else(|_| Adapter::builtin(kind));
        let required = explicit || kind == AgentKind::Claude;
        let bin = harness(kind, &adapter, paths, opts, required, &mut checks);
        if kind == AgentKind::Codex {
            codex_bin.clone_from(&bin);
        }
        if bin.is_some() || required {
            used.push(kind);
        }
    }
    let config = Config::load(paths.config_dir.as_deref()).unwrap_or_default();
    let settings = &config.sandbox;
    if used.contains(&AgentKind::Claude) {
        checks.push(judge_sandbox(AgentKind::Claude, settings, Os::claude_sandbox()));
    }
    if let Some(bin) = codex_bin.filter(|_| settings.enabled) {
        checks.push(judge_sandbox(AgentKind::Codex, settings, codex_sandbox(&bin)));
        checks.push(super::judge_codex_fence(settings.fence));
    }
    checks.extend(state(paths, &cwds));
    for (i, cwd) in cwds.iter().enumerate() {
        checks.extend(working_dir(i, cwd, &used, &opts.agent_args));
        if cwd.is_dir() {
            // Tonight's fence for an unattended start here, as it would be read now.
            let sandbox = crate::agent::Sandbox {
                network: settings.network.clone(),
                fence: settings.fence,
                ..Default::default()
            };
            let view = crate::supervisor::fence::tonight(&sandbox, cwd, &[]).view;
            checks.extend(super::judge_fence(i, &cwd.display().to_string(), &view, settings.enabled));
        }
    }
    checks.extend(desktop());
    // On battery, and what the lid switch does on this power, where known.
    let on_battery = Os::on_battery();
    let lid = Os::lid_action(on_battery);
    checks.extend(judge_power(on_battery, lid.as_deref()));
    checks.push(super::judge_wake(&config.sleep, &crate::supervisor::awake::can_wake(), on_battery));
    checks.extend(slept(paths));
    Report::new(checks)
}

fn config(config_dir: Option<&Path>, agents_dir: Option<&Path>) -> Vec<Check> {
    let mut out = Vec::new();
    match Config::load(config_dir) {
        Ok(config) => {
            let file = config_dir.map(Config::path);
            let detail = match file.filter(|f| f.exists()) {
                Some(f) if config.presets.is_empty() => format!("{} is valid", f.display()),
                Some(f) => format!(
                    "{} is valid, with your preset(s) {}",
                    f.display(),
                    config.presets.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
                None => "no config.toml: the defaults apply".to_string(),
            };
            out.push(Check::pass("config.file", "config", detail));
        }
        Err(e) => out.push(Check::fail(
            "config.file",
            "config",
            e.to_string().replace('\n', " "),
            "fix that key, or move the file aside to start from the defaults",
        )),
    }
    for kind in AgentKind::ALL {
        let Some(file) = agents_dir.map(|d| d.join(format!("{kind}.toml"))) else { continue };
        if !file.exists() {
            continue;
        }
        let id = format!("config.agents.{kind}");
        out.push(match crate::agent::load_adapter(kind, agents_dir) {
            Ok(_) => Check::pass(id, "config", format!("{} overrides the built-in {kind} signals", file.display())),
            Err(e) => Check::fail(
                id,
                "config",
                e.to_string().replace('\n', " "),
                "fix that key, or move the file aside to use the built-in signals",
            ),
        });
    }
    out
}

/// The agent's binary, its version, its login and the drift probe; the binary, when it was found.
fn harness(
    kind: AgentKind,
    adapter: &Adapter,
    paths: &Paths,
    opts: &Options,
    required: bool,
    out: &mut Vec<Check>,
) -> Option<PathBuf> {
    let name = kind.as_str();
    let (program, args): (String, Vec<String>) =
        adapter.launch().map(|(p, a)| (p.to_string(), a.to_vec())).unwrap_or((name.into(), Vec::new()));
    let here_path = std::env::var_os("PATH");
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let override_file = paths
        .agents_dir()
        .map(|d| d.join(format!("{name}.toml")).display().to_string())
        .unwrap_or_else(|| format!("agents/{name}.toml"));
    let bin = match crate::pty::resolve_program(&program, &cwd, here_path.as_deref()) {
        Ok(bin) => bin,
        Err(_) if !required => return None,
        Err(_) => {
            let install = match kind {
                AgentKind::Codex => "npm install -g @openai/codex",
                _ => "npm install -g @anthropic-ai/claude-code",
            };
            out.push(Check::fail(
                format!("harness.{name}.path"),
                name,
                format!("`{program}` is not on this PATH ({})", shown_path(here_path.as_deref())),
                format!("install it ({install}), or name it in {override_file}: [launch] program = \"/full/path/{program}\""),
            ));
            // Logged in or not, the next step is the same install; say both at once.
            out.push(logged_in(kind));
            return None;
        }
    };
    out.push(match Os::session_path() {
        // The tray app, started at login, has the desktop session's PATH, not this shell's.
        Some(desktop)
            if crate::pty::resolve_program(&program, &cwd, Some(&desktop)).is_err() && !program.contains('/') =>
        {
            Check::warn(
                format!("harness.{name}.path"),
                name,
                format!(
                    "{} on this PATH, but not on the desktop session's PATH, which the tray app uses",
                    bin.display()
                ),
                format!("name it in {override_file}: [launch] program = \"{}\"", bin.display()),
            )
        }
        _ => Check::pass(format!("harness.{name}.path"), name, format!("{} (found on this PATH)", bin.display())),
    });

    let version = match crate::agent::canary::version_of(&bin) {
        Ok(v) => {
            out.push(judge_version(name, &v, adapter.verified()));
            Some(v)
        }
        Err(why) => {
            out.push(Check::fail(
                format!("harness.{name}.version"),
                name,
                format!("`{} --version` {why}", bin.display()),
                format!("run `{program} --version` in a terminal to see what is wrong; reinstall it if needed"),
            ));
            None
        }
    };
    out.push(logged_in(kind));
    if !opts.no_probe && version.is_some() {
        let dir = paths.state_dir.join("doctor");
        let (read, kept) = super::probe::run(adapter, &bin, &args, &dir);
        let kept = kept.map(|k| k.display().to_string());
        out.push(judge_probe(name, version.as_deref(), &read, kept.as_deref()));
    }
    Some(bin)
}

/// Whether Codex's own sandbox runs here and holds: `codex sandbox` runs a command, and refuses it a
/// write outside its folder. With a scratch `CODEX_HOME` (the sandbox keeps its helpers there), so
/// the user's Codex home is not touched.
fn codex_sandbox(bin: &Path) -> Result<(), String> {
    let scratch = tempfile::tempdir().map_err(|e| format!("no scratch folder for the check: {e}"))?;
    // Codex makes no helpers in a home under the temporary folder: the scratch one is not, for it.
    let (home, work, tmp) = (scratch.path().join("home"), scratch.path().join("work"), scratch.path().join("tmp"));
    for dir in [&home, &work, &tmp] {
        std::fs::create_dir_all(dir).map_err(|e| format!("no scratch folder for the check: {e}"))?;
    }
    let sandboxed = |script: &str| {
        let mut cmd = Command::new(bin);
        cmd.env("CODEX_HOME", &home).env("TMPDIR", &tmp).current_dir(&work).args(["sandbox", "--", "sh", "-c", script]);
        run_bounded(&mut cmd, Duration::from_secs(20))
    };
    sandboxed("true").map_err(|why| format!("`codex sandbox -- true` {why}"))?;
    let outside = scratch.path().join("outside");
    let _ = sandboxed(&format!(": > '{}'", outside.display()));
    if outside.exists() {
        return Err("a write outside the session's folder was not refused".into());
    }
    Ok(())
}

fn shown_path(path: Option<&std::ffi::OsStr>) -> String {
    path.map(|p| p.to_string_lossy().into_owned()).filter(|p| !p.is_empty()).unwrap_or_else(|| "empty".into())
}

/// Whether the client has credentials for the config directory it will use. Only whether they are
/// there: never what they say.
fn logged_in(kind: AgentKind) -> Check {
    let name = kind.as_str();
    let id = format!("harness.{name}.login");
    // Where the client looks: its own variable, else its folder in HOME (none with neither).
    let dir = crate::session::login::config_dir(kind, &[]).unwrap_or_default();
    match crate::agent::login(kind, &dir, &[]) {
        Ok(how) => Check::pass(id, name, how),
        Err(why) => Check::fail(
            id,
            name,
            why,
            match kind {
                AgentKind::Codex => "run `codex login`",
                _ => "run `claude` and log in with /login (or set CLAUDE_CODE_OAUTH_TOKEN from `claude setup-token`)",
            },
        ),
    }
}

fn state(paths: &Paths, cwds: &[PathBuf]) -> Vec<Check> {
    let dir = &paths.state_dir;
    let shown = dir.display().to_string();
    let mut out = Vec::new();
    let probe = dir.join(format!(".doctor-{}", std::process::id()));
    let writable = crate::paths::ensure_dir(dir).is_ok() && std::fs::write(&probe, b"").is_ok();
    let _ = std::fs::remove_file(&probe);
    out.push(if writable {
        Check::pass("state.writable", "state", format!("{shown} is writable"))
    } else {
        Check::fail(
            "state.writable",
            "state",
            format!("{shown} cannot be written"),
            "fix its ownership or permissions, or set NIGHTSHIFT_STATE_DIR to a directory you own",
        )
    });
    let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
    for cwd in cwds {
        let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.clone());
        if canonical.starts_with(&cwd) {
            out.push(Check::fail(
                "state.inside_cwd",
                "state",
                format!(
                    "{shown} is inside the working directory {}: the agent could change the journal and its markers",
                    cwd.display()
                ),
                "set NIGHTSHIFT_STATE_DIR (or --state-dir) to a directory outside every project",
            ));
        }
    }
    let mut markers = Vec::new();
    for marker in [crate::loops::machine::Marker::Stop, crate::loops::machine::Marker::Halt] {
        let path = global_marker(dir, marker);
        if path.exists() {
            markers.push(Check::fail(
                format!("state.marker.{}", marker_name(marker).to_lowercase()),
                "state",
                format!("a {} marker is left over: every loop would end at once", marker_name(marker)),
                format!("rm {}", path.display()),
            ));
        }
    }
    if markers.is_empty() {
        out.push(Check::pass("state.markers", "state", "no STOP or HALT marker left over"));
    }
    out.extend(markers);
    if let Ok(stat) = nix::sys::statvfs::statvfs(if dir.exists() { dir.as_path() } else { Path::new("/") }) {
        let free = stat.blocks_available() * stat.fragment_size();
        out.push(judge_disk(free, &shown));
    }
    out
}

fn working_dir(i: usize, cwd: &Path, agents: &[AgentKind], agent_args: &[String]) -> Vec<Check> {
    let subject = cwd.display().to_string();
    if !cwd.is_dir() {
        return vec![Check::fail(
            format!("cwd.{i}.exists"),
            &subject,
            "does not exist",
            "create it, or pass the right --cwd",
        )];
    }
    let mut out = judge_repo(i, &subject, &repo_state(cwd));
    for kind in agents {
        let Some(file) = kind.instructions_file() else { continue };
        let id = format!("cwd.{i}.instructions.{kind}");
        out.push(if cwd.join(file).exists() {
            Check::pass(id, &subject, format!("has {file} for {kind}"))
        } else {
            Check::warn(
                id,
                &subject,
                format!("no {file}: {kind} starts each session knowing nothing of the project"),
                format!("write one (how to build, test, what not to touch); `{kind}` can draft it with /init"),
            )
        });
    }
    if agents.contains(&AgentKind::Claude) {
        let p = claude_permissions(cwd, agent_args);
        out.push(judge_permissions(&format!("cwd.{i}.permissions"), &subject, &p));
    }
    out
}

/// Whether `dir` is in a git work tree, and what operation is half done in it (from git's own
/// files, read only).
pub fn repo_state(dir: &Path) -> RepoState {
    match crate::git::salvage::in_progress(dir) {
        Some(operation) => RepoState { repo: true, operation },
        None => RepoState::default(),
    }
}

/// The permission mode and allow rules a Claude session in `cwd` starts with: the agent flags, then
/// `.claude/settings.local.json`, `.claude/settings.json`, and the user's settings, in the
/// client's order of precedence.
fn claude_permissions(cwd: &Path, args: &[String]) -> Permissions {
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    let user = std::env::var_os("CLAUDE_CONFIG_DIR").map(PathBuf::from).unwrap_or_else(|| home.join(".claude"));
    let files =
        [cwd.join(".claude/settings.local.json"), cwd.join(".claude/settings.json"), user.join("settings.json")];
    let mut mode = None;
    let mut allow = BTreeSet::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else { continue };
        if mode.is_none() {
            mode = v["permissions"]["defaultMode"].as_str().map(str::to_string);
        }
        allow.extend(
            v["permissions"]["allow"].as_array().into_iter().flatten().filter_map(|r| r.as_str().map(str::to_string)),
        );
    }
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let next = args.get(i + 1).cloned();
        if let Some(m) = a.strip_prefix("--permission-mode=") {
            mode = Some(m.to_string());
        } else if a == "--permission-mode" {
            mode = next;
            i += 1;
        } else if a == "--dangerously-skip-permissions" {
            mode = Some("bypassPermissions".into());
        } else if let Some(tools) = a.strip_prefix("--allowedTools=").or_else(|| a.strip_prefix("--allowed-tools=")) {
            allow.extend(tools.split([',', ' ']).filter(|t| !t.is_empty()).map(str::to_string));
        }
        i += 1;
    }
    Permissions {
        mode,
        allow: allow.len(),
        base_url: std::env::var("ANTHROPIC_BASE_URL").ok().filter(|u| !u.is_empty()),
        root: nix::unistd::geteuid().is_root(),
    }
}

fn desktop() -> Vec<Check> {
    let mut out = Vec::new();
    let display = ["WAYLAND_DISPLAY", "DISPLAY"]
        .into_iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()).map(|v| format!("{k}={v}")));
    out.push(match display {
        Some(d) => Check::pass("desktop.display", "desktop", format!("a display ({d})")),
        None => Check::warn(
            "desktop.display",
            "desktop",
            "no display: the tray app cannot show (headless `nightshift run` and `loop` still work)",
            "run the tray app from your desktop session",
        ),
    });
    out.push(if Os::tray_host() {
        Check::pass("desktop.tray", "desktop", "a tray host (StatusNotifierWatcher) is running")
    } else {
        Check::warn(
            "desktop.tray",
            "desktop",
            "no tray host (StatusNotifierWatcher): the tray icon will not show",
            "on GNOME, enable the AppIndicator extension (gnome-shell-extension-appindicator); the window still opens from the app menu",
        )
    });
    out.push(if Os::notifications() {
        Check::pass("desktop.notifications", "desktop", "a notification service is running")
    } else {
        Check::warn(
            "desktop.notifications",
            "desktop",
            "no notification service: questions and limits will not pop up",
            "start your desktop's notification daemon (dunst, mako, or the desktop's own)",
        )
    });
    out.push(if Os::can_stay_awake() {
        Check::pass("desktop.logind", "desktop", "logind is running: Nightshift can keep the machine awake")
    } else {
        Check::warn(
            "desktop.logind",
            "desktop",
            "no logind on the system bus: nothing keeps the machine from sleeping while agents work",
            "turn off automatic suspend in your power settings for the night",
        )
    });
    out
}

/// Whether the machine slept while sessions ran in the last week (the journal's suspend records).
fn slept(paths: &Paths) -> Vec<Check> {
    let journal = paths.journal();
    if !journal.exists() {
        return Vec::new();
    }
    let Ok(store) = Store::open(&journal) else { return Vec::new() };
    let since = chrono::Utc::now() - chrono::Duration::days(7);
    let Ok(events) = store.events(&EventQuery { since: Some(since), ..EventQuery::default() }) else {
        return Vec::new();
    };
    // A suspend while Nightshift had let the machine sleep through a wait, with its alarm set, was
    // planned: only the others count.
    let (mut planned, mut slept_through) = (false, 0);
    let mut suspends: Vec<chrono::DateTime<chrono::Utc>> = Vec::new();
    for event in events.iter().filter_map(|e| serde_json::from_str::<crate::Event>(&e.body).ok()) {
        match event.kind {
            crate::EventKind::Sleep { action, .. } => planned = action == crate::event::SleepAction::Allowed,
            crate::EventKind::Suspended { from, .. } if !planned => suspends.push(from),
            crate::EventKind::Suspended { .. } => slept_through += 1,
            _ => {}
        }
    }
    match suspends.iter().max() {
        None if slept_through > 0 => vec![Check::pass(
            "power.slept",
            "power",
            format!("the machine slept during runs this week only through the {slept_through} long wait(s) Nightshift let it sleep through"),
        )],
        None => vec![Check::pass("power.slept", "power", "the machine did not sleep during a run this week")],
        Some(last) => vec![Check::warn(
            "power.slept",
            "power",
            format!(
                "the machine slept {} time(s) during runs this week, last at {}",
                suspends.len(),
                last.with_timezone(&chrono::Local).format("%a %H:%M")
            ),
            "check what suspended it: lid close, the power settings' automatic suspend, or a low battery",
        )],
    }
}
