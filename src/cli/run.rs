//! `nightshift run`: supervise one session in the foreground.
//!
//! With a terminal on stdin the user's terminal is passed through (raw mode, the agent's screen shown
//! as drawn, resizes forwarded); otherwise the session runs unattended. Either way every event goes
//! to the journal and, with `--events`, to a JSON-lines stream. The exit code is the child's.
//!
//! Its parts: `events` (the `--events` stream), `awake` (the machine kept awake while the host's
//! sessions need it); here, the command, the host and the user's terminal.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use nightshift::clock::SystemClock;
use nightshift::event::StopKind;
use nightshift::limits::resume::Policy;
use nightshift::logging::{self, Stderr};
use nightshift::paths::Paths;
use nightshift::pty::PtySize;
use nightshift::screen::Screen;
use nightshift::session::SessionHandle;
use nightshift::store::Store;
use nightshift::supervisor::build::{build, Request};
use nightshift::supervisor::{SessionSpec, StartError, Supervisor};
use nightshift::AgentKind;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

mod events;

use super::awake::{keep_awake, sessions_want, sleep_config};
pub(super) use events::{open_events, EventWriter};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Start the session in the background, print its id and return: it outlives this terminal
    /// (and an ssh logout); `nightshift attach ID` reaches it
    #[arg(long)]
    detach: bool,
    #[command(flatten)]
    schedule: super::schedule::When,
    #[command(flatten)]
    accounts: super::AccountArgs,
    /// Move to the account of `config.toml` with the most headroom before this one's limit: at a
    /// turn's end, after a handoff, on a fresh conversation (Claude; at most once per window)
    #[arg(long)]
    switch_accounts: bool,
    /// The larger of the 5-hour and 7-day use, in percent, at which --switch-accounts moves
    #[arg(long, value_name = "PERCENT", requires = "switch_accounts", value_parser = clap::value_parser!(u8).range(1..=99))]
    switch_at: Option<u8>,
    /// At a usage limit: `wait` for the reset, `switch` to the account of `config.toml` with the
    /// most headroom at once, with a handoff Nightshift builds, or `failover`: as switch, and with
    /// no account that has room, move the work to the other agent (--failover-to) [default: the
    /// preset's, else wait]
    #[arg(long, value_name = "wait|switch|failover")]
    at_limit: Option<nightshift::limits::AtLimit>,
    /// The other agent the work moves to with --at-limit failover, as its command line (`codex`,
    /// `codex --model gpt-5.5`, `claude`): same folder, branch, sandbox, fence, guard and budget
    #[arg(long, value_name = "COMMAND", requires = "at_limit")]
    failover_to: Option<String>,
    /// The account of `config.toml` the failover agent runs under
    #[arg(long, value_name = "NAME", requires = "failover_to")]
    failover_account: Option<String>,
    /// Leave the work with the failover agent after the first agent's window resets [default:
    /// it comes back at the first turn's end after the reset]
    #[arg(long, requires = "failover_to")]
    no_return: bool,
    /// Your standing instructions for the night, restated in every input Nightshift types by
    /// itself (a resume, a kickstart, a handoff request), each marked as automated [default: the
    /// preset's `standing`]
    #[arg(long, value_name = "TEXT")]
    standing: Option<String>,
    /// Which agent CLI the command runs [default: from the program's name, else generic]
    #[arg(long, value_name = "claude|codex|generic")]
    agent: Option<AgentKind>,
    /// Write every event as a JSON line to PATH (appending), or to stdout with `-`
    #[arg(long, value_name = "PATH|-", value_hint = clap::ValueHint::FilePath)]
    events: Option<String>,
    /// Terminal width for the session [default: your terminal's, or 120 unattended]
    #[arg(long, requires = "rows", value_parser = clap::value_parser!(u16).range(10..=1000))]
    cols: Option<u16>,
    /// Terminal height for the session [default: your terminal's, or 40 unattended]
    #[arg(long, requires = "cols", value_parser = clap::value_parser!(u16).range(3..=1000))]
    rows: Option<u16>,
    /// Working directory of the session [default: the current directory]
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    cwd: Option<PathBuf>,
    /// Work in a new git worktree on a branch `nightshift/NAME` made from HEAD, outside your
    /// checkout (which is left as it is) [NAME default: a random one]
    #[arg(long, value_name = "NAME", num_args = 0..=1, default_missing_value = "")]
    worktree: Option<String>,
    /// Run the agent in its own sandbox (Claude's native one, Codex's workspace-write): its
    /// commands run without prompts, writing only its folder [default: with the overnight and
    /// ralph presets, unless `[sandbox] enabled = false`]
    #[arg(long, conflicts_with = "no_sandbox")]
    sandbox: bool,
    /// Run the agent without its sandbox, whatever the preset
    #[arg(long)]
    no_sandbox: bool,
    #[command(flatten)]
    network: super::NetworkArgs,
    /// Seconds a stopped session gets between SIGHUP and SIGKILL
    #[arg(long, value_name = "SECONDS", default_value_t = 3.0)]
    stop_grace: f64,
    /// Keep the session working: respawn cycles when it goes idle, restarts when it exits
    #[arg(long)]
    respawn: bool,
    /// The respawn preset (solo, subagents, team, ralph, overnight, or one of yours); implies --respawn
    #[arg(long, value_name = "NAME")]
    preset: Option<String>,
    #[command(flatten)]
    respawn_settings: super::presets::SettingsArgs,
    /// Resume the agent when a usage limit resets
    #[arg(long)]
    auto_resume: bool,
    /// Read a session from its screen alone: pass Claude no hooks (no exact turns, no guard, no
    /// handoffs; the statusLine still reports usage) and Codex no notify (no exact turn ends)
    #[arg(long)]
    no_hooks: bool,
    /// Stop the agent once the statusLine's cost reaches this many dollars (across /clear and
    /// restarts)
    #[arg(long, value_name = "USD")]
    max_cost_usd: Option<f64>,
    /// Stop the agent once the statusLine's input and output tokens reach this many
    #[arg(long, value_name = "N")]
    max_tokens: Option<u64>,
    /// Stop the agent this long after the start (`8h`); the machine's sleep counts
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    max_wall_clock: Option<Duration>,
    /// watch: let the client's own resume run and step in only if no turn started by the reset plus
    /// the margin; own: cancel the client's timer and resume at the reset plus the margin
    #[arg(long, value_name = "watch|own", default_value = "watch", value_parser = ["watch", "own"])]
    resume_policy: String,
    /// Seconds after the reset before resuming (the reset is known to the second from the client's
    /// own rate-limit data)
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    resume_margin: f64,
    /// What is typed to resume
    #[arg(long, value_name = "TEXT", default_value = "continue")]
    resume_prompt: String,
    /// Leave this percent of the 5-hour window that opens after a limit for yourself: no resumes or
    /// respawn cycles once its use passes the line
    #[arg(long, value_name = "PERCENT", value_parser = clap::value_parser!(u8).range(1..=99))]
    reserve: Option<u8>,
    /// Do not spend the fresh window at all: after a limit, cancel the client's own continuation too
    #[arg(long)]
    not_tonight: bool,
    /// Stop at the plan's own limits: a full window pauses the session even when the plan has
    /// extra usage (by default the work goes on on it, and is said once in the journal)
    #[arg(long)]
    plan_only: bool,
    #[command(flatten)]
    pace: PaceArgs,
    /// Seconds the agent's terminal must stay quiet before it counts as idle
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0)]
    quiet_window: f64,
    /// The command and its arguments (put `--` before it); with `--agent claude|codex` and no
    /// command, the agent's own CLI
    #[arg(
        required_unless_present = "agent",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND",
        value_hint = clap::ValueHint::CommandWithArguments
    )]
    command: Vec<String>,
}

pub fn run(state_dir: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    if args.detach {
        return detach(state_dir, &args);
    }
    let passthrough = std::io::stdin().is_terminal();
    let paths = Paths::resolve(state_dir)?;
    let _log = logging::init(&paths.log_dir(), if passthrough { Stderr::OnlyWhenAsked } else { Stderr::On });
    paths.tighten();
    if !(args.stop_grace.is_finite() && args.stop_grace >= 0.0) {
        anyhow::bail!("--stop-grace must be a number of seconds, not {}", args.stop_grace);
    }
    if !(args.quiet_window.is_finite() && (0.1..=3600.0).contains(&args.quiet_window)) {
        anyhow::bail!("--quiet-window must be between 0.1 and 3600 seconds, not {}", args.quiet_window);
    }
    let store = Store::open(&paths.journal())?;
    let events = open_events(args.events.as_deref())?;
    let cwd = match &args.cwd {
        Some(dir) => std::path::absolute(dir).with_context(|| format!("--cwd {}", dir.display()))?,
        None => std::env::current_dir().context("the current directory is gone; pass --cwd DIR")?,
    };
    let size = match (args.cols, args.rows) {
        (Some(cols), Some(rows)) => PtySize::new(cols, rows),
        _ if passthrough => crossterm::terminal::size().map(|(c, r)| PtySize::new(c, r)).unwrap_or_default(),
        _ => PtySize::default(),
    };
    let mut request = Request::new(cwd, args.command.clone());
    request.agent = args.agent;
    request.size = size;
    request.account = args.accounts.choice();
    request.switch_accounts = args.switch_accounts.then_some(args.switch_at);
    request.standing.clone_from(&args.standing);
    request.at_limit = args.at_limit;
    if let Some(line) = &args.failover_to {
        let command = shlex::split(line).filter(|argv| !argv.is_empty()).ok_or_else(|| {
            anyhow::anyhow!("--failover-to `{line}`: give the other agent's command, its quotes closed")
        })?;
        request.failover = Some(nightshift::supervisor::build::FailoverAsk {
            command,
            account: args.failover_account.clone().map_or(nightshift::supervisor::build::AccountChoice::Default, |n| {
                nightshift::supervisor::build::AccountChoice::Named(n)
            }),
            back: !args.no_return,
        });
    }
    request.window_guard = nightshift::limits::WindowGuard {
        reserve_pct: args.reserve.map(f64::from),
        not_tonight: args.not_tonight,
        plan_only: args.plan_only,
    };
    request.pace = args.pace.settings()?;
    if args.auto_resume {
        if !(args.resume_margin.is_finite() && (0.0..=3600.0).contains(&args.resume_margin)) {
            anyhow::bail!("--resume-margin must be between 0 and 3600 seconds, not {}", args.resume_margin);
        }
        request.auto_resume = Some(nightshift::limits::resume::Settings {
            policy: if args.resume_policy == "own" { Policy::Own } else { Policy::Watch },
            margin: Duration::from_secs_f64(args.resume_margin),
            prompt: args.resume_prompt.clone(),
            // Without respawn, the context threshold is auto-resume's (`--handoff-at` too).
            handoff_at: args.respawn_settings.handoff_at.map_or(75.0, f64::from),
            ..Default::default()
        });
    }
    if args.respawn || args.preset.is_some() {
        request.preset = Some(args.preset.clone().unwrap_or_else(|| "solo".into()));
    }
    request.guard = args.respawn_settings.guard == Some(true);
    request.hooks = !args.no_hooks;
    request.budget = nightshift::breaker::Budget {
        max_cost_usd: args.max_cost_usd,
        max_tokens: args.max_tokens,
        max_wall_clock: args.max_wall_clock,
    };
    request.stop_grace = Some(Duration::from_secs_f64(args.stop_grace));
    request.quiet = Some(Duration::from_secs_f64(args.quiet_window));
    request.fence = args.network.network;
    request.allow_hosts.clone_from(&args.network.allow_host);
    request.sandbox = match (args.sandbox, args.no_sandbox) {
        (_, true) => Some(false),
        (true, _) => Some(true),
        _ => None,
    };
    let mut contract = build(&paths, request, |s| args.respawn_settings.apply(s).map_err(|e| e.to_string()))?;
    let account = contract.contract().account.as_ref().map(|a| a.name.clone());
    let begin = args.schedule.begin(&store, account.as_deref(), contract.contract().agent)?;
    // Made last, once nothing else can refuse the start: a refused one leaves no worktree behind.
    if let Some(name) = &args.worktree {
        nightshift::supervisor::build::in_worktree(&mut contract, paths.config_dir.as_deref(), name)
            .map_err(anyhow::Error::msg)?;
        if let Some(made) = &contract.terminal().worktree {
            eprintln!("nightshift: the session works in {} on {}", made.path.display(), made.branch);
        }
    }
    let t = contract.terminal();
    match (&t.sandbox, &t.unsandboxed) {
        (Some(sandbox), _) => eprintln!("nightshift: the agent is {}", sandbox.describe(contract.contract().agent)),
        (None, Some(why)) => eprintln!("nightshift: warning: the agent is {why}"),
        (None, None) => {}
    }
    let spec = SessionSpec::from(contract);

    super::runtime()?.block_on(supervise(paths, store, spec, events, passthrough, begin))
}

/// How long a run that ends waits for its last push notifications (a "finished" waits 3 s to be
/// sure nothing restarts the agent, then its delivery).
const PUSH_FLUSH_WITHIN: Duration = Duration::from_secs(20);

/// How long a run that ends waits for a slow `--events` reader to take the last lines.
const EVENTS_FLUSH_WITHIN: Duration = Duration::from_secs(5);

/// What hosts this process's sessions ([`nightshift::host::Host`]), with its `--events` stream.
pub(super) struct Host {
    pub supervisor: Supervisor,
    host: nightshift::host::Host,
    /// The `--events` stream, written out as the host finishes.
    events: Option<EventWriter>,
}

impl Host {
    /// The sessions are over: the socket goes, the phone's answers are no longer heard, the last
    /// notices reach the phone and the last events their reader.
    pub async fn finish(self) {
        self.host.finish(PUSH_FLUSH_WITHIN).await;
        if let Some(events) = self.events {
            let _ = tokio::task::spawn_blocking(move || events.finish(EVENTS_FLUSH_WITHIN)).await;
        }
    }
}

/// A host for this process's sessions, as every long-lived Nightshift process has
/// ([`nightshift::host`]), with the `--events` stream; the phone only when `[push]` is set up (a
/// bad one is said and left off: the session matters more than the phone).
pub(super) fn host(paths: &Paths, store: Store, events: Option<EventWriter>, role: nightshift::host::Role) -> Host {
    let cli = std::env::current_exe().unwrap_or_else(|_| "nightshift".into());
    let host = nightshift::host::Host::open(paths, store, Arc::new(SystemClock), &cli, role);
    for problem in &host.problems {
        eprintln!("nightshift: {problem}");
    }
    let supervisor = host.supervisor.clone();
    if let Some(writer) = events.clone() {
        supervisor.add_sink(Box::new(move |event| writer.send(event)));
    }
    Host { supervisor, host, events }
}

async fn supervise(
    paths: Paths,
    store: Store,
    mut spec: SessionSpec,
    events: Option<EventWriter>,
    passthrough: bool,
    begin: super::schedule::Begin,
) -> anyhow::Result<ExitCode> {
    let role = nightshift::host::Role { phone: nightshift::host::Phone::IfSet, name: "nightshift run", adopts: false };
    let host = host(&paths, store, events, role);
    let supervisor = host.supervisor.clone();
    // The machine's sleeps go to the journal in a headless night too (the app does so for its own).
    let _suspends = supervisor.watch_suspends();

    // What a failing agent last showed, to tell the user when nobody watched its screen.
    let last_screen: Arc<Mutex<Option<Vec<String>>>> = Arc::default();
    let seen = Arc::clone(&last_screen);
    supervisor.add_sink(Box::new(move |event| {
        if let nightshift::EventKind::State { last_screen: Some(rows), .. } = &event.kind {
            *seen.lock().unwrap_or_else(|p| p.into_inner()) = Some(rows.clone());
        }
    }));
    let (tap_tx, tap_rx) = mpsc::unbounded_channel();
    if passthrough {
        spec.output_tap = Some(tap_tx);
    }
    let t = spec.contract.terminal();
    let (size, cwd) = (PtySize::new(t.cols, t.rows), t.cwd.clone());
    // What the run kept by salvage, said at its end.
    let kept: Arc<Mutex<Vec<String>>> = Arc::default();
    let keep = Arc::clone(&kept);
    supervisor.add_sink(Box::new(move |event| {
        if let nightshift::EventKind::Salvaged { .. } = &event.kind {
            keep.lock().unwrap_or_else(|p| p.into_inner()).push(event.kind.describe(&chrono::Local));
        }
    }));
    let launched = match begin {
        super::schedule::Begin::Now => supervisor.start(spec),
        super::schedule::Begin::Adopt(id) => supervisor.start_rebuilt(id, spec),
        super::schedule::Begin::At(due) => {
            let id = supervisor.schedule(spec.contract.into_contract(), &due)?;
            let (start, code) = super::schedule::wait(&supervisor, sleep_config(&paths), &id, &due).await?;
            if !start {
                host.finish().await;
                return Ok(code);
            }
            // From the contract as the journal keeps it, as any other process would.
            supervisor.start_scheduled(id, spec.output_tap)
        }
    };
    let started = chrono::Utc::now();
    let handle = match launched {
        Ok(handle) => handle,
        Err(StartError::Spawn { session, error }) => {
            eprintln!("nightshift: session {session}: {error}");
            return Ok(ExitCode::from(error.exit_code() as u8));
        }
        Err(e) => return Err(e.into()),
    };
    if passthrough {
        // Should this process die, whoever takes the session over says so on this terminal.
        if let Ok(tty) = nix::unistd::ttyname(std::io::stdin()) {
            let id = handle.id().to_string();
            let noted = supervisor.write_store(|s| s.set_terminal(&id, &tty.display().to_string()));
            if let Err(e) = noted {
                tracing::warn!("could not note this run's terminal: {e}");
            }
        }
    }

    // The machine stays awake while the session needs it, by the same policy as the app's sessions;
    // asked before the terminal goes raw, so a warning prints as a line.
    let why = format!("Nightshift session {} runs", handle.id());
    let sleep = sleep_config(&paths);
    let awake = keep_awake(&supervisor, sleep, why, sessions_want(std::slice::from_ref(&handle)), passthrough).await;
    let terminal = if passthrough { Some(Passthrough::start(&handle, tap_rx, size)?) } else { None };
    forward_signals(&handle, passthrough)?;
    let exit = handle.wait().await;
    drop(awake);
    if let Some(terminal) = terminal {
        terminal.finish().await;
    }
    // Taken over while this process was stopped past its lease: it stood down, and says where the
    // session went.
    let owner = supervisor.with_store(|s| s.owner_of(handle.id().as_str())).ok().and_then(|(owner, _)| owner);
    if let Some(owner) = owner.filter(|o| *o != i64::from(std::process::id())) {
        host.finish().await;
        let id = handle.id();
        eprintln!(
            "nightshift: session {id} was taken over by Nightshift process {owner} while this one was stopped; it goes \
             on there: `nightshift attach {id}`"
        );
        return Ok(ExitCode::SUCCESS);
    }
    host.finish().await;
    if !passthrough {
        if let Some(rows) = last_screen.lock().unwrap_or_else(|p| p.into_inner()).take() {
            eprintln!("nightshift: the command {exit}; its last lines on screen:");
            for row in rows {
                eprintln!("  {row}");
            }
        }
    }
    for line in kept.lock().unwrap_or_else(|p| p.into_inner()).iter() {
        eprintln!("nightshift: {line}");
    }
    // The delivery check: the run's commits that reached no remote, an upstream that moved.
    let delivery = tokio::task::spawn_blocking(move || nightshift::git::delivery(&cwd, started)).await.ok().flatten();
    if let Some(line) = delivery.as_ref().and_then(nightshift::git::Delivery::needs_you) {
        eprintln!("nightshift: {line}");
    }
    Ok(ExitCode::from(exit.shell_code().clamp(0, 255) as u8))
}

/// `run --detach`: the same run, in a session of its own (`setsid`) with no terminal, in the
/// background; its first event names the session, which is printed. The background run is the
/// session's host: it ends when its session does.
fn detach(state_dir: Option<PathBuf>, args: &Args) -> anyhow::Result<ExitCode> {
    if args.events.as_deref() == Some("-") {
        anyhow::bail!("--events - writes to this terminal, which a detached session outlives; give --events FILE");
    }
    let paths = Paths::resolve(state_dir.clone())?;
    nightshift::paths::ensure_private_dir(&paths.runtime_dir)?;
    let first = paths.runtime_dir.join(format!("detached-{}.jsonl", std::process::id()));
    let events = args.events.clone().map_or_else(|| first.clone(), PathBuf::from);
    let before = std::fs::metadata(&events).map_or(0, |m| m.len());
    // This very command line again, without --detach, writing its events where they can be read.
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    argv.retain(|a| a != "--detach");
    if args.events.is_none() {
        let at = argv.iter().position(|a| a == "run").map_or(0, |i| i + 1);
        argv.splice(at..at, [std::ffi::OsString::from("--events"), events.clone().into_os_string()]);
    }
    let log = nightshift::paths::private_append(&paths.log_dir().join("detached.log"))
        .or_else(|_| std::fs::File::create("/dev/null"))?;
    let mut child = std::process::Command::new("setsid")
        .arg(std::env::current_exe()?)
        .args(&argv)
        .envs(state_dir.map(|d| (nightshift::paths::STATE_DIR_ENV, d)))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .context("cannot start the background run (setsid, from util-linux, is needed)")?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let session = loop {
        let text = std::fs::read(&events).unwrap_or_default();
        let fresh = String::from_utf8_lossy(&text[(before as usize).min(text.len())..]).into_owned();
        if let Some(id) = fresh
            .lines()
            .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()?["session"].as_str().map(String::from))
        {
            break id;
        }
        if let Ok(Some(status)) = child.try_wait() {
            anyhow::bail!(
                "the background run ended before it started a session ({status}); see {}",
                paths.log_dir().join("detached.log").display()
            );
        }
        if std::time::Instant::now() > deadline {
            anyhow::bail!(
                "the background run did not start a session within 15 s; see {}",
                paths.log_dir().join("detached.log").display()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    if args.events.is_none() {
        // The run keeps writing to it; nobody reads it: gone from the directory, freed at its end.
        let _ = std::fs::remove_file(&first);
    }
    println!("{session}");
    Ok(ExitCode::SUCCESS)
}

/// How a session or a loop paces its spend, when the flags say (else `[pace]` in config.toml).
#[derive(Debug, Clone, clap::Args)]
pub(super) struct PaceArgs {
    /// Keep this share of the 5-hour window free for the morning: no new respawn cycle or loop
    /// iteration past the line until the window resets (`20% at 08:30`; `[pace] morning_reserve`)
    #[arg(long, value_name = "PCT% at HH:MM")]
    morning_reserve: Option<nightshift::limits::pace::MorningReserve>,
    /// Spend at most n/7 of the weekly window by its day n plus this many points: work parks until
    /// a later day allows more (`[pace] weekly_pace`)
    #[arg(long, value_name = "SLACK")]
    weekly_pace: Option<f64>,
    /// Keep no pace, whatever config.toml says
    #[arg(long, conflicts_with_all = ["morning_reserve", "weekly_pace"])]
    no_pace: bool,
}

impl PaceArgs {
    /// The pace the flags ask for: `None` when they name none (config.toml's `[pace]` applies).
    pub(super) fn settings(&self) -> anyhow::Result<Option<nightshift::limits::pace::PaceSettings>> {
        use nightshift::limits::pace::PaceSettings;
        if let Some(slack) = self.weekly_pace.filter(|s| !(s.is_finite() && (0.0..=100.0).contains(s))) {
            anyhow::bail!("--weekly-pace is the slack in points of the week, from 0 to 100, not {slack}");
        }
        Ok(match (self.morning_reserve, self.weekly_pace) {
            _ if self.no_pace => Some(PaceSettings::default()),
            (None, None) => None,
            (morning_reserve, weekly_pace) => Some(PaceSettings { morning_reserve, weekly_pace }),
        })
    }
}

/// Stops the session when Nightshift itself is told to stop (and forwards window size changes).
///
/// SIGTERM (a logout, a reboot, `kill`) and SIGHUP (the terminal went away) end Nightshift, not the
/// user's night: a resume the session waits for is kept for the next Nightshift process. Ctrl-C in an
/// unattended run is the user stopping it. In passthrough, Ctrl-C is a byte for the agent.
fn forward_signals(handle: &SessionHandle, passthrough: bool) -> anyhow::Result<()> {
    let one = handle.clone();
    stop_on_signals(move || vec![one.clone()], !passthrough)?;

    if passthrough {
        let mut winch = signal(SignalKind::window_change()).context("cannot listen for SIGWINCH")?;
        let handle = handle.clone();
        tokio::spawn(async move {
            // Once now, then at every change: a resize between the agent's start and this listener
            // sent its SIGWINCH to nobody. (The same size again changes nothing for the agent.)
            loop {
                if let Ok((cols, rows)) = crossterm::terminal::size() {
                    let _ = handle.resize(PtySize::new(cols, rows)).await;
                }
                if winch.recv().await.is_none() {
                    break;
                }
            }
        });
    }
    Ok(())
}

/// Stops the sessions `handles` gives when Nightshift is told to stop: SIGTERM and SIGHUP as
/// Nightshift's own end (a pending resume is kept), SIGINT (`interrupt`: an unattended run's
/// Ctrl-C) as the user's stop.
pub(super) fn stop_on_signals(
    handles: impl Fn() -> Vec<SessionHandle> + Clone + Send + 'static,
    interrupt: bool,
) -> anyhow::Result<()> {
    let mut kinds = vec![
        (SignalKind::terminate(), "SIGTERM", StopKind::Shutdown),
        (SignalKind::hangup(), "SIGHUP", StopKind::Shutdown),
    ];
    if interrupt {
        kinds.push((SignalKind::interrupt(), "SIGINT", StopKind::User));
    }
    for (kind, name, stop) in kinds {
        let mut stream = signal(kind).context("cannot listen for signals")?;
        let handles = handles.clone();
        tokio::spawn(async move {
            let source = format!("{name} to nightshift");
            while stream.recv().await.is_some() {
                for handle in &handles() {
                    let _ = match stop {
                        StopKind::User => handle.stop(&source).await,
                        StopKind::Shutdown => handle.shut_down(&source).await,
                    };
                }
            }
        });
    }
    Ok(())
}

/// The user's terminal, lent to the session: raw mode in, the agent's bytes out.
struct Passthrough {
    output: tokio::task::JoinHandle<Screen>,
}

impl Passthrough {
    fn start(handle: &SessionHandle, mut tap: mpsc::UnboundedReceiver<Vec<u8>>, size: PtySize) -> anyhow::Result<Self> {
        crossterm::terminal::enable_raw_mode().context("cannot put the terminal in raw mode")?;
        let keys = handle.clone();
        let runtime = tokio::runtime::Handle::current();
        std::thread::Builder::new().name("stdin".into()).spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdin.read(&mut buf) {
                if n == 0 || runtime.block_on(keys.send_keys(buf[..n].to_vec())).is_err() {
                    break;
                }
            }
        })?;
        let output = tokio::task::spawn_blocking(move || {
            // A screen of our own follows the output, to undo the modes the agent leaves on.
            let mut screen = Screen::new(size);
            let mut stdout = std::io::stdout().lock();
            while let Some(bytes) = tap.blocking_recv() {
                screen.feed(&bytes);
                if stdout.write_all(&bytes).and_then(|()| stdout.flush()).is_err() {
                    break;
                }
            }
            screen
        });
        Ok(Self { output })
    }

    async fn finish(self) {
        let screen = self.output.await.ok();
        let _ = crossterm::terminal::disable_raw_mode();
        if let Some(screen) = screen {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(screen.restore_sequence().as_bytes()).and_then(|()| stdout.flush());
        }
    }
}
