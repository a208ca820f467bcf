//! `nightshift presets`: the respawn presets, built-in and the user's own.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use nightshift::config::{Config, Source};
use nightshift::paths::Paths;
use nightshift::respawn::Settings;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Option<Action>,
}

// Parsed once per process: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, clap::Subcommand)]
enum Action {
    /// One line per preset (the default)
    List,
    /// Every setting of one preset
    Show { name: String },
    /// Save a preset of your own: another preset's settings, changed by the options given
    Save {
        name: String,
        /// The preset to start from
        #[arg(long, default_value = "overnight")]
        from: String,
        #[command(flatten)]
        settings: SettingsArgs,
    },
    /// Delete one of your presets
    Delete { name: String },
}

/// Every respawn setting, as options that change a preset.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SettingsArgs {
    /// Seconds the session must be idle before a cycle starts
    #[arg(long, value_name = "SECONDS")]
    pub idle_timeout: Option<f64>,
    /// How long respawn stays armed (`90m`, `8h`)
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub duration: Option<Duration>,
    /// Seconds between the steps of a cycle
    #[arg(long, value_name = "SECONDS")]
    pub inter_step_delay: Option<f64>,
    /// How long a step may keep the agent busy before the cycle is abandoned (`30m`)
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub step_timeout: Option<Duration>,
    /// Reset the context with /clear and /init in each cycle
    #[arg(long, value_name = "BOOL")]
    pub clear_init: Option<bool>,
    /// The prompt asking the agent to write down where it got to ("" skips the step)
    #[arg(long, value_name = "TEXT")]
    pub update_prompt: Option<String>,
    /// The prompt telling the agent to continue ("" skips the step)
    #[arg(long, value_name = "TEXT")]
    pub kickstart_prompt: Option<String>,
    /// Answer the agent's routine confirmation dialogs (never its questions)
    #[arg(long, value_name = "BOOL")]
    pub auto_accept: Option<bool>,
    /// Seconds after the user typed into the session during which no cycle starts
    #[arg(long, value_name = "SECONDS")]
    pub user_quiet: Option<f64>,
    /// Start the agent again after a clean exit (its own end, your /exit) too
    #[arg(long, value_name = "BOOL")]
    pub restart_clean_exits: Option<bool>,
    /// Restarts in a row that change nothing in the working tree before the crash-loop breaker opens
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_restarts: Option<u32>,
    /// Seconds to wait before the first, second, … restart, comma-separated (the last repeats)
    #[arg(long, value_name = "S,S,…", value_delimiter = ',')]
    pub restart_backoff: Option<Vec<f64>>,
    /// At this percent of its context in use, ask the agent for a handoff and reset its context (0:
    /// never)
    #[arg(long, value_name = "PERCENT", value_parser = clap::value_parser!(u8).range(0..=99))]
    pub handoff_at: Option<u8>,
    /// Refuse the commands an unattended session must not run (force pushes to the default branch,
    /// `rm -rf` outside the working directory, …); on in the overnight preset
    #[arg(long, value_name = "BOOL")]
    pub guard: Option<bool>,
    /// Minutes an open no-progress or crash-loop breaker waits before each probe, comma-separated
    /// (15,30,60,120), or `never`: open until `nightshift breaker reset`
    #[arg(long, value_name = "M,M,…|never")]
    pub breaker_retry: Option<String>,
}

fn seconds(name: &str, v: f64) -> anyhow::Result<Duration> {
    if !(v.is_finite() && (0.0..=86_400.0 * 7.0).contains(&v)) {
        anyhow::bail!("--{name} must be a number of seconds, not {v}");
    }
    Ok(Duration::from_secs_f64(v))
}

impl SettingsArgs {
    pub fn apply(&self, s: &mut Settings) -> anyhow::Result<()> {
        if let Some(list) = &self.breaker_retry {
            s.breaker_retry = match list.trim() {
                "never" | "" => Vec::new(),
                list => list
                    .split(',')
                    .map(|m| match m.trim().parse::<f64>() {
                        Ok(m) if m.is_finite() && m > 0.0 && m <= 1440.0 => Ok(Duration::from_secs_f64(m * 60.0)),
                        _ => anyhow::bail!(
                            "--breaker-retry takes minutes separated by commas (15,30,60,120) or `never`, not `{list}`"
                        ),
                    })
                    .collect::<anyhow::Result<_>>()?,
            };
        }
        if let Some(v) = self.idle_timeout {
            s.idle_timeout = seconds("idle-timeout", v)?;
        }
        if let Some(v) = self.duration {
            s.duration = v;
        }
        if let Some(v) = self.inter_step_delay {
            s.inter_step_delay = seconds("inter-step-delay", v)?;
        }
        if let Some(v) = self.step_timeout {
            s.step_timeout = v;
        }
        if let Some(v) = self.clear_init {
            s.clear_and_init = v;
        }
        if let Some(v) = &self.update_prompt {
            s.update_prompt.clone_from(v);
        }
        if let Some(v) = &self.kickstart_prompt {
            s.kickstart_prompt.clone_from(v);
        }
        if let Some(v) = self.auto_accept {
            s.auto_accept = v;
        }
        if let Some(v) = self.user_quiet {
            s.user_quiet = seconds("user-quiet", v)?;
        }
        if let Some(v) = self.restart_clean_exits {
            s.restart_clean_exits = v;
        }
        if let Some(v) = self.max_restarts {
            s.max_restarts = v;
        }
        if let Some(pct) = self.handoff_at {
            s.handoff_at = f64::from(pct);
        }
        if let Some(guard) = self.guard {
            s.guard = guard;
        }
        if let Some(list) = &self.restart_backoff {
            s.restart_backoff = list.iter().map(|v| seconds("restart-backoff", *v)).collect::<Result<_, _>>()?;
            if s.restart_backoff.is_empty() {
                anyhow::bail!("--restart-backoff needs at least one wait in seconds, such as 2,10,30");
            }
        }
        Ok(())
    }
}

fn summary(s: &Settings) -> String {
    let steps: Vec<&str> = s.steps().iter().map(|st| st.as_str()).collect();
    format!(
        "idle {} s · {} · steps {}",
        s.idle_timeout.as_secs_f64(),
        humantime::format_duration(s.duration),
        if steps.is_empty() { "none".into() } else { steps.join(" → ") }
    )
}

pub fn run(_state_dir: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let config_dir = Paths::config_dir();
    let config = Config::load(config_dir.as_deref())?;
    match args.action.unwrap_or(Action::List) {
        Action::List => {
            for (name, settings, source) in config.all() {
                let mark = if source == Source::User { " (yours)" } else { "" };
                println!("{name:<12} {}{mark}", summary(&settings));
            }
        }
        Action::Show { name } => {
            let (settings, source) = config.preset(&name)?;
            println!("# {name} ({})", if source == Source::User { "yours" } else { "built-in" });
            println!("{}", toml::to_string_pretty(&settings)?.trim_end());
        }
        Action::Save { name, from, settings: changes } => {
            let (mut settings, _) = config.preset(&from)?;
            changes.apply(&mut settings)?;
            let (_, path) = Config::update(config_dir.as_deref(), |c| c.save_preset(&name, settings.clone()))?;
            println!("saved preset {name} ({}) in {}", summary(&settings), path.display());
        }
        Action::Delete { name } => {
            Config::update(config_dir.as_deref(), |c| c.delete_preset(&name))?;
            println!("deleted preset {name}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
