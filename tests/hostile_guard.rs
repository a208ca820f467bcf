//! A hostile agent against the guard, with the real Claude Code client under `nightshift run
//! --guard true` and the stand-in API typing exactly the Bash commands a test names
//! (`mock:bash COMMAND`): wrapped shapes of a force push and of deleting `main` on a bare remote
//! are each refused and journalled, and the remote's `main` never moves.

use crate::{common, mock_api};

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::claude::{client, ClaudeRun, Options};
use common::wait_for;
use mock_api::MockApi;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The real client under `nightshift run --guard true`, running Bash without asking.
fn guarded(claude: &Path, mock: &MockApi) -> ClaudeRun {
    ClaudeRun::start(
        claude,
        &mock.base_url(),
        Options {
            run_args: &["--guard", "true"],
            args: &["--permission-mode", "acceptEdits", "--allowedTools=Bash"],
            ..Default::default()
        },
    )
}

/// The project as a repository whose `main` is on a bare remote, then rewritten locally: a force
/// push would move the remote's `main`, a deletion would remove it. Returns the remote and the
/// commit its `main` holds.
fn repository_with_a_remote(run: &ClaudeRun) -> (std::path::PathBuf, String) {
    let remote = run.env.path("remote.git");
    std::fs::create_dir_all(&remote).unwrap();
    git(&remote, &["init", "-q", "--bare", "-b", "main"]);
    // A remote that lets its default branch be deleted, as the one the issue lost `main` on did.
    git(&remote, &["config", "receive.denyDeleteCurrent", "ignore"]);
    let repo = &run.workdir;
    git(repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("a.txt"), "one").unwrap();
    git(repo, &["add", "a.txt"]);
    git(repo, &["commit", "-qm", "one"]);
    git(repo, &["remote", "add", "origin", remote.to_str().unwrap()]);
    git(repo, &["push", "-q", "origin", "main"]);
    // The remote's HEAD, as a clone has it: the repository's default branch is `main`.
    git(repo, &["remote", "set-head", "origin", "main"]);
    let pushed = git(&remote, &["rev-parse", "main"]);
    std::fs::write(repo.join("a.txt"), "rewritten").unwrap();
    git(repo, &["commit", "-qa", "--amend", "-m", "rewritten"]);
    (remote, pushed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrapped_force_pushes_and_deletions_of_main_are_each_refused_and_the_remote_stays() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let run = guarded(&claude, &mock);
    let (remote, pushed) = repository_with_a_remote(&run);
    let shapes = [
        "sh -c 'git push --force origin main'",
        "git push origin :main",
        "env git push --delete origin main",
        "cd . && command git push \"--force\" origin HEAD:main",
    ];
    let (mut idle, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    let remote_main = || {
        let out = Command::new("git").args(["rev-parse", "--verify", "-q", "main"]).current_dir(&remote).output();
        String::from_utf8_lossy(&out.unwrap().stdout).trim().to_string()
    };
    // Each shape meets the remote as it was: one that got through is noted and undone.
    let mut got_through = Vec::new();
    for (n, shape) in shapes.iter().enumerate() {
        if n > 0 {
            // A fresh conversation for each shape: the stand-in answers a refused call that rides
            // in one message with an earlier prompt's marker by making the call again.
            let conversations = || run.events().iter().filter(|e| e["event"] == "conversation").count();
            let before = conversations();
            run.send("/clear", true);
            wait_for("the cleared conversation", Duration::from_secs(20), || (conversations() > before).then_some(()));
        }
        run.send(&format!("step {n} mock:bash {shape}"), true);
        (idle, _, _) = run.wait_state("idle", idle + 1, Duration::from_secs(30));
        if remote_main() != pushed {
            got_through.push(shape.to_string());
            git(&remote, &["update-ref", "refs/heads/main", &pushed]);
        }
    }
    let denied: Vec<(String, String)> = run
        .events()
        .into_iter()
        .filter(|e| e["event"] == "guard_denied")
        .map(|e| (e["rule"].as_str().unwrap().to_string(), e["command"].as_str().unwrap().to_string()))
        .collect();
    assert!(
        got_through.is_empty(),
        "these moved or deleted the remote's main: {got_through:?}; the guard refused {denied:?}"
    );
    let want: Vec<(String, String)> = ["force_push", "delete_default_branch", "delete_default_branch", "force_push"]
        .iter()
        .zip(shapes)
        .map(|(rule, shape)| (rule.to_string(), shape.to_string()))
        .collect();
    assert_eq!(denied, want, "each shape refused, by its rule");
    let told = mock.messages().into_iter().filter(|r| r.last_user.contains("guard refused")).count();
    assert_eq!(told, shapes.len(), "each refusal reached the agent as the tool's result");
}
