//! `nightshift doctor` with the real binary: an agent missing from PATH, the pinned real clients
//! read by the drift probe, working directories that are not a repository or are mid-rebase, and
//! the JSON form's schema.

use crate::{common, mock_api};

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::claude::{client, Auth, ClientHome};
use common::Env;
use serde_json::Value;

/// A directory holding only links to the programs named, for a PATH of exactly those.
fn path_of(env: &Env, programs: &[(&str, &Path)]) -> PathBuf {
    let dir = env.path("bin");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, target) in programs {
        std::os::unix::fs::symlink(target, dir.join(name)).unwrap();
    }
    dir
}

fn which(program: &str) -> PathBuf {
    let out = Command::new("sh").args(["-c", &format!("command -v {program}")]).output().unwrap();
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

fn git(dir: &Path, args: &[&str]) {
    common::git_in(dir, args, args[0] == "rebase");
}

/// A repository stopped in the middle of a rebase on a conflict.
fn mid_rebase(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    std::fs::write(dir.join("f"), "one\n").unwrap();
    git(dir, &["add", "f"]);
    git(dir, &["commit", "-qm", "one"]);
    git(dir, &["checkout", "-qb", "topic"]);
    std::fs::write(dir.join("f"), "topic\n").unwrap();
    git(dir, &["commit", "-qam", "topic"]);
    git(dir, &["checkout", "-q", "main"]);
    std::fs::write(dir.join("f"), "main\n").unwrap();
    git(dir, &["commit", "-qam", "main"]);
    git(dir, &["checkout", "-q", "topic"]);
    git(dir, &["rebase", "main"]);
    assert!(dir.join(".git/rebase-merge").exists() || dir.join(".git/rebase-apply").exists(), "the rebase stopped");
}

/// What git says of a repository, and its index file's bytes.
fn git_state(dir: &Path) -> (String, Vec<u8>) {
    let out = Command::new("git").args(["status", "--porcelain=v2", "--branch"]).current_dir(dir).output().unwrap();
    (String::from_utf8_lossy(&out.stdout).into_owned(), std::fs::read(dir.join(".git/index")).unwrap())
}

fn doctor(env: &Env, vars: &[(String, String)], args: &[&str]) -> (i32, String, String) {
    let out = Command::new(common::bin())
        .arg("doctor")
        .args(args)
        .env_clear()
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .env("NIGHTSHIFT_STATE_DIR", env.state_dir())
        .env("NIGHTSHIFT_RUNTIME_DIR", env.runtime_dir())
        .env("NIGHTSHIFT_CONFIG_DIR", env.path("config"))
        // No desktop bus here: the desktop checks are the e2e suite's, on private buses.
        .env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
        .env("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/bus")
        .current_dir(env.dir.path())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn line<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("no line starting {start:?} in:\n{text}"))
}

#[test]
fn an_agent_missing_from_path_fails_with_its_remedy_and_the_json_schema_is_stable() {
    let env = Env::new();
    let bin = path_of(&env, &[("git", &which("git"))]);
    let plain = env.path("plain");
    let rebasing = env.path("rebasing");
    std::fs::create_dir_all(&plain).unwrap();
    mid_rebase(&rebasing);
    let before = git_state(&rebasing);
    let vars = vec![
        ("PATH".to_string(), bin.display().to_string()),
        ("HOME".to_string(), env.path("home").display().to_string()),
    ];
    let cwd = ["--cwd", plain.to_str().unwrap(), "--cwd", rebasing.to_str().unwrap()];
    let (code, text, stderr) = doctor(&env, &vars, &[&cwd[..], &["--agent", "claude"]].concat());
    assert_eq!(code, 1, "{text}{stderr}");
    let missing = line(&text, "FAIL  claude: `claude` is not on this PATH");
    assert!(missing.contains("— install it (npm install -g @anthropic-ai/claude-code), or name it in"), "{missing}");
    assert!(missing.contains("agents/claude.toml: [launch] program = "), "{missing}");
    line(&text, "FAIL  claude: no credentials in");
    line(&text, &format!("WARN  {}: not a git repository", plain.display()));
    let rebase = line(&text, &format!("FAIL  {}: a rebase is in progress", rebasing.display()));
    assert!(rebase.ends_with("— finish it first: git rebase --continue, or --abort"), "{rebase}");
    line(&text, &format!("WARN  {}: no CLAUDE.md", rebasing.display()));
    assert!(text.ends_with("failed: not ready: fix the FAILs\n"), "{text}");
    assert_eq!(git_state(&rebasing), before, "the doctor only reads the repository");

    let (code, json, _) = doctor(&env, &vars, &[&cwd[..], &["--agent", "claude", "--json"]].concat());
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&json).unwrap();
    let keys: BTreeSet<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, BTreeSet::from(["schema", "ok", "counts", "checks"]));
    assert_eq!(v["schema"], 1);
    assert_eq!(v["ok"], false);
    let ids: Vec<&str> = v["checks"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "config.file",
            "harness.claude.path",
            "harness.claude.login",
            "sandbox.claude",
            "state.writable",
            "state.markers",
            "state.disk",
            "cwd.0.git",
            "cwd.0.instructions.claude",
            "cwd.0.permissions",
            "cwd.0.fence",
            "cwd.1.git",
            "cwd.1.operation",
            "cwd.1.instructions.claude",
            "cwd.1.permissions",
            "cwd.1.fence",
            "desktop.display",
            "desktop.tray",
            "desktop.notifications",
            "desktop.logind",
            "power.ac",
            "power.wake",
        ],
        "{json}"
    );
    for c in v["checks"].as_array().unwrap() {
        let fields: BTreeSet<&str> = c.as_object().unwrap().keys().map(String::as_str).collect();
        let status = c["status"].as_str().unwrap();
        assert!(["pass", "warn", "fail"].contains(&status), "{c}");
        let expected: BTreeSet<&str> = if status == "pass" {
            BTreeSet::from(["id", "subject", "status", "detail"])
        } else {
            BTreeSet::from(["id", "subject", "status", "detail", "remedy"])
        };
        assert_eq!(fields, expected, "{c}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pinned_clients_pass_with_their_versions_and_the_drift_probe_reads_them_idle() {
    let Some(claude) = client() else { return };
    let Some(codex) = common::codex::client() else { return };
    let mock = mock_api::MockApi::start().await.expect("the stand-in API starts");
    let env = Env::new();
    // The probe runs in `<state>/doctor/probe`, the same folder every time: trusted once, it shows
    // the prompt rather than the trust question.
    let probe = env.state_dir().join("doctor/probe");
    let home = ClientHome::new(&env, &mock.base_url(), Auth::Subscriber, &[&probe]);
    let codex_home = tempfile::Builder::new().prefix("codex-home").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let config = common::codex::config_toml("http://127.0.0.1:9/v1", &probe);
    std::fs::write(codex_home.path().join("config.toml"), config).unwrap();
    let bin = path_of(&env, &[("claude", &claude), ("codex", &codex), ("git", &which("git"))]);
    let project = &home.workdir;
    git(project, &["init", "-q"]);
    git(project, &["remote", "add", "origin", "https://me:s3cret@git.corp.example/team/app.git"]);
    std::fs::write(project.join("CLAUDE.md"), "# Build\ncargo test\n").unwrap();
    let mut vars = home.vars.clone();
    vars.retain(|(k, _)| k != "PATH");
    vars.push(("PATH".into(), format!("{}:/usr/bin:/bin", bin.display())));
    vars.push(("CODEX_HOME".into(), codex_home.path().display().to_string()));
    vars.push(("OPENAI_API_KEY".into(), common::codex::API_KEY.into()));
    let cwd = project.to_str().unwrap();
    let (code, text, stderr) = doctor(
        &env,
        &vars,
        &[
            "--agent",
            "claude",
            "--agent",
            "codex",
            "--cwd",
            cwd,
            "--",
            "--permission-mode",
            "acceptEdits",
            "--allowedTools=Bash",
        ],
    );
    eprintln!("{text}");
    assert_eq!(code, 0, "{text}{stderr}");
    line(&text, "PASS  claude: version 2.1.332, the one Nightshift's screen signals were verified on");
    line(&text, "PASS  claude: a token in the environment (CLAUDE_CODE_OAUTH_TOKEN)");
    line(&text, "PASS  claude: drift probe: claude 2.1.332's idle screen reads idle");
    line(&text, "PASS  codex: version 0.171.0, the one Nightshift's screen signals were verified on");
    line(&text, "PASS  codex: drift probe: codex 0.171.0's idle screen reads idle");
    // Codex's own sandbox runs, and holds.
    let sandbox = line(&text, "PASS  sandbox: Codex's sandbox can run");
    assert!(sandbox.contains("refused it a write outside its folder"), "{sandbox}");
    line(&text, &format!("PASS  {cwd}: has CLAUDE.md for claude"));
    line(&text, &format!("WARN  {cwd}: no AGENTS.md"));
    line(&text, &format!("PASS  {cwd}: permission mode acceptEdits with 1 allow rule(s)"));
    // Tonight's fence here, with why; what Codex's cannot do; never a credential.
    let fence = line(&text, &format!("PASS  {cwd}: the sandbox's network fence (project) lets through:"));
    assert!(fence.contains("git.corp.example (the remote origin)"), "{fence}");
    let codex = line(&text, "WARN  codex: Codex's sandbox has the network on or off");
    assert!(codex.contains("neither fenced nor seen"), "{codex}");
    assert!(!text.contains("s3cret"), "{text}");
    assert!(mock.messages().is_empty(), "the probe asks the model nothing");
    assert!(env.state_dir().join("doctor/probe-claude.txt").exists());
    let left: Vec<_> = std::fs::read_dir(project).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left.len(), 2, "nothing of the doctor's in the project: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_probe_names_a_first_screen_dialog_and_fails_on_signals_that_drifted() {
    let Some(claude) = client() else { return };
    let mock = mock_api::MockApi::start().await.expect("the stand-in API starts");
    let env = Env::new();
    // The probe folder is not trusted: the client's first screen is its trust question.
    let home = ClientHome::new(&env, &mock.base_url(), Auth::Subscriber, &[]);
    let bin = path_of(&env, &[("claude", &claude), ("git", &which("git"))]);
    let mut vars = home.vars.clone();
    vars.retain(|(k, _)| k != "PATH");
    vars.push(("PATH".into(), format!("{}:/usr/bin:/bin", bin.display())));
    let cwd = home.workdir.to_str().unwrap();
    let (_, text, _) = doctor(&env, &vars, &["--agent", "claude", "--cwd", cwd]);
    let probe = line(&text, "PASS  claude: drift probe: claude 2.1.332's first screen reads as a trust dialog");
    assert!(probe.ends_with("waiting for you"), "{probe}");

    // Signals that no longer fit the client: its idle title taken for a working one.
    std::fs::create_dir_all(env.path("config/agents")).unwrap();
    std::fs::write(env.path("config/agents/claude.toml"), "[title]\nworking = '^✳ '\n").unwrap();
    let trusted = ClientHome::new(&env, &mock.base_url(), Auth::Subscriber, &[&env.state_dir().join("doctor/probe")]);
    let mut vars = trusted.vars.clone();
    vars.retain(|(k, _)| k != "PATH");
    vars.push(("PATH".into(), format!("{}:/usr/bin:/bin", bin.display())));
    let (code, text, _) = doctor(&env, &vars, &["--agent", "claude", "--cwd", cwd]);
    assert_eq!(code, 1, "{text}");
    line(&text, "PASS  config: ");
    let drift = line(&text, "FAIL  claude: drift probe: claude 2.1.332's screen, still for");
    assert!(drift.contains("reads as working (the title `✳ Claude Code`)"), "{drift}");
    assert!(drift.contains("doctor/probe-claude.txt"), "{drift}");
    let kept = std::fs::read_to_string(env.state_dir().join("doctor/probe-claude.txt")).unwrap();
    assert!(kept.starts_with("✳ Claude Code\n"), "{kept}");
    assert!(mock.messages().is_empty());
}
