//! The real Codex CLI under `nightshift run --agent codex`, against the project's mock Responses
//! API (`tests/mock_responses`): what Nightshift reads of its turns, and that it leaves the user's
//! Codex home as it found it and no Codex process behind.

mod common;
#[path = "mock_responses/mod.rs"]
mod mock_responses;

use std::time::Duration;

use common::codex::{client, CodexRun, Options};
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
    let mock = MockResponses::start().await;
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
    run.stop();
    assert_eq!(run.survivors(), vec![], "no Codex process outlives the session");
    assert_eq!(std::fs::read(run.config_path()).unwrap(), before, "the user's config.toml is byte-identical");
}
