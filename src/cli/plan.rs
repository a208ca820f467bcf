//! `nightshift plan`: what the rest of the night should look like, from the usage windows' burn
//! over the last hours of work and the sessions still armed.

use std::path::PathBuf;
use std::process::ExitCode;

use chrono::{Local, NaiveTime};
use nightshift::clock::{Clock, SystemClock};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plan as JSON
    #[arg(long)]
    json: bool,
    /// The end of the night, local time [default: 08:00]
    #[arg(long, value_name = "HH:MM", default_value = "08:00", value_parser = parse_time)]
    until: NaiveTime,
}

fn parse_time(s: &str) -> Result<NaiveTime, String> {
    NaiveTime::parse_from_str(s, "%H:%M")
        .map_err(|_| format!("`{s}` is not a time of day; write it as HH:MM, e.g. 08:00"))
}

pub fn run(state_dir: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let (paths, store) = super::open_store(state_dir)?;
    let now = SystemClock.now();
    let until = nightshift::plan::next_local(now, args.until, &Local);
    let mut plan = nightshift::plan::from_store(&store, now, until)?;
    plan.clients = nightshift::plan::clients(&paths.state_dir);
    let config = nightshift::config::Config::load(paths.config_dir.as_deref()).unwrap_or_default();
    let can_wake = nightshift::supervisor::awake::can_wake().is_ok();
    let mut plan = plan.with_pace(&config.pace, &Local).with_sleep(&config.sleep.settings(can_wake));
    // Tonight's fence for an unattended, sandboxed start in this folder, as it would be read now.
    if let Ok(cwd) = std::env::current_dir() {
        let sandbox = nightshift::agent::Sandbox {
            network: config.sandbox.network.clone(),
            fence: config.sandbox.fence,
            ..Default::default()
        };
        let view = nightshift::supervisor::fence::tonight(&sandbox, &cwd, &[]).view;
        plan = plan.with_fence(nightshift::plan::fence::FolderFence {
            folder: cwd.display().to_string(),
            sandboxed: config.sandbox.enabled,
            fence: view.fence,
            hosts: view.hosts,
            warnings: view.warnings,
        });
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&plan)?);
    } else {
        print!("{}", plan.text(&Local));
    }
    Ok(ExitCode::SUCCESS)
}
