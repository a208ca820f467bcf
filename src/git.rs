//! The only place that runs git: what a repository says happened over a range (the digest), a
//! fingerprint of a working tree's content (progress, for the breakers), and which branch it is on
//! (the guard; read from the repository's files, no process).
//!
//! Every call is blocking and may be slow on a big repository: callers on the async runtime run it
//! with `spawn_blocking`. Nothing here writes into the user's repository state: no index, branch,
//! stash or object of theirs changes (a fingerprint hashes into a temporary index and a temporary
//! object directory), and no hook runs. The one exception is what the user asks for in so many
//! words: a session's worktree (`--worktree`) adds its branch and worktree, and its removal.

mod branches;
mod fingerprint;
mod history;
pub mod salvage;
pub mod worktree;

use std::path::Path;
use std::process::Command;

pub use branches::branches;
pub use fingerprint::{fingerprint, Fingerprint};
pub use history::{commits_between, delivery, progress, Commit, Delivery, GitProgress, Stat};

/// Runs `git ARGS` in `dir` with `env` added; its standard output when it succeeded.
fn run(dir: &Path, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Option<String> {
    output(dir, args, env).ok()
}

/// Runs `git ARGS` in `dir` with `env` added: its standard output, or the first line git said on
/// failure.
fn output(dir: &Path, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Result<String, String> {
    let mut cmd = Command::new("git");
    cmd.args(args).current_dir(dir).envs(env.iter().copied());
    // Never a pager, a prompt for credentials, or the user's terminal.
    cmd.env("GIT_TERMINAL_PROMPT", "0").env("GIT_PAGER", "cat").stdin(std::process::Stdio::null());
    let out = cmd.output().map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    Err(said.lines().find(|l| !l.trim().is_empty()).unwrap_or("git failed").trim().to_string())
}
