//! `nightshift hook`, the command Claude Code runs for each hook of a Nightshift session: it hands
//! the payload to the session's supervisor over its control socket and prints the answer, and it
//! fails open — whatever goes wrong, the client carries on within two seconds.

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nightshift::control::ControlServer;
use nightshift::pty::{CommandSpec, PtySize};
use nightshift::supervisor::SessionSpec;

fn hook(env: &[(&str, &str)], payload: &str) -> (std::process::Output, Duration) {
    let mut cmd = Command::new(common::bin());
    cmd.arg("hook").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap();
    child.stdin.take().unwrap().write_all(payload.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (out, started.elapsed())
}

const PRE_TOOL_USE: &str = r#"{"session_id":"c1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"gh pr merge 7"},"cwd":"/tmp"}"#;

#[test]
fn without_a_supervisor_it_lets_the_client_go_on_at_once() {
    let (out, took) = hook(&[], PRE_TOOL_USE);
    assert!(out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone.sock").display().to_string();
    let (out, _) =
        hook(&[("NIGHTSHIFT_CONTROL", &gone), ("NIGHTSHIFT_TOKEN", "t"), ("NIGHTSHIFT_SESSION", "s")], "not json");
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
}

#[test]
fn a_supervisor_that_never_answers_costs_the_client_at_most_two_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stuck.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    // Accepts, reads nothing, answers nothing: a frozen Nightshift.
    let _held = std::thread::spawn(move || {
        let conns: Vec<_> = listener.incoming().take(1).collect();
        std::thread::sleep(Duration::from_secs(10));
        drop(conns);
    });
    let socket = path.display().to_string();
    let (out, took) =
        hook(&[("NIGHTSHIFT_CONTROL", &socket), ("NIGHTSHIFT_TOKEN", "t"), ("NIGHTSHIFT_SESSION", "s")], PRE_TOOL_USE);
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    assert!(took <= Duration::from_secs(2), "the hook held the client {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_answers_through_the_hook_and_only_with_its_token() {
    let env = common::Env::new();
    let mut sup = env.supervisor();
    std::fs::create_dir_all(env.runtime_dir()).unwrap();
    let socket = env.runtime_dir().join("control-hook.sock");
    let _server = ControlServer::bind(&socket, sup.clone()).unwrap();
    sup.set_control_socket(socket.clone());
    sup.set_cli(&common::bin());
    sup.set_guard_rules(nightshift::hooks::guard::Rules::builtin());
    // A program named `claude` gets the hooks, with its session's token in its environment.
    let fake = env.path("claude");
    std::fs::write(
        &fake,
        "#!/bin/sh\nprintf '%s' \"$NIGHTSHIFT_TOKEN\" > \"$0.token\"\nprintf '%s' \"$2\" > \"$0.settings\"\nexec cat\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut spec = SessionSpec::new(CommandSpec {
        program: fake.display().to_string(),
        args: vec![],
        cwd: env.dir.path().to_path_buf(),
        env: vec![],
        size: PtySize::default(),
    });
    spec.guard = Some(std::sync::Arc::new(nightshift::hooks::guard::Rules::builtin()));
    let handle = sup.start(spec).unwrap();
    let token = common::wait_for("the token", Duration::from_secs(10), || {
        std::fs::read_to_string(env.path("claude.token")).ok().filter(|t| !t.is_empty())
    });
    // The fake writes its token, then its settings: wait for them whole.
    let settings: serde_json::Value = common::wait_for("the settings", Duration::from_secs(10), || {
        serde_json::from_str(&std::fs::read_to_string(env.path("claude.settings")).ok()?).ok()
    });
    for event in nightshift::hooks::EVENTS {
        let command = settings["hooks"][event][0]["hooks"][0]["command"].as_str().unwrap();
        assert!(command.ends_with(" hook"), "{event}: {command}");
    }
    assert!(settings["statusLine"]["command"].as_str().unwrap().ends_with(" statusline"));

    let session = handle.id().to_string();
    let socket = socket.display().to_string();
    let vars = [
        ("NIGHTSHIFT_CONTROL", socket.as_str()),
        ("NIGHTSHIFT_TOKEN", token.as_str()),
        ("NIGHTSHIFT_SESSION", session.as_str()),
    ];
    let run = |vars: [(&'static str, String); 3]| {
        tokio::task::spawn_blocking(move || {
            let v: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
            hook(&v, PRE_TOOL_USE)
        })
    };
    let owned = vars.map(|(k, v)| (k, v.to_string()));
    let (out, took) = run(owned.clone()).await.unwrap();
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).expect("an answer on stdout");
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(answer["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .contains("merging a pull request"));
    assert!(took < Duration::from_secs(1), "{took:?}");
    let mut wrong = owned.clone();
    wrong[1].1 = "not-its-token".into();
    let (out, _) = run(wrong).await.unwrap();
    assert!(out.status.success() && out.stdout.is_empty(), "another session's token is refused: {out:?}");
    let denied = sup.with_store(|s| s.recent_events(&session, 100)).unwrap();
    assert_eq!(denied.iter().filter(|e| e.event == "guard_denied").count(), 1);
    handle.stop("test").await.unwrap();
    handle.wait().await;
}

/// A session of a program named `claude` (a fake that keeps its token and settings, then waits)
/// under a supervisor with its control socket, the guard armed, working in `env`'s `tree`.
struct Guarded {
    env: common::Env,
    sup: nightshift::Supervisor,
    handle: nightshift::session::SessionHandle,
    settings: serde_json::Value,
    vars: [(&'static str, String); 3],
    _server: ControlServer,
}

impl Guarded {
    async fn start() -> Self {
        let env = common::Env::new();
        let mut sup = env.supervisor();
        std::fs::create_dir_all(env.runtime_dir()).unwrap();
        let socket = env.runtime_dir().join("control-guard.sock");
        let server = ControlServer::bind(&socket, sup.clone()).unwrap();
        sup.set_control_socket(socket.clone());
        sup.set_cli(&common::bin());
        let fake = env.path("claude");
        std::fs::write(
            &fake,
            "#!/bin/sh\nprintf '%s' \"$NIGHTSHIFT_TOKEN\" > \"$0.token\"\nprintf '%s' \"$2\" > \"$0.settings\"\nexec cat\n",
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let tree = env.path("tree");
        std::fs::create_dir_all(&tree).unwrap();
        let mut spec = SessionSpec::new(CommandSpec {
            program: fake.display().to_string(),
            args: vec![],
            cwd: tree,
            env: vec![],
            size: PtySize::default(),
        });
        spec.guard = Some(std::sync::Arc::new(nightshift::hooks::guard::Rules::builtin()));
        let handle = sup.start(spec).unwrap();
        let token = common::wait_for("the token", Duration::from_secs(10), || {
            std::fs::read_to_string(env.path("claude.token")).ok().filter(|t| !t.is_empty())
        });
        let settings: serde_json::Value = common::wait_for("the settings", Duration::from_secs(10), || {
            serde_json::from_str(&std::fs::read_to_string(env.path("claude.settings")).ok()?).ok()
        });
        let vars = [
            ("NIGHTSHIFT_CONTROL", socket.display().to_string()),
            ("NIGHTSHIFT_TOKEN", token),
            ("NIGHTSHIFT_SESSION", handle.id().to_string()),
        ];
        Self { env, sup, handle, settings, vars, _server: server }
    }

    /// The PreToolUse hook's command line as the session's settings give it to the client.
    fn pre_tool_use_command(&self) -> String {
        self.settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"].as_str().unwrap().to_string()
    }

    /// Runs the session's PreToolUse hook command (through `sh -c`, as the client does) with
    /// `payload` on its stdin, off the async workers.
    async fn pre_tool_use(&self, payload: String) -> (std::process::Output, Duration) {
        let (command, vars) = (self.pre_tool_use_command(), self.vars.clone());
        tokio::task::spawn_blocking(move || {
            let mut cmd = Command::new("sh");
            cmd.args(["-c", &command]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
            for (k, v) in &vars {
                cmd.env(k, v);
            }
            let started = Instant::now();
            let mut child = cmd.spawn().unwrap();
            child.stdin.take().unwrap().write_all(payload.as_bytes()).unwrap();
            let out = child.wait_with_output().unwrap();
            (out, started.elapsed())
        })
        .await
        .unwrap()
    }

    fn events(&self, name: &str) -> Vec<nightshift::store::StoredEvent> {
        let session = self.handle.id().to_string();
        let rows = self.sup.with_store(|s| s.recent_events(&session, 100)).unwrap();
        rows.into_iter().filter(|e| e.event == name).collect()
    }

    async fn stop(self) {
        self.handle.stop("test").await.unwrap();
        self.handle.wait().await;
    }
}

fn bash_payload(command: &str, cwd: &std::path::Path) -> String {
    serde_json::json!({"session_id": "c1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command}, "cwd": cwd})
    .to_string()
}

/// What the hook printed: the client's deny, with its reason, or `None` for no word.
fn denial(out: &std::process::Output) -> Option<String> {
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny", "{answer}");
    Some(answer["hookSpecificOutput"]["permissionDecisionReason"].as_str()?.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guard_reads_a_path_from_where_the_agents_shell_is_now() {
    let g = Guarded::start().await;
    // The agent's shell went elsewhere (the client's `cd` persists): the payload says where.
    let elsewhere = g.env.path("elsewhere");
    std::fs::create_dir_all(elsewhere.join("victim")).unwrap();
    let (out, _) = g.pre_tool_use(bash_payload("rm -rf victim", &elsewhere)).await;
    let reason =
        denial(&out).unwrap_or_else(|| panic!("rm -rf {}/victim was let through: {out:?}", elsewhere.display()));
    assert!(reason.contains("outside the working tree"), "{reason}");
    // Inside the session's tree, from a folder of it, the same words pass.
    let sub = g.env.path("tree/sub");
    std::fs::create_dir_all(&sub).unwrap();
    let (out, _) = g.pre_tool_use(bash_payload("rm -rf victim", &sub)).await;
    assert_eq!(denial(&out), None, "{out:?}");
    assert_eq!(g.events("guard_denied").len(), 1);
    g.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guards_answer_never_waits_on_the_journal() {
    let g = Guarded::start().await;
    let tree = g.env.path("tree");
    // Settled: what the start journals is written.
    tokio::time::sleep(Duration::from_secs(3)).await;
    // Another process holds the journal's write lock, as a long write or a stuck one would: every
    // journal write of this process waits for it (up to the store's 10 s busy timeout).
    let db = g.env.state_dir().join("journal.sqlite3");
    let locker = rusqlite::Connection::open(&db).unwrap();
    locker.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (out, took) = g.pre_tool_use(bash_payload("gh pr merge 7", &tree)).await;
    let answered = denial(&out);
    drop(locker);
    assert!(
        answered.as_deref().is_some_and(|r| r.contains("merging a pull request")),
        "no refusal while the journal was locked (after {took:?}): {out:?}"
    );
    assert!(took < Duration::from_secs(2), "the answer waited {took:?}");
    // Once the lock is gone the refusal is journalled.
    common::wait_for("guard_denied in the journal", Duration::from_secs(15), || {
        (!g.events("guard_denied").is_empty()).then_some(())
    });
    g.stop().await;
}
