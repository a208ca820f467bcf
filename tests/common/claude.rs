//! The real Claude Code client under `nightshift run`, talking to the project's mock API.
//!
//! The client is the npm package `@anthropic-ai/claude-code`, installed by `make claude-client` into
//! `.cache/claude-code` (or named by `NIGHTSHIFT_CLAUDE_BIN`). Without it these tests say so and
//! pass, unless `NIGHTSHIFT_REQUIRE_CLAUDE` is set, as `make test` sets it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::{read_events, wait_for, Env};

pub const OAUTH_TOKEN: &str = "sk-ant-oat01-mock-token-000000000000000000000000";
pub const API_KEY: &str = "sk-ant-api03-mock-key-0000000000000000000000000000";

/// The installed client, or `None` (after saying why) when the tests should skip.
pub fn client() -> Option<PathBuf> {
    let path = std::env::var_os("NIGHTSHIFT_CLAUDE_BIN").map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(".cache/claude-code/node_modules/@anthropic-ai/claude-code/bin/claude.exe")
    });
    if path.exists() {
        return Some(path);
    }
    let why = format!("the real Claude Code client is not installed at {}; run `make claude-client`", path.display());
    if std::env::var_os("NIGHTSHIFT_REQUIRE_CLAUDE").is_some() {
        panic!("{why}");
    }
    eprintln!("skipped: {why}");
    None
}

/// How the client authenticates: as a subscriber (OAuth token) or with an API key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    Subscriber,
    ApiKey,
}

/// One `nightshift run --agent claude -- claude …` in a private home, against `base_url`.
pub struct ClaudeRun {
    pub env: Env,
    pub child: Child,
    pub events: PathBuf,
    pub workdir: PathBuf,
    /// The environment the run was started with (the client's home, the mock API's address).
    pub vars: Vec<(String, String)>,
}

pub struct Options<'a> {
    /// `nightshift run` options.
    pub run_args: &'a [&'a str],
    /// The client's own arguments.
    pub args: &'a [&'a str],
    pub cols: u16,
    pub rows: u16,
    pub auth: Auth,
    pub extra_env: &'a [(&'a str, &'a str)],
    /// The client's user `settings.json` in its (test-owned) config directory.
    pub client_settings: Option<&'a str>,
    /// Accounts of `config.toml` (name, OAuth token): each a config directory of its own whose
    /// `.credentials.json` holds the token, as a subscriber's login leaves it. With any, the
    /// client gets no token in its environment: each account's requests carry its own.
    pub accounts: &'a [(&'a str, &'a str)],
    /// Files of the project (a git repository with them as its first commit, when any).
    pub project: &'a [(&'a str, &'a str)],
    /// Nightshift's own `config.toml` (appended to the accounts' tables).
    pub config: &'a str,
    /// Other files of Nightshift's configuration directory (name, text), each its owner's alone
    /// (the phone's key).
    pub config_files: &'a [(&'a str, &'a str)],
    /// A folder of the project to start in, instead of its top.
    pub subdir: Option<&'a str>,
    /// The project's `origin` (a URL its first commit is pushed to before the start, as `main`).
    pub remote: Option<&'a str>,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Self {
            run_args: &[],
            args: &[],
            cols: 120,
            rows: 40,
            auth: Auth::Subscriber,
            extra_env: &[],
            client_settings: None,
            accounts: &[],
            project: &[],
            config: "",
            config_files: &[],
            subdir: None,
            remote: None,
        }
    }
}

/// A private home for the client: its config directory (onboarding done, the project trusted),
/// and the environment that points it at the mock API.
pub struct ClientHome {
    pub home: PathBuf,
    pub config: PathBuf,
    pub workdir: PathBuf,
    pub vars: Vec<(String, String)>,
}

impl ClientHome {
    pub fn new(env: &Env, base_url: &str, auth: Auth, trusted: &[&Path]) -> Self {
        let home = env.path("home");
        let config = env.path("claude-config");
        let workdir = env.path("project");
        for dir in [&home, &config, &workdir] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let key = match auth {
            Auth::Subscriber => OAUTH_TOKEN,
            Auth::ApiKey => API_KEY,
        };
        let project = serde_json::json!({"hasTrustDialogAccepted": true,
            "hasCompletedProjectOnboarding": true, "projectOnboardingSeenCount": 1, "allowedTools": []});
        let mut projects = serde_json::Map::new();
        for dir in std::iter::once(workdir.as_path()).chain(trusted.iter().copied()) {
            projects.insert(dir.display().to_string(), project.clone());
        }
        // Without this the first run tries onboarding against the public API host.
        let state = serde_json::json!({
            "hasCompletedOnboarding": true, "lastOnboardingVersion": "2.1.332", "lastReleaseNotesSeen": "2.1.332",
            "theme": "dark", "bypassPermissionsModeAccepted": true,
            "customApiKeyResponses": {"approved": [&key[key.len() - 20..]], "rejected": []},
            "projects": projects
        });
        std::fs::write(config.join(".claude.json"), state.to_string()).unwrap();
        let mut vars: Vec<(String, String)> = [
            ("HOME", home.display().to_string()),
            ("PATH", std::env::var("PATH").unwrap_or_default()),
            ("TERM", "xterm-256color".into()),
            ("LANG", "C.UTF-8".into()),
            ("CLAUDE_CONFIG_DIR", config.display().to_string()),
            ("ANTHROPIC_BASE_URL", base_url.into()),
            ("DISABLE_AUTOUPDATER", "1".into()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
            ("DISABLE_TELEMETRY", "1".into()),
            ("DISABLE_ERROR_REPORTING", "1".into()),
            ("CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY", "1".into()),
            ("NIGHTSHIFT_STATE_DIR", env.state_dir().display().to_string()),
            ("NIGHTSHIFT_RUNTIME_DIR", env.runtime_dir().display().to_string()),
            ("NIGHTSHIFT_CONFIG_DIR", env.path("config").display().to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        vars.push(match auth {
            Auth::Subscriber => ("CLAUDE_CODE_OAUTH_TOKEN".into(), key.into()),
            Auth::ApiKey => ("ANTHROPIC_API_KEY".into(), key.into()),
        });
        Self { home, config, workdir, vars }
    }

    /// A config directory of account `name` beside the client's own: the same onboarding, and
    /// `token` as its subscriber login (`.credentials.json`, 0600, far from expiring).
    pub fn account(&self, env: &Env, name: &str, token: &str) -> PathBuf {
        let dir = env.path(&format!("account-{name}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(self.config.join(".claude.json"), dir.join(".claude.json")).unwrap();
        let expires = (SystemTime::now() + Duration::from_secs(30 * 86400))
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let login = serde_json::json!({"claudeAiOauth": {"accessToken": token, "refreshToken": "sk-ant-ort01-mock",
            "expiresAt": expires, "scopes": ["user:inference", "user:profile"], "subscriptionType": "max"}});
        let path = dir.join(".credentials.json");
        std::fs::write(&path, login.to_string()).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        dir
    }

    /// `cmd` with only this environment.
    pub fn apply<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        cmd.env_clear().envs(self.vars.iter().map(|(k, v)| (k, v)))
    }
}

impl ClaudeRun {
    pub fn start(client: &Path, base_url: &str, opts: Options<'_>) -> Self {
        let env = Env::new();
        let client_home = ClientHome::new(&env, base_url, opts.auth, &[]);
        let (config, workdir) = (client_home.config.clone(), client_home.workdir.clone());
        if let Some(settings) = opts.client_settings {
            std::fs::write(config.join("settings.json"), settings).unwrap();
        }
        super::project(&workdir, opts.project, opts.remote);
        let mut client_home = client_home;
        if !opts.config.is_empty() {
            std::fs::create_dir_all(env.path("config")).unwrap();
            std::fs::write(env.path("config").join("config.toml"), opts.config).unwrap();
        }
        for (name, text) in opts.config_files {
            use std::os::unix::fs::PermissionsExt;
            let path = env.path("config").join(name);
            std::fs::create_dir_all(env.path("config")).unwrap();
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        if !opts.accounts.is_empty() {
            client_home.vars.retain(|(k, _)| k != "CLAUDE_CODE_OAUTH_TOKEN");
            let mut toml = String::new();
            for (name, token) in opts.accounts {
                let dir = client_home.account(&env, name, token);
                toml.push_str(&format!("[accounts.{name}]\nclaude = \"{}\"\n", dir.display()));
            }
            std::fs::create_dir_all(env.path("config")).unwrap();
            toml.push_str(opts.config);
            std::fs::write(env.path("config").join("config.toml"), toml).unwrap();
        }

        let events = env.path("events.jsonl");
        let (cols, rows) = (opts.cols.to_string(), opts.rows.to_string());
        let mut cmd = Command::new(super::bin());
        cmd.args(["run", "--agent", "claude", "--events", events.to_str().unwrap(), "--cols", &cols, "--rows", &rows])
            .args(opts.run_args)
            .arg("--")
            .arg(client)
            .args(opts.args)
            .current_dir(opts.subdir.map_or_else(|| workdir.clone(), |sub| workdir.join(sub)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        client_home.apply(&mut cmd);
        // Nightshift holds the client's updater itself: the run is not given the switch.
        cmd.env_remove("DISABLE_AUTOUPDATER");
        for (k, v) in opts.extra_env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("start nightshift run");
        let mut vars = client_home.vars;
        vars.extend(opts.extra_env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        Self { env, child, events, workdir, vars }
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
        let mut cmd = self.env.cmd(&args);
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "nightshift send: {}", String::from_utf8_lossy(&out.stderr));
    }

    pub fn send_keys(&self, text: &str) {
        self.send(text, false);
    }

    /// `nightshift ARGS` in the run's environment (the client's home, the mock API).
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = self.env.cmd(args);
        cmd.envs(self.vars.iter().map(|(k, v)| (k, v)));
        cmd
    }
}

impl Drop for ClaudeRun {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
