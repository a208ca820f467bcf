//! Answers from the phone, against a fake ntfy server on 127.0.0.1 that speaks publish and the JSON
//! subscribe stream: the real binary pushes a question (a replayed real client screen) with signed
//! buttons, a button press posted to the listen topic answers it once, and every other token is
//! refused, journalled and answered without a key reaching the agent; a second Nightshift process
//! listening on the same topic applies nothing twice; a stream that drops and a server that refuses
//! for a while miss nothing.

use crate::common;

use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::ntfy::Fake;
use common::{read_events, replay_agent, wait_for, Env, KillOnDrop};
use nightshift::phone::{self, Action, Choice, Key};
use serde_json::Value;

/// Sets up the phone's answers for `env` on `fake`: its config and the install's key.
fn set_up(env: &Env, fake: &Fake) -> Key {
    let dir = env.path("config");
    std::fs::create_dir_all(&dir).unwrap();
    let toml = format!("[push]\nntfy = \"{}\"\nlisten = \"{}\"\n", fake.url("night"), fake.url("answers"));
    std::fs::write(dir.join("config.toml"), toml).unwrap();
    let key = Key::generate();
    nightshift::push::save_phone_key(&dir, &key).unwrap();
    key
}

fn fixture(name: &str) -> String {
    let path = format!("tests/fixtures/claude-code/2.1.332/{name}");
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path).display().to_string()
}

/// `nightshift run` of the replayed question screen, which draws the prompt when `2` is typed.
fn question_run(env: &Env, events: &str, log: &str) -> KillOnDrop {
    let agent = replay_agent().display().to_string();
    let (question, idle) = (fixture("question/01-question.ansi.txt"), fixture("idle/01-idle.ansi.txt"));
    let then = format!("2:{idle}");
    let args = ["run", "--agent", "claude", "--no-hooks", "--events", events, "--", &agent, "screens", &question];
    let run = env
        .cmd(&args)
        .args(["--then", &then, "--log", log])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    KillOnDrop(run)
}

fn wait_reply(fake: &Fake, n: usize) -> String {
    wait_for(&format!("reply {n}"), Duration::from_secs(30), || fake.replies().get(n - 1).cloned())
}

/// The journal's events called `name`, whichever process wrote them.
fn journalled(env: &Env, name: &str) -> Vec<Value> {
    let store = nightshift::store::Store::open(&env.state_dir().join("journal.sqlite3")).unwrap();
    let all = store.events(&nightshift::store::EventQuery::default()).unwrap();
    all.into_iter().filter(|e| e.event == name).map(|e| serde_json::from_str(&e.body).unwrap()).collect()
}

fn typed(log: &str) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines().filter_map(|l| l.strip_prefix("input ")).map(str::to_string).collect()
}

#[test]
fn a_button_answers_the_question_once_and_every_other_token_is_refused() {
    let env = Env::new();
    let fake = Fake::start();
    let key = set_up(&env, &fake);
    let (events, log) = (env.path("events.jsonl"), env.path("agent.log"));
    let (events, log) = (events.to_str().unwrap(), log.to_str().unwrap());
    let _run = question_run(&env, events, log);
    // A second Nightshift listening on the same topic, with a session of its own.
    let _other =
        KillOnDrop(env.cmd(&["run", "--", "sleep", "600"]).stdin(Stdio::null()).stdout(Stdio::null()).spawn().unwrap());
    let question = wait_for("the question's push", Duration::from_secs(30), || {
        fake.seen().into_iter().find(|p| p.path == "/night" && p.headers.contains_key("actions"))
    });
    let pressed = question.buttons();
    let labels: Vec<&str> = pressed.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels, ["SQLite (Recommended)", "PostgreSQL"], "{:?}", question.headers);
    let postgres = pressed[1].1.clone();
    let now = chrono::Utc::now();
    let action = phone::verify(&key, &postgres, now).unwrap();
    assert_eq!(action.choice, Choice::Option(2));
    wait_for("both processes listening", Duration::from_secs(30), || (fake.subscribers() >= 2).then_some(()));

    // Forged: another option under the same signature.
    let mut forged = action.clone();
    forged.choice = Choice::Option(1);
    let forged = format!("{}.{}", forged.sign(&key).rsplit_once('.').unwrap().0, postgres.rsplit_once('.').unwrap().1);
    fake.press("answers", &forged);
    let reply = wait_reply(&fake, 1);
    assert!(reply.starts_with("A button's action was refused: its signature does not match"), "{reply}");
    // Expired: this install's key, its time past.
    let old = Action::new(
        &action.session,
        &action.dialog,
        Choice::Option(2),
        now - chrono::Duration::hours(2),
        phone::DEFAULT_TTL,
    );
    fake.press("answers", &old.sign(&key));
    let reply = wait_reply(&fake, 2);
    let session = &action.session;
    assert!(
        reply.starts_with(&format!("Not done for session {session} (answer 'PostgreSQL'): it expired at")),
        "{reply}"
    );
    assert!(typed(log).is_empty(), "nothing typed yet: {:?}", typed(log));

    // The button as pushed: typed once, and the session goes on.
    fake.press("answers", &postgres);
    assert_eq!(wait_reply(&fake, 3), format!("Answered 'PostgreSQL' for session {session}: it goes on."));
    let answered = wait_for("the answer journalled", Duration::from_secs(30), || {
        read_events(std::path::Path::new(events)).into_iter().find(|e| e["event"] == "dialog_answered")
    });
    assert_eq!(answered["by"], "phone", "{answered}");
    // Pressed again: the nonce was used.
    fake.press("answers", &postgres);
    let reply = wait_reply(&fake, 4);
    assert_eq!(reply, format!("Not done for session {session} (answer 'PostgreSQL'): it was used already."));
    // A fresh button for the question that is gone: its dialog is no longer shown.
    let late = Action::new(session, &action.dialog, Choice::Option(1), now, phone::DEFAULT_TTL);
    fake.press("answers", &late.sign(&key));
    let reply = wait_reply(&fake, 5);
    assert!(reply.contains("the dialog it answers is no longer on the screen"), "{reply}");
    // Another install's key: refused and journalled; a stranger is answered once in ten minutes.
    fake.press(
        "answers",
        &Action::new(session, &action.dialog, Choice::Option(1), now, phone::DEFAULT_TTL).sign(&Key::generate()),
    );
    wait_for("the foreign token journalled", Duration::from_secs(30), || {
        (journalled(&env, "remote_action")
            .iter()
            .filter(|a| a["refused"].as_str().is_some_and(|r| r.contains("signature")))
            .count()
            == 2)
            .then_some(())
    });

    assert_eq!(typed(log), ["2"], "one key reached the agent, once");
    let all = journalled(&env, "remote_action");
    let applied: Vec<&Value> = all.iter().filter(|a| a["applied"] == true).collect();
    assert_eq!(applied.len(), 1, "{all:?}");
    assert_eq!(
        (applied[0]["action"].as_str(), applied[0]["choice"].as_str()),
        (Some("answer 'PostgreSQL'"), Some("option-2"))
    );
    assert_eq!(all.len(), 6, "each press journalled once, by one process: {all:?}");
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(fake.replies().len(), 5, "no reply twice, none to the second stranger: {:?}", fake.replies());
    let key_hex = key.to_hex();
    assert!(!fake.seen().iter().any(|p| p.body.contains(&key_hex) || p.headers.values().any(|h| h.contains(&key_hex))));

    // The morning's digest counts them.
    let digest: Value = serde_json::from_str(&env.stdout(&["digest", "--format", "json"])).unwrap();
    assert_eq!(
        (digest["counts"]["phone_applied"].as_u64(), digest["counts"]["phone_refused"].as_u64()),
        (Some(1), Some(5)),
        "{}",
        digest["counts"]
    );
}

#[test]
fn a_stream_that_drops_and_a_server_that_refuses_for_a_while_miss_no_press() {
    let env = Env::new();
    let fake = Fake::start();
    set_up(&env, &fake);
    let (events, log) = (env.path("events.jsonl"), env.path("agent.log"));
    let (events, log) = (events.to_str().unwrap(), log.to_str().unwrap());
    let _run = question_run(&env, events, log);
    let question = wait_for("the question's push", Duration::from_secs(30), || {
        fake.seen().into_iter().find(|p| p.path == "/night" && p.headers.contains_key("actions"))
    });
    let postgres = question.buttons()[1].1.clone();
    wait_for("listening", Duration::from_secs(30), || (fake.subscribers() >= 1).then_some(()));

    // A flood of what is no token, and one line longer than ntfy ever writes: cut, and harmless.
    for i in 0..60 {
        fake.press("answers", &format!("spam {i}"));
    }
    fake.press("answers", &"x".repeat(40_000));
    // The server drops the stream and refuses subscribers; the button is pressed meanwhile.
    fake.subscribe_status.store(503, Ordering::SeqCst);
    fake.drop_streams();
    fake.press("answers", &postgres);
    let down = wait_for("the outage journalled", Duration::from_secs(30), || {
        read_events(std::path::Path::new(events)).into_iter().find(|e| e["event"] == "phone_listen")
    });
    assert_eq!((down["working"].as_bool(), down["reason"].as_str()), (Some(false), Some("the server answered 503")));
    assert!(typed(log).is_empty(), "nothing typed while nothing is heard");
    fake.subscribe_status.store(200, Ordering::SeqCst);
    let session = phone::signed(
        &Key::from_hex(&std::fs::read_to_string(env.path("config").join("phone.key")).unwrap()).unwrap(),
        &postgres,
    )
    .unwrap()
    .session;
    let said = format!("Answered 'PostgreSQL' for session {session}: it goes on.");
    wait_for("the press heard after the reconnect", Duration::from_secs(60), || {
        fake.replies().contains(&said).then_some(())
    });
    assert_eq!(typed(log), ["2"]);
    let listen = journalled(&env, "phone_listen");
    assert_eq!(
        listen.iter().map(|e| e["working"].as_bool().unwrap()).collect::<Vec<_>>(),
        [false, true],
        "said once, and once again"
    );
    let asked = fake.asked_since();
    assert!(
        asked.len() >= 2 && asked.iter().all(|s| s.parse::<i64>().is_ok()),
        "each connection asks since a time: {asked:?}"
    );
    // A button of this install for a session this journal never had (a journal started afresh).
    let key = Key::from_hex(&std::fs::read_to_string(env.path("config").join("phone.key")).unwrap()).unwrap();
    let stray = Action::new("0badcafe", "d", Choice::Stop, chrono::Utc::now(), phone::DEFAULT_TTL).sign(&key);
    fake.press("answers", &stray);
    let said = "Not done for session 0badcafe (stop the session): the session is no longer running.".to_string();
    wait_for("the stray button answered", Duration::from_secs(30), || fake.replies().contains(&said).then_some(()));
    wait_for("the stray button journalled", Duration::from_secs(10), || {
        journalled(&env, "remote_action").into_iter().find(|a| a["action"] == "stop the session")
    });
    assert!(journalled(&env, "journal_gap").is_empty(), "journalled, not a failing journal");
    let refused = journalled(&env, "remote_action").iter().filter(|a| a["applied"] == false).count();
    assert!((1..=25).contains(&refused), "the flood is cut to a burst: {refused} refused");
    assert!(fake.replies().iter().filter(|r| r.starts_with("A button's action was refused")).count() <= 1);
}

/// `nightshift run` of the replayed permission prompt (`--no-hooks`, so only the screen tells one
/// prompt from another): Esc denies it (the prompt again), `a` draws the very same prompt again.
fn permission_run(env: &Env, events: &str, log: &str) -> KillOnDrop {
    let agent = replay_agent().display().to_string();
    let (prompt, idle) = (fixture("nightshift/permission.txt"), fixture("idle/01-idle.ansi.txt"));
    let args = ["run", "--agent", "claude", "--no-hooks", "--events", events, "--", &agent, "screens", &prompt];
    let (denied, again) = (format!("\u{1b}:{idle}"), format!("a:{prompt}"));
    let run = env
        .cmd(&args)
        .args(["--then", &denied, "--then", &again, "--log", log])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    KillOnDrop(run)
}

/// The `n`th push to the phone's topic that carries buttons.
fn nth_prompt(fake: &Fake, n: usize) -> common::ntfy::Publish {
    wait_for(&format!("push {n} with buttons"), Duration::from_secs(30), || {
        fake.seen().into_iter().filter(|p| p.path == "/night" && p.headers.contains_key("actions")).nth(n - 1)
    })
}

fn send(env: &Env, session: &str, keys: &str) {
    let out = env.cmd(&["send", "--", session, keys]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_flood_of_a_stale_allow_approves_nothing_and_the_users_own_press_still_goes_through() {
    let env = Env::new();
    let fake = Fake::start();
    let key = set_up(&env, &fake);
    let (events, log) = (env.path("events.jsonl"), env.path("agent.log"));
    let (events, log) = (events.to_str().unwrap(), log.to_str().unwrap());
    let _run = permission_run(&env, events, log);
    let stale = nth_prompt(&fake, 1).buttons()[0].1.clone();
    let session = phone::signed(&key, &stale).unwrap().session;
    wait_for("listening", Duration::from_secs(30), || (fake.subscribers() >= 1).then_some(()));
    // Denied at the terminal; then the very same prompt again.
    send(&env, &session, "\u{1b}");
    wait_for("idle", Duration::from_secs(30), || {
        read_events(std::path::Path::new(events)).into_iter().find(|e| e["state"] == "idle")
    });
    send(&env, &session, "a");
    let second = nth_prompt(&fake, 2);
    assert_eq!(second.buttons()[0].0, "Allow once");
    let allow = second.buttons()[0].1.clone();

    // A thousand presses of the first prompt's Allow (a phone that retries, or a stranger who saw
    // it), then the user's own press of the second.
    for _ in 0..1000 {
        fake.press("answers", &stale);
    }
    fake.press("answers", &allow);
    let said = format!("Allowed once for session {session}: it goes on.");
    wait_for("the user's press applied", Duration::from_secs(60), || fake.replies().contains(&said).then_some(()));
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(typed(log), ["\\x1b", "a", "1"], "one Allow reached the agent: the user's own");
    // Which token was used: the user's (a used nonce is claimed in the journal; the stale one, refused
    // since its dialog was never on the screen when it came, claims none, so burns nothing).
    let claimed = |token: &str| {
        let nonce = phone::signed(&key, token).unwrap().nonce;
        let conn = rusqlite::Connection::open(env.state_dir().join("journal.sqlite3")).unwrap();
        let n: i64 = conn
            .query_row("SELECT count(*) FROM phone_claims WHERE claim = ?1", [format!("nonce:{nonce}")], |r| r.get(0))
            .unwrap();
        n
    };
    assert_eq!((claimed(&stale), claimed(&allow)), (0, 1), "(the stale Allow's claims, the user's)");
    let all = journalled(&env, "remote_action");
    let applied: Vec<&Value> = all.iter().filter(|a| a["applied"] == true).collect();
    assert_eq!(applied.len(), 1, "{all:?}");
    let refused: Vec<&Value> = all.iter().filter(|a| a["applied"] == false).collect();
    assert!(
        (1..=3).contains(&refused.len()),
        "the stale Allow is handled three times a minute at most, its other copies dropped unread: {refused:?}"
    );
    assert!(refused.iter().all(|r| r["refused"].as_str().unwrap().contains("no longer on the screen")), "{refused:?}");
    assert!(fake.replies().len() <= 4, "a reply for each handled: {:?}", fake.replies());
    fake.press("answers", &allow);
    let replay = format!("Not done for session {session} (allow once): it was used already.");
    wait_for("the replay refused", Duration::from_secs(30), || fake.replies().contains(&replay).then_some(()));
    assert_eq!(typed(log), ["\\x1b", "a", "1"]);
}

#[test]
fn a_token_posted_before_the_users_press_answers_its_own_dialog_once() {
    // Whoever holds a button's token holds the button (the push topic is the secret): posted before
    // the user presses, it answers the dialog it was made for, once; the user's press is then told
    // it was used, and nothing else is typed.
    let env = Env::new();
    let fake = Fake::start();
    let key = set_up(&env, &fake);
    let (events, log) = (env.path("events.jsonl"), env.path("agent.log"));
    let (events, log) = (events.to_str().unwrap(), log.to_str().unwrap());
    let _run = question_run(&env, events, log);
    let postgres = nth_prompt(&fake, 1).buttons()[1].1.clone();
    let session = phone::signed(&key, &postgres).unwrap().session;
    wait_for("listening", Duration::from_secs(30), || (fake.subscribers() >= 1).then_some(()));
    fake.press("answers", &postgres);
    assert_eq!(wait_reply(&fake, 1), format!("Answered 'PostgreSQL' for session {session}: it goes on."));
    fake.press("answers", &postgres);
    assert_eq!(
        wait_reply(&fake, 2),
        format!("Not done for session {session} (answer 'PostgreSQL'): it was used already.")
    );
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(typed(log), ["2"]);
    let all = journalled(&env, "remote_action");
    assert_eq!(all.iter().map(|a| a["applied"].as_bool().unwrap()).collect::<Vec<_>>(), [true, false], "{all:?}");
}
