//! A hostile agent and the buttons from afar, with the real Claude Code client against the stand-in
//! API and a fake ntfy server on 127.0.0.1: a button answers only the dialog it was made for. The
//! first prompt's unused Allow, pressed at a second prompt for another command (the hooks off, so
//! only the screen tells them apart; the hooks on, for a tool the hook does not name), is refused,
//! journalled, and approves nothing; a question that replaces a question in the same place is a
//! new dialog, pushed with buttons of its own, and the first question's buttons are refused on it.

use crate::{common, mock_api};

use std::time::Duration;

use common::claude::{client, ClaudeRun, Options};
use common::ntfy::{Fake, Publish};
use common::wait_for;
use mock_api::MockApi;
use nightshift::phone::Key;
use serde_json::Value;

/// A run of the real client under `nightshift run` (`run_args`), asking permission for its tools,
/// its pushes and the phone's answers on `fake`.
fn start(claude: &std::path::Path, mock: &MockApi, fake: &Fake, run_args: &[&str]) -> ClaudeRun {
    let config = format!("[push]\nntfy = \"{}\"\nlisten = \"{}\"\n", fake.url("night"), fake.url("answers"));
    let key = Key::generate().to_hex();
    let run = ClaudeRun::start(
        claude,
        &mock.base_url(),
        Options {
            run_args,
            args: &["--permission-mode", "default"],
            config: &config,
            config_files: &[("phone.key", &key)],
            ..Default::default()
        },
    );
    wait_for("listening", Duration::from_secs(30), || (fake.subscribers() >= 1).then_some(()));
    run
}

/// The first push with buttons after `after` pushes to the phone's topic, and how many came by then.
fn pushed(fake: &Fake, after: usize) -> (usize, Publish) {
    wait_for("a push with buttons", Duration::from_secs(30), || {
        let seen: Vec<Publish> = fake.seen().into_iter().filter(|p| p.path == "/night").collect();
        seen.iter()
            .enumerate()
            .skip(after)
            .find(|(_, p)| p.headers.contains_key("actions"))
            .map(|(i, p)| (i + 1, p.clone()))
    })
}

/// The token of the button labelled `label`.
fn button(push: &Publish, label: &str) -> String {
    let buttons = push.buttons();
    buttons
        .iter()
        .find(|(l, _)| l == label)
        .map(|(_, t)| t.clone())
        .unwrap_or_else(|| panic!("no {label}: {buttons:?}"))
}

/// Presses `token` and waits for the reply.
fn press(fake: &Fake, token: &str) -> String {
    let before = fake.replies().len();
    fake.press("answers", token);
    wait_for("the reply", Duration::from_secs(30), || fake.replies().get(before).cloned())
}

/// What the session's screen shows now.
fn screen(run: &ClaudeRun) -> String {
    let out = run.cmd(&["screen", &run.session()]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The journal's `remote_action` events.
fn remote_actions(run: &ClaudeRun) -> Vec<Value> {
    run.events().into_iter().filter(|e| e["event"] == "remote_action").collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_prompts_unused_allow_does_not_approve_a_second_prompt_read_from_the_screen() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let fake = Fake::start();
    let run = start(&claude, &mock, &fake, &["--no-hooks"]);
    let important = run.workdir.join("important-b");
    std::fs::create_dir(&important).unwrap();
    std::fs::write(important.join("keep.txt"), "the night's work\n").unwrap();
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    let session = run.session();

    run.send("make a file mock:bash touch a", true);
    let (p, _, _) = run.wait_state("waiting_input", i + 1, Duration::from_secs(30));
    let (seen, first) = pushed(&fake, 0);
    let unused_allow = button(&first, "Allow once");
    // Answered at the terminal: denied.
    run.send_keys("\u{1b}");
    let (idle, _, _) = run.wait_state("idle", p + 1, Duration::from_secs(30));
    assert!(!run.workdir.join("a").exists());

    run.send("now clean up mock:bash rm -rf important-b", true);
    let (q, _, _) = run.wait_state("waiting_input", idle + 1, Duration::from_secs(30));
    let (_, second) = pushed(&fake, seen);
    let requests = mock.messages().len();
    let reply = press(&fake, &unused_allow);
    assert!(reply.contains("no longer on the screen"), "the first prompt's Allow, pressed at the second: {reply}");
    std::thread::sleep(Duration::from_secs(2));
    assert!(important.join("keep.txt").exists(), "important-b is still there");
    assert_eq!(mock.messages().len(), requests, "the client went nowhere: no tool result");
    assert_eq!(run.states().last().map(|s| s.1.clone()).as_deref(), Some("waiting_input"));
    assert!(screen(&run).contains("rm -rf important-b"), "the second prompt is still up");
    let refused = remote_actions(&run);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!((refused[0]["applied"].as_bool(), refused[0]["choice"].as_str()), (Some(false), Some("allow")));
    assert!(refused[0]["refused"].as_str().unwrap().contains("no longer on the screen"), "{}", refused[0]);

    // Each push names what its Allow approves (this server is the user's own: on loopback).
    assert!(first.body.contains("touch a"), "{first:?}");
    assert!(second.body.contains("rm -rf important-b"), "{second:?}");
    // The second prompt's own Deny: the agent is told no, and the folder stays.
    assert_eq!(press(&fake, &button(&second, "Deny")), format!("Denied for session {session}: the agent was told no."));
    run.wait_state("idle", q + 1, Duration::from_secs(30));
    assert!(important.join("keep.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_hooks_on_a_tool_the_hook_does_not_name_is_bound_to_its_input() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let fake = Fake::start();
    let run = start(&claude, &mock, &fake, &[]);
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    let fetch = |path: &str| {
        format!(r#"read it mock:call WebFetch {{"url": "http://127.0.0.9:9/{path}", "prompt": "summarise it"}}"#)
    };

    run.send(&fetch("docs"), true);
    let (p, _, _) = run.wait_state("waiting_input", i + 1, Duration::from_secs(30));
    let (seen, first) = pushed(&fake, 0);
    let unused_allow = button(&first, "Allow once");
    run.send_keys("\u{1b}");
    let (idle, _, _) = run.wait_state("idle", p + 1, Duration::from_secs(30));

    run.send(&fetch("secrets"), true);
    run.wait_state("waiting_input", idle + 1, Duration::from_secs(30));
    let (_, second) = pushed(&fake, seen);
    let requests = mock.messages().len();
    let reply = press(&fake, &unused_allow);
    assert!(reply.contains("no longer on the screen"), "the first fetch's Allow, pressed at the second: {reply}");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(mock.messages().len(), requests, "nothing fetched, no tool result");
    assert!(screen(&run).contains("127.0.0.9:9/secrets"), "the second prompt is still up");
    let refused = remote_actions(&run);
    assert_eq!(refused.iter().filter(|a| a["applied"] == false).count(), 1, "{refused:?}");
    assert!(second.body.contains("http://127.0.0.9:9/secrets"), "the push names the URL: {second:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_that_replaces_a_question_is_pushed_with_buttons_of_its_own() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let fake = Fake::start();
    let run = start(&claude, &mock, &fake, &[]);
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    let session = run.session();
    let questions = r#"{"questions": [
        {"question": "Which port should the server listen on?", "header": "Port", "multiSelect": false,
         "options": [{"label": "3000", "description": "the default"}, {"label": "8080", "description": "the proxy's"}]},
        {"question": "Drop the production database now?", "header": "Drop", "multiSelect": false,
         "options": [{"label": "No", "description": "keep it"}, {"label": "Yes, drop it", "description": "no undo"}]}]}"#;
    run.send(
        &format!("ask me mock:call AskUserQuestion {}", questions.split_whitespace().collect::<Vec<_>>().join(" ")),
        true,
    );
    let (q, _, port) = run.wait_state("waiting_input", i + 1, Duration::from_secs(30));
    assert_eq!(port["dialog"]["text"], "Which port should the server listen on?", "{port}");
    let (seen, first) = pushed(&fake, 0);
    let eighty_eighty = button(&first, "8080");

    // Answered at the terminal, and 8080 pressed at once: what the key did may not be drawn yet.
    run.send_keys("1");
    let reply = press(&fake, &eighty_eighty);
    assert!(
        reply.contains("a moment ago") || reply.contains("no longer on the screen"),
        "the port's 8080, pressed as the terminal's key went in: {reply}"
    );
    // The second question comes in its place, no frame between (its own line: the prompt's echo
    // on the screen holds the same words).
    wait_for("the second question", Duration::from_secs(30), || {
        screen(&run).lines().any(|l| l.trim() == "Drop the production database now?").then_some(())
    });
    let reply = press(&fake, &eighty_eighty);
    assert!(
        reply.contains("no longer on the screen"),
        "the port's 8080, pressed at the second question: {reply}\n{}",
        screen(&run)
    );
    std::thread::sleep(Duration::from_secs(2));
    let now = screen(&run);
    assert!(now.contains("Drop the production database now?") && !now.contains("Review your answers"), "{now}");

    // The second question was journalled and pushed as a dialog of its own.
    let (_, _, drop) = run.wait_state("waiting_input", q + 1, Duration::from_secs(30));
    assert_eq!(drop["dialog"]["text"], "Drop the production database now?", "{drop}");
    let answered: Vec<Value> = run.events().into_iter().filter(|e| e["event"] == "dialog_answered").collect();
    assert_eq!(
        answered.first().map(|a| a["by"].clone()),
        Some("cli".into()),
        "the first, answered at the terminal: {answered:?}"
    );
    let (seen, second) = pushed(&fake, seen);
    let labels: Vec<String> = second.buttons().into_iter().map(|(l, _)| l).collect();
    assert_eq!(labels, ["No", "Yes drop it"], "(ntfy's short form of an action has no commas)");
    assert_eq!(press(&fake, &button(&second, "No")), format!("Answered 'No' for session {session}: it goes on."));
    // The review of the answers: a dialog too, submitted from the phone.
    let (_, review) = pushed(&fake, seen);
    let turns = mock.messages().len();
    assert_eq!(
        press(&fake, &button(&review, "Submit answers")),
        format!("Answered 'Submit answers' for session {session}: it goes on.")
    );
    let answer = wait_for("the answers at the API", Duration::from_secs(30), || {
        mock.messages().into_iter().skip(turns).find(|r| r.last_user.contains("Drop the production database"))
    });
    assert!(answer.last_user.contains("3000") && answer.last_user.contains("\"No\""), "{}", answer.last_user);
    let refused: Vec<Value> = remote_actions(&run).into_iter().filter(|a| a["applied"] == false).collect();
    assert_eq!(refused.len(), 2, "the stale 8080, twice, journalled: {refused:?}");
}
