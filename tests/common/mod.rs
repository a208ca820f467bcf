//! Helpers shared by the integration tests: temp state, the real binary, bounded waits.
#![allow(dead_code)]

pub mod claude;
pub mod codex;
pub mod hosts;
pub mod ntfy;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The `nightshift` binary cargo built for these tests.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_nightshift"))
}

/// The fake agent (`examples/replay_agent.rs`), built with the tests (`cargo test` builds the
/// examples; a run of one test file alone builds it here).
pub fn replay_agent() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().unwrap().parent().unwrap().join("examples/replay_agent");
    if !path.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let ok = Command::new(cargo)
            .args(["build", "--example", "replay_agent"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .unwrap()
            .success();
        assert!(ok && path.exists(), "could not build the replay agent at {}", path.display());
    }
    path
}

/// A private state and runtime directory for one test.
pub struct Env {
    pub dir: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Self {
        Self { dir: tempfile::tempdir().expect("temp dir") }
    }

    pub fn state_dir(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    pub fn runtime_dir(&self) -> PathBuf {
        self.dir.path().join("run")
    }

    /// A supervisor in this process over this environment's journal, on the system clock.
    pub fn supervisor(&self) -> nightshift::Supervisor {
        std::fs::create_dir_all(self.state_dir()).unwrap();
        let store = nightshift::store::Store::open(&self.state_dir().join("journal.sqlite3")).unwrap();
        nightshift::Supervisor::new(store, std::sync::Arc::new(nightshift::clock::SystemClock))
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `nightshift ARGS` with this test's directories.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin());
        cmd.args(args)
            .env("NIGHTSHIFT_STATE_DIR", self.state_dir())
            .env("NIGHTSHIFT_RUNTIME_DIR", self.runtime_dir())
            .env("NIGHTSHIFT_CONFIG_DIR", self.dir.path().join("config"))
            .env_remove("NIGHTSHIFT_LOG")
            .current_dir(self.dir.path());
        cmd
    }

    /// Runs `nightshift ARGS` to completion; panics with its output when it could not run.
    pub fn output(&self, args: &[&str]) -> std::process::Output {
        self.cmd(args).output().expect("run nightshift")
    }

    pub fn stdout(&self, args: &[&str]) -> String {
        let out = self.output(args);
        assert!(out.status.success(), "nightshift {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("utf-8 output")
    }

    /// Starts `nightshift run --events FILE -- bash -c SCRIPT` in the background; returns it with
    /// the events file and, once the session runs, its id.
    pub fn start_background(&self, script: &str) -> (std::process::Child, PathBuf, String) {
        let events = self.path("events.jsonl");
        let child = self
            .cmd(&["run", "--events", events.to_str().unwrap(), "--", "bash", "-c", script])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let id = wait_for("the running event", Duration::from_secs(10), || {
            read_events(&events)
                .iter()
                .find(|e| e["state"] == "running")
                .map(|e| e["session"].as_str().unwrap().to_string())
        });
        (child, events, id)
    }

    /// The journal's events as JSON values.
    pub fn journal(&self) -> Vec<serde_json::Value> {
        json_lines(&self.stdout(&["journal", "--json"]))
    }
}

pub fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// Polls `f` until it returns `Some`, for at most `limit` (real processes take real time).
/// A child process killed when the test is done with it, so a failing test leaves no agent behind.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// A process's peak resident memory (VmHWM), in kB.
pub fn peak_rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
}

pub fn wait_for<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < limit, "timed out after {limit:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The JSON lines written so far to an events file.
pub fn read_events(path: &Path) -> Vec<serde_json::Value> {
    // Read while the run writes: the last line may end mid-character.
    std::fs::read(path).map(|b| json_lines(&String::from_utf8_lossy(&b))).unwrap_or_default()
}

/// Runs the command on a pseudo-terminal and returns all it printed.
pub fn on_a_terminal(mut cmd: portable_pty::CommandBuilder) -> String {
    let pair = portable_pty::native_pty_system().openpty(portable_pty::PtySize::default()).unwrap();
    let mut child = pair
        .slave
        .spawn_command({
            cmd.env("TERM", "xterm-256color");
            cmd
        })
        .unwrap();
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().unwrap();
    let read = std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        // EIO once the child has gone and the slave is closed: that is the end.
        while let Ok(n @ 1..) = std::io::Read::read(&mut reader, &mut buf) {
            out.extend_from_slice(&buf[..n]);
        }
        out
    });
    let status = wait_for("the command on the terminal", Duration::from_secs(20), || child.try_wait().unwrap());
    drop(pair.master);
    let out = String::from_utf8_lossy(&read.join().unwrap()).into_owned();
    assert!(status.success(), "{out}");
    out
}

/// `git ARGS` in `dir` with a test identity, no signing and `main` as the first branch; its stdout.
/// Panics with git's stderr when it fails, unless `may_fail` (a rebase stopped on its conflict).
pub fn git_in(dir: &Path, args: &[&str], may_fail: bool) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success() || may_fail, "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What an earlier `agent` session on account `name` left in the journal under `state_dir`: its
/// last plan windows, 5-hour at `five_hour_pct` (what a switch looks at for the other accounts).
pub fn known_meter(state_dir: &Path, agent: &str, name: &str, five_hour_pct: f64) {
    use nightshift::store::{NewSession, SessionKind, Store};
    let mut store = Store::open(&state_dir.join("journal.sqlite3")).unwrap();
    let id = format!("earlier-{agent}-on-{name}");
    let now = chrono::Utc::now();
    let session = NewSession {
        id: &id,
        kind: SessionKind::Terminal,
        command: &[agent.to_string()],
        cwd: "/",
        agent,
        preset: None,
        created: now - chrono::Duration::minutes(30),
        owner_pid: 1,
        control_socket: None,
    };
    store.create_session(&session).unwrap();
    store.set_account(&id, name, &format!("/accounts/{name}")).unwrap();
    let sample = nightshift::usage::Sample {
        five_hour_pct: Some(five_hour_pct),
        five_hour_resets_at: Some(now + chrono::Duration::hours(3)),
        seven_day_pct: Some(30.0),
        seven_day_resets_at: Some(now + chrono::Duration::days(4)),
        ..Default::default()
    };
    store.record_usage(&id, now - chrono::Duration::minutes(20), &sample).unwrap();
}

/// The environment of a live process, as `KEY=VALUE` strings.
pub fn environ(pid: u64) -> Vec<String> {
    let bytes = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    bytes.split(|b| *b == 0).filter(|v| !v.is_empty()).map(|v| String::from_utf8_lossy(v).into_owned()).collect()
}

/// Makes `workdir` a project with `files`, when any: a git repository with them as its first
/// commit (made the day before: the night's commits are the agent's alone), pushed to `remote` as
/// `main`, its `origin`.
pub fn project(workdir: &Path, files: &[(&str, &str)], remote: Option<&str>) {
    if files.is_empty() {
        return;
    }
    for (name, text) in files {
        let path = workdir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    git_in(workdir, &["init", "-q"], false);
    git_in(workdir, &["add", "-A"], false);
    let made = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "The project as it starts"])
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .current_dir(workdir)
        .status()
        .unwrap();
    assert!(made.success());
    if let Some(url) = remote {
        git_in(workdir, &["remote", "add", "origin", url], false);
        git_in(workdir, &["push", "-q", "origin", "HEAD:main"], false);
    }
}
