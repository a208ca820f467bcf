//! The work moving to the other agent at a limit and back at the reset, with the real clients:
//! Claude Code against the mock Messages API and Codex against the mock Responses API, in one git
//! repository. Claude's window is refused for two minutes; the work goes on in Codex from a handoff
//! Nightshift built, and comes back to Claude's own conversation with Codex's handoff once the
//! window has reset. The branch holds both agents' commits, in order.

use crate::{common, mock_api, mock_responses};

use std::process::Stdio;
use std::time::{Duration, SystemTime};

use common::claude::{client, ClaudeRun, Options};
use common::wait_for;

/// A commit made through the agent's shell tool.
fn commit(subject: &str) -> String {
    format!(
        "bash echo '{subject}' >> work.txt && git add work.txt && \
         git -c user.name=agent -c user.email=agent@example.com commit -qm '{subject}'"
    )
}

fn subjects(dir: &std::path::Path) -> Vec<String> {
    common::git_in(dir, &["log", "--reverse", "--format=%s"], false).lines().map(String::from).collect()
}

const STANDING: &str = "Only work.txt tonight.";

/// What `found` finds within `secs`; else the test fails with the session's journal.
fn waiting<T>(run: &ClaudeRun, what: &str, secs: u64, mut found: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(found) = found() {
            return found;
        }
        if std::time::Instant::now() >= deadline {
            panic!("timed out waiting for {what}:\n{}", run.env.stdout(&["journal", "--session", &run.session()]));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A Claude session armed to fail over to Codex, its first step committed and its turn over.
struct ClaudeFirst {
    anthropic: mock_api::MockApi,
    responses: mock_responses::MockResponses,
    codex_home: tempfile::TempDir,
    run: ClaudeRun,
    dir: std::path::PathBuf,
}

/// Starts [`ClaudeFirst`] with `opening` as its first prompt. Codex logs in with an API key in the
/// environment, or (`key` false) with the `auth.json` of its home alone.
async fn claude_first(opening: &str, key: bool) -> Option<ClaudeFirst> {
    let claude = client()?;
    let codex = common::codex::client()?;
    let anthropic = mock_api::MockApi::start().await.expect("the stand-in Messages API starts");
    let responses = mock_responses::MockResponses::start().await.expect("the stand-in Responses API starts");
    let codex_home =
        tempfile::Builder::new().prefix("codex-home").tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("CODEX_HOME");
    std::fs::write(codex_home.path().join("auth.json"), "{}").unwrap();
    let home = codex_home.path().display().to_string();
    let failover = format!("{} --no-daemon --dangerously-bypass-approvals-and-sandbox", codex.display());
    anthropic.set_default(&commit("claude step one"));
    let env = [("CODEX_HOME", home.as_str()), ("OPENAI_API_KEY", common::codex::API_KEY)];
    let run = ClaudeRun::start(
        &claude,
        &anthropic.base_url(),
        Options {
            run_args: &["--at-limit", "failover", "--failover-to", &failover, "--auto-resume", "--standing", STANDING],
            args: &["--permission-mode", "acceptEdits", "--allowedTools=Bash"],
            project: &[("work.txt", "")],
            extra_env: if key { &env } else { &env[..1] },
            ..Default::default()
        },
    );
    let dir = run.workdir.clone();
    std::fs::write(codex_home.path().join("config.toml"), common::codex::config_toml(&responses.base_url(), &dir))
        .unwrap();
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(60));
    run.send(opening, true);
    run.wait_state("working", i + 1, Duration::from_secs(15));
    wait_for("Claude's commit", Duration::from_secs(60), || {
        subjects(&dir).contains(&"claude step one".to_string()).then_some(())
    });
    wait_for("Claude's turn ends", Duration::from_secs(30), || {
        run.states().last().is_some_and(|(_, s, _)| s == "idle").then_some(())
    });
    Some(ClaudeFirst { anthropic, responses, codex_home, run, dir })
}

/// Claude's window full for `secs`: every request is refused until then. The reset.
fn refuse_claude(anthropic: &mock_api::MockApi, secs: u64) -> u64 {
    let now = mock_api::epoch(SystemTime::now());
    let reset = now + secs;
    anthropic.set_usage(mock_api::Usage {
        five_hour: 0.97,
        five_hour_reset: reset,
        seven_day: 0.4,
        seven_day_reset: now + 3 * 86400,
    });
    anthropic.set_default("limit");
    reset
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_a_claude_limit_the_work_goes_on_in_codex_and_comes_back_at_the_reset() {
    let Some(ClaudeFirst { anthropic, responses, codex_home: _home, run, dir }) =
        claude_first("work through work.txt (opening-4b1e)", true).await
    else {
        return;
    };

    // Claude's window closes for two minutes: every request is refused until then.
    let reset = refuse_claude(&anthropic, 120);
    responses.set_default(&commit("codex step one"));
    run.send("go on with the next step mock:limit", true);
    let limited =
        waiting(&run, "Claude's limit", 60, || run.events().into_iter().find(|e| e["event"] == "limit_detected"));
    let limited_at: chrono::DateTime<chrono::Utc> = limited["ts"].as_str().unwrap().parse().unwrap();
    anthropic.set_default("fast");

    // Codex takes the work over from the handoff Nightshift built.
    let first_codex = wait_for("Codex's first turn", Duration::from_secs(60), || {
        responses.turns().into_iter().find(|r| r.last_user.contains("Handoff built by Nightshift"))
    });
    let took = SystemTime::from(limited_at);
    let took = first_codex.at.duration_since(took).unwrap_or_default().as_secs_f64();
    eprintln!("Claude's limit to Codex's first request: {took:.1} s");
    assert!(took < 30.0, "Codex took the work over {took} s after the limit");
    for part in [nightshift::automated::MARKER, STANDING, "claude step one"] {
        assert!(
            first_codex.last_user.contains(part),
            "Codex's first prompt carries {part:?}: {}",
            first_codex.last_user
        );
    }
    wait_for("Codex's commit", Duration::from_secs(90), || {
        subjects(&dir).contains(&"codex step one".to_string()).then_some(())
    });
    responses.set_default("fast");
    let switch = run.events().into_iter().find(|e| e["event"] == "agent_switch" && e["action"] == "switched").unwrap();
    assert_eq!((switch["from"].as_str(), switch["to"].as_str()), (Some("claude"), Some("codex")), "{switch}");

    // At the reset Codex is asked for its handoff, and Claude resumes its own conversation from it.
    let back = waiting(&run, "the work back with Claude", 240, || {
        anthropic.messages().into_iter().find(|r| r.status == 200 && r.last_user.contains("Hello from the mock server"))
    });
    let reset_at = SystemTime::UNIX_EPOCH + Duration::from_secs(reset);
    let after = back.at.duration_since(reset_at).map(|d| d.as_secs_f64()).unwrap_or(-1.0);
    eprintln!("Claude's reset to its first request back: {after:.1} s");
    assert!(after >= 0.0, "a request into Claude's refused window");
    assert!(back.body.contains("opening-4b1e"), "Claude's own conversation, resumed");
    assert!(back.last_user.contains(nightshift::automated::MARKER), "{}", back.last_user);
    // Claude is at work again: its next step commits.
    let states = run.states().len();
    run.wait_state("idle", states.saturating_sub(1), Duration::from_secs(60));
    run.send(&format!("the next step mock:{}", commit("claude step two")), true);
    wait_for("Claude's second commit", Duration::from_secs(90), || {
        subjects(&dir).contains(&"claude step two".to_string()).then_some(())
    });

    // The branch holds both agents' commits, in order; nothing went into a refused window; each
    // handoff reached its agent once.
    let log = subjects(&dir);
    let at = |s: &str| log.iter().position(|l| l == s).unwrap_or_else(|| panic!("{s} in {log:?}"));
    assert!(at("claude step one") < at("codex step one") && at("codex step one") < at("claude step two"), "{log:?}");
    let refused: Vec<_> = anthropic.messages().into_iter().filter(|r| r.scenario == "refused").collect();
    assert!(refused.is_empty(), "requests into Claude's refused window: {}", refused.len());
    // Codex's whole thread, as its last request carries it: the handoff in one user message.
    let codex_thread = responses.turns().last().map(|r| r.messages.clone()).unwrap_or_default();
    let handed_to_codex = codex_thread
        .iter()
        .filter(|(role, text)| role == "user" && text.contains("Handoff built by Nightshift"))
        .count();
    assert_eq!(handed_to_codex, 1, "the handoff typed once: {codex_thread:?}");
    // Claude's conversation, as its last request carries it: Codex's handoff given once.
    let last_claude = anthropic.messages().into_iter().rfind(|r| r.status == 200 && r.path.starts_with("/v1/messages"));
    let handed_back = last_claude.map_or(0, |r| r.body.matches("Continue the work from your handoff").count());
    assert_eq!(handed_back, 1, "Codex's handoff given once");
    let switches: Vec<(String, String, String)> = run
        .events()
        .into_iter()
        .filter(|e| e["event"] == "agent_switch")
        .map(|e| {
            (e["action"].as_str().unwrap().into(), e["from"].as_str().unwrap().into(), e["to"].as_str().unwrap().into())
        })
        .collect();
    eprintln!("agent switches: {switches:?}");
    assert!(switches.contains(&("switched".into(), "codex".into(), "claude".into())), "{switches:?}");
    // Each agent's first turn after a move was checked for its handoff, and carried it.
    let checked: Vec<bool> = run
        .events()
        .into_iter()
        .filter(|e| e["event"] == "handoff_checked")
        .map(|e| e["received"].as_bool().unwrap_or(false))
        .collect();
    assert!(!checked.is_empty() && checked.iter().all(|r| *r), "handoffs checked: {checked:?}");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&run.env.stdout(&["sessions", "--json"])).unwrap();
    let row = rows.iter().find(|r| r["id"] == run.session().as_str()).expect("the session listed");
    assert_eq!(row["agent"], "claude", "{row}");

    // The morning tells who did what: Claude, then Codex, then Claude, each with its own commit.
    let digest: serde_json::Value =
        serde_json::from_str(&run.env.stdout(&["digest", "--range", "1h", "--format", "json"])).unwrap();
    let ours = digest["sessions"].as_array().unwrap().iter().find(|s| s["id"] == run.session().as_str()).unwrap();
    let workers: Vec<(String, Vec<String>)> = ours["workers"]
        .as_array()
        .unwrap_or_else(|| panic!("no workers in {ours:#}"))
        .iter()
        .map(|w| {
            let commits = w["commits"].as_array().unwrap().iter().map(|c| c["subject"].as_str().unwrap().into());
            (w["agent"].as_str().unwrap().into(), commits.collect())
        })
        .collect();
    eprintln!("who worked: {workers:?}");
    assert_eq!(
        workers,
        [
            ("claude".to_string(), vec!["claude step one".to_string()]),
            ("codex".to_string(), vec!["codex step one".to_string()]),
            ("claude".to_string(), vec!["claude step two".to_string()]),
        ]
    );
    let took = ours["workers"][1]["took_over"].as_str().unwrap_or_default();
    assert!(took.contains("a handoff Nightshift built") && took.contains("carried it"), "{took}");
    // Its lines in the text, for the record.
    let text = run.env.stdout(&["digest", "--range", "1h"]);
    let lines: Vec<&str> = text.lines().skip_while(|l| !l.contains("who worked:")).take(4).collect();
    eprintln!("{}", lines.join("\n"));
}

/// The other agent's login is gone by the night's limit (it was there at the start): the work
/// stays with Claude, which waits for its reset; the journal says why, and nothing is sent to
/// Codex.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_agent_logged_out_by_the_limit_leaves_the_work_with_claude_until_the_reset() {
    // Logged in at the start (its home's auth.json): the failover is armed.
    let Some(ClaudeFirst { anthropic, responses, codex_home, run, .. }) =
        claude_first("work through work.txt (opening-9d2c)", false).await
    else {
        return;
    };

    // Codex's login goes; then Claude's window closes for an hour.
    std::fs::remove_file(codex_home.path().join("auth.json")).unwrap();
    refuse_claude(&anthropic, 3600);
    run.send("go on with the next step mock:limit", true);
    let held = waiting(&run, "the move held", 60, || {
        run.events().into_iter().find(|e| e["event"] == "agent_switch" && e["action"] == "held")
    });
    eprintln!("held: {}", held["reason"]);
    let reason = held["reason"].as_str().unwrap();
    assert!(reason.contains("codex is logged out") && reason.contains("codex login"), "{held}");
    assert!(reason.contains("the work stays with claude until its reset"), "{held}");
    // Claude waits where it is for its reset (the resume at it is the usual one: the machine's
    // specs follow it); Codex was never asked anything.
    run.wait_state("limit_paused", 0, Duration::from_secs(20));
    let journal = run.env.stdout(&["journal", "--session", &run.session()]);
    assert!(responses.turns().is_empty(), "nothing went to the logged-out Codex");
    assert!(!run.events().iter().any(|e| e["event"] == "agent_switch" && e["action"] != "held"), "{journal}");
    assert!(!run.events().iter().any(|e| e["event"] == "handoff_built"), "no handoff for a move that did not go");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&run.env.stdout(&["sessions", "--json"])).unwrap();
    let row = rows.iter().find(|r| r["id"] == run.session().as_str()).expect("the session listed");
    assert_eq!(row["agent"], "claude", "{row}");
}

/// The other way round: a Codex session whose window is refused goes on in Claude from the handoff
/// Nightshift built, and comes back to Codex's own thread once Codex's window has reset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_a_codex_limit_the_work_goes_on_in_claude_and_comes_back_to_codexs_thread() {
    let Some(claude) = client() else { return };
    let Some(codex) = common::codex::client() else { return };
    let anthropic = mock_api::MockApi::start().await.expect("the stand-in Messages API starts");
    let responses = mock_responses::MockResponses::start().await.expect("the stand-in Responses API starts");
    let failover = format!("{} --permission-mode acceptEdits --allowedTools=Bash", claude.display());
    let anthropic_url = anthropic.base_url();
    responses.set_default(&commit("codex step one"));
    let run = common::codex::CodexRun::start(
        &codex,
        &responses.base_url(),
        common::codex::Options {
            run_args: &["--at-limit", "failover", "--failover-to", &failover, "--auto-resume", "--standing", STANDING],
            args: &["--dangerously-bypass-approvals-and-sandbox"],
            project: &[("work.txt", "")],
            claude_at: Some(&anthropic_url),
            ..Default::default()
        },
    );
    let dir = run.workdir.clone();
    run.wait_state("idle", 0, Duration::from_secs(60));
    // Codex's turn can end before its screen shows it working: its commit is the sign.
    run.send("work through work.txt (opening-c0de)", true);
    wait_for("Codex's commit", Duration::from_secs(60), || {
        subjects(&dir).contains(&"codex step one".to_string()).then_some(())
    });
    // The turn's end, as Codex's notify says it: its thread is then the session's conversation.
    let thread = wait_for("Codex's thread", Duration::from_secs(30), || run.conversations().into_iter().next());

    // Codex's window closes for 45 s (Claude takes over within one, and commits in a few).
    let reset = mock_responses::epoch(SystemTime::now()) + 45;
    responses.set_reset(reset);
    responses.set_default("fast");
    anthropic.set_default(&commit("claude step one"));
    run.send("go on with the next step mock:limit", true);
    let limited = wait_for("Codex's limit", Duration::from_secs(60), || {
        run.events().into_iter().find(|e| e["event"] == "limit_detected")
    });
    let limited_at: chrono::DateTime<chrono::Utc> = limited["ts"].as_str().unwrap().parse().unwrap();
    let first_claude = wait_for("Claude's first turn", Duration::from_secs(60), || {
        anthropic.messages().into_iter().find(|r| r.status == 200 && r.body.contains("Handoff built by Nightshift"))
    });
    let took = first_claude.at.duration_since(SystemTime::from(limited_at)).unwrap_or_default().as_secs_f64();
    eprintln!("Codex's limit to Claude's first request: {took:.1} s");
    assert!(took < 30.0, "Claude took the work over {took} s after the limit");
    for part in [nightshift::automated::MARKER, STANDING, "codex step one"] {
        assert!(first_claude.body.contains(part), "Claude's first request carries {part:?}");
    }
    wait_for("Claude's commit", Duration::from_secs(90), || {
        subjects(&dir).contains(&"claude step one".to_string()).then_some(())
    });
    anthropic.set_default("fast");

    // At Codex's reset Claude hands off and Codex resumes its own thread from it.
    let reset_at = SystemTime::UNIX_EPOCH + Duration::from_secs(reset);
    let back = wait_for("the work back with Codex", Duration::from_secs(240), || {
        responses.turns().into_iter().find(|r| r.status == 200 && r.at >= reset_at)
    });
    let after = back.at.duration_since(reset_at).map(|d| d.as_secs_f64()).unwrap_or(-1.0);
    eprintln!("Codex's reset to its first request back: {after:.1} s");
    let starts: Vec<String> = run
        .events()
        .into_iter()
        .filter(|e| e["state"] == "starting" || e["event"] == "conversation" || e["event"] == "agent_switch")
        .map(|e| e.to_string())
        .collect();
    assert_eq!(back.thread.as_deref(), Some(thread.as_str()), "Codex's own thread, resumed: {starts:#?}");
    assert!(back.last_user.contains(nightshift::automated::MARKER), "{}", back.last_user);
    let refused_late: Vec<_> = responses.turns().into_iter().filter(|r| r.status == 429).collect();
    assert_eq!(refused_late.len(), 1, "only the turn that met the limit was refused");
    let switches: Vec<(String, String, String)> = run
        .events()
        .into_iter()
        .filter(|e| e["event"] == "agent_switch" && e["action"] == "switched")
        .map(|e| {
            (e["action"].as_str().unwrap().into(), e["from"].as_str().unwrap().into(), e["to"].as_str().unwrap().into())
        })
        .collect();
    assert_eq!(
        switches,
        [
            ("switched".to_string(), "codex".to_string(), "claude".to_string()),
            ("switched".to_string(), "claude".to_string(), "codex".to_string())
        ]
    );
    let log = subjects(&dir);
    let at = |s: &str| log.iter().position(|l| l == s).unwrap_or_else(|| panic!("{s} in {log:?}"));
    assert!(at("codex step one") < at("claude step one"), "{log:?}");
    let rows: Vec<serde_json::Value> = serde_json::from_slice(
        &run.nightshift(&["sessions", "--json"]).stdout(Stdio::piped()).output().unwrap().stdout,
    )
    .unwrap();
    let row = rows.iter().find(|r| r["id"] == run.session().as_str()).expect("the session listed");
    assert_eq!(row["agent"], "codex", "{row}");
}
