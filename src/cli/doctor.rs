//! `nightshift doctor`: is this machine ready for a night? One line per check, PASS, WARN or FAIL,
//! each WARN and FAIL with its remedy; exit 1 on any FAIL.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use nightshift::agent::AgentKind;
use nightshift::doctor::{self, Options};
use nightshift::paths::Paths;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The checks as JSON (a stable schema: `schema`, `ok`, `counts`, `checks[]` with `id`,
    /// `subject`, `status`, `detail`, `remedy`)
    #[arg(long)]
    json: bool,
    /// An agent the night will run (repeatable) [default: claude, and codex when installed]
    #[arg(long = "agent", value_name = "NAME")]
    agents: Vec<AgentKind>,
    /// A working directory the night will use (repeatable) [default: the current one]
    #[arg(long = "cwd", value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    cwds: Vec<PathBuf>,
    /// Skip the drift probe, which starts each agent's CLI in a terminal for a few seconds
    #[arg(long)]
    no_probe: bool,
    /// Instead of the checks, run tonight's installed client through a script of turns against a
    /// stand-in of its API on 127.0.0.1 (a scratch home, a throwaway key, no network, no cost):
    /// one line per signal the supervisor listens for, PASS or FAIL; under a minute a client
    #[arg(long, conflicts_with_all = ["cwds", "no_probe", "agent_args"])]
    canary: bool,
    /// The agent's own flags the sessions will get (`--permission-mode acceptEdits`, …)
    #[arg(last = true, value_name = "AGENT ARGS")]
    agent_args: Vec<String>,
}

pub fn run(state_dir: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let paths = Paths::resolve(state_dir)?;
    if args.canary {
        let cli = std::env::current_exe().context("cannot find the nightshift binary the client's hooks run")?;
        let setup = doctor::canary::drive::Setup { cli };
        let (report, _) = doctor::canary::run(&paths, &setup, &args.agents);
        print_report(&report, args.json)?;
        return Ok(if report.ok { ExitCode::SUCCESS } else { ExitCode::FAILURE });
    }
    let here = std::env::current_dir()?;
    let opts = Options { agents: args.agents, cwds: args.cwds, agent_args: args.agent_args, no_probe: args.no_probe };
    let report = doctor::run(&paths, &here, &opts);
    print_report(&report, args.json)?;
    Ok(if report.ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn print_report(report: &doctor::Report, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
    } else {
        print!("{}", report.text());
    }
    Ok(())
}
