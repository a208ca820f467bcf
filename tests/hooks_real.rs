//! The real Claude Code client's hooks, passed per session in `--settings` beside the statusLine
//! exporter, against the project's mock API: exact turns, a quick idle, permission prompts and
//! limits first-hand, the handoff before the context fills, the guard, a frozen Nightshift that
//! costs the client at most two seconds a hook, and a restart that resumes the same conversation.

use crate::{common, mock_api};

use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use common::claude::{client, ClaudeRun, Options};
use common::wait_for;
use mock_api::{epoch, MockApi, Usage, HANDOFF_ANSWER};

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

/// How long after the mock's last byte the session was journalled idle.
fn idle_after_stream(run: &ClaudeRun, mock: &MockApi, after: usize) -> Duration {
    let (_, idle_at, _) = run.wait_state("idle", after, Duration::from_secs(20));
    let done = mock.messages().last().and_then(|r| r.done_at).expect("the answer's end");
    idle_at.duration_since(done).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fast_answer_is_a_turn_and_idle_lands_within_half_a_second_of_the_stream() {
    let Some(claude) = client() else { return };
    for (cols, rows) in [(120, 40), (80, 24)] {
        let mock = MockApi::start().await.expect("the stand-in API starts");
        let user_settings = r#"{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"touch \"$CLAUDE_CONFIG_DIR/user-stop-hook-ran\""}]}]}}"#;
        let run = ClaudeRun::start(
            &claude,
            &mock.base_url(),
            Options { cols, rows, client_settings: Some(user_settings), ..Default::default() },
        );
        let config = run.env.path("claude-config");
        std::fs::create_dir_all(run.workdir.join(".claude")).unwrap();
        let project = run.workdir.join(".claude/settings.json");
        std::fs::write(&project, r#"{"permissions":{"allow":["Read"]}}"#).unwrap();
        let project_before = std::fs::read(&project).unwrap();

        let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
        let conversation = wait_for("the conversation id", Duration::from_secs(10), || {
            run.events()
                .into_iter()
                .find(|e| e["event"] == "conversation")
                .map(|e| e["id"].as_str().unwrap().to_string())
        });
        assert!(!conversation.is_empty());
        run.send("say hi mock:fast", true);
        let (w, _, working) = run.wait_state("working", i + 1, Duration::from_secs(15));
        assert!(working["reason"].as_str().unwrap().contains("UserPromptSubmit"), "{working}");
        let latency = idle_after_stream(&run, &mock, w + 1);
        eprintln!("{cols}x{rows}: idle {latency:?} after the stream ended");
        assert!(latency <= Duration::from_millis(500), "{cols}x{rows}: idle {latency:?} after the stream");

        wait_for("the user's own Stop hook", Duration::from_secs(5), || {
            config.join("user-stop-hook-ran").exists().then_some(())
        });
        assert_eq!(std::fs::read(&project).unwrap(), project_before, "the project's settings are byte-identical");
        // The client rewrites its user settings itself (it pretty-prints them and adds keys of its
        // own); what matters is that nothing of Nightshift's lands there.
        let user = std::fs::read_to_string(config.join("settings.json")).unwrap();
        assert!(!user.contains("nightshift") && !user.contains("statusLine"), "{user}");
        let hooks: serde_json::Value = serde_json::from_str(&user).unwrap();
        assert_eq!(hooks["hooks"].as_object().unwrap().len(), 1, "only the user's own hook: {user}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_prompt_carries_the_tool_and_the_command_and_a_429_is_paused_by_the_hook() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let now = epoch(SystemTime::now());
    let reset = (now + 2 * 3600) / 60 * 60;
    mock.set_usage(Usage { five_hour: 0.97, five_hour_reset: reset, seven_day: 0.4, seven_day_reset: now + 3 * 86400 });
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options { args: &["--permission-mode", "default"], ..Default::default() },
    );
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("make a file mock:perm", true);
    let (p, _, waiting) = run.wait_state("waiting_input", i + 1, Duration::from_secs(20));
    let text = waiting["dialog"]["text"].as_str().unwrap_or_default();
    assert!(text.contains("Bash") && text.contains("touch mock-permission-file"), "{waiting}");
    // No: back at the prompt, then a limit.
    run.send_keys("\u{1b}");
    // The client sends no Stop for a turn the user interrupted: the screen says so.
    let (_, _, idle) = run.wait_state("idle", p + 1, Duration::from_secs(20));
    assert!(idle["reason"].as_str().unwrap().contains("interrupted"), "{idle}");
    assert!(!run.events().iter().any(|e| e["event"] == "drift"), "an interrupt is no drift");
    run.send("go on mock:limit", true);
    let detected = wait_for("the limit", Duration::from_secs(20), || {
        run.events().into_iter().find(|e| e["event"] == "limit_detected")
    });
    assert_eq!(detected["source"], "hook", "{detected}");
    let resets_at = chrono::DateTime::parse_from_rfc3339(detected["resets_at"].as_str().unwrap()).unwrap();
    assert_eq!(resets_at.timestamp() as u64, reset, "{detected}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn near_a_full_context_the_agent_hands_off_and_gets_its_handoff_back_after_the_reset() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options {
            run_args: &["--preset", "solo", "--idle-timeout", "2", "--user-quiet", "0", "--handoff-at", "75"],
            ..Default::default()
        },
    );
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    // The answer reports 800,000 cached tokens: the statusLine shows the context 80 % used.
    run.send("work on it mock:ctx:800000", true);
    run.wait_state("working", i + 1, Duration::from_secs(15));
    let given = wait_for("the handoff given back", Duration::from_secs(120), || {
        run.events().into_iter().position(|e| e["event"] == "handoff_given")
    });
    let events = run.events();
    assert!(events[..given].iter().any(|e| e["event"] == "handoff"), "the handoff was written first");
    let asked = mock.messages().iter().position(|r| r.last_user.contains("handoff for your next self"));
    let asked = asked.expect("a request carried the handoff request");
    // After the reset, a request carries the handoff's text back (the SessionStart context).
    wait_for("the handoff in a request after the reset", Duration::from_secs(60), || {
        mock.messages().iter().skip(asked + 2).any(|r| r.body.contains("mock-handoff-7f3a")).then_some(())
    });
    let session = run.session();
    let kept = run.env.state_dir().join("handoffs").join(&session).join("latest.md");
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), HANDOFF_ANSWER, "kept in the state directory");
    assert!(
        !run.workdir.join("latest.md").exists() && !run.workdir.join("handoffs").exists(),
        "never in the repository"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guard_refuses_a_force_push_and_it_never_runs() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options {
            run_args: &["--guard", "true"],
            args: &["--permission-mode", "acceptEdits", "--allowedTools=Bash"],
            ..Default::default()
        },
    );
    // The project, with a bare repository as its remote; its main then rewritten locally, so a
    // force push would change the remote.
    let remote = run.env.path("remote.git");
    std::fs::create_dir_all(&remote).unwrap();
    git(&remote, &["init", "-q", "--bare", "-b", "main"]);
    let repo = &run.workdir;
    git(repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("a.txt"), "one").unwrap();
    git(repo, &["add", "a.txt"]);
    git(repo, &["commit", "-qm", "one"]);
    git(repo, &["remote", "add", "origin", remote.to_str().unwrap()]);
    git(repo, &["push", "-q", "origin", "main"]);
    let pushed = git(&remote, &["rev-parse", "main"]);
    std::fs::write(repo.join("a.txt"), "rewritten").unwrap();
    git(repo, &["commit", "-qa", "--amend", "-m", "rewritten"]);
    assert_ne!(git(repo, &["rev-parse", "main"]), pushed);

    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("publish it mock:push", true);
    let denied = wait_for("the guard's refusal", Duration::from_secs(30), || {
        run.events().into_iter().find(|e| e["event"] == "guard_denied")
    });
    assert_eq!(denied["rule"], "force_push", "{denied}");
    run.wait_state("idle", i + 1, Duration::from_secs(30));
    let answered =
        mock.messages().into_iter().find(|r| r.last_user.starts_with("[tool_result]")).expect("the tool's result");
    assert!(answered.last_user.contains("guard refused"), "the agent was told why: {}", answered.last_user);
    assert_eq!(git(&remote, &["rev-parse", "main"]), pushed, "the remote never moved: the push did not run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_clients_edits_are_salvaged_when_it_is_killed_and_the_users_state_is_untouched() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options { args: &["--permission-mode", "acceptEdits", "--allowedTools=Bash"], ..Default::default() },
    );
    let repo = &run.workdir;
    git(repo, &["init", "-q", "-b", "main"]);
    for (file, text) in [("edit.txt", "before\n"), ("gone.txt", "old\n"), ("keep.txt", "kept\n")] {
        std::fs::write(repo.join(file), text).unwrap();
    }
    git(repo, &["add", "."]);
    git(repo, &["commit", "-qm", "start"]);
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("tidy the files mock:edit", true);
    run.wait_state("idle", i + 1, Duration::from_secs(30));
    assert_eq!(std::fs::read_to_string(repo.join("edit.txt")).unwrap(), "after\n", "the client ran the edit");
    let before = (
        git(repo, &["status", "--porcelain=v2", "--untracked-files=all"]),
        std::fs::read(repo.join(".git/index")).unwrap(),
        git(repo, &["rev-parse", "HEAD"]),
        git(repo, &["symbolic-ref", "HEAD"]),
    );
    let pid = run.events().iter().find(|e| e["state"] == "running").and_then(|e| e["pid"].as_i64()).unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    let saved = wait_for("the salvage", Duration::from_secs(20), || {
        run.events().into_iter().find(|e| e["event"] == "salvaged")
    });
    let reference = saved["reference"].as_str().unwrap();
    let files = git(repo, &["diff-tree", "-r", "--name-status", "--no-commit-id", "HEAD", reference]);
    assert_eq!(files, "M\tedit.txt\nD\tgone.txt\nA\tnew/file.txt", "exactly the client's changes");
    let after = (
        git(repo, &["status", "--porcelain=v2", "--untracked-files=all"]),
        std::fs::read(repo.join(".git/index")).unwrap(),
        git(repo, &["rev-parse", "HEAD"]),
        git(repo, &["symbolic-ref", "HEAD"]),
    );
    assert_eq!(after, before, "status, index, HEAD and branch as they were");
}

/// In place of the supervisor's socket: one that forwards the CLI's requests and holds every hook
/// without an answer, as a frozen Nightshift would.
fn freeze_hooks(socket: &Path) -> std::path::PathBuf {
    use std::io::{BufRead, BufReader, Write};
    let aside = socket.with_extension("aside");
    std::fs::rename(socket, &aside).unwrap();
    let listener = std::os::unix::net::UnixListener::bind(socket).unwrap();
    let real = aside.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            let mut line = String::new();
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            if line.contains(r#""op":"hook""#) {
                held.push(conn);
                continue;
            }
            let mut upstream = std::os::unix::net::UnixStream::connect(&real).unwrap();
            upstream.write_all(line.as_bytes()).unwrap();
            let mut answer = String::new();
            BufReader::new(upstream).read_line(&mut answer).unwrap();
            let mut conn = conn;
            let _ = conn.write_all(answer.as_bytes());
        }
    });
    aside
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_nightshift_costs_the_client_at_most_two_seconds_a_hook() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options { args: &["--permission-mode", "acceptEdits", "--allowedTools=Bash"], ..Default::default() },
    );
    run.wait_state("idle", 0, Duration::from_secs(30));
    let sessions: serde_json::Value = serde_json::from_str(&run.env.stdout(&["sessions", "--json"])).unwrap();
    let socket = std::path::PathBuf::from(sessions[0]["control_socket"].as_str().unwrap());
    let _aside = freeze_hooks(&socket);
    // UserPromptSubmit, PreToolUse, a 2 s tool, Stop: each hook meets a Nightshift that never answers.
    run.send("run it mock:tool:2", true);
    let result = wait_for("the tool's result to reach the API", Duration::from_secs(30), || {
        mock.messages().into_iter().find(|r| r.last_user.starts_with("[tool_result]"))
    });
    let first = mock.messages().into_iter().find(|r| r.scenario == "tool:2").unwrap();
    let gap = result.at.duration_since(first.done_at.unwrap()).unwrap();
    eprintln!("tool call to its result through a frozen Nightshift: {gap:?} (the tool itself takes 2 s)");
    assert!(gap <= Duration::from_millis(2000 + 2000 + 1000), "a hook held the client: {gap:?}");
    // And the turn ends: its answer reaches the API's log as done.
    wait_for("the answer to the tool's result", Duration::from_secs(20), || {
        mock.messages().into_iter().find(|r| r.last_user.starts_with("[tool_result]")).and_then(|r| r.done_at)
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_resumes_the_same_conversation() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options {
            run_args: &[
                "--respawn",
                "--restart-clean-exits",
                "true",
                "--restart-backoff",
                "0.5",
                "--idle-timeout",
                "600",
            ],
            ..Default::default()
        },
    );
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("say hi mock:fast", true);
    let (w, _, _) = run.wait_state("working", i + 1, Duration::from_secs(15));
    run.wait_state("idle", w + 1, Duration::from_secs(20));
    let conversation =
        run.events().into_iter().rfind(|e| e["event"] == "conversation").unwrap()["id"].as_str().unwrap().to_string();
    run.send("/exit", true);
    let restarted = wait_for("the restart", Duration::from_secs(30), || {
        run.events()
            .into_iter()
            .find(|e| e["state"] == "running" && e["reason"].as_str().unwrap().contains("restarted"))
    });
    let pid = restarted["pid"].as_u64().unwrap();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    let argv: Vec<String> = cmdline.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
    // (Said with the process's arguments: a failure under load must show what the pid was.)
    let at = argv.iter().position(|a| a == "--resume").unwrap_or_else(|| panic!("--resume on the restart: {argv:?}"));
    assert_eq!(argv[at + 1], conversation, "{argv:?}");
    assert!(!argv.iter().any(|a| a == "--continue"), "{argv:?}");
}

/// A dialog that comes up in a respawn cycle's kickstart turn is answered with `nightshift send`:
/// the session goes back to working or idle, the cycles go on, and the answer is journalled.
async fn a_dialog_answered_mid_cycle_lets_the_night_go_on(kickstart: &str, client_args: &[&str], answer: &str) {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options {
            // Unsandboxed: inside the sandbox Bash would run without the prompt this is about.
            run_args: &[
                "--no-sandbox",
                "--preset",
                "overnight",
                "--idle-timeout",
                "2",
                "--user-quiet",
                "0",
                "--update-prompt",
                "",
                "--clear-init",
                "false",
                "--kickstart-prompt",
                kickstart,
            ],
            args: client_args,
            ..Default::default()
        },
    );
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("start the work mock:fast", true);
    let (q, _, waiting) = run.wait_state("waiting_input", i + 1, Duration::from_secs(60));
    assert!(waiting["dialog"]["kind"].is_string(), "{waiting}");
    // A person reads the dialog before answering it: the client's Notification hook about it comes
    // meanwhile (6 s after the dialog opened, in 2.1.332).
    tokio::time::sleep(Duration::from_secs(8)).await;
    run.send(answer, true);
    let (_, (_, after, _)) = wait_for("a state after the answer", Duration::from_secs(20), || {
        run.states().into_iter().enumerate().skip(q + 1).find(|(_, (_, s, _))| s != "waiting_input")
    });
    assert!(
        ["working", "idle", "respawning"].contains(&after.as_str()),
        "after the answer: {after}; journal:\n{}",
        run.env.stdout(&["journal"])
    );
    // The next cycle comes: the night did not end at the dialog.
    let cycles = |run: &ClaudeRun| {
        run.events().iter().filter(|e| e["event"] == "respawn" && e["action"] == "cycle_started").count()
    };
    let before = cycles(&run);
    wait_for("the next respawn cycle", Duration::from_secs(60), || (cycles(&run) > before).then_some(()));
    let answered = wait_for("the answer journalled", Duration::from_secs(20), || {
        run.events().into_iter().find(|e| e["event"] == "dialog_answered")
    });
    assert_eq!(answered["by"], "cli", "{answered}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_answered_mid_cycle_lets_the_night_go_on() {
    // Enter picks the first option.
    a_dialog_answered_mid_cycle_lets_the_night_go_on("carry on, ask first mock:question", &[], "").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_answered_mid_cycle_lets_the_night_go_on() {
    let args = ["--permission-mode", "default"];
    a_dialog_answered_mid_cycle_lets_the_night_go_on("carry on, make the file mock:perm", &args, "").await;
}
