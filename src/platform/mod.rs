//! What Nightshift asks of the operating system, in one place: a port to another system is a
//! folder beside `linux/` that gives the same things, chosen here by `cfg`.
//!
//! Each seam is a small trait, implemented by [`Os`] for the system this build is for; callers
//! name the trait's function (`Os::alive(pid)`), so a missing piece of a port is a compile error
//! that names it, not a search:
//! - [`Processes`]: whether a process runs, is a Nightshift, or was started for a session (Linux:
//!   `kill(pid, 0)` and `/proc`);
//! - [`Secrets`]: a secret the desktop's keyring keeps (Linux: the Secret Service over D-Bus).
//!
//! Already portable, and so not here: keeping the machine awake (the `keepawake` crate: logind on
//! Linux, IOKit on macOS, `SetThreadExecutionState` on Windows), suspends (`power`: a gap between
//! the wall clock and the monotonic one), the state, config and log folders (the `directories`
//! crate, XDG here). Still Linux-only outside this folder: the systemd user unit of `nightshift
//! service` (`src/cli/service.rs`), the doctor's logind and UPower checks, and the PTYs (`pty`,
//! Unix).

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
