//! The loop machine in virtual time: the clock is two numbers the specs move.

use std::time::Duration;

use std::time::Instant;

use chrono::{DateTime, Utc};

use super::*;
use crate::breaker::Budget;
use crate::loops::stream::Spend;

struct Sim {
    m: Machine,
    t0: Instant,
    wall0: DateTime<Utc>,
    /// Seconds since the start on each clock (the wall one runs ahead while the machine sleeps).
    mono: f64,
    wall: f64,
    fx: Vec<Effect>,
    /// The windows the next iteration to end reports.
    windows: Option<crate::usage::Sample>,
}

/// The zone the specs' user lives in: not UTC, so a local time read as UTC would show.
const ZONE: chrono_tz::Tz = chrono_tz::Europe::Berlin;

fn now_of(t0: Instant, wall0: DateTime<Utc>, mono: f64, wall: f64) -> Now {
    Now {
        mono: t0 + Duration::from_secs_f64(mono),
        wall: wall0 + chrono::Duration::milliseconds((wall * 1000.0) as i64),
    }
}

impl Sim {
    fn new(settings: Settings, projects: &[(&str, bool)]) -> Self {
        let projects = projects.iter().map(|(l, f)| Project { label: l.to_string(), tasks_file: *f }).collect();
        let mut sim = Self {
            m: Machine::new(settings, projects, crate::clock::Zone::new(ZONE)),
            t0: Instant::now(),
            wall0: "2026-11-30T22:00:00Z".parse().unwrap(),
            mono: 0.0,
            wall: 0.0,
            fx: Vec::new(),
            windows: None,
        };
        sim.input(Input::Start);
        sim
    }

    fn now(&self) -> Now {
        now_of(self.t0, self.wall0, self.mono, self.wall)
    }

    fn input(&mut self, input: Input) -> Vec<Effect> {
        let fx = self.m.step(input, self.now());
        self.fx.extend(fx.clone());
        fx
    }

    fn tasks(&mut self, project: usize, open: &[&str]) -> Vec<Effect> {
        self.input(Input::Tasks { project, open: open.iter().map(|s| s.to_string()).collect() })
    }

    /// Time passes (both clocks), ticking at each deadline on the way.
    fn run(&mut self, secs: f64) {
        let end = self.wall + secs;
        loop {
            let next = self.m.next_deadline().map(|d| (d - self.wall0).num_milliseconds() as f64 / 1000.0);
            match next.filter(|n| *n <= end) {
                Some(n) if n > self.wall => {
                    self.mono += n - self.wall;
                    self.wall = n;
                    self.input(Input::Tick);
                }
                Some(_) => {
                    let before = self.fx.len();
                    self.input(Input::Tick);
                    if self.fx.len() == before {
                        break;
                    }
                }
                None => break,
            }
            if self.m.is_ended() || self.running().is_some() {
                break;
            }
        }
        if self.wall < end && self.running().is_none() && !self.m.is_ended() {
            self.mono += end - self.wall;
            self.wall = end;
            self.input(Input::Tick);
        }
    }

    /// The machine sleeps for `secs`: the wall clock moves, the monotonic one does not.
    fn sleep(&mut self, secs: f64) {
        self.wall += secs;
        self.input(Input::Tick);
    }

    /// The last run spawned and not yet ended.
    fn running(&self) -> Option<Run> {
        self.m.running.clone()
    }

    fn spawned(&self) -> Vec<Run> {
        self.fx.iter().filter_map(|e| if let Effect::Spawn(r) = e { Some(r.clone()) } else { None }).collect()
    }

    /// The running session ends after `secs` with `outcome` costing `cost`.
    fn end(&mut self, secs: f64, outcome: Outcome, cost: Option<f64>, progress: bool) -> Vec<Effect> {
        self.mono += secs;
        self.wall += secs;
        let report = Report {
            outcome,
            spend: Spend { cost_usd: cost, tokens: cost.map(|c| (c * 1000.0) as u64) },
            conversation: Some("c".into()),
            result: None,
            duration_ms: Some((secs * 1000.0) as u64),
            complete: cost.is_some(),
            windows: self.windows.take(),
        };
        self.input(Input::Ended { report: Box::new(report), progress })
    }

    fn events(&self) -> Vec<EventKind> {
        self.fx.iter().filter_map(|e| if let Effect::Emit(k) = e { Some(k.clone()) } else { None }).collect()
    }

    fn last_state(&self) -> Option<(SessionState, String)> {
        self.events().into_iter().rev().find_map(|k| match k {
            EventKind::State { state, reason, .. } => Some((state, reason)),
            _ => None,
        })
    }
}

fn limit(at: DateTime<Utc>) -> Outcome {
    Outcome::Limit { resets_at: Some(at), message: "You've hit your 5-hour limit".into() }
}

fn transient() -> Outcome {
    Outcome::Transient { reason: "HTTP 529: overloaded".into() }
}

#[test]
fn three_tasks_run_in_order_each_checked_off_then_the_loop_ends() {
    let mut sim = Sim::new(Settings::default(), &[("api", true)]);
    sim.tasks(0, &["one", "two", "three"]);
    for task in ["one", "two", "three"] {
        let run = sim.running().expect("an iteration runs");
        assert_eq!((run.prompt.as_str(), run.task.as_deref(), run.probe), (task, Some(task), false));
        let fx = sim.end(10.0, Outcome::Done, Some(0.1), true);
        assert!(fx.contains(&Effect::CheckOff { project: 0, task: task.into() }), "{fx:?}");
    }
    assert!(sim.m.is_ended());
    let (state, reason) = sim.last_state().unwrap();
    assert_eq!(state, SessionState::Exited);
    assert!(reason.starts_with("every task is done (3 iteration(s), $0.30"), "{reason}");
    let iterations: Vec<u32> = sim.spawned().iter().map(|r| r.iteration).collect();
    assert_eq!(iterations, [1, 2, 3]);
}

#[test]
fn a_task_that_did_not_end_well_is_not_checked_off_and_is_tried_again() {
    let mut sim = Sim::new(Settings { max_iterations: Some(2), ..Settings::default() }, &[("api", true)]);
    sim.tasks(0, &["hard"]);
    let fx = sim.end(5.0, Outcome::Unfinished { reason: "max_turns".into() }, Some(0.2), false);
    assert!(!fx.iter().any(|e| matches!(e, Effect::CheckOff { .. })));
    assert_eq!(sim.running().unwrap().task.as_deref(), Some("hard"));
    sim.end(5.0, Outcome::Done, Some(0.2), false);
    assert!(sim.m.is_ended(), "two iterations: the cap");
    assert!(sim.last_state().unwrap().1.starts_with("ran its 2 iteration(s)"));
}

#[test]
fn the_cost_ceiling_stops_after_the_iteration_that_crossed_it() {
    let budget = Budget { max_cost_usd: Some(0.25), ..Budget::default() };
    let mut sim = Sim::new(Settings { budget, ..Settings::default() }, &[("api", false)]);
    sim.tasks(0, &["keep going"]);
    sim.end(5.0, Outcome::Done, Some(0.1), true);
    sim.end(5.0, Outcome::Done, Some(0.1), true);
    assert!(sim.running().is_some(), "$0.20 of $0.25: on");
    sim.end(5.0, Outcome::Done, Some(0.1), true);
    assert!(sim.m.is_ended());
    assert_eq!(sim.spawned().len(), 3);
    assert!(sim.events().iter().any(|e| matches!(e,
        EventKind::Breaker { breaker: BreakerKind::Budget, state: BreakerState::Open, reason } if reason == "spent $0.30 of its $0.25")));
}

#[test]
fn the_iteration_that_crosses_a_ceiling_still_has_its_task_checked_off_and_counted() {
    let budget = Budget { max_tokens: Some(2_000), ..Budget::default() };
    let mut sim = Sim::new(Settings { budget, ..Settings::default() }, &[("api", true)]);
    sim.tasks(0, &["one", "two", "three"]);
    // Codex's way: tokens, no cost.
    let codex = |tokens| Input::Ended {
        report: Box::new(Report {
            outcome: Outcome::Done,
            spend: Spend { cost_usd: None, tokens: Some(tokens) },
            conversation: None,
            result: None,
            duration_ms: None,
            complete: true,
            windows: None,
        }),
        progress: true,
    };
    sim.input(codex(1_240));
    assert_eq!(sim.running().unwrap().task.as_deref(), Some("two"));
    let fx = sim.input(codex(1_240));
    assert!(fx.contains(&Effect::CheckOff { project: 0, task: "two".into() }), "its work is done: {fx:?}");
    assert!(sim.m.is_ended());
    let (_, reason) = sim.last_state().unwrap();
    assert!(reason.ends_with("(2 iteration(s), 2480 tokens)"), "both counted, no cost made up: {reason}");
}

#[test]
fn a_token_ceiling_crossed_mid_iteration_stops_it_at_once() {
    let budget = Budget { max_tokens: Some(10_000), ..Budget::default() };
    let mut sim = Sim::new(Settings { budget, ..Settings::default() }, &[("api", false)]);
    sim.tasks(0, &["go"]);
    assert!(sim.input(Input::Tokens { so_far: 9_000 }).is_empty());
    let fx = sim.input(Input::Tokens { so_far: 10_500 });
    assert!(fx.iter().any(|e| matches!(e, Effect::Kill { .. })), "{fx:?}");
    assert!(sim.m.is_ended());
    // Its end, when the killed child is reaped, changes nothing.
    assert!(sim.end(1.0, Outcome::Transient { reason: "killed".into() }, None, false).is_empty());
}

#[test]
fn spend_that_cannot_be_measured_stops_a_run_with_a_spend_ceiling_and_not_one_without() {
    let budget = Budget { max_cost_usd: Some(100.0), ..Budget::default() };
    let mut sim = Sim::new(Settings { budget, ..Settings::default() }, &[("api", false)]);
    sim.tasks(0, &["go"]);
    sim.end(5.0, transient(), None, false);
    assert!(sim.m.is_ended(), "fail closed");
    assert!(sim.events().iter().any(|e| matches!(e, EventKind::SpendUnknown { iteration: 1, .. })));
    assert!(sim.last_state().unwrap().1.contains("could not be measured"));

    let clock_only = Budget { max_wall_clock: Some(Duration::from_secs(8 * 3600)), ..Budget::default() };
    let mut sim = Sim::new(Settings { budget: clock_only, ..Settings::default() }, &[("api", false)]);
    sim.tasks(0, &["go"]);
    sim.end(5.0, Outcome::Done, None, false);
    assert!(!sim.m.is_ended(), "the clock does not depend on what the child said");
    assert!(sim.events().iter().any(|e| matches!(e, EventKind::SpendUnknown { .. })), "said loudly all the same");
}

#[test]
fn transient_failures_retry_the_same_iteration_on_a_doubling_ladder_to_its_cap() {
    let mut sim = Sim::new(Settings { max_retries: 7, ..Settings::default() }, &[("api", true)]);
    sim.tasks(0, &["one"]);
    let mut waits = Vec::new();
    for _ in 0..7 {
        sim.end(1.0, transient(), Some(0.0), false);
        assert!(sim.running().is_none());
        let until = sim.m.next_deadline().unwrap();
        waits.push((until - sim.now().wall).num_seconds());
        sim.run(10_000.0);
        let run = sim.running().expect("the same iteration again");
        assert_eq!((run.iteration, run.task.as_deref()), (1, Some("one")), "not advanced");
    }
    assert_eq!(waits, [30, 60, 120, 240, 300, 300, 300]);
    assert_eq!(sim.running().unwrap().attempt, 8);
    sim.end(1.0, transient(), Some(0.0), false);
    assert!(sim.m.is_ended(), "the eighth failure is past --max-retries 7");
    assert!(sim.last_state().unwrap().1.contains("7 retries of the same iteration failed"));
    assert_eq!(sim.m.iterations(), 0, "no iteration ran to an end");
}

#[test]
fn zero_retries_means_never_give_up() {
    let mut sim = Sim::new(Settings::default(), &[("api", true)]);
    sim.tasks(0, &["one"]);
    for _ in 0..50 {
        sim.end(1.0, transient(), Some(0.0), false);
        sim.run(400.0);
    }
    assert!(!sim.m.is_ended() && sim.running().is_some());
    sim.end(1.0, Outcome::Done, Some(0.1), true);
    assert_eq!(sim.m.iterations(), 1);
}

#[test]
fn a_rejected_key_stops_the_loop_with_the_error() {
    let mut sim = Sim::new(Settings::default(), &[("api", true)]);
    sim.tasks(0, &["one"]);
    sim.end(1.0, Outcome::Failed { reason: "HTTP 401: Invalid API key".into() }, Some(0.0), false);
    assert!(sim.m.is_ended());
    assert!(sim.last_state().unwrap().1.contains("HTTP 401: Invalid API key"));
}

#[test]
fn a_limit_waits_for_its_reset_probing_every_30_minutes_then_runs_the_same_task() {
    let mut sim = Sim::new(Settings::default(), &[("api", true)]);
    sim.tasks(0, &["one", "two"]);
    let reset = sim.now().wall + chrono::Duration::hours(2);
    sim.end(1.0, limit(reset), Some(0.0), false);
    assert_eq!(sim.last_state().unwrap().0, SessionState::LimitPaused);
    let mut probes = 0;
    while sim.now().wall < reset + chrono::Duration::seconds(60) {
        sim.run(4.0 * 3600.0);
        let run = sim.running().expect("a probe or the iteration");
        if run.probe {
            probes += 1;
            assert!(run.prompt.starts_with(crate::automated::MARKER), "marked as Nightshift's: {}", run.prompt);
            assert!(run.prompt.ends_with(super::PROBE_ASK), "one word asked: {}", run.prompt);
            sim.end(2.0, limit(reset), Some(0.001), false);
        } else {
            break;
        }
    }
    assert_eq!(probes, 3, "at 30, 60 and 90 minutes of a 2 h wait (the 120th minute is the reset itself)");
    let run = sim.running().unwrap();
    assert_eq!((run.task.as_deref(), run.iteration, run.attempt), (Some("one"), 1, 2), "the same iteration");
    let at = sim.now().wall;
    assert!(at >= reset + chrono::Duration::seconds(60), "at the reset plus the margin: {at}");
    let (cost, _) = sim.m.spent();
    assert!((cost - 0.003).abs() < 1e-9, "the probes are charged to the budget: {cost}");
}

#[test]
fn a_probe_that_gets_an_answer_ends_the_wait_early() {
    let mut sim = Sim::new(Settings::default(), &[("api", true)]);
    sim.tasks(0, &["one"]);
    let reset = sim.now().wall + chrono::Duration::hours(5);
    sim.end(1.0, limit(reset), Some(0.0), false);
    sim.run(5.0 * 3600.0);
    assert!(sim.running().unwrap().probe);
    sim.end(2.0, Outcome::Done, Some(0.001), false);
    let run = sim.running().expect("the iteration again at once");
    assert!(!run.probe && run.task.as_deref() == Some("one"));
    assert!(sim.events().iter().any(|e| matches!(e, EventKind::LimitCleared { reason } if reason.contains("early"))));
    assert!((sim.now().wall - sim.wall0).num_minutes() < 40);
}

#[test]
fn a_limit_resetting_past_the_wall_clock_ceiling_stops_the_run_saying_when_the_quota_returns() {
    let budget = Budget { max_wall_clock: Some(Duration::from_secs(3 * 3600)), ..Budget::default() };
    let mut sim = Sim::new(Settings { budget, ..Settings::default() }, &[("api", true)]);
    sim.tasks(0, &["one"]);
    let reset: DateTime<Utc> = "2026-12-01T04:00:00Z".parse().unwrap();
    sim.end(1.0, limit(reset), Some(0.0), false);
    assert!(sim.m.is_ended());
    let reason = sim.last_state().unwrap().1;
    assert!(reason.contains("the quota returns at 2026-12-01T04:00:00"), "{reason}");
}

#[test]
fn the_wall_clock_ceiling_counts_a_sleeping_machine_and_says_how_long_it_slept() {
    let budget = Budget { max_wall_clock: Some(Duration::from_secs(3600)), ..Budget::default() };
    let mut sim = Sim::new(Settings { budget, ..Settings::default() }, &[("api", true)]);
    sim.tasks(0, &["one", "two"]);
    sim.end(600.0, Outcome::Done, Some(0.1), true);
    assert!(sim.running().is_some());
    sim.sleep(3600.0);
    assert!(sim.m.is_ended(), "the tick after waking ends it");
    assert!(sim.fx.iter().any(|e| matches!(e, Effect::Kill { .. })), "the running iteration is stopped");
    let reason = sim.last_state().unwrap().1;
    assert!(reason.contains("ran its 1h") && reason.contains("the machine slept 1h of it"), "{reason}");
}

#[test]
fn three_fruitless_iterations_back_off_15_30_60_then_120_minutes_and_progress_forgets() {
    let mut sim = Sim::new(Settings::default(), &[("api", false)]);
    sim.tasks(0, &["improve things"]);
    let mut waits = Vec::new();
    for round in 0..5 {
        for _ in 0..if round == 0 { 3 } else { 1 } {
            sim.end(60.0, Outcome::Done, Some(0.1), false);
        }
        assert!(sim.running().is_none(), "round {round}: backed off");
        let until = sim.m.next_deadline().unwrap();
        waits.push((until - sim.now().wall).num_minutes());
        sim.run(3.0 * 3600.0);
    }
    assert_eq!(waits, [15, 30, 60, 120, 120]);
    // Progress forgets the count: three more fruitless ones before the next back-off.
    sim.end(60.0, Outcome::Done, Some(0.1), true);
    sim.end(60.0, Outcome::Done, Some(0.1), false);
    sim.end(60.0, Outcome::Done, Some(0.1), false);
    assert!(sim.running().is_some());
    sim.end(60.0, Outcome::Done, Some(0.1), false);
    assert!(sim.running().is_none());
    assert_eq!((sim.m.next_deadline().unwrap() - sim.now().wall).num_minutes(), 15, "from the bottom again");
}

#[test]
fn a_new_task_ends_a_back_off() {
    let mut sim = Sim::new(Settings::default(), &[("api", true)]);
    sim.tasks(0, &["stuck"]);
    for _ in 0..3 {
        sim.end(60.0, Outcome::Unfinished { reason: "blocked".into() }, Some(0.1), false);
    }
    assert!(sim.running().is_none());
    sim.tasks(0, &["stuck", "a new one"]);
    let run = sim.running().expect("the back-off ended");
    assert_eq!(run.task.as_deref(), Some("stuck"), "the first open task");
}

#[test]
fn two_projects_alternate_and_a_finished_one_is_skipped() {
    let mut sim = Sim::new(Settings::default(), &[("api", true), ("web", true)]);
    sim.tasks(0, &["a1", "a2", "a3"]);
    sim.tasks(1, &["w1"]);
    let mut order = Vec::new();
    while let Some(run) = sim.running() {
        order.push(run.task.unwrap());
        sim.end(10.0, Outcome::Done, Some(0.1), true);
    }
    assert_eq!(order, ["a1", "w1", "a2", "a3"]);
    assert!(sim.last_state().unwrap().1.starts_with("every task is done"));
}

#[test]
fn one_backed_off_project_does_not_hold_up_the_others() {
    let mut sim = Sim::new(Settings::default(), &[("api", false), ("web", false)]);
    sim.tasks(0, &["improve api"]);
    sim.tasks(1, &["improve web"]);
    let mut seen = Vec::new();
    for _ in 0..8 {
        let run = sim.running().unwrap();
        seen.push(run.project);
        // api never settles anything; web always makes progress.
        sim.end(60.0, Outcome::Done, Some(0.1), run.project == 1);
    }
    assert_eq!(seen, [0, 1, 0, 1, 0, 1, 1, 1], "api backed off after its third fruitless iteration");
}

#[test]
fn stop_finishes_the_iteration_and_halt_kills_it() {
    let mut sim = Sim::new(Settings::default(), &[("api", true)]);
    sim.tasks(0, &["one", "two"]);
    let fx = sim.input(Input::Marker(Marker::Stop));
    assert!(!fx.iter().any(|e| matches!(e, Effect::Kill { .. } | Effect::End)), "{fx:?}");
    sim.end(10.0, Outcome::Done, Some(0.1), true);
    assert!(sim.m.is_ended(), "after the iteration");
    assert_eq!(sim.spawned().len(), 1);
    assert!(sim.fx.contains(&Effect::CheckOff { project: 0, task: "one".into() }), "the finished task is kept");

    let mut sim = Sim::new(Settings::default(), &[("api", true)]);
    sim.tasks(0, &["one"]);
    let fx = sim.input(Input::Marker(Marker::Halt));
    assert!(fx.iter().any(|e| matches!(e, Effect::Kill { .. })));
    sim.end(0.2, Outcome::Transient { reason: "killed".into() }, None, false);
    assert!(sim.m.is_ended());
    assert_eq!(sim.spawned().len(), 1, "no retry after a halt");
}

#[test]
fn stop_during_a_limit_wait_ends_the_loop_at_once() {
    let mut sim = Sim::new(Settings::default(), &[("api", true)]);
    sim.tasks(0, &["one"]);
    let reset = sim.now().wall + chrono::Duration::hours(3);
    sim.end(1.0, limit(reset), Some(0.0), false);
    let fx = sim.input(Input::Marker(Marker::Stop));
    assert!(fx.contains(&Effect::End), "{fx:?}");
    assert_eq!(sim.m.next_deadline(), None);
}

#[test]
fn pause_all_holds_a_loop_after_its_running_iteration_and_release_goes_on() {
    let mut sim = Sim::new(Settings::default(), &[("api", true)]);
    sim.tasks(0, &["one", "two"]);
    assert!(sim.running().is_some());
    sim.input(Input::Held { held: true, source: "Pause all".into() });
    assert!(sim.m.held());
    assert!(sim.running().is_some(), "the running iteration is not cut short");
    sim.end(10.0, Outcome::Done, Some(0.1), true);
    sim.run(3600.0);
    assert!(sim.running().is_none(), "no new iteration while held");
    assert!(!sim.m.is_ended());
    assert_eq!(sim.spawned().len(), 1);
    sim.input(Input::Held { held: false, source: "Resume all".into() });
    assert_eq!(sim.running().and_then(|r| r.task).as_deref(), Some("two"), "released: the next task");
    let changes: Vec<crate::event::Automation> = sim
        .events()
        .into_iter()
        .filter_map(|k| if let EventKind::Automation { change, .. } = k { Some(change) } else { None })
        .collect();
    assert_eq!(changes, [crate::event::Automation::Held, crate::event::Automation::Released]);
}

#[test]
fn a_morning_reserve_parks_the_next_iteration_never_the_running_one_until_the_window_resets() {
    let wall0: DateTime<Utc> = "2026-11-30T22:00:00Z".parse().unwrap();
    // 20 % kept for the morning two hours from now; the window resets an hour after it.
    let at = (wall0 + chrono::Duration::hours(2)).with_timezone(&ZONE).time();
    let pace = crate::limits::pace::PaceSettings {
        morning_reserve: Some(crate::limits::pace::MorningReserve { pct: 20.0, at }),
        weekly_pace: None,
    };
    let mut sim = Sim::new(Settings { pace, ..Settings::default() }, &[("api", true)]);
    sim.tasks(0, &["one", "two", "three"]);
    let reset = wall0 + chrono::Duration::hours(3);
    sim.windows = Some(crate::usage::Sample {
        five_hour_pct: Some(82.0),
        five_hour_resets_at: Some(reset),
        ..crate::usage::Sample::default()
    });
    // The running iteration ends as it would; the next one does not start.
    sim.end(60.0, Outcome::Done, Some(0.1), true);
    sim.tasks(0, &["two", "three"]);
    assert!(sim.running().is_none(), "parked");
    let paced: Vec<EventKind> = sim.events().into_iter().filter(|k| matches!(k, EventKind::Paced { .. })).collect();
    let [EventKind::Paced { until: Some(until), reason, .. }] = &paced[..] else { panic!("{paced:?}") };
    assert_eq!(*until, reset);
    assert!(reason.starts_with("to keep 20% of the 5-hour window for the morning"), "{reason}");
    assert!(sim.last_state().unwrap().1.starts_with("parked to keep 20%"), "{:?}", sim.last_state());
    // An hour on, still parked; at the reset the next task runs.
    sim.run(3600.0);
    assert!(sim.running().is_none());
    sim.run(7200.0);
    let run = sim.running().expect("the next iteration after the reset");
    assert_eq!(run.prompt, "two");
    assert!(sim.events().iter().any(|k| matches!(k, EventKind::Paced { until: None, .. })), "the park ends");
}
