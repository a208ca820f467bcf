//! The command line: one file per verb.

mod attach;
mod awake;
mod breaker;
mod digest;
mod doctor;
mod generate;
mod hook;
mod journal;
mod log;
mod loops;
mod notify;
mod plan;
mod presets;
mod push;
mod restore;
mod run;
mod salvage;
mod schedule;
mod screen;
mod send;
mod service;
mod sessions;
mod statusline;
mod stop;
mod usage;
mod worktree;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use nightshift::control;
use nightshift::paths::{Paths, STATE_DIR_ENV};
use nightshift::store::{SessionRow, Store};

#[derive(Debug, Parser)]
#[command(
    name = "nightshift",
    version = env!("NIGHTSHIFT_VERSION"),
    about = "Keeps AI coding agents working through the night.",
    long_about = "Keeps AI coding agents working through the night. Nightshift runs each agent CLI (Claude \
                  Code, Codex, any command) in a pseudo-terminal it owns, reads the agent's screen to know \
                  whether it works, idles, asks a question or hit a usage limit, and acts: respawn cycles, \
                  resumes after the limit resets, breakers. Everything goes to one journal, which the tray \
                  app (nightshift-app) shows too.",
    after_long_help = generate::exit_help(generate::EXIT)
)]
struct Cli {
    /// Where the journal and logs live [default: $XDG_STATE_HOME/nightshift]
    #[arg(long, global = true, value_name = "DIR", value_hint = clap::ValueHint::DirPath, env = STATE_DIR_ENV)]
    state_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a command (an agent CLI) as a supervised session, in the foreground.
    #[command(after_long_help = generate::exit_help(generate::RUN_EXIT))]
    Run(run::Args),
    /// List the sessions in the journal.
    Sessions(sessions::Args),
    /// Show the journal's events.
    Journal(journal::Args),
    /// Work through tasks unattended: a fresh headless session per task, with budgets and retries.
    Loop(loops::Args),
    /// What a loop's iterations did, as a person reads it.
    Log(log::Args),
    /// The session's terminal in this one: its screen, its output live, your keys to the agent;
    /// Ctrl-] detaches and it goes on.
    Attach(attach::Args),
    /// Type text into a running session.
    Send(send::Args),
    /// Stop a running session (SIGHUP, then SIGKILL after a grace period).
    Stop(stop::Args),
    /// What happened over a range: what needs you, what got done, what it cost.
    Digest(digest::Args),
    /// Is this machine ready for a night? Checks the agents, their login, the working directories,
    /// the state directory, the desktop and the power; exit 1 on any FAIL.
    Doctor(doctor::Args),
    /// The rest of the night: when the usage windows fill and reset, the limit waits and resumes,
    /// the expected spend, and when work is expected to stop.
    Plan(plan::Args),
    /// The respawn presets: list, show, save your own, delete.
    Presets(presets::Args),
    /// Circuit breakers: `nightshift breaker reset SESSION`.
    Breaker(breaker::Args),
    /// The worktrees sessions were started in (`run --worktree`): list, show, remove.
    Worktree(worktree::Args),
    /// Answers from the phone: `nightshift push setup` makes the ntfy topics and the key that
    /// signs the buttons, and shows the topic to subscribe to as a QR code.
    Push(push::Args),
    /// The uncommitted work kept when a session's life ended badly: list, show, restore.
    Salvage(salvage::Args),
    /// Print what a running session shows now.
    Screen(screen::Args),
    /// Show the plan usage (5-hour and 7-day windows) and the last 24 hours.
    Usage(usage::Args),
    /// Bring back the sessions and loops whose Nightshift ended without ending them (a reboot, a
    /// logout, a killed run) while their armed automation has time left, and supervise them here;
    /// start the scheduled ones whose own process is gone at their time (the tray app does both
    /// when it starts). `nightshift restore SESSION` resumes a lost attended one, or carries an
    /// ended one's conversation on in a new session.
    Restore(restore::Args),
    /// The systemd user service that runs `nightshift restore` at login (and at boot with
    /// lingering): enable, disable, status.
    Service(service::Args),
    /// The statusLine exporter Claude Code runs for Nightshift's sessions (reads JSON on stdin).
    #[command(hide = true)]
    Statusline(statusline::Args),
    /// The hook Claude Code runs for Nightshift's sessions (reads the payload on stdin).
    #[command(hide = true)]
    Hook(hook::Args),
    /// The notify program Codex runs for Nightshift's sessions (the payload is the last argument).
    #[command(hide = true)]
    Notify(notify::Args),
    /// Shell completions and man pages, for installing (`make install`, the Debian package).
    #[command(hide = true)]
    Generate(generate::Args),
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(cli.state_dir, args),
        Command::Sessions(args) => sessions::run(cli.state_dir, args),
        Command::Journal(args) => journal::run(cli.state_dir, args),
        Command::Loop(args) => loops::run(cli.state_dir, args),
        Command::Log(args) => log::run(cli.state_dir, args),
        Command::Attach(args) => attach::run(cli.state_dir, args),
        Command::Send(args) => send::run(cli.state_dir, args),
        Command::Stop(args) => stop::run(cli.state_dir, args),
        Command::Screen(args) => screen::run(cli.state_dir, args),
        Command::Salvage(args) => salvage::run(cli.state_dir, args),
        Command::Presets(args) => presets::run(cli.state_dir, args),
        Command::Digest(args) => digest::run(cli.state_dir, args),
        Command::Doctor(args) => doctor::run(cli.state_dir, args),
        Command::Plan(args) => plan::run(cli.state_dir, args),
        Command::Breaker(args) => breaker::run(cli.state_dir, args),
        Command::Push(args) => push::run(args),
        Command::Worktree(args) => worktree::run(cli.state_dir, args),
        Command::Usage(args) => usage::run(cli.state_dir, args),
        Command::Restore(args) => restore::run(cli.state_dir, args),
        Command::Service(args) => service::run(cli.state_dir, args),
        Command::Statusline(args) => statusline::run(args),
        Command::Hook(args) => hook::run(args),
        Command::Notify(args) => notify::run(args),
        Command::Generate(args) => generate::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("nightshift: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Opens the journal of the given (or default) state directory.
fn open_store(state_dir: Option<PathBuf>) -> anyhow::Result<(Paths, Store)> {
    let paths = Paths::resolve(state_dir)?;
    let store = Store::open(&paths.journal())?;
    Ok((paths, store))
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Sends `request` to the process that runs `row`'s session, or says why there is none to talk to.
fn ask(row: &SessionRow, request: &control::Request) -> anyhow::Result<control::Response> {
    let socket = control::owner_socket(row)?;
    match runtime()?.block_on(control::request(socket, request)) {
        // Its process is there but the session ended in it.
        Err(control::ControlError::Refused(body)) if body.code == control::Code::NoSession && row.is_final() => {
            Err(control::ended(row).into())
        }
        other => Ok(other?),
    }
}

/// An RFC 3339 UTC timestamp from the journal, shown in local time.
fn local_time(ts: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(ts)
        .map(|t| t.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_else(|_| ts.to_string())
}

/// `--network` / `--allow-host`, on `run` and `loop`: how far a sandboxed agent's commands reach.
#[derive(Debug, Clone, Default, clap::Args)]
struct NetworkArgs {
    /// The sandbox's network: `project` (the project's remotes and the package indexes its tools
    /// use, the agent's API host, and your [sandbox] network), `open` (any host, each connection
    /// seen and counted) or `none` (your [sandbox] network alone) [default: [sandbox] fence, else
    /// project]
    #[arg(long, value_name = "FENCE")]
    network: Option<nightshift::agent::Fence>,
    /// Let the sandboxed agent reach this host too (a name, an address, host:port or *.domain);
    /// repeat for more
    #[arg(long, value_name = "HOST")]
    allow_host: Vec<String>,
}

/// `--account NAME` / `--config-dir DIR`, on `run` and `loop`.
#[derive(Debug, Clone, clap::Args)]
struct AccountArgs {
    /// Run under this account of `config.toml`'s [accounts] (its client config directory)
    #[arg(long, value_name = "NAME", conflicts_with = "config_dir")]
    account: Option<String>,
    /// Run with this client config directory (CLAUDE_CONFIG_DIR, or CODEX_HOME for Codex)
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    config_dir: Option<PathBuf>,
}

impl AccountArgs {
    /// The account they name, if either.
    fn choice(&self) -> nightshift::supervisor::build::AccountChoice {
        use nightshift::supervisor::build::AccountChoice;
        match (&self.account, &self.config_dir) {
            (Some(name), _) => AccountChoice::Named(name.clone()),
            (None, Some(dir)) => AccountChoice::Dir(dir.clone()),
            (None, None) => AccountChoice::Default,
        }
    }
}
