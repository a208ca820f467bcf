//! `nightshift service enable|disable|status`: the systemd user service that runs `nightshift
//! restore` at login, and at boot with lingering, for a machine without the tray app (a headless
//! server, an ssh box). `make install` and the Debian package ship the unit; `enable` writes one
//! that runs this very binary into `$XDG_CONFIG_HOME/systemd/user` (so it works from any install)
//! and enables it with `systemctl --user`. Nothing else of the user's is touched.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::Context as _;

/// The unit's name, as `make install`, the package and this command give it.
pub const UNIT: &str = "nightshift-restore.service";
/// The unit as shipped, with `@NIGHTSHIFT@` for the binary.
const TEMPLATE: &str = include_str!("../../packaging/nightshift-restore.service");
/// The first line of a unit this command wrote (so `disable` removes only its own).
const WRITTEN: &str = "# Written by `nightshift service enable`; `nightshift service disable` removes it.";

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Run `nightshift restore` at every login (and at boot with lingering), restarted on failure
    Enable,
    /// Stop running it at login, and remove the unit `enable` wrote
    Disable,
    /// Whether it is enabled, and whether it also starts at boot
    Status,
}

pub fn run(state_dir: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let dir = unit_dir()?;
    let path = dir.join(UNIT);
    match args.action {
        Action::Enable => {
            let exe = std::env::current_exe().context("cannot find the nightshift binary to run at login")?;
            std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            std::fs::write(&path, unit(&exe, state_dir.as_deref()))
                .with_context(|| format!("cannot write {}", path.display()))?;
            systemctl(&["daemon-reload"], &path)?;
            systemctl(&["enable", UNIT], &path)?;
            println!("Enabled {UNIT}: `nightshift restore` runs at every login ({}).", path.display());
            println!("{}", linger_words());
        }
        Action::Disable => {
            systemctl(&["disable", UNIT], &path)?;
            let ours = std::fs::read_to_string(&path).is_ok_and(|t| t.starts_with(WRITTEN));
            if ours {
                std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
                systemctl(&["daemon-reload"], &path)?;
            }
            println!("Disabled {UNIT}: nothing is restored at login any more.");
        }
        Action::Status => {
            let state = Command::new("systemctl")
                .args(["--user", "is-enabled", UNIT])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_default();
            let state =
                if state.is_empty() { "unknown (systemctl --user cannot be reached)".to_string() } else { state };
            println!("{UNIT}: {state}");
            println!("{}", linger_words());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The unit that runs `exe restore` (with the state directory, when it is not the default one).
fn unit(exe: &Path, state_dir: Option<&Path>) -> String {
    let mut command = nightshift::pty::shell_words(&[exe.display().to_string()]);
    if let Some(dir) = state_dir {
        command = format!("{command} --state-dir {}", nightshift::pty::shell_words(&[dir.display().to_string()]));
    }
    format!("{WRITTEN}\n{}", TEMPLATE.replace("@NIGHTSHIFT@", &command))
}

/// `$XDG_CONFIG_HOME/systemd/user`, where a user's own units go.
fn unit_dir() -> anyhow::Result<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| directories::BaseDirs::new().map(|b| b.config_dir().to_path_buf()))
        .context("no home directory to keep the user unit in; set XDG_CONFIG_HOME")?;
    Ok(config.join("systemd").join("user"))
}

/// `systemctl --user ARGS`, or a one-line error naming what failed and the fix.
fn systemctl(args: &[&str], unit: &Path) -> anyhow::Result<()> {
    let out = Command::new("systemctl").arg("--user").args(args).output();
    let why = match out {
        Ok(o) if o.status.success() => return Ok(()),
        Ok(o) => String::from_utf8_lossy(&o.stderr).lines().next().unwrap_or("it failed").trim().to_string(),
        Err(e) => format!("cannot run systemctl: {e}"),
    };
    anyhow::bail!(
        "`systemctl --user {}` did not work ({why}); in a login session with systemd, run it yourself (the unit is {})",
        args.join(" "),
        unit.display()
    )
}

/// Whether the service also starts at boot, without a login, and how to make it so.
fn linger_words() -> String {
    let user = std::env::var("USER").unwrap_or_default();
    let linger = Command::new("loginctl")
        .args(["show-user", &user, "--property=Linger", "--value"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    match linger.as_str() {
        "yes" => "Lingering is on: it also starts at boot, before anyone logs in.".to_string(),
        _ => format!(
            "At boot it waits for your login. On a machine nobody logs in to (a headless server), let it start at \
             boot too: sudo loginctl enable-linger {user}"
        ),
    }
}
