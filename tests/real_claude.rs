//! The detector judged by the real Claude Code client: `nightshift run --agent claude` in a real PTY,
//! the client talking to the project's mock API on 127.0.0.1. These take real time (a 20 s answer,
//! a 30 s tool call); they run in parallel with each other.

mod common;
#[path = "mock_api/mod.rs"]
mod mock_api;

use std::time::{Duration, SystemTime};

use common::claude::{client, ClaudeRun, Options};
use mock_api::MockApi;

const QUIET: Duration = Duration::from_secs(2);

fn secs(a: SystemTime, b: SystemTime) -> f64 {
    match a.duration_since(b) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

/// The states after event index `from`, by name.
fn names(run: &ClaudeRun, from: usize) -> Vec<String> {
    run.states().into_iter().skip(from).map(|(_, s, _)| s).collect()
}

#[test]
fn the_mocks_scenario_is_the_last_marker_typed() {
    use mock_api::{scenario_for, Scenario};
    assert_eq!(scenario_for("hi"), Scenario::Fast);
    assert_eq!(scenario_for("hit the limit mock:limit\n\nnow it works mock:fast"), Scenario::Fast);
    assert_eq!(scenario_for("work mock:slow:5"), Scenario::Slow(Duration::from_secs(5)));
    assert_eq!(scenario_for("mock:tool:30 please"), Scenario::Tool(30));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_at_the_prompt_and_a_keystroke_is_not_a_turn() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await;
    let run = ClaudeRun::start(&claude, &mock.base_url(), Options { cols: 80, rows: 24, ..Default::default() });
    let (i, _, idle) = run.wait_state("idle", 0, Duration::from_secs(30));
    assert!(idle["reason"].as_str().unwrap().contains("prompt is ready"), "{idle}");
    run.send_keys("h");
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(names(&run, i + 1), Vec::<String>::new(), "typing a character started nothing");
    assert!(mock.messages().is_empty(), "nothing was sent to the API");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_answer_is_working_all_along_and_idle_soon_after() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await;
    let run = ClaudeRun::start(&claude, &mock.base_url(), Options::default());
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("tell me slowly mock:slow:20", true);
    let (w, working_at, working) = run.wait_state("working", i + 1, Duration::from_secs(15));
    assert!(working["reason"].as_str().unwrap().starts_with("turn started"), "{working}");
    let (d, idle_at, _) = run.wait_state("idle", w + 1, Duration::from_secs(60));
    let request = mock.messages().into_iter().find(|r| r.scenario == "slow:20").expect("the slow request");
    let done = request.done_at.expect("the stream finished");
    assert!(secs(done, working_at) > 18.0, "working from the start of the 20 s stream");
    assert_eq!(names(&run, w + 1)[..d - w - 1], Vec::<String>::new(), "no other state in between");
    let latency = secs(idle_at, done);
    assert!(latency > 0.0, "idle only after the last byte ({latency:.2} s)");
    assert!(latency <= QUIET.as_secs_f64() + 0.5, "idle {latency:.2} s after the last byte");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_30s_tool_call_stays_working() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await;
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options {
            args: &["--permission-mode", "default", "--allowedTools", "Bash"],
            cols: 160,
            rows: 48,
            ..Default::default()
        },
    );
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("wait for it mock:tool:30", true);
    let (w, _, _) = run.wait_state("working", i + 1, Duration::from_secs(15));
    let (d, idle_at, _) = run.wait_state("idle", w + 1, Duration::from_secs(75));
    let answer = mock.messages().into_iter().find(|r| r.scenario == "after_tool").expect("the tool result came back");
    assert!(answer.last_user.contains("waited 30s"), "the tool really ran: {}", answer.last_user);
    assert!(secs(idle_at, answer.at) > 0.0, "no idle while the tool ran");
    assert_eq!(d, w + 1, "working until the turn ended: {:?}", names(&run, w));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_prompt_is_waiting_input() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await;
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options { args: &["--permission-mode", "default"], ..Default::default() },
    );
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("make a file mock:perm", true);
    let (_, _, waiting) = run.wait_state("waiting_input", i + 1, Duration::from_secs(20));
    assert_eq!(waiting["dialog"]["kind"], "permission", "{waiting}");
    assert_eq!(waiting["dialog"]["text"], "Do you want to proceed?", "{waiting}");
    assert!(!run.workdir.join("mock-permission-file").exists(), "nothing ran without permission");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_from_the_agent_is_waiting_input() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await;
    let run = ClaudeRun::start(&claude, &mock.base_url(), Options { cols: 100, rows: 30, ..Default::default() });
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("ask me mock:question", true);
    let (_, _, waiting) = run.wait_state("waiting_input", i + 1, Duration::from_secs(20));
    assert_eq!(waiting["dialog"]["kind"], "question", "{waiting}");
    assert_eq!(waiting["dialog"]["text"], "Which database should the new service use?", "{waiting}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retrying_an_overloaded_api_is_working_and_giving_up_is_idle() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await;
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options { extra_env: &[("CLAUDE_CODE_MAX_RETRIES", "3")], ..Default::default() },
    );
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("hi mock:overload", true);
    let (w, _, _) = run.wait_state("working", i + 1, Duration::from_secs(15));
    let (d, idle_at, _) = run.wait_state("idle", w + 1, Duration::from_secs(60));
    let attempts: Vec<_> = mock.messages().into_iter().filter(|r| r.scenario == "overload").collect();
    assert_eq!(attempts.len(), 4, "the first try and 3 retries");
    let last = attempts.last().unwrap().at;
    assert!(secs(idle_at, last) > 0.0, "working through every retry, idle only after giving up");
    assert_eq!(d, w + 1, "{:?}", names(&run, w));
}
