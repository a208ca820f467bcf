//! A hostile agent against Nightshift's own envelope, on the real Claude Code client and the mock
//! API: what the agent can write (a settings file, a repository it ships) must never decide what
//! Nightshift runs outside the sandbox. Each case has a marker the agent's command would leave if
//! it ran outside, and that marker must not appear; the user's own settings still work.

use crate::{common, mock_api};

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::claude::{client, ClaudeRun, Options};
use common::wait_for;
use mock_api::MockApi;

/// Whether the client's sandbox can run here; `make test` installs what it needs.
fn sandbox_ready() -> bool {
    match <nightshift::platform::Os as nightshift::platform::Sandboxes>::claude_sandbox() {
        Ok(()) => true,
        Err(why) => {
            assert!(std::env::var_os("NIGHTSHIFT_REQUIRE_CLAUDE").is_none(), "the sandbox cannot run here: {why}");
            false
        }
    }
}

/// A statusLine that, were it ever run, leaves `marker` behind.
fn statusline_writing(marker: &Path) -> String {
    serde_json::json!({"statusLine": {"type": "command", "command": format!("id -un > '{}'", marker.display())}})
        .to_string()
}

/// The user's own statusLine: it counts its runs in `count` and prints `users-own-line`.
fn users_statusline(count: &Path) -> String {
    let command = format!("echo run >> '{}'; echo users-own-line", count.display());
    serde_json::json!({"statusLine": {"type": "command", "command": command}}).to_string()
}

/// How many times the user's status line ran so far.
fn runs(count: &Path) -> usize {
    std::fs::read_to_string(count).map_or(0, |t| t.lines().count())
}

/// Waits until the client has run its status line `at_least` times, so anything the status line
/// would run instead has had its chance to, or until `marker` shows it did.
fn status_runs(count: &Path, at_least: usize, marker: &Path) {
    wait_for("the status line to run", Duration::from_secs(60), || {
        (runs(count) >= at_least || marker.exists()).then_some(())
    });
}

/// What the session's screen shows now.
fn screen(run: &ClaudeRun) -> String {
    let out = run.cmd(&["screen", &run.session()]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn outside(run: &ClaudeRun, name: &str) -> PathBuf {
    let dir = run.env.path("outside");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The agent writes a settings file with a statusLine in a folder of its own and `cd`s into it:
/// the status line goes on showing the user's own, and the agent's command never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statusline_the_agent_writes_never_runs() {
    let Some(claude) = client() else { return };
    if !sandbox_ready() {
        return;
    }
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let counts = tempfile::tempdir().unwrap();
    let count = counts.path().join("count");
    let user = users_statusline(&count);
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options {
            run_args: &["--preset", "overnight", "--idle-timeout", "600", "--user-quiet", "0"],
            args: &["Start. mock:fast"],
            project: &[("README", "the project\n")],
            client_settings: Some(&user),
            ..Default::default()
        },
    );
    let marker = outside(&run, "statusline-ran");
    run.wait_state("idle", 0, Duration::from_secs(60));
    wait_for("the user's own status line", Duration::from_secs(60), || {
        screen(&run).contains("users-own-line").then_some(())
    });
    let before = runs(&count);
    let settings = statusline_writing(&marker).replace('\'', "'\\''");
    run.send(
        &format!(
            "mock:bash mkdir -p sub/.claude && printf '%s' '{settings}' > sub/.claude/settings.local.json && cd sub"
        ),
        true,
    );
    wait_for("the settings file written", Duration::from_secs(60), || {
        run.workdir.join("sub/.claude/settings.local.json").exists().then_some(())
    });
    // The next turns run in `sub`, where the agent's settings file is.
    // The client runs its status line again once the folder it reports changed.
    status_runs(&count, before + 1, &marker);
    let asked = mock.messages().len();
    run.send("Carry on. mock:fast", true);
    wait_for("the next turn", Duration::from_secs(60), || (mock.messages().len() > asked).then_some(()));
    std::thread::sleep(Duration::from_secs(2));
    assert!(!marker.exists(), "the statusLine the agent wrote ran outside the sandbox");
    assert!(screen(&run).contains("users-own-line"), "the user's own status line is still shown");
}

/// A repository that ships a statusLine in its own settings, started at its top and, with
/// `--worktree`, in a subfolder of it: neither is run for a sandboxed session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statusline_a_repository_ships_never_runs_for_a_sandboxed_session() {
    let Some(claude) = client() else { return };
    if !sandbox_ready() {
        return;
    }
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let mut ran = Vec::new();
    for worktree in [false, true] {
        let marker_dir = tempfile::tempdir().unwrap();
        let marker = marker_dir.path().join("statusline-ran");
        let count = marker_dir.path().join("count");
        let user = users_statusline(&count);
        let shipped = statusline_writing(&marker);
        let root = tempfile::tempdir().unwrap();
        let config = format!("[worktree]\ndir = \"{}\"\n", root.path().display());
        let mut run_args = vec!["--preset", "overnight", "--idle-timeout", "600", "--user-quiet", "0"];
        if worktree {
            run_args.extend(["--worktree", "night"]);
        }
        let run = ClaudeRun::start(
            &claude,
            &mock.base_url(),
            Options {
                run_args: &run_args,
                args: &["Start. mock:fast"],
                project: &[
                    ("README", "the project\n"),
                    (".claude/settings.json", &shipped),
                    ("sub/.claude/settings.local.json", &shipped),
                    ("sub/notes.txt", "a subfolder\n"),
                ],
                config: &config,
                subdir: worktree.then_some("sub"),
                client_settings: Some(&user),
                ..Default::default()
            },
        );
        // The client runs its status line as it starts, and again after a turn.
        status_runs(&count, 1, &marker);
        let asked = mock.messages().len();
        run.send("Carry on. mock:fast", true);
        wait_for("the next turn", Duration::from_secs(60), || (mock.messages().len() > asked).then_some(()));
        std::thread::sleep(Duration::from_secs(2));
        ran.push((if worktree { "a worktree from a subfolder" } else { "the repository's top" }, marker.exists()));
    }
    assert!(ran.iter().all(|(_, ran)| !ran), "the statusLine the repository ships ran: {ran:?}");
}

/// The options a running session shows (the window's Session Options), asked of its process.
async fn options(env: &common::Env, session: &str) -> nightshift::session::Options {
    use nightshift::control::{self, Request, Response};
    let row = nightshift::store::Store::open_reader(&env.state_dir().join("journal.sqlite3"))
        .unwrap()
        .find_session(session)
        .unwrap();
    let socket = control::owner_socket(&row).unwrap().to_path_buf();
    match control::request(&socket, &Request::Options { session: session.into() }).await.unwrap() {
        Response::Options(options) => *options,
        other => panic!("options are answered with the options, not {other:?}"),
    }
}

/// Codex given the flags that turn its sandbox off, under the overnight preset: refused at once in
/// one line naming the flag; with `allow_unsandboxed` it starts, says so in its options, the
/// journal and the morning, and works on (no crash loop from flags that fight ours).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_told_to_leave_its_sandbox_is_not_called_sandboxed() {
    use common::codex::{client as codex_client, CodexRun, Options as CodexOptions};
    let Some(codex) = codex_client() else { return };
    let mock = crate::mock_responses::MockResponses::start().await.expect("the stand-in API starts");
    let night = ["--preset", "overnight", "--idle-timeout", "600", "--user-quiet", "0"];
    for flags in [&["--dangerously-bypass-approvals-and-sandbox"][..], &["--yolo"], &["-s", "danger-full-access"]] {
        let mut args = flags.to_vec();
        args.push("start mock:fast");
        let mut run = CodexRun::start(
            &codex,
            &mock.base_url(),
            CodexOptions { run_args: &night, args: &args, ..Default::default() },
        );
        let status = wait_for("the refusal", Duration::from_secs(20), || run.child.try_wait().unwrap());
        let mut said = String::new();
        std::io::Read::read_to_string(run.child.stderr.as_mut().unwrap(), &mut said).unwrap();
        assert!(!status.success(), "{flags:?} started: {said}");
        assert!(said.contains(flags[0]) && said.contains("allow_unsandboxed"), "{said}");
        assert_eq!(said.trim().lines().count(), 1, "one line: {said}");
        assert!(run.events().is_empty() && run.survivors().is_empty(), "nothing started for {flags:?}");
    }

    let mut run = CodexRun::start(
        &codex,
        &mock.base_url(),
        CodexOptions {
            run_args: &night,
            args: &["--yolo", "start mock:fast"],
            config: "[sandbox]\nallow_unsandboxed = true\n",
            ..Default::default()
        },
    );
    let session = run.session();
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(60));
    run.send("and on mock:fast", true);
    run.wait_state("working", i + 1, Duration::from_secs(30));
    let sandbox = options(&run.env, &session).await.sandbox;
    assert_eq!(sandbox.as_deref(), Some("not sandboxed: `--yolo` turns Codex's sandbox off"), "the options say so");
    let contract = run.events().into_iter().find(|e| e["event"] == "contract").unwrap();
    assert_eq!(contract["contract"]["unsandboxed"], "not sandboxed: `--yolo` turns Codex's sandbox off");
    let starts = run.events().iter().filter(|e| e["state"] == "running").count();
    assert_eq!(starts, 1, "started once, no crash loop");
    let out = run.nightshift(&["digest"]).stdout(std::process::Stdio::piped()).output().unwrap();
    let digest = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(digest.contains("without its sandbox: not sandboxed: `--yolo`"), "{digest}");
    run.stop();
}

/// Claude under another name, or through a wrapper, has no command line of its own to carry the
/// sandbox: an overnight start is refused in one line, never run unsandboxed with a note.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renamed_or_wrapped_claude_is_refused_for_the_night() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let names = tempfile::tempdir().unwrap();
    let renamed = names.path().join("claude-2.1");
    std::os::unix::fs::symlink(&claude, &renamed).unwrap();
    let wrapper = names.path().join("run-claude");
    std::fs::write(&wrapper, format!("#!/bin/sh\nexec '{}' \"$@\"\n", claude.display())).unwrap();
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    for program in [&renamed, &wrapper] {
        let mut run = ClaudeRun::start(
            program,
            &mock.base_url(),
            Options { run_args: &["--preset", "overnight"], args: &["Start. mock:fast"], ..Default::default() },
        );
        let status = wait_for("the refusal", Duration::from_secs(20), || run.child.try_wait().unwrap());
        let mut said = String::new();
        std::io::Read::read_to_string(run.child.stderr.as_mut().unwrap(), &mut said).unwrap();
        assert!(!status.success(), "{} started: {said}", program.display());
        assert!(said.contains("is not the claude CLI itself") && said.contains("--no-sandbox"), "{said}");
        assert!(run.events().is_empty(), "nothing started");
    }
    assert!(mock.messages().is_empty(), "no request reached the API");
}

/// Every folder and file Nightshift keeps after a night is its user's alone: made so, and an open
/// one an older build left is closed as the next run starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_state_and_config_folders_are_the_users_alone_after_a_night() {
    use std::os::unix::fs::PermissionsExt;
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options {
            run_args: &["--respawn", "--idle-timeout", "600"],
            args: &["Start. mock:fast"],
            config: "[sandbox]\nenabled = false\n",
            config_files: &[("guard.toml", "disable = []\n")],
            ..Default::default()
        },
    );
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(60));
    run.send("Carry on. mock:fast", true);
    run.wait_state("idle", i + 1, Duration::from_secs(60));
    let run = run_stopped(run);

    // As an older build would have left them, open to everyone; the next run closes them as it
    // starts.
    let state = run.env.state_dir();
    let config = run.env.path("config");
    let old = state.join("handoffs/old-session");
    std::fs::create_dir_all(&old).unwrap();
    std::fs::write(old.join("latest.md"), "an old handoff\n").unwrap();
    for (path, mode) in [
        (state.clone(), 0o755),
        (state.join("handoffs"), 0o755),
        (old.clone(), 0o777),
        (old.join("latest.md"), 0o644),
        (config.join("config.toml"), 0o644),
        (config.clone(), 0o755),
    ] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let next = run.cmd(&["run", "--", "true"]).output().unwrap();
    assert!(next.status.success(), "{}", String::from_utf8_lossy(&next.stderr));

    let mut open = Vec::new();
    let mut seen = 0;
    let mut stack = vec![state.clone(), config.clone()];
    while let Some(at) = stack.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&at) else { continue };
        seen += 1;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            open.push(format!("{} {mode:o}", at.display()));
        }
        if meta.is_dir() {
            stack.extend(std::fs::read_dir(&at).into_iter().flatten().flatten().map(|e| e.path()));
        }
    }
    assert!(seen > 10, "the night left its journal, logs and recordings ({seen} entries)");
    assert!(state.join("recordings").exists() && state.join("logs").exists(), "recordings and logs were kept");
    assert!(open.is_empty(), "open to other users:\n{}", open.join("\n"));
}

/// Ends a run as the user's Ctrl-C would, and waits for it.
fn run_stopped(mut run: ClaudeRun) -> ClaudeRun {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(run.child.id() as i32), nix::sys::signal::Signal::SIGTERM)
        .unwrap();
    wait_for("the run to end", Duration::from_secs(30), || run.child.try_wait().unwrap());
    run
}

/// A sandboxed agent reads what it can reach: Nightshift's journal, its phone key, another
/// account's login. None of them is within its reach; its own project is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_agent_cannot_read_nightshifts_secrets_or_other_accounts() {
    let Some(claude) = client() else { return };
    if !sandbox_ready() {
        return;
    }
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options {
            run_args: &["--preset", "overnight", "--idle-timeout", "600", "--user-quiet", "0", "--account", "main"],
            args: &["Start. mock:fast"],
            project: &[("README", "the project\n")],
            accounts: &[("main", "sk-ant-oat01-main-0000"), ("other", "sk-ant-oat01-other-secret-0000")],
            config_files: &[("phone.key", "secret-phone-key-0123456789abcdef")],
            ..Default::default()
        },
    );
    run.wait_state("idle", 0, Duration::from_secs(60));
    let journal = run.env.state_dir().join("journal.sqlite3");
    let key = run.env.path("config").join("phone.key");
    let other = run.env.path("account-other").join(".credentials.json");
    let reads = [
        ("journal", journal.display().to_string()),
        ("key", key.display().to_string()),
        ("other", other.display().to_string()),
        ("readme", "README".to_string()),
    ];
    let script: Vec<String> =
        reads.iter().map(|(name, path)| format!("(head -c 64 '{path}' > got-{name}.txt 2>&1 || true)")).collect();
    run.send(&format!("mock:bash {}", script.join("; ")), true);
    wait_for("the reads", Duration::from_secs(60), || run.workdir.join("got-readme.txt").exists().then_some(()));
    std::thread::sleep(Duration::from_millis(500));
    let got = |name: &str| std::fs::read_to_string(run.workdir.join(format!("got-{name}.txt"))).unwrap_or_default();
    assert_eq!(got("readme"), "the project\n", "its own project is read");
    for name in ["journal", "key", "other"] {
        let text = got(name);
        assert!(!text.contains("SQLite") && !text.contains("secret"), "the agent read the {name}: {text:?}");
    }
}
