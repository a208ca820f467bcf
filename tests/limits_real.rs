//! Usage limits against the real Claude Code client: the mock API answers 429 with the unified
//! rate-limit headers (subscriber mode), and the client draws its own limit screens.

mod common;
#[path = "mock_api/mod.rs"]
mod mock_api;

use std::time::{Duration, SystemTime};

use common::claude::{client, ClaudeRun, Options};
use mock_api::{epoch, MockApi, Usage};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_usage_limit_pauses_the_session_until_the_reset_the_api_gave() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await;
    let now = epoch(SystemTime::now());
    // On a whole minute: the client shows the reset to the minute.
    let reset = (now + 2 * 3600) / 60 * 60;
    mock.set_usage(Usage { five_hour: 0.97, five_hour_reset: reset, seven_day: 0.4, seven_day_reset: now + 3 * 86400 });
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options { run_args: &["--preset", "solo", "--user-quiet", "1"], ..Default::default() },
    );
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("go on mock:limit", true);
    let (p, _, paused) = run.wait_state("limit_paused", i + 1, Duration::from_secs(30));
    let detected = run.events().into_iter().find(|e| e["event"] == "limit_detected").expect("a limit_detected event");
    let resets_at =
        chrono::DateTime::parse_from_rfc3339(detected["resets_at"].as_str().unwrap()).unwrap().timestamp() as u64;
    assert_eq!(resets_at, reset, "the reset the API gave: {detected}");
    assert!(paused["reason"].as_str().unwrap().contains("usage limit"), "{paused}");
    // Paused: respawn sends nothing, and nothing reaches the API, while the window is closed.
    let before = mock.messages().len();
    tokio::time::sleep(Duration::from_secs(12)).await;
    assert_eq!(mock.messages().len(), before, "nothing was sent during the pause");
    assert!(!run.events().iter().any(|e| e["event"] == "respawn_step"), "no respawn cycle while paused");
    let after: Vec<String> = run.states().into_iter().skip(p + 1).map(|(_, s, _)| s).collect();
    assert!(!after.iter().any(|s| s == "respawning" || s == "working"), "{after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_quoting_a_limit_message_does_not_pause() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await;
    let run = ClaudeRun::start(&claude, &mock.base_url(), Options::default());
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("show me the log mock:quote", true);
    let (w, _, _) = run.wait_state("working", i + 1, Duration::from_secs(15));
    run.wait_state("idle", w + 1, Duration::from_secs(30));
    let screen = run.env.stdout(&["screen", &run.session()]);
    assert!(screen.contains("You've hit your limit · resets 3pm"), "the quote is on screen:\n{screen}");
    assert!(!run.events().iter().any(|e| e["event"] == "limit_detected" || e["state"] == "limit_paused"));
}
