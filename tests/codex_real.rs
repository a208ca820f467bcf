//! The real Codex CLI under `nightshift run --agent codex`, against the project's mock Responses
//! API (`tests/mock_responses`): its turns read from the screen alone and with its notify (idle
//! right after a turn, the conversation named), a restart and a restore that resume the same
//! conversation, and that it leaves the user's Codex home as it found it and no Codex process
//! behind.

use crate::{common, mock_responses};

use std::time::Duration;

use common::codex::{argv, client, CodexRun, Options};
use common::wait_for;
use mock_responses::MockResponses;

/// How long after the mock's last byte of the last turn the session was journalled idle.
fn idle_after_stream(run: &CodexRun, mock: &MockResponses, after: usize) -> (Duration, serde_json::Value) {
    let (_, idle_at, idle) = run.wait_state("idle", after, Duration::from_secs(20));
    let done = mock.turns().last().and_then(|r| r.done_at).expect("the answer's end");
    (idle_at.duration_since(done).unwrap_or_default(), idle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_from_its_screen_alone_a_turn_is_working_then_idle_after_the_quiet_window() {
    let Some(codex) = client() else { return };
    let mock = MockResponses::start().await.expect("the stand-in API starts");
    let mut run =
        CodexRun::start(&codex, &mock.base_url(), Options { run_args: &["--no-hooks"], ..Default::default() });
    let before = std::fs::read(run.config_path()).unwrap();
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("say hi mock:slow:3", true);
    let (w, _, working) = run.wait_state("working", i + 1, Duration::from_secs(15));
    assert!(working["reason"].as_str().unwrap().contains("Working"), "{working}");
    let (latency, idle) = idle_after_stream(&run, &mock, w + 1);
    eprintln!("screen alone: idle {latency:?} after the stream ended ({})", idle["reason"]);
    assert!(idle["reason"].as_str().unwrap().contains("quiet for"), "{idle}");
    assert!(latency >= Duration::from_secs(2), "the quiet window decides: {latency:?}");
    assert!(run.conversations().is_empty(), "nothing names the conversation without notify");
    // No update check at its start: the version the night began with runs until morning.
    let pid = run.events().into_iter().find(|e| e["state"] == "running").unwrap()["pid"].as_u64().unwrap();
    assert!(argv(pid).windows(2).any(|w| w == ["-c", "check_for_update_on_startup=false"]), "{:?}", argv(pid));
    run.stop();
    assert_eq!(run.survivors(), vec![], "no Codex process outlives the session");
    assert_eq!(std::fs::read(run.config_path()).unwrap(), before, "the user's config.toml is byte-identical");
}

/// A program that appends its last argument to `<itself>.log`, one a line.
fn recorder(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("their-notify");
    std::fs::write(&path, "#!/bin/sh\nfor last; do :; done\nprintf '%s\\n' \"$last\" >> \"$0.log\"\n").unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_its_notify_a_turn_is_idle_right_after_its_stream_and_names_its_conversation() {
    let Some(codex) = client() else { return };
    let mock = MockResponses::start().await.expect("the stand-in API starts");
    let scripts = tempfile::tempdir().unwrap();
    let theirs = recorder(scripts.path());
    let config = format!("notify = [\"{}\"]\n", theirs.display());
    let mut run = CodexRun::start(&codex, &mock.base_url(), Options { config_extra: &config, ..Default::default() });
    let before = std::fs::read(run.config_path()).unwrap();
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("say hi mock:slow:3", true);
    let (w, _, _) = run.wait_state("working", i + 1, Duration::from_secs(15));
    let (latency, idle) = idle_after_stream(&run, &mock, w + 1);
    eprintln!("with notify: idle {latency:?} after the stream ended ({})", idle["reason"]);
    assert!(idle["reason"].as_str().unwrap().contains("Codex's notify"), "{idle}");
    assert!(latency <= Duration::from_millis(500), "idle {latency:?} after the stream");

    // The conversation is the thread Codex keeps a rollout of, not the one that named it.
    let conversations =
        wait_for("the conversation", Duration::from_secs(5), || Some(run.conversations()).filter(|c| !c.is_empty()));
    let rollouts = run.rollouts();
    assert_eq!(rollouts.len(), 1, "{rollouts:?}");
    assert_eq!(conversations.len(), 1, "{conversations:?}");
    assert!(rollouts[0].to_str().unwrap().ends_with(&format!("-{}.jsonl", conversations[0])), "{rollouts:?}");
    let threads: std::collections::BTreeSet<_> = mock.requests().into_iter().filter_map(|r| r.thread).collect();
    assert!(threads.len() == 2 && threads.contains(&conversations[0]), "a title thread beside it: {threads:?}");
    // The user's own notify still ran, for both threads, with Codex's payload.
    let log = theirs.with_extension("log");
    let payloads = wait_for("the user's notify", Duration::from_secs(5), || {
        let text = std::fs::read_to_string(&log).ok()?;
        let lines: Vec<serde_json::Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        (lines.len() == 2).then_some(lines)
    });
    assert!(payloads.iter().all(|p| p["type"] == "agent-turn-complete"), "{payloads:?}");
    run.stop();
    assert_eq!(run.survivors(), vec![], "no Codex process outlives the session");
    assert_eq!(std::fs::read(run.config_path()).unwrap(), before, "the user's config.toml is byte-identical");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_sessions_usage_comes_from_its_own_data_and_stays_apart_from_claudes() {
    let Some(codex) = client() else { return };
    let mock = MockResponses::start().await.expect("the stand-in API starts");
    let mut run = CodexRun::start(&codex, &mock.base_url(), Options::default());
    let rollout_before: Vec<_> = run.rollouts();
    run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("say hi mock:fast", true);
    // The turn's notify carries the rollout's latest figures: the mock's headers, as Codex kept them.
    let usage = wait_for("Codex's usage sample", Duration::from_secs(20), || {
        run.events().into_iter().find(|e| e["event"] == "usage")
    });
    assert_eq!((usage["five_hour_pct"].as_f64(), usage["seven_day_pct"].as_f64()), (Some(35.0), Some(12.0)), "{usage}");
    assert_eq!((usage["model"].as_str(), usage["tokens"].as_u64()), (Some("gpt-5-codex"), Some(1240)), "{usage}");
    let out = run.nightshift(&["usage", "--json"]).stdout(std::process::Stdio::piped()).output().unwrap();
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert!(report["latest"].is_null(), "Claude's chip has no Codex figures: {report}");
    assert_eq!(report["codex"]["latest"]["five_hour_pct"], 35.0, "{report}");
    assert_eq!(report["codex"]["accounts"][0]["agent"], "codex", "{report}");
    let text = run.nightshift(&["usage"]).stdout(std::process::Stdio::piped()).output().unwrap().stdout;
    let text = String::from_utf8(text).unwrap();
    assert!(text.starts_with("Codex:") && text.contains("35%"), "{text}");
    run.stop();
    assert!(rollout_before.is_empty() && run.rollouts().len() == 1, "Codex's files are read, one rollout made by it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_limit_is_read_from_its_own_data_to_the_second() {
    let Some(codex) = client() else { return };
    let mock = MockResponses::start().await.expect("the stand-in API starts");
    // A reset that is not on a minute: the screen says only "Try again at 2:07 AM".
    let reset = mock_responses::epoch(std::time::SystemTime::now()) / 60 * 60 + 3600 + 37;
    mock.set_reset(reset);
    let mut run =
        CodexRun::start(&codex, &mock.base_url(), Options { run_args: &["--auto-resume"], ..Default::default() });
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("go on mock:limit", true);
    let (_, _, paused) = run.wait_state("limit_paused", i + 1, Duration::from_secs(20));
    assert!(paused["reason"].as_str().unwrap().contains("Codex's usage data"), "{paused}");
    let detected = run.events().into_iter().find(|e| e["event"] == "limit_detected").expect("the limit");
    let at = chrono::DateTime::parse_from_rfc3339(detected["resets_at"].as_str().unwrap()).unwrap();
    assert_eq!(at.timestamp() as u64, reset, "the data's reset, to the second: {detected}");
    let usage = run.events().into_iter().find(|e| e["event"] == "usage").expect("the data at the limit");
    assert_eq!(usage["five_hour_pct"], 100.0, "{usage}");
    run.stop();
    assert_eq!(run.survivors(), vec![]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_resumes_the_same_conversation() {
    let Some(codex) = client() else { return };
    let mock = MockResponses::start().await.expect("the stand-in API starts");
    let mut run = CodexRun::start(
        &codex,
        &mock.base_url(),
        Options {
            run_args: &["--respawn", "--restart-backoff", "0.5", "--idle-timeout", "600"],
            args: &["opening prompt mock:fast"],
            ..Default::default()
        },
    );
    let conversation =
        wait_for("the first turn's conversation", Duration::from_secs(30), || run.conversations().into_iter().next());
    let first = run.events().into_iter().find(|e| e["state"] == "running").unwrap()["pid"].as_u64().unwrap();
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(20));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(first as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    let restarted = wait_for("the restart", Duration::from_secs(20), || {
        run.events()
            .into_iter()
            .find(|e| e["state"] == "running" && e["reason"].as_str().unwrap().contains("restarted"))
    });
    let args = argv(restarted["pid"].as_u64().unwrap());
    let at = args.iter().position(|a| a == "resume").unwrap_or_else(|| panic!("resume on the restart: {args:?}"));
    // The same thread, going on with the kickstart (`codex resume ID PROMPT`), marked as
    // Nightshift's.
    assert_eq!(args.len(), at + 3, "{args:?}");
    assert_eq!(args[at + 1], conversation.as_str(), "{args:?}");
    let kickstart = format!("] {}", nightshift::respawn::DEFAULT_KICKSTART_PROMPT);
    assert!(args[at + 2].starts_with(nightshift::automated::MARKER) && args[at + 2].ends_with(&kickstart), "{args:?}");
    assert!(!args.iter().any(|a| a.contains("opening prompt")), "the opening prompt is not sent again: {args:?}");
    assert!(args.iter().any(|a| a.starts_with("notify=")), "the restarted client notifies too: {args:?}");

    let (j, _, _) = run.wait_state("idle", i + 1, Duration::from_secs(30));
    run.send("and now mock:slow:2", true);
    let next = wait_for("the next turn", Duration::from_secs(20), || {
        mock.turns().into_iter().find(|r| r.last_user.contains("and now"))
    });
    assert_eq!(next.thread.as_deref(), Some(conversation.as_str()), "the same thread");
    assert!(
        next.messages.iter().any(|(role, text)| role == "user" && text.contains("opening prompt")),
        "the model gets the earlier turn: {:?}",
        next.messages
    );
    assert_eq!(mock.turns().iter().filter(|r| r.last_user.contains("opening prompt")).count(), 1);
    let (w, _, _) = run.wait_state("working", j + 1, Duration::from_secs(20));
    let (_, _, idle) = run.wait_state("idle", w + 1, Duration::from_secs(20));
    assert!(idle["reason"].as_str().unwrap().contains("Codex's notify"), "the resumed client notifies: {idle}");
    assert_eq!(run.conversations(), [conversation.as_str()], "one conversation all along");
    run.stop();
    assert_eq!(run.survivors(), vec![]);
}

/// A session armed with auto-resume, its opening turn done: the run, its conversation, and the
/// index of the state it went idle at.
fn resuming_after_its_first_turn(codex: &std::path::Path, mock: &MockResponses) -> (CodexRun, String, usize) {
    let run = CodexRun::start(
        codex,
        &mock.base_url(),
        Options { run_args: &["--auto-resume"], args: &["opening prompt mock:fast"], ..Default::default() },
    );
    let conversation =
        wait_for("the first turn's conversation", Duration::from_secs(30), || run.conversations().into_iter().next());
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(20));
    (run, conversation, i)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_restored_after_its_nightshift_ended_resumes_the_same_conversation() {
    let Some(codex) = client() else { return };
    let mock = MockResponses::start().await.expect("the stand-in API starts");
    let (mut run, conversation, i) = resuming_after_its_first_turn(&codex, &mock);
    run.send("go on mock:limit", true);
    run.wait_state("limit_paused", i + 1, Duration::from_secs(20));
    // Nightshift ends while the session waits for the reset: it keeps the resume for the next one.
    run.stop();
    assert_eq!(run.events().last().map(|e| e["event"].clone()), Some("resume_kept".into()), "{:?}", run.events());
    assert_eq!(run.survivors(), vec![]);

    let events = run.env.path("restored.jsonl");
    let mut restore = run.nightshift(&["restore", "--events", events.to_str().unwrap()]).spawn().unwrap();
    let started = wait_for("the restored client", Duration::from_secs(20), || {
        common::read_events(&events).into_iter().find(|e| e["state"] == "running")
    });
    let args = argv(started["pid"].as_u64().unwrap());
    let at = args.iter().position(|a| a == "resume").unwrap_or_else(|| panic!("resume on the restore: {args:?}"));
    assert_eq!(args[at + 1..], [conversation.as_str()], "{args:?}");
    assert!(args.iter().any(|a| a.starts_with("notify=")), "{args:?}");
    let session = run.session();
    wait_for("the conversation on the restored client's screen", Duration::from_secs(20), || {
        let out = run.nightshift(&["screen", &session]).stdout(std::process::Stdio::piped()).output().ok()?;
        String::from_utf8_lossy(&out.stdout).contains("opening prompt mock:fast").then_some(())
    });
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(restore.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = restore.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert_eq!(run.survivors(), vec![], "no Codex process outlives the restored session");
}

/// `nightshift loop --agent codex ARGS` with a private `CODEX_HOME`, to its end: its exit code,
/// stderr and journal events.
fn codex_loop(codex: &std::path::Path, mock: &MockResponses, tasks: &str, args: &[&str]) -> CodexLoop {
    let env = common::Env::new();
    let home = tempfile::Builder::new().prefix("codex-home").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let project = env.path("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(env.path("home")).unwrap();
    std::fs::write(home.path().join("config.toml"), common::codex::config_toml(&mock.base_url(), &project)).unwrap();
    std::fs::write(project.join("TASKS.md"), tasks).unwrap();
    let events = env.path("events.jsonl");
    let mut cmd = common::codex::nightshift(&env, home.path());
    cmd.args(["loop", "--agent", "codex", "--program", codex.to_str().unwrap()])
        .args(["--events", events.to_str().unwrap()])
        .args(args);
    let out = cmd.output().unwrap();
    CodexLoop {
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        events: common::read_events(&events),
        env,
        home,
        project,
    }
}

struct CodexLoop {
    code: Option<i32>,
    stderr: String,
    events: Vec<serde_json::Value>,
    env: common::Env,
    home: tempfile::TempDir,
    project: std::path::PathBuf,
}

impl CodexLoop {
    fn named(&self, name: &str) -> Vec<&serde_json::Value> {
        self.events.iter().filter(|e| e["event"] == name).collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_exec_json_runs_each_task_to_the_end_in_a_fresh_thread() {
    let Some(codex) = client() else { return };
    let mock = MockResponses::start().await.expect("the stand-in API starts");
    let l = codex_loop(&codex, &mock, "- [ ] task-one mock:fast\n- [ ] task-two mock:fast\n", &["--tasks", "TASKS.md"]);
    assert_eq!(l.code, Some(0), "{}\n{:#?}", l.stderr, l.events);
    assert_eq!(
        std::fs::read_to_string(l.project.join("TASKS.md")).unwrap(),
        "- [x] task-one mock:fast\n- [x] task-two mock:fast\n"
    );
    let ended = l.named("iteration_ended");
    assert_eq!(ended.len(), 2, "{ended:?}");
    for e in &ended {
        assert_eq!(e["outcome"], "done", "{e}");
        assert_eq!(e["tokens"], 1240, "the turn's own usage: {e}");
        assert!(e["cost_usd"].is_null(), "Codex reports no cost, and none is made up: {e}");
    }
    let threads: std::collections::HashSet<&str> = ended.iter().filter_map(|e| e["conversation"].as_str()).collect();
    assert_eq!(threads.len(), 2, "a thread per task: {ended:?}");
    // Each task's request carries its own task alone.
    for task in ["task-one", "task-two"] {
        let turn = mock.turns().into_iter().find(|r| r.last_user.contains(task)).expect(task);
        let mentions = turn.messages.iter().filter(|(role, t)| role == "user" && t.contains("task-")).count();
        assert_eq!(mentions, 1, "{task}: {:?}", turn.messages);
        assert_eq!(
            turn.thread.as_deref(),
            ended
                .iter()
                .find(|e| e["task"].as_str().unwrap_or("").contains(task))
                .and_then(|e| e["conversation"].as_str())
        );
    }
    // The iteration's own sandbox lets it work: `exec` alone is read-only.
    let started = l.named("iteration_started");
    assert_eq!(started.len(), 2);

    let session = l.events[0]["session"].as_str().unwrap().to_string();
    let log = common::codex::nightshift(&l.env, l.home.path())
        .args(["log", &session, "--iteration", "2"])
        .stdout(std::process::Stdio::piped())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&log.stdout);
    assert!(log.status.success(), "{}", String::from_utf8_lossy(&log.stderr));
    assert!(text.contains("task-two") && !text.contains("task-one"), "{text}");
    assert!(text.contains("  Hello from the mock server.") && text.contains("= done, 1240 tokens"), "{text}");
    let survivors = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("environ")).ok())
        .filter(|env| env.split(|b| *b == 0).any(|v| v == format!("CODEX_HOME={}", l.home.path().display()).as_bytes()))
        .count();
    assert_eq!(survivors, 0, "no Codex process outlives its iteration");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_loop_keeps_its_token_ceiling_and_refuses_a_cost_one() {
    let Some(codex) = client() else { return };
    let mock = MockResponses::start().await.expect("the stand-in API starts");
    // Each turn uses 1240 tokens: the second crosses 2000.
    let l = codex_loop(&codex, &mock, "", &["--prompt", "improve it mock:fast", "--max-tokens", "2000"]);
    assert_eq!(l.code, Some(0), "{}", l.stderr);
    assert_eq!(l.named("iteration_ended").len(), 2, "{:#?}", l.events);
    let tripped = l.named("breaker");
    assert_eq!(tripped.len(), 1, "{tripped:?}");
    assert_eq!(tripped[0]["breaker"], "budget");
    let end = l.named("state").last().copied().unwrap();
    assert_eq!(
        end["reason"], "stopped by its budget: used 2480 tokens of its 2000 (2 iteration(s), 2480 tokens)",
        "told in tokens, with no made-up cost"
    );

    let refused = codex_loop(&codex, &mock, "", &["--prompt", "x", "--max-cost-usd", "1"]);
    assert_eq!(refused.code, Some(1), "{}", refused.stderr);
    assert_eq!(
        refused.stderr.trim(),
        "nightshift: codex exec reports tokens but no cost, so --max-cost-usd cannot be kept; cap the loop with --max-tokens"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_respawn_cycle_runs_each_step_on_codex_and_the_no_progress_breaker_opens() {
    let Some(codex) = client() else { return };
    let mock = MockResponses::start().await.expect("the stand-in API starts");
    let run = CodexRun::start(
        &codex,
        &mock.base_url(),
        Options {
            run_args: &[
                "--no-sandbox",
                "--preset",
                "overnight",
                "--idle-timeout",
                "2",
                "--user-quiet",
                "0",
                "--inter-step-delay",
                "0.5",
                "--update-prompt",
                "write down where you got to mock:fast",
                "--kickstart-prompt",
                "carry on mock:fast",
                "--breaker-retry",
                "never",
            ],
            args: &["opening prompt mock:fast"],
            ..Default::default()
        },
    );
    let opened = wait_for("the no-progress breaker", Duration::from_secs(180), || {
        run.events().into_iter().find(|e| e["event"] == "breaker" && e["state"] == "open")
    });
    let events = run.events();
    assert_eq!(opened["breaker"], "no_progress", "{opened}");
    let steps: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["event"] == "respawn_step" && e["cycle"] == 1)
        .map(|e| (e["step"].as_str().unwrap().to_string(), e["outcome"].as_str().unwrap().to_string()))
        .collect();
    let want: Vec<(String, String)> = [("update", "sent"), ("update", "done"), ("clear", "sent"), ("clear", "done")]
        .into_iter()
        .chain([("init", "sent"), ("init", "done"), ("kickstart", "sent")])
        .map(|(s, o)| (s.to_string(), o.to_string()))
        .collect();
    assert_eq!(steps, want, "each step typed once the one before it was seen to complete");
    let finished = events.iter().filter(|e| e["event"] == "respawn" && e["action"] == "cycle_finished").count();
    assert_eq!(finished, 2, "two cycles without progress, and the third is not let through");
    // Open, it lets nothing more reach the client.
    let turns = mock.turns().len();
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(mock.turns().len(), turns, "no prompt after the breaker opened");
    // `/clear` starts a fresh thread: the kickstart is not in the first thread.
    let kick = mock.turns().into_iter().find(|r| r.last_user.contains("carry on")).expect("the kickstart's turn");
    let first = mock.turns().into_iter().find(|r| r.last_user.contains("opening prompt")).expect("the opening turn");
    assert_ne!(kick.thread, first.thread, "the kickstart runs in a fresh context");
    assert!(!kick.messages.iter().any(|(_, t)| t.contains("opening prompt")), "{:?}", kick.messages);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_that_keeps_dying_at_its_start_opens_the_crash_loop_breaker() {
    let Some(codex) = client() else { return };
    let mock = MockResponses::start().await.expect("the stand-in API starts");
    // An argument this client refuses: it exits at once, non-zero, on every start.
    let run = CodexRun::start(
        &codex,
        &mock.base_url(),
        Options {
            run_args: &["--respawn", "--restart-backoff", "0.2", "--breaker-retry", "never"],
            args: &["--no-such-option"],
            ..Default::default()
        },
    );
    let opened = wait_for("the crash-loop breaker", Duration::from_secs(60), || {
        run.events().into_iter().find(|e| e["event"] == "breaker" && e["state"] == "open")
    });
    assert_eq!(opened["breaker"], "crash_loop", "{opened}");
    let ended = |run: &CodexRun| -> Vec<serde_json::Value> {
        run.events().into_iter().filter(|e| e["state"] == "exited").map(|e| e["exit_code"].clone()).collect()
    };
    let exits = |run: &CodexRun| ended(run).len();
    let lives = exits(&run);
    assert_eq!(lives, 5, "five quick non-zero ends: {:#?}", run.events());
    let codes = ended(&run);
    assert!(codes.iter().all(|c| c.as_i64().is_some_and(|c| c != 0)), "{codes:?}");
    assert_eq!(run.states().last().map(|s| s.1.clone()).as_deref(), Some("breaker_open"));
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(exits(&run), lives, "no start after the breaker opened");
    assert!(mock.requests().is_empty(), "a client that never started asked nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_a_minute_out_is_waited_and_resumed_once_in_the_same_thread() {
    let Some(codex) = client() else { return };
    let mock = MockResponses::start().await.expect("the stand-in API starts");
    let (mut run, conversation, i) = resuming_after_its_first_turn(&codex, &mock);
    let reset = mock_responses::epoch(std::time::SystemTime::now()) + 60;
    mock.set_reset(reset);
    run.send("go on mock:limit", true);
    run.wait_state("limit_paused", i + 1, Duration::from_secs(20));
    let refused = mock.requests().len();
    let sent = (0..900)
        .find_map(|_| {
            std::thread::sleep(Duration::from_millis(100));
            run.events().into_iter().find(|e| e["event"] == "resume_sent")
        })
        .unwrap_or_else(|| panic!("no continuation: {}", run.env.stdout(&["journal"])));
    let next = wait_for("the continuation's turn", Duration::from_secs(20), || {
        mock.requests().into_iter().skip(refused).find(|r| r.kind == mock_responses::Kind::Turn)
    });
    wait_for("the limit cleared", Duration::from_secs(20), || {
        run.events().into_iter().find(|e| e["event"] == "limit_cleared")
    });
    let after = mock.requests().into_iter().skip(refused).collect::<Vec<_>>();
    let late =
        next.at.duration_since(std::time::UNIX_EPOCH + Duration::from_secs(reset)).expect("not before the reset");
    eprintln!("the continuation reached the API {late:?} after the reset ({})", sent["reason"]);
    assert!(late < Duration::from_secs(15), "{late:?}");
    assert_eq!(next.status, 200, "{next:?}");
    assert_eq!(after.iter().filter(|r| r.kind == mock_responses::Kind::Turn).count(), 1, "one continuation: {after:?}");
    assert_eq!(next.thread.as_deref(), Some(conversation.as_str()), "in place: the same thread");
    assert!(next.messages.iter().any(|(_, t)| t.contains("opening prompt")), "{:?}", next.messages);
    let limited = mock.requests().iter().filter(|r| r.status == 429).count();
    assert_eq!(limited, 1, "nothing asked while the window was full");
    // Codex's "switch to a cheaper model?" menu at the limit would hold the resume until morning.
    assert!(!run.states().iter().any(|(_, s, _)| s == "waiting_input"), "{:?}", run.states());
    run.stop();
    assert_eq!(run.survivors(), vec![]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_91_percent_a_codex_session_hands_off_at_its_prompt_and_moves_to_the_other_account() {
    let Some(codex) = client() else { return };
    let mock = MockResponses::start().await.expect("the stand-in API starts");
    mock.set_used(Some("a"), 91.0);
    mock.set_used(Some("b"), 20.0);
    let run = CodexRun::start(
        &codex,
        &mock.base_url(),
        Options { run_args: &["--account", "a", "--switch-accounts"], accounts: &["a", "b"], ..Default::default() },
    );
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    common::known_meter(&run.env.state_dir(), "codex", "b", 20.0);
    // Long enough to be read as working: a turn of a fraction of a second can end before Codex's
    // screen shows it (Codex has no hook when a turn begins).
    run.send("start on the parser (first-prompt-7c1d) mock:slow:2", true);
    run.wait_state("working", i + 1, Duration::from_secs(15));
    let switched = wait_for("the switch", Duration::from_secs(60), || {
        run.events().into_iter().find(|e| e["event"] == "account_switch" && e["action"] == "switched")
    });
    assert_eq!((switched["from"].as_str(), switched["to"].as_str()), (Some("a"), Some("b")), "{switched}");
    let events = run.events();
    let at = |name: &str| events.iter().position(|e| e["event"] == name);
    let names: Vec<_> = events.iter().map(|e| format!("{} {} {}", e["event"], e["action"], e["state"])).collect();
    let moved = events.iter().position(|e| e["event"] == "account_switch" && e["action"] == "switched");
    assert!(at("handoff_asked") < at("handoff") && at("handoff") < moved, "asked, written, then moved: {names:?}");
    // The request was typed at a's prompt and answered on a: that answer is the handoff.
    let asked = mock.turns().into_iter().find(|r| r.last_user.contains("answer with a handoff")).expect("asked");
    assert_eq!(asked.account.as_deref(), Some("a"));
    // b's first turn: b's login, a fresh thread, the whole handoff in its prompt, none of a's thread.
    let first_on_b = wait_for("a turn on b", Duration::from_secs(30), || {
        mock.turns().into_iter().find(|r| r.account.as_deref() == Some("b"))
    });
    assert!(first_on_b.last_user.contains("Hello from the mock server"), "the handoff: {}", first_on_b.last_user);
    assert!(!first_on_b.body.contains("first-prompt-7c1d"), "a's thread is not resumed on b");
    assert_ne!(first_on_b.thread, asked.thread, "a thread of b's own");
    assert!(mock
        .turns()
        .iter()
        .take_while(|r| r.account.as_deref() != Some("b"))
        .all(|r| r.account.as_deref() == Some("a")));
    wait_for("b's usage", Duration::from_secs(30), || {
        run.events().iter().any(|e| e["event"] == "usage" && e["five_hour_pct"] == 20.0).then_some(())
    });
    let rows: Vec<serde_json::Value> = serde_json::from_str(&run.env.stdout(&["sessions", "--json"])).unwrap();
    let row = rows.iter().find(|r| r["id"] == run.session().as_str()).expect("the session listed");
    assert_eq!(row["account"], "b", "{row}");
    // Each account's windows, apart, in `usage --json`.
    let out = run.nightshift(&["usage", "--json"]).stdout(std::process::Stdio::piped()).output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let accounts = report["codex"]["accounts"].as_array().cloned().unwrap_or_default();
    let pct =
        |name: &str| accounts.iter().find(|a| a["account"] == name).and_then(|a| a["latest"]["five_hour_pct"].as_f64());
    assert_eq!((pct("a"), pct("b")), (Some(91.0), Some(20.0)), "{report}");
    assert!(report["accounts"].as_array().is_none_or(|a| a.iter().all(|a| a["agent"] != "codex")), "{report}");
    let mut run = run;
    run.stop();
    assert_eq!(run.survivors(), vec![], "no Codex process of either account outlives the session");
    let b_config = std::fs::read_to_string(run.others[0].path().join("config.toml")).unwrap();
    assert!(!b_config.contains("notify") && !b_config.contains("nightshift"), "b's config.toml untouched: {b_config}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_loop_of_three_tasks_finishes_within_its_token_budget_and_one_past_it_stops() {
    let Some(codex) = client() else { return };
    let mock = MockResponses::start().await.expect("the stand-in API starts");
    let tasks = "- [ ] task-one mock:fast\n- [ ] task-two mock:fast\n- [ ] task-three mock:fast\n";
    // 3 × 1240 tokens fit in 4000.
    let l = codex_loop(&codex, &mock, tasks, &["--tasks", "TASKS.md", "--max-tokens", "4000"]);
    assert_eq!(l.code, Some(0), "{}\n{:#?}", l.stderr, l.events);
    assert_eq!(std::fs::read_to_string(l.project.join("TASKS.md")).unwrap(), tasks.replace("[ ]", "[x]"));
    let ended = l.named("iteration_ended");
    assert_eq!(ended.iter().map(|e| e["tokens"].as_u64()).collect::<Vec<_>>(), [Some(1240); 3]);
    assert!(l.named("breaker").is_empty(), "{:?}", l.named("breaker"));
    let threads: std::collections::HashSet<_> = ended.iter().filter_map(|e| e["conversation"].as_str()).collect();
    assert_eq!(threads.len(), 3, "a fresh thread per task");
    // The same three tasks with 2000: the second crosses it, the third is left for tomorrow.
    let l = codex_loop(&codex, &mock, tasks, &["--tasks", "TASKS.md", "--max-tokens", "2000"]);
    assert_eq!(l.code, Some(0), "{}", l.stderr);
    assert_eq!(
        std::fs::read_to_string(l.project.join("TASKS.md")).unwrap(),
        "- [x] task-one mock:fast\n- [x] task-two mock:fast\n- [ ] task-three mock:fast\n"
    );
    assert_eq!(l.named("breaker").first().map(|b| b["breaker"].clone()), Some("budget".into()));
    let end = l.named("state").last().copied().unwrap();
    assert_eq!(end["reason"], "stopped by its budget: used 2480 tokens of its 2000 (2 iteration(s), 2480 tokens)");
}
