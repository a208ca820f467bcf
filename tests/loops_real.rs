//! `nightshift loop` against the real `claude -p` and the project's mock API on 127.0.0.1: fresh
//! conversations per task, tasks checked off, the budget, a limit's wait and re-run, the retry
//! ladder, narration that quotes a limit, STOP during a wait, two projects in turn.

use crate::{common, mock_api};

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::claude::{client, Auth, ClientHome};
use common::{read_events, wait_for, Env};
use mock_api::{MockApi, Usage};
use serde_json::Value;

struct Loop {
    env: Env,
    home: ClientHome,
    events: PathBuf,
    child: Option<Child>,
}

impl Loop {
    fn new(mock: &MockApi, trusted: &[&Path]) -> Self {
        let env = Env::new();
        let home = ClientHome::new(&env, &mock.base_url(), Auth::Subscriber, trusted);
        let events = env.path("events.jsonl");
        Self { env, home, events, child: None }
    }

    /// Starts `nightshift loop ARGS -- --permission-mode acceptEdits` with the real client.
    fn start(&mut self, claude: &Path, args: &[&str]) {
        let mut cmd = Command::new(common::bin());
        cmd.arg("loop").args(["--program", claude.to_str().unwrap(), "--events", self.events.to_str().unwrap()]);
        cmd.args(args).current_dir(&self.home.workdir);
        self.home.apply(&mut cmd);
        // One try per session: the loop's own ladder does the retrying.
        cmd.env("CLAUDE_CODE_MAX_RETRIES", "0").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        self.child = Some(cmd.spawn().expect("start nightshift loop"));
    }

    fn events(&self) -> Vec<Value> {
        read_events(&self.events)
    }

    fn named(&self, name: &str) -> Vec<Value> {
        self.events().into_iter().filter(|e| e["event"] == name).collect()
    }

    fn session(&self) -> String {
        wait_for("the loop to start", Duration::from_secs(20), || {
            self.events().first().and_then(|e| e["session"].as_str().map(String::from))
        })
    }

    /// Waits for the loop to end; its exit code and its stderr.
    fn finish(&mut self, limit: Duration) -> (i32, String) {
        let mut child = self.child.take().expect("started");
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                let mut stderr = String::new();
                std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
                return (status.code().unwrap_or(-1), stderr);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!(
                    "the loop did not end in {limit:?}; events:\n{}",
                    self.env.stdout(&["journal", "--session", &self.session()])
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn nightshift(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = Command::new(common::bin());
        cmd.args(args);
        self.home.apply(&mut cmd);
        cmd.output().unwrap()
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The user messages of a request's conversation.
fn user_turns(body: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    v["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"),
            _ => String::new(),
        })
        .collect()
}

fn epoch_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_tasks_are_three_fresh_conversations_each_checked_off() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let mut l = Loop::new(&mock, &[]);
    let tasks = l.home.workdir.join("TASKS.md");
    std::fs::write(
        &tasks,
        "# Tonight\n- [ ] task-alpha mock:fast\n- [ ] task-beta mock:fast\n- [ ] task-gamma mock:fast\n",
    )
    .unwrap();
    l.start(&claude, &["--tasks", "TASKS.md"]);
    let (code, stderr) = l.finish(Duration::from_secs(120));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&tasks).unwrap(),
        "# Tonight\n- [x] task-alpha mock:fast\n- [x] task-beta mock:fast\n- [x] task-gamma mock:fast\n"
    );
    // Each task's first request carries that task alone: no earlier conversation.
    for task in ["task-alpha", "task-beta", "task-gamma"] {
        let first = mock.messages().into_iter().find(|r| r.last_user.contains(task)).expect(task);
        let turns = user_turns(&first.body);
        let mentions: Vec<&String> = turns.iter().filter(|t| t.contains("task-")).collect();
        assert_eq!(mentions.len(), 1, "{task}: only its own task in the conversation: {turns:?}");
        assert!(mentions[0].contains(task));
    }
    let conversations: std::collections::HashSet<String> =
        l.named("iteration_ended").iter().filter_map(|e| e["conversation"].as_str().map(String::from)).collect();
    assert_eq!(conversations.len(), 3, "three conversations");
    assert_eq!(l.named("task_done").len(), 3);
    let last = l.events().into_iter().rev().find(|e| e["event"] == "state").unwrap();
    assert_eq!(last["state"], "exited");
    assert!(last["reason"].as_str().unwrap().starts_with("every task is done (3 iteration(s)"), "{last}");

    // What it did, as a person reads it; kept gzipped in the state directory, not the project.
    let session = l.session();
    let log = l.nightshift(&["log", &session, "--iteration", "2"]);
    let text = String::from_utf8_lossy(&log.stdout);
    assert!(log.status.success(), "{}", String::from_utf8_lossy(&log.stderr));
    assert!(text.contains("iteration 2 started") && text.contains("task-beta"), "{text}");
    assert!(text.contains("Hello from the mock server") && text.contains("= done, $0.0"), "{text}");
    assert!(!text.contains("task-alpha"), "only iteration 2: {text}");
    let kept = l.env.state_dir().join("loops").join(&session);
    assert!(kept.join("iteration-0002-1.jsonl.gz").exists());
    let listed: Vec<String> = std::fs::read_dir(&l.home.workdir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(listed, ["TASKS.md"], "nothing of Nightshift's in the project");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cost_ceiling_stops_after_the_iteration_that_crossed_it() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let mut l = Loop::new(&mock, &[]);
    // Each answer costs about $0.004 by the client's own totals: the second crosses $0.006.
    l.start(&claude, &["--prompt", "improve it mock:fast", "--max-cost-usd", "0.006"]);
    let (code, stderr) = l.finish(Duration::from_secs(90));
    assert_eq!(code, 0, "{stderr}");
    let costs: Vec<f64> = l.named("iteration_ended").iter().map(|e| e["cost_usd"].as_f64().unwrap()).collect();
    let total: f64 = costs.iter().sum();
    let before: f64 = costs[..costs.len() - 1].iter().sum();
    assert!(before < 0.006 && total >= 0.006, "stopped after the iteration that crossed it: {costs:?}");
    assert_eq!(l.named("iteration_started").len(), costs.len(), "no iteration after it");
    let tripped = l.named("breaker");
    assert_eq!(tripped.len(), 1, "{tripped:?}");
    assert_eq!(tripped[0]["breaker"], "budget");
    assert!(tripped[0]["reason"].as_str().unwrap().contains("of its $0.0060"), "{}", tripped[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_waits_for_its_reset_then_runs_the_same_task_again() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let reset = epoch_now() + 15;
    mock.set_usage(Usage {
        five_hour: 1.0,
        five_hour_reset: reset,
        seven_day: 0.5,
        seven_day_reset: epoch_now() + 86400,
    });
    let mut l = Loop::new(&mock, &[]);
    std::fs::write(l.home.workdir.join("TASKS.md"), "- [ ] the-limited-task mock:limit\n").unwrap();
    l.start(&claude, &["--tasks", "TASKS.md", "--limit-margin", "1s", "--probe-every", "1h"]);
    let (code, stderr) = l.finish(Duration::from_secs(90));
    assert_eq!(code, 0, "{stderr}");
    let detected = l.named("limit_detected");
    assert_eq!(detected.len(), 1, "{detected:?}");
    assert_eq!(detected[0]["source"], "stream");
    let at = chrono::DateTime::parse_from_rfc3339(detected[0]["resets_at"].as_str().unwrap()).unwrap();
    assert_eq!(at.timestamp() as u64, reset, "the typed reset");
    let started = l.named("iteration_started");
    let attempts: Vec<(u64, u64)> =
        started.iter().map(|e| (e["iteration"].as_u64().unwrap(), e["attempt"].as_u64().unwrap())).collect();
    assert_eq!(attempts, [(1, 1), (1, 2)], "the same iteration again, not the next");
    let second = chrono::DateTime::parse_from_rfc3339(started[1]["ts"].as_str().unwrap()).unwrap();
    assert!(second.timestamp() as u64 > reset, "only after the reset plus the margin");
    assert_eq!(l.named("task_done").len(), 1);
    let states: Vec<String> = l.named("state").iter().map(|e| e["state"].as_str().unwrap().to_string()).collect();
    assert!(states.contains(&"limit_paused".to_string()), "{states:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overloaded_burst_is_retried_on_the_ladder_then_succeeds() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let mut l = Loop::new(&mock, &[]);
    std::fs::write(l.home.workdir.join("TASKS.md"), "- [ ] busy-api mock:overload:2\n").unwrap();
    l.start(&claude, &["--tasks", "TASKS.md", "--retry-first", "1s", "--retry-cap", "2s"]);
    let (code, stderr) = l.finish(Duration::from_secs(90));
    assert_eq!(code, 0, "{stderr}");
    let waits: Vec<String> = l.named("loop_wait").iter().map(|e| e["detail"].as_str().unwrap().to_string()).collect();
    assert_eq!(waits.len(), 2, "{waits:?}");
    assert!(waits[0].starts_with("retry 1 in 1s: HTTP 529") && waits[1].starts_with("retry 2 in 2s"), "{waits:?}");
    let outcomes: Vec<String> =
        l.named("iteration_ended").iter().map(|e| e["outcome"].as_str().unwrap().to_string()).collect();
    assert_eq!(outcomes, ["transient", "transient", "done"]);
    assert_eq!(l.named("task_done").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_quotes_a_limit_message_is_not_a_limit() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let mut l = Loop::new(&mock, &[]);
    std::fs::write(
        l.home.workdir.join("TASKS.md"),
        "- [ ] fix the banner that says \"You've hit your limit · resets 3pm\" and API Error: 500\n",
    )
    .unwrap();
    l.start(&claude, &["--tasks", "TASKS.md"]);
    let (code, stderr) = l.finish(Duration::from_secs(60));
    assert_eq!(code, 0, "{stderr}");
    assert!(l.named("limit_detected").is_empty());
    let outcomes: Vec<String> =
        l.named("iteration_ended").iter().map(|e| e["outcome"].as_str().unwrap().to_string()).collect();
    assert_eq!(outcomes, ["done"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_during_a_limit_wait_ends_the_loop_within_a_second() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    mock.set_usage(Usage {
        five_hour: 1.0,
        five_hour_reset: epoch_now() + 3600,
        seven_day: 0.5,
        seven_day_reset: epoch_now() + 86400,
    });
    let mut l = Loop::new(&mock, &[]);
    l.start(&claude, &["--prompt", "work mock:limit"]);
    let session = l.session();
    wait_for("the limit wait", Duration::from_secs(60), || {
        l.named("state").iter().any(|e| e["state"] == "limit_paused").then_some(())
    });
    let asked = Instant::now();
    let out = l.nightshift(&["loop", "stop", &session]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (code, stderr) = l.finish(Duration::from_secs(10));
    let took = asked.elapsed();
    eprintln!("the loop ended {took:?} after `nightshift loop stop` in its limit wait");
    assert_eq!(code, 0, "{stderr}");
    assert!(took <= Duration::from_millis(1500), "ended {took:?} after the STOP (the marker is read every 250 ms)");
    let last = l.named("state").pop().unwrap();
    assert!(last["reason"].as_str().unwrap().contains("stop marker"), "{last}");
    // A marker for every loop is reported at the next start, not obeyed silently.
    let out = l.nightshift(&["loop", "stop"]);
    assert!(out.status.success());
    let again = l.nightshift(&["loop", "--prompt", "x"]);
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(!again.status.success() && err.contains("STOP marker is left over") && err.contains("rm "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_projects_take_turns() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("api"), root.path().join("web"));
    for (dir, name) in [(&a, "api"), (&b, "web")] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("TASKS.md"), format!("- [ ] {name}-one mock:fast\n- [ ] {name}-two mock:fast\n"))
            .unwrap();
    }
    let (a, b) = (std::fs::canonicalize(&a).unwrap(), std::fs::canonicalize(&b).unwrap());
    let mut l = Loop::new(&mock, &[&a, &b]);
    l.start(&claude, &["--tasks", "TASKS.md", "--cwd", a.to_str().unwrap(), "--cwd", b.to_str().unwrap()]);
    let (code, stderr) = l.finish(Duration::from_secs(120));
    assert_eq!(code, 0, "{stderr}");
    let order: Vec<String> =
        l.named("iteration_started").iter().map(|e| e["task"].as_str().unwrap().to_string()).collect();
    assert_eq!(order, ["api-one mock:fast", "web-one mock:fast", "api-two mock:fast", "web-two mock:fast"]);
    for dir in [&a, &b] {
        assert!(!std::fs::read_to_string(dir.join("TASKS.md")).unwrap().contains("[ ]"));
    }
}

/// `nightshift loop` killed mid-iteration (an OOM kill: no word to the journal): `nightshift
/// restore` runs its interrupted task again, from the loop's contract, and finishes the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loop_killed_mid_iteration_is_restored_on_its_interrupted_task() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let mut l = Loop::new(&mock, &[]);
    let tasks = l.home.workdir.join("TASKS.md");
    std::fs::write(&tasks, "- [ ] task-first mock:fast\n- [ ] task-long mock:slow:30\n- [ ] task-last mock:fast\n")
        .unwrap();
    l.start(&claude, &["--tasks", "TASKS.md", "--max-iterations", "5"]);
    let session = l.session();
    wait_for("the long task under way", Duration::from_secs(60), || {
        mock.messages().iter().any(|r| r.last_user.contains("task-long")).then_some(())
    });
    let mut child = l.child.take().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let asked = mock.messages().iter().filter(|r| r.last_user.contains("task-long")).count();
    mock.set_default("fast");
    std::fs::write(&tasks, std::fs::read_to_string(&tasks).unwrap().replace("mock:slow:30", "mock:fast")).unwrap();

    let events = l.env.path("restore.jsonl");
    let mut cmd = Command::new(common::bin());
    cmd.args(["restore", "--events", events.to_str().unwrap()]).current_dir(&l.home.workdir);
    l.home.apply(&mut cmd);
    let mut restore =
        common::KillOnDrop(cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap());
    let status = wait_for("the restored loop to finish", Duration::from_secs(120), || restore.0.try_wait().unwrap());
    assert!(status.success());
    assert_eq!(
        std::fs::read_to_string(&tasks).unwrap(),
        "- [x] task-first mock:fast\n- [x] task-long mock:fast\n- [x] task-last mock:fast\n",
        "the interrupted task ran again, and the rest"
    );
    assert!(mock.messages().iter().filter(|r| r.last_user.contains("task-long")).count() > asked, "task-long again");
    let restored = read_events(&events);
    let said = restored.iter().find(|e| e["event"] == "restored").expect("journalled");
    assert_eq!(said["session"], session.as_str(), "the same loop, under its own id");
    assert!(said["reason"].as_str().unwrap().contains("loop"), "{said}");
}
