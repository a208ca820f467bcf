//! Push notifications against a fake ntfy server on 127.0.0.1 that speaks ntfy's publish protocol
//! (a POST to the topic's URL, the message in the body, the rest in headers): the real binary
//! pushes a question from a replayed real client screen and a headless run's finish, nothing is
//! sent without a topic, and a server that is down is retried, then journalled once.

use crate::common;

use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::ntfy::Fake;
use common::{replay_agent, wait_for, Env, KillOnDrop};
use nightshift::pty::{CommandSpec, PtySize};
use nightshift::push::{self, Settings};
use nightshift::supervisor::SessionSpec;

/// RFC 2047's encoded word, as ntfy reads a header that is not ASCII.
fn decoded(header: &str) -> String {
    use base64::Engine as _;
    match header.strip_prefix("=?UTF-8?B?").and_then(|h| h.strip_suffix("?=")) {
        Some(b64) => String::from_utf8(base64::engine::general_purpose::STANDARD.decode(b64).unwrap()).unwrap(),
        None => header.to_string(),
    }
}

fn configure(env: &Env, toml: &str, token: Option<&str>) {
    let dir = env.path("config");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), toml).unwrap();
    if let Some(token) = token {
        use std::os::unix::fs::PermissionsExt;
        let file = dir.join(push::TOKEN_FILE);
        std::fs::write(&file, token).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
}

fn question_screen() -> String {
    let capture = "tests/fixtures/claude-code/2.1.332/question/01-question.ansi.txt";
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(capture).display().to_string()
}

#[test]
fn a_question_reaches_ntfy_and_the_webhook_with_the_documented_headers() {
    let env = Env::new();
    let fake = Fake::start();
    let toml = format!(
        "[push]\nntfy = \"{}\"\nwebhook = \"{}\"\nclick = \"https://example.org/s/{{session}}\"\n",
        fake.url("night"),
        fake.url("hook")
    );
    configure(&env, &toml, Some("tk_do_not_leak"));
    let agent = replay_agent().display().to_string();
    let screen = question_screen();
    let run = env
        .cmd(&["run", "--agent", "claude", "--no-hooks", "--", &agent, "screens", &screen])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut run = KillOnDrop(run);
    let pushed = wait_for("the question on both targets", Duration::from_secs(30), || {
        let seen = fake.seen();
        (seen.len() >= 2).then_some(seen)
    });
    let ntfy = pushed.iter().find(|p| p.path == "/night").expect("a publish to the topic");
    let dir = env.dir.path().file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(decoded(&ntfy.headers["title"]), format!("{dir} · replay_agent is waiting for you"));
    assert_eq!(ntfy.headers["priority"], "4", "a question is high priority");
    assert_eq!(ntfy.headers["tags"], "question,nightshift");
    assert_eq!(ntfy.headers["authorization"], "Bearer tk_do_not_leak");
    assert!(ntfy.headers["click"].starts_with("https://example.org/s/"), "{:?}", ntfy.headers);
    assert_eq!(ntfy.body, "Which database should the new service use?", "the question, as the screen asks it");
    assert!(ntfy.headers["user-agent"].starts_with("nightshift/"), "{:?}", ntfy.headers);
    let hook = pushed.iter().find(|p| p.path == "/hook").expect("a POST to the webhook");
    assert_eq!(hook.headers["content-type"], "application/json");
    let json: serde_json::Value = serde_json::from_str(&hook.body).unwrap();
    assert_eq!((json["kind"].as_str(), json["priority"].as_str()), (Some("question"), Some("high")));
    assert_eq!(json["body"].as_str(), Some(ntfy.body.as_str()));
    assert!(!hook.headers.contains_key("authorization"), "the ntfy token is for ntfy only");

    nix::sys::signal::kill(nix::unistd::Pid::from_raw(run.0.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let out = run.0.wait().unwrap();
    assert!(out.code().is_some(), "the run ends on SIGTERM");
    let journal = env.stdout(&["journal", "--json"]);
    assert!(!journal.contains("tk_do_not_leak"), "the token stays out of the journal");
    let logs = env.state_dir().join("logs");
    for file in std::fs::read_dir(&logs).into_iter().flatten().flatten() {
        let text = std::fs::read_to_string(file.path()).unwrap_or_default();
        assert!(!text.contains("tk_do_not_leak"), "the token stays out of {}", file.path().display());
    }
}

#[test]
fn a_headless_run_pushes_its_finish_before_it_exits_and_nothing_without_a_topic() {
    let env = Env::new();
    let fake = Fake::start();
    configure(&env, &format!("[push]\nntfy = \"{}\"\n", fake.url("night")), None);
    let out = env.output(&["run", "--", "bash", "-c", "exit 3"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let seen = fake.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let dir = env.dir.path().file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(decoded(&seen[0].headers["title"]), format!("{dir} · bash finished"));
    assert_eq!(seen[0].body, "process exited with code 3");
    assert_eq!(seen[0].headers["priority"], "3");
    assert!(!seen[0].headers.contains_key("authorization"), "no token file, no token");

    // The same with the kind switched off, and with no topic at all: not a byte.
    configure(&env, &format!("[push]\nntfy = \"{}\"\n[push.kinds]\nfinished = false\n", fake.url("night")), None);
    assert_eq!(env.output(&["run", "--", "bash", "-c", "exit 3"]).status.code(), Some(3));
    configure(&env, "[notifications]\nfinished = true\n", None);
    assert_eq!(env.output(&["run", "--", "bash", "-c", "exit 3"]).status.code(), Some(3));
    assert_eq!(fake.seen().len(), 1, "nothing more was sent");
}

#[test]
fn a_bad_push_table_is_said_in_one_line_and_the_session_runs() {
    let env = Env::new();
    configure(&env, "[push]\nntfy = \"ntfy.sh/my-night\"\n", None);
    let out = env.output(&["run", "--", "bash", "-c", "exit 0"]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr.lines().find(|l| l.contains("push notifications are off")).expect("a word about push");
    assert!(line.contains("config.toml") && line.contains("push.ntfy") && line.contains("https://"), "{line}");

    use std::os::unix::fs::PermissionsExt;
    configure(&env, "[push]\nntfy = \"https://ntfy.sh/my-night\"\n", Some("tk"));
    let token = env.path("config").join(push::TOKEN_FILE);
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
    // A run closes what it finds open in the config folder as it starts, the token too.
    let out = env.output(&["run", "--", "bash", "-c", "exit 0"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("chmod 600"), "{stderr}");
    assert_eq!(std::fs::metadata(&token).unwrap().permissions().mode() & 0o777, 0o600);
}

/// Runs `bash -c 'exit CODE'` in `supervisor` to its end, and lets its "finished" be pushed.
async fn run_to_its_end(env: &Env, supervisor: &nightshift::Supervisor, following: &push::Following, code: i32) {
    let spec = SessionSpec::new(CommandSpec {
        program: "bash".into(),
        args: vec!["-c".into(), format!("exit {code}")],
        cwd: env.dir.path().to_path_buf(),
        env: vec![],
        size: PtySize::default(),
    });
    supervisor.start(spec).unwrap().wait().await;
    following.finish(Duration::from_secs(20)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_is_down_is_retried_then_journalled_once() {
    let env = Env::new();
    let fake = Fake::start();
    fake.status.store(503, Ordering::SeqCst);
    let supervisor = env.supervisor();
    let settings = Settings { ntfy: Some(fake.url("night")), ..Settings::default() };
    let following =
        push::start(&supervisor, push::Setup { settings, ..Default::default() }, vec![Duration::from_millis(20); 3]);
    run_to_its_end(&env, &supervisor, &following, 3).await;
    assert_eq!(fake.seen().len(), 4, "one try and three retries");
    run_to_its_end(&env, &supervisor, &following, 4).await;
    assert_eq!(fake.seen().len(), 5, "a target known to be down is tried once, without retries");
    let failed = || {
        supervisor.with_store(|s| {
            s.events(&nightshift::store::EventQuery::default())
                .unwrap()
                .into_iter()
                .filter(|e| e.event == "push_failed")
                .map(|e| e.body)
                .collect::<Vec<_>>()
        })
    };
    let journalled = failed();
    assert_eq!(journalled.len(), 1, "{journalled:?}");
    assert!(journalled[0].contains("503") && journalled[0].contains("ntfy"), "{}", journalled[0]);
    assert!(!journalled[0].contains(&fake.addr.to_string()), "the topic's URL stays out: {}", journalled[0]);

    // Back up: delivered, and a later outage is journalled again.
    fake.status.store(200, Ordering::SeqCst);
    run_to_its_end(&env, &supervisor, &following, 5).await;
    assert_eq!(fake.seen().len(), 6);
    fake.status.store(503, Ordering::SeqCst);
    run_to_its_end(&env, &supervisor, &following, 6).await;
    assert_eq!(fake.seen().len(), 10);
    assert_eq!(failed().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_changed_in_place_apply_from_the_next_notice() {
    let env = Env::new();
    let fake = Fake::start();
    let supervisor = env.supervisor();
    // The app starts its follower with no target: nothing is sent.
    let following = push::start(&supervisor, push::Setup::default(), vec![]);
    run_to_its_end(&env, &supervisor, &following, 3).await;
    assert!(fake.seen().is_empty());
    // The window's settings set a topic and a token: the next finish goes there, with it.
    let settings = Settings { ntfy: Some(fake.url("later")), ..Settings::default() };
    following.update(push::Setup { settings, token: Some(push::Secret::new("tk_new")), answers: None });
    run_to_its_end(&env, &supervisor, &following, 4).await;
    let seen = fake.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!((seen[0].path.as_str(), seen[0].body.as_str()), ("/later", "process exited with code 4"));
    assert_eq!(seen[0].headers["authorization"], "Bearer tk_new");
    // And switched off again: nothing more.
    following.update(push::Setup::default());
    run_to_its_end(&env, &supervisor, &following, 5).await;
    assert_eq!(fake.seen().len(), 1);
}
