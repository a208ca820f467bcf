//! The night as a whole, against the real Claude Code client and the project's mock API: a run
//! killed mid-turn comes back on its conversation with what it was armed with.

mod common;
mod mock_api;

use std::io::{BufRead, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::claude::{client, ClaudeRun, Options};
use common::{read_events, wait_for, KillOnDrop};
use mock_api::MockApi;
use serde_json::Value;

const NIGHT_TOKEN: &str = "sk-ant-oat01-mock-night-00000000000000000000000";
const OPENING: &str = "Work through TASKS.md, one step per turn.";

/// A session's options, asked over its owner's control socket.
fn options(run: &ClaudeRun, id: &str) -> Value {
    let sessions: Vec<Value> = serde_json::from_str(&run.env.stdout(&["sessions", "--json"])).unwrap();
    let socket = sessions.iter().find(|s| s["id"] == id).unwrap()["control_socket"].as_str().unwrap().to_string();
    let mut stream = std::os::unix::net::UnixStream::connect(socket).unwrap();
    writeln!(stream, "{}", serde_json::json!({"op": "options", "session": id})).unwrap();
    let mut line = String::new();
    std::io::BufReader::new(stream).read_line(&mut line).unwrap();
    serde_json::from_str::<Value>(&line).unwrap()["options"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_mid_turn_works_again_on_its_conversation_after_restore() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await;
    let opening = format!("{OPENING} mock:slow:60");
    let mut run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options {
            run_args: &["--preset", "overnight", "--idle-timeout", "600", "--max-cost-usd", "5", "--account", "night"],
            args: &[&opening],
            accounts: &[("night", NIGHT_TOKEN)],
            ..Default::default()
        },
    );
    let id = run.session();
    run.wait_state("working", 0, Duration::from_secs(60));
    let conversation = wait_for("the conversation's id", Duration::from_secs(20), || {
        run.events().into_iter().find(|e| e["event"] == "conversation").map(|e| e["id"].as_str().unwrap().to_string())
    });
    // Mid-turn: its answer is streaming.
    wait_for("the opening prompt's request", Duration::from_secs(30), || {
        mock.messages().iter().any(|r| r.last_user.contains(OPENING)).then_some(())
    });
    let armed = options(&run, &id);
    let until = armed["respawn_until"].clone();
    assert!(until.is_string(), "{armed}");

    // Nightshift itself is killed mid-turn (an OOM kill, a panic: no word to the journal).
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(run.child.id() as i32), nix::sys::signal::Signal::SIGKILL)
        .unwrap();
    run.child.wait().unwrap();
    let asked_before = mock.messages().len();

    let events = run.env.path("restore.jsonl");
    let started = Instant::now();
    let restore = KillOnDrop(
        run.cmd(&["restore", "--events", events.to_str().unwrap()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let restored = wait_for("the session working again", Duration::from_secs(60), || {
        read_events(&events).into_iter().find(|e| e["session"] == id.as_str() && e["state"] == "working")
    });
    let latency = started.elapsed();
    eprintln!("restore to working: {:.1} s", latency.as_secs_f64());
    assert!(latency < Duration::from_secs(30), "working again {latency:?} after `nightshift restore`: {restored}");

    let journal = read_events(&events);
    let said = journal.iter().find(|e| e["event"] == "restored").expect("the restore is journalled");
    assert!(said["reason"].as_str().unwrap().contains("respawn was armed"), "{said}");
    let start = journal.iter().find(|e| e["state"] == "starting").unwrap()["reason"].as_str().unwrap().to_string();
    assert!(start.contains(&format!("--resume {conversation}")), "the same conversation: {start}");
    // The conversation goes on with the kickstart; the opening prompt reached the API once.
    let asked = wait_for("the kickstart's request", Duration::from_secs(30), || {
        let all = mock.messages();
        (all.len() > asked_before).then_some(all)
    });
    let openings = asked.iter().filter(|r| r.last_user.contains(OPENING)).count();
    assert_eq!(
        openings,
        1,
        "the opening prompt was sent again: {:?}",
        asked.iter().map(|r| &r.last_user).collect::<Vec<_>>()
    );
    let after = &asked[asked_before];
    assert!(after.last_user.starts_with("Continue the work."), "{}", after.last_user);
    assert_eq!(after.credential, NIGHT_TOKEN, "under its account");
    // What it was armed with: the same hours (not a fresh eight), its budget.
    let now = options(&run, &id);
    assert_eq!(now["respawn_until"], until, "{now}");
    assert_eq!(now["budget"]["max_cost_usd"], 5.0, "{now}");
    assert_eq!(now["preset"], "overnight");

    run.env.stdout(&["stop", &id]);
    let mut restore = restore;
    let status = wait_for("restore to end", Duration::from_secs(20), || restore.0.try_wait().unwrap());
    assert!(status.success());
}
