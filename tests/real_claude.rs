//! The detector judged by the real Claude Code client: `nightshift run --agent claude` in a real PTY,
//! the client talking to the project's mock API on 127.0.0.1. These take real time (a 20 s answer,
//! a 30 s tool call); they run in parallel with each other.
//!
//! The detection tests read the screen alone (`--no-hooks`): the fallback for a client that sends no
//! hooks (an older one, Codex, a generic agent) stays measured against the real client. The hooks'
//! signals are `tests/hooks_real.rs`.

use crate::{common, mock_api};

use std::time::{Duration, SystemTime};

use common::claude::{client, ClaudeRun, Options};
use mock_api::MockApi;

const QUIET: Duration = Duration::from_secs(2);
/// The screen alone decides.
const SCREEN_ONLY: &[&str] = &["--no-hooks"];

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
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options { cols: 80, rows: 24, run_args: SCREEN_ONLY, client_settings: Some(SETTINGS), ..Default::default() },
    );
    let (i, _, idle) = run.wait_state("idle", 0, Duration::from_secs(30));
    assert!(idle["reason"].as_str().unwrap().contains("prompt is ready"), "{idle}");
    run.send_keys("h");
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(names(&run, i + 1), Vec::<String>::new(), "typing a character started nothing");
    assert!(mock.messages().is_empty(), "nothing was sent to the API");
    // Tonight's client stays tonight's: its auto-updater held for the session (Nightshift's run was
    // not given the switch), and nothing written to the client's settings for it.
    let pid = run.events().into_iter().find(|e| e["state"] == "running").unwrap()["pid"].as_u64().unwrap();
    assert!(common::environ(pid).contains(&"DISABLE_AUTOUPDATER=1".to_string()), "{:?}", common::environ(pid));
    let settings = std::fs::read_to_string(run.env.path("claude-config").join("settings.json")).unwrap();
    assert_eq!(settings, SETTINGS, "the user's settings byte for byte");
}

/// A user's own settings.json, which a session must leave as it was: as the client itself leaves it
/// (it moves the test home's `bypassPermissionsModeAccepted` here on its start).
const SETTINGS: &str = "{\n  \"cleanupPeriodDays\": 30,\n  \"skipDangerousModePermissionPrompt\": true\n}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_answer_is_working_all_along_and_idle_soon_after() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let run = ClaudeRun::start(&claude, &mock.base_url(), Options { run_args: SCREEN_ONLY, ..Default::default() });
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
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options {
            args: &["--permission-mode", "default", "--allowedTools", "Bash"],
            cols: 160,
            rows: 48,
            run_args: SCREEN_ONLY,
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
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options { args: &["--permission-mode", "default"], run_args: SCREEN_ONLY, ..Default::default() },
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
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options { cols: 100, rows: 30, run_args: SCREEN_ONLY, ..Default::default() },
    );
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("ask me mock:question", true);
    let (_, _, waiting) = run.wait_state("waiting_input", i + 1, Duration::from_secs(20));
    assert_eq!(waiting["dialog"]["kind"], "question", "{waiting}");
    assert_eq!(waiting["dialog"]["text"], "Which database should the new service use?", "{waiting}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retrying_an_overloaded_api_is_working_and_giving_up_is_idle() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options { extra_env: &[("CLAUDE_CODE_MAX_RETRIES", "3")], run_args: SCREEN_ONLY, ..Default::default() },
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_solo_preset_runs_update_clear_init_kickstart_in_order_after_a_turn() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    // /init's prompt carries no marker: make its turn a visible one.
    mock.set_default("slow:2");
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options {
            run_args: &[
                "--preset",
                "solo",
                "--update-prompt",
                "UPDATE-STEP write down where you are mock:slow:2",
                "--kickstart-prompt",
                "KICKSTART-STEP carry on mock:slow:40",
                // The test types its first prompt through `nightshift send`, which counts as the user.
                "--user-quiet",
                "1",
            ],
            ..Default::default()
        },
    );
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("do the work mock:slow:2", true);
    run.wait_state("working", i + 1, Duration::from_secs(15));
    // The cycle: update → /clear → /init → kickstart, then the agent works on the kickstart.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !mock.messages().iter().any(|r| r.last_user.contains("KICKSTART-STEP")) {
        assert!(
            std::time::Instant::now() < deadline,
            "no kickstart; events:\n{}\nrequests: {:?}",
            run.env.stdout(&["journal"]),
            mock.messages()
                .iter()
                .map(|r| (r.scenario.clone(), r.last_user.chars().rev().take(40).collect::<String>()))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let steps: Vec<(String, String)> = run
        .events()
        .into_iter()
        .filter(|e| e["event"] == "respawn_step")
        .map(|e| (e["step"].as_str().unwrap().to_string(), e["outcome"].as_str().unwrap().to_string()))
        .collect();
    let sent: Vec<&str> = steps.iter().filter(|(_, o)| o == "sent").map(|(s, _)| s.as_str()).collect();
    assert_eq!(sent, ["update", "clear", "init", "kickstart"], "{steps:?}");
    let ended: Vec<&str> =
        steps.iter().filter(|(_, o)| o != "sent").map(|(s, o)| if o == "done" { s.as_str() } else { "!" }).collect();
    assert_eq!(ended, ["update", "clear", "init"], "each step finished before the next: {steps:?}");

    // The API saw the prompts in that order, each after the previous answer was complete.
    let requests = mock.messages();
    let find = |needle: &str| {
        requests.iter().position(|r| r.last_user.contains(needle)).unwrap_or_else(|| panic!("no {needle}"))
    };
    let update = find("UPDATE-STEP");
    let init = find("# CLAUDE.md\n\nThis f");
    let kick = find("KICKSTART-STEP");
    assert!(update < init && init < kick, "order: update {update}, init {init}, kickstart {kick}");
    for (a, b) in [(update, init), (init, kick)] {
        let done = requests[a].done_at.expect("answered");
        assert!(requests[b].at > done, "request {b} came only after request {a} was answered");
    }
    let (_, _, last) = run.wait_state("working", 0, Duration::from_secs(1));
    assert_eq!(last["state"], "working");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let states = run.states();
    assert_eq!(states.last().unwrap().1, "working", "the session ends working on the kickstart");
}
