//! `nightshift notify`, the program Codex runs at the end of each turn of a Nightshift session: it
//! starts the user's own notify program, hands the payload to the session's supervisor over its
//! control socket, and fails open — whatever goes wrong, it is done within two seconds.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use nightshift::control::ControlServer;
use nightshift::pty::{CommandSpec, PtySize};
use nightshift::supervisor::SessionSpec;

const THREAD: &str = "01a23180-6259-7a52-95e6-8e00230df027";
const TITLE_THREAD: &str = "01a23180-7fc2-7591-84a8-759cc7c441e8";

fn payload(thread: &str) -> String {
    serde_json::json!({"type": "agent-turn-complete", "thread-id": thread, "turn-id": "01a23180-7f86-7391-a0c1-90079b0f664e",
        "cwd": "/w", "client": "codex-tui", "input-messages": ["say hi"], "last-assistant-message": "Hello."})
    .to_string()
}

fn notify(env: &[(&str, &str)], args: &[&str]) -> (std::process::Output, Duration) {
    let mut cmd = Command::new(common::bin());
    cmd.arg("notify").args(args).env_remove("NIGHTSHIFT_CONTROL").env_remove("CODEX_HOME");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let started = Instant::now();
    let out = cmd.output().unwrap();
    (out, started.elapsed())
}

/// A program that writes its arguments, one a line, to `<itself>.args`.
fn recorder(dir: &Path, name: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$0.args\"\n").unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

#[test]
fn without_a_supervisor_it_runs_the_users_own_notify_and_ends_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let theirs = recorder(dir.path(), "their-notify");
    let json = payload(THREAD);
    let (out, took) = notify(&[], &["--", theirs.to_str().unwrap(), "--sound", &json]);
    assert!(out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    let args = common::wait_for("the user's notify", Duration::from_secs(5), || {
        std::fs::read_to_string(dir.path().join("their-notify.args")).ok().filter(|a| a.ends_with("}\n"))
    });
    assert_eq!(args, format!("--sound\n{json}\n"), "theirs got its own argument and Codex's");
    let gone = dir.path().join("gone.sock").display().to_string();
    let env = [("NIGHTSHIFT_CONTROL", gone.as_str()), ("NIGHTSHIFT_TOKEN", "t"), ("NIGHTSHIFT_SESSION", "s")];
    let (out, _) = notify(&env, &["not json"]);
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    let (out, _) = notify(&[], &[]);
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn a_supervisor_that_never_answers_holds_it_at_most_two_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stuck.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let _held = std::thread::spawn(move || {
        let conns: Vec<_> = listener.incoming().take(1).collect();
        std::thread::sleep(Duration::from_secs(10));
        drop(conns);
    });
    let socket = path.display().to_string();
    let env = [("NIGHTSHIFT_CONTROL", socket.as_str()), ("NIGHTSHIFT_TOKEN", "t"), ("NIGHTSHIFT_SESSION", "s")];
    let (out, took) = notify(&env, &[&payload(THREAD)]);
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    assert!(took <= Duration::from_secs(2), "notify took {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_session_gets_its_notify_on_the_command_line_and_hears_its_conversation() {
    let env = common::Env::new();
    let mut sup = env.supervisor();
    std::fs::create_dir_all(env.runtime_dir()).unwrap();
    let socket = env.runtime_dir().join("control-notify.sock");
    let _server = ControlServer::bind(&socket, sup.clone()).unwrap();
    sup.set_control_socket(socket.clone());
    sup.set_cli(&common::bin());
    // The user's Codex home, with a notify of their own; the conversation's rollout file.
    let home = env.path("codex-home");
    let day = home.join("sessions/2026/12/01");
    std::fs::create_dir_all(&day).unwrap();
    std::fs::write(day.join(format!("rollout-2026-12-01T12-07-07-{THREAD}.jsonl")), "{}\n").unwrap();
    let theirs = recorder(env.dir.path(), "their-notify");
    let config = format!("model = \"o3\"\nnotify = [\"{}\"]\n", theirs.display());
    std::fs::write(home.join("config.toml"), &config).unwrap();
    // A program named `codex` that writes down its arguments and its token.
    let fake = env.path("codex");
    std::fs::write(
        &fake,
        "#!/bin/sh\nprintf '%s' \"$NIGHTSHIFT_TOKEN\" > \"$0.token\"\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$0.args\"\nexec cat\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let spec = SessionSpec::new(CommandSpec {
        program: fake.display().to_string(),
        args: vec!["--no-daemon".into()],
        cwd: env.dir.path().to_path_buf(),
        env: vec![("CODEX_HOME".into(), home.display().to_string())],
        size: PtySize::default(),
    });
    let handle = sup.start(spec).unwrap();
    let token = common::wait_for("the token", Duration::from_secs(10), || {
        std::fs::read_to_string(env.path("codex.token")).ok().filter(|t| !t.is_empty())
    });
    // The fake writes its token, then its arguments: wait for the last of them too.
    let args = common::wait_for("the arguments", Duration::from_secs(10), || {
        std::fs::read_to_string(env.path("codex.args")).ok().filter(|a| a.lines().any(|l| l == "--no-daemon"))
    });
    let args: Vec<&str> = args.lines().collect();
    let ours = serde_json::json!([common::bin(), "notify", "--", theirs]).to_string().replace(',', ", ");
    let ours = format!("notify={ours}");
    let session_args = nightshift::agent::Adapter::builtin(nightshift::AgentKind::Codex).session_args().to_vec();
    let expected: Vec<&str> = ["-c", ours.as_str()]
        .into_iter()
        .chain(session_args.iter().map(String::as_str))
        .chain(["--no-daemon"])
        .collect();
    assert_eq!(args, expected, "ours first, running theirs; then codex.toml's session_args, before the user's own");
    assert_eq!(std::fs::read_to_string(home.join("config.toml")).unwrap(), config, "their config untouched");

    let session = handle.id().to_string();
    let socket = socket.display().to_string();
    let home = home.display().to_string();
    let vars = move |token: &str| -> Vec<(String, String)> {
        [("NIGHTSHIFT_CONTROL", socket.as_str()), ("NIGHTSHIFT_TOKEN", token), ("NIGHTSHIFT_SESSION", session.as_str())]
            .into_iter()
            .chain([("CODEX_HOME", home.as_str())])
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let run = |vars: Vec<(String, String)>, thread: &'static str| {
        tokio::task::spawn_blocking(move || {
            let v: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            notify(&v, &[&payload(thread)])
        })
    };
    let conversations = || {
        let events = sup.with_store(|s| s.recent_events(handle.id().as_str(), 100)).unwrap();
        events.into_iter().filter(|e| e.event == "conversation").map(|e| e.body).collect::<Vec<_>>()
    };
    // Another session's token, and the thread that names a new thread: neither is the conversation.
    let (out, _) = run(vars("not-its-token"), THREAD).await.unwrap();
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    let (out, took) = run(vars(&token), TITLE_THREAD).await.unwrap();
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    assert!(conversations().is_empty(), "{:?}", conversations());
    let (out, _) = run(vars(&token), THREAD).await.unwrap();
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    let recorded = conversations();
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert!(recorded[0].contains(THREAD), "{recorded:?}");
    handle.stop("test").await.unwrap();
    handle.wait().await;
}
