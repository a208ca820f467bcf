//! Many Nightshift processes starting at once on one state directory — a script that starts several
//! projects, the app and a terminal together — all create, migrate and write the one journal: none
//! of them fails, and every session is journalled. Real processes, a real SQLite file.

use crate::common;

use std::process::{Child, Output, Stdio};

/// Starts `n` copies of `nightshift ARGS` together and waits for all of them.
fn together(env: &common::Env, n: usize, args: &[&str]) -> Vec<Output> {
    let children: Vec<Child> = (0..n)
        .map(|_| env.cmd(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap())
        .collect();
    children.into_iter().map(|c| c.wait_with_output().unwrap()).collect()
}

fn failures(outputs: &[Output]) -> Vec<String> {
    outputs
        .iter()
        .filter(|o| !o.status.success())
        .map(|o| format!("{}: {}", o.status, String::from_utf8_lossy(&o.stderr)))
        .collect()
}

#[test]
fn ten_runs_started_together_on_a_fresh_state_directory_all_start() {
    for round in 0..3 {
        let env = common::Env::new();
        let outputs = together(&env, 10, &["run", "--no-hooks", "--", "true"]);
        let failed = failures(&outputs);
        assert!(failed.is_empty(), "round {round}: {} of 10 failed:\n{}", failed.len(), failed.join("\n"));
        let sessions: Vec<serde_json::Value> = serde_json::from_str(&env.stdout(&["sessions", "--json"])).unwrap();
        assert_eq!(sessions.len(), 10, "round {round}: every run is journalled");
    }
}

#[test]
fn readers_and_writers_started_together_all_succeed() {
    let env = common::Env::new();
    // Readers first in the list, so some of them open the journal before any run has made it.
    let readers: Vec<Child> =
        (0..5).map(|_| env.cmd(&["sessions"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()).collect();
    let runs = together(&env, 6, &["run", "--no-hooks", "--", "true"]);
    let reads: Vec<Output> = readers.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
    let failed = [failures(&runs), failures(&reads)].concat();
    assert!(failed.is_empty(), "{} failed:\n{}", failed.len(), failed.join("\n"));
}
