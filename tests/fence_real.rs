//! The network fence of an overnight night, against the real Claude Code client and the mock API,
//! with hosts of the outside world on loopback addresses of their own: the project's git remote on
//! 127.0.0.2, the package index its `.npmrc` names on 127.0.0.3, and a stranger on 127.0.0.4. Each
//! turn fetches from the index and pushes to the remote with no prompt; the stranger gets no
//! request, and the journal, the phone and the morning name it once, with a count.

use crate::{common, mock_api};

use std::time::Duration;

use common::claude::{client, ClaudeRun, Options};
use common::wait_for;
use mock_api::MockApi;

/// The world outside a night, on loopback addresses of its own: the project's git server on
/// 127.0.0.2 (an empty bare repository, `bare`), a package index on 127.0.0.3 and a stranger on
/// 127.0.0.4.
struct World {
    bare: std::path::PathBuf,
    remote: common::hosts::Host,
    index: common::hosts::Host,
    stranger: common::hosts::Host,
}

async fn world(env: &common::Env) -> World {
    let bare = env.path("srv/remote.git");
    std::fs::create_dir_all(&bare).unwrap();
    common::git_in(&bare, &["init", "-q", "--bare", "-b", "main"], false);
    let remote = common::hosts::git_server("127.0.0.2", &bare).await;
    let index =
        common::hosts::index("127.0.0.3", &[("/left-pad", "{\"name\":\"left-pad\",\"version\":\"1.3.0\"}")]).await;
    let stranger = common::hosts::index("127.0.0.4", &[("/", "you should not be here")]).await;
    World { bare, remote, index, stranger }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overnight_turn_fetches_and_pushes_inside_the_fence_and_a_stranger_is_refused_and_told() {
    let Some(claude) = client() else { return };
    let ready = <nightshift::platform::Os as nightshift::platform::Sandboxes>::claude_sandbox();
    if let Err(why) = ready {
        assert!(std::env::var_os("NIGHTSHIFT_REQUIRE_CLAUDE").is_none(), "the sandbox cannot run here: {why}");
        return;
    }
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let ntfy = common::ntfy::Fake::start();
    let scratch = common::Env::new();
    let World { bare, remote, index, stranger } = world(&scratch).await;
    let origin = format!("{}/remote.git", remote.url());
    let npmrc = format!("registry={}/\n", index.url());
    let config = format!("[push]\nntfy = \"{}\"\n", ntfy.url("night"));
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options {
            run_args: &["--preset", "overnight", "--idle-timeout", "600", "--user-quiet", "0"],
            args: &["--permission-mode", "acceptEdits", "--allowedTools=Bash", "Start. mock:fast"],
            project: &[("README", "the project\n"), (".npmrc", &npmrc), ("package.json", "{\"name\":\"p\"}\n")],
            config: &config,
            // The project's origin is the git server; its first commit is there already.
            remote: Some(&origin),
            ..Default::default()
        },
    );
    let dir = run.workdir.clone();
    run.wait_state("idle", 0, Duration::from_secs(60));
    let fence = wait_for("the fence journalled", Duration::from_secs(30), || {
        run.events().into_iter().find(|e| e["event"] == "fence")
    });
    let hosts: Vec<&str> = fence["hosts"].as_array().unwrap().iter().filter_map(|h| h["host"].as_str()).collect();
    assert!(
        hosts.iter().any(|h| h.starts_with("127.0.0.2")) && hosts.iter().any(|h| h.starts_with("127.0.0.3")),
        "{fence}"
    );
    assert!(!hosts.iter().any(|h| h.starts_with("127.0.0.4")), "{fence}");

    // `git add -A` is not used: inside Claude's sandbox on Linux, the placeholders it mounts over
    // the shell's start-up files in the working folder (`.bash_profile`, …) are character devices
    // that `git add -A` refuses ("can only add regular files").
    let turn = |n: u32| {
        format!(
            "mock:bash {{ curl -sSf {index}/left-pad -o fetched-{n}.json && echo step {n} >> work.txt && git add work.txt fetched-{n}.json && \
             git -c user.name=agent -c user.email=agent@example.com commit -qm 'step {n}' && git push -q origin HEAD:main; \
             curl -s -m 5 -o /dev/null {stranger}/ ; echo done {n}; }} > out-{n}.txt 2>&1",
            index = index.url(),
            stranger = stranger.url(),
        )
    };
    for n in 1..=2 {
        // Each turn is typed at a prompt that is ready: one typed while a turn runs is queued into
        // it, and the mock answers the two as one.
        let states = run.states().len();
        run.send(&turn(n), true);
        let deadline = std::time::Instant::now() + Duration::from_secs(90);
        while !common::git_in(&bare, &["log", "--format=%s", "main"], true).contains(&format!("step {n}")) {
            assert!(
                std::time::Instant::now() < deadline,
                "turn {n}'s push did not land; the command said: {:?}\n{}",
                std::fs::read_to_string(dir.join(format!("out-{n}.txt"))),
                run.env.stdout(&["log", &run.session()])
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        run.wait_state("idle", states, Duration::from_secs(60));
    }
    assert_eq!(index.seen().iter().filter(|s| s.path == "/left-pad").count(), 2, "each turn fetched from the index");
    assert!(stranger.seen().is_empty(), "the stranger got a request: {:?}", stranger.seen());
    let refused = wait_for("the refusals journalled", Duration::from_secs(20), || {
        let r: Vec<serde_json::Value> = run.events().into_iter().filter(|e| e["event"] == "net_refused").collect();
        (r.len() >= 2).then_some(r)
    });
    assert!(refused.iter().all(|e| e["host"] == "127.0.0.4"), "{refused:#?}");
    assert!(
        refused[0]["command"].as_str().is_some_and(|c| c.contains("curl")),
        "the command that tried: {}",
        refused[0]
    );
    // The journal no longer says such a command was not blocked: its exit code hid the refusal.
    let commands: Vec<serde_json::Value> =
        run.events().into_iter().filter(|e| e["event"] == "sandbox_command").collect();
    assert!(
        !commands.is_empty() && commands.iter().all(|e| e["blocked"] == true),
        "each turn's command was refused a host: {commands:#?}"
    );
    let states: Vec<String> = run.states().into_iter().map(|(_, s, _)| s).collect();
    assert!(!states.iter().any(|s| s == "waiting_input"), "no prompt: {states:?}");
    // The phone is told once for the host; the morning names it once, with its count.
    let pushed = ntfy.seen().iter().filter(|p| p.body.contains("127.0.0.4")).count();
    assert_eq!(pushed, 1, "one push for the stranger");
    let digest = run.env.stdout(&["digest"]);
    let lines: Vec<&str> = digest.lines().filter(|l| l.contains("the fence refused 127.0.0.4")).collect();
    assert_eq!(lines.len(), 1, "{digest}");
    assert!(lines[0].contains("×2") || lines[0].contains("2 times"), "{digest}");

    // Allowed from the session's options (the window's button asks the same over the control
    // socket): the next turn reaches the stranger, and the journal says who let it through.
    let store = nightshift::store::Store::open(&run.env.state_dir().join("journal.sqlite3")).unwrap();
    let row = store.find_session(&run.session()).unwrap();
    let socket = nightshift::control::owner_socket(&row).unwrap();
    let allow = |host: &str| nightshift::control::Request::AllowHost {
        session: row.id.clone(),
        host: host.into(),
        by: Some("the test".into()),
    };
    let refused = nightshift::control::request(socket, &allow("not a host!")).await;
    assert!(matches!(&refused, Err(e) if e.to_string().contains("is not a host")), "{refused:?}");
    let Ok(nightshift::control::Response::Options(options)) =
        nightshift::control::request(socket, &allow("127.0.0.4")).await
    else {
        panic!("the fence did not take the host")
    };
    let fence = options.fence.expect("a fenced session");
    assert!(fence.hosts.iter().any(|h| h.host == "127.0.0.4" && h.why.contains("the test")), "{fence:?}");
    assert!(fence.refused.is_empty(), "what is allowed is no longer listed as refused: {fence:?}");
    run.send(&turn(3), true);
    wait_for("the stranger reached", Duration::from_secs(90), || (!stranger.seen().is_empty()).then_some(()));
    assert!(run
        .events()
        .iter()
        .any(|e| e["event"] == "net_allowed" && e["host"] == "127.0.0.4" && e["by"] == "the test"));
}

/// The same fence for a loop's `claude -p` iteration: the fetch and the push go through, the
/// stranger is refused and journalled with its host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loop_iteration_fetches_and_pushes_inside_the_fence_and_a_stranger_is_refused() {
    let Some(claude) = client() else { return };
    if let Err(why) = <nightshift::platform::Os as nightshift::platform::Sandboxes>::claude_sandbox() {
        assert!(std::env::var_os("NIGHTSHIFT_REQUIRE_CLAUDE").is_none(), "the sandbox cannot run here: {why}");
        return;
    }
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let env = common::Env::new();
    let home = common::claude::ClientHome::new(&env, &mock.base_url(), common::claude::Auth::Subscriber, &[]);
    let World { bare, remote, index, stranger } = world(&env).await;
    let dir = home.workdir.clone();
    std::fs::write(dir.join("README"), "the project\n").unwrap();
    std::fs::write(dir.join(".npmrc"), format!("registry={}/\n", index.url())).unwrap();
    std::fs::write(dir.join("package.json"), "{\"name\":\"p\"}\n").unwrap();
    let who = ["-c", "user.name=test", "-c", "user.email=test@example.com"];
    common::git_in(&dir, &["init", "-q", "-b", "main"], false);
    common::git_in(&dir, &["add", "-A"], false);
    common::git_in(&dir, &[&who[..], &["commit", "-qm", "the project as it starts"]].concat(), false);
    common::git_in(&dir, &["remote", "add", "origin", &format!("{}/remote.git", remote.url())], false);
    common::git_in(&dir, &["push", "-q", "origin", "HEAD:main"], false);
    let step = format!(
        "mock:bash {{ curl -sSf {index}/left-pad -o fetched.json && git add fetched.json && \
         git -c user.name=agent -c user.email=agent@example.com commit -qm 'loop step' && git push -q origin HEAD:main; \
         curl -s -m 5 -o /dev/null {stranger}/ ; echo done; }} > out.txt 2>&1",
        index = index.url(),
        stranger = stranger.url(),
    );
    let events = env.path("events.jsonl");
    let mut cmd = std::process::Command::new(common::bin());
    cmd.args(["loop", "--program", claude.to_str().unwrap(), "--events", events.to_str().unwrap()])
        .args([
            "--prompt",
            &step,
            "--max-iterations",
            "1",
            "--",
            "--permission-mode",
            "acceptEdits",
            "--allowedTools=Bash",
        ])
        .current_dir(&dir)
        .stdin(std::process::Stdio::null());
    home.apply(&mut cmd);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    let said = std::fs::read_to_string(dir.join("out.txt"));
    assert!(out.status.success(), "{}\nthe command said: {said:?}", String::from_utf8_lossy(&out.stderr));
    let log = common::git_in(&bare, &["log", "--format=%s", "main"], true);
    assert!(log.contains("loop step"), "the push landed: {log}\nthe command said: {said:?}");
    assert_eq!(index.seen().iter().filter(|s| s.path == "/left-pad").count(), 1, "the fetch went to the index");
    assert!(stranger.seen().is_empty(), "the stranger got a request: {:?}", stranger.seen());
    let events = common::read_events(&events);
    let fence = events.iter().find(|e| e["event"] == "fence").expect("the fence journalled");
    let hosts = fence["hosts"].to_string();
    assert!(hosts.contains("127.0.0.2") && hosts.contains("127.0.0.3") && !hosts.contains("127.0.0.4"), "{fence}");
    let refused: Vec<&serde_json::Value> = events.iter().filter(|e| e["event"] == "net_refused").collect();
    assert!(!refused.is_empty() && refused.iter().all(|e| e["host"] == "127.0.0.4"), "{refused:?}");
}

/// Codex in the overnight preset: its `workspace-write` sandbox has the network on or off and
/// nothing between, so Nightshift turns it on and points the commands at its proxy. The fetch from
/// the index and the push to the remote go through with no prompt; the stranger, asked through the
/// proxy as curl does, gets no request, and the journal and the morning name it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_turn_fetches_and_pushes_through_the_fences_proxy_and_a_stranger_is_refused() {
    let Some(codex) = common::codex::client() else { return };
    let mock = crate::mock_responses::MockResponses::start().await.expect("the stand-in API starts");
    let scratch = common::Env::new();
    let World { bare, remote, index, stranger } = world(&scratch).await;
    let origin = format!("{}/remote.git", remote.url());
    let npmrc = format!("registry={}/\n", index.url());
    let mut run = common::codex::CodexRun::start(
        &codex,
        &mock.base_url(),
        common::codex::Options {
            run_args: &["--preset", "overnight", "--idle-timeout", "600", "--user-quiet", "0"],
            project: &[("README", "the project\n"), (".npmrc", &npmrc), ("package.json", "{\"name\":\"p\"}\n")],
            remote: Some(&origin),
            ..Default::default()
        },
    );
    let dir = run.workdir.clone();
    run.wait_state("idle", 0, Duration::from_secs(60));
    let fence = wait_for("the fence journalled", Duration::from_secs(30), || {
        run.events().into_iter().find(|e| e["event"] == "fence")
    });
    let hosts = fence["hosts"].to_string();
    assert!(hosts.contains("127.0.0.2") && hosts.contains("127.0.0.3") && !hosts.contains("127.0.0.4"), "{fence}");
    let step = format!(
        "mock:bash {{ curl -sSf {index}/left-pad -o fetched.json && git push origin HEAD:refs/heads/codex; \
         curl -s -m 5 -o /dev/null {stranger}/ ; echo done; }} > out.txt 2>&1",
        index = index.url(),
        stranger = stranger.url(),
    );
    run.send(&step, true);
    let said = || std::fs::read_to_string(dir.join("out.txt"));
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    while !said().is_ok_and(|s| s.contains("done")) {
        assert!(std::time::Instant::now() < deadline, "the command did not finish: {:?}", said());
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!("the command said: {:?}", said());
    let pushed = common::git_in(&bare, &["log", "--format=%s", "codex"], true);
    assert!(pushed.contains("The project as it starts"), "the push landed: {pushed}\nthe command said: {:?}", said());
    assert!(dir.join("fetched.json").exists(), "the fetch went through: {:?}", said());
    assert_eq!(index.seen().iter().filter(|s| s.path == "/left-pad").count(), 1, "the fetch went to the index");
    assert!(stranger.seen().is_empty(), "the stranger got a request: {:?}", stranger.seen());
    let refused = wait_for("the refusal journalled", Duration::from_secs(20), || {
        let r: Vec<serde_json::Value> = run.events().into_iter().filter(|e| e["event"] == "net_refused").collect();
        (!r.is_empty()).then_some(r)
    });
    assert!(refused.iter().all(|e| e["host"] == "127.0.0.4"), "{refused:#?}");
    // The turn is over: its usage is in, and the session is idle. A turn quick enough to end between
    // two looks at the screen never shows as working, so its end is no new `idle` state.
    wait_for("the turn's end", Duration::from_secs(60), || {
        let events = run.events();
        let typed = events.iter().rposition(|e| e["event"] == "input")?;
        let state = events.iter().rev().find(|e| e["event"] == "state")?;
        (events[typed..].iter().any(|e| e["event"] == "usage") && state["state"] == "idle").then_some(())
    });
    let states: Vec<String> = run.states().into_iter().map(|(_, s, _)| s).collect();
    assert!(!states.iter().any(|s| s == "waiting_input"), "no prompt: {states:?}");
    let digest = run.env.stdout(&["digest"]);
    let lines: Vec<&str> = digest.lines().filter(|l| l.contains("the fence refused 127.0.0.4")).collect();
    assert_eq!(lines.len(), 1, "{digest}");
    run.stop();
}

/// The same fence for a loop's `codex exec` iteration: the fetch and the push go through the
/// proxy, the stranger is refused and journalled with its host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_loop_iteration_fetches_and_pushes_through_the_fence_and_a_stranger_is_refused() {
    let Some(codex) = common::codex::client() else { return };
    let mock = crate::mock_responses::MockResponses::start().await.expect("the stand-in API starts");
    let env = common::Env::new();
    let World { bare, remote, index, stranger } = world(&env).await;
    let home = tempfile::Builder::new().prefix("codex-home").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dir = env.path("project");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(env.path("home")).unwrap();
    let npmrc = format!("registry={}/\n", index.url());
    let origin = format!("{}/remote.git", remote.url());
    common::project(&dir, &[("README", "the project\n"), (".npmrc", &npmrc)], Some(&origin));
    std::fs::write(home.path().join("config.toml"), common::codex::config_toml(&mock.base_url(), &dir)).unwrap();
    let step = format!(
        "mock:bash {{ curl -sSf {index}/left-pad -o fetched.json && git push origin HEAD:refs/heads/from-loop; \
         curl -s -m 5 -o /dev/null {stranger}/ ; echo done; }} > out.txt 2>&1",
        index = index.url(),
        stranger = stranger.url(),
    );
    let events = env.path("events.jsonl");
    let mut cmd = common::codex::nightshift(&env, home.path());
    cmd.args(["loop", "--agent", "codex", "--program", codex.to_str().unwrap()])
        .args(["--events", events.to_str().unwrap(), "--prompt", &step, "--max-iterations", "1"])
        .current_dir(&dir);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    let said = std::fs::read_to_string(dir.join("out.txt"));
    assert!(out.status.success(), "{}\nthe command said: {said:?}", String::from_utf8_lossy(&out.stderr));
    let pushed = common::git_in(&bare, &["log", "--format=%s", "from-loop"], true);
    assert!(pushed.contains("The project as it starts"), "the push landed: {pushed}\nthe command said: {said:?}");
    assert_eq!(index.seen().iter().filter(|s| s.path == "/left-pad").count(), 1, "the fetch went to the index");
    assert!(stranger.seen().is_empty(), "the stranger got a request: {:?}", stranger.seen());
    let events = common::read_events(&events);
    let refused: Vec<&serde_json::Value> = events.iter().filter(|e| e["event"] == "net_refused").collect();
    assert!(!refused.is_empty() && refused.iter().all(|e| e["host"] == "127.0.0.4"), "{refused:?}");
}
