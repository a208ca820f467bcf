//! `nightshift service enable|disable|status`: the systemd user service that runs `nightshift
//! restore --keep` at login, and at boot with lingering: it restores what a reboot ended, then
//! stays to take over the sessions of any Nightshift that dies or hangs (the app does the same
//! while it runs; both claim in the journal, so running both is safe). `make install` and the Debian package ship the unit; `enable` writes one
//! that runs this very binary into `$XDG_CONFIG_HOME/systemd/user` (so it works from any install)
//! and enables it with `systemctl --user`. Nothing else of the user's is touched. The service
//! manager is reached through [`nightshift::platform::Services`].

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use nightshift::platform::{Os, Services};

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
    /// Run `nightshift restore --keep` at every login (and at boot with lingering), restarted on failure
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
            manage(&["daemon-reload"], &path)?;
            manage(&["enable", UNIT], &path)?;
            println!(
                "Enabled {UNIT}: `nightshift restore --keep` runs at every login ({}), and takes over the \
                 sessions of any Nightshift that dies or hangs.",
                path.display()
            );
            println!("{}", linger_words());
        }
        Action::Disable => {
            manage(&["disable", UNIT], &path)?;
            let ours = std::fs::read_to_string(&path).is_ok_and(|t| t.starts_with(WRITTEN));
            if ours {
                std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
                manage(&["daemon-reload"], &path)?;
            }
            println!("Disabled {UNIT}: nothing is restored at login any more.");
        }
        Action::Status => {
            let state = Os::enabled(UNIT).unwrap_or_else(|| "unknown (systemctl --user cannot be reached)".into());
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

/// Where a user's own units go (`$XDG_CONFIG_HOME/systemd/user`).
fn unit_dir() -> anyhow::Result<PathBuf> {
    Os::service_dir().map_err(anyhow::Error::msg)
}

/// The service manager told to do `args`, or a one-line error naming what failed and the fix.
fn manage(args: &[&str], unit: &Path) -> anyhow::Result<()> {
    Os::manage(args).map_err(|why| {
        anyhow::anyhow!("{why}; in a login session with systemd, run it yourself (the unit is {})", unit.display())
    })
}

/// Whether the service also starts at boot, without a login, and how to make it so.
fn linger_words() -> String {
    let user = std::env::var("USER").unwrap_or_default();
    match Os::start_at_boot() {
        Some(true) => "Lingering is on: it also starts at boot, before anyone logs in.".to_string(),
        _ => format!(
            "At boot it waits for your login. On a machine nobody logs in to (a headless server), let it start at \
             boot too: sudo loginctl enable-linger {user}"
        ),
    }
}
