//! The session machine in virtual time: every spec drives [`Machine::step`] through a [`Sim`] whose
//! clocks only move when told (the monotonic one at each deadline the machine asks for, the wall
//! clock with it, or on its own across a suspend). An agent model answers the machine's spawns and
//! lives for as long as the spec says; a working tree is a string the spec changes to make progress.

use super::*;
use crate::agent::Verdict;
use crate::breaker::BreakerKind;
use crate::event::Automation;
use crate::limits::{LimitKind, Source, WindowGuard};
use crate::session::{RespawnArm, Switch};
use crate::usage::Sample;

const S: fn(u64) -> Duration = Duration::from_secs;

fn wall0() -> DateTime<Utc> {
    "2026-12-01T22:00:00Z".parse().unwrap()
}

/// An agent that lives for `life`, then exits with `code`.
#[derive(Debug, Clone, Copy)]
struct Agent {
    life: Duration,
    code: i32,
}

struct Sim {
    m: Machine,
    t0: Instant,
    mono: Instant,
    /// The wall clock minus the monotonic one: grows across a suspend.
    slept: chrono::Duration,
    /// Every effect, with the virtual seconds since the start.
    log: Vec<(f64, Effect)>,
    agent: Option<Agent>,
    /// When the running agent exits by itself.
    dies_at: Option<Instant>,
    lives: u32,
    /// The working tree's content, as a fingerprint would see it.
    tree: String,
    /// What the journal knows of the accounts' plan windows.
    meters: Vec<Meter>,
    /// Why the journal could not give the meters, when it cannot.
    meters_unread: Option<String>,
    /// The accounts the edge finds logged out.
    logged_out: Vec<String>,
    /// What the edge says of the failover agent's login, and the journal of its windows.
    failover_login: Result<(), String>,
    failover_meter: Option<Meter>,
    /// What the folder holds when a handoff is built.
    gathered: crate::session::handoff::Gathered,
}

fn quick_respawn() -> respawn::Settings {
    respawn::Settings { idle_timeout: S(3), duration: S(8 * 3600), user_quiet: S(0), ..respawn::Settings::default() }
}

/// The zone the specs' user lives in: not UTC, so a local time read as UTC would show.
const ZONE: chrono_tz::Tz = chrono_tz::Europe::Berlin;

fn start() -> Start {
    let terminal = crate::contract::Terminal {
        program: "claude".into(),
        args: vec![],
        prompt: None,
        cwd: "/work/p".into(),
        cols: 120,
        rows: 40,
        preset: None,
        respawn: None,
        respawn_until: None,
        auto_resume: None,
        window_guard: WindowGuard::default(),
        pace: crate::limits::pace::PaceSettings::default(),
        budget: crate::breaker::Budget::default(),
        switch: None,
        guard: false,
        guard_file: None,
        hooks: true,
        adapter: None,
        quiet: S(2),
        stop_grace: S(3),
        worktree: None,
        sandbox: None,
        unsandboxed: None,
        standing: None,
        failover: None,
        returns: None,
    };
    let contract = crate::contract::Contract {
        version: crate::contract::VERSION,
        started: wall0(),
        agent: AgentKind::Claude,
        account: None,
        env: vec![],
        kind: crate::contract::Kind::Terminal(Box::new(terminal)),
    };
    Start {
        armed: crate::contract::Armed::new(contract).unwrap(),
        zone: crate::clock::Zone::new(ZONE),
        pid: 100,
        auto_accept: vec![DialogKind::Trust, DialogKind::Confirmation],
        commands: crate::agent::CycleCommands::default(),
        guard: None,
        from: Resumed::default(),
        sandbox: None,
        fence: None,
        canary: None,
    }
}

/// What the start's contract arms, to change.
fn armed(s: &mut Start) -> &mut crate::contract::Terminal {
    s.armed.terminal_mut()
}

/// The start's contract with `change` made to it (its agent, its account).
fn contract(s: &mut Start, change: impl FnOnce(&mut crate::contract::Contract)) {
    let mut c = s.armed.contract().clone();
    change(&mut c);
    s.armed = crate::contract::Armed::new(c).unwrap();
}

fn with_respawn(mut s: Start, settings: respawn::Settings) -> Start {
    armed(&mut s).respawn = Some(settings);
    s
}

fn with_auto_resume(mut s: Start, policy: resume::Policy) -> Start {
    armed(&mut s).auto_resume = Some(resume::Settings { policy, ..resume::Settings::default() });
    s
}

fn transition(to: Activity, dialog: Option<DialogKind>) -> Input {
    let verdict =
        Verdict { working: None, dialog: dialog.map(|kind| Dialog::new(kind, None)), prompt: true, interrupted: false };
    Input::Activity { transition: Transition { to, reason: format!("{to:?}"), verdict }, menu: None, menu_limit: None }
}

fn idle() -> Input {
    transition(Activity::Idle, None)
}

fn working() -> Input {
    transition(Activity::Working, None)
}

fn notice(resets_at: DateTime<Utc>) -> Input {
    Input::LimitNotice(Some(LimitText {
        kind: LimitKind::FiveHour,
        resets_at: Some(resets_at),
        line: "⚠ Usage limit reached · limit resets 2:33pm".into(),
    }))
}

fn sample(five: f64, five_reset: DateTime<Utc>, seven: f64, seven_reset: DateTime<Utc>) -> Input {
    Input::Sample(Sample {
        five_hour_pct: Some(five),
        five_hour_resets_at: Some(five_reset),
        seven_day_pct: Some(seven),
        seven_day_resets_at: Some(seven_reset),
        ..Sample::default()
    })
}

fn hours(h: i64) -> chrono::Duration {
    chrono::Duration::hours(h)
}

impl Sim {
    fn new(start: Start) -> Self {
        let t0 = Instant::now();
        let (m, fx) = Machine::new(start, Now { mono: t0, wall: wall0() });
        let mut sim = Self {
            m,
            t0,
            mono: t0,
            slept: chrono::Duration::zero(),
            log: vec![],
            agent: None,
            dies_at: None,
            lives: 1,
            tree: "tree-0".into(),
            meters: vec![],
            meters_unread: None,
            logged_out: vec![],
            failover_login: Ok(()),
            failover_meter: None,
            gathered: crate::session::handoff::Gathered::default(),
        };
        sim.record(fx);
        sim
    }

    /// The agent of every life from now on (the one running now too).
    fn agent(mut self, life: Duration, code: i32) -> Self {
        self.agent = Some(Agent { life, code });
        self.dies_at = Some(self.mono + life);
        self
    }

    fn now(&self) -> Now {
        let ran = chrono::Duration::from_std(self.mono - self.t0).unwrap();
        Now { mono: self.mono, wall: wall0() + ran + self.slept }
    }

    fn secs(&self) -> f64 {
        (self.mono - self.t0).as_secs_f64()
    }

    fn input(&mut self, input: Input) {
        let fx = self.m.step(input, self.now());
        self.record(fx);
    }

    fn record(&mut self, fx: Vec<Effect>) {
        let at = self.secs();
        let mut follow = Vec::new();
        for effect in fx {
            match &effect {
                Effect::Spawn { .. } | Effect::SwitchAccount { .. } => {
                    follow.push(Input::Started { pid: 100 + self.lives })
                }
                Effect::Meters { accounts } => follow.push(Input::Meters(match &self.meters_unread {
                    Some(why) => Err(why.clone()),
                    None => {
                        let out = accounts.iter().filter(|a| self.logged_out.contains(&a.name)).map(|a| Meter {
                            account: Some(a.name.clone()),
                            sample: Sample::default(),
                            logged_out: Some(format!("no credentials in {}", a.dir.display())),
                        });
                        Ok(out.chain(self.meters.iter().cloned()).collect())
                    }
                })),
                Effect::Measure { purpose, .. } => {
                    let fingerprint = Some(Fingerprint::new(self.tree.as_str()));
                    follow.push(Input::Measured { purpose: *purpose, fingerprint });
                }
                Effect::Gather { .. } => follow.push(Input::Gathered(self.gathered.clone())),
                Effect::CheckOther { .. } => follow.push(Input::OtherChecked(OtherAgent {
                    login: self.failover_login.clone(),
                    meter: self.failover_meter.clone(),
                })),
                _ => {}
            }
            self.log.push((at, effect));
        }
        for input in follow {
            if let Input::Started { .. } = input {
                self.lives += 1;
                self.dies_at = self.agent.map(|a| self.mono + a.life);
            }
            self.input(input);
        }
    }

    /// Runs until `secs` since the start, ticking at every deadline on the way.
    fn run(&mut self, secs: f64) {
        let end = self.t0 + Duration::from_secs_f64(secs);
        loop {
            let next = [self.m.next_deadline(), self.dies_at].into_iter().flatten().min();
            let Some(next) = next.filter(|t| *t <= end) else { break };
            self.mono = self.mono.max(next);
            if self.dies_at.is_some_and(|t| t <= self.mono) && self.m.is_live() {
                self.dies_at = None;
                let code = self.agent.map_or(0, |a| a.code);
                self.input(Input::Exited { exit: Exit::Code(code), last_screen: vec![] });
            }
            self.input(Input::Tick);
            if self.m.ended().is_some() {
                break;
            }
        }
        self.mono = self.mono.max(end);
    }

    /// The machine sleeps `by` (suspended): the wall clock moves, the monotonic one does not.
    fn sleep(&mut self, by: chrono::Duration) {
        self.slept += by;
    }

    fn events(&self) -> impl Iterator<Item = (f64, &EventKind)> {
        self.log.iter().filter_map(|(t, e)| if let Effect::Emit(k) = e { Some((*t, k)) } else { None })
    }

    fn states(&self) -> Vec<SessionState> {
        self.events().filter_map(|(_, k)| k.new_state()).collect()
    }

    fn spawns(&self) -> Vec<f64> {
        self.log.iter().filter(|(_, e)| matches!(e, Effect::Spawn { .. })).map(|(t, _)| *t).collect()
    }

    fn exits(&self) -> Vec<f64> {
        self.events().filter(|(_, k)| k.new_state() == Some(SessionState::Exited)).map(|(t, _)| t).collect()
    }

    fn resumes(&self) -> Vec<(f64, u32)> {
        self.events()
            .filter_map(|(t, k)| if let EventKind::ResumeSent { attempt } = k { Some((t, *attempt)) } else { None })
            .collect()
    }

    fn written(&self) -> Vec<Vec<u8>> {
        self.log
            .iter()
            .filter_map(|(_, e)| if let Effect::Write { bytes, .. } = e { Some(bytes.clone()) } else { None })
            .collect()
    }

    fn has(&self, f: impl Fn(&EventKind) -> bool) -> bool {
        self.events().any(|(_, k)| f(k))
    }

    fn opened(&self) -> Option<(f64, BreakerKind, String)> {
        self.events().find_map(|(t, k)| match k {
            EventKind::Breaker { breaker, state: BreakerState::Open, reason } => Some((t, *breaker, reason.clone())),
            _ => None,
        })
    }

    /// Seconds of virtual time from now until wall-clock `at`.
    fn until(&self, at: DateTime<Utc>) -> f64 {
        self.secs() + (at - self.now().wall).num_milliseconds() as f64 / 1000.0
    }
}

// ---- Usage limits ----------------------------------------------------------------------------

#[test]
fn text_limit() {
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Watch));
    sim.input(working());
    let reset = wall0() + hours(2);
    sim.input(notice(reset));
    assert!(sim.has(
        |k| matches!(k, EventKind::LimitDetected { source: Source::Text, resets_at: Some(r), .. } if *r == reset)
    ));
    assert_eq!(sim.m.state(), SessionState::LimitPaused);
    sim.input(idle()); // at its prompt, under the notice
                       // Watch: the client resumes by itself; Nightshift steps in only if no turn started by the
                       // reset plus the margin. The notice gives the minute, its seconds dropped: the reset may be
                       // anywhere in it, and nothing goes into a window that may still refuse.
    let due = sim.until(reset + chrono::Duration::seconds(65));
    sim.run(due - 1.0);
    assert!(sim.resumes().is_empty(), "nothing before the notice's minute is over, plus the margin");
    sim.run(due + 0.2);
    assert_eq!(sim.resumes().len(), 1, "at the due instant itself, not at the next 5 s look");
    assert!(sim.resumes()[0].0 <= due + 0.11, "{:?} for {due}", sim.resumes());
    assert_eq!(sim.written().last().map(Vec::as_slice), Some(&b"\r"[..]), "Escape, the prompt, then Enter");
    sim.input(Input::TurnSeen);
    assert!(sim.has(|k| matches!(k, EventKind::LimitCleared { .. })));
    assert_ne!(sim.m.state(), SessionState::LimitPaused);
}

#[test]
fn data_limit() {
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Own));
    let reset = wall0() + hours(1);
    sim.input(sample(100.0, reset, 40.0, wall0() + hours(72)));
    sim.input(idle());
    assert!(sim.has(|k| matches!(k, EventKind::LimitDetected { source: Source::Data, kind: LimitKind::FiveHour, .. })));
    assert_eq!(sim.written().first().map(Vec::as_slice), Some(&b"\x1b"[..]), "own cancels the client's timer");
    // The data before the reset says nothing of after it: the resume goes out at the reset + margin.
    let due = sim.until(reset + chrono::Duration::seconds(60));
    sim.run(due + 5.0);
    assert_eq!(sim.resumes().len(), 1);
}

#[test]
fn later_reset() {
    // A 5-hour window's notice, then the statusLine shows the weekly window full too, resetting
    // later: the resume waits for the later one, and nothing fails on the way.
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Watch));
    let early = wall0() + hours(1);
    let weekly = wall0() + hours(30);
    sim.input(notice(early));
    sim.input(idle());
    sim.input(sample(100.0, early, 100.0, weekly));
    sim.run(sim.until(early + hours(2)));
    assert!(sim.resumes().is_empty(), "no resume while the weekly window is still full");
    assert!(!sim.has(|k| matches!(k, EventKind::LimitFailed { .. })), "the later reset is not a failure");
    sim.run(sim.until(weekly + chrono::Duration::seconds(70)));
    assert_eq!(sim.resumes().len(), 1, "resumed after the later reset");
    assert!(sim.resumes()[0].0 >= sim.until(weekly) - 1.0);
}

#[test]
fn limited_again_after_a_resume() {
    // The resume is sent at the reset; the client shows a new limit with a later reset (another
    // window ran out): the next resume waits for it instead of the 30-minute fallback.
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Watch));
    let reset = wall0() + hours(1);
    sim.input(notice(reset));
    sim.input(idle());
    sim.run(sim.until(reset + chrono::Duration::seconds(65)));
    assert_eq!(sim.resumes().len(), 1);
    // The notice changes to a later reset without going away first.
    let again = reset + hours(5);
    sim.input(notice(again));
    sim.run(sim.until(again));
    assert_eq!(sim.resumes().len(), 1, "no second resume before the new reset: {:?}", sim.resumes());
    sim.run(sim.until(again + chrono::Duration::seconds(70)));
    assert_eq!(sim.resumes().iter().map(|r| r.1).collect::<Vec<_>>(), [1, 2]);
}

#[test]
fn a_resume_answered_too_fast_for_a_turn_still_ends_the_limit() {
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Watch));
    let reset = wall0() + hours(1);
    sim.input(notice(reset));
    sim.input(idle());
    sim.input(Input::LimitNotice(None));
    assert_eq!(sim.m.state(), SessionState::LimitPaused, "the notice going away before the reset ends nothing");
    sim.input(notice(reset));
    sim.run(sim.until(reset + chrono::Duration::seconds(65)));
    assert_eq!(sim.resumes().len(), 1);
    // The answer came and went between two frames: no working signal, but the notice is gone.
    sim.input(Input::LimitNotice(None));
    assert!(sim.has(|k| matches!(k, EventKind::LimitCleared { .. })));
    sim.run(sim.secs() + 3600.0);
    assert_eq!(sim.resumes().len(), 1, "no more continuations on top of a working session");
}

#[test]
fn the_own_policy_is_not_fooled_by_the_notice_going_away_after_the_reset() {
    // Own cancelled the client's timer: nothing continues at the reset but Nightshift's resume.
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Own));
    let reset = wall0() + hours(1);
    sim.input(notice(reset));
    sim.input(idle());
    sim.run(sim.until(reset + chrono::Duration::seconds(2)));
    sim.input(Input::LimitNotice(None));
    assert_eq!(sim.m.state(), SessionState::LimitPaused, "the client continues nothing by itself");
    sim.run(sim.until(reset + chrono::Duration::seconds(65)));
    assert_eq!(sim.resumes().len(), 1, "Nightshift's own resume goes out");
    // Under watch, the client's own continuation: the notice going after the reset ends the limit.
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Watch));
    sim.input(notice(reset));
    sim.run(sim.until(reset + chrono::Duration::seconds(30)));
    sim.input(Input::LimitNotice(None));
    assert!(sim.has(|k| matches!(k, EventKind::LimitCleared { .. })));
    sim.run(sim.until(reset + hours(1)));
    assert!(sim.resumes().is_empty(), "no resume on top of the client's");
}

#[test]
fn stale_notice_dismissed() {
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Watch));
    sim.input(sample(35.0, wall0() + hours(3), 20.0, wall0() + hours(90)));
    sim.input(notice(wall0() + hours(1)));
    assert!(!sim.has(|k| matches!(k, EventKind::LimitDetected { .. })), "the data shows headroom");
    assert_ne!(sim.m.state(), SessionState::LimitPaused);
}

#[test]
fn the_limit_state_is_not_overwritten_by_the_agent_going_idle() {
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Watch));
    sim.input(notice(wall0() + hours(1)));
    sim.input(idle());
    assert_eq!(sim.m.state(), SessionState::LimitPaused, "{:?}", sim.states());
}

fn menu(stop: char, wait: char) -> Input {
    let verdict =
        Verdict { working: None, dialog: Some(Dialog::new(DialogKind::Menu, None)), prompt: false, interrupted: false };
    Input::Activity {
        transition: Transition { to: Activity::WaitingInput, reason: "menu".into(), verdict },
        menu: Some(LimitMenu {
            notice: Some("You've hit your weekly limit · resets Mon 12:00am".into()),
            stop: Some(stop),
            wait: Some(wait),
        }),
        menu_limit: Some(LimitText {
            kind: LimitKind::Weekly,
            resets_at: Some(wall0() + hours(50)),
            line: "You've hit your weekly limit · resets Mon 12:00am".into(),
        }),
    }
}

#[test]
fn the_weekly_menu_per_policy() {
    let answered = |start: Start| {
        let mut sim = Sim::new(start);
        sim.input(menu('1', '2'));
        assert!(sim.has(|k| matches!(k, EventKind::LimitDetected { kind: LimitKind::Weekly, .. })));
        let written = sim.written();
        assert!(written.len() <= 1, "the answer alone; an Escape would answer the menu too: {written:?}");
        written.first().map(|w| w[0] as char)
    };
    assert_eq!(answered(with_auto_resume(start(), resume::Policy::Watch)), Some('2'), "watch waits with the client");
    assert_eq!(answered(with_auto_resume(start(), resume::Policy::Own)), Some('1'), "own stops and resumes itself");
    let mut not_tonight = with_auto_resume(start(), resume::Policy::Watch);
    armed(&mut not_tonight).window_guard.not_tonight = true;
    assert_eq!(answered(not_tonight), Some('1'), "not tonight stops and waits");
    assert_eq!(answered(start()), None, "no auto-resume: the user answers");
    let mut held = with_auto_resume(start(), resume::Policy::Watch);
    held.from.held = true;
    assert_eq!(answered(held), None, "held: the user answers");
}

#[test]
fn not_tonight() {
    let mut s = with_respawn(with_auto_resume(start(), resume::Policy::Watch), quick_respawn());
    armed(&mut s).window_guard.not_tonight = true;
    let mut sim = Sim::new(s);
    let reset = wall0() + hours(1);
    sim.input(notice(reset));
    assert!(sim.has(|k| matches!(k, EventKind::WindowGuard { .. })));
    assert_eq!(sim.written(), [b"\x1b".to_vec()], "the client's own continuation is cancelled");
    sim.input(idle());
    sim.run(sim.until(reset + hours(1)));
    // After the reset the client's notice goes away: the limit is over, and still no cycle runs.
    sim.input(Input::LimitNotice(None));
    sim.input(idle());
    sim.run(sim.secs() + 3600.0);
    assert!(sim.resumes().is_empty());
    assert!(!sim.has(|k| matches!(k, EventKind::RespawnStep { .. })), "no cycle in the fresh window");
}

#[test]
fn reserve_guard() {
    let mut s = with_respawn(with_auto_resume(start(), resume::Policy::Watch), quick_respawn());
    armed(&mut s).window_guard.reserve_pct = Some(30.0);
    let mut sim = Sim::new(s);
    let reset = wall0() + hours(1);
    sim.input(notice(reset));
    sim.run(sim.until(reset + chrono::Duration::seconds(65)));
    sim.input(Input::TurnSeen);
    sim.input(working());
    let fresh_reset = reset + hours(5);
    sim.input(sample(50.0, fresh_reset, 30.0, wall0() + hours(90)));
    assert!(!sim.has(|k| matches!(k, EventKind::WindowGuard { .. })), "half the fresh window is fine");
    sim.input(sample(71.0, fresh_reset, 31.0, wall0() + hours(90)));
    assert!(sim.has(|k| matches!(k, EventKind::WindowGuard { .. })), "past 70 %: the rest is the user's");
    let cycles_before = sim.events().filter(|(_, k)| matches!(k, EventKind::RespawnStep { .. })).count();
    sim.input(idle());
    sim.run(sim.secs() + 600.0);
    let cycles = sim.events().filter(|(_, k)| matches!(k, EventKind::RespawnStep { .. })).count();
    assert_eq!(cycles, cycles_before, "no respawn cycle once the reserve is reached");
}

#[test]
fn hold_and_release() {
    let mut sim = Sim::new(with_respawn(with_auto_resume(start(), resume::Policy::Watch), quick_respawn()));
    let reset = wall0() + hours(1);
    sim.input(notice(reset));
    sim.input(idle());
    sim.input(Input::Configure(Change { held: Some(true), source: "the app".into(), ..Change::default() }));
    assert!(sim.has(|k| matches!(k, EventKind::Automation { change: Automation::Held, .. })));
    sim.run(sim.until(reset + hours(1)));
    assert!(sim.resumes().is_empty(), "nothing while held");
    assert!(!sim.m.options(sim.now()).keeps_awake(), "a held session lets the machine sleep");
    sim.input(Input::Configure(Change { held: Some(false), source: "the app".into(), ..Change::default() }));
    sim.run(sim.secs() + 1.0);
    assert_eq!(sim.resumes().len(), 1, "released: the overdue resume goes out at once");
}

// ---- Lives and restarts ----------------------------------------------------------------------

#[test]
fn restart_ladder() {
    // An agent that dies after 20 s, again and again: each restart waits longer.
    let mut sim = Sim::new(with_respawn(start(), quick_respawn())).agent(S(20), 1);
    sim.run(400.0);
    let exits = sim.exits();
    let gaps: Vec<f64> = sim.spawns().iter().zip(&exits).map(|(s, e)| (s - e).round()).collect();
    assert_eq!(gaps, [2.0, 10.0, 30.0, 120.0], "exits {exits:?}, spawns {:?}", sim.spawns());
}

#[test]
fn a_crash_loop_of_short_lives_opens_the_breaker_after_five() {
    let mut sim = Sim::new(with_respawn(start(), quick_respawn())).agent(Duration::from_millis(1500), 1);
    // Before its first wait is over.
    sim.run(800.0);
    assert_eq!(sim.exits().len(), 5, "five lives");
    assert_eq!(sim.spawns().len(), 4);
    let (_, kind, reason) = sim.opened().expect("the breaker opened");
    assert_eq!(kind, BreakerKind::CrashLoop);
    assert!(reason.contains("5 lives in a row ended within a minute"), "{reason}");
    assert_eq!(sim.m.state(), SessionState::BreakerOpen);
}

#[test]
fn a_long_life_clears_the_strikes() {
    let mut sim = Sim::new(with_respawn(start(), quick_respawn())).agent(Duration::from_millis(1500), 1);
    sim.run(40.0); // three short lives: 1.5 + 2 + 1.5 + 10 + 1.5 = 16.5, then 30 s back-off
    sim.agent = Some(Agent { life: S(600), code: 1 });
    sim.tree = "tree-1".into();
    sim.run(2000.0);
    assert!(sim.opened().is_none(), "a life of ten minutes is not a crash loop");
}

#[test]
fn clean_exit_ends() {
    let mut sim = Sim::new(with_respawn(start(), quick_respawn())).agent(S(30), 0);
    sim.run(100.0);
    assert!(sim.spawns().is_empty(), "the agent's exit 0 (the user's /exit) is not undone");
    assert!(sim.m.ended().is_some());
    let mut restarting = quick_respawn();
    restarting.restart_clean_exits = true;
    let mut sim = Sim::new(with_respawn(start(), restarting)).agent(S(30), 0);
    sim.run(100.0);
    assert_eq!(sim.spawns().len(), 2, "unless the settings say to restart clean exits");
}

#[test]
fn the_restart_cap() {
    // Long lives that end badly and change nothing in the working tree: ten restarts, then the
    // breaker; one restart after each of its four waits, none closing it (no progress).
    let mut sim = Sim::new(with_respawn(start(), quick_respawn())).agent(S(120), 1);
    sim.run(7.5 * 3600.0);
    assert_eq!(sim.spawns().len(), 10 + 4, "{:?}", sim.spawns());
    let (_, kind, reason) = sim.opened().expect("the breaker opened");
    assert_eq!(kind, BreakerKind::CrashLoop);
    assert!(reason.contains("10 restarts without progress"), "{reason}");
    let changes = breaker_changes(&sim, BreakerKind::CrashLoop);
    assert!(!changes.iter().any(|c| c.1 == BreakerState::Closed), "{changes:?}");
    assert_eq!(sim.m.state(), SessionState::BreakerOpen, "open for good once its waits are spent");
}

#[test]
fn progress_between_restarts_forgets_the_count() {
    let mut sim = Sim::new(with_respawn(start(), quick_respawn())).agent(S(120), 1);
    for i in 0..30 {
        sim.tree = format!("tree-{i}");
        sim.run(sim.secs() + 400.0);
    }
    assert!(sim.opened().is_none(), "every life changed the working tree");
    assert!(sim.spawns().len() > 12);
}

#[test]
fn a_stop_between_lives_ends_the_session_in_the_journal() {
    // Lives of 0.1 s open the crash-loop breaker; the user then stops the session.
    let mut sim = Sim::new(with_respawn(start(), quick_respawn())).agent(Duration::from_millis(100), 1);
    sim.run(3600.0);
    assert_eq!(sim.m.state(), SessionState::BreakerOpen);
    sim.input(Input::Stop { source: "nightshift stop".into(), kind: StopKind::User });
    assert!(sim.m.ended().is_some());
    let last = sim.states().last().copied();
    assert!(last.is_some_and(SessionState::is_final), "the journal must not be left saying {last:?}");
}

// ---- Nightshift's own end ----------------------------------------------------------------------

#[test]
fn a_shutdown_keeps_the_pending_resume() {
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Watch));
    sim.input(notice(wall0() + hours(3)));
    sim.input(Input::Stop { source: "a signal to nightshift".into(), kind: StopKind::Shutdown });
    sim.input(Input::Exited { exit: Exit::Signal { number: 1, name: "SIGHUP".into() }, last_screen: vec![] });
    assert!(sim.m.ended().is_some());
    assert!(sim.has(|k| matches!(k, EventKind::ResumeKept { .. })), "the resume is kept for the next start");
    assert!(!sim.states().last().is_some_and(|s| s.is_final()), "the journal keeps it waiting: {:?}", sim.states());
    // The user stopping it is another thing.
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Watch));
    sim.input(notice(wall0() + hours(3)));
    sim.input(Input::Stop { source: "nightshift stop".into(), kind: StopKind::User });
    sim.input(Input::Exited { exit: Exit::Signal { number: 1, name: "SIGHUP".into() }, last_screen: vec![] });
    assert!(!sim.has(|k| matches!(k, EventKind::ResumeKept { .. })));
    assert!(sim.states().last().is_some_and(|s| s.is_final()));
}

// ---- Awake -----------------------------------------------------------------------------------

#[test]
fn awake_policy_for_a_days_away_reset() {
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Watch));
    sim.input(working());
    assert!(sim.m.options(sim.now()).keeps_awake(), "a working session keeps the machine awake");
    let weekly = wall0() + hours(60);
    sim.input(Input::Activity {
        transition: Transition { to: Activity::Idle, reason: "q".into(), verdict: Verdict::default() },
        menu: None,
        menu_limit: None,
    });
    sim.input(notice(weekly));
    assert!(!sim.m.options(sim.now()).keeps_awake(), "a resume 60 h away does not hold the machine awake for days");
    // Two and a half days later (the machine slept most of it), the resume is near: held again.
    sim.sleep(hours(50));
    sim.run(sim.secs() + 10.0);
    assert!(sim.m.options(sim.now()).keeps_awake(), "within 12 h of the resume");
}

#[test]
fn awake_policy_without_automation_or_past_the_armed_duration() {
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Watch));
    sim.input(idle());
    assert!(!sim.m.options(sim.now()).keeps_awake(), "auto-resume alone with nothing due");
    let mut short = quick_respawn();
    short.duration = S(3600);
    let mut sim = Sim::new(with_respawn(with_auto_resume(start(), resume::Policy::Watch), short));
    sim.input(idle());
    assert!(sim.m.options(sim.now()).keeps_awake(), "respawn armed: a cycle is due");
    sim.input(notice(wall0() + hours(3)));
    assert!(!sim.m.options(sim.now()).keeps_awake(), "the resume falls after the armed hour");
}

#[test]
fn respawn_switched_on_later_arms_like_at_the_start() {
    let mut sim = Sim::new(start());
    sim.input(idle());
    let arm = RespawnArm { preset: Some("solo".into()), settings: quick_respawn() };
    sim.input(Input::Configure(Change { respawn: Some(Switch::On(arm)), source: "t".into(), ..Change::default() }));
    sim.run(10.0);
    assert!(sim.has(|k| matches!(k, EventKind::RespawnStep { .. })), "a cycle ran");
}

// ---- Review specs ------------------------------------------------------------------------------

fn sent_steps(sim: &Sim) -> Vec<f64> {
    sim.events()
        .filter_map(|(t, k)| {
            matches!(k, EventKind::RespawnStep { outcome: respawn::StepOutcome::Sent, .. }).then_some(t)
        })
        .collect()
}

#[test]
fn no_cycle_into_a_client_just_started_again() {
    // The agent dies at its idle prompt before the idle timeout is up; it is started again at 3 s.
    let mut settings = quick_respawn();
    settings.idle_timeout = S(10);
    let mut sim = Sim::new(with_respawn(start(), settings)).agent(S(1), 1);
    sim.input(idle());
    sim.run(1.5);
    sim.agent = Some(Agent { life: S(3600), code: 1 });
    sim.run(12.0);
    // The new client has shown nothing yet (no activity input since its start).
    let spawned = sim.spawns();
    assert_eq!(spawned.len(), 1);
    let sent = sent_steps(&sim);
    assert!(sent.is_empty(), "started again at {spawned:?}, never seen idle, yet prompts typed at {sent:?}");
}

#[test]
fn no_resume_typed_into_a_client_just_started_again() {
    // Paused on a limit with auto-resume; the agent dies after the reset and is started again.
    let mut sim = Sim::new(with_respawn(with_auto_resume(start(), resume::Policy::Own), quick_respawn()));
    let reset = wall0() + hours(1);
    sim.input(notice(reset));
    sim.input(idle());
    let dies = sim.until(reset + chrono::Duration::seconds(4));
    sim.run(dies);
    sim.input(Input::Exited { exit: Exit::Code(1), last_screen: vec![] });
    sim.run(sim.secs() + 120.0);
    let spawned = sim.spawns();
    let resumes = sim.resumes();
    assert_eq!(spawned.len(), 1);
    assert!(resumes.is_empty(), "resume at {resumes:?}, the client started at {spawned:?} and has shown nothing yet");
}

#[test]
fn an_open_crash_loop_breaker_lets_the_machine_sleep() {
    // Set to stay open until the user resets it: nothing is due.
    let settings = respawn::Settings { breaker_retry: vec![], ..quick_respawn() };
    let mut sim = Sim::new(with_respawn(start(), settings)).agent(Duration::from_millis(1500), 1);
    sim.run(3600.0);
    assert_eq!(sim.m.state(), SessionState::BreakerOpen);
    let want = sim.m.options(sim.now()).awake;
    assert!(!want.hold, "nothing will run until `nightshift breaker reset`, yet: {}", want.reason);
}

#[test]
fn cycles_come_back_once_the_fresh_window_resets() {
    let mut s = with_respawn(with_auto_resume(start(), resume::Policy::Watch), quick_respawn());
    armed(&mut s).window_guard.reserve_pct = Some(30.0);
    let mut sim = Sim::new(s);
    let reset = wall0() + hours(1);
    sim.input(notice(reset));
    sim.run(sim.until(reset + chrono::Duration::seconds(65)));
    sim.input(Input::TurnSeen);
    sim.input(working());
    let fresh_reset = reset + hours(5);
    sim.input(sample(71.0, fresh_reset, 31.0, wall0() + hours(90)));
    assert!(sim.has(|k| matches!(k, EventKind::WindowGuard { .. })));
    sim.input(idle());
    // The guarded window resets; a new one opens with all of it free, and the agent keeps showing idle.
    let after_reset = sim.until(fresh_reset + chrono::Duration::minutes(1));
    sim.run(after_reset);
    sim.input(sample(2.0, fresh_reset + hours(5), 31.0, wall0() + hours(90)));
    sim.input(working());
    sim.input(idle());
    sim.run(sim.secs() + 600.0);
    let cycles: Vec<f64> = sent_steps(&sim).into_iter().filter(|t| *t > after_reset).collect();
    assert!(
        !cycles.is_empty(),
        "the reserve was of a window that has reset; still blocked: {:?}",
        sim.m.options(sim.now()).awake
    );
}

#[test]
fn the_clients_own_continuation_is_not_typed_over() {
    // Respawn and auto-resume (watch): the agent sits idle under its limit notice; at the reset the
    // client continues by itself and the agent starts working.
    let mut sim = Sim::new(with_respawn(with_auto_resume(start(), resume::Policy::Watch), quick_respawn()));
    let reset = wall0() + hours(1);
    sim.input(working());
    sim.input(notice(reset));
    sim.input(idle());
    sim.run(sim.until(reset + chrono::Duration::seconds(30)));
    assert!(sent_steps(&sim).is_empty());
    let at = sim.secs();
    sim.input(working());
    let typed: Vec<Vec<u8>> = sim
        .log
        .iter()
        .filter(|(t, _)| *t >= at)
        .filter_map(|(_, e)| if let Effect::Write { bytes, .. } = e { Some(bytes.clone()) } else { None })
        .collect();
    let shown: Vec<String> = typed.iter().map(|b| String::from_utf8_lossy(b).chars().take(40).collect()).collect();
    assert!(typed.is_empty(), "typed into the agent the moment it started working: {shown:?}");
}

#[test]
fn a_kept_resume_is_the_last_word() {
    // A weekly reset 60 h away (the machine may sleep: `far`), then Nightshift ends.
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Watch));
    sim.input(idle());
    sim.input(notice(wall0() + hours(60)));
    assert!(!sim.m.options(sim.now()).keeps_awake());
    sim.input(Input::Stop { source: "SIGTERM to nightshift".into(), kind: StopKind::Shutdown });
    sim.input(Input::Exited { exit: Exit::Signal { number: 1, name: "SIGHUP".into() }, last_screen: vec![] });
    assert!(sim.has(|k| matches!(k, EventKind::ResumeKept { .. })));
    let last = sim.events().last().map(|(_, k)| k.name());
    assert_eq!(last, Some("resume_kept"), "the store's standing reads `kept` off the last event");
}

// ---- The client's hooks ------------------------------------------------------------------------

fn hook(event: crate::hooks::Event) -> Input {
    Input::Hook {
        hook: crate::hooks::Hook { conversation: Some("conv-1".into()), event },
        limit: None,
        facts: None,
        seen: None,
    }
}

fn stop(continued: bool, message: &str) -> Input {
    hook(crate::hooks::Event::Stop { continued, last_message: Some(message.into()) })
}

fn context(pct: f64) -> Input {
    Input::Sample(Sample { context_pct: Some(pct), ..Sample::default() })
}

impl Sim {
    fn answers(&self) -> Vec<crate::hooks::Answer> {
        self.log.iter().filter_map(|(_, e)| if let Effect::Answer(a) = e { Some(a.clone()) } else { None }).collect()
    }

    /// The texts typed, each automated one as it reads after its marker.
    fn typed(&self) -> Vec<String> {
        self.typed_raw().iter().map(|t| said(t).to_string()).collect()
    }

    /// The texts typed, markers and all.
    fn typed_raw(&self) -> Vec<String> {
        self.written().iter().map(|b| String::from_utf8_lossy(b).into_owned()).filter(|t| t.len() > 1).collect()
    }
}

/// What an input reads as after its automated marker, when it has one.
fn said(text: &str) -> &str {
    match text.strip_prefix(crate::automated::MARKER) {
        Some(rest) => rest.split_once("] ").map_or(text, |(_, said)| said),
        None => text,
    }
}

const HANDOFF: &str = "Handoff: the parser is done and tested; next, wire it into the CLI; check the flaky test first.";

#[test]
fn a_restart_resumes_the_conversation_its_hooks_named() {
    let mut sim = Sim::new(with_respawn(start(), quick_respawn())).agent(S(120), 1);
    sim.input(hook(crate::hooks::Event::SessionStart { source: "startup".into() }));
    assert!(sim.has(|k| matches!(k, EventKind::Conversation { id } if id == "conv-1")));
    sim.run(130.0);
    let spawn = sim.log.iter().find_map(|(_, e)| {
        if let Effect::Spawn { conversation, .. } = e {
            Some(conversation.clone())
        } else {
            None
        }
    });
    assert_eq!(spawn, Some(Some("conv-1".into())), "claude --resume conv-1, not the directory's latest");
}

#[test]
fn the_options_say_the_guard_cannot_refuse_codexs_commands() {
    let mut s = start();
    s.guard = Some(std::sync::Arc::new(crate::hooks::guard::Rules::builtin()));
    let claude = Sim::new(s.clone()).m.options_at(Sim::new(start()).now()).guard.unwrap_or_default();
    assert!(claude.starts_with("on: refuses"), "{claude}");
    contract(&mut s, |c| c.agent = AgentKind::Codex);
    s.sandbox = Some("sandboxed".into());
    let codex = Sim::new(s).m.options_at(Sim::new(start()).now()).guard.unwrap_or_default();
    assert!(codex.contains("cannot refuse Codex's commands") && codex.contains("its sandbox"), "{codex}");
    assert_eq!(Sim::new(start()).m.options_at(Sim::new(start()).now()).guard, None, "no guard armed");
}

#[test]
fn codex_notify_names_the_conversation_and_a_limit_on_its_screen_pauses_at_once() {
    let mut s = with_auto_resume(with_respawn(start(), quick_respawn()), resume::Policy::Watch);
    contract(&mut s, |c| c.agent = AgentKind::Codex);
    let mut sim = Sim::new(s);
    sim.input(working());
    sim.input(hook(crate::hooks::Event::TurnComplete { last_message: Some("Done.".into()), input: vec![] }));
    sim.input(idle());
    assert!(sim.has(|k| matches!(k, EventKind::Conversation { id } if id == "conv-1")));
    assert!(sim.answers().iter().all(|a| *a == crate::hooks::Answer::Pass), "Codex reads no answer");
    // Codex says nothing of a limit through notify: its screen's notice is the word, not held for
    // a hook that will never come.
    sim.input(working());
    sim.input(notice(wall0() + hours(2)));
    assert_eq!(sim.m.state(), SessionState::LimitPaused);
    assert!(sim.has(|k| matches!(k, EventKind::LimitDetected { source: Source::Text, .. })));
}

#[test]
fn a_rate_limit_the_client_reports_through_its_hook_pauses_the_session() {
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Watch));
    let reset = wall0() + hours(2);
    let limit = LimitText {
        kind: LimitKind::FiveHour,
        resets_at: Some(reset),
        line: "You've hit your 5-hour limit · resets 2:33am (UTC)".into(),
    };
    sim.input(Input::Hook {
        hook: crate::hooks::Hook {
            conversation: None,
            event: crate::hooks::Event::StopFailure {
                error: "rate_limit".into(),
                last_message: Some(limit.line.clone()),
            },
        },
        limit: Some(limit),
        facts: None,
        seen: None,
    });
    assert!(sim.has(
        |k| matches!(k, EventKind::LimitDetected { source: Source::Hook, resets_at: Some(r), .. } if *r == reset)
    ));
    assert_eq!(sim.m.state(), SessionState::LimitPaused);
}

#[test]
fn with_hooks_the_screens_notice_waits_a_moment_for_the_clients_own_word() {
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Watch));
    sim.input(hook(crate::hooks::Event::SessionStart { source: "startup".into() }));
    let reset = wall0() + hours(2);
    sim.input(notice(reset));
    assert!(!sim.has(|k| matches!(k, EventKind::LimitDetected { .. })), "held for the hook");
    let limit =
        LimitText { kind: LimitKind::FiveHour, resets_at: Some(reset), line: "You've hit your 5-hour limit".into() };
    sim.input(Input::Hook {
        hook: crate::hooks::Hook {
            conversation: None,
            event: crate::hooks::Event::StopFailure {
                error: "rate_limit".into(),
                last_message: Some(limit.line.clone()),
            },
        },
        limit: Some(limit),
        facts: None,
        seen: None,
    });
    let sources: Vec<Source> = sim
        .events()
        .filter_map(|(_, k)| if let EventKind::LimitDetected { source, .. } = k { Some(*source) } else { None })
        .collect();
    assert_eq!(sources, [Source::Hook]);
    // No hook comes: after the grace the screen's notice stands.
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Watch));
    sim.input(hook(crate::hooks::Event::SessionStart { source: "startup".into() }));
    sim.input(notice(reset));
    sim.run(2.0);
    assert!(sim.has(|k| matches!(k, EventKind::LimitDetected { source: Source::Text, .. })));
}

#[test]
fn the_guard_refuses_what_an_unattended_session_must_not_run() {
    let mut s = start();
    s.guard = Some(std::sync::Arc::new(crate::hooks::guard::Rules::builtin()));
    let mut sim = Sim::new(s);
    let facts = crate::hooks::guard::Facts { cwd: "/w".into(), tree: "/w".into(), ..Default::default() }
        .with_repo(std::path::Path::new("/w"), (Some("main".into()), Some("main".into())));
    let tool = |command: &str| Input::Hook {
        hook: crate::hooks::Hook {
            conversation: None,
            event: crate::hooks::Event::PreToolUse {
                tool: "Bash".into(),
                input: serde_json::json!({"command": command}),
                cwd: None,
            },
        },
        limit: None,
        facts: Some(facts.clone()),
        seen: None,
    };
    sim.input(tool("git push --force origin main"));
    assert!(
        matches!(sim.answers().last(), Some(crate::hooks::Answer::Deny { reason }) if reason.contains("force push"))
    );
    assert!(sim.has(|k| matches!(k, EventKind::GuardDenied { rule, .. } if rule == "force_push")));
    sim.input(tool("cargo test"));
    assert_eq!(sim.answers().last(), Some(&crate::hooks::Answer::Pass));
    let mut unguarded = Sim::new(start());
    unguarded.input(tool("git push --force origin main"));
    assert_eq!(unguarded.answers().last(), Some(&crate::hooks::Answer::Pass), "the guard is opt-in");
}

#[test]
fn a_sandboxed_sessions_commands_are_journalled_and_a_refusal_of_the_sandbox_is_told() {
    let mut sim = Sim::new(start());
    let ended = |command: &str, error: Option<&str>| {
        hook(crate::hooks::Event::ToolEnded {
            tool: "Bash".into(),
            input: serde_json::json!({"command": command}),
            error: error.map(String::from),
        })
    };
    sim.input(ended("echo kept >> inside.txt", None));
    sim.input(ended("echo x > ~/out.txt", Some("Exit code 1\n/bin/bash: /home/u/out.txt: Read-only file system")));
    sim.input(ended("cargo test", Some("Exit code 101\ntest failed")));
    assert!(sim.has(|k| matches!(k, EventKind::SandboxCommand { command, failed: None, blocked: false } if command == "echo kept >> inside.txt")));
    assert!(sim.has(
        |k| matches!(k, EventKind::SandboxCommand { blocked: true, failed: Some(f), .. } if f.contains("Read-only"))
    ));
    assert!(sim.has(|k| matches!(k, EventKind::SandboxCommand { command, blocked: false, failed: Some(_) } if command == "cargo test")));
    assert_eq!(sim.answers().last(), Some(&crate::hooks::Answer::Pass), "the hook only tells");
}

#[test]
fn a_command_the_fence_refused_is_journalled_as_blocked_though_it_exited_zero() {
    let fence = crate::session::FenceView {
        fence: crate::agent::Fence::Project,
        hosts: vec![crate::event::FencedHost { host: "git.example".into(), why: "the remote origin".into() }],
        warnings: Vec::new(),
        refused: Vec::new(),
    };
    let mut sim = Sim::new(Start { fence: Some(fence), ..start() });
    let ended = |command: &str| {
        hook(crate::hooks::Event::ToolEnded {
            tool: "Bash".into(),
            input: serde_json::json!({"command": command}),
            error: None,
        })
    };
    // `curl … || true` hid the refusal from the exit code; the proxy told of it while it ran.
    let tried = "curl -s https://stranger.example/ || true";
    sim.input(Input::NetRefused { host: "stranger.example".into(), port: 443, command: Some(tried.into()) });
    sim.input(ended(tried));
    sim.input(ended("git push origin HEAD"));
    assert!(sim
        .has(|k| matches!(k, EventKind::SandboxCommand { command, blocked: true, failed: None } if command == tried)));
    assert!(sim.has(
        |k| matches!(k, EventKind::SandboxCommand { command, blocked: false, .. } if command == "git push origin HEAD")
    ), "the next command starts anew");
    assert!(sim.has(|k| matches!(k, EventKind::NetRefused { host, .. } if host == "stranger.example")));
    let options = sim.m.options_at(sim.now());
    assert_eq!(options.fence.unwrap().refused, [("stranger.example".to_string(), 1)]);
}

#[test]
fn a_handoff_is_asked_at_the_threshold_kept_and_given_back_after_the_reset() {
    let mut sim = Sim::new(with_respawn(start(), quick_respawn()));
    sim.input(working());
    sim.input(context(81.0));
    sim.input(stop(false, "Done with step 3."));
    let asked = sim.answers().last().cloned();
    assert!(
        matches!(&asked, Some(crate::hooks::Answer::Block { reason }) if reason.contains("handoff") && reason.contains("81%")),
        "{asked:?}"
    );
    // The model answers the block with its handoff; that Stop passes.
    sim.input(stop(true, HANDOFF));
    assert_eq!(sim.answers().last(), Some(&crate::hooks::Answer::Pass));
    assert!(sim.log.iter().any(|(_, e)| matches!(e, Effect::SaveHandoff { text } if text == HANDOFF)));
    // At the prompt: the reset comes at once, with no update step (the handoff is written).
    sim.input(idle());
    sim.run(sim.secs() + 0.5);
    assert_eq!(sim.typed().first().map(String::as_str), Some("/clear"), "{:?}", sim.typed());
    sim.input(hook(crate::hooks::Event::SessionStart { source: "clear".into() }));
    let given = sim.answers().last().cloned();
    assert!(matches!(&given, Some(crate::hooks::Answer::Context { text }) if text.contains(HANDOFF)), "{given:?}");
    sim.run(sim.secs() + 120.0);
    let kick = sim.typed().into_iter().find(|t| t.starts_with("Continue the work"));
    assert!(kick.is_some_and(|k| k.contains("handoff") && k.contains("the parser is done")), "{:?}", sim.typed());
}

/// One handoff, one conversation: the one after its reset receives it; the cycles after that
/// start from the progress note and the repository, as the kickstart says, not from it again.
#[test]
fn a_handoff_is_given_to_the_conversation_after_it_and_to_no_later_one() {
    let mut sim = Sim::new(with_respawn(start(), quick_respawn()));
    sim.input(working());
    sim.input(context(81.0));
    sim.input(stop(false, "Done with step 3."));
    sim.input(stop(true, HANDOFF));
    sim.input(idle());
    sim.run(sim.secs() + 0.5);
    sim.input(hook(crate::hooks::Event::SessionStart { source: "clear".into() }));
    sim.input(context(5.0));
    // Three more cycles within a few minutes of it, each with its own /clear.
    for cycle in 0..3 {
        sim.run(sim.secs() + 40.0);
        sim.input(working());
        sim.input(stop(false, "Did a step."));
        sim.input(idle());
        sim.run(sim.secs() + 40.0);
        sim.input(hook(crate::hooks::Event::SessionStart { source: "clear".into() }));
        let answer = sim.answers().last().cloned();
        assert_eq!(answer, Some(crate::hooks::Answer::Pass), "cycle {cycle} is not given the handoff again");
    }
    let given = sim.events().filter(|(_, k)| matches!(k, EventKind::HandoffGiven { .. })).count();
    assert_eq!(given, 1, "given to one conversation");
    let kicks: Vec<String> = sim.typed().into_iter().filter(|t| t.starts_with("Continue the work")).collect();
    assert!(kicks.len() >= 2, "{kicks:?}");
    assert!(kicks[1..].iter().all(|k| !k.contains("the parser is done")), "later kickstarts: {kicks:?}");
}

#[test]
fn a_handoff_due_after_the_turn_is_asked_by_the_cycle() {
    // The statusLine reports the context after the Stop: the cycle's update step asks instead.
    let mut sim = Sim::new(with_respawn(start(), quick_respawn()));
    sim.input(working());
    sim.input(stop(false, "Done."));
    sim.input(idle());
    sim.input(context(90.0));
    sim.run(4.0);
    let first = sim.typed().first().cloned().unwrap_or_default();
    assert!(first.contains("handoff for your next self"), "{first:?}");
    sim.input(working());
    sim.input(stop(false, HANDOFF));
    assert!(sim.log.iter().any(|(_, e)| matches!(e, Effect::SaveHandoff { .. })));
}

#[test]
fn a_cycle_types_the_agents_own_reset_and_init_commands() {
    let mut s = with_respawn(start(), quick_respawn());
    s.commands = crate::agent::CycleCommands { clear: "/new".into(), init: "/init --force".into() };
    let mut sim = Sim::new(s);
    sim.input(working());
    sim.input(idle());
    sim.run(40.0);
    let typed = sim.typed();
    assert!(typed.iter().any(|t| t == "/new") && typed.iter().any(|t| t == "/init --force"), "{typed:?}");
    assert!(!typed.iter().any(|t| t == "/clear" || t == "/init"), "{typed:?}");
}

#[test]
fn a_codex_handoff_is_asked_by_the_cycle_and_its_kickstart_carries_it_whole_each_time() {
    let mut s = with_respawn(start(), quick_respawn());
    contract(&mut s, |c| c.agent = AgentKind::Codex);
    let mut sim = Sim::new(s);
    let turn_end =
        |text: &str| hook(crate::hooks::Event::TurnComplete { last_message: Some(text.into()), input: vec![] });
    for round in 0..2 {
        // A turn ends with the context past the threshold (its notify brings the reading first).
        sim.input(working());
        sim.input(context(if round == 0 { 90.0 } else { 80.0 }));
        sim.input(idle());
        sim.input(turn_end("Done."));
        let before = sim.typed().len();
        sim.run(sim.secs() + 4.0);
        let asked = sim.typed().get(before).cloned().unwrap_or_default();
        assert!(asked.contains("handoff for your next self"), "round {round}: {asked:?}");
        sim.input(working());
        sim.input(idle());
        sim.input(turn_end(HANDOFF));
        sim.run(sim.secs() + 30.0);
        let kick =
            sim.typed().into_iter().skip(before).find(|t| t.starts_with("Continue the work")).unwrap_or_default();
        assert!(kick.ends_with(HANDOFF), "round {round}: the whole handoff, nothing else gives it to Codex: {kick}");
        // The fresh thread starts low: the next handoff is due at the threshold again.
        sim.input(context(10.0));
    }
    let given =
        sim.events().filter(|(_, k)| matches!(k, EventKind::HandoffGiven { source } if source == "kickstart")).count();
    assert_eq!(given, 2);
}

#[test]
fn an_agent_that_will_not_write_a_handoff_is_asked_three_times_then_let_go() {
    let mut sim = Sim::new(with_respawn(start(), quick_respawn()));
    sim.input(context(80.0));
    sim.input(stop(false, "Done."));
    for _ in 0..3 {
        sim.input(stop(true, "OK."));
    }
    let blocks = sim.answers().iter().filter(|a| matches!(a, crate::hooks::Answer::Block { .. })).count();
    assert_eq!(blocks, 3, "asked once, then twice more");
    assert!(sim.has(|k| matches!(k, EventKind::HandoffMissing { times: 3 })));
    assert_eq!(sim.answers().last(), Some(&crate::hooks::Answer::Pass), "then it is let go");
}

/// The rule of a later start's prompt: the opening prompt starts the first conversation only; a
/// restart goes on with the kickstart, naming a handoff written within 15 minutes.
#[test]
fn a_restart_soon_after_a_handoff_starts_from_it() {
    let mut sim = Sim::new(with_respawn(start(), quick_respawn())).agent(S(600), 1);
    sim.input(context(80.0));
    sim.input(stop(false, "Done."));
    sim.input(stop(true, HANDOFF));
    sim.run(700.0);
    let prompt =
        sim.log
            .iter()
            .find_map(|(_, e)| if let Effect::Spawn { prompt, .. } = e { Some(prompt.clone()) } else { None });
    let prompt = prompt.flatten().unwrap_or_default();
    let prompt = said(&prompt);
    assert!(prompt.starts_with(respawn::DEFAULT_KICKSTART_PROMPT), "the kickstart: {prompt}");
    assert!(prompt.contains(HANDOFF), "names a handoff 10 minutes old: {prompt}");
    let mut later = Sim::new(with_respawn(start(), quick_respawn())).agent(S(1200), 1);
    later.input(context(80.0));
    later.input(stop(false, "Done."));
    later.input(stop(true, HANDOFF));
    later.run(1300.0);
    let prompt =
        later
            .log
            .iter()
            .find_map(|(_, e)| if let Effect::Spawn { prompt, .. } = e { Some(prompt.clone()) } else { None });
    let prompt = prompt.flatten().map(|p| said(&p).to_string());
    assert_eq!(prompt.as_deref(), Some(respawn::DEFAULT_KICKSTART_PROMPT), "one 20 minutes old is not named");
}

#[test]
fn a_restart_goes_on_with_the_kickstart_and_never_types_into_a_refused_window() {
    // No respawn cycles armed to go on with, no handoff: a restart starts the client with nothing.
    let mut settings = quick_respawn();
    settings.kickstart_prompt = String::new();
    let mut sim = Sim::new(with_respawn(start(), settings)).agent(S(60), 1);
    sim.run(70.0);
    let prompts: Vec<_> = sim
        .log
        .iter()
        .filter_map(|(_, e)| if let Effect::Spawn { prompt, .. } = e { Some(prompt.clone()) } else { None })
        .collect();
    assert_eq!(prompts.first(), Some(&None));
    // Paused on a limit whose reset is ahead: the restarted client is given no prompt (it would
    // be refused); the resume says it after the reset.
    let mut sim = Sim::new(with_respawn(with_auto_resume(start(), resume::Policy::Watch), quick_respawn()));
    sim.input(notice(wall0() + hours(2)));
    sim.input(Input::Exited { exit: Exit::Code(1), last_screen: vec![] });
    sim.run(120.0);
    let prompts: Vec<_> = sim
        .log
        .iter()
        .filter_map(|(_, e)| if let Effect::Spawn { prompt, .. } = e { Some(prompt.clone()) } else { None })
        .collect();
    assert_eq!(prompts, [None], "started again with no prompt while the limit holds");
}

// ---- The budget --------------------------------------------------------------------------------

fn spent(cost: f64, tokens: u64) -> Input {
    Input::Sample(Sample { cost_usd: Some(cost), tokens: Some(tokens), ..Sample::default() })
}

#[test]
fn a_terminal_session_over_its_budget_is_stopped_and_not_restarted() {
    let mut s = with_respawn(start(), quick_respawn());
    armed(&mut s).budget = crate::breaker::Budget { max_cost_usd: Some(1.0), ..crate::breaker::Budget::default() };
    let mut sim = Sim::new(s);
    sim.input(spent(0.6, 1000));
    // /clear starts the statusLine's count again: the money spent before still counts.
    sim.input(spent(0.3, 500));
    assert!(sim.opened().is_none(), "$0.90 of $1.00");
    sim.input(spent(0.45, 800));
    let (_, breaker, reason) = sim.opened().expect("the budget breaker");
    assert_eq!((breaker, reason.as_str()), (BreakerKind::Budget, "spent $1.05 of its $1.00"));
    assert!(sim.log.iter().any(|(_, e)| *e == Effect::Signal(Signal::Hangup)), "the agent is stopped");
    sim.input(Input::Exited { exit: Exit::Code(129), last_screen: vec![] });
    sim.run(600.0);
    assert!(sim.spawns().is_empty(), "a budget stop is the user's stop: no restart");
    assert!(sim.m.ended().is_some());
}

#[test]
fn the_token_and_time_ceilings_of_a_terminal_session() {
    let mut s = start();
    armed(&mut s).budget = crate::breaker::Budget { max_tokens: Some(10_000), ..crate::breaker::Budget::default() };
    let mut sim = Sim::new(s);
    sim.input(spent(0.1, 9_000));
    assert!(sim.opened().is_none());
    sim.input(spent(0.1, 10_001));
    assert_eq!(sim.opened().unwrap().2, "used 10001 tokens of its 10000");

    let mut s = start();
    armed(&mut s).budget =
        crate::breaker::Budget { max_wall_clock: Some(S(3600)), ..crate::breaker::Budget::default() };
    let mut sim = Sim::new(s);
    sim.run(1800.0);
    assert!(sim.opened().is_none());
    // The machine sleeps through the rest: the bound is on the wall clock, checked when it wakes.
    sim.sleep(hours(2));
    sim.input(Input::Tick);
    assert_eq!(sim.opened().unwrap().2, "ran its 1h");
}

fn salvages(sim: &Sim) -> Vec<String> {
    sim.log
        .iter()
        .filter_map(|(_, e)| if let Effect::Salvage { reason } = e { Some(reason.clone()) } else { None })
        .collect()
}

#[test]
fn a_life_that_ends_badly_or_is_stopped_is_salvaged_and_a_clean_exit_is_not() {
    let mut crashed = Sim::new(start()).agent(S(30), 1);
    crashed.run(60.0);
    assert_eq!(salvages(&crashed), ["the agent exited with code 1"]);

    let mut clean = Sim::new(start()).agent(S(30), 0);
    clean.run(60.0);
    assert!(salvages(&clean).is_empty(), "the agent's own end");

    let mut stopped = Sim::new(start());
    stopped.input(Input::Stop { source: "nightshift stop".into(), kind: StopKind::User });
    stopped.input(Input::Exited { exit: Exit::Code(0), last_screen: vec![] });
    assert_eq!(salvages(&stopped), ["stopped (nightshift stop)"]);
}

#[test]
fn a_cycle_salvages_before_its_clear() {
    let mut sim = Sim::new(with_respawn(start(), quick_respawn()));
    sim.input(working());
    sim.input(idle());
    sim.run(600.0);
    let clear =
        sim.log.iter().position(|(_, e)| matches!(e, Effect::Write { bytes, .. } if bytes.starts_with(b"/clear")));
    let salvage = sim.log.iter().position(|(_, e)| matches!(e, Effect::Salvage { .. }));
    let (Some(clear), Some(salvage)) = (clear, salvage) else { panic!("a /clear and a salvage: {:?}", salvages(&sim)) };
    assert!(salvage < clear, "the snapshot is taken before the /clear is typed");
    assert_eq!(salvages(&sim)[0], "before respawn cycle 1's /clear");
}

// ---- Switching accounts before the limit -------------------------------------------------------

fn account(name: &str) -> crate::agent::Account {
    crate::agent::Account { name: name.into(), dir: format!("/accounts/{name}").into() }
}

/// A session on account `a` that may move to `b` or `c` at 90 %, its client's hooks heard.
fn switching(s: Start) -> Sim {
    let mut s = s;
    contract(&mut s, |c| c.account = Some(account("a")));
    armed(&mut s).switch = Some(SwitchSettings {
        threshold: 90.0,
        accounts: vec![account("a"), account("b"), account("c")],
        ahead: true,
        at_limit: false,
    });
    let mut sim = Sim::new(s);
    sim.input(hook(crate::hooks::Event::SessionStart { source: "startup".into() }));
    sim
}

/// The account at 91 %, then a turn's end and the handoff it asks for.
fn handed_off_at_91(sim: &mut Sim) {
    sim.input(sample(91.0, wall0() + hours(2), 40.0, wall0() + hours(72)));
    sim.input(stop(false, "Done."));
    sim.input(stop(true, HANDOFF));
}

fn meter(name: &str, five: f64, seven: f64) -> Meter {
    Meter {
        account: Some(name.into()),
        sample: Sample {
            five_hour_pct: Some(five),
            five_hour_resets_at: Some(wall0() + hours(2)),
            seven_day_pct: Some(seven),
            seven_day_resets_at: Some(wall0() + hours(72)),
            ..Sample::default()
        },
        logged_out: None,
    }
}

impl Sim {
    fn switches(&self) -> Vec<(crate::event::SwitchAction, Option<String>, Option<String>)> {
        self.events()
            .filter_map(|(_, k)| match k {
                EventKind::AccountSwitch { action, from, to, .. } => Some((*action, from.clone(), to.clone())),
                _ => None,
            })
            .collect()
    }

    fn switched_to(&self) -> Vec<(String, Option<String>)> {
        self.log
            .iter()
            .filter_map(|(_, e)| match e {
                Effect::SwitchAccount { account, prompt } => {
                    Some((account.name.clone(), prompt.as_deref().map(|p| said(p).to_string())))
                }
                _ => None,
            })
            .collect()
    }

    fn signalled(&self) -> bool {
        self.log.iter().any(|(_, e)| matches!(e, Effect::Signal(Signal::Hangup)))
    }
}

#[test]
fn an_account_at_the_threshold_moves_after_the_turn_and_its_handoff_to_the_most_headroom() {
    use crate::event::SwitchAction::*;
    let mut sim = switching(start());
    sim.meters = vec![meter("b", 60.0, 30.0), meter("c", 20.0, 50.0), meter("a", 91.0, 40.0)];
    sim.input(working());
    sim.input(sample(89.0, wall0() + hours(2), 40.0, wall0() + hours(72)));
    assert!(sim.switches().is_empty(), "89% is under the threshold");
    sim.input(sample(91.0, wall0() + hours(2), 40.0, wall0() + hours(72)));
    // c has 50% left (its 7-day window), b 40%: c it is — but not in the middle of the turn.
    assert_eq!(sim.switches(), [(Due, Some("a".into()), Some("c".into()))]);
    assert!(!sim.signalled(), "never mid-turn");
    sim.input(stop(false, "Done with step 3."));
    let asked = sim.answers().last().cloned();
    assert!(matches!(&asked, Some(crate::hooks::Answer::Block { reason }) if reason.contains("handoff")), "{asked:?}");
    assert!(!sim.signalled(), "the handoff comes first");
    sim.input(stop(true, HANDOFF));
    assert_eq!(sim.answers().last(), Some(&crate::hooks::Answer::Pass));
    assert!(sim.signalled(), "stopped at the turn's end to move");
    assert_eq!(sim.switches().last(), Some(&(Switched, Some("a".into()), Some("c".into()))));
    // The old client's last hooks still name a's conversation: not the session's any more.
    sim.input(hook(crate::hooks::Event::SessionEnd { reason: "other".into() }));
    sim.input(Input::Exited { exit: Exit::Code(129), last_screen: vec![] });
    sim.run(sim.secs() + 1.0);
    let moved = sim.switched_to();
    assert_eq!(moved.len(), 1, "{moved:?}");
    assert_eq!(moved[0].0, "c");
    assert!(moved[0].1.as_deref().is_some_and(|p| p.contains(HANDOFF)), "it starts from the handoff: {moved:?}");
    assert!(!sim.log.iter().any(|(_, e)| matches!(e, Effect::Spawn { .. })), "no resume of a's conversation");
    assert_eq!(sim.m.client.conversation(), None);
    assert!(sim.m.is_live(), "the session goes on");
    assert_eq!(sim.states().last(), Some(&SessionState::Running), "{:?}", sim.states());
    assert!(!sim.log.iter().any(|(_, e)| matches!(e, Effect::Salvage { .. })), "the working tree goes on as it is");
    // The new client's SessionStart gives the handoff back.
    sim.input(hook(crate::hooks::Event::SessionStart { source: "startup".into() }));
    let given = sim.answers().last().cloned();
    assert!(matches!(&given, Some(crate::hooks::Answer::Context { text }) if text.contains(HANDOFF)), "{given:?}");
    assert_eq!(sim.m.options_at(sim.now()).account_switch.and_then(|v| v.account), Some("c".into()));
}

/// A Codex session on account a, at 91 %, that may move to b (at 20 %) at 90 %.
fn codex_switching() -> Sim {
    let mut s = start();
    contract(&mut s, |c| c.agent = AgentKind::Codex);
    contract(&mut s, |c| c.account = Some(account("a")));
    armed(&mut s).switch = Some(SwitchSettings {
        threshold: 90.0,
        accounts: vec![account("a"), account("b")],
        ahead: true,
        at_limit: false,
    });
    let mut sim = Sim::new(s);
    sim.meters = vec![meter("b", 20.0, 20.0), meter("a", 91.0, 40.0)];
    sim
}

#[test]
fn a_codex_account_at_the_threshold_is_asked_its_handoff_at_the_prompt_and_moves_with_all_of_it() {
    use crate::event::SwitchAction::*;
    let mut sim = codex_switching();
    let turn_end =
        |text: &str| hook(crate::hooks::Event::TurnComplete { last_message: Some(text.into()), input: vec![] });
    // A turn ends: Codex's notify brings the rollout's figures first, then the turn's end.
    sim.input(working());
    sim.input(sample(91.0, wall0() + hours(2), 40.0, wall0() + hours(72)));
    assert_eq!(sim.switches(), [(Due, Some("a".into()), Some("b".into()))]);
    sim.input(idle());
    assert!(!sim.signalled() && sim.typed().is_empty(), "nothing before the turn's end is heard");
    sim.input(turn_end("Done with step 3."));
    // No hook holds Codex's turn: the request is typed at its prompt.
    assert!(sim.typed().last().is_some_and(|t| t.contains("handoff")), "{:?}", sim.typed());
    assert!(sim.has(|k| matches!(k, EventKind::HandoffAsked { times: 1 })));
    assert!(!sim.signalled(), "the handoff comes first");
    sim.input(working());
    sim.input(idle());
    sim.input(turn_end("ok"));
    assert!(sim.has(|k| matches!(k, EventKind::HandoffAsked { times: 2 })), "too short to be one: asked again");
    sim.input(working());
    sim.input(idle());
    sim.input(turn_end(HANDOFF));
    assert!(sim.signalled(), "stopped at the turn's end to move");
    assert_eq!(sim.switches().last(), Some(&(Switched, Some("a".into()), Some("b".into()))));
    sim.input(Input::Exited { exit: Exit::Code(0), last_screen: vec![] });
    sim.run(sim.secs() + 1.0);
    let moved = sim.switched_to();
    assert_eq!(moved.len(), 1, "{moved:?}");
    // A fresh Codex thread has nothing to give the handoff back: its first prompt carries all of it.
    let prompt = moved[0].1.clone().unwrap_or_default();
    assert!(prompt.starts_with("Continue the work from your handoff") && prompt.ends_with(HANDOFF), "{prompt}");
    assert!(sim.has(|k| matches!(k, EventKind::HandoffGiven { source } if source == "prompt")));
    assert_eq!(sim.m.client.conversation(), None, "a's thread is not resumed");
}

#[test]
fn a_codex_handoff_request_waits_for_the_prompt_when_the_notify_comes_before_it() {
    let mut sim = codex_switching();
    sim.input(working());
    sim.input(sample(91.0, wall0() + hours(2), 40.0, wall0() + hours(72)));
    // Codex's notify says the turn ended while its screen still finishes it: text typed now can
    // be lost (0.171.0 takes keys only once it has drawn its prompt again).
    sim.input(hook(crate::hooks::Event::TurnComplete {
        last_message: Some("Done with step 3.".into()),
        input: vec![],
    }));
    assert!(sim.typed().is_empty(), "nothing typed before the prompt is back: {:?}", sim.typed());
    sim.input(idle());
    assert!(sim.typed().last().is_some_and(|t| t.contains("handoff")), "typed at the prompt: {:?}", sim.typed());
    assert_eq!(sim.typed().len(), 1, "once");
    assert!(sim.has(|k| matches!(k, EventKind::HandoffAsked { times: 1 })));
    // Its turn has not begun 3 s later: the Enter was lost to a busy client, and is pressed again.
    let enters = |sim: &Sim| sim.written().iter().filter(|b| b.as_slice() == b"\r").count();
    let before = enters(&sim);
    sim.run(sim.secs() + 4.0);
    assert_eq!(enters(&sim), before + 1, "one more Enter");
    sim.run(sim.secs() + 10.0);
    assert_eq!(enters(&sim), before + 1, "only once");
    assert_eq!(sim.typed().len(), 1, "the request is not typed again");
}

#[test]
fn with_no_usable_account_the_session_stays_and_holds_until_the_window_resets() {
    use crate::event::SwitchAction::*;
    let mut sim = switching(start());
    // b is as full; c's meter is not known.
    sim.meters = vec![meter("b", 95.0, 30.0)];
    let reset = wall0() + hours(2);
    sim.input(sample(91.0, reset, 40.0, wall0() + hours(72)));
    let held: Vec<_> = sim
        .events()
        .filter_map(|(_, k)| match k {
            EventKind::AccountSwitch { action: Held, until, reason, .. } => Some((*until, reason.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(held.len(), 1, "{:?}", sim.switches());
    assert_eq!(held[0].0, Some(reset), "held until the window resets");
    assert!(held[0].1.contains("10%"), "{}", held[0].1);
    sim.input(stop(false, "Done."));
    assert_eq!(sim.answers().last(), Some(&crate::hooks::Answer::Pass), "no handoff is asked");
    let looks = |sim: &Sim| sim.log.iter().filter(|(_, e)| matches!(e, Effect::Meters { .. })).count();
    sim.input(sample(96.0, reset, 40.0, wall0() + hours(72)));
    assert_eq!(looks(&sim), 1, "no second look in the same window");
    assert!(!sim.signalled());
    // The next window: b has reset since, so it has room now.
    sim.run(sim.until(reset + chrono::Duration::minutes(1)));
    sim.meters = vec![meter("b", 10.0, 30.0)];
    sim.input(sample(92.0, reset + hours(5), 40.0, wall0() + hours(72)));
    assert_eq!(looks(&sim), 2);
    assert_eq!(sim.switches().last(), Some(&(Due, Some("a".into()), Some("b".into()))));
}

#[test]
fn never_two_switches_in_one_window() {
    use crate::event::SwitchAction::*;
    let mut sim = switching(start());
    sim.meters = vec![meter("b", 20.0, 20.0), meter("c", 30.0, 30.0)];
    handed_off_at_91(&mut sim);
    sim.input(Input::Exited { exit: Exit::Code(129), last_screen: vec![] });
    sim.run(sim.secs() + 1.0);
    assert_eq!(sim.switched_to().len(), 1);
    // b fills up fast: still a's window, so no switch (the usage-limit wait handles a limit).
    sim.input(sample(95.0, wall0() + hours(4), 20.0, wall0() + hours(72)));
    sim.input(stop(false, "Done."));
    assert_eq!(sim.switches().iter().filter(|s| s.0 == Switched).count(), 1);
    assert_eq!(sim.switched_to().len(), 1);
}

#[test]
fn a_stale_meter_counts_a_window_that_has_reset_as_unused() {
    use crate::event::SwitchAction::*;
    let mut sim = switching(start());
    let mut b = meter("b", 97.0, 30.0);
    b.sample.five_hour_resets_at = Some(wall0() - hours(1));
    sim.meters = vec![b];
    sim.input(sample(91.0, wall0() + hours(2), 40.0, wall0() + hours(72)));
    assert_eq!(sim.switches(), [(Due, Some("a".into()), Some("b".into()))]);
}

#[test]
fn a_switch_past_the_restart_cap_is_held() {
    use crate::event::SwitchAction::*;
    let mut sim = switching(with_respawn(start(), respawn::Settings { max_restarts: 0, ..quick_respawn() }));
    sim.meters = vec![meter("b", 20.0, 20.0)];
    handed_off_at_91(&mut sim);
    assert_eq!(sim.switches().last().map(|s| s.0), Some(Held), "{:?}", sim.switches());
    assert!(!sim.signalled());
    assert!(sim.switched_to().is_empty());
}

#[test]
fn without_hooks_the_switch_goes_at_the_prompt_and_a_stop_during_it_is_a_stop() {
    let mut s = start();
    contract(&mut s, |c| c.account = Some(account("a")));
    armed(&mut s).switch =
        Some(SwitchSettings { threshold: 90.0, accounts: vec![account("b")], ahead: true, at_limit: false });
    let mut sim = Sim::new(s);
    sim.meters = vec![meter("b", 20.0, 20.0)];
    sim.input(working());
    sim.input(sample(91.0, wall0() + hours(2), 40.0, wall0() + hours(72)));
    assert!(!sim.signalled());
    sim.input(idle());
    assert!(sim.signalled(), "at the prompt, without a handoff");
    // The user stops it before it is down: no restart under b.
    sim.input(Input::Stop { source: "the user".into(), kind: StopKind::User });
    sim.input(Input::Exited { exit: Exit::Code(129), last_screen: vec![] });
    sim.run(sim.secs() + 1.0);
    assert!(sim.switched_to().is_empty());
    assert!(sim.m.ended().is_some());
}

#[test]
fn a_held_session_does_not_switch() {
    let mut s = start();
    s.from.held = true;
    let mut sim = switching(s);
    sim.meters = vec![meter("b", 20.0, 20.0)];
    sim.input(sample(91.0, wall0() + hours(2), 40.0, wall0() + hours(72)));
    sim.input(stop(false, "Done."));
    assert!(sim.switches().is_empty());
    assert!(!sim.signalled());
}

#[test]
fn a_stop_while_a_switch_waits_to_restart_ends_the_session() {
    let mut sim = switching(start());
    sim.meters = vec![meter("b", 20.0, 20.0)];
    handed_off_at_91(&mut sim);
    assert!(sim.signalled());
    // Pause all while the agent goes down: the restart under b waits for the release.
    sim.input(Input::Configure(Change { held: Some(true), source: "Pause all".into(), ..Change::default() }));
    sim.input(Input::Exited { exit: Exit::Code(129), last_screen: vec![] });
    sim.run(sim.secs() + 1.0);
    assert!(sim.switched_to().is_empty(), "held back");
    sim.input(Input::Stop { source: "the user".into(), kind: StopKind::User });
    assert!(sim.m.ended().is_some(), "the stop ends it: {:?}", sim.m.lives.life());
    sim.input(Input::Configure(Change { held: Some(false), source: "Resume all".into(), ..Change::default() }));
    sim.run(sim.secs() + 5.0);
    assert!(sim.switched_to().is_empty() && !sim.log.iter().any(|(_, e)| matches!(e, Effect::Spawn { .. })));
}

#[test]
fn a_late_hook_of_the_old_client_never_brings_back_its_conversation() {
    let mut sim = switching(start());
    sim.meters = vec![meter("b", 20.0, 20.0)];
    handed_off_at_91(&mut sim);
    sim.input(Input::Exited { exit: Exit::Code(129), last_screen: vec![] });
    sim.run(sim.secs() + 1.0);
    assert_eq!(sim.switched_to().len(), 1);
    // A hook process of a's client, still in flight, reports after the restart.
    sim.input(hook(crate::hooks::Event::SessionEnd { reason: "other".into() }));
    assert_eq!(sim.m.client.conversation(), None, "a's conversation (conv-1) is not b's");
    let b = Input::Hook {
        hook: crate::hooks::Hook {
            conversation: Some("conv-b".into()),
            event: crate::hooks::Event::SessionStart { source: "startup".into() },
        },
        limit: None,
        facts: None,
        seen: None,
    };
    sim.input(b);
    assert_eq!(sim.m.client.conversation().as_deref(), Some("conv-b"));
}

// ---- Dialogs answered ----------------------------------------------------------------------------

fn cycles_started(sim: &Sim) -> Vec<f64> {
    sim.events()
        .filter_map(|(t, k)| matches!(k, EventKind::Respawn { action: respawn::Action::CycleStarted, .. }).then_some(t))
        .collect()
}

fn answered(sim: &Sim) -> Vec<(DialogKind, crate::event::Answerer, u64)> {
    sim.events()
        .filter_map(|(_, k)| match k {
            EventKind::DialogAnswered { dialog, by, waited_secs, .. } => Some((*dialog, *by, *waited_secs)),
            _ => None,
        })
        .collect()
}

/// A dialog comes up in a respawn cycle's kickstart turn; the user answers it `answer_after`
/// seconds later, the turn goes on and ends: the session works again, the answer is journalled,
/// and the next cycle comes after the idle timeout, as if no dialog had been.
fn a_dialog_answered_mid_cycle(kind: DialogKind, answer: impl FnOnce(&Sim) -> Input) -> Sim {
    let mut sim = Sim::new(with_respawn(start(), quick_respawn()));
    sim.input(idle());
    sim.run(3.5);
    assert_eq!(cycles_started(&sim).len(), 1, "the first cycle");
    sim.run(8.0);
    sim.input(working());
    sim.input(transition(Activity::WaitingInput, Some(kind)));
    assert_eq!(sim.m.state(), SessionState::WaitingInput);
    // Nothing runs over a waiting dialog, however long it waits.
    sim.run(600.0);
    assert_eq!(cycles_started(&sim).len(), 1, "no cycle over a dialog");
    let answer = answer(&sim);
    sim.input(answer);
    sim.run(601.0);
    sim.input(working());
    assert_eq!(sim.m.state(), SessionState::Working, "answered: the turn goes on");
    sim.run(605.0);
    sim.input(idle());
    assert_eq!(sim.m.state(), SessionState::Idle);
    sim.run(610.0);
    let cycles = cycles_started(&sim);
    assert_eq!(cycles.len(), 2, "the cycles go on: {cycles:?}");
    assert!((608.0..=609.0).contains(&cycles[1]), "the idle timeout after the turn's end: {cycles:?}");
    sim
}

#[test]
fn a_question_answered_at_the_terminal_mid_cycle_lets_the_cycles_go_on() {
    let sim = a_dialog_answered_mid_cycle(DialogKind::Question, |_| Input::Keys(b"\r".to_vec()));
    assert_eq!(answered(&sim), [(DialogKind::Question, crate::event::Answerer::Terminal, 593)]);
}

#[test]
fn a_permission_answered_in_the_window_mid_cycle_lets_the_cycles_go_on() {
    let typed = Input::Typed { text: "1".into(), enter: false, by: crate::event::Answerer::Window };
    let sim = a_dialog_answered_mid_cycle(DialogKind::Permission, |_| typed);
    assert_eq!(answered(&sim), [(DialogKind::Permission, crate::event::Answerer::Window, 593)]);
}

#[test]
fn a_trust_dialog_answered_with_send_mid_cycle_lets_the_cycles_go_on() {
    let typed = Input::Typed { text: String::new(), enter: true, by: crate::event::Answerer::Cli };
    let sim = a_dialog_answered_mid_cycle(DialogKind::Trust, |_| typed);
    assert_eq!(answered(&sim), [(DialogKind::Trust, crate::event::Answerer::Cli, 593)]);
}

#[test]
fn a_permission_answered_from_the_phone_mid_cycle_lets_the_cycles_go_on() {
    // The button as pushed: made for the dialog the session journalled as waited on.
    let answer = |sim: &Sim| {
        let dialog = asked(sim).last().expect("the dialog journalled").print();
        Input::Answer { dialog, keys: b"1".to_vec(), by: crate::event::Answerer::Phone }
    };
    let sim = a_dialog_answered_mid_cycle(DialogKind::Permission, answer);
    assert_eq!(answered(&sim), [(DialogKind::Permission, crate::event::Answerer::Phone, 593)]);
    assert!(sim.log.iter().any(|(_, e)| *e == Effect::Answered(Ok(()))));
}

#[test]
fn an_answer_from_afar_types_nothing_unless_its_dialog_is_on_the_screen() {
    let written = |sim: &Sim| sim.log.iter().filter(|(_, e)| matches!(e, Effect::Write { .. })).count();
    let answered_with = |sim: &Sim| {
        sim.log.iter().rev().find_map(|(_, e)| if let Effect::Answered(r) = e { Some(r.clone()) } else { None })
    };
    let by = crate::event::Answerer::Phone;
    let permission = crate::phone::fingerprint("permission", None);
    let mut sim = Sim::new(start());
    sim.input(idle());
    // No dialog shown: the agent's prompt would take the keys as typed text.
    sim.input(Input::Answer { dialog: permission.clone(), keys: b"1".to_vec(), by });
    assert_eq!(answered_with(&sim), Some(Err(crate::phone::Refusal::DialogChanged)));
    // Another dialog than the one the button was for.
    sim.input(transition(Activity::WaitingInput, Some(DialogKind::Question)));
    sim.input(Input::Answer { dialog: permission.clone(), keys: b"1".to_vec(), by });
    assert_eq!(answered_with(&sim), Some(Err(crate::phone::Refusal::DialogChanged)));
    assert_eq!(written(&sim), 0, "nothing typed");
    // The agent is down.
    sim.input(Input::Exited { exit: Exit::Code(1), last_screen: vec![] });
    let question = crate::phone::fingerprint("question", None);
    sim.input(Input::Answer { dialog: question, keys: b"2".to_vec(), by });
    assert!(matches!(answered_with(&sim), Some(Err(crate::phone::Refusal::SessionEnded))), "{:?}", sim.log);
    assert_eq!(written(&sim), 0, "nothing typed");
}

#[test]
fn a_dialog_that_goes_away_by_itself_is_journalled_as_nothing_typed() {
    let mut sim = Sim::new(start());
    sim.input(transition(Activity::WaitingInput, Some(DialogKind::Question)));
    sim.run(30.0);
    sim.input(idle());
    assert_eq!(answered(&sim), [(DialogKind::Question, crate::event::Answerer::Nobody, 30)]);
    // An exit with a dialog up is not an answer.
    sim.input(transition(Activity::WaitingInput, Some(DialogKind::Permission)));
    sim.input(Input::Exited { exit: Exit::Code(1), last_screen: vec![] });
    assert_eq!(answered(&sim).len(), 1);
}

// ---- A button from afar answers only the dialog it was made for ---------------------------------------

/// A dialog as the screen draws it: its kind, its question if it has one, and its rows.
fn shown(kind: DialogKind, text: Option<&str>, rows: &[&str]) -> Dialog {
    let mut dialog = Dialog::new(kind, text.map(String::from));
    dialog.rows = rows.iter().filter_map(|r| crate::phone::normal_row(r)).collect();
    dialog
}

/// What a button made for `dialog` (as journalled) is bound to.
fn print_of(dialog: &Dialog) -> String {
    dialog.print()
}

/// The screen judged: the agent waits on `dialog`.
fn waiting_on(dialog: Dialog) -> Input {
    let verdict = Verdict { working: None, dialog: Some(dialog), prompt: false, interrupted: false };
    let reason = "the screen shows a dialog".to_string();
    Input::Activity {
        transition: Transition { to: Activity::WaitingInput, reason, verdict },
        menu: None,
        menu_limit: None,
    }
}

/// The dialogs journalled as waited on (and so pushed), in order.
fn asked(sim: &Sim) -> Vec<Dialog> {
    sim.events()
        .filter_map(|(_, k)| match k {
            EventKind::State { state: SessionState::WaitingInput, dialog, .. } => dialog.clone(),
            _ => None,
        })
        .collect()
}

/// What the last answer from afar came to.
fn last_answer(sim: &Sim) -> Option<Result<(), crate::phone::Refusal>> {
    sim.log.iter().rev().find_map(|(_, e)| if let Effect::Answered(r) = e { Some(r.clone()) } else { None })
}

/// The first of two questions of one call, as the screen shows it.
fn port_question() -> Dialog {
    shown(
        DialogKind::Question,
        Some("Which port should the server listen on?"),
        &["←  ☐ Port  ☐ Drop  ✔ Submit  →", "Which port should the server listen on?", "❯ 1. 3000", "  2. 8080"],
    )
}

#[test]
fn a_question_replaced_by_another_in_one_frame_is_a_new_dialog_and_the_first_ones_buttons_are_refused() {
    // Two questions of one call: answered at the terminal, the first gives way to the second in the
    // same place, with no frame between. "8080" for the port must not be typed into the second.
    use crate::event::Answerer::{Phone, Terminal};
    let mut sim = Sim::new(start());
    sim.input(idle());
    let port = port_question();
    let drop = shown(
        DialogKind::Question,
        Some("Drop the production database now?"),
        &["←  ☒ Port  ☐ Drop  ✔ Submit  →", "Drop the production database now?", "❯ 1. No", "  2. Yes, drop it"],
    );
    sim.input(working());
    sim.input(waiting_on(port));
    let eight_thousand_eighty = print_of(&asked(&sim)[0]);
    sim.run(5.0);
    sim.input(Input::Keys(b"1".to_vec()));
    sim.input(waiting_on(drop));
    let now = asked(&sim);
    assert_eq!(now.len(), 2, "the second question is journalled (so pushed) as a dialog of its own: {now:?}");
    assert_eq!(now[1].text.as_deref(), Some("Drop the production database now?"));
    assert_eq!(answered(&sim), [(DialogKind::Question, Terminal, 5)], "the first, answered at the terminal");
    assert!(sim.has(|k| matches!(k, EventKind::DialogAnswered { replaced: true, .. })), "and replaced");
    assert_eq!((now[0].showing, now[1].showing), (1, 2), "each dialog counted as it appears");
    let typed = sim.written().len();
    sim.input(Input::Answer { dialog: eight_thousand_eighty, keys: b"2".to_vec(), by: Phone });
    assert_eq!(last_answer(&sim), Some(Err(crate::phone::Refusal::DialogChanged)));
    assert_eq!(sim.written().len(), typed, "nothing typed into the second question");
    sim.input(Input::Answer { dialog: print_of(&now[1]), keys: b"1".to_vec(), by: Phone });
    assert_eq!(last_answer(&sim), Some(Ok(())), "its own button answers it");
}

#[test]
fn a_button_pressed_a_moment_after_keys_at_the_desk_types_nothing_until_the_screen_could_show_them() {
    // "1" typed at the terminal into the port question; the client has not redrawn yet (the
    // second question is on its way). The port's 8080 from afar must not be typed into whatever
    // the keys brought: refused, its token unburnt. Once the screen had time to show what the
    // keys did, and still shows the port question, the button works.
    use crate::event::Answerer::Phone;
    let mut sim = Sim::new(start());
    sim.input(idle());
    let port = port_question();
    sim.input(working());
    sim.input(waiting_on(port));
    let eighty_eighty = print_of(&asked(&sim)[0]);
    sim.run(5.0);
    sim.input(Input::Keys(b"1".to_vec()));
    let typed = sim.written().len();
    sim.run(5.5);
    sim.input(Input::Answer { dialog: eighty_eighty.clone(), keys: b"2".to_vec(), by: Phone });
    assert_eq!(last_answer(&sim), Some(Err(crate::phone::Refusal::JustTyped)));
    assert_eq!(sim.written().len(), typed, "nothing typed");
    assert!(crate::phone::Refusal::JustTyped.to_string().contains("nothing was typed"));
    sim.run(5.0 + super::dialog::TYPED_SETTLE.as_secs_f64());
    sim.input(Input::Answer { dialog: eighty_eighty, keys: b"2".to_vec(), by: Phone });
    assert_eq!(last_answer(&sim), Some(Ok(())), "the keys did nothing the screen shows: the button works");
    assert_eq!(answered(&sim), [], "still waited on");
}

#[test]
fn two_identical_permission_prompts_in_a_row_each_need_their_own_press() {
    use crate::event::Answerer::Phone;
    let prompt = || {
        shown(
            DialogKind::Permission,
            Some("Do you want to proceed?"),
            &["Bash command", "touch a", "Do you want to proceed?", "❯ 1. Yes", "  2. No", "Esc to cancel"],
        )
    };
    let mut sim = Sim::new(start());
    sim.input(idle());
    sim.input(working());
    sim.input(waiting_on(prompt()));
    let first = print_of(&asked(&sim)[0]);
    sim.run(3.0);
    // Denied at the terminal; the agent asks for the very same command again.
    sim.input(Input::Keys(b"\x1b".to_vec()));
    sim.input(idle());
    sim.run(6.0);
    sim.input(working());
    sim.input(waiting_on(prompt()));
    let prompts = asked(&sim);
    assert_eq!(prompts.len(), 2);
    let typed = sim.written().len();
    sim.input(Input::Answer { dialog: first, keys: b"1".to_vec(), by: Phone });
    assert_eq!(
        last_answer(&sim),
        Some(Err(crate::phone::Refusal::DialogChanged)),
        "the first prompt's unused Allow does not answer the second"
    );
    assert_eq!(sim.written().len(), typed, "nothing typed");
    sim.input(Input::Answer { dialog: print_of(&prompts[1]), keys: b"1".to_vec(), by: Phone });
    assert_eq!(last_answer(&sim), Some(Ok(())), "the second prompt's own Allow answers it");
}

#[test]
fn a_dialog_with_no_question_row_is_told_apart_by_its_region() {
    use crate::event::Answerer::Phone;
    let edit = |file: &str| {
        shown(DialogKind::Permission, None, &["Edit file", file, "❯ 1. Yes", "  2. No", "Esc to cancel · Tab to amend"])
    };
    let mut sim = Sim::new(start());
    sim.input(working());
    sim.input(waiting_on(edit("src/config.rs")));
    let first = print_of(&asked(&sim)[0]);
    assert!(!first.is_empty());
    // Another file's prompt in its place, no frame between.
    sim.input(waiting_on(edit("/home/user/.ssh/authorized_keys")));
    let prompts = asked(&sim);
    assert_eq!(prompts.len(), 2, "a dialog with another region is another dialog: {prompts:?}");
    assert_ne!(print_of(&prompts[1]), first);
    let typed = sim.written().len();
    sim.input(Input::Answer { dialog: first, keys: b"1".to_vec(), by: Phone });
    assert_eq!(last_answer(&sim), Some(Err(crate::phone::Refusal::DialogChanged)));
    assert_eq!(sim.written().len(), typed, "nothing typed");
}

// ---- A handoff that would loop -------------------------------------------------------------------

fn handoffs(sim: &Sim) -> usize {
    sim.events().filter(|(_, k)| matches!(k, EventKind::Handoff { .. })).count()
}

/// One turn of the fresh conversation after a handoff, its context reported at `pct`.
fn fresh_turn(sim: &mut Sim, pct: f64) {
    sim.input(working());
    sim.input(context(pct));
    sim.input(stop(false, "Did a step."));
    if matches!(sim.answers().last(), Some(crate::hooks::Answer::Block { .. })) {
        sim.input(stop(true, HANDOFF));
        sim.input(idle());
        sim.run(sim.secs() + 0.5);
        sim.input(hook(crate::hooks::Event::SessionStart { source: "clear".into() }));
    }
    sim.input(idle());
    sim.run(sim.secs() + 2.0);
}

#[test]
fn a_fresh_conversation_that_starts_past_the_threshold_is_warned_once_not_handed_off_again() {
    // The client reports 81 % on every answer (a huge CLAUDE.md): before, each turn handed off
    // again, 16 in two minutes, and no work was done.
    let mut sim = Sim::new(with_respawn(start(), quick_respawn()));
    fresh_turn(&mut sim, 81.0);
    assert_eq!(handoffs(&sim), 1, "the first time past the threshold: a handoff");
    for _ in 0..10 {
        fresh_turn(&mut sim, 81.0);
    }
    assert_eq!(handoffs(&sim), 1, "no handoff again while the fresh conversation stays where it started");
    let warned: Vec<f64> = sim
        .events()
        .filter_map(|(_, k)| if let EventKind::ContextHigh { pct, .. } = k { Some(*pct) } else { None })
        .collect();
    assert_eq!(warned, [81.0], "one warning");
    // It grows by a real amount: asked again.
    fresh_turn(&mut sim, 88.0);
    assert_eq!(handoffs(&sim), 1, "7 points is not yet a real amount");
    fresh_turn(&mut sim, 91.5);
    assert_eq!(handoffs(&sim), 2, "past its start plus 10 points: handed off");
    // A fresh conversation that starts low again is asked at the threshold as before.
    fresh_turn(&mut sim, 12.0);
    fresh_turn(&mut sim, 76.0);
    assert_eq!(handoffs(&sim), 3);
}

// ---- The resume's latency ------------------------------------------------------------------------

#[test]
fn the_resume_goes_out_seconds_after_the_exact_reset_the_data_gives() {
    // The notice says the minute; the client's rate-limit data the second, earlier or later.
    for offset in [40, -10] {
        let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Watch));
        let minute = wall0() + hours(1);
        let exact = minute + chrono::Duration::seconds(offset);
        sim.input(notice(minute));
        sim.input(idle());
        sim.input(sample(100.0, exact, 40.0, wall0() + hours(72)));
        let due = sim.until(exact + chrono::Duration::seconds(5));
        sim.run(due - 0.5);
        assert!(sim.resumes().is_empty(), "nothing before the exact reset plus 5 s ({offset:+} s)");
        sim.run(due + 0.5);
        let sent = sim.resumes();
        assert_eq!(sent.len(), 1, "{offset:+} s");
        let late = sent[0].0 - sim.until(exact);
        assert!((5.0..=5.2).contains(&late), "{late} s after the reset ({offset:+} s)");
        let armed: Vec<_> = sim
            .events()
            .filter_map(|(_, k)| if let EventKind::ResumeArmed { due, .. } = k { Some(*due) } else { None })
            .collect();
        assert_eq!(
            armed.last(),
            Some(&(exact + chrono::Duration::seconds(5))),
            "the journal keeps the due time for a restore"
        );
    }
}

// ---- A wake ------------------------------------------------------------------------------------

/// A session paused on a 5-hour limit that resets (to the second) 3 hours from the start; the
/// machine then sleeps `by` and wakes.
fn woken_after(by: chrono::Duration) -> Sim {
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Own));
    let reset = wall0() + hours(3);
    sim.input(notice(reset));
    sim.input(idle());
    sim.input(sample(100.0, reset, 40.0, wall0() + hours(72)));
    sim.run(10.0);
    let from = sim.now().wall;
    sim.sleep(by);
    sim.input(Input::Woke { from });
    sim
}

fn reads(sim: &Sim) -> usize {
    sim.log.iter().filter(|(_, e)| matches!(e, Effect::ReadUsage)).count()
}

#[test]
fn a_wake_reads_the_usage_again_before_the_resume_goes_out() {
    // Woken by its alarm two minutes before the reset: the usage is read again first.
    let mut sim = woken_after(hours(3) - chrono::Duration::minutes(2) - chrono::Duration::seconds(10));
    assert_eq!(reads(&sim), 1);
    // The account's newest data: the reset is two minutes later than the session knew.
    let later = wall0() + hours(3) + chrono::Duration::minutes(2);
    sim.input(sample_input_of(100.0, later));
    let woke = sim.secs();
    sim.run(woke + 60.0 * 5.0);
    let sent = sim.resumes();
    assert_eq!(sent.len(), 1, "one resume");
    let after = sent[0].0 - sim.until(later);
    assert!((5.0..=5.2).contains(&after), "it went out {after} s after the reset read again, not the one before");
}

/// The usage as read again: the 5-hour window at `pct` until `reset`.
fn sample_input_of(pct: f64, reset: DateTime<Utc>) -> Input {
    Input::Reread(Some(Sample { five_hour_pct: Some(pct), five_hour_resets_at: Some(reset), ..Sample::default() }))
}

#[test]
fn a_wake_that_came_late_resumes_at_once_once_the_usage_is_read() {
    // The alarm was missed: woken 20 minutes after the reset.
    let mut sim = woken_after(hours(3) + chrono::Duration::minutes(20));
    assert_eq!(reads(&sim), 1);
    assert!(sim.resumes().is_empty(), "not before the usage is read again");
    sim.run(sim.secs() + 1.0);
    assert!(sim.resumes().is_empty(), "still waiting for the read");
    // The data says the window is back: it goes out at that moment.
    let read_at = sim.secs();
    sim.input(Input::Reread(Some(Sample {
        five_hour_pct: Some(3.0),
        five_hour_resets_at: Some(sim.now().wall + hours(5)),
        ..Sample::default()
    })));
    assert_eq!(sim.resumes().first().map(|r| r.0), Some(read_at), "at once");

    // A read that finds nothing new resumes at once too; one that never answers holds it 5 s.
    let mut sim = woken_after(hours(3) + chrono::Duration::minutes(20));
    let read_at = sim.secs();
    sim.input(Input::Reread(None));
    assert_eq!(sim.resumes().first().map(|r| r.0), Some(read_at));
    let mut sim = woken_after(hours(3) + chrono::Duration::minutes(20));
    let woke = sim.secs();
    sim.run(woke + 10.0);
    let late = sim.resumes().first().map(|r| r.0 - woke);
    assert!(late.is_some_and(|l| (4.9..=5.1).contains(&l)), "{late:?}");
}

#[test]
fn a_wake_whose_usage_says_the_week_filled_waits_for_the_weekly_reset() {
    let mut sim = woken_after(hours(3) + chrono::Duration::minutes(20));
    let weekly = sim.now().wall + hours(40);
    sim.input(Input::Reread(Some(Sample {
        five_hour_pct: Some(3.0),
        five_hour_resets_at: Some(sim.now().wall + hours(5)),
        seven_day_pct: Some(100.0),
        seven_day_resets_at: Some(weekly),
        ..Sample::default()
    })));
    sim.run(sim.secs() + 600.0);
    assert!(sim.resumes().is_empty(), "never into a window that refuses it");
    let armed: Vec<DateTime<Utc>> = sim
        .events()
        .filter_map(|(_, k)| if let EventKind::ResumeArmed { due, .. } = k { Some(*due) } else { None })
        .collect();
    assert_eq!(armed.last(), Some(&(weekly + chrono::Duration::seconds(5))), "{armed:?}");
}

// ---- Breakers that wait ------------------------------------------------------------------------

fn breaker_changes(sim: &Sim, kind: BreakerKind) -> Vec<(f64, BreakerState)> {
    sim.events()
        .filter_map(|(t, k)| match k {
            EventKind::Breaker { breaker, state, .. } if *breaker == kind => Some((t, *state)),
            _ => None,
        })
        .collect()
}

/// Cycles of a kickstart alone, on an agent that works a moment after each and goes idle: the
/// night runs on until `secs`.
fn kickstarted(settings: respawn::Settings) -> Sim {
    let settings = respawn::Settings { update_prompt: String::new(), clear_and_init: false, ..settings };
    let mut sim = Sim::new(with_respawn(start(), settings));
    sim.input(idle());
    sim
}

fn work_until(sim: &mut Sim, secs: f64) {
    while sim.secs() < secs {
        let typed = sim.written().len();
        sim.run((sim.secs() + 1.0).min(secs));
        if sim.written().len() > typed {
            sim.input(working());
            sim.run((sim.secs() + 2.0).min(secs));
            sim.input(idle());
        }
    }
}

#[test]
fn an_open_no_progress_breaker_probes_after_its_wait_and_closes_on_progress() {
    let mut sim = kickstarted(quick_respawn());
    // Cycles that change nothing: half-open at two, open at three.
    work_until(&mut sim, 60.0);
    let opened = breaker_changes(&sim, BreakerKind::NoProgress);
    let open_at = opened.iter().find(|(_, s)| *s == BreakerState::Open).map(|(t, _)| *t).expect("open");
    assert_eq!(sim.m.state(), SessionState::BreakerOpen);
    let reason = sim.opened().unwrap().2;
    assert!(reason.contains("tries one cycle again in 15m"), "{reason}");
    assert!(sim.m.options(sim.now()).breaker_retry_at.is_some(), "shown with when it next tries");
    let cycles = cycles_started(&sim).len();
    work_until(&mut sim, open_at + 899.0);
    assert_eq!(cycles_started(&sim).len(), cycles, "no cycle during the wait");
    assert!(sim.m.options(sim.now()).awake.hold, "the probe is within the armed hours: the machine stays up");
    // The wait is over: one probe cycle, in which the agent's work moves the tree.
    work_until(&mut sim, open_at + 901.0);
    assert_eq!(breaker_changes(&sim, BreakerKind::NoProgress).last().map(|c| c.1), Some(BreakerState::HalfOpen));
    work_until(&mut sim, open_at + 905.0);
    assert_eq!(cycles_started(&sim).len(), cycles + 1, "the probe cycle");
    sim.tree = "tree-moved".into();
    // The next cycle's start sees the move: closed, and the cycles go on.
    work_until(&mut sim, open_at + 912.0);
    assert_eq!(breaker_changes(&sim, BreakerKind::NoProgress).last().map(|c| c.1), Some(BreakerState::Closed));
    assert!(cycles_started(&sim).len() >= cycles + 2, "the cycles go on");
}

#[test]
fn a_probe_without_progress_opens_it_again_for_a_longer_wait_until_the_ladder_is_spent() {
    let mut sim = kickstarted(respawn::Settings { breaker_retry: vec![S(600), S(1200)], ..quick_respawn() });
    work_until(&mut sim, 5000.0);
    let changes: Vec<BreakerState> = breaker_changes(&sim, BreakerKind::NoProgress).into_iter().map(|c| c.1).collect();
    use BreakerState::{HalfOpen, Open};
    assert_eq!(changes, [HalfOpen, Open, HalfOpen, Open, HalfOpen, Open], "two probes, then open for good");
    let reasons: Vec<String> = sim
        .events()
        .filter_map(|(_, k)| match k {
            EventKind::Breaker { state: BreakerState::Open, reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert!(reasons[0].ends_with("again in 10m"), "{reasons:?}");
    assert!(reasons[1].ends_with("again in 20m"), "{reasons:?}");
    assert!(reasons[2].ends_with("stays open until `nightshift breaker reset`"), "{reasons:?}");
    assert_eq!(sim.m.options(sim.now()).breaker_retry_at, None);
    // The user's reset works at any time.
    sim.input(Input::ResetBreakers);
    assert_eq!(breaker_changes(&sim, BreakerKind::NoProgress).last().map(|c| c.1), Some(BreakerState::Closed));
}

#[test]
fn an_open_crash_loop_breaker_starts_the_agent_once_after_its_wait_and_a_long_life_closes_it() {
    let mut sim = Sim::new(with_respawn(start(), quick_respawn())).agent(Duration::from_millis(1500), 1);
    sim.run(800.0);
    assert_eq!(sim.m.state(), SessionState::BreakerOpen);
    let spawns = sim.spawns().len();
    // Whatever was wrong is fixed meanwhile: the next life lasts.
    sim.agent = Some(Agent { life: S(3600), code: 1 });
    sim.run(1300.0);
    assert_eq!(sim.spawns().len(), spawns + 1, "one restart after the wait");
    let changes: Vec<BreakerState> = breaker_changes(&sim, BreakerKind::CrashLoop).into_iter().map(|c| c.1).collect();
    assert_eq!(changes, [BreakerState::Open, BreakerState::HalfOpen, BreakerState::Closed], "{changes:?}");
    assert!(sim.m.is_live());
}

#[test]
fn a_crash_loop_probe_that_dies_again_opens_it_again() {
    let mut sim = Sim::new(with_respawn(start(), quick_respawn())).agent(Duration::from_millis(1500), 1);
    sim.run(3600.0);
    let changes: Vec<BreakerState> = breaker_changes(&sim, BreakerKind::CrashLoop).into_iter().map(|c| c.1).collect();
    use BreakerState::{HalfOpen, Open};
    // Opened; probes after 15 and 30 more minutes, each one short life.
    assert_eq!(changes, [Open, HalfOpen, Open, HalfOpen, Open], "{changes:?}");
    assert_eq!(sim.exits().len(), 7, "five lives, then one per probe");
}

#[test]
fn the_same_notice_read_after_its_time_is_not_a_limit_a_day_later() {
    // The machine slept through the reset; the notice still on screen, read again at 17:00, says
    // "resets 2:33pm": tomorrow's, to a parser. It is the same limit: the resume goes out now.
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Watch));
    let reset = wall0() + hours(1);
    sim.input(notice(reset));
    sim.input(idle());
    sim.sleep(hours(3));
    sim.input(notice(reset + hours(24)));
    sim.run(sim.secs() + 6.0);
    assert_eq!(sim.resumes().len(), 1, "resumed on waking, not a day later");
}

fn hook_said(name: &str) -> Input {
    let payload = match name {
        "Stop" => serde_json::json!({"hook_event_name": "Stop", "session_id": "c1", "last_assistant_message": "Done."}),
        _ => serde_json::json!({"hook_event_name": "StopFailure", "session_id": "c1", "error": "rate_limit",
            "last_assistant_message": "You've hit your 5-hour limit · resets 11:00pm (UTC)"}),
    };
    Input::Hook { hook: crate::hooks::Hook::from_payload(&payload).unwrap(), limit: None, facts: None, seen: None }
}

#[test]
fn with_hooks_a_resumed_turn_the_window_refuses_is_limited_again_not_over() {
    // The client's hooks speak. Our resume starts a turn, and the window still refuses it (a clock
    // a little off): its StopFailure says so. The limit is not over, no cycle slips in, and the
    // next try is on the short ladder; the next turn that ends well ends the limit.
    let mut sim = Sim::new(with_respawn(with_auto_resume(start(), resume::Policy::Watch), quick_respawn()));
    let reset = wall0() + hours(1);
    sim.input(hook_said("Stop"));
    sim.input(sample(100.0, reset, 40.0, wall0() + hours(72)));
    sim.input(idle());
    sim.run(sim.until(reset + chrono::Duration::seconds(6)));
    assert_eq!(sim.resumes().len(), 1);
    sim.input(working());
    assert_eq!(sim.m.state(), SessionState::LimitPaused, "a turn that starts may still be refused");
    sim.input(hook_said("StopFailure"));
    sim.input(idle());
    assert!(!sim.has(|k| matches!(k, EventKind::LimitCleared { .. })));
    sim.run(sim.until(reset + chrono::Duration::seconds(19)));
    assert!(cycles_started(&sim).is_empty(), "no cycle into the refusing window");
    assert_eq!(sim.resumes().len(), 1, "not again at once");
    sim.run(sim.until(reset + chrono::Duration::seconds(22)));
    assert_eq!(sim.resumes().len(), 2, "15 s on: {:?}", sim.resumes());
    sim.input(working());
    sim.input(hook_said("Stop"));
    assert!(sim.has(|k| matches!(k, EventKind::LimitCleared { .. })), "the turn ended well: over");
}

#[test]
fn a_client_killed_in_the_turn_that_resumed_it_goes_on_with_the_kickstart() {
    // The resume's turn runs tools (so the window took it), and the client is killed before its
    // Stop: the restart is after the reset, so it goes on with the kickstart, and the limit ends.
    let mut sim = Sim::new(with_respawn(with_auto_resume(start(), resume::Policy::Watch), quick_respawn()));
    let reset = wall0() + hours(1);
    sim.input(hook_said("Stop"));
    sim.input(sample(100.0, reset, 40.0, wall0() + hours(72)));
    sim.input(idle());
    sim.run(sim.until(reset + chrono::Duration::seconds(6)));
    assert_eq!(sim.resumes().len(), 1);
    sim.input(working());
    sim.input(hook(crate::hooks::Event::PreToolUse {
        tool: "Bash".into(),
        input: serde_json::json!({"command": "git commit"}),
        cwd: None,
    }));
    assert!(sim.has(|k| matches!(k, EventKind::LimitCleared { .. })), "its tools ran: the window took it");
    sim.input(Input::Exited { exit: Exit::Signal { number: 9, name: "SIGKILL".into() }, last_screen: vec![] });
    sim.run(sim.secs() + 5.0);
    let prompt =
        sim.log.iter().find_map(|(_, e)| if let Effect::Spawn { prompt, .. } = e { prompt.clone() } else { None });
    assert_eq!(prompt.as_deref().map(said), Some(respawn::DEFAULT_KICKSTART_PROMPT));
}

// ---- The pace ----------------------------------------------------------------------------------

#[test]
fn a_morning_reserve_parks_the_cycles_until_the_window_resets_and_the_night_may_sleep_through_it() {
    // 20 % kept for the morning, three hours from the start; the 5-hour window resets an hour later.
    let morning = (wall0() + hours(3)).with_timezone(&ZONE).time();
    let pace = crate::limits::pace::PaceSettings {
        morning_reserve: Some(crate::limits::pace::MorningReserve { pct: 20.0, at: morning }),
        weekly_pace: None,
    };
    let settings = respawn::Settings { update_prompt: String::new(), clear_and_init: false, ..quick_respawn() };
    let mut s = with_respawn(start(), settings);
    armed(&mut s).pace = pace;
    let mut sim = Sim::new(s);
    sim.input(idle());
    let reset = wall0() + hours(4);
    let five = |pct: f64| {
        Input::Sample(Sample { five_hour_pct: Some(pct), five_hour_resets_at: Some(reset), ..Sample::default() })
    };
    sim.input(five(60.0));
    work_until(&mut sim, 30.0);
    assert!(!cycles_started(&sim).is_empty(), "on pace: the cycles run");
    assert!(!sim.has(|k| matches!(k, EventKind::Paced { .. })));

    // The backlog would drain the window before the morning: at 80 % the cycles park.
    sim.input(five(81.0));
    let parked_at = sim.secs();
    let paced: Vec<(Option<DateTime<Utc>>, String)> = sim
        .events()
        .filter_map(|(_, k)| match k {
            EventKind::Paced { until, reason, .. } => Some((*until, reason.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(paced.len(), 1, "{paced:?}");
    assert_eq!(paced[0].0, Some(reset));
    assert!(paced[0].1.starts_with("to keep 20% of the 5-hour window for the morning"), "{paced:?}");
    let cycles = cycles_started(&sim).len();
    work_until(&mut sim, parked_at + 1800.0);
    assert_eq!(cycles_started(&sim).len(), cycles, "no cycle while parked");
    let want = sim.m.options(sim.now()).awake;
    assert_eq!(want.parked_until, Some(reset), "the night may sleep through the park: {want:?}");

    // The machine sleeps to the reset: the cycles go on once the window is new.
    let left = reset - sim.now().wall + chrono::Duration::seconds(1);
    sim.sleep(left);
    let woke = sim.secs();
    work_until(&mut sim, woke + 60.0);
    assert!(sim.has(|k| matches!(k, EventKind::Paced { until: None, .. })), "the park ends");
    assert!(cycles_started(&sim).len() > cycles, "the cycles go on after the reset");
}

// ---- Routine dialogs in an unattended night ----------------------------------------------------

/// The overnight and ralph presets answer routine dialogs (the kinds the agent's file marks
/// routine), each journalled with the dialog; a question or a permission prompt never, whatever
/// an agent file says.
#[test]
fn an_unattended_night_answers_routine_dialogs_and_never_a_question_or_a_permission() {
    for preset in ["overnight", "ralph"] {
        assert!(respawn::builtin(preset).unwrap().auto_accept, "{preset} answers routine dialogs");
    }
    assert!(!respawn::builtin("solo").unwrap().auto_accept, "an attended preset does not");
    let mut s = with_respawn(start(), respawn::Settings { auto_accept: true, ..quick_respawn() });
    // An agent file that would have questions and permissions answered too.
    s.auto_accept = vec![DialogKind::Trust, DialogKind::Confirmation, DialogKind::Permission, DialogKind::Question];
    let mut sim = Sim::new(s);
    sim.input(working());
    sim.input(waiting_on(shown(DialogKind::Trust, Some("Do you trust the files in this folder?"), &[])));
    assert_eq!(sim.written(), [b"\r".to_vec()], "the routine one is answered");
    assert!(sim.has(|k| matches!(k, EventKind::AutoAccepted { dialog, text }
        if *dialog == DialogKind::Trust && text.as_deref() == Some("Do you trust the files in this folder?"))));
    for kind in [DialogKind::Permission, DialogKind::Question] {
        sim.input(working());
        sim.input(waiting_on(shown(kind, Some("Do you want to proceed?"), &["rm -rf build"])));
    }
    assert_eq!(sim.written(), [b"\r".to_vec()], "a question and a permission prompt wait for a person");
    assert_eq!(sim.events().filter(|(_, k)| matches!(k, EventKind::AutoAccepted { .. })).count(), 1);
}

// ---- The context threshold without respawn ------------------------------------------------------

/// A session armed with auto-resume alone (no respawn cycles): at the threshold it warns, asks
/// for a handoff at the turn's end and keeps it, and the next conversation (the client's own
/// compaction, a restart) starts from it.
#[test]
fn without_respawn_the_context_threshold_warns_and_hands_off() {
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Own));
    sim.input(working());
    sim.input(context(82.0));
    assert!(
        sim.has(|k| matches!(k, EventKind::ContextThreshold { pct, threshold } if *pct == 82.0 && *threshold == 75.0))
    );
    sim.input(stop(false, "Done with step 3."));
    let asked = sim.answers().last().cloned();
    assert!(matches!(&asked, Some(crate::hooks::Answer::Block { reason }) if reason.contains("handoff")), "{asked:?}");
    sim.input(stop(true, HANDOFF));
    assert!(sim.log.iter().any(|(_, e)| matches!(e, Effect::SaveHandoff { text } if text == HANDOFF)));
    // The client compacts its context: the compacted conversation starts from the handoff.
    sim.input(hook(crate::hooks::Event::SessionStart { source: "compact".into() }));
    let given = sim.answers().last().cloned();
    assert!(matches!(&given, Some(crate::hooks::Answer::Context { text }) if text.contains(HANDOFF)), "{given:?}");
    assert_eq!(sim.events().filter(|(_, k)| matches!(k, EventKind::ContextThreshold { .. })).count(), 1, "warned once");
    // Still full, still past: no second warning or handoff until a new conversation grows again.
    sim.input(context(84.0));
    sim.input(stop(false, "Another step."));
    assert_eq!(sim.answers().last(), Some(&crate::hooks::Answer::Pass));
}

// ---- Extra usage past the plan's window ---------------------------------------------------------

/// The client says it now works on the plan's extra usage (its own notice).
fn extra_usage() -> Input {
    Input::ExtraUsage
}

/// A 5-hour window at 100 % with the plan's extra usage on is not a limit: the agent works on and
/// nothing pauses, and the journal says it once; asked to stop at the plan's limit, it pauses.
#[test]
fn extra_usage_past_a_full_window_is_no_limit_unless_the_user_stops_at_the_plan() {
    let reset = wall0() + hours(2);
    // The notice first, then the window's data at 100 %.
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Own));
    sim.input(working());
    sim.input(extra_usage());
    sim.input(sample(100.0, reset, 40.0, wall0() + hours(72)));
    assert!(!sim.has(|k| matches!(k, EventKind::LimitDetected { .. })), "no limit");
    assert!(sim.has(|k| matches!(k, EventKind::ExtraUsage { .. })));
    sim.input(sample(100.0, reset, 41.0, wall0() + hours(72)));
    assert_eq!(sim.events().filter(|(_, k)| matches!(k, EventKind::ExtraUsage { .. })).count(), 1, "said once");

    // The data first (a pause on it alone), then the client's word that it works on: not paused.
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Own));
    sim.input(working());
    sim.input(sample(100.0, reset, 40.0, wall0() + hours(72)));
    assert!(sim.has(|k| matches!(k, EventKind::LimitDetected { .. })));
    sim.input(extra_usage());
    assert!(sim.has(|k| matches!(k, EventKind::LimitCleared { .. })), "the pause on the data alone is undone");

    // Stop at the plan's limit: the extra usage's notice pauses the session until the reset.
    let mut s = with_auto_resume(start(), resume::Policy::Own);
    armed(&mut s).window_guard.plan_only = true;
    let mut sim = Sim::new(s);
    sim.input(working());
    sim.input(sample(100.0, reset, 40.0, wall0() + hours(72)));
    sim.input(extra_usage());
    assert!(sim.has(|k| matches!(k, EventKind::LimitDetected { .. })));
    assert!(!sim.has(|k| matches!(k, EventKind::LimitCleared { .. })), "it stays paused");
}

/// An account that jumps to 100 % while the plan's extra usage carries it is not moved to
/// another account (its meters are not even read) unless the user stops at the plan's limit.
#[test]
fn extra_usage_moves_no_account() {
    let meters_asked = |sim: &Sim| sim.log.iter().filter(|(_, e)| matches!(e, Effect::Meters { .. })).count();
    let mut sim = switching(start());
    sim.input(extra_usage());
    sim.input(sample(100.0, wall0() + hours(2), 40.0, wall0() + hours(72)));
    sim.input(stop(false, "Done."));
    assert_eq!(meters_asked(&sim), 0, "no switch looked for on extra usage");
    let mut s = start();
    armed(&mut s).window_guard.plan_only = true;
    let mut sim = switching(s);
    sim.input(sample(100.0, wall0() + hours(2), 40.0, wall0() + hours(72)));
    assert_eq!(meters_asked(&sim), 1, "at the plan's limit, the other accounts are looked at");
}

// ---- One input per happening ---------------------------------------------------------------------

/// `hook` carrying the activity change it came with.
fn hook_seen(event: crate::hooks::Event, to: Activity) -> Input {
    let Input::Activity { transition, menu, menu_limit } = transition(to, None) else { unreachable!() };
    let Input::Hook { hook, limit, facts, .. } = hook(event) else { unreachable!() };
    Input::Hook { hook, limit, facts, seen: Some(Box::new(Seen { transition, menu, menu_limit })) }
}

#[test]
fn a_turns_end_enters_once_its_activity_first_then_its_hook() {
    let effects = |sim: &Sim| sim.log.iter().map(|(_, e)| e.clone()).collect::<Vec<_>>();
    let stop = || crate::hooks::Event::Stop { continued: false, last_message: Some("Done.".into()) };
    // The executor heard the screen go idle, then the Stop: two inputs, in its order.
    let mut apart = switching(start());
    apart.meters = vec![meter("b", 20.0, 20.0)];
    apart.input(working());
    apart.input(sample(91.0, wall0() + hours(2), 40.0, wall0() + hours(72)));
    apart.input(idle());
    apart.input(hook(stop()));
    // The Stop carrying its turn's end: one input, the order the machine's own.
    let mut once = switching(start());
    once.meters = vec![meter("b", 20.0, 20.0)];
    once.input(working());
    once.input(sample(91.0, wall0() + hours(2), 40.0, wall0() + hours(72)));
    let before = once.log.len();
    once.input(hook_seen(stop(), Activity::Idle));
    assert_eq!(effects(&once), effects(&apart));
    let step: Vec<&Effect> = once.log[before..].iter().map(|(_, e)| e).collect();
    assert!(
        step.iter().any(|e| matches!(e, Effect::Emit(k) if k.new_state() == Some(SessionState::Idle))),
        "the turn's end is journalled in the same step: {step:?}"
    );
    assert!(
        matches!(step.last(), Some(Effect::Answer(crate::hooks::Answer::Block { reason })) if reason.contains("handoff")),
        "the hook is answered last, after what its turn's end decided: {step:?}"
    );
}

#[test]
fn every_hook_is_answered_by_the_machine_a_pass_included() {
    use crate::hooks::{EndReason, Event};
    let mut sim = Sim::new(start());
    let events = [
        Event::SessionStart { source: "startup".into() },
        Event::UserPromptSubmit { prompt: None },
        Event::PreToolUse { tool: "Bash".into(), input: serde_json::json!({"command": "ls"}), cwd: None },
        Event::ToolEnded { tool: "Bash".into(), input: serde_json::json!({"command": "ls"}), error: None },
        Event::Stop { continued: false, last_message: Some("Done.".into()) },
        Event::Other { name: "SubagentStop".into() },
        Event::SessionEnd { reason: EndReason::from("other") },
    ];
    for event in events {
        let before = sim.log.len();
        sim.input(hook(event.clone()));
        let answers = sim.log[before..].iter().filter(|(_, e)| matches!(e, Effect::Answer(_))).count();
        assert_eq!(answers, 1, "{event:?} is answered once, by the machine");
    }
}

#[test]
fn meters_the_journal_cannot_give_hold_the_switch_and_say_why() {
    use crate::event::SwitchAction::*;
    let mut sim = switching(start());
    sim.meters = vec![meter("b", 10.0, 10.0)];
    sim.meters_unread = Some("database is locked".into());
    let reset = wall0() + hours(2);
    sim.input(sample(91.0, reset, 40.0, wall0() + hours(72)));
    let held: Vec<_> = sim
        .events()
        .filter_map(|(_, k)| match k {
            EventKind::AccountSwitch { action: Held, until, reason, .. } => Some((*until, reason.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(held.len(), 1, "{:?}", sim.switches());
    assert_eq!(held[0].0, Some(reset), "held until the window resets");
    assert!(held[0].1.contains("could not be read") && held[0].1.contains("database is locked"), "{}", held[0].1);
    assert!(!held[0].1.contains("no other account"), "not read is not full: {}", held[0].1);
    sim.input(stop(false, "Done."));
    assert!(!sim.signalled(), "it stays");
}

#[test]
fn a_start_arms_what_is_left_of_its_contracts_hours_and_nothing_once_they_are_over() {
    let mut s = with_respawn(start(), quick_respawn());
    armed(&mut s).respawn_until = Some(wall0() + hours(2));
    let sim = Sim::new(s);
    let o = sim.m.options_at(sim.now());
    assert!(o.respawn_active, "{o:?}");
    assert_eq!(o.respawn_until, Some(wall0() + hours(2)));
    assert_eq!(o.respawn.map(|r| r.duration), Some(S(2 * 3600)), "what is left of its 8 hours");
    let mut over = with_respawn(start(), quick_respawn());
    armed(&mut over).respawn_until = Some(wall0() - hours(1));
    let sim = Sim::new(over);
    let o = sim.m.options_at(sim.now());
    assert!(!o.respawn_active && o.respawn.is_none(), "its hours are over: {o:?}");
    assert!(!sim.log.iter().any(|(_, e)| matches!(e, Effect::Emit(EventKind::Respawn { .. }))));
}

// ---- What Nightshift sends by itself says so ------------------------------------------------------

#[test]
fn every_input_the_session_sends_by_itself_is_marked_with_the_standing_instructions() {
    const STANDING: &str = "Only the parser; never push.";
    let mut s = with_auto_resume(with_respawn(start(), quick_respawn()), resume::Policy::Own);
    armed(&mut s).standing = Some(STANDING.into());
    let mut sim = Sim::new(s).agent(S(4 * 3600), 1);
    // A limit, and the resume after its reset.
    let reset = wall0() + hours(1);
    sim.input(sample(100.0, reset, 40.0, wall0() + hours(72)));
    sim.input(idle());
    sim.run(sim.until(reset + chrono::Duration::seconds(65)));
    assert_eq!(sim.resumes().len(), 1);
    sim.input(working());
    sim.input(stop(false, "Back at it."));
    // The context near full: the handoff is asked through the Stop hook's block.
    sim.input(context(81.0));
    sim.input(stop(false, "Done with step 3."));
    let Some(crate::hooks::Answer::Block { reason }) = sim.answers().last().cloned() else { panic!("asked") };
    sim.input(stop(true, HANDOFF));
    sim.input(idle());
    // The cycle that resets the context: /clear and /init as they are, the kickstart marked.
    sim.run(sim.secs() + 60.0);
    sim.input(hook(crate::hooks::Event::SessionStart { source: "clear".into() }));
    let Some(crate::hooks::Answer::Context { text: given }) = sim.answers().last().cloned() else { panic!("given") };
    sim.input(idle());
    // The agent dies: its restart's first prompt is marked too.
    sim.run(sim.secs() + 4.0 * 3600.0 + 60.0);
    let restart = sim
        .log
        .iter()
        .find_map(|(_, e)| if let Effect::Spawn { prompt: Some(p), .. } = e { Some(p.clone()) } else { None })
        .expect("restarted with a prompt");

    let typed = sim.typed_raw();
    let words: Vec<&String> = typed.iter().filter(|t| !t.starts_with('/')).collect();
    assert!(words.len() >= 2, "a resume and a kickstart: {typed:?}");
    for text in words.iter().map(|t| t.as_str()).chain([reason.as_str(), given.as_str(), restart.as_str()]) {
        assert!(text.starts_with(crate::automated::MARKER), "marked: {text}");
        assert!(text.contains("not a new instruction from the user"), "{text}");
        assert!(text.contains(STANDING), "restates the standing instructions: {text}");
    }
    assert!(
        typed.iter().any(|t| t == "/clear") && typed.iter().any(|t| t == "/init"),
        "the client's own commands as they are"
    );
    assert!(
        words[0].contains("resume by Nightshift after a usage limit") && words[0].ends_with("] continue"),
        "{}",
        words[0]
    );
    // Each is journalled, for the morning.
    use crate::automated::Automated;
    let sent: Vec<Automated> = sim
        .events()
        .filter_map(|(_, k)| if let EventKind::AutomatedInput { what, .. } = k { Some(*what) } else { None })
        .collect();
    for what in
        [Automated::Resume, Automated::HandoffRequest, Automated::Handoff, Automated::Kickstart, Automated::Restart]
    {
        assert!(sent.contains(&what), "{what:?} journalled: {sent:?}");
    }
    assert_eq!(sent.len(), words.len() + 3, "one event an input: {sent:?}");
}

#[test]
fn without_standing_instructions_the_marker_says_the_ones_given_still_stand() {
    let mut sim = Sim::new(with_auto_resume(start(), resume::Policy::Own));
    let reset = wall0() + hours(1);
    sim.input(sample(100.0, reset, 40.0, wall0() + hours(72)));
    sim.input(idle());
    sim.run(sim.until(reset + chrono::Duration::seconds(65)));
    let typed = sim.typed_raw();
    assert_eq!(typed.len(), 1, "{typed:?}");
    assert!(typed[0].contains("the instructions you were given still stand] continue"), "{}", typed[0]);
}

// ---- Moving at the limit -------------------------------------------------------------------------

/// A session on account `a` that moves at the limit (not before) to `b` or `c`, its client's hooks
/// heard, with auto-resume on (the wait, when no account has room).
fn moving_at_the_limit(ahead: bool) -> Sim {
    let mut s = with_auto_resume(start(), resume::Policy::Own);
    contract(&mut s, |c| c.account = Some(account("a")));
    armed(&mut s).prompt = Some("Work through TASKS.md, one step per turn.".into());
    armed(&mut s).switch = Some(SwitchSettings {
        threshold: 90.0,
        accounts: vec![account("a"), account("b"), account("c")],
        ahead,
        at_limit: true,
    });
    let mut sim = Sim::new(s);
    sim.input(hook(crate::hooks::Event::SessionStart { source: "startup".into() }));
    sim.gathered = crate::session::handoff::Gathered {
        commits: vec!["a1b2c3d Add the parser".into()],
        uncommitted: vec![" M src/cli.rs".into()],
        files: vec![crate::session::handoff::Named { name: "TASKS.md".into(), text: "- [ ] cli\n".into() }],
        unread: vec![],
    };
    sim
}

/// The client's own word on a weekly limit, its reset three days out.
fn weekly_limit(sim: &mut Sim) {
    sim.input(working());
    sim.input(hook(crate::hooks::Event::StopFailure {
        error: crate::hooks::StopError::RateLimit,
        last_message: Some("You've hit your weekly limit · resets Dec 9".into()),
    }));
}

fn weekly_limit_text() -> LimitText {
    LimitText { kind: LimitKind::Weekly, resets_at: Some(wall0() + hours(72)), line: "weekly limit".into() }
}

fn gathers(sim: &Sim) -> usize {
    sim.log.iter().filter(|(_, e)| matches!(e, Effect::Gather { .. })).count()
}

#[test]
fn at_the_limit_the_session_moves_at_once_to_the_most_headroom_with_a_handoff_built_from_the_folder() {
    use crate::event::SwitchAction::*;
    let mut sim = moving_at_the_limit(false);
    sim.meters = vec![meter("b", 50.0, 60.0), meter("c", 20.0, 30.0)];
    // Not before the limit: this session does not move ahead of it.
    sim.input(sample(95.0, wall0() + hours(2), 95.0, wall0() + hours(72)));
    assert!(sim.switches().is_empty(), "{:?}", sim.switches());
    sim.input(working());
    sim.input(Input::Hook {
        hook: crate::hooks::Hook {
            conversation: Some("conv-1".into()),
            event: crate::hooks::Event::StopFailure {
                error: crate::hooks::StopError::RateLimit,
                last_message: Some("weekly limit".into()),
            },
        },
        limit: Some(weekly_limit_text()),
        facts: None,
        seen: None,
    });
    assert_eq!(sim.m.state(), SessionState::LimitPaused);
    // c has 70 % left, b 40 %: c, now, with no turn to ask a handoff in: the folder is read.
    assert_eq!(
        sim.switches(),
        [(Due, Some("a".into()), Some("c".into())), (Switched, Some("a".into()), Some("c".into()))]
    );
    assert_eq!(gathers(&sim), 1);
    let built = sim.events().find_map(|(_, k)| match k {
        EventKind::HandoffBuilt { why, .. } => Some(why.clone()),
        _ => None,
    });
    assert!(built.is_some_and(|w| w.contains("account a met its 7-day limit")));
    let saved =
        sim.log.iter().find_map(|(_, e)| if let Effect::SaveHandoff { text } = e { Some(text.clone()) } else { None });
    let saved = saved.expect("the built handoff is kept");
    for part in ["Work through TASKS.md", "a1b2c3d Add the parser", " M src/cli.rs", "TASKS.md as it stands"] {
        assert!(saved.contains(part), "{part:?} in {saved}");
    }
    assert!(sim.signalled(), "the old client is stopped");
    sim.input(Input::Exited { exit: Exit::Code(0), last_screen: vec![] });
    sim.run(sim.secs() + 1.0);
    let moved = sim.switched_to();
    assert_eq!(moved.len(), 1, "{moved:?}");
    assert_eq!(moved[0].0, "c");
    // The new account's window is open: the limit is behind the session, and no resume goes out.
    assert!(sim.has(|k| matches!(k, EventKind::LimitCleared { reason } if reason.contains("moved to account c"))));
    assert_ne!(sim.m.state(), SessionState::LimitPaused);
    let prompt = moved[0].1.clone().expect("it starts from the handoff");
    assert!(prompt.contains("Handoff built by Nightshift"), "{prompt}");
    let raw = sim.log.iter().find_map(|(_, e)| match e {
        Effect::SwitchAccount { prompt: Some(p), .. } => Some(p.clone()),
        _ => None,
    });
    assert!(raw.is_some_and(|p| p.starts_with(crate::automated::MARKER)), "marked as Nightshift's");
    sim.run(sim.until(wall0() + hours(73)));
    assert!(sim.resumes().is_empty(), "nothing is typed into a's refused window");
    // Its client's SessionStart is given the handoff as context too.
    sim.input(hook(crate::hooks::Event::SessionStart { source: "startup".into() }));
    let given = sim.answers().last().cloned();
    assert!(matches!(&given, Some(crate::hooks::Answer::Context { text }) if text.contains("a1b2c3d")), "{given:?}");
}

#[test]
fn at_the_limit_with_no_account_that_has_room_the_session_waits_for_the_reset() {
    use crate::event::SwitchAction::*;
    let mut sim = moving_at_the_limit(false);
    sim.meters = vec![meter("b", 95.0, 40.0), meter("c", 100.0, 100.0)];
    weekly_limit(&mut sim);
    assert_eq!(sim.switches(), [(Held, Some("a".into()), None)], "no account has more than 10 % left");
    assert_eq!(gathers(&sim), 0);
    assert!(!sim.signalled());
    assert_eq!(sim.m.state(), SessionState::LimitPaused, "the usage-limit wait has it");
    // The next limit looks again: the hold is not the quiet of a move ahead of the limit.
    let view = sim.m.options(sim.now()).account_switch.expect("armed");
    assert_eq!(view.quiet_until, None, "nothing holds the next look");
}

#[test]
fn an_account_with_no_usage_on_record_is_tried_at_the_limit_and_a_limit_there_too_waits() {
    use crate::event::SwitchAction::*;
    let mut sim = moving_at_the_limit(false);
    // Nothing is known of b or c: at the limit, b is tried rather than three days lost.
    weekly_limit(&mut sim);
    assert_eq!(sim.switches().first(), Some(&(Due, Some("a".into()), Some("b".into()))));
    let due = sim.events().find_map(|(_, k)| match k {
        EventKind::AccountSwitch { action: Due, reason, .. } => Some(reason.clone()),
        _ => None,
    });
    assert!(due.is_some_and(|r| r.contains("account b has no usage on record")));
    sim.input(Input::Exited { exit: Exit::Code(0), last_screen: vec![] });
    sim.run(sim.secs() + 1.0);
    assert_eq!(sim.switched_to().len(), 1);
    // b is limited too: a is known full, b now is, c unknown — c is tried, then nothing is left.
    sim.meters = vec![meter("a", 10.0, 100.0), meter("b", 100.0, 20.0)];
    weekly_limit(&mut sim);
    assert_eq!(sim.switched_to().len(), 1, "not yet: c after the exit");
    sim.input(Input::Exited { exit: Exit::Code(0), last_screen: vec![] });
    sim.run(sim.secs() + 1.0);
    assert_eq!(sim.switched_to().last().map(|m| m.0.as_str()), Some("c"));
    sim.meters = vec![meter("a", 10.0, 100.0), meter("b", 100.0, 20.0), meter("c", 100.0, 10.0)];
    weekly_limit(&mut sim);
    assert_eq!(sim.switches().last().map(|s| s.0), Some(Held), "{:?}", sim.switches());
    assert_eq!(sim.switched_to().len(), 2, "no ping-pong: it waits");
}

#[test]
fn a_logged_out_account_is_passed_over_and_said_and_the_next_one_with_room_is_taken() {
    use crate::event::SwitchAction::*;
    let mut sim = moving_at_the_limit(false);
    // b has the most room but no credentials; c has room and is logged in.
    sim.meters = vec![meter("b", 5.0, 5.0), meter("c", 30.0, 20.0)];
    sim.logged_out = vec!["b".into()];
    weekly_limit(&mut sim);
    let asked: Vec<Vec<String>> = sim
        .log
        .iter()
        .filter_map(|(_, e)| match e {
            Effect::Meters { accounts } => Some(accounts.iter().map(|a| a.name.clone()).collect()),
            _ => None,
        })
        .collect();
    assert_eq!(asked, [vec!["b".to_string(), "c".to_string()]], "the other accounts' logins are asked for");
    assert_eq!(
        sim.switches(),
        [
            (Held, Some("a".into()), Some("b".into())),
            (Due, Some("a".into()), Some("c".into())),
            (Switched, Some("a".into()), Some("c".into()))
        ],
        "b is said to be logged out, and c is taken"
    );
    let said = sim.events().find_map(|(_, k)| match k {
        EventKind::AccountSwitch { action: Held, to: Some(_), reason, .. } => Some(reason.clone()),
        _ => None,
    });
    assert!(said.as_deref().is_some_and(|r| r.contains("account b is logged out") && r.contains("/login")), "{said:?}");
    sim.input(Input::Exited { exit: Exit::Code(0), last_screen: vec![] });
    sim.run(sim.secs() + 1.0);
    assert_eq!(sim.switched_to().last().map(|m| m.0.as_str()), Some("c"));

    // Every other account logged out: it waits for the reset where it is, and each is said once.
    let mut sim = moving_at_the_limit(false);
    sim.logged_out = vec!["b".into(), "c".into()];
    weekly_limit(&mut sim);
    assert_eq!(sim.switched_to().len(), 0, "the work stays where it was");
    let actions: Vec<_> = sim.switches().into_iter().map(|(a, _, to)| (a, to)).collect();
    assert_eq!(actions, [(Held, Some("b".into())), (Held, Some("c".into())), (Held, None)], "{actions:?}");
    assert!(sim.events().any(|(_, k)| matches!(k, EventKind::LimitDetected { .. })), "the limit wait goes on");
    weekly_limit(&mut sim);
    let logged_out_said = sim.switches().iter().filter(|(a, _, to)| *a == Held && to.is_some()).count();
    assert_eq!(logged_out_said, 2, "a second limit does not say it again");
}

#[test]
fn a_move_due_at_the_threshold_that_the_limit_beats_goes_at_the_limit() {
    use crate::event::SwitchAction::*;
    let mut sim = moving_at_the_limit(true);
    sim.meters = vec![meter("b", 10.0, 10.0)];
    sim.input(working());
    sim.input(sample(92.0, wall0() + hours(2), 40.0, wall0() + hours(72)));
    assert_eq!(sim.switches(), [(Due, Some("a".into()), Some("b".into()))], "due at the turn's end");
    // The turn is refused before it ends: no Stop to ask a handoff at.
    weekly_limit(&mut sim);
    assert_eq!(gathers(&sim), 1, "the handoff is built");
    assert_eq!(sim.switches().last().map(|s| s.0), Some(Switched));
}

#[test]
fn a_handoff_the_agent_wrote_lately_goes_with_the_move_and_nothing_is_built() {
    let mut sim = moving_at_the_limit(true);
    sim.meters = vec![meter("b", 10.0, 10.0), meter("a", 91.0, 40.0)];
    sim.input(working());
    sim.input(context(80.0));
    let mut with_respawn_off = sim;
    // The agent wrote one at the context threshold (auto-resume's own handoff).
    with_respawn_off.input(stop(false, "Done."));
    with_respawn_off.input(stop(true, HANDOFF));
    weekly_limit(&mut with_respawn_off);
    assert_eq!(gathers(&with_respawn_off), 0, "its own handoff is fresh: nothing is built");
    with_respawn_off.input(Input::Exited { exit: Exit::Code(0), last_screen: vec![] });
    with_respawn_off.run(with_respawn_off.secs() + 1.0);
    let prompt = with_respawn_off.switched_to()[0].1.clone().unwrap_or_default();
    assert!(prompt.contains(HANDOFF), "{prompt}");
}

#[test]
fn a_held_session_does_not_move_at_the_limit() {
    let mut sim = moving_at_the_limit(false);
    sim.meters = vec![meter("b", 10.0, 10.0)];
    sim.input(Input::Configure(crate::session::Change { held: Some(true), ..Default::default() }));
    weekly_limit(&mut sim);
    assert!(sim.switches().is_empty(), "{:?}", sim.switches());
    assert_eq!(gathers(&sim), 0);
}

#[test]
fn a_moves_first_turn_is_checked_for_its_handoff_and_told_when_it_did_not_carry_it() {
    for (prompt, received) in [(None, false), (Some("just continue"), false)] {
        let mut sim = moving_at_the_limit(false);
        sim.meters = vec![meter("b", 10.0, 10.0)];
        weekly_limit(&mut sim);
        sim.input(Input::Exited { exit: Exit::Code(0), last_screen: vec![] });
        sim.run(sim.secs() + 1.0);
        let given = sim.switched_to()[0].1.clone().unwrap_or_default();
        // The client's first turn, with the prompt it was given (or another).
        let said = prompt.map(str::to_string);
        sim.input(hook(crate::hooks::Event::UserPromptSubmit { prompt: said }));
        let checked: Vec<bool> = sim
            .events()
            .filter_map(|(_, k)| if let EventKind::HandoffChecked { received } = k { Some(*received) } else { None })
            .collect();
        assert_eq!(checked, [received], "{prompt:?}");
        let told = crate::notice::may_notify(&EventKind::HandoffChecked { received });
        assert!(told, "a handoff that did not arrive is pushed");
        // Once: later turns are not checked.
        sim.input(hook(crate::hooks::Event::UserPromptSubmit { prompt: Some(given) }));
        assert_eq!(sim.events().filter(|(_, k)| matches!(k, EventKind::HandoffChecked { .. })).count(), 1);
    }
    // The prompt it was given, as the client submits it (its marker and all, newlines its own).
    let mut sim = moving_at_the_limit(false);
    sim.meters = vec![meter("b", 10.0, 10.0)];
    weekly_limit(&mut sim);
    sim.input(Input::Exited { exit: Exit::Code(0), last_screen: vec![] });
    sim.run(sim.secs() + 1.0);
    let raw = sim.log.iter().find_map(|(_, e)| match e {
        Effect::SwitchAccount { prompt: Some(p), .. } => Some(p.replace('\n', "\r\n")),
        _ => None,
    });
    sim.input(hook(crate::hooks::Event::UserPromptSubmit { prompt: raw }));
    assert!(sim.has(|k| matches!(k, EventKind::HandoffChecked { received: true })));
    assert!(!crate::notice::may_notify(&EventKind::HandoffChecked { received: true }), "nothing to tell");
}

// ---- Moving the work to the other agent, and back ------------------------------------------------

/// A Claude session that moves its work to Codex at a limit no account has room past, and back.
fn failing_over() -> Sim {
    let mut codex = start();
    contract(&mut codex, |c| c.agent = AgentKind::Codex);
    armed(&mut codex).program = "codex".into();
    let codex = codex.armed.contract().clone();
    let mut s = with_auto_resume(start(), resume::Policy::Own);
    armed(&mut s).prompt = Some("Work through TASKS.md, one step per turn.".into());
    armed(&mut s).standing = Some("Only TASKS.md.".into());
    armed(&mut s).failover = Some(crate::contract::Failover { contract: Box::new(codex), back: true });
    let mut sim = Sim::new(s);
    sim.input(hook(crate::hooks::Event::SessionStart { source: "startup".into() }));
    sim.gathered = crate::session::handoff::Gathered {
        commits: vec!["a1b2c3d Add the parser".into()],
        ..crate::session::handoff::Gathered::default()
    };
    sim
}

fn limit_until(sim: &mut Sim, reset: DateTime<Utc>) {
    sim.input(working());
    sim.input(Input::Hook {
        hook: crate::hooks::Hook {
            conversation: None,
            event: crate::hooks::Event::StopFailure {
                error: crate::hooks::StopError::RateLimit,
                last_message: Some("limit".into()),
            },
        },
        limit: Some(LimitText { kind: LimitKind::FiveHour, resets_at: Some(reset), line: "limit".into() }),
        facts: None,
        seen: None,
    });
}

fn relayed(sim: &Sim) -> Relayed {
    match sim.m.ended() {
        Some(life::End::Relayed(r)) => (**r).clone(),
        other => panic!("not relayed: {other:?}"),
    }
}

fn agent_switches(sim: &Sim) -> Vec<(crate::event::SwitchAction, AgentKind, AgentKind)> {
    sim.events()
        .filter_map(|(_, k)| match k {
            EventKind::AgentSwitch { action, from, to, .. } => Some((*action, *from, *to)),
            _ => None,
        })
        .collect()
}

/// Claude met a limit resetting in a minute, and Codex has the work: Codex's session, and when
/// the work goes back.
fn codex_has_the_work() -> (Sim, DateTime<Utc>) {
    let mut claude = failing_over();
    limit_until(&mut claude, wall0() + chrono::Duration::seconds(60));
    claude.input(Input::Exited { exit: Exit::Code(0), last_screen: vec![] });
    let over = relayed(&claude);
    let back = over.contract.terminal().and_then(|t| t.returns.as_ref()).map(|b| b.at).expect("the way back");
    (taken_over(&over, claude.now().wall), back)
}

/// The other agent's session as the runtime starts it from `r`.
fn taken_over(r: &Relayed, now: DateTime<Utc>) -> Sim {
    let mut s = start();
    s.armed = crate::contract::Armed::new(r.contract.clone()).unwrap();
    s.from = Resumed {
        conversation: r.conversation.clone(),
        handoff: Some(r.handoff.clone()),
        handoff_given: r.given,
        spent: r.spent.clone(),
        ..Resumed::default()
    };
    let mut sim = Sim::new(s);
    sim.slept = now - wall0();
    sim
}

#[test]
fn a_failover_agent_with_no_login_leaves_the_work_waiting_for_the_reset_and_is_asked_again_next_time() {
    use crate::event::SwitchAction::*;
    let mut claude = failing_over();
    claude.failover_login =
        Err("codex is logged out (no credentials in /home/u/.codex); log in with `codex login`".into());
    let reset = wall0() + chrono::Duration::seconds(120);
    limit_until(&mut claude, reset);
    let asked = claude.log.iter().filter(|(_, e)| matches!(e, Effect::CheckOther { .. })).count();
    assert_eq!(asked, 1, "the other agent's login is looked at before anything moves");
    assert_eq!(agent_switches(&claude), [(Held, AgentKind::Claude, AgentKind::Codex)], "said, and nothing moved");
    let held = claude.events().find_map(|(_, k)| match k {
        EventKind::AgentSwitch { action: Held, reason, .. } => Some(reason.clone()),
        _ => None,
    });
    assert!(
        held.as_deref().is_some_and(|r| r.contains("codex is logged out") && r.contains("stays with claude")),
        "{held:?}"
    );
    assert!(!claude.signalled(), "Claude is not stopped");
    assert!(!claude.has(|k| matches!(k, EventKind::HandoffBuilt { .. })), "no handoff for a move that does not go");
    assert_eq!(claude.states().last(), Some(&SessionState::LimitPaused), "it waits for the reset");
    claude.input(idle());
    claude.run(claude.until(reset) + 70.0);
    assert_eq!(claude.resumes().len(), 1, "and resumes at it");

    // Logged in again by the next limit: the work moves then.
    claude.failover_login = Ok(());
    claude.input(working());
    claude.input(stop(false, "Step done."));
    claude.input(idle());
    assert_ne!(claude.m.state(), SessionState::LimitPaused, "the limit is over");
    limit_until(&mut claude, reset + chrono::Duration::hours(5));
    assert_eq!(agent_switches(&claude).last(), Some(&(Switched, AgentKind::Claude, AgentKind::Codex)));
}

#[test]
fn a_failover_agent_whose_own_window_is_full_is_not_moved_to() {
    use crate::event::SwitchAction::*;
    let mut claude = failing_over();
    // Codex's week, as a Codex session last reported it, is spent for two more days.
    let mut meter = meter("codex", 30.0, 100.0);
    meter.account = None;
    meter.sample.seven_day_resets_at = Some(wall0() + hours(48));
    claude.failover_meter = Some(meter.clone());
    limit_until(&mut claude, wall0() + hours(1));
    assert_eq!(agent_switches(&claude), [(Held, AgentKind::Claude, AgentKind::Codex)]);
    let held = claude.events().find_map(|(_, k)| match k {
        EventKind::AgentSwitch { action: Held, reason, .. } => Some(reason.clone()),
        _ => None,
    });
    assert!(held.as_deref().is_some_and(|r| r.contains("codex's own window is full until")), "{held:?}");
    assert!(!claude.signalled(), "Claude keeps the work");

    // A window that has reset since the reading is not full: the work moves.
    let mut claude = failing_over();
    meter.sample.seven_day_resets_at = Some(wall0() - hours(1));
    claude.failover_meter = Some(meter);
    limit_until(&mut claude, wall0() + hours(1));
    assert_eq!(agent_switches(&claude).last(), Some(&(Switched, AgentKind::Claude, AgentKind::Codex)));
}

#[test]
fn at_a_limit_the_work_moves_to_the_other_agent_and_comes_back_at_the_reset() {
    use crate::event::SwitchAction::*;
    let mut claude = failing_over();
    let reset = wall0() + chrono::Duration::seconds(120);
    limit_until(&mut claude, reset);
    assert_eq!(
        agent_switches(&claude),
        [(Due, AgentKind::Claude, AgentKind::Codex), (Switched, AgentKind::Claude, AgentKind::Codex)]
    );
    assert!(claude.has(|k| matches!(k, EventKind::HandoffBuilt { .. })), "no handoff of its own: built");
    assert!(claude.signalled(), "Claude is stopped before Codex starts");
    assert!(claude.m.ended().is_none(), "not before its process is gone");
    claude.input(Input::Exited { exit: Exit::Code(0), last_screen: vec![] });
    let over = relayed(&claude);
    assert_eq!(over.contract.agent, AgentKind::Codex);
    assert_eq!(over.conversation, None, "a fresh Codex thread");
    assert!(
        over.prompt.starts_with(crate::automated::MARKER) && over.prompt.contains("Only TASKS.md."),
        "{}",
        over.prompt
    );
    assert!(over.prompt.contains("a1b2c3d Add the parser"), "Codex has no SessionStart: the prompt carries it all");
    let back = over.contract.terminal().and_then(|t| t.returns.clone()).expect("the way back");
    assert_eq!((back.conversation.as_deref(), back.contract.agent), (Some("conv-1"), AgentKind::Claude));
    // When the resume would have gone out: the reset, known to its minute, plus the margin.
    assert!(back.at > reset && back.at <= reset + chrono::Duration::seconds(70), "{} for {reset}", back.at);
    let reset = back.at;
    assert!(
        back.contract.terminal().is_some_and(|t| t.failover.is_some()),
        "Claude fails over again at its next limit"
    );
    assert!(over.stay.is_some(), "if Codex cannot start, the work stays with Claude");
    assert_eq!(claude.states().last(), Some(&SessionState::Starting), "not an end: the session goes on");
    assert!(claude.resumes().is_empty());

    // Codex works until Claude's window resets; at the prompt then, it is asked for its handoff.
    let mut codex = taken_over(&over, claude.now().wall);
    codex.input(working());
    codex.run(codex.until(reset) - 1.0);
    assert!(agent_switches(&codex).is_empty(), "not before the reset");
    codex.input(hook(crate::hooks::Event::TurnComplete { last_message: Some("Step done.".into()), input: vec![] }));
    codex.input(idle());
    codex.run(codex.until(reset) + 6.0);
    assert_eq!(agent_switches(&codex), [(Due, AgentKind::Codex, AgentKind::Claude)]);
    let asked = codex.typed_raw();
    assert!(
        asked.last().is_some_and(|t| t.starts_with(crate::automated::MARKER) && t.contains("handoff")),
        "{asked:?}"
    );
    codex.input(working());
    codex.input(hook(crate::hooks::Event::TurnComplete { last_message: Some(HANDOFF.into()), input: vec![] }));
    assert_eq!(agent_switches(&codex).last().map(|s| s.0), Some(Switched));
    codex.input(Input::Exited { exit: Exit::Code(0), last_screen: vec![] });
    let home = relayed(&codex);
    assert_eq!(home.contract.agent, AgentKind::Claude);
    assert_eq!(home.conversation.as_deref(), Some("conv-1"), "Claude resumes its own conversation");
    assert_eq!(home.handoff.0, HANDOFF, "Codex's own handoff");
    assert!(home.prompt.contains("Handoff: the parser is done"), "{}", home.prompt);
    assert!(
        home.stay.as_ref().is_some_and(|s| s.0.agent == AgentKind::Codex && s.2.is_none()),
        "Codex keeps it if Claude cannot start"
    );
}

#[test]
fn the_way_back_waits_for_the_turn_under_way_and_goes_after_its_handoff() {
    use crate::event::SwitchAction::*;
    let (mut codex, reset) = codex_has_the_work();
    codex.input(working());
    codex.run(codex.until(reset) + 30.0);
    assert_eq!(agent_switches(&codex), [(Due, AgentKind::Codex, AgentKind::Claude)]);
    assert!(codex.typed_raw().is_empty(), "nothing typed into a turn under way");
    assert!(!codex.signalled(), "never mid-turn");
    // The turn ends: the handoff is asked, and the next turn's end moves it.
    codex.input(hook(crate::hooks::Event::TurnComplete { last_message: Some("Step done.".into()), input: vec![] }));
    codex.input(idle());
    assert_eq!(codex.typed_raw().len(), 1, "asked once");
    codex.input(working());
    codex.input(hook(crate::hooks::Event::TurnComplete { last_message: Some(HANDOFF.into()), input: vec![] }));
    assert!(codex.signalled());
}

#[test]
fn a_second_agent_at_a_limit_itself_gives_the_work_back_with_a_built_handoff() {
    let (mut codex, reset) = codex_has_the_work();
    codex.gathered =
        crate::session::handoff::Gathered { commits: vec!["b2c3d4e Codex's step".into()], ..Default::default() };
    limit_until(&mut codex, wall0() + hours(5));
    assert!(codex.agent_switch_none_held(), "Codex has no failover of its own: it waits");
    codex.run(codex.until(reset) + 6.0);
    assert!(codex.has(|k| matches!(k, EventKind::HandoffBuilt { .. })), "it cannot answer: built");
    assert!(
        codex.typed_raw().iter().all(|t| !t.contains("handoff for your next self")),
        "nothing asked of a limited agent"
    );
    codex.input(Input::Exited { exit: Exit::Code(0), last_screen: vec![] });
    let home = relayed(&codex);
    assert!(home.prompt.contains("b2c3d4e Codex's step"), "{}", home.prompt);
}

#[test]
fn a_held_session_keeps_its_work_at_a_limit() {
    let mut claude = failing_over();
    claude.input(Input::Configure(crate::session::Change { held: Some(true), ..Default::default() }));
    limit_until(&mut claude, wall0() + hours(1));
    assert!(agent_switches(&claude).is_empty());
    assert!(!claude.signalled());
    assert_eq!(claude.m.state(), SessionState::LimitPaused);
}

impl Sim {
    fn agent_switch_none_held(&self) -> bool {
        agent_switches(self).is_empty()
    }
}

#[test]
fn a_stop_while_the_agent_stops_for_the_move_is_a_stop_and_nothing_starts_after_it() {
    let mut claude = failing_over();
    limit_until(&mut claude, wall0() + hours(1));
    assert!(claude.signalled(), "stopping for the move");
    claude.input(Input::Stop { source: "nightshift stop".into(), kind: StopKind::User });
    claude.input(Input::Exited { exit: Exit::Code(0), last_screen: vec![] });
    assert!(
        matches!(claude.m.ended(), Some(life::End::Stopped { source, .. }) if source == "nightshift stop"),
        "{:?}",
        claude.m.ended()
    );
    assert_eq!(claude.states().last(), Some(&SessionState::Exited));
}
