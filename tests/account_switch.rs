//! Switching accounts before the limit, with the real Claude Code client: two config directories,
//! each with its own subscriber login, and the mock API reporting each login's own usage. A session
//! on account `a` at 91 % moves to `b` after its turn: the handoff is asked at the `Stop` hook, the
//! client starts again under `b` with a fresh conversation, and `b`'s first request carries the
//! handoff through `SessionStart`. With no account to move to, it stays and the hold is journalled.

use crate::{common, mock_api};

use std::time::{Duration, SystemTime};

use common::claude::{client, ClaudeRun, Options};
use common::wait_for;
use mock_api::{epoch, MockApi, Usage};

const TOKEN_A: &str = "sk-ant-oat01-account-a-0000000000000000000000000";
const TOKEN_B: &str = "sk-ant-oat01-account-b-0000000000000000000000000";
/// In the first prompt only: a request that carries it continues `a`'s conversation.
const FIRST_PROMPT: &str = "start on the parser (first-prompt-7c1d) mock:fast";

fn usage(five_hour: f64) -> Usage {
    let now = epoch(SystemTime::now());
    Usage { five_hour, five_hour_reset: now + 2 * 3600, seven_day: 0.40, seven_day_reset: now + 3 * 86400 }
}

fn switches(run: &ClaudeRun) -> Vec<serde_json::Value> {
    run.events().into_iter().filter(|e| e["event"] == "account_switch").collect()
}

/// Starts a session on `a` that may switch, the other account's meter at `b_pct`, and gives it
/// its first prompt.
async fn at_91_percent(b_pct: f64) -> Option<(MockApi, ClaudeRun)> {
    let claude = client()?;
    let mock = MockApi::start().await.expect("the stand-in API starts");
    mock.set_usage_for(TOKEN_A, usage(0.91));
    mock.set_usage_for(TOKEN_B, usage(0.12));
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options {
            run_args: &["--account", "a", "--switch-accounts"],
            accounts: &[("a", TOKEN_A), ("b", TOKEN_B)],
            ..Default::default()
        },
    );
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(60));
    common::known_meter(&run.env.state_dir(), "claude", "b", b_pct);
    run.send(FIRST_PROMPT, true);
    run.wait_state("working", i + 1, Duration::from_secs(15));
    // The answer's headers put `a` at 91 %: the statusLine reports it, the session decides.
    wait_for("the switch decided", Duration::from_secs(30), || (!switches(&run).is_empty()).then_some(()));
    Some((mock, run))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_91_percent_the_session_moves_to_the_account_with_headroom_after_a_handoff() {
    let Some((mock, run)) = at_91_percent(20.0).await else { return };
    let due = switches(&run).remove(0);
    assert_eq!((due["action"].as_str(), due["from"].as_str(), due["to"].as_str()), (Some("due"), Some("a"), Some("b")));
    // The report may come after the turn's Stop: the next turn's end asks for the handoff then.
    std::thread::sleep(Duration::from_secs(3));
    if !run.events().iter().any(|e| e["event"] == "handoff_asked") {
        run.send("go on mock:fast", true);
    }
    let switched = wait_for("the switch", Duration::from_secs(60), || {
        switches(&run).into_iter().find(|e| e["action"] == "switched")
    });
    assert_eq!((switched["from"].as_str(), switched["to"].as_str()), (Some("a"), Some("b")), "{switched}");
    let events = run.events();
    let at = |name: &str| events.iter().position(|e| e["event"] == name);
    assert!(at("handoff") < events.iter().position(|e| e == &switched), "the handoff was written first: {events:?}");

    // b's first request: b's login, the handoff through SessionStart, and nothing of a's conversation.
    let first_on_b = wait_for("a request on b", Duration::from_secs(60), || {
        mock.messages().into_iter().find(|r| r.credential == TOKEN_B && r.body.contains("mock-handoff-7f3a"))
    });
    let before_b = mock.messages().into_iter().take_while(|r| r.credential != TOKEN_B).count();
    assert!(before_b > 0 && mock.messages()[..before_b].iter().all(|r| r.credential == TOKEN_A));
    assert!(
        first_on_b.body.contains("Your handoff, written before your context was reset"),
        "the handoff came through SessionStart: {}",
        first_on_b.body
    );
    assert!(!first_on_b.body.contains("first-prompt-7c1d"), "a's conversation is not resumed on b");
    assert!(
        mock.messages().iter().filter(|r| r.credential == TOKEN_B).all(|r| !r.body.contains("first-prompt-7c1d")),
        "no request on b carries a's conversation"
    );
    wait_for("the session given the handoff", Duration::from_secs(30), || {
        run.events().iter().any(|e| e["event"] == "handoff_given").then_some(())
    });

    // The journal says where it runs now, the usage it reports is b's, and the digest tells it.
    let session = run.session();
    let rows: Vec<serde_json::Value> = serde_json::from_str(&run.env.stdout(&["sessions", "--json"])).unwrap();
    let row = rows.iter().find(|r| r["id"] == session.as_str()).expect("the session listed");
    assert_eq!(row["account"], "b", "{row}");
    assert!(["running", "working", "idle"].contains(&row["state"].as_str().unwrap_or_default()), "{row}");
    let conversations: Vec<_> =
        run.events().into_iter().filter(|e| e["event"] == "conversation").map(|e| e["id"].clone()).collect();
    assert!(
        conversations.len() == 2 && conversations[0] != conversations[1],
        "b's own conversation: {conversations:?}"
    );
    wait_for("a usage sample of b", Duration::from_secs(30), || {
        run.events().iter().any(|e| e["event"] == "usage" && e["five_hour_pct"] == 12.0).then_some(())
    });
    let digest = run.env.stdout(&["digest", "--range", "24h"]);
    assert!(digest.contains("switched accounts"), "{digest}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_account_to_move_to_the_session_stays_and_the_hold_is_journalled() {
    let Some((mock, run)) = at_91_percent(95.0).await else { return };
    let held = switches(&run).remove(0);
    assert_eq!((held["action"].as_str(), held["from"].as_str()), (Some("held"), Some("a")), "{held}");
    assert!(held["until"].is_string(), "held until the window resets: {held}");
    run.send("go on mock:fast", true);
    let n = mock.messages().len();
    wait_for("the next turn answered", Duration::from_secs(30), || (mock.messages().len() > n).then_some(()));
    std::thread::sleep(Duration::from_secs(2));
    assert!(mock.messages().iter().all(|r| r.credential == TOKEN_A), "every request stayed on a");
    assert_eq!(switches(&run).len(), 1, "one hold, no switch: {:?}", switches(&run));
    assert!(!run.events().iter().any(|e| e["event"] == "handoff_asked"), "no handoff was asked");
    let journal = run.env.stdout(&["journal", "--session", &run.session()]);
    assert!(journal.contains("no account switch"), "{journal}");
}
