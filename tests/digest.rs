//! The away digest and the morning summary, on a journal seeded with a night of events and real git
//! repositories made in temp directories.

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, FixedOffset, NaiveTime, TimeZone, Utc};
use nightshift::clock::FakeClock;
use nightshift::digest::{self, Format, Morning, MorningOutcome, Section};
use nightshift::store::{NewSession, Store};
use nightshift::usage::Sample;
use nightshift::{Event, EventKind, SessionId, SessionState};

fn t(h: u32, m: u32) -> DateTime<Utc> {
    // The night of 30 Nov → 1 Dec 2026: hours ≥ 12 are on the 30th.
    let day = if h >= 12 { 30 } else { 1 };
    let month = if h >= 12 { 11 } else { 12 };
    Utc.with_ymd_and_hms(2026, month, day, h, m, 0).unwrap()
}

fn git(dir: &Path, args: &[&str], when: Option<DateTime<Utc>>) {
    let mut cmd = Command::new("git");
    cmd.args(["-c", "user.name=Night", "-c", "user.email=night@example.invalid"]).args(args).current_dir(dir);
    if let Some(when) = when {
        cmd.env("GIT_AUTHOR_DATE", when.to_rfc3339()).env("GIT_COMMITTER_DATE", when.to_rfc3339());
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn commit(dir: &Path, file: &str, text: &str, subject: &str, when: DateTime<Utc>) {
    std::fs::write(dir.join(file), text).unwrap();
    git(dir, &["add", "."], None);
    git(dir, &["commit", "-qm", subject], Some(when));
}

struct Night {
    _tmp: tempfile::TempDir,
    store: Store,
}

fn session(store: &mut Store, id: &str, cwd: &Path, created: DateTime<Utc>, owner_pid: u32) {
    let command = vec!["claude".to_string()];
    store
        .create_session(&NewSession {
            id,
            kind: nightshift::store::SessionKind::Terminal,
            command: &command,
            cwd: cwd.to_str().unwrap(),
            agent: "claude",
            preset: Some("overnight"),
            created,
            owner_pid,
            control_socket: None,
        })
        .unwrap();
}

fn ev(store: &mut Store, id: &str, at: DateTime<Utc>, kind: EventKind) {
    store.record(&Event { ts: at, session: SessionId::from(id.to_string()), kind }).unwrap();
}

fn state(store: &mut Store, id: &str, at: DateTime<Utc>, s: SessionState) {
    ev(store, id, at, EventKind::state(s, "seeded"));
}

/// A pid that no process has.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

/// The night: five sessions, three repositories.
fn night() -> Night {
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open(&tmp.path().join("journal.sqlite3")).unwrap();
    let me = std::process::id();
    let repo_done = tmp.path().join("done-repo");
    let repo_idle = tmp.path().join("idle-repo");
    let plain = tmp.path().join("not-a-repo");
    for d in [&repo_done, &repo_idle, &plain] {
        std::fs::create_dir_all(d).unwrap();
    }
    git(&repo_done, &["init", "-q"], None);
    commit(&repo_done, "a.txt", "before\n", "Before the night", t(20, 0));
    commit(&repo_done, "a.txt", "before\none\n", "Add the parser", t(23, 10));
    commit(&repo_done, "b.txt", "b\nb\nb\n", "Add the tests", t(2, 30));
    commit(&repo_done, "a.txt", "one\n", "Tidy up", t(5, 45));
    git(&repo_idle, &["init", "-q"], None);
    commit(&repo_idle, "x.txt", "x\n", "Start", t(21, 0));
    std::fs::write(repo_idle.join("x.txt"), "x\nchanged\n").unwrap();
    std::fs::write(repo_idle.join("new.txt"), "new\n").unwrap();

    // Done: worked 22:00–04:00 with two respawn cycles, then finished cleanly.
    session(&mut store, "d0000001", &repo_done, t(22, 0), me);
    state(&mut store, "d0000001", t(22, 0), SessionState::Running);
    state(&mut store, "d0000001", t(22, 1), SessionState::Working);
    for (h, cycle) in [(0, 1), (2, 2)] {
        state(&mut store, "d0000001", t(h, 0), SessionState::Idle);
        ev(
            &mut store,
            "d0000001",
            t(h, 10),
            EventKind::Respawn {
                action: nightshift::respawn::Action::CycleStarted,
                cycle: Some(cycle),
                reason: None,
                cost_usd: None,
            },
        );
        state(&mut store, "d0000001", t(h, 10), SessionState::Respawning);
        state(&mut store, "d0000001", t(h, 11), SessionState::Working);
    }
    ev(
        &mut store,
        "d0000001",
        t(4, 0),
        EventKind::State {
            state: SessionState::Exited,
            reason: "process exited with code 0".into(),
            pid: Some(1),
            exit_code: Some(0),
            signal: None,
            error: None,
            dialog: None,
            last_screen: None,
        },
    );
    ev(
        &mut store,
        "d0000001",
        t(3, 20),
        EventKind::GuardDenied {
            rule: "force_push".into(),
            what: "a force push to the default branch".into(),
            command: "git push --force origin main".into(),
        },
    );
    let sample = |pct: f64, cost: f64| Sample {
        five_hour_pct: Some(pct),
        seven_day_pct: Some(20.0),
        cost_usd: Some(cost),
        ..Default::default()
    };
    store.record_usage("d0000001", t(23, 0), &sample(10.0, 0.5)).unwrap();
    store.record_usage("d0000001", t(3, 0), &sample(62.0, 1.2)).unwrap();

    // Needs you: asked a question at 03:00 and still waits.
    session(&mut store, "q0000002", &plain, t(22, 30), me);
    state(&mut store, "q0000002", t(22, 30), SessionState::Running);
    state(&mut store, "q0000002", t(22, 31), SessionState::Working);
    ev(
        &mut store,
        "q0000002",
        t(3, 0),
        EventKind::State {
            state: SessionState::WaitingInput,
            reason: "question".into(),
            pid: None,
            exit_code: None,
            signal: None,
            error: None,
            dialog: Some(nightshift::agent::Dialog::new(
                nightshift::agent::DialogKind::Question,
                Some("Which database?".into()),
            )),
            last_screen: None,
        },
    );

    // Idle, with work only in its working tree.
    session(&mut store, "i0000003", &repo_idle, t(23, 0), me);
    state(&mut store, "i0000003", t(23, 0), SessionState::Running);
    state(&mut store, "i0000003", t(23, 1), SessionState::Working);
    state(&mut store, "i0000003", t(1, 1), SessionState::Idle);

    // Still running.
    session(&mut store, "r0000004", &plain, t(6, 0), me);
    state(&mut store, "r0000004", t(6, 0), SessionState::Running);
    state(&mut store, "r0000004", t(6, 1), SessionState::Working);

    // Its Nightshift process was killed mid-run.
    session(&mut store, "k0000005", &plain, t(22, 0), dead_pid());
    state(&mut store, "k0000005", t(22, 0), SessionState::Running);
    state(&mut store, "k0000005", t(22, 1), SessionState::Working);

    // Crashed, and a breaker tripped.
    session(&mut store, "c0000006", &plain, t(1, 0), me);
    state(&mut store, "c0000006", t(1, 0), SessionState::Running);
    ev(
        &mut store,
        "c0000006",
        t(1, 0),
        EventKind::Breaker {
            breaker: nightshift::breaker::BreakerKind::CrashLoop,
            state: nightshift::breaker::BreakerState::Open,
            reason: "5 non-zero exits".into(),
        },
    );
    ev(
        &mut store,
        "c0000006",
        t(1, 1),
        EventKind::State {
            state: SessionState::Exited,
            reason: "process exited with code 1".into(),
            pid: Some(2),
            exit_code: Some(1),
            signal: None,
            error: None,
            dialog: None,
            last_screen: Some(vec!["Error: boom".into()]),
        },
    );

    // A loop: two tasks done, one iteration retried after a blip, then every task done at 03:30.
    store
        .create_session(&NewSession {
            id: "l0000008",
            kind: nightshift::store::SessionKind::Loop,
            command: &["claude".to_string(), "-p".to_string(), "<task>".to_string()],
            cwd: plain.to_str().unwrap(),
            agent: "claude",
            preset: None,
            created: t(1, 0),
            owner_pid: me,
            control_socket: None,
        })
        .unwrap();
    state(&mut store, "l0000008", t(1, 0), SessionState::Working);
    let ended =
        |iteration: u32, attempt: u32, task: &str, outcome: &str, cost: Option<f64>| EventKind::IterationEnded {
            iteration,
            attempt,
            project: plain.display().to_string(),
            task: Some(task.into()),
            probe: false,
            outcome: outcome.into(),
            detail: None,
            cost_usd: cost,
            tokens: None,
            duration_ms: None,
            conversation: None,
            progress: true,
        };
    ev(&mut store, "l0000008", t(1, 30), ended(1, 1, "write the parser", "done", Some(0.42)));
    ev(&mut store, "l0000008", t(1, 30), EventKind::TaskDone { project: "p".into(), task: "write the parser".into() });
    ev(&mut store, "l0000008", t(2, 0), ended(2, 1, "test it", "transient", None));
    ev(&mut store, "l0000008", t(3, 0), ended(2, 2, "test it", "done", Some(0.3)));
    ev(&mut store, "l0000008", t(3, 0), EventKind::TaskDone { project: "p".into(), task: "test it".into() });
    ev(
        &mut store,
        "l0000008",
        t(3, 30),
        EventKind::State {
            state: SessionState::Exited,
            reason: "every task is done".into(),
            pid: None,
            exit_code: Some(0),
            signal: None,
            error: None,
            dialog: None,
            last_screen: None,
        },
    );

    // Before the range entirely: not in the digest.
    session(&mut store, "o0000007", &plain, t(13, 0), me);
    state(&mut store, "o0000007", t(13, 0), SessionState::Running);
    ev(
        &mut store,
        "o0000007",
        t(14, 0),
        EventKind::State {
            state: SessionState::Exited,
            reason: "process exited with code 0".into(),
            pid: Some(3),
            exit_code: Some(0),
            signal: None,
            error: None,
            dialog: None,
            last_screen: None,
        },
    );
    Night { _tmp: tmp, store }
}

#[test]
fn what_needs_you_is_typed_and_a_dismissed_need_is_left_out() {
    use digest::{About, Dismissed, Need};
    let mut night = night();
    let d = digest::build(&night.store, t(22, 0), t(8, 0)).unwrap();
    let needs = |d: &digest::Digest, id: &str| d.sessions.iter().find(|s| s.id == id).unwrap().needs.clone();
    let kinds = |needs: &[Need]| needs.iter().map(|n| Need::kind_of(&n.about)).collect::<Vec<_>>();
    let q = needs(&d, "q0000002");
    assert_eq!(kinds(&q), ["question"]);
    assert_eq!(kinds(&needs(&d, "k0000005")), ["lost"]);
    assert!(needs(&d, "c0000006").iter().any(|n| matches!(n.about, About::Crashed { .. })));
    for s in &d.sessions {
        let texts: Vec<&str> = s.needs.iter().map(|n| n.text.as_str()).collect();
        assert_eq!(texts, s.needs_you, "the typed needs are the texts, in their order");
    }

    Dismissed::add(&mut night.store, "q0000002", &q[0].key).unwrap();
    let d = digest::build(&night.store, t(22, 0), t(8, 0)).unwrap();
    let after = d.sessions.iter().find(|s| s.id == "q0000002").unwrap();
    assert!(after.needs.is_empty() && after.needs_you.is_empty(), "{:?}", after.needs);
    assert_ne!(after.section, Section::NeedsYou);
    assert_eq!(d.totals.needs_you, 2);
    assert!(!digest::render(&d, Format::Text).contains("needs you: waiting on a question"));
    assert_eq!(kinds(&needs(&d, "k0000005")), ["lost"], "another session's need stays");
}

#[test]
fn every_section_and_figure_of_a_night() {
    let night = night();
    let d = digest::build(&night.store, t(22, 0), t(8, 0)).unwrap();
    let ids = |s: Section| d.section(s).map(|x| x.id.clone()).collect::<Vec<_>>();
    let mut needs = ids(Section::NeedsYou);
    needs.sort();
    assert_eq!(needs, ["c0000006", "k0000005", "q0000002"]);
    let mut done = ids(Section::Done);
    done.sort();
    assert_eq!(done, ["d0000001", "l0000008"]);
    assert_eq!(ids(Section::StillRunning), ["r0000004"]);
    assert_eq!(ids(Section::Idle), ["i0000003"]);
    assert!(!d.sessions.iter().any(|s| s.id == "o0000007"), "a session over before the range is left out");

    let get = |id: &str| d.sessions.iter().find(|s| s.id == id).unwrap();
    let done = get("d0000001");
    // Working 22:01–00:00, 00:10–02:00, 02:10–04:00 (respawning counts as working); idle 00:00–00:10, 02:00–02:10.
    assert_eq!(done.working_secs, (119 + 110 + 110) * 60);
    assert_eq!(done.idle_secs, 20 * 60);
    assert_eq!(done.respawn_cycles, 2);
    assert_eq!(done.exits, ["code 0"]);
    assert_eq!(done.guard_denials.len(), 1);
    assert_eq!(
        (done.guard_denials[0].at, done.guard_denials[0].command.as_str()),
        (t(3, 20), "git push --force origin main")
    );
    let git = done.git.as_ref().unwrap();
    let subjects: Vec<&str> = git.commits.iter().map(|c| c.subject.as_str()).collect();
    assert_eq!(subjects, ["Tidy up", "Add the tests", "Add the parser"], "only the night's commits, newest first");
    assert_eq!((git.committed.files, git.committed.insertions, git.committed.deletions), (2, 4, 1));
    assert!(!git.at_risk);
    let usage = done.usage.as_ref().unwrap();
    assert_eq!((usage.five_hour_from, usage.five_hour_to), (Some(10.0), Some(62.0)));
    // Begun in the range: its first reading's spend ($0.50) is the night's too.
    assert!((usage.cost_usd - 1.2).abs() < 1e-9, "{}", usage.cost_usd);

    let idle = get("i0000003");
    let git = idle.git.as_ref().unwrap();
    assert!(git.commits.is_empty());
    assert!(git.at_risk, "uncommitted work is flagged");
    assert_eq!((git.uncommitted.files, git.untracked), (1, 1));
    assert_eq!(idle.working_secs, 120 * 60);
    assert_eq!(idle.idle_secs, (7 * 60 - 1) * 60, "idle from 01:01 to the end of the range");

    let q = get("q0000002");
    assert_eq!(q.needs_you, ["waiting on a question: Which database?"]);
    assert_eq!(q.paused_secs, 5 * 3600);
    assert!(get("k0000005").needs_you[0].contains("killed"), "a run whose process was killed needs attention");
    assert_eq!(get("k0000005").state, "lost");
    assert!(get("c0000006").needs_you.iter().any(|n| n.contains("exited with code 1")));
    assert_eq!(get("c0000006").breaker_trips, 1);
    assert!(get("r0000004").git.is_none(), "no repository, no git figures");

    let l = get("l0000008");
    assert_eq!(l.iterations.len(), 3);
    assert_eq!(l.tasks_done, ["write the parser", "test it"]);
    assert_eq!(l.iterations[1].cost_usd, None, "the blip's spend was not known");

    assert_eq!(d.totals.sessions, 7);
    assert_eq!(d.totals.commits, 3);
    assert_eq!(d.totals.needs_you, 3);
    assert_eq!(d.headline(), "7 sessions · 3 commits · 3 needs you");
    assert!((d.totals.cost_usd - 1.92).abs() < 1e-9, "the loop's spend counts: {}", d.totals.cost_usd);

    let text = digest::render(&d, Format::Text);
    for needle in [
        "NEEDS YOU",
        "DONE",
        "STILL RUNNING",
        "IDLE",
        "Add the parser",
        "UNCOMMITTED changes at risk",
        "Which database?",
        "$1.20",
        "2 respawn cycle(s)",
        "guard: refused a force push to the default branch at ",
        ": git push --force origin main",
        "loop: 3 iteration(s), 2 task(s) done, $0.72 and some not measured",
        "  #2 (try 2) done $0.30: test it",
    ] {
        assert!(text.contains(needle), "text lacks {needle:?}:\n{text}");
    }
    let md = digest::render(&d, Format::Markdown);
    for needle in
        ["# Nightshift digest", "## Needs you", "## Done", "- **d0000001**", "  - git: 3 commit(s), 2 file(s) +4 −1"]
    {
        assert!(md.contains(needle), "markdown lacks {needle:?}:\n{md}");
    }
    let json: serde_json::Value = serde_json::from_str(&digest::render(&d, Format::Json)).unwrap();
    assert_eq!(json["totals"]["commits"], 3);
    // The night's counts: a commit once, whichever sessions share its repository.
    for (name, n) in [("commits", 3), ("respawn_cycles", 2), ("guard_denials", 1), ("iterations", 3), ("tasks_done", 2)]
    {
        assert_eq!(json["counts"][name], n, "counts.{name}");
    }
    assert_eq!(
        json["sessions"].as_array().unwrap().iter().find(|s| s["id"] == "d0000001").unwrap()["counts"]["commits"],
        3
    );
    assert_eq!(json["sessions"].as_array().unwrap().len(), 7);
    let back: digest::Digest = serde_json::from_value(json).unwrap();
    assert_eq!(back.headline(), d.headline());
}

/// Time runs in virtual steps of a minute, wall clock and tokio together.
async fn advance(clock: &FakeClock, minutes: i64) {
    for _ in 0..minutes {
        clock.advance(Duration::minutes(1));
        tokio::time::advance(std::time::Duration::from_secs(60)).await;
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn the_morning_summary_is_made_once_each_morning_and_at_the_next_start_when_missed() {
    let night = night();
    let path = night._tmp.path().join("journal.sqlite3");
    let tz = FixedOffset::east_opt(0).unwrap();
    let clock = FakeClock::new(t(7, 0));
    type Made = Vec<(DateTime<Utc>, String)>;
    let made: Arc<Mutex<Made>> = Arc::default();
    let morning = Morning { at: NaiveTime::from_hms_opt(8, 0, 0).unwrap() };

    let log = Arc::clone(&made);
    let c = clock.clone();
    let task = tokio::spawn(digest::run_mornings(
        Store::open(&path).unwrap(),
        Arc::new(clock.clone()),
        morning,
        tz,
        move |headline, _| {
            log.lock().unwrap().push((nightshift::clock::Clock::now(&c), headline.to_string()));
        },
    ));
    tokio::task::yield_now().await;
    // The first check at 07:00 finds yesterday's 08:00 due (never made): that is the missed one.
    let first: Vec<_> = made.lock().unwrap().clone();
    assert_eq!(first.len(), 1);
    advance(&clock, 59).await;
    assert_eq!(made.lock().unwrap().len(), 1, "nothing before 08:00");
    advance(&clock, 2).await;
    assert_eq!(made.lock().unwrap().len(), 1, "nothing ran since the last summary: stored, not announced");
    // A session runs during the day; the next morning has something to say, once.
    let mut store = Store::open(&path).unwrap();
    let me = std::process::id();
    session(&mut store, "n0000008", night._tmp.path(), t(8, 30) + Duration::hours(1), me);
    state(&mut store, "n0000008", t(9, 30), SessionState::Running);
    advance(&clock, 24 * 60).await;
    let all = made.lock().unwrap().clone();
    assert_eq!(all.len(), 2, "{all:?}");
    assert!(
        all[1].0 >= t(8, 0) + Duration::days(1) && all[1].0 < t(8, 2) + Duration::days(1),
        "made at 08:00: {all:?}"
    );
    assert!(all[1].1.contains(" sessions · "), "{all:?}");
    advance(&clock, 120).await;
    assert_eq!(made.lock().unwrap().len(), 2, "once per morning");
    task.abort();

    // The machine sleeps through the next morning; at the next start, the summary comes at once.
    state(&mut store, "n0000008", t(9, 0) + Duration::days(1), SessionState::Working);
    clock.set(t(11, 0) + Duration::days(3));
    let outcome = Morning::default().check(&mut store, clock.now_utc(), &tz).unwrap();
    assert!(matches!(outcome, Some(MorningOutcome::Made { .. })), "{outcome:?}");
    assert!(Morning::default().check(&mut store, clock.now_utc(), &tz).unwrap().is_none());
    let latest = store.latest_summary().unwrap().unwrap();
    assert_eq!(latest.scheduled_for, nightshift::clock::format_ts(t(8, 0) + Duration::days(3)));
}

#[test]
fn an_empty_stretch_costs_nothing_not_minus_nothing() {
    let store = Store::open_in_memory().unwrap();
    let d = digest::build(&store, t(1, 0), t(2, 0)).unwrap();
    let text = digest::render(&d, Format::Text);
    assert!(text.contains("$0.00") && !text.contains("$-0.00"), "{text}");
}

/// The night of issue 34, as the journal had it before the fix: 19 respawn cycles, each salvaging the
/// same untracked file under a ref of its own; 16 handoffs within two hours; a breaker that opened
/// and closed, twice; Nightshift killed and the session restored; a question answered at the
/// terminal as the last thing the journal heard. Written with real git objects.
fn the_issues_night() -> (tempfile::TempDir, Store, std::path::PathBuf) {
    use nightshift::breaker::{BreakerKind, BreakerState};
    use nightshift::respawn::Action;
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open(&tmp.path().join("journal.sqlite3")).unwrap();
    let repo = tmp.path().join("api");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"], None);
    commit(&repo, "README", "api\n", "Start", t(21, 0));
    std::fs::write(repo.join("notes.md"), "n".repeat(134) + "\n").unwrap();
    // What each cycle's salvage made: the same tree under a new commit and ref every time.
    let index = tmp.path().join("salvage-index");
    let with_index = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(&repo)
            .env("GIT_INDEX_FILE", &index)
            .env("GIT_AUTHOR_NAME", "Nightshift")
            .env("GIT_AUTHOR_EMAIL", "nightshift@localhost")
            .env("GIT_COMMITTER_NAME", "Nightshift")
            .env("GIT_COMMITTER_EMAIL", "nightshift@localhost")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    with_index(&["read-tree", "HEAD"]);
    with_index(&["add", "-A", "--", "."]);
    let tree = with_index(&["write-tree"]);

    let id = "s0000034";
    session(&mut store, id, &repo, t(22, 0), std::process::id());
    state(&mut store, id, t(22, 0), SessionState::Running);
    state(&mut store, id, t(22, 1), SessionState::Working);
    for cycle in 1..=19u32 {
        let at = t(22, 30) + Duration::minutes(20 * i64::from(cycle - 1));
        let message = format!("WIP salvage of session {id}: before respawn cycle {cycle}'s /clear");
        let commit = with_index(&["commit-tree", &tree, "-p", "HEAD", "-m", &message]);
        let reference = format!("refs/nightshift/salvage/{id}/{cycle}");
        with_index(&["update-ref", &reference, &commit]);
        state(&mut store, id, at, SessionState::Idle);
        let started = Action::CycleStarted;
        ev(
            &mut store,
            id,
            at,
            EventKind::Respawn { action: started, cycle: Some(cycle), reason: None, cost_usd: None },
        );
        ev(
            &mut store,
            id,
            at,
            EventKind::Salvaged {
                repo: repo.display().to_string(),
                reference,
                commit,
                files: 1,
                bytes: 135,
                reason: format!("before respawn cycle {cycle}'s /clear"),
                preexisting: Vec::new(),
                users: Vec::new(),
                too_big: Vec::new(),
            },
        );
        state(&mut store, id, at, SessionState::Respawning);
        state(&mut store, id, at + Duration::minutes(1), SessionState::Working);
    }
    // 16 handoffs, one every 7 minutes from midnight: 9 of them within the first hour.
    for n in 0..16 {
        let at = t(0, 2) + Duration::minutes(7 * n);
        ev(&mut store, id, at, EventKind::HandoffAsked { times: 1 });
        ev(&mut store, id, at + Duration::seconds(20), EventKind::Handoff { chars: 900 });
        ev(&mut store, id, at + Duration::seconds(40), EventKind::HandoffGiven { source: "clear".into() });
    }
    // The no-progress breaker opened and closed at 03:00–03:20 and again at 05:00–05:20.
    for (open, close) in [(t(3, 0), t(3, 20)), (t(5, 0), t(5, 20))] {
        let breaker = BreakerKind::NoProgress;
        let reason = "3 cycles without progress".to_string();
        ev(&mut store, id, open, EventKind::Breaker { breaker, state: BreakerState::Open, reason });
        state(&mut store, id, open, SessionState::BreakerOpen);
        let reason = "progress again".to_string();
        ev(&mut store, id, close, EventKind::Breaker { breaker, state: BreakerState::Closed, reason });
        state(&mut store, id, close, SessionState::Working);
    }
    ev(
        &mut store,
        id,
        t(3, 40),
        EventKind::GuardDenied {
            rule: "force_push".into(),
            what: "a force push to the default branch".into(),
            command: "git push --force origin main".into(),
        },
    );
    ev(&mut store, id, t(4, 0), EventKind::Suspended { from: t(3, 45), to: t(4, 0) });
    // Nightshift was killed at 05:30; the app brought the session back at 06:00.
    ev(&mut store, id, t(6, 0), EventKind::Restored { reason: "respawn armed".into(), down_secs: 1800 });
    state(&mut store, id, t(6, 0), SessionState::Running);
    state(&mut store, id, t(6, 1), SessionState::Working);
    // The question, answered at the terminal a minute later: the journal's last word on it.
    ev(
        &mut store,
        id,
        t(6, 10),
        EventKind::State {
            state: SessionState::WaitingInput,
            reason: "question".into(),
            pid: None,
            exit_code: None,
            signal: None,
            error: None,
            dialog: Some(nightshift::agent::Dialog::new(
                nightshift::agent::DialogKind::Question,
                Some("Which database should I use?".into()),
            )),
            last_screen: None,
        },
    );
    ev(
        &mut store,
        id,
        t(6, 11),
        EventKind::DialogAnswered {
            dialog: nightshift::agent::DialogKind::Question,
            text: Some("Which database should I use?".into()),
            by: nightshift::event::Answerer::Terminal,
            waited_secs: 60,
            replaced: false,
        },
    );
    (tmp, store, repo)
}

fn hm(at: DateTime<Utc>) -> String {
    at.with_timezone(&chrono::Local).format("%H:%M").to_string()
}

#[test]
fn the_issues_night_is_told_once_with_every_kind_of_event_counted() {
    let (_tmp, mut store, repo) = the_issues_night();
    let d = digest::build(&store, t(21, 0), t(8, 0)).unwrap();
    let text = digest::render(&d, Format::Text);
    let json: serde_json::Value = serde_json::from_str(&digest::render(&d, Format::Json)).unwrap();
    let s = &json["sessions"][0];
    assert_eq!(s["id"], "s0000034", "{json:#}");

    // One salvage line for the one distinct snapshot, and no stale question: nothing else needs you.
    let needs: Vec<&str> = s["needs_you"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert_eq!(
        needs,
        [format!(
            "work kept by salvage: 1 uncommitted file (135 B) of {}, kept since {}, unchanged through 18 later \
             cycles; look: nightshift salvage show s0000034/1",
            repo.display(),
            hm(t(22, 30))
        )],
        "{text}"
    );
    assert_eq!(text.matches("work kept by salvage").count(), 1, "{text}");
    assert!(!text.contains("waiting on a question"), "{text}");
    // The met needs are what happened, once each.
    let happened: Vec<&str> = s["happened"].as_array().unwrap().iter().map(|h| h["text"].as_str().unwrap()).collect();
    for line in [
        format!(
            "asked \"Which database should I use?\" at {}, answered at the terminal at {}",
            hm(t(6, 10)),
            hm(t(6, 11))
        ),
        format!("restored at {} after 30m without Nightshift (respawn armed)", hm(t(6, 0))),
    ] {
        assert!(happened.contains(&line.as_str()), "{line:?} not in {happened:#?}");
        assert_eq!(text.matches(&line).count(), 1, "{line:?} once in:\n{text}");
    }
    let breaker = happened.iter().find(|h| h.starts_with("the no-progress breaker opened and closed again"));
    assert_eq!(
        breaker.copied(),
        Some(
            format!("the no-progress breaker opened and closed again: 2 times, {} to {}", hm(t(3, 0)), hm(t(5, 0)))
                .as_str()
        ),
        "{happened:#?}"
    );

    // Every kind of event counted, as typed fields.
    let counts = &s["counts"];
    for (name, n) in [
        ("respawn_cycles", 19),
        ("handoffs", 16),
        ("handoffs_written", 16),
        ("handoffs_given", 16),
        ("handoffs_missing", 0),
        ("questions", 1),
        ("questions_answered", 1),
        ("restores", 1),
        ("breakers_opened", 2),
        ("breakers_closed", 2),
        ("guard_denials", 1),
        ("suspends", 1),
        ("salvages", 1),
        ("salvages_unchanged", 18),
    ] {
        assert_eq!(counts[name], n, "counts.{name} in {counts:#}");
    }
    assert_eq!(counts["answered_by"]["terminal"], 1, "{counts:#}");
    // Called out: too many handoffs in an hour, a breaker that opened twice.
    let unusual: Vec<&str> = s["unusual"].as_array().unwrap().iter().map(|u| u["kind"].as_str().unwrap()).collect();
    assert_eq!(unusual, ["handoffs", "breaker_reopened"], "{s:#}");

    // The same figures in the text as in the JSON.
    let c = |name: &str| counts[name].as_u64().unwrap();
    for phrase in [
        format!("{} respawn cycles", c("respawn_cycles")),
        format!("{} handoffs ({} written, {} given back)", c("handoffs"), c("handoffs_written"), c("handoffs_given")),
        format!("{} question ({} answered)", c("questions"), c("questions_answered")),
        format!("answered: {} at the terminal", counts["answered_by"]["terminal"]),
        format!("{} restore", c("restores")),
        format!("breakers: {} opened, {} closed", c("breakers_opened"), c("breakers_closed")),
        format!("{} guard denial", c("guard_denials")),
        format!("{} suspend", c("suspends")),
        format!("{} snapshot kept by salvage (unchanged {} times)", c("salvages"), c("salvages_unchanged")),
        "UNUSUAL: 16 handoffs, 9 of them within an hour".to_string(),
        "UNUSUAL: the no-progress breaker opened 2 times".to_string(),
        format!(
            "In all: {} respawn cycles · {} restore · {} handoffs",
            c("respawn_cycles"),
            c("restores"),
            c("handoffs")
        ),
    ] {
        assert!(text.contains(&phrase), "text lacks {phrase:?}:\n{text}");
    }
    // The night-wide counts, in the morning summary too.
    assert_eq!(json["counts"], *counts, "one session: the night's counts are its own");
    let tz = FixedOffset::east_opt(0).unwrap();
    let made = Morning::default().check(&mut store, t(8, 0), &tz).unwrap();
    assert!(matches!(made, Some(MorningOutcome::Made { .. })), "{made:?}");
    let stored: serde_json::Value = serde_json::from_str(&store.latest_summary().unwrap().unwrap().body).unwrap();
    assert_eq!(stored["counts"]["handoffs"], 16);
    assert_eq!(stored["sessions"][0]["needs_you"].as_array().map(Vec::len), Some(1));

    // A summary stored before these fields existed still reads (and shows), with nothing counted.
    let mut old = stored.clone();
    old.as_object_mut().unwrap().remove("counts");
    old["totals"].as_object_mut().unwrap().remove("unusual");
    for field in ["counts", "unusual", "happened", "salvaged"] {
        old["sessions"][0].as_object_mut().unwrap().remove(field);
    }
    let old: digest::Digest = serde_json::from_value(old).unwrap();
    assert_eq!(old.counts, digest::Counts::default());
    assert!(digest::render(&old, Format::Text).contains("work kept by salvage"));
}

#[test]
fn a_codex_sessions_spend_is_told_in_tokens_not_as_nothing() {
    let mut store = Store::open_in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let command = vec!["codex".to_string()];
    let new = NewSession {
        id: "x0000001",
        kind: nightshift::store::SessionKind::Terminal,
        command: &command,
        cwd: dir.path().to_str().unwrap(),
        agent: "codex",
        preset: Some("overnight"),
        created: t(22, 0),
        owner_pid: dead_pid(),
        control_socket: None,
    };
    store.create_session(&new).unwrap();
    state(&mut store, "x0000001", t(22, 0), SessionState::Running);
    // Its thread's total at each turn's end; /clear starts a fresh thread, and a fresh count.
    for (at, pct, tokens) in [(t(22, 5), 10.0, 1_000), (t(23, 0), 30.0, 9_000), (t(0, 0), 45.0, 2_500)] {
        let sample =
            Sample { five_hour_pct: Some(pct), seven_day_pct: Some(5.0), tokens: Some(tokens), ..Default::default() };
        store.record_usage("x0000001", at, &sample).unwrap();
    }
    let d = digest::build(&store, t(21, 0), t(8, 0)).unwrap();
    let usage = d.sessions[0].usage.as_ref().expect("its usage");
    // Begun in the range: its first thread's first 1000 tokens count too.
    assert_eq!((usage.tokens, usage.cost_reported), (11_500, false));
    let text = digest::render(&d, Format::Text);
    assert!(text.contains("usage: 5h 10% → 45% · 7d 5% → 5% · 11500 tokens, no cost reported"), "{text}");
}

/// A session whose work moved from Claude (account `a`) to Codex at a limit and back at the reset.
/// Its samples carry their own agent: each client's running totals are its own.
fn moved_night(store: &mut Store, repo: &Path) {
    use nightshift::agent::{Account, AgentKind};
    use nightshift::contract::{Contract, Terminal};
    use nightshift::event::SwitchAction;
    let id = "m0000001";
    session(store, id, repo, t(22, 0), dead_pid());
    let contract = |agent: AgentKind, account: Option<&str>| {
        let terminal = Terminal::new(agent, agent.as_str().into(), &[], repo.to_path_buf(), (80, 24));
        let mut armed = Contract::session(agent, terminal);
        *armed.account_mut() = account.map(|name| Account { name: name.into(), dir: "/accounts/a".into() });
        EventKind::Contract { contract: Box::new(armed.into_contract()) }
    };
    let moved = |from: AgentKind, to: AgentKind| EventKind::AgentSwitch {
        action: SwitchAction::Switched,
        from,
        to,
        back_at: None,
        reason: "at the limit".into(),
    };
    let sample = |five: f64, cost: Option<f64>, tokens: u64| Sample {
        five_hour_pct: Some(five),
        seven_day_pct: Some(10.0),
        cost_usd: cost,
        tokens: Some(tokens),
        ..Default::default()
    };
    store.set_agent(id, AgentKind::Claude, &["claude".into()], Some(("a", "/accounts/a"))).unwrap();
    ev(store, id, t(22, 0), contract(AgentKind::Claude, Some("a")));
    state(store, id, t(22, 0), SessionState::Working);
    store.record_usage(id, t(22, 10), &sample(20.0, Some(0.5), 10_000)).unwrap();
    commit(repo, "parser.rs", "fn parse() {}", "claude: the parser", t(23, 0));
    store.record_usage(id, t(0, 50), &sample(100.0, Some(1.5), 50_000)).unwrap();
    ev(store, id, t(1, 0), EventKind::HandoffBuilt { chars: 1800, why: "claude met its limit".into() });
    ev(store, id, t(1, 0), moved(AgentKind::Claude, AgentKind::Codex));
    state(store, id, t(1, 0), SessionState::Exited);
    store.set_agent(id, AgentKind::Codex, &["codex".into()], None).unwrap();
    ev(store, id, t(1, 0), contract(AgentKind::Codex, None));
    state(store, id, t(1, 0), SessionState::Working);
    ev(store, id, t(1, 1), EventKind::HandoffChecked { received: true });
    store.record_usage(id, t(1, 10), &sample(3.0, None, 2_000)).unwrap();
    commit(repo, "lexer.rs", "fn lex() {}", "codex: the lexer", t(2, 0));
    store.record_usage(id, t(2, 50), &sample(20.0, None, 20_000)).unwrap();
    ev(store, id, t(3, 0), moved(AgentKind::Codex, AgentKind::Claude));
    state(store, id, t(3, 0), SessionState::Exited);
    store.set_agent(id, AgentKind::Claude, &["claude".into()], Some(("a", "/accounts/a"))).unwrap();
    ev(store, id, t(3, 0), contract(AgentKind::Claude, Some("a")));
    state(store, id, t(3, 0), SessionState::Working);
    // Claude's own conversation again: its totals go on from where they were.
    store.record_usage(id, t(3, 10), &sample(5.0, Some(1.6), 52_000)).unwrap();
    commit(repo, "tests.rs", "#[test] fn t() {}", "claude: the tests", t(4, 0));
    store.record_usage(id, t(5, 50), &sample(30.0, Some(2.0), 60_000)).unwrap();
    state(store, id, t(6, 0), SessionState::Exited);
}

/// The digest of [`moved_night`] in a repository of its own (kept while the digest is read).
fn moved_digest() -> (digest::Digest, tempfile::TempDir) {
    let mut store = Store::open_in_memory().unwrap();
    let repo = tempfile::tempdir().unwrap();
    git(repo.path(), &["init", "-q", "-b", "main"], None);
    commit(repo.path(), "README", "before", "before the night", t(20, 0));
    moved_night(&mut store, repo.path());
    (digest::build(&store, t(21, 0), t(8, 0)).unwrap(), repo)
}

#[test]
fn a_session_that_moved_between_agents_adds_up_each_agents_own_spend() {
    let (d, _repo) = moved_digest();
    let usage = d.sessions[0].usage.as_ref().expect("its usage");
    // Begun in the range, so from nothing. Claude: to $1.50, then $1.60 → $2.00; to 50k, then 52k
    // → 60k. Codex: to 20k.
    assert_eq!(usage.tokens, 50_000 + 2_000 + 8_000 + 20_000, "each agent's totals rise on their own");
    assert!((usage.cost_usd - 2.0).abs() < 1e-9, "{}", usage.cost_usd);
}

#[test]
fn the_morning_tells_what_each_agent_did_when_the_work_moved() {
    let (d, repo) = moved_digest();
    let s = &d.sessions[0];
    let who: Vec<(&str, Option<&str>, usize)> =
        s.workers.iter().map(|w| (w.agent.as_str(), w.account.as_deref(), w.commits.len())).collect();
    assert_eq!(who, [("claude", Some("a"), 1), ("codex", None, 1), ("claude", Some("a"), 1)]);
    assert_eq!(s.workers[1].commits[0].subject, "codex: the lexer");
    assert_eq!((s.workers[0].from, s.workers[1].from, s.workers[2].to), (t(22, 0), t(1, 0), t(6, 0)));
    let text = digest::render(&d, Format::Text);
    for line in [
        format!(
            "claude on account a, {}–{}: 1 commit, $1.50, 50000 tokens; its windows: 5h 20% → 100%, 7d 10% → 10%",
            local(t(22, 0)),
            local(t(1, 0))
        ),
        format!(
            "codex, {}–{}: 1 commit, 20000 tokens, no cost reported; its windows: 5h 3% → 20%, 7d 10% → 10%; \
             took over from a handoff Nightshift built (1800 chars), and its first prompt carried it",
            local(t(1, 0)),
            local(t(3, 0))
        ),
        format!(
            "claude on account a, {}–{}: 1 commit, $0.50, 10000 tokens; its windows: 5h 5% → 30%",
            local(t(3, 0)),
            local(t(6, 0))
        ),
        "usage: $2.00, 80000 tokens in all".to_string(),
    ] {
        assert!(text.contains(&line), "text lacks {line:?}:\n{text}");
    }
    // The same in JSON, for the window; a session that never moved has no such lines.
    let json: serde_json::Value = serde_json::from_str(&digest::render(&d, Format::Json)).unwrap();
    assert_eq!(json["sessions"][0]["workers"][1]["usage"]["tokens"], 20_000);
    let mut one = Store::open_in_memory().unwrap();
    session(&mut one, "s0000001", repo.path(), t(22, 0), dead_pid());
    state(&mut one, "s0000001", t(22, 0), SessionState::Working);
    let d = digest::build(&one, t(21, 0), t(8, 0)).unwrap();
    assert!(d.sessions[0].workers.is_empty());
    assert!(!digest::render(&d, Format::Text).contains("who worked"));
}

/// A time as the digest prints it (local).
fn local(at: DateTime<Utc>) -> String {
    at.with_timezone(&chrono::Local).format("%H:%M").to_string()
}
