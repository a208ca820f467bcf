//! `nightshift hook`, the command Claude Code runs for each hook of a Nightshift session: it hands
//! the payload to the session's supervisor over its control socket and prints the answer, and it
//! fails open — whatever goes wrong, the client carries on within two seconds — except for a Bash
//! command of a guarded session (`--guarded`): that is refused, with the reason, and journalled.

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
    spec.terminal_mut().guard = true;
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
        // The guarded session's PreToolUse hook fails closed, and knows the journal to tell.
        let journal = env.state_dir().join("journal.sqlite3");
        let guarded = format!(" hook --guarded --journal {}", journal.display());
        let want = if event == "PreToolUse" { guarded.as_str() } else { " hook" };
        assert!(command.ends_with(want), "{event}: {command}");
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
        spec.terminal_mut().guard = true;
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

/// A socket that accepts and then answers `answer` (nothing at all: `None`), as a stuck or a
/// confused Nightshift would.
fn fake_supervisor(dir: &std::path::Path, answer: Option<&'static str>) -> String {
    use std::io::{BufRead, BufReader};
    let path = dir.join(format!("fake-{}.sock", answer.map_or(0, str::len)));
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for mut conn in listener.incoming().flatten() {
            let mut line = String::new();
            let _ = BufReader::new(conn.try_clone().unwrap()).read_line(&mut line);
            match answer {
                Some(text) => {
                    let _ = conn.write_all(text.as_bytes());
                }
                None => held.push(conn),
            }
        }
    });
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guarded_hook_refuses_a_command_nobody_judged_and_journals_it() {
    let g = Guarded::start().await;
    let tree = g.env.path("tree");
    let journal = g.env.state_dir().join("journal.sqlite3");
    let guarded = format!("{} hook --guarded --journal {}", common::bin().display(), journal.display());
    let session = g.handle.id().to_string();
    let run = |vars: Vec<(&'static str, String)>, payload: String| {
        let command = guarded.clone();
        tokio::task::spawn_blocking(move || {
            let mut cmd = Command::new("sh");
            cmd.args(["-c", &command]).env_clear().stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
            cmd.envs(vars);
            let started = Instant::now();
            let mut child = cmd.spawn().unwrap();
            child.stdin.take().unwrap().write_all(payload.as_bytes()).unwrap();
            (child.wait_with_output().unwrap(), started.elapsed())
        })
    };
    let with_socket = |socket: String| {
        vec![
            ("NIGHTSHIFT_CONTROL", socket),
            ("NIGHTSHIFT_TOKEN", g.vars[1].1.clone()),
            ("NIGHTSHIFT_SESSION", session.clone()),
        ]
    };
    // No Nightshift to ask.
    let (out, took) = run(vec![("NIGHTSHIFT_SESSION", session.clone())], bash_payload("touch a", &tree)).await.unwrap();
    let reason = denial(&out).expect("refused");
    assert!(reason.contains("could not check") && reason.contains("NIGHTSHIFT_CONTROL"), "{reason}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    // One that never answers: refused once the guard's time is up.
    let stuck = fake_supervisor(g.env.dir.path(), None);
    let (out, took) = run(with_socket(stuck), bash_payload("touch b", &tree)).await.unwrap();
    assert!(denial(&out).unwrap().contains("no answer from Nightshift within 5 s"), "{out:?}");
    let limit = nightshift::hooks::GUARD_TIMEOUT + nightshift::hooks::GUARD_JOURNAL_WAIT;
    assert!(took >= nightshift::hooks::GUARD_TIMEOUT && took < limit, "{took:?}");
    // One whose answer the client would not read.
    let confused = fake_supervisor(g.env.dir.path(), Some("{\"ok\":true,\"hook\":\"<html>\"}\n"));
    let (out, _) = run(with_socket(confused), bash_payload("touch c", &tree)).await.unwrap();
    assert!(denial(&out).unwrap().contains("not one the client reads"), "{out:?}");
    // A command over the control socket's limit, to the real supervisor.
    let real = g.vars[0].1.clone();
    let long = format!("echo {}", "a".repeat(2 << 20));
    let (out, _) = run(with_socket(real.clone()), bash_payload(&long, &tree)).await.unwrap();
    assert!(denial(&out).unwrap().contains("too long"), "{out:?}");
    // Each is journalled, with its command and why.
    let noted = g.events("guard_unreachable");
    let said: Vec<String> = noted.iter().map(|e| e.body.clone()).collect();
    assert_eq!(noted.len(), 4, "{said:?}");
    assert!(said.iter().any(|b| b.contains("touch b") && b.contains("within 5 s")), "{said:?}");
    // Not a Bash command: the guard has nothing to say, the hook fails open.
    let read =
        serde_json::json!({"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"file_path": "x"}});
    let (out, _) = run(vec![], read.to_string()).await.unwrap();
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    // And a healthy supervisor still answers: a harmless command passes, a refused one is refused.
    let (out, took) = run(with_socket(real.clone()), bash_payload("cargo test", &tree)).await.unwrap();
    assert!(out.status.success() && out.stdout.is_empty() && took < Duration::from_secs(2), "{out:?} {took:?}");
    let (out, _) = run(with_socket(real), bash_payload("gh pr merge 1", &tree)).await.unwrap();
    assert!(denial(&out).unwrap().contains("merging a pull request"), "{out:?}");
    g.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guarded_session_that_cannot_answer_in_time_refuses_and_journals_it() {
    let g = Guarded::start().await;
    let tree = g.env.path("tree");
    tokio::time::sleep(Duration::from_secs(3)).await;
    // The session is held up: it journals what it was typed, and another process holds the
    // journal, so it waits the store's busy timeout (10 s) before it takes its next control.
    let db = g.env.state_dir().join("journal.sqlite3");
    let locker = rusqlite::Connection::open(&db).unwrap();
    locker.execute_batch("BEGIN IMMEDIATE").unwrap();
    let typed = g.handle.send_text("hello", true, nightshift::event::Answerer::Cli);
    let _ = tokio::time::timeout(Duration::from_millis(300), typed).await;
    let (out, took) = g.pre_tool_use(bash_payload("touch x", &tree)).await;
    drop(locker);
    let reason = denial(&out).unwrap_or_else(|| panic!("the command was let through after {took:?}: {out:?}"));
    assert!(reason.contains("the session did not answer within 3 s"), "{reason}");
    assert!(took < nightshift::hooks::GUARD_TIMEOUT, "the supervisor said no itself: {took:?}");
    common::wait_for("guard_unreachable in the journal", Duration::from_secs(20), || {
        g.events("guard_unreachable").into_iter().find(|e| e.body.contains("touch x"))
    });
    g.stop().await;
}
