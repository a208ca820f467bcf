//! `nightshift loop`: a fresh headless session per task until the tasks, the budget or the night
//! run out; `nightshift loop stop|halt [LOOP]` leaves it a marker.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use nightshift::loops::machine::{Marker, Settings};
use nightshift::loops::{global_marker, loop_dir, marker_name, LoopRequest, LoopSpec};
use nightshift::paths::Paths;
use nightshift::AgentKind;

use super::run::{host, open_events, stop_on_signals};

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    #[command(subcommand)]
    action: Option<Action>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Let the current iteration finish, then end (one loop, or every loop).
    Stop(MarkerArgs),
    /// End now, stopping the current iteration (one loop, or every loop).
    Halt(MarkerArgs),
}

#[derive(Debug, clap::Args)]
struct MarkerArgs {
    /// The loop (an id or a unique prefix); every loop when left out.
    #[arg(value_name = "LOOP")]
    session: Option<String>,
}

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["prompt", "tasks"])))]
struct RunArgs {
    /// The harness: claude (`claude -p --output-format stream-json`) or codex (`codex exec --json`)
    #[arg(long, value_name = "claude|codex", default_value = "claude")]
    agent: AgentKind,
    /// The harness's program [default: claude, or codex]
    #[arg(long, value_name = "PATH")]
    program: Option<String>,
    /// The task of every iteration
    #[arg(long, value_name = "TEXT")]
    prompt: Option<String>,
    /// A Markdown checklist, or one task per line: each iteration takes the first open one and
    /// checks it off when it ends well (relative: in each project's directory)
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    tasks: Option<PathBuf>,
    /// A project's directory; repeat it to go round several, one iteration each [default: here]
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    cwd: Vec<PathBuf>,
    /// A file listing the projects' directories, one per line (`#` for comments)
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    projects: Option<PathBuf>,
    /// End after this many iterations (a retry is the same iteration)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_iterations: Option<u32>,
    /// Stop once the harness's own totals reach this many dollars
    #[arg(long, value_name = "USD")]
    max_cost_usd: Option<f64>,
    /// Stop once the harness's tokens reach this many (Claude: input, output and cache; Codex:
    /// input and output)
    #[arg(long, value_name = "N")]
    max_tokens: Option<u64>,
    /// An outer bound on how late the loop may end (`8h`, `90m`); the machine's sleep counts
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    max_wall_clock: Option<Duration>,
    /// Retries of one iteration after transient failures before giving up; 0: never give up
    #[arg(long, value_name = "N", default_value_t = 0)]
    max_retries: u32,
    /// The first wait before a retry; each next one doubles
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "30s")]
    retry_first: Duration,
    /// The longest wait between retries
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "5m")]
    retry_cap: Duration,
    /// How often a usage-limit wait probes for an early reset
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "30m")]
    probe_every: Duration,
    /// Your standing instructions for the night, restated (and the input marked as automated) in
    /// the one-word probes Nightshift sends by itself during a limit wait
    #[arg(long, value_name = "TEXT")]
    standing: Option<String>,
    /// How long after a limit's reset the iteration runs again
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "60s")]
    limit_margin: Duration,
    #[command(flatten)]
    pace: super::run::PaceArgs,
    /// Work in a new git worktree for the whole loop, on a branch `nightshift/NAME` made from HEAD,
    /// outside your checkout, which is left as it is (tasks done are journalled, not checked off in
    /// your tasks file) [NAME default: a random one]
    #[arg(long, value_name = "NAME", num_args = 0..=1, default_missing_value = "")]
    worktree: Option<String>,
    /// Run each iteration without the agent's own sandbox [default: loops run sandboxed, unless
    /// `[sandbox] enabled = false`]
    #[arg(long)]
    no_sandbox: bool,
    #[command(flatten)]
    network: super::NetworkArgs,
    /// A new worktree for each task instead, `nightshift/NAME-N-TASK WORDS`, each made from your HEAD
    /// when its task starts
    #[arg(long)]
    worktree_per_task: bool,
    #[command(flatten)]
    schedule: super::schedule::When,
    #[command(flatten)]
    accounts: super::AccountArgs,
    /// Write every event as a JSON line to PATH (`-`: stdout)
    #[arg(long, value_name = "PATH|-")]
    events: Option<String>,
    /// The harness's own flags (after `--`): model, permission mode, allowed tools
    #[arg(last = true, value_name = "HARNESS ARGS")]
    harness_args: Vec<String>,
}

pub fn run(state_dir: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    match args.action {
        Some(Action::Stop(m)) => leave_marker(state_dir, Marker::Stop, m.session),
        Some(Action::Halt(m)) => leave_marker(state_dir, Marker::Halt, m.session),
        None => start(state_dir, args.run),
    }
}

fn leave_marker(state_dir: Option<PathBuf>, marker: Marker, session: Option<String>) -> anyhow::Result<ExitCode> {
    let (paths, store) = super::open_store(state_dir)?;
    let path = match &session {
        Some(prefix) => {
            let row = store.find_session(prefix)?;
            if row.kind != nightshift::store::SessionKind::Loop {
                anyhow::bail!("session {} is not a loop; stop it with `nightshift stop {}`", row.id, row.id);
            }
            if row.is_final() {
                anyhow::bail!("loop {} has already ended", row.id);
            }
            loop_dir(&paths.state_dir, &row.id).join(marker_name(marker))
        }
        None => global_marker(&paths.state_dir, marker),
    };
    if let Some(dir) = path.parent() {
        nightshift::paths::private_dirs(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    nightshift::paths::write_private(&path, b"")
        .with_context(|| format!("cannot write the marker {}", path.display()))?;
    let what = match (marker, &session) {
        (Marker::Stop, Some(_)) => "it ends after its current iteration",
        (Marker::Halt, Some(_)) => "it ends now",
        (Marker::Stop, None) => "every loop ends after its current iteration; remove the marker to start loops again",
        (Marker::Halt, None) => "every loop ends now; remove the marker to start loops again",
    };
    println!("{}: {what}", path.display());
    Ok(ExitCode::SUCCESS)
}

fn start(state_dir: Option<PathBuf>, args: RunArgs) -> anyhow::Result<ExitCode> {
    let (paths, store) = super::open_store(state_dir)?;
    // A loop logs as `run` does: a tasks file it cannot write, a retry, are said, not kept quiet.
    let _log = nightshift::logging::init(&paths.log_dir(), nightshift::logging::Stderr::On);
    paths.tighten();
    let here = std::env::current_dir().context("cannot read the current directory")?;
    let mut cwd = args.cwd.clone();
    if let Some(file) = &args.projects {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read the projects file {}", file.display()))?;
        let base = file.parent().map_or(here.clone(), |p| here.join(p));
        cwd.extend(text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(|l| base.join(l)));
    }
    let request = LoopRequest {
        agent: Some(args.agent),
        program: args.program,
        prompt: args.prompt,
        tasks: args.tasks,
        cwd,
        max_iterations: args.max_iterations,
        max_cost_usd: args.max_cost_usd,
        max_tokens: args.max_tokens,
        max_wall_clock_secs: args.max_wall_clock.map(|d| d.as_secs_f64()),
        harness_args: args.harness_args,
    };
    let ask = nightshift::supervisor::build::LoopAsk {
        request,
        account: args.accounts.choice(),
        pace: args.pace.settings()?,
        sandbox: args.no_sandbox.then_some(false),
        fence: args.network.network,
        allow_hosts: args.network.allow_host.clone(),
    };
    let (mut spec, warnings) = nightshift::supervisor::build::build_loop(&paths, &here, ask, |settings| {
        *settings = Settings {
            max_retries: args.max_retries,
            retry_first: args.retry_first,
            retry_cap: args.retry_cap,
            probe_every: args.probe_every,
            limit_margin: args.limit_margin,
            standing: args.standing.as_deref().and_then(nightshift::automated::standing),
            ..settings.clone()
        };
    })?;
    for warning in &warnings {
        eprintln!("nightshift: warning: {warning}");
    }
    if let Some(sandbox) = &spec.sandbox {
        eprintln!("nightshift: each iteration is {}", sandbox.describe(spec.agent));
    }
    let events = open_events(args.events.as_deref())?;
    let begin = args.schedule.begin(&store, spec.account.as_ref().map(|a| a.name.as_str()), spec.agent)?;
    // Made last, once nothing else can refuse the start: a refused one leaves no worktree behind.
    if args.worktree.is_some() || args.worktree_per_task {
        let name = args.worktree.as_deref().unwrap_or_default();
        nightshift::supervisor::build::loop_in_worktrees(
            &mut spec,
            paths.config_dir.as_deref(),
            name,
            args.worktree_per_task,
        )
        .map_err(anyhow::Error::msg)?;
        for project in &spec.projects {
            match &project.isolation {
                nightshift::contract::Isolation::Worktree(w) => {
                    eprintln!("nightshift: {} works in {} on {}", project.cwd.display(), w.path.display(), w.branch)
                }
                nightshift::contract::Isolation::PerTask { root, name } => eprintln!(
                    "nightshift: each task of {} works in a new worktree in {} on a branch nightshift/{name}-…",
                    project.cwd.display(),
                    nightshift::git::worktree::folder(
                        root,
                        &nightshift::git::worktree::top(&project.cwd).unwrap_or_default()
                    )
                    .display()
                ),
                nightshift::contract::Isolation::None => {}
            }
        }
    }
    super::runtime()?.block_on(supervise(paths, store, spec, events, begin))
}

async fn supervise(
    paths: Paths,
    store: nightshift::store::Store,
    spec: LoopSpec,
    events: Option<super::run::EventWriter>,
    begin: super::schedule::Begin,
) -> anyhow::Result<ExitCode> {
    let role = nightshift::host::Role { phone: nightshift::host::Phone::IfSet, name: "nightshift loop", adopts: false };
    let host = host(&paths, store, events, role);
    let _suspends = host.supervisor.watch_suspends();
    let sleep = super::awake::sleep_config(&paths);
    let handle = match begin {
        super::schedule::Begin::Now => host.supervisor.start_loop(spec)?,
        super::schedule::Begin::Adopt(id) => host.supervisor.start_rebuilt_loop(id, spec)?,
        super::schedule::Begin::At(due) => {
            let id = host.supervisor.schedule(nightshift::contract::Contract::looping(spec), &due)?;
            let (start, code) = super::schedule::wait(&host.supervisor, sleep.clone(), &id, &due).await?;
            if !start {
                host.finish().await;
                return Ok(code);
            }
            host.supervisor.start_scheduled(id, None)?
        }
    };
    eprintln!(
        "nightshift: loop {} started; `nightshift loop stop {}` ends it after its iteration",
        handle.id(),
        handle.id()
    );
    // A loop keeps the machine awake while it runs, and sleeps through its long waits as the app
    // does for its own.
    let why = format!("Nightshift loop {} is running", handle.id());
    let awake = super::awake::keep_awake(
        &host.supervisor,
        sleep,
        why,
        super::awake::sessions_want(std::slice::from_ref(&handle)),
        false,
    )
    .await;
    let one = handle.clone();
    stop_on_signals(move || vec![one.clone()], true)?;
    let exit = handle.wait().await;
    drop(awake);
    host.finish().await;
    Ok(ExitCode::from(exit.shell_code().clamp(0, 255) as u8))
}
