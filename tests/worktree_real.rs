//! Two real Claude Code sessions on one repository, each with `--worktree`, against the mock API:
//! each commits on its own branch in its own folder, the user's checkout stays byte for byte as it
//! was while they work, `worktree list` and the digest show both, and removal refuses the one with
//! unpushed work and removes the merged one.

use crate::{common, mock_api};

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::claude::{client, ClaudeRun, Options};
use common::{wait_for, KillOnDrop};
use mock_api::MockApi;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=u", "-c", "user.email=u@u"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}

/// The user's checkout as a session must leave it.
fn snapshot(repo: &Path) -> Vec<String> {
    let refs: Vec<String> = git(repo, &["for-each-ref", "--format=%(refname) %(objectname)"])
        .lines()
        .filter(|r| !r.starts_with("refs/heads/nightshift/") && !r.starts_with("refs/nightshift/"))
        .map(str::to_string)
        .collect();
    vec![
        git(repo, &["rev-parse", "HEAD"]),
        git(repo, &["status", "--porcelain=v2", "--untracked-files=all"]),
        git(repo, &["stash", "list"]),
        format!("{:?}", std::fs::read(repo.join(".git/index")).unwrap()),
        refs.join("\n"),
        std::fs::read_to_string(repo.join("work.txt")).unwrap(),
        std::fs::read_to_string(repo.join("mine.txt")).unwrap(),
    ]
}

fn ahead(repo: &Path, base: &str, branch: &str) -> u32 {
    Command::new("git")
        .args(["rev-list", "--count", &format!("{base}..{branch}")])
        .current_dir(repo)
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_real_sessions_commit_in_worktrees_of_their_own_and_the_checkout_stays_as_it_was() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    mock.set_default("commit");
    let root = tempfile::tempdir().unwrap();
    let config = format!("[worktree]\ndir = \"{}\"\n", root.path().display());
    let run_args = ["--worktree", "one", "--preset", "overnight", "--idle-timeout", "2", "--user-quiet", "0"];
    let client_args = ["--permission-mode", "acceptEdits", "--allowedTools=Bash", "Work through TASKS.md mock:commit"];
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options {
            run_args: &run_args,
            args: &client_args,
            project: &[("TASKS.md", "- [ ] one\n- [ ] two\n"), ("work.txt", "")],
            config: &config,
            ..Default::default()
        },
    );
    let repo = run.workdir.clone();
    let base = git(&repo, &["rev-parse", "HEAD"]);
    // The user goes on in their checkout: a staged file of their own.
    std::fs::write(repo.join("mine.txt"), "the user's\n").unwrap();
    git(&repo, &["add", "mine.txt"]);
    let before = snapshot(&repo);

    let events_two = run.env.path("two.jsonl");
    let mut second =
        run.cmd(&["run", "--agent", "claude", "--worktree", "two", "--preset", "overnight", "--idle-timeout", "2"]);
    second
        .args(["--user-quiet", "0", "--cols", "120", "--rows", "40", "--events", events_two.to_str().unwrap(), "--"])
        .arg(&claude)
        .args(client_args)
        .current_dir(&repo)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let _second = KillOnDrop(second.spawn().unwrap());
    wait_for("commits on both branches", Duration::from_secs(120), || {
        (ahead(&repo, &base, "nightshift/one") >= 1 && ahead(&repo, &base, "nightshift/two") >= 1).then_some(())
    });
    assert_eq!(snapshot(&repo), before, "the user's checkout is byte for byte as it was");
    let one = git(&repo, &["log", "--format=%s", &format!("{base}..nightshift/one")]);
    assert!(one.lines().all(|s| s == "Do the next step"), "{one}");
    assert_ne!(git(&repo, &["rev-parse", "nightshift/one"]), git(&repo, &["rev-parse", "nightshift/two"]));

    let list = String::from_utf8(run.cmd(&["worktree", "list"]).output().unwrap().stdout).unwrap();
    assert!(list.contains("nightshift/one") && list.contains("nightshift/two"), "{list}");
    let digest = String::from_utf8(run.cmd(&["digest"]).output().unwrap().stdout).unwrap();
    assert!(
        digest.contains("worktree: nightshift/one at ") && digest.contains("worktree: nightshift/two at "),
        "{digest}"
    );

    // Both stopped: the merged one is removed, the one with unpushed commits is not.
    let second_id = wait_for("the second session's id", Duration::from_secs(10), || {
        common::read_events(&events_two).first().and_then(|e| e["session"].as_str().map(String::from))
    });
    for id in [run.session(), second_id] {
        assert!(run.cmd(&["stop", &id]).output().unwrap().status.success());
    }
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(snapshot(&repo), before, "still, after they stopped");
    git(&repo, &["merge", "-q", "--ff-only", "nightshift/one"]);
    let removed = run.cmd(&["worktree", "remove", "one"]).output().unwrap();
    assert!(removed.status.success(), "{}", String::from_utf8_lossy(&removed.stderr));
    let refused = run.cmd(&["worktree", "remove", "two"]).output().unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("neither merged nor pushed"));
}
