//! A sandboxed overnight session of the real Claude Code client against the mock API, in a
//! worktree: a Bash command that writes outside its folders is refused by the sandbox (the OS, not
//! a prompt), one that writes and commits inside it runs without a permission prompt, both are
//! journalled, and the session goes on.

use crate::{common, mock_api};

use std::path::Path;
use std::time::Duration;

use common::claude::{client, ClaudeRun, Options};
use common::wait_for;
use mock_api::MockApi;

/// The journal's `sandbox_command` events so far.
fn sandboxed(run: &ClaudeRun) -> Vec<serde_json::Value> {
    run.events().into_iter().filter(|e| e["event"] == "sandbox_command").collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_overnight_session_runs_its_commands_inside_and_cannot_write_outside() {
    let Some(claude) = client() else { return };
    if let Err(why) = <nightshift::platform::Os as nightshift::platform::Sandboxes>::claude_sandbox() {
        // `make test` installs bubblewrap and socat; a machine without user namespaces cannot run it.
        assert!(std::env::var_os("NIGHTSHIFT_REQUIRE_CLAUDE").is_none(), "the sandbox cannot run here: {why}");
        return;
    }
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let root = tempfile::tempdir().unwrap();
    let config = format!("[worktree]\ndir = \"{}\"\n", root.path().display());
    let identity = [
        ("GIT_AUTHOR_NAME", "agent"),
        ("GIT_AUTHOR_EMAIL", "agent@example.com"),
        ("GIT_COMMITTER_NAME", "agent"),
        ("GIT_COMMITTER_EMAIL", "agent@example.com"),
    ];
    // The client's default permission mode, no tool allowed by a rule: only the sandbox lets Bash
    // run without asking.
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options {
            run_args: &["--worktree", "night", "--preset", "overnight", "--idle-timeout", "600", "--user-quiet", "0"],
            args: &["Keep a note of it. mock:inside"],
            project: &[("README", "the project\n")],
            config: &config,
            extra_env: &identity,
            ..Default::default()
        },
    );
    let repo = run.workdir.clone();
    let base = common::git_in(&repo, &["rev-parse", "HEAD"], false);
    wait_for("the commit made inside the sandbox", Duration::from_secs(90), || {
        let log = std::process::Command::new("git")
            .args(["log", "--format=%s", &format!("{}..nightshift/night", base.trim())])
            .current_dir(&repo)
            .output()
            .ok()?;
        String::from_utf8_lossy(&log.stdout).contains("Keep it").then_some(())
    });
    let inside = wait_for("the inside command journalled", Duration::from_secs(20), || {
        sandboxed(&run).into_iter().find(|e| e["command"].as_str().is_some_and(|c| c.contains("inside.txt")))
    });
    assert_eq!((inside["blocked"].as_bool(), inside.get("failed")), (Some(false), None), "{inside}");

    run.send("Now leave a note in my home folder. mock:outside", true);
    let outside = wait_for("the outside command journalled", Duration::from_secs(60), || {
        sandboxed(&run).into_iter().find(|e| e["command"].as_str().is_some_and(|c| c.contains("outside-the-project")))
    });
    assert_eq!(outside["blocked"], true, "{outside}");
    assert!(outside["failed"].as_str().is_some_and(|f| f.contains("Read-only file system")), "{outside}");
    let home = run.vars.iter().find(|(k, _)| k == "HOME").map(|(_, v)| v.clone()).unwrap();
    assert!(!Path::new(&home).join("outside-the-project.txt").exists(), "nothing was written outside");

    // Never a permission prompt, and the session goes on: its next turn is answered.
    let states: Vec<String> = run.states().into_iter().map(|(_, s, _)| s).collect();
    assert!(!states.iter().any(|s| s == "waiting_input"), "no prompt stalled it: {states:?}");
    let asked = mock.requests().len();
    run.send("And carry on.", true);
    wait_for("the next turn", Duration::from_secs(60), || (mock.requests().len() > asked).then_some(()));
    let options = String::from_utf8(run.cmd(&["sessions"]).output().unwrap().stdout).unwrap();
    assert!(!options.contains("ended"), "{options}");
    let journal = String::from_utf8(run.cmd(&["journal"]).output().unwrap().stdout).unwrap();
    assert!(journal.contains("the sandbox refused a command"), "{journal}");
    assert!(journal.contains("a command ran in the sandbox without a prompt"), "{journal}");
}
