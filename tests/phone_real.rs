//! Answers from the phone with the real Claude Code client against the mock API, and a fake ntfy
//! server on 127.0.0.1 that speaks publish and the JSON subscribe stream: a question's button and a
//! permission prompt's Allow once answer each once and the session goes on; a forged, an expired, a
//! replayed token, one of another install's key, and one for a dialog answered at the desk are each
//! refused and change nothing on the agent's screen.

use crate::{common, mock_api};

use std::time::Duration;

use common::claude::{client, ClaudeRun, Options};
use common::ntfy::{Fake, Publish};
use common::wait_for;
use mock_api::MockApi;
use nightshift::phone::{self, Action, Choice, Key};

/// The buttons of the first push with buttons after `after` pushes: each label and its token.
fn pushed_buttons(fake: &Fake, after: usize) -> (usize, Vec<(String, String)>) {
    wait_for("a push with buttons", Duration::from_secs(30), || {
        let seen: Vec<Publish> = fake.seen().into_iter().filter(|p| p.path == "/night").collect();
        seen.iter()
            .enumerate()
            .skip(after)
            .find(|(_, p)| p.headers.contains_key("actions"))
            .map(|(i, p)| (i + 1, p.buttons()))
    })
}

/// Presses `token` and waits for the reply; returns it.
fn press(fake: &Fake, token: &str) -> String {
    let before = fake.replies().len();
    fake.press("answers", token);
    wait_for("the reply", Duration::from_secs(30), || fake.replies().get(before).cloned())
}

/// The agent's screen now, without its last rows (the footer's clock and usage move by themselves)
/// and without the bullet of a tool call waiting for permission, which blinks.
fn screen(run: &ClaudeRun) -> String {
    let out = run.cmd(&["screen", &run.session()]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let rows: Vec<String> = text.lines().map(|r| r.replacen("● ", "  ", 1)).collect();
    rows[..rows.len().saturating_sub(3)].join("\n")
}

fn refused_unchanged(run: &ClaudeRun, fake: &Fake, token: &str, why: &str) {
    let before = screen(run);
    let reply = press(fake, token);
    assert!(reply.contains(why), "{reply}");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(screen(run), before, "nothing changed on the agent's screen after: {reply}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_clients_question_and_permission_prompt_are_answered_from_the_phone_once() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let fake = Fake::start();
    let key = Key::generate();
    let config = format!("[push]\nntfy = \"{}\"\nlisten = \"{}\"\n", fake.url("night"), fake.url("answers"));
    let key_file = key.to_hex();
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options {
            args: &["--permission-mode", "default"],
            config: &config,
            config_files: &[("phone.key", &key_file)],
            ..Default::default()
        },
    );
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    wait_for("listening", Duration::from_secs(30), || (fake.subscribers() >= 1).then_some(()));
    let session = run.session();

    // A question: its options as buttons; the second answers it, once.
    run.send("ask me mock:question", true);
    let (q, _, _) = run.wait_state("waiting_input", i + 1, Duration::from_secs(30));
    let (seen, buttons) = pushed_buttons(&fake, 0);
    let labels: Vec<&str> = buttons.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels, ["SQLite", "PostgreSQL"]);
    let postgres = &buttons[1].1;
    let turns = mock.messages().len();
    assert_eq!(press(&fake, postgres), format!("Answered 'PostgreSQL' for session {session}: it goes on."));
    let answered = wait_for("the answer at the API", Duration::from_secs(30), || {
        mock.messages().into_iter().skip(turns).find(|r| r.last_user.contains("\"PostgreSQL\""))
    });
    assert!(answered.last_user.contains("Which database should the new service use?"), "{}", answered.last_user);
    let (idle, _, _) = run.wait_state("idle", q + 1, Duration::from_secs(30));
    let by = run.events().into_iter().find(|e| e["event"] == "dialog_answered").expect("journalled as answered");
    assert_eq!(by["by"], "phone", "{by}");
    refused_unchanged(&run, &fake, postgres, "it was used already");

    // A permission prompt: refused tokens change nothing; Allow once runs the command.
    run.send("make a file mock:perm", true);
    let (p, _, _) = run.wait_state("waiting_input", idle + 1, Duration::from_secs(30));
    let (seen, buttons) = pushed_buttons(&fake, seen);
    let labels: Vec<&str> = buttons.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels, ["Allow once", "Deny"]);
    let allow = phone::verify(&key, &buttons[0].1, chrono::Utc::now()).unwrap();
    let deny = buttons[1].1.clone();
    // Allow's payload under Deny's signature: well-formed, and not this payload's.
    let (signed, _) = buttons[0].1.rsplit_once('.').unwrap();
    let forged = format!("{signed}.{}", buttons[1].1.rsplit_once('.').unwrap().1);
    refused_unchanged(&run, &fake, &forged, "does not match this install's key");
    let now = chrono::Utc::now();
    let expired =
        Action::new(&session, &allow.dialog, Choice::Allow, now - chrono::Duration::hours(1), phone::DEFAULT_TTL);
    refused_unchanged(&run, &fake, &expired.sign(&key), "it expired at");
    let foreign = Action::new(&session, &allow.dialog, Choice::Allow, now, phone::DEFAULT_TTL).sign(&Key::generate());
    let journalled = || {
        run.cmd(&["journal", "--json"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).matches("remote_action").count())
    };
    let before = journalled().unwrap();
    fake.press("answers", &foreign);
    wait_for("the foreign token refused", Duration::from_secs(30), || (journalled().unwrap() > before).then_some(()));
    assert!(!run.workdir.join("mock-permission-file").exists(), "no refused token allowed anything");
    assert_eq!(run.states().last().map(|s| s.1.clone()).as_deref(), Some("waiting_input"));
    assert_eq!(press(&fake, &buttons[0].1), format!("Allowed once for session {session}: it goes on."));
    wait_for("the command run", Duration::from_secs(30), || {
        run.workdir.join("mock-permission-file").exists().then_some(())
    });

    // Asked again with the same command: answered at the desk, the phone's Deny for the first
    // prompt finds it gone.
    let (done, _, _) = run.wait_state("idle", p + 1, Duration::from_secs(30));
    run.send("make it once more mock:perm", true);
    let (again, _, _) = run.wait_state("waiting_input", done + 1, Duration::from_secs(30));
    let _ = pushed_buttons(&fake, seen);
    run.send_keys("\u{1b}");
    run.wait_state("idle", again + 1, Duration::from_secs(30));
    refused_unchanged(&run, &fake, &deny, "no longer on the screen");
    let applied = run.events().into_iter().filter(|e| e["event"] == "remote_action" && e["applied"] == true).count();
    assert_eq!(applied, 2, "the question's button and Allow once, each once");
}
