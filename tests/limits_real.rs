//! Usage limits against the real Claude Code client: the mock API answers 429 with the unified
//! rate-limit headers (subscriber mode), and the client draws its own limit screens. One smoke test
//! per policy (watch, own, not tonight, the limit menu), each waiting out a real reset a minute or
//! two away; the flows in between (pauses, retries, restore) run in seconds in `replay_flows.rs`
//! and as specs of the session machine.

use crate::{common, mock_api};

use std::time::{Duration, SystemTime};

use common::claude::{client, ClaudeRun, Options};
use mock_api::{epoch, MockApi, Usage};

/// A session that hit a 5-hour limit resetting in one to two minutes: the mock, the run, the index
/// of its `limit_paused` state, and the reset.
async fn limited_soon(claude: &std::path::Path, run_args: &[&str]) -> (MockApi, ClaudeRun, usize, SystemTime) {
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let now = epoch(SystemTime::now());
    let reset = (now + 75) / 60 * 60 + 60;
    mock.set_usage(Usage { five_hour: 0.97, five_hour_reset: reset, seven_day: 0.4, seven_day_reset: now + 3 * 86400 });
    let run = ClaudeRun::start(claude, &mock.base_url(), Options { run_args, ..Default::default() });
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("keep going mock:limit", true);
    let (p, _, _) = run.wait_state("limit_paused", i + 1, Duration::from_secs(30));
    (mock, run, p, SystemTime::UNIX_EPOCH + Duration::from_secs(reset))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_quoting_a_limit_message_does_not_pause() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let run = ClaudeRun::start(&claude, &mock.base_url(), Options::default());
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("show me the log mock:quote", true);
    let (w, _, _) = run.wait_state("working", i + 1, Duration::from_secs(15));
    run.wait_state("idle", w + 1, Duration::from_secs(30));
    let screen = run.env.stdout(&["screen", &run.session()]);
    assert!(screen.contains("You've hit your limit · resets 3pm"), "the quote is on screen:\n{screen}");
    assert!(!run.events().iter().any(|e| e["event"] == "limit_detected" || e["state"] == "limit_paused"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_reset_exactly_one_continuation_reaches_the_api_and_the_next_turn_runs() {
    let Some(claude) = client() else { return };
    let args = ["--auto-resume", "--resume-margin", "20"];
    let (mock, run, p, reset_time) = limited_soon(&claude, &args).await;
    let detected = run.events().into_iter().find(|e| e["event"] == "limit_detected").expect("a limit_detected event");
    let resets_at = chrono::DateTime::parse_from_rfc3339(detected["resets_at"].as_str().unwrap()).unwrap();
    assert_eq!(
        SystemTime::UNIX_EPOCH + Duration::from_secs(resets_at.timestamp() as u64),
        reset_time,
        "the reset the API gave: {detected}"
    );
    let before_reset = mock.messages().into_iter().filter(|r| r.at < reset_time).count();
    let wait = reset_time.duration_since(SystemTime::now()).unwrap_or_default() + Duration::from_secs(150);
    common::wait_for("the limit to clear", wait, || {
        run.events().into_iter().position(|e| e["event"] == "limit_cleared")
    });
    run.wait_state("idle", p + 1, Duration::from_secs(60));
    tokio::time::sleep(Duration::from_secs(15)).await;

    let requests = mock.messages();
    assert!(
        requests.iter().filter(|r| r.at < reset_time).all(|r| r.status == 429),
        "nothing went through before the reset"
    );
    assert_eq!(requests.iter().filter(|r| r.at < reset_time).count(), before_reset, "nothing was sent during the wait");
    let after: Vec<_> = requests.iter().filter(|r| r.at >= reset_time).collect();
    assert_eq!(
        after.len(),
        1,
        "exactly one continuation: {:?}",
        after.iter().map(|r| &r.last_user).collect::<Vec<_>>()
    );
    assert_eq!(after[0].status, 200);
    let ours = run.events().iter().filter(|e| e["event"] == "resume_sent").count();
    let clients = after[0].last_user.contains("usage limit has reset");
    assert!(
        ours + usize::from(clients) == 1,
        "the client's continuation or ours, never both (ours: {ours}, client's: {clients})"
    );
    assert!(run.events().iter().any(|e| e["event"] == "limit_cleared"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_own_policy_cancels_the_clients_timer_and_resumes_once_itself() {
    let Some(claude) = client() else { return };
    let args =
        ["--auto-resume", "--resume-policy", "own", "--resume-margin", "5", "--resume-prompt", "continue please"];
    let (mock, run, p, reset_time) = limited_soon(&claude, &args).await;
    let wait = reset_time.duration_since(SystemTime::now()).unwrap_or_default() + Duration::from_secs(90);
    let cleared = common::wait_for("the limit to clear", wait, || {
        run.events().into_iter().position(|e| e["event"] == "limit_cleared")
    });
    assert!(cleared > p);
    tokio::time::sleep(Duration::from_secs(15)).await;
    let after: Vec<_> = mock.messages().into_iter().filter(|r| r.at >= reset_time).collect();
    assert_eq!(after.len(), 1, "{:?}", after.iter().map(|r| &r.last_user).collect::<Vec<_>>());
    assert!(after[0].last_user.contains("continue please"), "ours: {}", after[0].last_user);
    assert!(!after[0].last_user.contains("usage limit has reset"), "the client's own was cancelled");
    assert_eq!(run.events().iter().filter(|e| e["event"] == "resume_sent").count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_tonight_leaves_the_fresh_window_alone() {
    let Some(claude) = client() else { return };
    let (mock, run, _, reset_time) = limited_soon(&claude, &["--not-tonight", "--preset", "solo"]).await;
    let guard = common::wait_for("the guard's word", Duration::from_secs(10), || {
        run.events().into_iter().find(|e| e["event"] == "window_guard")
    });
    assert!(guard["reason"].as_str().unwrap().contains("not tonight"), "{guard}");
    let until = reset_time.duration_since(SystemTime::now()).unwrap_or_default() + Duration::from_secs(75);
    tokio::time::sleep(until).await;
    let after = mock.messages().into_iter().filter(|r| r.at >= reset_time).count();
    assert_eq!(after, 0, "no continuation, the client's or ours, and no respawn cycle");
    let screen = run.env.stdout(&["screen", &run.session()]);
    assert!(screen.contains("Automatic continue cancelled"), "{screen}");
}

/// The client's limit menu (shown for a weekly limit more than a day out, or whenever its automatic
/// continue is off, as here to get a reset within the test): answered by the watch policy with
/// "wait here, then continue automatically", and after the reset exactly one continuation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_limit_menu_is_answered_and_exactly_one_continuation_follows_the_reset() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let now = epoch(SystemTime::now());
    let reset = (now + 75) / 60 * 60 + 60;
    mock.set_usage(Usage { five_hour: 0.5, five_hour_reset: now + 3 * 3600, seven_day: 1.0, seven_day_reset: reset });
    let opts = Options {
        run_args: &["--auto-resume", "--resume-margin", "100"],
        client_settings: Some(r#"{"autoContinueAtUsageLimit": false}"#),
        ..Default::default()
    };
    let run = ClaudeRun::start(&claude, &mock.base_url(), opts);
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("keep going mock:limit", true);
    let (p, _, _) = run.wait_state("limit_paused", i + 1, Duration::from_secs(30));
    let answered = common::wait_for("the menu answered", Duration::from_secs(20), || {
        run.events().into_iter().find(|e| e["event"] == "automation")
    });
    assert!(answered["detail"].as_str().unwrap().starts_with("with 2 (wait here"), "{answered}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let screen = run.env.stdout(&["screen", &run.session()]);
    assert!(!screen.contains("What do you want to do?"), "not left on the menu:\n{screen}");

    let reset_time = SystemTime::UNIX_EPOCH + Duration::from_secs(reset);
    let wait = reset_time.duration_since(SystemTime::now()).unwrap_or_default() + Duration::from_secs(200);
    common::wait_for("the limit to clear", wait, || {
        run.events().into_iter().position(|e| e["event"] == "limit_cleared")
    });
    run.wait_state("idle", p + 1, Duration::from_secs(60));
    tokio::time::sleep(Duration::from_secs(10)).await;
    let after: Vec<_> = mock.messages().into_iter().filter(|r| r.at >= reset_time).collect();
    assert_eq!(
        after.len(),
        1,
        "exactly one continuation: {:?}",
        after.iter().map(|r| &r.last_user).collect::<Vec<_>>()
    );
    let ours = run.events().iter().filter(|e| e["event"] == "resume_sent").count();
    let clients = after[0].last_user.contains("usage limit has reset");
    assert!(ours + usize::from(clients) == 1, "the client's or ours, never both (ours: {ours}, client's: {clients})");
}
