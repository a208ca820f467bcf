//! The real Codex CLI under `nightshift run`, talking to the project's mock Responses API.
//!
//! The client is the npm package `@openai/codex` (its native binary, from the optional package
//! `@openai/codex-linux-x64`), installed by `make codex-client` into `.cache/codex` (or named by
//! `NIGHTSHIFT_CODEX_BIN`). Without it these tests say so and pass, unless `NIGHTSHIFT_REQUIRE_CODEX`
//! is set, as `make test` sets it.
//!
//! Each run has a `CODEX_HOME` of its own under cargo's target tmp dir (under /tmp the client warns
//! about its helper binaries before it draws), with the config.toml that points it at the mock.
//! The client runs with `--no-daemon`; [`CodexRun::survivors`] finds any process still carrying the
//! run's `CODEX_HOME` (a background `codex app-server` would), and dropping the run ends them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::{read_events, wait_for, Env};

pub const API_KEY: &str = "sk-mock-codex-key-0000000000000000";

/// The installed client, or `None` (after saying why) when the tests should skip.
pub fn client() -> Option<PathBuf> {
    let path = std::env::var_os("NIGHTSHIFT_CODEX_BIN").map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(".cache/codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")
    });
    if path.exists() {
        return Some(path);
    }
    let why = format!("the real Codex CLI is not installed at {}; run `make codex-client`", path.display());
    if std::env::var_os("NIGHTSHIFT_REQUIRE_CODEX").is_some() {
        panic!("{why}");
    }
    eprintln!("skipped: {why}");
    None
}

/// The config.toml of a run: the mock as the model provider, the project trusted (no onboarding
/// screen), and what the client writes there itself already in place (a flag on its first start,
/// and a count of the starts that showed a model notice, set past where it stops counting), so that
/// any change to the file after a run is somebody else's.
pub fn config_toml(base_url: &str, workdir: &Path) -> String {
    account_config_toml(base_url, workdir, None)
}

/// [`config_toml`] for the Codex home of `account`: its requests carry the `x-mock-account`
/// header, by which the mock tells the accounts apart (as the real service does by login).
pub fn account_config_toml(base_url: &str, workdir: &Path, account: Option<&str>) -> String {
    let headers = account.map(|a| format!("http_headers = {{ \"x-mock-account\" = \"{a}\" }}\n")).unwrap_or_default();
    format!(
        r#"model = "gpt-5-codex"
model_provider = "mock"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.mock]
name = "mock"
base_url = "{base_url}"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
{headers}
[projects."{}"]
trust_level = "trusted"

[tui]
screen_reader_detection_done = true

[tui.model_availability_nux]
"gpt-6.1-sol" = 100
"#,
        workdir.display()
    )
}

/// One `nightshift run --agent codex -- codex --no-daemon …` with a private home, against a mock.
pub struct CodexRun {
    pub env: Env,
    /// The run's `CODEX_HOME` (outside /tmp).
    pub home: tempfile::TempDir,
    /// The homes of the other accounts ([`Options::accounts`]).
    pub others: Vec<tempfile::TempDir>,
    pub child: Child,
    pub events: PathBuf,
    pub workdir: PathBuf,
}

#[derive(Default)]
pub struct Options<'a> {
    /// `nightshift run` options.
    pub run_args: &'a [&'a str],
    /// The client's own arguments (after `--no-daemon`).
    pub args: &'a [&'a str],
    /// Lines added to the config.toml (a `notify` of the user's own, …).
    pub config_extra: &'a str,
    /// Named Codex accounts: each a home of its own with its config.toml (the run's own home is
    /// the first), listed in Nightshift's config.toml as `[accounts.NAME] codex = "DIR"`.
    pub accounts: &'a [&'a str],
    /// Nightshift's own `config.toml` (after the accounts' tables).
    pub config: &'a str,
    /// Files of the project (a git repository with them as its first commit, when any).
    pub project: &'a [(&'a str, &'a str)],
    /// The project's `origin` (a URL its first commit is pushed to before the start, as `main`).
    pub remote: Option<&'a str>,
    /// The mock Messages API a Claude the work may move to talks to: its config directory is made
    /// (onboarding done, the project trusted) and its environment given to the run.
    pub claude_at: Option<&'a str>,
}

impl CodexRun {
    pub fn start(client: &Path, base_url: &str, opts: Options<'_>) -> Self {
        let env = Env::new();
        let home =
            tempfile::Builder::new().prefix("codex-home").tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("CODEX_HOME");
        let user_home = env.path("home");
        let workdir = env.path("project");
        for dir in [&user_home, &workdir] {
            std::fs::create_dir_all(dir).unwrap();
        }
        super::project(&workdir, opts.project, opts.remote);
        let first = opts.accounts.first().copied();
        let config = format!("{}{}", opts.config_extra, account_config_toml(base_url, &workdir, first));
        std::fs::write(home.path().join("config.toml"), config).unwrap();
        let mut accounts = String::new();
        let mut others = Vec::new();
        for (i, name) in opts.accounts.iter().enumerate() {
            let dir = if i == 0 {
                home.path().to_path_buf()
            } else {
                let other = tempfile::Builder::new()
                    .prefix(&format!("codex-home-{name}"))
                    .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
                    .expect("an account's CODEX_HOME");
                std::fs::write(other.path().join("config.toml"), account_config_toml(base_url, &workdir, Some(name)))
                    .unwrap();
                let dir = other.path().to_path_buf();
                others.push(other);
                dir
            };
            accounts.push_str(&format!("[accounts.{name}]\ncodex = \"{}\"\n", dir.display()));
        }
        if !accounts.is_empty() || !opts.config.is_empty() {
            std::fs::create_dir_all(env.path("config")).unwrap();
            std::fs::write(env.path("config").join("config.toml"), accounts + opts.config).unwrap();
        }

        let events = env.path("events.jsonl");
        let mut cmd = nightshift(&env, home.path());
        if let Some(base_url) = opts.claude_at {
            let claude = super::claude::ClientHome::new(&env, base_url, super::claude::Auth::ApiKey, &[]);
            let own = ["HOME", "PATH", "TERM", "LANG"];
            cmd.envs(
                claude.vars.into_iter().filter(|(k, _)| !own.contains(&k.as_str()) && !k.starts_with("NIGHTSHIFT_")),
            );
        }
        cmd.args(["run", "--agent", "codex", "--events", events.to_str().unwrap(), "--cols", "120", "--rows", "40"])
            .args(opts.run_args)
            .arg("--")
            .arg(client)
            .arg("--no-daemon")
            .args(opts.args);
        let child = cmd.spawn().expect("start nightshift run");
        Self { env, home, others, child, events, workdir }
    }

    /// `nightshift ARGS` in this run's environment (its homes, state and runtime directories), in
    /// the project, detached from any terminal, its stderr piped.
    pub fn nightshift(&self, args: &[&str]) -> Command {
        let mut cmd = nightshift(&self.env, self.home.path());
        cmd.args(args);
        cmd
    }

    pub fn config_path(&self) -> PathBuf {
        self.home.path().join("config.toml")
    }

    pub fn events(&self) -> Vec<Value> {
        read_events(&self.events)
    }

    pub fn session(&self) -> String {
        wait_for("the session to start", Duration::from_secs(20), || {
            self.events().first().and_then(|e| e["session"].as_str().map(String::from))
        })
    }

    /// The activity states so far, with when they happened.
    pub fn states(&self) -> Vec<(SystemTime, String, Value)> {
        self.events()
            .into_iter()
            .filter(|e| e["event"] == "state")
            .map(|e| {
                let ts = chrono::DateTime::parse_from_rfc3339(e["ts"].as_str().unwrap()).unwrap();
                (SystemTime::from(ts), e["state"].as_str().unwrap().to_string(), e)
            })
            .collect()
    }

    /// Waits for a state event after `after` (events so far are skipped by index).
    pub fn wait_state(&self, state: &str, after: usize, limit: Duration) -> (usize, SystemTime, Value) {
        wait_for(&format!("state {state}"), limit, || {
            self.states()
                .into_iter()
                .enumerate()
                .skip(after)
                .find(|(_, (_, s, _))| s == state)
                .map(|(i, (t, _, e))| (i, t, e))
        })
    }

    /// Types into the session the way a user's script would: `nightshift send`.
    pub fn send(&self, text: &str, enter: bool) {
        let id = self.session();
        let mut args = vec!["send"];
        if enter {
            args.push("--enter");
        }
        args.extend(["--", &id, text]);
        let out = self.env.cmd(&args).output().unwrap();
        assert!(out.status.success(), "nightshift send: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// The Codex conversation ids the journal recorded, in order.
    pub fn conversations(&self) -> Vec<String> {
        self.events()
            .into_iter()
            .filter(|e| e["event"] == "conversation")
            .filter_map(|e| e["id"].as_str().map(String::from))
            .collect()
    }

    /// The rollout files the client wrote for its threads (`sessions/YYYY/MM/DD/rollout-…-<id>.jsonl`).
    pub fn rollouts(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, out);
                } else if path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("rollout-")) {
                    out.push(path);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.home.path().join("sessions"), &mut out);
        out.sort();
        out
    }

    /// Processes that still carry one of this run's `CODEX_HOME`s (the client, or a daemon it left).
    pub fn survivors(&self) -> Vec<(i32, String)> {
        let needles: Vec<String> = std::iter::once(&self.home)
            .chain(&self.others)
            .map(|h| format!("CODEX_HOME={}", h.path().display()))
            .collect();
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
            let Ok(environ) = std::fs::read(entry.path().join("environ")) else { continue };
            if environ.split(|b| *b == 0).any(|v| needles.iter().any(|n| v == n.as_bytes())) {
                let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
                let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
                found.push((pid, cmdline.trim().to_string()));
            }
        }
        found
    }

    /// Ends `nightshift run` (SIGTERM, as a user's Ctrl-C would) and waits for it.
    pub fn stop(&mut self) -> Option<std::process::ExitStatus> {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let deadline = std::time::Instant::now() + Duration::from_secs(15);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        self.child.wait().ok()
    }
}

/// `nightshift` with a test's directories, `codex_home` as its `CODEX_HOME` and the mock's key, in
/// the project, its stderr piped.
pub fn nightshift(env: &Env, codex_home: &Path) -> Command {
    let mut cmd = Command::new(super::bin());
    cmd.env_clear()
        .env("HOME", env.path("home"))
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("TERM", "xterm-256color")
        .env("LANG", "C.UTF-8")
        .env("CODEX_HOME", codex_home)
        .env("OPENAI_API_KEY", API_KEY)
        .env("NIGHTSHIFT_STATE_DIR", env.state_dir())
        .env("NIGHTSHIFT_RUNTIME_DIR", env.runtime_dir())
        .env("NIGHTSHIFT_CONFIG_DIR", env.path("config"))
        .current_dir(env.path("project"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

/// The command line of a live process.
pub fn argv(pid: u64) -> Vec<String> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    cmdline.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect()
}

impl Drop for CodexRun {
    fn drop(&mut self) {
        self.stop();
        // Whatever the client left behind with this home is this test's to end.
        for (pid, _) in self.survivors() {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    }
}
