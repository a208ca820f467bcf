use super::*;
use crate::agent::{Dialog, DialogKind};
use crate::doctor::Status;
use crate::event::SessionId;

fn step(expect: &[&str]) -> Step {
    Step {
        name: "a long answer".into(),
        say: Some("go mock:slow:6".into()),
        expect: expect.iter().map(|s| s.to_string()).collect(),
        answer: None,
        ends: Ends::Idle,
        within: 30,
        context_pct: None,
        reset_in: None,
    }
}

fn at(secs: f64) -> SystemTime {
    SystemTime::UNIX_EPOCH + std::time::Duration::from_secs_f64(1_800_000_000.0 + secs)
}

fn frame(secs: f64, title: &str, readings: Readings) -> Frame {
    Frame { at: at(secs), title: title.into(), tail: vec!["❯ go mock:slow:6".into()], readings }
}

fn state(secs: f64, state: SessionState, reason: &str) -> Event {
    Event { ts: DateTime::<Utc>::from(at(secs)), session: SessionId::generate(), kind: EventKind::state(state, reason) }
}

#[test]
fn the_built_in_scripts_parse_and_name_only_known_signals() {
    for kind in [AgentKind::Claude, AgentKind::Codex] {
        let script = Script::builtin(kind).expect("a script");
        assert!(script.step.len() >= 5, "{kind}: {} steps", script.step.len());
        assert!(script.step[0].say.is_none(), "the first step watches the client start");
    }
    assert!(Script::builtin(AgentKind::Generic).is_none());
}

#[test]
fn a_bad_script_is_one_line_naming_the_step_and_the_fix() {
    let unknown = Script::parse("my.toml", "[[step]]\nname = \"x\"\nexpect = [\"spinner\"]\n").unwrap_err();
    assert!(unknown.starts_with("my.toml: step 1 (x) expects `spinner`, which is no signal"), "{unknown}");
    assert!(unknown.contains("working.spinner"), "it lists the signals: {unknown}");
    let answer = Script::parse("my.toml", "[[step]]\nname = \"q\"\nexpect = []\nanswer = \"yes\"\n").unwrap_err();
    assert!(answer.contains("\"allow\", \"deny\" or \"pick N\""), "{answer}");
    let context = Script::parse("my.toml", "[[step]]\nname = \"c\"\nexpect = [\"usage.context\"]\n").unwrap_err();
    assert!(context.contains("context_pct"), "{context}");
    let limit = Script::parse("my.toml", "[[step]]\nname = \"l\"\nexpect = []\nends = \"limit\"\n").unwrap_err();
    assert!(limit.contains("reset_in"), "{limit}");
    assert!(Script::parse("my.toml", "").unwrap_err().contains("no [[step]]"));
    let typo = Script::parse("my.toml", "[[step]]\nname = \"t\"\nexpects = []\n").unwrap_err();
    assert!(!typo.contains('\n'), "one line: {typo}");
    assert_eq!(reply("pick 2"), Some(Reply::Pick(2)));
    assert_eq!(reply("allow"), Some(Reply::Allow));
}

#[test]
fn each_screen_signal_is_judged_on_its_own_and_a_miss_says_what_was_there() {
    let working = Readings {
        title_working: true,
        footer: Some("esc to interrupt".into()),
        spinner: None,
        prompt: true,
        ..Readings::default()
    };
    let idle = Readings { title_idle: true, prompt: true, ..Readings::default() };
    let seen = Observed {
        frames: vec![frame(0.0, "◐ Claude Code", working), frame(6.0, "✳ Claude Code", idle)],
        ..Observed::default()
    };
    let s = step(&[]);
    assert_eq!(judge(AgentKind::Claude, "title.working", &s, &seen), Ok("the title `◐ Claude Code`".into()));
    assert_eq!(judge(AgentKind::Claude, "working.footer", &s, &seen), Ok("the footer `esc to interrupt`".into()));
    let spinner = judge(AgentKind::Claude, "working.spinner", &s, &seen).unwrap_err();
    assert!(spinner.starts_with("no working line matched while the turn ran"), "{spinner}");
    assert!(spinner.contains("`❯ go mock:slow:6`"), "it shows the screen: {spinner}");
    assert!(judge(AgentKind::Claude, "title.idle", &s, &seen).is_ok());
    assert!(judge(AgentKind::Claude, "composer.prompt", &s, &seen).is_ok());
    let dialog = judge(AgentKind::Claude, "dialog.question", &s, &seen).unwrap_err();
    assert!(dialog.starts_with("no dialog read"), "{dialog}");
    let other = Readings { dialog: Some(Dialog::new(DialogKind::Permission, None)), ..Readings::default() };
    let seen = Observed { frames: vec![frame(1.0, "", other)], ..Observed::default() };
    assert_eq!(judge(AgentKind::Claude, "dialog.question", &s, &seen), Err("a permission dialog instead".into()));
}

#[test]
fn an_idle_read_before_the_answer_ended_is_not_steady() {
    let request = |done: f64| Request {
        scenario: "slow:6".into(),
        said: String::new(),
        status: 200,
        at: at(0.0),
        done_at: Some(at(done)),
    };
    let s = step(&[]);
    let steady = Observed {
        events: vec![
            state(0.2, SessionState::Working, "the client's UserPromptSubmit hook"),
            state(6.3, SessionState::Idle, "the client's Stop hook"),
        ],
        requests: vec![request(6.1)],
        ..Observed::default()
    };
    assert_eq!(
        judge(AgentKind::Claude, "session.steady", &s, &steady),
        Ok("working for the whole answer, 5.9 s".into())
    );
    assert_eq!(judge(AgentKind::Claude, "hook.turn_end", &s, &steady), Ok("idle on the client's Stop hook".into()));
    assert!(judge(AgentKind::Codex, "hook.turn_end", &s, &steady).is_err(), "Codex's turn ends by its notify");
    let early = Observed {
        events: vec![
            state(0.2, SessionState::Working, "spinner"),
            state(2.0, SessionState::Idle, "quiet for 2.0 s"),
            state(2.5, SessionState::Working, "spinner"),
            state(6.4, SessionState::Idle, "quiet"),
        ],
        requests: vec![request(6.1)],
        ..Observed::default()
    };
    assert_eq!(
        judge(AgentKind::Claude, "session.steady", &s, &early),
        Err("read idle 4.1 s before the answer ended (quiet for 2.0 s)".into())
    );
    let timed_out = Observed { timed_out: true, ..early };
    let idle = judge(AgentKind::Claude, "session.idle", &s, &timed_out).unwrap_err();
    assert!(idle.starts_with("not idle in 30 s; the session was idle (quiet)"), "{idle}");
}

#[test]
fn a_limit_passes_only_with_its_reset_read_near_the_stand_ins() {
    let reset = DateTime::<Utc>::from(at(60.0));
    let limit = |resets_at: Option<DateTime<Utc>>| Observed {
        events: vec![Event {
            ts: DateTime::<Utc>::from(at(1.0)),
            session: SessionId::generate(),
            kind: EventKind::LimitDetected {
                resets_at,
                source: crate::limits::Source::Hook,
                kind: crate::limits::LimitKind::Unspecified,
                line: "limit".into(),
            },
        }],
        reset: Some(reset),
        ..Observed::default()
    };
    let s = step(&[]);
    assert!(judge(AgentKind::Claude, "limit.reset", &s, &limit(Some(reset + chrono::Duration::seconds(9)))).is_ok());
    let wrong = judge(AgentKind::Claude, "limit.reset", &s, &limit(Some(reset + chrono::Duration::hours(12))));
    assert!(wrong.unwrap_err().starts_with("the reset was read as"));
    assert!(judge(AgentKind::Claude, "limit.reset", &s, &limit(None)).unwrap_err().contains("with no reset"));
    assert_eq!(
        judge(AgentKind::Claude, "limit.detected", &s, &limit(None)),
        Ok("a limit, read from its StopFailure hook".into())
    );
}

#[test]
fn a_signal_fails_for_the_first_step_that_missed_it_and_the_lines_name_it_and_the_file() {
    let folded = fold(&[
        ("quick".into(), "session.idle".into(), Ok("idle".into())),
        ("long".into(), "working.spinner".into(), Err("no working line".into())),
        ("long".into(), "session.idle".into(), Ok("idle".into())),
        ("overload".into(), "working.spinner".into(), Err("again".into())),
        ("question".into(), "session.idle".into(), Err("not idle".into())),
    ]);
    assert_eq!(folded.len(), 2);
    assert_eq!((folded[0].step.as_str(), folded[0].result.clone()), ("question", Err("not idle".into())));
    assert_eq!((folded[1].step.as_str(), folded[1].result.clone()), ("long", Err("no working line".into())));
    let outcome = Outcome {
        agent: AgentKind::Claude,
        version: Some("2.1.333".into()),
        skipped: None,
        broken: None,
        steps: 8,
        secs: 31.0,
        signals: folded,
        kept: Some(PathBuf::from("/s/canary/claude-2.1.333-x")),
    };
    let lines = checks(&outcome, Some(Path::new("/c/agents")));
    assert_eq!(lines[0].status, Status::Fail);
    assert_eq!(lines[0].detail, "2 of 2 signals not read, in 31 s; the screens are kept in /s/canary/claude-2.1.333-x");
    let spinner = lines.iter().find(|c| c.id == "canary.claude.working.spinner").unwrap();
    assert_eq!(spinner.detail, "working.spinner in long: no working line");
    assert!(
        spinner.remedy.as_deref().unwrap().contains("fix [working] spinner in /c/agents/claude.toml"),
        "{spinner:?}"
    );
    let skipped = Outcome { skipped: Some("needs a login".into()), ..outcome };
    let lines = checks(&skipped, None);
    assert_eq!((lines.len(), lines[0].status), (1, Status::Skip));
    assert!(Report::new(lines).ok, "a skip is not a failure");
}

#[test]
fn a_verdict_is_found_again_by_the_very_file_it_ran() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("claude");
    std::fs::write(&bin, "v1").unwrap();
    let (size, modified) = fingerprint(&bin).unwrap();
    let mut results = Results::default();
    let verdict = Verdict {
        at: chrono::SubsecRound::trunc_subsecs(Utc::now(), 3),
        ok: false,
        failed: vec!["working.spinner".into()],
        kept: None,
        bin: bin.clone(),
        size,
        modified,
    };
    results.record(AgentKind::Claude, "2.1.333", verdict);
    results.save(dir.path()).unwrap();
    let back = Results::load(dir.path());
    assert_eq!(back, results);
    assert_eq!(back.of_binary(AgentKind::Claude, &bin).map(|(v, _)| v), Some("2.1.333"));
    assert!(back.of_binary(AgentKind::Codex, &bin).is_none());
    std::fs::write(&bin, "v2, updated").unwrap();
    assert!(back.of_binary(AgentKind::Claude, &bin).is_none(), "another file: another version");
    assert_eq!(back.latest(AgentKind::Claude).map(|(v, _)| v), Some("2.1.333"));
}

#[test]
fn the_summary_counts_signals_not_the_line_that_sums_them_up_and_the_verdict_follows_them() {
    let signal = |i: usize, ok: bool| Signal {
        name: format!("signal.{i}"),
        step: "a long answer".into(),
        result: if ok { Ok("seen".into()) } else { Err("not seen".into()) },
    };
    let outcome = |signals: Vec<Signal>| Outcome {
        agent: AgentKind::Claude,
        version: Some("2.1.332".into()),
        skipped: None,
        broken: None,
        steps: 9,
        secs: 30.0,
        signals,
        kept: Some(PathBuf::from("/s/canary/claude-2.1.332-x")),
    };
    // One of 20 signals fails: 19 passed, 1 failed (the client's own line, which sums them up, is
    // not one more).
    let one_failed = report(&[outcome((0..20).map(|i| signal(i, i != 7)).collect())], None);
    assert_eq!(one_failed.checks.len(), 21, "the client's line and one per signal");
    assert_eq!((one_failed.counts.pass, one_failed.counts.warn, one_failed.counts.fail), (19, 0, 1));
    assert!(!one_failed.ok);
    assert!(
        one_failed.text().ends_with("19 passed, 0 warning(s), 1 failed: not ready: fix the FAILs\n"),
        "{}",
        one_failed.text()
    );
    let all = report(&[outcome((0..20).map(|i| signal(i, true)).collect())], None);
    assert_eq!((all.counts.pass, all.counts.fail, all.ok), (20, 0, true));
    assert!(all.text().ends_with("20 passed, 0 warning(s), 0 failed: ready for tonight\n"), "{}", all.text());
    // A client that could not run has no signals: its one line is what counts, and fails.
    let broken = Outcome { broken: Some("the stand-in could not start".into()), ..outcome(Vec::new()) };
    let skipped = Outcome { agent: AgentKind::Codex, skipped: Some("needs a login".into()), ..outcome(Vec::new()) };
    let both = report(&[broken, skipped], None);
    assert_eq!((both.counts.pass, both.counts.fail, both.counts.skip, both.ok), (0, 1, 1, false));
    // Two clients: each one's signals.
    let two = report(
        &[
            outcome((0..10).map(|i| signal(i, true)).collect()),
            Outcome { agent: AgentKind::Codex, ..outcome((0..6).map(|i| signal(i, i != 0)).collect()) },
        ],
        None,
    );
    assert_eq!((two.counts.pass, two.counts.fail, two.ok), (15, 1, false));
}
