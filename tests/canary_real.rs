//! `nightshift doctor --canary` with the real binary and the pinned real clients: every signal of
//! both scripts read, each client in under a minute; a user's adapter file that breaks one signal
//! fails exactly that one, keeps the screen and exits 1; and nothing of the user's own client
//! configuration is touched.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Instant;

use common::Env;
use serde_json::Value;

/// A PATH whose `claude` and `codex` are the pinned clients (when installed), then this one.
fn client_path(env: &Env, clients: &[(&str, &Path)]) -> String {
    let dir = env.path("bin");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, target) in clients {
        std::os::unix::fs::symlink(target, dir.join(name)).unwrap();
    }
    format!("{}:{}", dir.display(), std::env::var("PATH").unwrap_or_default())
}

/// The user's own client configuration, as a user has it: what the canary must never change.
fn user_files(home: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let files = [
        (".claude.json", r#"{"hasCompletedOnboarding":true,"theme":"light","projects":{}}"#),
        (".claude/settings.json", r#"{"permissions":{"allow":["Bash(ls:*)"]},"env":{"MY_VAR":"1"}}"#),
        (".claude/.credentials.json", r#"{"claudeAiOauth":{"accessToken":"sk-ant-oat01-the-users-own"}}"#),
        (".codex/config.toml", "model = \"gpt-5-codex\"\n[tui]\nnotifications = true\n"),
        (".codex/auth.json", r#"{"OPENAI_API_KEY":"sk-the-users-own"}"#),
    ];
    files
        .iter()
        .map(|(name, text)| {
            let path = home.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
            (path, text.as_bytes().to_vec())
        })
        .collect()
}

fn canary(env: &Env, path: &str, home: &Path, args: &[&str]) -> (Output, Value, f64) {
    let began = Instant::now();
    let out = env
        .cmd(&[&["doctor", "--canary", "--json"], args].concat())
        .env("PATH", path)
        .env("HOME", home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .output()
        .unwrap();
    let secs = began.elapsed().as_secs_f64();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    });
    (out, report, secs)
}

fn checks(report: &Value) -> Vec<(String, String, String)> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().into(),
                c["status"].as_str().unwrap().into(),
                c["detail"].as_str().unwrap().into(),
            )
        })
        .collect()
}

/// The seconds a client's canary took, from its first line ("… in 29 s").
fn took(report: &Value, agent: &str) -> f64 {
    let (_, _, detail) = checks(report).into_iter().find(|(id, _, _)| id == &format!("canary.{agent}")).unwrap();
    let at = detail.rfind(" in ").unwrap();
    detail[at + 4..].trim_end_matches(" s").parse().unwrap()
}

#[test]
fn the_pinned_clients_pass_every_signal_in_under_a_minute_and_the_users_files_stay_as_they_were() {
    let (Some(claude), Some(codex)) = (common::claude::client(), common::codex::client()) else { return };
    let env = Env::new();
    let home = env.path("home");
    let before = user_files(&home);
    let path = client_path(&env, &[("claude", &claude), ("codex", &codex)]);
    let (out, report, secs) = canary(&env, &path, &home, &[]);
    let failed: Vec<_> = checks(&report).into_iter().filter(|(_, status, _)| status != "pass").collect();
    assert!(out.status.success() && failed.is_empty(), "{failed:#?}\n{}", String::from_utf8_lossy(&out.stderr));
    let ids: Vec<String> = checks(&report).into_iter().map(|(id, _, _)| id).collect();
    for signal in [
        "working.spinner",
        "title.working",
        "dialog.permission",
        "dialog.question",
        "api.retried",
        "usage.plan",
        "usage.context",
        "limit.reset",
        "limit.notice",
        "hook.turn_end",
    ] {
        assert!(ids.contains(&format!("canary.claude.{signal}")), "Claude's {signal} is checked: {ids:?}");
    }
    for signal in ["working.spinner", "dialog.permission", "api.retried", "usage.plan", "limit.reset", "hook.turn_end"]
    {
        assert!(ids.contains(&format!("canary.codex.{signal}")), "Codex's {signal} is checked: {ids:?}");
    }
    let (claude_secs, codex_secs) = (took(&report, "claude"), took(&report, "codex"));
    eprintln!("the canary took {claude_secs:.0} s for Claude, {codex_secs:.0} s for Codex, {secs:.0} s in all");
    assert!(claude_secs < 60.0 && codex_secs < 60.0, "under a minute each: {claude_secs} s, {codex_secs} s");
    for (file, text) in &before {
        assert_eq!(&std::fs::read(file).unwrap(), text, "{} is unchanged", file.display());
    }
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(env.state_dir().join("canary/results.json")).unwrap()).unwrap();
    assert_eq!(results["claude"]["2.1.332"]["ok"], true, "{results}");
    assert_eq!(results["codex"]["0.171.0"]["ok"], true, "{results}");
    let plan = env.cmd(&["plan"]).env("PATH", &path).env("HOME", &home).output().unwrap();
    let plan = String::from_utf8_lossy(&plan.stdout);
    assert!(plan.contains("Tonight's clients: claude 2.1.332, its canary passed"), "{plan}");
    assert!(plan.contains("codex 0.171.0, its canary passed"), "{plan}");
    let left: Vec<_> =
        std::fs::read_dir(env.state_dir().join("canary")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["results.json"], "no scratch home is left, and nothing failed to keep");
}

#[test]
fn an_adapter_file_that_breaks_the_spinner_fails_that_signal_alone_keeps_the_screen_and_exits_1() {
    let Some(claude) = common::claude::client() else { return };
    let env = Env::new();
    let home = env.path("home");
    std::fs::create_dir_all(&home).unwrap();
    let agents = env.path("config").join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join("claude.toml"), "[working]\nspinner = ['^this never matches$']\n").unwrap();
    let path = client_path(&env, &[("claude", &claude)]);
    let (out, report, _) = canary(&env, &path, &home, &["--agent", "claude"]);
    assert_eq!(out.status.code(), Some(1), "{report:#}");
    let failed: Vec<_> = checks(&report).into_iter().filter(|(_, status, _)| status != "pass").collect();
    let ids: Vec<&str> = failed.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(ids, ["canary.claude", "canary.claude.working.spinner"], "{failed:#?}");
    // The tally is of signals: every one but the spinner passed, and the client's own line, which
    // sums them up, is not counted on top.
    let signals = checks(&report).len() as u64 - 1;
    let counts = &report["counts"];
    assert_eq!(
        (counts["pass"].as_u64(), counts["warn"].as_u64(), counts["fail"].as_u64()),
        (Some(signals - 1), Some(0), Some(1)),
        "{report:#}"
    );
    let (_, _, detail) = &failed[1];
    assert!(detail.starts_with("working.spinner in a long answer: no working line matched"), "{detail}");
    let spinner =
        report["checks"].as_array().unwrap().iter().find(|c| c["id"] == "canary.claude.working.spinner").unwrap();
    let remedy = spinner["remedy"].as_str().unwrap();
    assert!(remedy.contains("fix [working] spinner in"), "{remedy}");
    let kept = remedy.split("kept in ").nth(1).unwrap().split(';').next().unwrap();
    let kept = Path::new(kept);
    assert!(kept.starts_with(env.state_dir().join("canary")), "{}", kept.display());
    let screen = std::fs::read_to_string(kept.join("03-a-long-answer.txt")).unwrap();
    assert!(screen.contains("Tell me a long story"), "the screen of the step that failed:\n{screen}");
    assert!(std::fs::metadata(kept.join("pty.bin")).unwrap().len() > 0, "the client's output, to replay");
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(env.state_dir().join("canary/results.json")).unwrap()).unwrap();
    assert_eq!(results["claude"]["2.1.332"]["ok"], false);
    assert_eq!(results["claude"]["2.1.332"]["failed"], serde_json::json!(["working.spinner"]));
}
