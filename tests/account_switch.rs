//! Switching accounts before the limit, with the real Claude Code client: two config directories,
//! each with its own subscriber login, and the mock API reporting each login's own usage. A session
//! on account `a` at 91 % moves to `b` after its turn: the handoff is asked at the `Stop` hook, the
//! client starts again under `b` with a fresh conversation, and `b`'s first request carries the
//! handoff through `SessionStart`. With no account to move to, it stays and the hold is journalled.
//! A session armed to move at the limit (`--at-limit switch`) moves when `a`'s week runs out, with
//! a handoff Nightshift builds from the folder, passing over an account whose login is gone.

use crate::{common, mock_api};

use std::time::{Duration, SystemTime};

use common::claude::{client, ClaudeRun, Options};
use common::wait_for;
use mock_api::{epoch, MockApi, Usage};

const TOKEN_A: &str = "sk-ant-oat01-account-a-0000000000000000000000000";
const TOKEN_B: &str = "sk-ant-oat01-account-b-0000000000000000000000000";
const TOKEN_C: &str = "sk-ant-oat01-account-c-0000000000000000000000000";
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

/// A commit the agent makes through its Bash tool, in the project's repository.
const COMMIT_STEP: &str = "bash echo parser >> work.txt && git add work.txt && \
    git -c user.name=agent -c user.email=agent@example.com commit -qm 'Add the parser (step-one-5e2b)'";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_weekly_limit_on_the_first_account_moves_the_session_to_the_second_at_the_limit() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let now = epoch(SystemTime::now());
    // a's week is nearly spent; b has room, and some session of the night has said so.
    let week_of_a =
        Usage { five_hour: 0.30, five_hour_reset: now + 2 * 3600, seven_day: 0.97, seven_day_reset: now + 3 * 86400 };
    mock.set_usage_for(TOKEN_A, week_of_a.clone());
    mock.set_usage_for(TOKEN_B, usage(0.12));
    mock.set_default(COMMIT_STEP);
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options {
            run_args: &["--account", "a", "--at-limit", "switch", "--auto-resume", "--standing", "Only TASKS.md."],
            args: &["--permission-mode", "acceptEdits", "--allowedTools=Bash"],
            accounts: &[("a", TOKEN_A), ("b", TOKEN_B), ("c", TOKEN_C)],
            project: &[("TASKS.md", "- [ ] the parser\n- [ ] the CLI\n"), ("work.txt", "")],
            ..Default::default()
        },
    );
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(60));
    common::known_meter(&run.env.state_dir(), "claude", "b", 12.0);
    // c has the most room, but its login is gone: a client started there would ask for one.
    common::known_meter(&run.env.state_dir(), "claude", "c", 5.0);
    std::fs::remove_file(run.env.path("account-c").join(".credentials.json")).unwrap();
    run.send(FIRST_PROMPT.trim_end_matches(" mock:fast"), true);
    run.wait_state("working", i + 1, Duration::from_secs(15));
    let log = |dir: &std::path::Path| common::git_in(dir, &["log", "--format=%s"], false);
    wait_for("the agent's commit", Duration::from_secs(60), || {
        log(&run.workdir).contains("step-one-5e2b").then_some(())
    });
    wait_for("the turn's end", Duration::from_secs(30), || {
        run.states().last().is_some_and(|(_, s, _)| s == "idle").then_some(())
    });

    // The next turn meets the weekly limit: a refuses every request until its week resets.
    mock.set_usage_for(TOKEN_A, Usage { seven_day: 1.0, ..week_of_a });
    mock.set_default("limit");
    run.send("go on with the next step", true);
    let limited = wait_for("the limit", Duration::from_secs(60), || {
        run.events().into_iter().find(|e| e["event"] == "limit_detected")
    });
    mock.set_default("fast");
    let limited_at: chrono::DateTime<chrono::Utc> = limited["ts"].as_str().unwrap().parse().unwrap();
    let switched = wait_for("the move", Duration::from_secs(60), || {
        switches(&run).into_iter().find(|e| e["action"] == "switched")
    });
    assert_eq!((switched["from"].as_str(), switched["to"].as_str()), (Some("a"), Some("b")), "{switched}");
    let passed_over = switches(&run).into_iter().find(|e| e["action"] == "held").expect("c passed over, and said");
    assert_eq!(passed_over["to"], "c", "{passed_over}");
    assert!(passed_over["reason"].as_str().unwrap().contains("account c is logged out"), "{passed_over}");
    eprintln!("passed over: {}", passed_over["reason"]);
    let switched_at: chrono::DateTime<chrono::Utc> = switched["ts"].as_str().unwrap().parse().unwrap();
    let took = (switched_at - limited_at).num_milliseconds() as f64 / 1000.0;
    eprintln!("limit: {} ({} → {})", limited["line"], limited["ts"], switched["ts"]);
    eprintln!("limit to switched: {took:.1} s");
    assert!(took < 30.0, "moved {took} s after the limit");
    let due = switches(&run).into_iter().find(|e| e["action"] == "due").expect("due first");
    assert!(due["reason"].as_str().unwrap().contains("met its"), "{due}");
    eprintln!("due: {}", due["reason"]);
    let built = run.events().into_iter().find(|e| e["event"] == "handoff_built").expect("the handoff built");
    assert!(built["chars"].as_u64().unwrap() > 200, "{built}");

    // b's first request: b's login, and the handoff Nightshift built, said as what it is.
    let first_on_b = wait_for("a request on b with the handoff", Duration::from_secs(60), || {
        mock.messages().into_iter().find(|r| r.credential == TOKEN_B && r.body.contains("Handoff built by Nightshift"))
    });
    for part in
        ["Handoff built by Nightshift", "step-one-5e2b", "the parser", nightshift::automated::MARKER, "Only TASKS.md."]
    {
        assert!(first_on_b.body.contains(part), "b's first request carries {part:?}: {}", first_on_b.body);
    }
    assert!(!first_on_b.body.contains("first-prompt-7c1d"), "a's conversation is not resumed on b");
    wait_for("the handoff checked", Duration::from_secs(30), || {
        run.events().into_iter().find(|e| e["event"] == "handoff_checked")
    });
    let checked = run.events().into_iter().find(|e| e["event"] == "handoff_checked").unwrap();
    assert_eq!(checked["received"], true, "{checked}");
    // Nothing went to a after its limit: no resume into its refused window.
    let on_a_after: Vec<_> = mock
        .messages()
        .into_iter()
        .filter(|r| r.credential == TOKEN_A && chrono::DateTime::<chrono::Utc>::from(r.at) > switched_at)
        .collect();
    assert!(
        on_a_after.is_empty(),
        "requests on a after the move: {:?}",
        on_a_after.iter().map(|r| &r.scenario).collect::<Vec<_>>()
    );
    assert!(!run.events().iter().any(|e| e["event"] == "resume_sent"), "no resume typed");
    assert!(!mock.messages().iter().any(|r| r.credential == TOKEN_C), "nothing started on the logged-out account");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&run.env.stdout(&["sessions", "--json"])).unwrap();
    let row = rows.iter().find(|r| r["id"] == run.session().as_str()).expect("the session listed");
    assert_eq!(row["account"], "b", "{row}");
    assert_ne!(row["state"], "limit_paused", "{row}");
    let digest = run.env.stdout(&["digest", "--range", "24h"]);
    assert!(digest.contains("switched accounts"), "{digest}");
}
