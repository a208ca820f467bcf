//! Salvage through a real night's respawn cycles, against the real Claude Code client and the mock
//! API: the agent commits every turn (HEAD moves), the user's own untracked file from before the
//! night sits untouched, and the agent's draft changes now and then. A salvage ref is made only
//! when the draft changed; none holds the user's file; the digest says what the refs are.

use crate::{common, mock_api};

use std::time::{Duration, SystemTime};

use common::claude::{client, ClaudeRun, Options};
use common::wait_for;
use mock_api::MockApi;

/// The salvage events of `cycle`'s `/clear` (salvaged, unchanged or skipped).
fn salvage_of(run: &ClaudeRun, cycle: u64) -> Vec<serde_json::Value> {
    let reason = format!("before respawn cycle {cycle}'s /clear");
    run.events()
        .into_iter()
        .filter(|e| e["event"].as_str().is_some_and(|n| n.starts_with("salvage")) && e["reason"] == reason.as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn across_five_cycles_salvage_keeps_the_agents_draft_when_it_changed_and_never_the_users_file() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    mock.set_default("commit");
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options {
            run_args: &[
                "--preset",
                "overnight",
                "--idle-timeout",
                "2",
                "--user-quiet",
                "0",
                "--inter-step-delay",
                "0.3",
            ],
            args: &["--permission-mode", "acceptEdits", "--allowedTools=Bash", "Start. mock:commit"],
            project: &[("README", "the project\n"), ("work.txt", "")],
            ..Default::default()
        },
    );
    let dir = run.workdir.clone();
    run.wait_state("idle", 0, Duration::from_secs(60));
    // The user's own untracked file, from before the night.
    std::fs::write(dir.join("notes-mine.txt"), "the user's notes\n").unwrap();
    let old = SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options().write(true).open(dir.join("notes-mine.txt")).unwrap().set_modified(old).unwrap();
    // The agent's draft, written during the night and changed before cycles 1 and 4 only.
    let mut drafts = 0;
    for cycle in 1..=5u64 {
        if cycle == 1 || cycle == 4 {
            drafts += 1;
            std::fs::write(dir.join("draft.txt"), format!("the agent's draft, version {drafts}\n")).unwrap();
        }
        wait_for(&format!("cycle {cycle}'s salvage"), Duration::from_secs(120), || {
            (!salvage_of(&run, cycle).is_empty()).then_some(())
        });
    }
    let refs = common::git_in(&dir, &["for-each-ref", "--format=%(refname)", "refs/nightshift/salvage"], false);
    let refs: Vec<&str> = refs.lines().collect();
    let kinds: Vec<String> = (1..=5u64)
        .map(|c| {
            salvage_of(&run, c).iter().map(|e| e["event"].as_str().unwrap().to_string()).collect::<Vec<_>>().join(",")
        })
        .collect();
    assert_eq!(refs.len(), 2, "a ref only when the draft changed; the salvages per cycle: {kinds:?}");
    for reference in &refs {
        let held = common::git_in(&dir, &["ls-tree", "-r", "--name-only", reference], false);
        assert!(held.contains("draft.txt") && !held.contains("notes-mine.txt"), "{reference} holds {held}");
    }
    let salvaged: Vec<serde_json::Value> = run.events().into_iter().filter(|e| e["event"] == "salvaged").collect();
    assert!(salvaged.iter().all(|e| e["users"] == serde_json::json!(["notes-mine.txt"])), "{salvaged:#?}");
    // The morning's salvage lines are the refs, one each.
    let digest: serde_json::Value = serde_json::from_str(&run.env.stdout(&["digest", "--format", "json"])).unwrap();
    let kept: Vec<serde_json::Value> = digest["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["salvaged"].as_array().cloned().unwrap_or_default())
        .collect();
    let mut lines: Vec<&str> = kept.iter().map(|k| k["reference"].as_str().unwrap()).collect();
    lines.sort_unstable();
    assert_eq!(lines, refs, "{kept:#?}");
    let text = run.env.stdout(&["digest"]);
    assert!(text.contains("your own file, there before the session began, left as it is: notes-mine.txt"), "{text}");
}
