//! Salvage against real repositories and the real binary: an agent leaves modified, new and deleted
//! files and is killed; the snapshot ref holds exactly that tree while the user's status, index
//! file, HEAD and branch are as they were; nothing during a rebase (journalled why); a restore into
//! the working tree and onto a branch round-trip.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{read_events, wait_for, Env};

fn git(dir: &Path, args: &[&str]) -> String {
    common::git_in(dir, args, false)
}

/// What the user's repository state is: status, the index file's bytes, HEAD, the branch, stashes.
fn state(dir: &Path) -> (String, Vec<u8>, String, String, String) {
    (
        git(dir, &["status", "--porcelain=v2", "--untracked-files=all"]),
        std::fs::read(dir.join(".git/index")).unwrap(),
        git(dir, &["rev-parse", "HEAD"]),
        git(dir, &["symbolic-ref", "HEAD"]),
        git(dir, &["stash", "list"]),
    )
}

fn repo(env: &Env) -> std::path::PathBuf {
    let dir = env.path("project");
    std::fs::create_dir_all(&dir).unwrap();
    git(&dir, &["init", "-q"]);
    std::fs::write(dir.join("keep.txt"), "kept\n").unwrap();
    std::fs::write(dir.join("edit.txt"), "before\n").unwrap();
    std::fs::write(dir.join("gone.txt"), "to be deleted\n").unwrap();
    std::fs::write(dir.join(".gitignore"), "*.log\n").unwrap();
    git(&dir, &["add", "."]);
    git(&dir, &["commit", "-qm", "start"]);
    dir
}

/// `nightshift run` of a fake agent that changes the tree, then waits to be killed.
fn run_agent(env: &Env, dir: &Path, script: &str) -> (std::process::Child, std::path::PathBuf) {
    let events = env.path("events.jsonl");
    let child = env
        .cmd(&["run", "--events", events.to_str().unwrap(), "--cwd", dir.to_str().unwrap(), "--", "bash", "-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    (child, events)
}

fn kill_agent(events: &Path) {
    let pid = wait_for("the agent", Duration::from_secs(10), || {
        read_events(events).iter().find(|e| e["state"] == "running").and_then(|e| e["pid"].as_i64())
    });
    wait_for("the agent's changes", Duration::from_secs(10), || {
        read_events(events).iter().any(|e| e["state"] == "idle" || e["state"] == "working").then_some(())
    });
    std::thread::sleep(Duration::from_millis(300));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
}

const CHANGES: &str = "printf 'after\\n' > edit.txt; rm gone.txt; mkdir -p new; printf 'new\\n' > new/file.txt; \
                       printf 'noise\\n' > debug.log; echo changed; exec sleep 600";

#[test]
fn a_killed_agents_work_is_kept_exactly_and_the_users_state_is_untouched() {
    let env = Env::new();
    let dir = repo(&env);
    let (mut child, events) = run_agent(&env, &dir, CHANGES);
    // Every change made (the script's last one is the ignored log) before the user's state is taken.
    wait_for("the agent's changes", Duration::from_secs(10), || dir.join("debug.log").exists().then_some(()));
    let before = state(&dir);
    kill_agent(&events);
    let status = child.wait().unwrap();
    assert!(!status.success());
    let all = read_events(&events);
    let saved = all.iter().find(|e| e["event"] == "salvaged").unwrap_or_else(|| panic!("{all:#?}"));
    assert_eq!(saved["reference"], format!("refs/nightshift/salvage/{}/1", saved["session"].as_str().unwrap()));
    assert_eq!(saved["files"], 3, "{saved}");
    assert!(saved["reason"].as_str().unwrap().contains("killed by SIGKILL"), "{saved}");
    assert_eq!(state(&dir), before, "status, index, HEAD, branch and stash as they were");

    // The ref holds exactly the working tree: the edit, the new file, not the deleted or ignored one.
    let reference = saved["reference"].as_str().unwrap();
    let files = git(&dir, &["ls-tree", "-r", "--name-only", reference]);
    assert_eq!(files.lines().collect::<Vec<_>>(), [".gitignore", "edit.txt", "keep.txt", "new/file.txt"]);
    assert_eq!(git(&dir, &["show", &format!("{reference}:edit.txt")]), "after\n");
    assert_eq!(git(&dir, &["rev-parse", &format!("{reference}^")]), git(&dir, &["rev-parse", "HEAD"]));
    assert!(git(&dir, &["log", "-1", "--format=%s", reference]).starts_with("WIP salvage of session"));

    // The CLI lists and shows it.
    let listed = env.stdout(&["salvage", "list"]);
    assert!(
        listed.contains("3 file(s)") && listed.contains("    A new/file.txt") && listed.contains("    D gone.txt"),
        "{listed}"
    );
    let session = saved["session"].as_str().unwrap();
    let shown = env.stdout(&["salvage", "show", session]);
    assert!(shown.contains("-before") && shown.contains("+after"), "{shown}");

    // Restore: never over changes; into a clean tree it brings the work back; onto a branch too.
    let refused = env.output(&["salvage", "restore", session]);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("has changes of its own"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    git(&dir, &["checkout", "--", "."]);
    git(&dir, &["clean", "-fdq"]);
    let restored = env.output(&["salvage", "restore", &format!("{session}/1")]);
    assert!(restored.status.success(), "{}", String::from_utf8_lossy(&restored.stderr));
    assert_eq!(std::fs::read_to_string(dir.join("edit.txt")).unwrap(), "after\n");
    assert_eq!(std::fs::read_to_string(dir.join("new/file.txt")).unwrap(), "new\n");
    assert!(!dir.join("gone.txt").exists());
    let branch = env.output(&["salvage", "restore", session, "--branch", "night-work"]);
    assert!(branch.status.success(), "{}", String::from_utf8_lossy(&branch.stderr));
    assert_eq!(git(&dir, &["rev-parse", "night-work"]), git(&dir, &["rev-parse", reference]));
    assert_eq!(git(&dir, &["symbolic-ref", "HEAD"]).trim(), "refs/heads/main", "the current branch stays");
}

#[test]
fn nothing_is_salvaged_during_a_rebase_and_the_journal_says_why() {
    let env = Env::new();
    let dir = repo(&env);
    git(&dir, &["checkout", "-qb", "topic"]);
    std::fs::write(dir.join("edit.txt"), "topic\n").unwrap();
    git(&dir, &["commit", "-qam", "topic"]);
    git(&dir, &["checkout", "-q", "main"]);
    std::fs::write(dir.join("edit.txt"), "main\n").unwrap();
    git(&dir, &["commit", "-qam", "main"]);
    git(&dir, &["checkout", "-q", "topic"]);
    let out = Command::new("git").args(["rebase", "main"]).current_dir(&dir).output().unwrap();
    assert!(!out.status.success(), "the rebase stops on its conflict");
    let (mut child, events) = run_agent(&env, &dir, "echo working; exec sleep 600");
    kill_agent(&events);
    child.wait().unwrap();
    let all = read_events(&events);
    assert!(!all.iter().any(|e| e["event"] == "salvaged"), "{all:#?}");
    let skipped = all.iter().find(|e| e["event"] == "salvage_skipped").unwrap_or_else(|| panic!("{all:#?}"));
    assert_eq!(skipped["why"], "a rebase is in progress");
    assert_eq!(git(&dir, &["for-each-ref", "refs/nightshift/"]), "");
}

#[test]
fn the_digest_says_what_needs_you_the_snapshot_the_unpushed_commit_and_a_remote_that_moved() {
    let env = Env::new();
    let dir = repo(&env);
    let bare = env.path("remote.git");
    git(env.dir.path(), &["init", "-q", "--bare", bare.to_str().unwrap()]);
    git(&dir, &["remote", "add", "origin", bare.to_str().unwrap()]);
    git(&dir, &["push", "-q", "-u", "origin", "main"]);
    // Someone else pushes meanwhile; this clone has fetched it.
    let other = env.path("other");
    git(env.dir.path(), &["clone", "-q", bare.to_str().unwrap(), other.to_str().unwrap()]);
    std::fs::write(other.join("theirs.txt"), "theirs\n").unwrap();
    git(&other, &["add", "theirs.txt"]);
    git(&other, &["commit", "-qm", "theirs"]);
    git(&other, &["push", "-q", "origin", "main"]);
    git(&dir, &["fetch", "-q"]);

    let (child, events) = run_agent(
        &env,
        &dir,
        "git -c user.name=a -c user.email=a@a commit -qm 'tonight: the parser' --allow-empty; \
         printf 'after\\n' > edit.txt; echo done; exec sleep 600",
    );
    kill_agent(&events);
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("nightshift: kept 1 uncommitted file(s)"), "the run says what it kept: {said}");
    assert!(said.contains("nightshift: 1 commit(s) from tonight on no remote branch"), "and the delivery: {said}");
    let session = read_events(&events)[0]["session"].as_str().unwrap().to_string();
    let digest = env.stdout(&["digest", "--range", "1h", "--format", "json"]);
    let d: serde_json::Value = serde_json::from_str(&digest).unwrap();
    let ours = d["sessions"].as_array().unwrap().iter().find(|s| s["id"] == session.as_str()).unwrap();
    assert_eq!(ours["section"], "needs_you", "{ours:#}");
    let needs: Vec<&str> = ours["needs_you"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    let kept = needs
        .iter()
        .find(|n| n.starts_with("work kept by salvage: 1 uncommitted file ("))
        .unwrap_or_else(|| panic!("{needs:?}"));
    assert!(kept.ends_with(&format!("look: nightshift salvage show {session}/1")), "{kept}");
    let delivery = needs.iter().find(|n| n.contains("on no remote branch")).unwrap_or_else(|| panic!("{needs:?}"));
    assert!(
        delivery.starts_with(
            "1 commit(s) from tonight on no remote branch; origin/main moved: 1 commit(s) there the branch lacks"
        ),
        "{delivery}"
    );
    assert_eq!(ours["delivery"]["ahead"], 1);
    assert_eq!(ours["delivery"]["unpushed"][0]["subject"], "tonight: the parser");
}

#[test]
fn a_loop_keeps_the_work_its_iterations_left_uncommitted_when_it_ends() {
    let env = Env::new();
    let dir = repo(&env);
    let stream = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-code/2.1.332/headless/stream-json-fast.jsonl");
    let harness = env.path("fake-claude");
    std::fs::write(&harness, format!("#!/bin/sh\nprintf 'draft\\n' > notes.md\ncat {}\n", stream.display())).unwrap();
    std::fs::set_permissions(&harness, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let events = env.path("loop.jsonl");
    let before = state(&dir);
    // A stand-in for the client has no sandbox of its own to run in.
    let out = env.output(&[
        "loop",
        "--no-sandbox",
        "--program",
        harness.to_str().unwrap(),
        "--prompt",
        "write notes",
        "--max-iterations",
        "1",
        "--cwd",
        dir.to_str().unwrap(),
        "--events",
        events.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let all = read_events(&events);
    let saved = all.iter().find(|e| e["event"] == "salvaged").unwrap_or_else(|| panic!("{all:#?}"));
    assert_eq!((saved["files"].as_u64(), saved["reason"].as_str()), (Some(1), Some("the loop ended")));
    let reference = saved["reference"].as_str().unwrap();
    assert_eq!(git(&dir, &["show", &format!("{reference}:notes.md")]), "draft\n");
    let (status, index, head, branch, stash) = state(&dir);
    assert_eq!((index, head, branch, stash), (before.1, before.2, before.3, before.4), "index, HEAD, branch, stash");
    assert!(status.contains("notes.md"), "the file itself stays where the agent left it");
}

#[test]
fn an_unchanged_tree_makes_no_new_ref_and_the_users_own_file_is_named_as_such() {
    let env = Env::new();
    let dir = repo(&env);
    // The user's own untracked file, there an hour before the session began.
    let mine = dir.join("mine.txt");
    std::fs::write(&mine, "my notes\n").unwrap();
    let an_hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options().write(true).open(&mine).unwrap().set_modified(an_hour_ago).unwrap();
    let events = env.path("events.jsonl");
    // Each life writes the same file and fails: five lives, five salvages, then the crash-loop breaker.
    let child = env
        .cmd(&[
            "run",
            "--respawn",
            "--preset",
            "solo",
            "--restart-backoff",
            "0.2,0.4",
            "--events",
            events.to_str().unwrap(),
            "--cwd",
            dir.to_str().unwrap(),
            "--",
            "bash",
            "-c",
            "printf 'draft\\n' > notes.md; exit 1",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _child = common::KillOnDrop(child);
    wait_for("the crash-loop breaker", Duration::from_secs(30), || {
        read_events(&events).iter().any(|e| e["event"] == "breaker" && e["state"] == "open").then_some(())
    });
    let all = wait_for("the fifth life's salvage", Duration::from_secs(10), || {
        let all = read_events(&events);
        let tried = all.iter().filter(|e| e["event"] == "salvaged" || e["event"] == "salvage_unchanged").count();
        (tried == 5).then_some(all)
    });
    let session = all[0]["session"].as_str().unwrap().to_string();
    let saved: Vec<_> = all.iter().filter(|e| e["event"] == "salvaged").collect();
    assert_eq!(saved.len(), 1, "{saved:#?}");
    assert_eq!(saved[0]["users"], serde_json::json!(["mine.txt"]), "left out as the user's: {}", saved[0]);
    let refs = git(&dir, &["for-each-ref", "--format=%(refname)", "refs/nightshift/"]);
    assert_eq!(refs.lines().collect::<Vec<_>>(), [format!("refs/nightshift/salvage/{session}/1")]);
    let unchanged: Vec<_> = all.iter().filter(|e| e["event"] == "salvage_unchanged").collect();
    assert_eq!(unchanged.len(), 4);
    assert!(unchanged.iter().all(|e| e["reference"] == saved[0]["reference"]), "{unchanged:#?}");
    let d: serde_json::Value =
        serde_json::from_str(&env.stdout(&["digest", "--range", "1h", "--format", "json"])).unwrap();
    let ours = d["sessions"].as_array().unwrap().iter().find(|s| s["id"] == session.as_str()).unwrap();
    let kept: Vec<&str> = ours["needs_you"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str().filter(|n| n.starts_with("work kept by salvage")))
        .collect();
    assert_eq!(kept.len(), 1, "one line for the one snapshot: {kept:#?}");
    assert!(kept[0].contains(", unchanged at 4 later salvages;"), "{}", kept[0]);
    assert!(kept[0].contains("your own file, there before the session began, left as it is: mine.txt"), "{}", kept[0]);
    assert_eq!(ours["counts"]["salvages"], 1);
    assert_eq!(ours["counts"]["salvages_unchanged"], 4);
    assert_eq!(ours["counts"]["restarts"], 4);
}

/// A repository the agent made in its folder, configured to run commands: salvage keeps its work
/// when the agent is killed, and neither salvage, `salvage show` nor the digest runs any of them.
#[test]
fn a_repository_the_agent_made_runs_none_of_its_commands_outside_the_agent() {
    let env = Env::new();
    let dir = env.path("folder");
    std::fs::create_dir_all(&dir).unwrap();
    let marker = env.path("ran");
    let touch = format!("touch {}", marker.display());
    let script = format!(
        "git init -q nested && cd nested && git -c user.name=a -c user.email=a@a commit -q --allow-empty -m start && \
         git config filter.evil.clean '{touch}; cat' && git config filter.evil.process '{touch}' && \
         git config diff.evil.textconv '{touch}; cat' && git config core.fsmonitor '{touch}' && \
         git config core.hooksPath hooks && mkdir hooks && printf '#!/bin/sh\\n{touch}\\n' > hooks/reference-transaction && \
         chmod +x hooks/reference-transaction && printf '* filter=evil diff=evil\\n' > .gitattributes && \
         printf 'work\\n' > work.txt && echo changed; exec sleep 600"
    );
    let (mut child, events) = run_agent(&env, &dir, &script);
    wait_for("the agent's repository", Duration::from_secs(10), || dir.join("nested/work.txt").exists().then_some(()));
    kill_agent(&events);
    child.wait().unwrap();
    assert!(!marker.exists(), "salvage ran a command the agent's repository configured");
    let all = read_events(&events);
    let saved = all.iter().find(|e| e["event"] == "salvaged").unwrap_or_else(|| panic!("{all:#?}"));
    let session = saved["session"].as_str().unwrap();
    let shown = env.stdout(&["salvage", "show", session]);
    assert!(shown.contains("+work"), "{shown}");
    env.stdout(&["digest"]);
    assert!(!marker.exists(), "a command the agent's repository configured ran outside the agent");
}

/// An agent that rewrites a 200 MB artifact every life: each salvage lists it as too big and keeps
/// the rest, so the repository grows by the small files alone, not 200 MB a cycle.
#[test]
fn a_big_artifact_rewritten_every_life_is_listed_not_stored() {
    let env = Env::new();
    let dir = repo(&env);
    let events = env.path("events.jsonl");
    let script = "head -c 200000000 /dev/urandom > artifact.bin; echo \"life $RANDOM\" >> notes.txt; \
                  echo changed; sleep 0.5; exit 3";
    let mut child = env
        .cmd(&["run", "--events", events.to_str().unwrap(), "--cwd", dir.to_str().unwrap(), "--respawn"])
        .args(["--restart-backoff", "0.2", "--", "bash", "-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let saved = wait_for("three lives salvaged", Duration::from_secs(120), || {
        let saved: Vec<serde_json::Value> =
            read_events(&events).into_iter().filter(|e| e["event"] == "salvaged").collect();
        (saved.len() >= 3).then_some(saved)
    });
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    child.wait().unwrap();
    for s in &saved {
        assert_eq!(s["too_big"][0]["path"], "artifact.bin", "{s}");
        assert_eq!(s["too_big"][0]["bytes"], 200_000_000, "{s}");
    }
    let objects = git(&dir, &["count-objects", "-v"]);
    let kib: u64 = objects
        .lines()
        .filter_map(|l| l.strip_prefix("size: ").or_else(|| l.strip_prefix("size-pack: ")))
        .map(|v| v.trim().parse::<u64>().unwrap())
        .sum();
    assert!(kib < 1024, "the repository grew by {kib} KiB: {objects}");
    let listed = env.stdout(&["journal"]);
    assert!(listed.contains("too big to keep, left as they are: artifact.bin (190.7 MB)"), "{listed}");
}
