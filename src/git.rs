//! The only place that runs git: what a repository says happened over a range (the digest), a
//! fingerprint of a working tree's content (progress, for the breakers), what a handoff Nightshift
//! builds reads of the folder (`gather`), and which branch it is on
//! (the guard; read from the repository's files, no process), and where it fetches and pushes (the
//! network fence: remotes and submodules with git's own URL rewrites applied).
//!
//! Every call is blocking and may be slow on a big repository: callers on the async runtime run it
//! with `spawn_blocking`. Nothing here writes into the user's repository state: no index, branch,
//! stash or object of theirs changes (a fingerprint hashes into a temporary index and a temporary
//! object directory), and no hook runs. The one exception is what the user asks for in so many
//! words: a session's worktree (`--worktree`) adds its branch and worktree, and its removal.

mod branches;
mod fingerprint;
mod gather;
mod history;
mod remotes;
pub mod salvage;
pub mod worktree;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub use branches::branches;
pub use fingerprint::{fingerprint, Fingerprint};
pub use gather::gather;
pub use history::{commits_between, delivery, progress, Commit, Delivery, GitProgress, Stat};
pub use remotes::{remotes, Remote, Remotes, Submodule};

/// What every git call here runs with, whatever the repository's own config says: the agent can
/// write that config, and these calls run outside its sandbox. No hook, no fsmonitor (a command),
/// no automatic gc or maintenance, no pager, nothing signed. A repository's filters are turned off
/// driver by driver ([`filters_off`]), and the porcelain that diffs gets `--no-ext-diff
/// --no-textconv`.
const SAFE: [&str; 12] = [
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
    "-c",
    "core.pager=cat",
    "-c",
    "commit.gpgSign=false",
];

/// The longest any git call may take when its caller sets no deadline of its own: a repository
/// the agent made can hang git (a FIFO where git reads a file), and nothing may wait forever.
pub const DEFAULT_LIMIT: Duration = Duration::from_secs(300);

/// Runs `git ARGS` in `dir` with `env` added; its standard output when it succeeded.
fn run(dir: &Path, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Option<String> {
    output(dir, args, env).ok()
}

/// Runs `git ARGS` in `dir` with `env` added: its standard output, or the first line git said on
/// failure.
fn output(dir: &Path, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Result<String, String> {
    output_until(dir, args, env, None, Instant::now() + DEFAULT_LIMIT)
}

/// [`output`] with `input` on its standard input, given up (the process group killed) at `until`.
fn output_until(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &std::ffi::OsStr)],
    input: Option<&[u8]>,
    until: Instant,
) -> Result<String, String> {
    let mut all: Vec<String> = SAFE.iter().map(|s| s.to_string()).collect();
    all.extend(filters_off(dir, env, until)?);
    let mut args = args.iter();
    if let Some(sub) = args.next() {
        all.push(sub.to_string());
        if matches!(*sub, "diff" | "log" | "show") {
            all.extend(["--no-ext-diff".to_string(), "--no-textconv".to_string()]);
        }
    }
    all.extend(args.map(|a| a.to_string()));
    let out = spawn(dir, &all, env, input, until)?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    Err(said.lines().find(|l| !l.trim().is_empty()).unwrap_or("git failed").trim().to_string())
}

/// The `-c` settings that turn off every filter driver the repository at `dir` (or the user's
/// config) defines: a clean or process filter is a command git runs on `add`, `status` and `diff`.
fn filters_off(dir: &Path, env: &[(&str, &std::ffi::OsStr)], until: Instant) -> Result<Vec<String>, String> {
    let mut args: Vec<String> = SAFE.iter().map(|s| s.to_string()).collect();
    args.extend(["config", "-z", "--get-regexp", r"^filter\."].map(String::from));
    let out = spawn(dir, &args, env, None, until)?;
    // 1: no such setting; anything else is a config git cannot read, which every call would trip on.
    if !out.status.success() && out.status.code() != Some(1) {
        let said = String::from_utf8_lossy(&out.stderr);
        return Err(said.lines().find(|l| !l.trim().is_empty()).unwrap_or("git config failed").trim().to_string());
    }
    let mut drivers: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .split('\0')
        .filter_map(|entry| {
            let key = entry.split('\n').next()?;
            let (name, _) = key.strip_prefix("filter.")?.rsplit_once('.')?;
            Some(name.to_string())
        })
        .collect();
    drivers.sort();
    drivers.dedup();
    Ok(drivers
        .iter()
        .flat_map(|name| {
            ["clean=", "smudge=", "process=", "required=false"]
                .into_iter()
                .flat_map(move |setting| ["-c".to_string(), format!("filter.{name}.{setting}")])
        })
        .collect())
}

/// Runs git with `args` exactly, in a process group of its own that is killed at `until`.
fn spawn(
    dir: &Path,
    args: &[String],
    env: &[(&str, &std::ffi::OsStr)],
    input: Option<&[u8]>,
    until: Instant,
) -> Result<std::process::Output, String> {
    use std::io::{Read as _, Write as _};
    use std::os::unix::process::CommandExt as _;
    let mut cmd = Command::new("git");
    cmd.args(args).current_dir(dir).envs(env.iter().copied()).process_group(0);
    // Never a pager, a prompt for credentials, or the user's terminal.
    cmd.env("GIT_TERMINAL_PROMPT", "0").env("GIT_PAGER", "cat");
    cmd.stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() });
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("cannot run git: {e}"))?;
    let thread = |f: Box<dyn FnOnce() -> Vec<u8> + Send>| std::thread::Builder::new().name("git-io".into()).spawn(f);
    let stdin = child.stdin.take();
    let feeder = input.map(<[u8]>::to_vec).zip(stdin).map(|(bytes, mut stdin)| {
        thread(Box::new(move || {
            let _ = stdin.write_all(&bytes);
            Vec::new()
        }))
    });
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        thread(Box::new(move || {
            let mut out = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut out);
            }
            out
        }))
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    // No thread to spare (the agent used up the user's process limit): git is not left running.
    let (stdout, stderr, feeder) = match (stdout, stderr, feeder.transpose()) {
        (Ok(o), Ok(e), Ok(f)) => (o, e, f),
        (o, e, f) => {
            let _ = child.kill();
            let _ = child.wait();
            let why = [o.err(), e.err(), f.err()].into_iter().flatten().next().map(|e| e.to_string());
            return Err(format!("no thread to run git with ({})", why.unwrap_or_default()));
        }
    };
    let Some(status) = wait_or_stop(&mut child, until) else {
        // Not joined: whatever it left holding a pipe must not hold this call too.
        drop((stdout, stderr, feeder));
        let what = args.iter().find(|a| !a.starts_with('-') && !a.contains('=')).map_or("git", |a| a.as_str());
        return Err(format!("git {what} did not finish in time and was stopped"));
    };
    if let Some(feeder) = feeder {
        let _ = feeder.join();
    }
    Ok(std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// Waits for `child` (started in a process group of its own) until `until`, looking often at
/// first, then every 50 ms; past it, the whole group is killed and reaped: `None`.
pub(crate) fn wait_or_stop(child: &mut std::process::Child, until: Instant) -> Option<std::process::ExitStatus> {
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < until => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Ok(None) | Err(_) => {
                let group = nix::unistd::Pid::from_raw(child.id() as i32);
                let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
                let _ = child.wait();
                return None;
            }
        }
    }
}
