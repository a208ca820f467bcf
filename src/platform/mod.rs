//! What Nightshift asks of the operating system, in one place: a port to another system is a
//! folder beside `linux/` that gives the same things, chosen here by `cfg`.
//!
//! Each seam is a small trait, implemented by [`Os`] for the system this build is for; callers
//! name the trait's function (`Os::alive(pid)`), so a missing piece of a port is a compile error
//! that names it, not a search:
//! - [`Processes`]: whether a process runs, is a Nightshift, or was started for a session (Linux:
//!   `kill(pid, 0)` and `/proc`);
//! - [`Secrets`]: a secret the desktop's keyring keeps (Linux: the Secret Service over D-Bus);
//! - [`Desktop`]: a tray host, a notification service, the login session's PATH (Linux: the
//!   freedesktop D-Bus names, systemd's user manager);
//! - [`Power`]: whether the machine can be kept awake, whether it is on battery, what its lid does,
//!   whether it may suspend and be woken by an alarm (Linux: logind, UPower and `nightshift-wake`);
//! - [`Services`]: the user's service manager, which runs `nightshift restore` at login (Linux: a
//!   systemd user unit, and logind's lingering for boot);
//! - [`Sandboxes`]: whether an agent's own sandbox can run (Linux: bubblewrap with user
//!   namespaces, and socat).
//!
//! Already portable, and so not here: keeping the machine awake (the `keepawake` crate: logind on
//! Linux, IOKit on macOS, `SetThreadExecutionState` on Windows), suspends (`power`: a gap between
//! the wall clock and the monotonic one), the state, config and log folders (the `directories`
//! crate, XDG here). Still Unix outside this folder: the PTYs (`pty`), and the unit file's text
//! that `nightshift service` writes (`packaging/nightshift-restore.service`).

#[cfg(target_os = "linux")]
mod linux;

#[cfg(target_os = "linux")]
pub use linux::Linux as Os;

/// The running processes, as the system tells them.
pub trait Processes {
    /// Whether a process with this pid exists (even one this user may not signal).
    fn alive(pid: i64) -> bool;
    /// Whether `pid` is a running Nightshift (the CLI, or the app): after a reboot an old pid is
    /// often some other program's.
    fn is_nightshift(pid: i64) -> bool;
    /// Whether `pid` was started with `variable` = `value` in its environment (a session's agent).
    fn started_with(pid: u32, variable: &str, value: &str) -> bool;
}

/// What a lookup in the desktop's keyring found.
#[derive(Clone, PartialEq, Eq)]
pub enum Found {
    /// No keyring runs, or it holds no such item.
    Nothing,
    /// The item is there but locked: the user's keyring must be unlocked first.
    Locked,
    Secret(String),
}

/// Never the secret: a `Found` may reach a log line.
impl std::fmt::Debug for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Nothing => f.write_str("Nothing"),
            Self::Locked => f.write_str("Locked"),
            Self::Secret(_) => f.write_str("Secret(<redacted>)"),
        }
    }
}

/// Secrets the desktop's keyring keeps; only lookups, the user stores them with the keyring's own
/// tools.
pub trait Secrets {
    /// Whether the keyring holds an item with `attributes`, without reading its secret (no prompt,
    /// no access request): [`Found::Secret`] carries an empty string when it does, unlocked.
    fn holds(attributes: &[(&str, &str)]) -> Found;
    /// The secret of the first unlocked item whose attributes include all of `attributes`; may be
    /// called from async code.
    fn lookup(attributes: &[(&str, &str)]) -> Result<Found, String>;
}

/// The desktop session's services.
pub trait Desktop {
    /// Whether a tray host runs, for the tray icon.
    fn tray_host() -> bool;
    /// Whether a notification service runs, for the pop-ups.
    fn notifications() -> bool;
    /// The PATH of programs started at login (the tray app's), when the session says.
    fn session_path() -> Option<std::ffi::OsString>;
}

/// The machine's power.
pub trait Power {
    /// Whether a service runs that keeps the machine awake on request.
    fn can_stay_awake() -> bool;
    /// Whether the machine runs on battery; `None` when unknown.
    fn on_battery() -> Option<bool>;
    /// Whether the machine may suspend (logind's `CanSuspend`); `None` when it cannot be asked.
    fn can_suspend() -> Option<bool>;
    /// The wake alarm's helper, once it showed it can arm an alarm; or why it cannot, in one line
    /// with the fix.
    fn wake_helper() -> Result<std::path::PathBuf, String>;
    /// What closing the lid does on this power (`suspend`, `ignore`, …); `None` without a lid, or
    /// when unknown.
    fn lid_action(on_battery: Option<bool>) -> Option<String>;
}

/// The user's service manager, which starts a program at login.
pub trait Services {
    /// Where the user's own service files go.
    fn service_dir() -> Result<std::path::PathBuf, String>;
    /// Asks the service manager to do `args` (`daemon-reload`, `enable UNIT`); the error is one
    /// line naming the command and why it failed.
    fn manage(args: &[&str]) -> Result<(), String>;
    /// Whether `unit` is enabled, in the manager's own word; `None` when it cannot be asked.
    fn enabled(unit: &str) -> Option<String>;
    /// Whether the user's services also start at boot, before anyone logs in; `None` when unknown.
    fn start_at_boot() -> Option<bool>;
}

/// The agents' own sandboxes, and what they need of the system.
pub trait Sandboxes {
    /// Whether Claude Code's sandbox can run here; if not, why, with the fix, in one line.
    fn claude_sandbox() -> Result<(), String>;
}

/// A program's stdout, or why not; killed after `limit` (a service that hangs must not hang a
/// check).
pub fn run_bounded(cmd: &mut std::process::Command, limit: std::time::Duration) -> Result<String, String> {
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("could not run: {e}"))?;
    let deadline = std::time::Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let mut text = String::new();
                if let Some(mut stdout) = child.stdout.take() {
                    let _ = std::io::Read::read_to_string(&mut stdout, &mut text);
                }
                return if status.success() { Ok(text) } else { Err(format!("failed ({status})")) };
            }
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("did not answer within {} s", limit.as_secs()));
            }
        }
    }
}
