//! Client accounts: `--account NAME` (from `config.toml`'s `[accounts]`) and `--config-dir DIR` on
//! the real binary hand the agent its config directory, the journal keeps which account a session
//! ran under, usage samples carry their account, and `nightshift usage` shows each account's
//! windows. Nightshift never looks inside the directory.

use crate::common;

use common::Env;
use nightshift::store::{NewSession, Store};
use nightshift::usage::Sample;

fn configure(env: &Env, toml: &str) {
    let dir = env.path("config");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), toml).unwrap();
}

fn session_json(env: &Env, id: &str) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = serde_json::from_str(&env.stdout(&["sessions", "--json"])).unwrap();
    rows.into_iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("session {id} listed"))
}

/// Runs `nightshift run ARGS -- bash -c SCRIPT` to its end; returns the session's id.
fn run(env: &Env, args: &[&str], script: &str) -> String {
    let mut argv = vec!["run", "--events", "-"];
    argv.extend_from_slice(args);
    argv.extend(["--", "bash", "-c", script]);
    let out = env.output(&argv);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let first: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    first["session"].as_str().unwrap().to_string()
}

#[test]
fn an_account_hands_the_agent_its_config_directory_and_is_journalled() {
    let env = Env::new();
    let (work, codex_home) = (env.path("claude-work"), env.path("codex-work"));
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&codex_home).unwrap();
    configure(
        &env,
        &format!("[accounts.work]\nclaude = \"{}\"\ncodex = \"{}\"\n", work.display(), codex_home.display()),
    );
    let seen = env.path("seen");
    let script = format!("printf '%s|%s' \"$CLAUDE_CONFIG_DIR\" \"$CODEX_HOME\" > {}", seen.display());

    let id = run(&env, &["--agent", "claude", "--no-hooks", "--account", "work"], &script);
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), format!("{}|", work.display()));
    let row = session_json(&env, &id);
    assert_eq!((row["account"].as_str(), row["account_dir"].as_str()), (Some("work"), work.to_str()));

    // Codex reads CODEX_HOME; a directory given alone is its own account (a relative one is
    // taken from where the command is typed).
    let id = run(&env, &["--agent", "codex", "--no-hooks", "--config-dir", "codex-work"], &script);
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), format!("|{}", codex_home.display()));
    assert_eq!(session_json(&env, &id)["account"].as_str(), codex_home.to_str());

    // Without one, the client's own default: nothing is set, nothing recorded.
    let id = run(&env, &["--agent", "claude", "--no-hooks"], &script);
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), "|");
    assert!(session_json(&env, &id)["account"].is_null());
}

#[test]
fn a_wrong_account_is_one_line_with_the_fix_and_nothing_starts() {
    let env = Env::new();
    configure(&env, "[accounts.work]\nclaude = \"/no/such/dir\"\n");
    let fail = |args: &[&str]| {
        let mut argv = vec!["run"];
        argv.extend_from_slice(args);
        argv.extend(["--", "bash", "-c", "exit 0"]);
        let out = env.output(&argv);
        assert!(!out.status.success(), "{args:?} should fail");
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        stderr
    };
    let e = fail(&["--agent", "claude", "--account", "home"]);
    assert!(e.contains("no account `home`") && e.contains("there are work") && e.contains("[accounts.home]"), "{e}");
    let e = fail(&["--agent", "claude", "--account", "work"]);
    assert!(e.contains("/no/such/dir is not a directory") && e.contains("CLAUDE_CONFIG_DIR=/no/such/dir"), "{e}");
    let e = fail(&["--agent", "codex", "--account", "work"]);
    assert!(e.contains("account `work` has no codex directory") && e.contains("codex = \"DIR\""), "{e}");
    let e = fail(&["--agent", "generic", "--account", "work"]);
    assert!(e.contains("pass --agent claude or codex"), "{e}");
    let out = env.output(&["run", "--account", "work", "--config-dir", "/tmp", "--", "true"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"), "clap says so");
    let listed: Vec<serde_json::Value> = serde_json::from_str(&env.stdout(&["sessions", "--json"])).unwrap_or_default();
    assert!(listed.is_empty(), "nothing started: {listed:?}");
}

#[test]
fn usage_shows_each_accounts_windows() {
    let env = Env::new();
    std::fs::create_dir_all(env.state_dir()).unwrap();
    let mut store = Store::open(&env.state_dir().join("journal.sqlite3")).unwrap();
    let now = chrono::Utc::now();
    for (id, account) in [("a0000001", Some("work")), ("b0000002", Some("home")), ("c0000003", None)] {
        let command = vec!["claude".to_string()];
        store
            .create_session(&NewSession {
                id,
                kind: nightshift::store::SessionKind::Terminal,
                command: &command,
                cwd: "/tmp",
                agent: "claude",
                preset: None,
                created: now,
                owner_pid: 1,
                control_socket: None,
            })
            .unwrap();
        if let Some(name) = account {
            store.set_account(id, name, &format!("/accounts/{name}")).unwrap();
        }
    }
    let sample = |five: f64| Sample { five_hour_pct: Some(five), seven_day_pct: Some(40.0), ..Default::default() };
    store.record_usage("a0000001", now - chrono::Duration::minutes(3), &sample(50.0)).unwrap();
    store.record_usage("a0000001", now - chrono::Duration::minutes(2), &sample(91.0)).unwrap();
    store.record_usage("b0000002", now - chrono::Duration::minutes(1), &sample(12.0)).unwrap();
    store.record_usage("c0000003", now, &sample(33.0)).unwrap();

    let latest = store.latest_limits_by_account(nightshift::AgentKind::Claude).unwrap();
    let by: Vec<(Option<&str>, Option<f64>)> =
        latest.iter().map(|r| (r.account.as_deref(), r.sample.five_hour_pct)).collect();
    assert_eq!(by, [(None, Some(33.0)), (Some("home"), Some(12.0)), (Some("work"), Some(91.0))]);
    drop(store);

    let report: serde_json::Value = serde_json::from_str(&env.stdout(&["usage", "--json"])).unwrap();
    let chips: Vec<(Option<&str>, &str)> = report["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["account"].as_str(), a["chip"].as_str().unwrap()))
        .collect();
    assert_eq!(
        chips,
        [(None, "5h 33% · 7d 40%"), (Some("home"), "5h 12% · 7d 40%"), (Some("work"), "5h 91% · 7d 40%")]
    );

    let text = env.stdout(&["usage"]);
    let heads: Vec<&str> = text.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(heads.len(), 3, "{text}");
    assert!(heads[1].contains("12%") && heads[1].contains("account home"), "{text}");
    assert!(heads[2].contains("91%") && heads[2].contains("account work"), "{text}");
    assert!(!heads[0].contains("account"), "the default account has no name: {text}");
}

#[test]
fn a_loops_iterations_run_under_its_account_with_the_updater_held() {
    let env = Env::new();
    let work = env.path("claude-work");
    std::fs::create_dir_all(&work).unwrap();
    configure(&env, &format!("[accounts.work]\nclaude = \"{}\"\n", work.display()));
    // A harness that notes its config directory and answers like `claude -p --output-format stream-json`.
    let stream = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-code/2.1.332/headless/stream-json-fast.jsonl");
    let seen = env.path("seen");
    let harness = env.path("claude");
    std::fs::write(
        &harness,
        format!(
            "#!/bin/sh\nprintf '%s %s' \"$CLAUDE_CONFIG_DIR\" \"$DISABLE_AUTOUPDATER\" > {}\ncat {}\n",
            seen.display(),
            stream.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&harness, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = env.output(&[
        "loop",
        "--program",
        harness.to_str().unwrap(),
        "--account",
        "work",
        "--prompt",
        "tidy up",
        "--max-iterations",
        "1",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Its account, and its client's updater held for the night.
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), format!("{} 1", work.display()));
    let rows: Vec<serde_json::Value> = serde_json::from_str(&env.stdout(&["sessions", "--json"])).unwrap();
    assert_eq!(rows[0]["account"].as_str(), Some("work"), "{rows:?}");
}
