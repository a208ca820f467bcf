//! `nightshift plan` over a real journal: an armed session whose 5-hour window burns toward its
//! reset, as text and as JSON; and a journal with no readings, which says so.

use crate::common;

use chrono::{Duration, DurationRound, Utc};
use common::Env;
use nightshift::store::{NewSession, Store};
use nightshift::usage::Sample;

#[test]
fn the_plan_reads_the_journals_burn_and_says_when_the_window_fills() {
    let env = Env::new();
    std::fs::create_dir_all(env.state_dir()).unwrap();
    let mut store = Store::open(&env.state_dir().join("journal.sqlite3")).unwrap();
    let now = Utc::now().duration_trunc(Duration::seconds(1)).unwrap();
    let command = vec!["claude".to_string()];
    store
        .create_session(&NewSession {
            id: "p0000001",
            kind: nightshift::store::SessionKind::Terminal,
            command: &command,
            cwd: "/tmp",
            agent: "claude",
            preset: Some("overnight"),
            created: now - Duration::hours(2),
            owner_pid: std::process::id(),
            control_socket: None,
        })
        .unwrap();
    // 20 %/h over the last hour: 60 % now, full in 2 h, an hour before the window resets.
    let reset = now + Duration::hours(3);
    for (ago, pct, cost) in [(60, 40.0, 1.0), (30, 50.0, 1.25), (0, 60.0, 1.5)] {
        let sample = Sample {
            five_hour_pct: Some(pct),
            five_hour_resets_at: Some(reset),
            seven_day_pct: Some(30.0),
            seven_day_resets_at: Some(now + Duration::days(3)),
            cost_usd: Some(cost),
            ..Sample::default()
        };
        store.record_usage("p0000001", now - Duration::minutes(ago), &sample).unwrap();
    }
    drop(store);

    // The night ends 12 hours from now, whatever the time of day the test runs at.
    let until = (chrono::Local::now() + Duration::hours(12)).format("%H:%M").to_string();
    let out = env.output(&["plan", "--json", "--until", &until]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["armed"], 1);
    assert_eq!(plan["samples"], 3);
    assert_eq!(plan["five_hour"]["burn_pct_per_hour"], 20.0);
    let full = chrono::DateTime::parse_from_rfc3339(plan["five_hour"]["full_at"].as_str().unwrap()).unwrap();
    let expected = plan["now"].as_str().unwrap().parse::<chrono::DateTime<Utc>>().unwrap() + Duration::hours(2);
    assert!((full.with_timezone(&Utc) - expected).num_seconds().abs() <= 1, "{full} vs {expected}");
    let wait = &plan["waits"][0];
    assert_eq!(wait["window"], "5h");
    assert_eq!(wait["until"].as_str().unwrap().parse::<chrono::DateTime<Utc>>().unwrap(), reset);
    assert!((plan["cost_per_hour"].as_f64().unwrap() - 0.5).abs() < 1e-9, "{plan}");

    let text = env.stdout(&["plan", "--until", &until]);
    assert!(text.contains("5-hour window: 60 % used, burning 20.0 %/h → full at"), "{text}");
    assert!(text.contains("Limit waits: "), "{text}");
    assert!(plan["codex"].is_null(), "no Codex plan without Codex sessions: {plan}");

    // A Codex session beside it: its own plan, from its own readings, apart from Claude's.
    let mut store = Store::open(&env.state_dir().join("journal.sqlite3")).unwrap();
    let codex = vec!["codex".to_string()];
    store
        .create_session(&NewSession {
            id: "c0000001",
            kind: nightshift::store::SessionKind::Terminal,
            command: &codex,
            cwd: "/tmp",
            agent: "codex",
            preset: Some("overnight"),
            created: now - Duration::hours(2),
            owner_pid: std::process::id(),
            control_socket: None,
        })
        .unwrap();
    for (ago, pct) in [(40, 10.0), (0, 20.0)] {
        let sample = Sample {
            five_hour_pct: Some(pct),
            five_hour_resets_at: Some(now + Duration::hours(4)),
            seven_day_pct: Some(5.0),
            seven_day_resets_at: Some(now + Duration::days(5)),
            ..Sample::default()
        };
        store.record_usage("c0000001", now - Duration::minutes(ago), &sample).unwrap();
    }
    drop(store);
    let out = env.output(&["plan", "--json", "--until", &until]);
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((plan["agent"].as_str(), plan["armed"].as_u64()), (Some("claude"), Some(1)), "{plan}");
    assert_eq!(plan["five_hour"]["used_pct"], 60.0, "Claude's windows are Claude's alone");
    assert_eq!(plan["codex"]["agent"], "codex");
    assert_eq!((plan["codex"]["armed"].as_u64(), plan["codex"]["samples"].as_u64()), (Some(1), Some(2)));
    assert_eq!(plan["codex"]["five_hour"]["burn_pct_per_hour"], 15.0, "{plan}");
    let text = env.stdout(&["plan", "--until", &until]);
    assert!(text.contains("\nCodex, its own plan:\n  5-hour window: 20 % used, burning 15.0 %/h"), "{text}");

    let empty = Env::new();
    let text = empty.stdout(&["plan"]);
    assert!(text.contains("No usage readings in the last 3 hours"), "{text}");
    assert!(text.contains("no session is armed"), "{text}");
    let bad = empty.output(&["plan", "--until", "8am"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("write it as HH:MM, e.g. 08:00"));
}

#[test]
fn the_plan_names_a_limit_wait_in_progress_the_sleep_allowed_and_the_wake_alarm() {
    use nightshift::event::{Event, EventKind, SessionId, SessionState, SleepAction};
    let env = Env::new();
    std::fs::create_dir_all(env.state_dir()).unwrap();
    let mut store = Store::open(&env.state_dir().join("journal.sqlite3")).unwrap();
    let now = Utc::now().duration_trunc(Duration::minutes(1)).unwrap();
    let command = vec!["claude".to_string()];
    store
        .create_session(&NewSession {
            id: "w0000001",
            kind: nightshift::store::SessionKind::Terminal,
            command: &command,
            cwd: "/tmp",
            agent: "claude",
            preset: Some("overnight"),
            created: now - Duration::hours(1),
            owner_pid: std::process::id(),
            control_socket: None,
        })
        .unwrap();
    // Paused a minute ago on a limit that resets in 3 hours; the resume a minute after the reset;
    // Nightshift let the machine sleep, its wake alarm 2 minutes before the resume.
    let (reset, due) = (now + Duration::hours(3), now + Duration::hours(3) + Duration::minutes(1));
    let wake = due - Duration::minutes(2);
    let id = SessionId::from("w0000001".to_string());
    for (ts, kind) in [
        (now - Duration::minutes(30), EventKind::state(SessionState::Working, "the agent is in a turn")),
        (
            now - Duration::minutes(1),
            EventKind::LimitDetected {
                resets_at: Some(reset),
                source: nightshift::limits::Source::Text,
                kind: nightshift::limits::LimitKind::FiveHour,
                line: "You've hit your session limit".into(),
            },
        ),
        (now - Duration::minutes(1), EventKind::state(SessionState::LimitPaused, "usage limit")),
        (
            now - Duration::minutes(1),
            EventKind::ResumeArmed {
                resets_at: Some(reset),
                due,
                settings: nightshift::limits::resume::Settings::default(),
                guard: nightshift::limits::WindowGuard::default(),
            },
        ),
        (
            now,
            EventKind::Sleep {
                action: SleepAction::Allowed,
                at: wake,
                due: Some(due),
                reason: "every wait is long".into(),
            },
        ),
    ] {
        store.record(&Event { ts, session: id.clone(), kind }).unwrap();
    }
    drop(store);

    let local = |t: chrono::DateTime<Utc>| t.with_timezone(&chrono::Local).format("%H:%M").to_string();
    let until = (chrono::Local::now() + Duration::hours(12)).format("%H:%M").to_string();
    let text = env.stdout(&["plan", "--until", &until]);
    assert!(!text.contains("Limit waits: none expected"), "{text}");
    let paused = local(now - Duration::minutes(1));
    assert!(
        text.contains(&format!("Limit waits: {paused}–{} (in progress, then a resume) → 1 resume(s)", local(reset))),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "w0000001 (claude): paused on the 5-hour limit since {paused}, resets {} → a resume at {}",
            local(reset),
            local(due)
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "The machine: allowed to sleep since {}; its wake alarm is set for {}, for what is due at {}",
            local(now),
            local(wake),
            local(due)
        )),
        "{text}"
    );

    let out = env.output(&["plan", "--json", "--until", &until]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ts = |v: &serde_json::Value| v.as_str().unwrap().parse::<chrono::DateTime<Utc>>().unwrap();
    let wait = &plan["waiting"][0];
    assert_eq!(
        (wait["session"].as_str(), wait["on"].as_str(), wait["window"].as_str()),
        (Some("w0000001"), Some("limit"), Some("5h")),
        "{plan}"
    );
    assert_eq!((ts(&wait["resets_at"]), ts(&wait["until"])), (reset, due));
    assert_eq!((ts(&plan["asleep"]["since"]), ts(&plan["asleep"]["wakes_at"])), (now, wake), "{plan}");
    assert_eq!(plan["waits"][0]["in_progress"], true, "{plan}");
}

#[test]
fn the_plan_run_in_a_project_prints_tonights_fence_with_why() {
    let env = Env::new();
    let project = env.path("project");
    std::fs::create_dir_all(&project).unwrap();
    common::git_in(&project, &["init", "-q"], false);
    common::git_in(&project, &["remote", "add", "origin", "https://me:s3cret@git.corp.example/team/app.git"], false);
    common::git_in(&project, &["remote", "add", "old", "git://legacy.example/app.git"], false);
    std::fs::write(project.join("package.json"), "{}").unwrap();
    std::fs::write(project.join(".npmrc"), "registry=https://npm.corp.example/\n").unwrap();
    let out = env.cmd(&["plan"]).current_dir(&project).env("HOME", env.path("home")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.lines().find(|l| l.starts_with("Tonight's fence in")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("(project)"), "{line}");
    assert!(line.contains("git.corp.example (the remote origin)"), "{line}");
    assert!(line.contains("npm.corp.example (npm's registry, from .npmrc)"), "{line}");
    assert!(!text.contains("s3cret"), "no credential is shown: {text}");
    assert!(text.contains("! the remote old is reached over git://"), "{text}");
    // Asking npm leaves nothing in the user's home (npm keeps a debug log of every run, and the
    // day it last looked for an update, unless told not to).
    let home = env.path("home");
    let left: Vec<_> =
        std::fs::read_dir(&home).map(|d| d.flatten().map(|e| e.file_name()).collect()).unwrap_or_default();
    assert!(left.is_empty(), "asking npm left {left:?} in {}", home.display());
    // Where the sandbox is off, so is the fence.
    std::fs::create_dir_all(env.path("config")).unwrap();
    std::fs::write(env.path("config/config.toml"), "[sandbox]\nenabled = false\n").unwrap();
    let text = String::from_utf8(env.cmd(&["plan"]).current_dir(&project).output().unwrap().stdout).unwrap();
    assert!(text.contains(": none, the sandbox is off ([sandbox] enabled = false)"), "{text}");
}
