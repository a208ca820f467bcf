//! The respawn machine in virtual time, against a scripted agent.

use super::*;

const S: fn(u64) -> Duration = Duration::from_secs;

/// A scripted agent: a prompt or `/init` makes it work for `turn`, then go idle; `/clear` only
/// redraws. Drives the machine through its deadlines and records what was sent when.
struct Sim {
    state: State,
    t0: Instant,
    now: Instant,
    turn: Duration,
    busy_until: Option<Instant>,
    sent: Vec<(Duration, Step)>,
    effects: Vec<(Duration, Effect)>,
    /// Turns too quick for the screen: no working signal, only the client's word that each ended.
    unseen: bool,
    /// How long a cycle's measure takes (`None`: it never comes back).
    measure: Option<Duration>,
    measured_at: Option<Instant>,
}

impl Sim {
    fn new(settings: Settings) -> Self {
        let t0 = Instant::now();
        Self {
            state: State::new(settings, t0),
            t0,
            now: t0,
            turn: S(20),
            busy_until: None,
            sent: vec![],
            effects: vec![],
            unseen: false,
            measure: Some(Duration::ZERO),
            measured_at: None,
        }
    }

    fn input(&mut self, input: Input) {
        let (state, fx) = step(&self.state, input, self.now);
        self.state = state;
        let mut measured = false;
        for e in fx {
            measured |= matches!(e, Effect::CycleStarted { .. }) && self.measure.is_some();
            if let Effect::Send { step: st, .. } = &e {
                self.sent.push((self.now - self.t0, *st));
                if st.starts_a_turn() {
                    self.busy_until = Some(self.now + self.turn);
                }
            }
            self.effects.push((self.now - self.t0, e));
        }
        if measured {
            if self.measure == Some(Duration::ZERO) {
                self.input(Input::Measured);
            } else {
                self.measured_at = self.measure.map(|m| self.now + m);
            }
        }
        // The detector: a turn shows as working right away.
        if !self.unseen
            && self.busy_until.is_some_and(|t| t > self.now)
            && self.state.activity != Some(Activity::Working)
        {
            self.input(Input::Activity(Activity::Working));
        }
    }

    /// Runs until `until` (seconds since start), ticking at every deadline.
    fn run(&mut self, until: u64) {
        let end = self.t0 + S(until);
        loop {
            let mut next = self.state.next_deadline().unwrap_or(end).min(end);
            if let Some(b) = self.busy_until {
                next = next.min(b);
            }
            if let Some(m) = self.measured_at {
                next = next.min(m);
            }
            if next <= self.now {
                next = self.now + Duration::from_millis(1);
            }
            if next > end {
                self.now = end;
                break;
            }
            self.now = next;
            if self.measured_at.is_some_and(|m| m <= self.now) {
                self.measured_at = None;
                self.input(Input::Measured);
            }
            if self.busy_until.is_some_and(|b| b <= self.now) {
                self.busy_until = None;
                self.input(if self.unseen { Input::TurnEnded } else { Input::Activity(Activity::Idle) });
            }
            self.input(Input::Tick);
            if self.now >= end {
                break;
            }
        }
    }

    fn steps(&self) -> Vec<Step> {
        self.sent.iter().map(|(_, s)| *s).collect()
    }

    fn abandoned(&self) -> Vec<String> {
        self.effects
            .iter()
            .filter_map(|(_, e)| if let Effect::Abandoned { reason, .. } = e { Some(reason.clone()) } else { None })
            .collect()
    }
}

#[test]
fn every_preset_has_its_exact_timings() {
    let expected =
        [("solo", 3, 60), ("subagents", 45, 240), ("team", 90, 480), ("ralph", 8, 480), ("overnight", 10, 480)];
    for (name, idle, minutes) in expected {
        let settings = builtin(name).unwrap();
        assert_eq!(settings.idle_timeout, S(idle), "{name}");
        assert_eq!(settings.duration, S(minutes * 60), "{name}");
        let mut sim = Sim::new(settings);
        sim.input(Input::Activity(Activity::Idle));
        sim.run(idle - 1);
        assert!(sim.sent.is_empty(), "{name}: no cycle before the idle timeout");
        sim.run(idle);
        assert_eq!(sim.sent.first().map(|s| s.0), Some(S(idle)), "{name}: the cycle starts at the idle timeout");
    }
    assert!(builtin("Ralph/Todo").is_some());
    assert!(builtin("nope").is_none());
}

#[test]
fn a_cycle_runs_update_clear_init_kickstart_each_after_the_previous_finished() {
    let mut sim = Sim::new(builtin("solo").unwrap());
    sim.input(Input::Activity(Activity::Idle));
    sim.run(120);
    assert_eq!(sim.steps()[..4], [Step::Update, Step::Clear, Step::Init, Step::Kickstart]);
    let times: Vec<u64> = sim.sent.iter().take(4).map(|(t, _)| t.as_secs()).collect();
    // update at 3 s, works 20 s → idle at 23 → +1 s delay → /clear at 24 → settles 3 s → +1 → /init at 28
    // → works 20 s → idle at 48 → +1 → kickstart at 49.
    assert_eq!(times, [3, 24, 28, 49]);
    let finished = sim.effects.iter().filter(|(_, e)| matches!(e, Effect::CycleFinished { cycle: 1 })).count();
    assert_eq!(finished, 1);
    // The kickstart's turn ends at 69; the next cycle starts 3 s later.
    assert_eq!(sim.sent[4], (S(72), Step::Update));
    assert_eq!(sim.state.cycles, 2);
}

#[test]
fn a_turn_too_quick_for_the_screen_ends_its_step_when_the_client_says_it_ended() {
    // Codex answers a short prompt in under a second: its screen never shows working, its notify
    // says the turn ended. Without that word each prompt step waits out the 15 s of no turn.
    let mut sim = Sim::new(builtin("solo").unwrap());
    sim.unseen = true;
    sim.turn = Duration::from_millis(600);
    sim.input(Input::Activity(Activity::Idle));
    sim.run(30);
    let times: Vec<u128> = sim.sent.iter().take(5).map(|(t, _)| t.as_millis()).collect();
    // update at 3 s, ended 3.6 → +1 → /clear 4.6 → settles 3 s → +1 → /init 8.6, ended 9.2 → +1 →
    // kickstart 10.2, ended 10.8 → idle 3 s → the next cycle's update at 13.8 (the idle time counts from
    // the turn's end, though the screen never left idle).
    assert_eq!(times, [3000, 4600, 8600, 10200, 13800]);
}

#[test]
fn a_cycles_first_step_waits_for_its_measure_so_a_breaker_it_opens_types_nothing() {
    // The measure takes 2 s: the update goes out once it is back.
    let mut sim = Sim::new(builtin("solo").unwrap());
    sim.measure = Some(S(2));
    sim.input(Input::Activity(Activity::Idle));
    sim.run(6);
    assert_eq!(sim.sent.first(), Some(&(S(5), Step::Update)));
    // The measure opens a breaker: the cycle ends with nothing typed.
    let mut sim = Sim::new(builtin("solo").unwrap());
    sim.measure = None;
    sim.input(Input::Activity(Activity::Idle));
    sim.run(4);
    assert!(matches!(sim.effects.last(), Some((_, Effect::CycleStarted { cycle: 1 }))), "{:?}", sim.effects);
    sim.input(Input::Blocked(Some("the no-progress breaker is open".into())));
    sim.input(Input::Measured);
    sim.run(120);
    assert_eq!(sim.steps(), [], "nothing typed");
    assert_eq!(sim.abandoned(), ["the no-progress breaker is open"]);
    // A measure that never comes back holds the cycle 30 s, not the night.
    let mut sim = Sim::new(builtin("solo").unwrap());
    sim.measure = None;
    sim.input(Input::Activity(Activity::Idle));
    sim.run(40);
    assert_eq!(sim.sent.first(), Some(&(S(33), Step::Update)));
}

#[test]
fn steps_are_skipped_as_the_settings_say() {
    let mut no_reset = builtin("solo").unwrap();
    no_reset.clear_and_init = false;
    assert_eq!(no_reset.steps(), [Step::Update, Step::Kickstart]);
    let mut sim = Sim::new(no_reset);
    sim.input(Input::Activity(Activity::Idle));
    sim.run(30);
    assert_eq!(sim.steps()[..2], [Step::Update, Step::Kickstart]);

    let mut no_update = builtin("solo").unwrap();
    no_update.update_prompt.clear();
    assert_eq!(no_update.steps(), [Step::Clear, Step::Init, Step::Kickstart]);
    let mut only_kick = builtin("solo").unwrap();
    only_kick.update_prompt.clear();
    only_kick.clear_and_init = false;
    assert_eq!(only_kick.steps(), [Step::Kickstart]);
    let mut nothing = only_kick.clone();
    nothing.kickstart_prompt = "  ".into();
    let mut sim = Sim::new(nothing);
    sim.input(Input::Activity(Activity::Idle));
    sim.run(60);
    assert!(sim.sent.is_empty(), "a cycle with no steps sends nothing");
}

#[test]
fn no_cycle_while_waiting_on_the_user_and_one_in_progress_is_abandoned() {
    let mut sim = Sim::new(builtin("solo").unwrap());
    sim.input(Input::Activity(Activity::WaitingInput));
    sim.run(60);
    assert!(sim.sent.is_empty(), "a question to the user is never answered by a cycle");

    let mut sim = Sim::new(builtin("solo").unwrap());
    sim.input(Input::Activity(Activity::Idle));
    sim.run(5); // update sent at 3, the agent works
    sim.busy_until = None;
    sim.input(Input::Activity(Activity::WaitingInput));
    assert_eq!(sim.abandoned(), ["the agent is waiting for the user"]);
    assert_eq!(sim.state.phase, Phase::Watching);
    sim.run(60);
    assert_eq!(sim.steps(), [Step::Update], "nothing more while it waits");
}

#[test]
fn no_cycle_within_the_user_quiet_time_after_typing() {
    let mut sim = Sim::new(builtin("solo").unwrap());
    sim.input(Input::UserInput);
    sim.input(Input::Activity(Activity::Idle));
    sim.run(29);
    assert!(sim.sent.is_empty());
    sim.run(31);
    assert_eq!(sim.sent.first().map(|s| s.0), Some(S(30)), "30 s after the last keystroke");

    // Typing during a cycle abandons it.
    let mut sim = Sim::new(builtin("solo").unwrap());
    sim.input(Input::Activity(Activity::Idle));
    sim.run(4);
    sim.input(Input::UserInput);
    assert_eq!(sim.abandoned(), ["the user is typing in the session"]);
}

#[test]
fn a_limit_pause_or_an_open_breaker_blocks_cycles_and_abandons_one_in_progress() {
    let mut sim = Sim::new(builtin("solo").unwrap());
    sim.input(Input::Blocked(Some("paused on a usage limit".into())));
    sim.input(Input::Activity(Activity::Idle));
    sim.run(100);
    assert!(sim.sent.is_empty());
    sim.input(Input::Blocked(None));
    sim.run(104);
    assert_eq!(sim.steps(), [Step::Update], "cycles resume once unblocked (the idle timer had run)");

    let mut sim = Sim::new(builtin("solo").unwrap());
    sim.input(Input::Activity(Activity::Idle));
    sim.run(25); // update done at 23, pausing before /clear at 24 → /clear sent
    sim.input(Input::Blocked(Some("the no-progress breaker is open".into())));
    assert_eq!(sim.abandoned(), ["the no-progress breaker is open"]);
    sim.run(200);
    assert_eq!(sim.steps(), [Step::Update, Step::Clear]);
}

#[test]
fn a_step_still_busy_at_its_timeout_abandons_the_cycle() {
    let mut settings = builtin("solo").unwrap();
    settings.step_timeout = S(60);
    let mut sim = Sim::new(settings);
    sim.turn = S(500);
    sim.input(Input::Activity(Activity::Idle));
    sim.run(100);
    assert_eq!(sim.steps(), [Step::Update]);
    assert!(sim
        .effects
        .iter()
        .any(|(t, e)| *t == S(63) && matches!(e, Effect::StepEnded { outcome: StepOutcome::TimedOut, .. })));
    assert_eq!(sim.abandoned().len(), 1);
}

#[test]
fn the_next_step_is_never_typed_into_a_busy_pane() {
    let mut sim = Sim::new(builtin("solo").unwrap());
    sim.input(Input::Activity(Activity::Idle));
    sim.run(23); // update done at 23; /clear due at 24
    sim.input(Input::Activity(Activity::Working)); // something woke the agent
    sim.run(24);
    assert_eq!(sim.steps(), [Step::Update]);
    assert_eq!(sim.abandoned(), ["the agent was busy when the next step was due"]);
}

#[test]
fn cycles_stop_when_the_duration_ends() {
    let mut settings = builtin("solo").unwrap();
    settings.duration = S(100);
    let mut sim = Sim::new(settings);
    sim.input(Input::Activity(Activity::Idle));
    sim.run(1000);
    assert!(sim.effects.iter().any(|(t, e)| *t == S(100) && *e == Effect::Expired));
    assert!(sim.sent.iter().all(|(t, _)| *t < S(100)));
    assert_eq!(sim.state.phase, Phase::Finished);
    assert_eq!(sim.state.next_deadline(), None);
}

#[test]
fn the_files_a_cycle_writes_itself_are_named_by_its_prompts_and_init() {
    let s = Settings::default();
    assert_eq!(s.own_files(Some("CLAUDE.md")), ["PROGRESS.md", "CLAUDE.md"]);
    let s = Settings {
        update_prompt: "Note it in docs/state.txt (see https://example.invalid/x.html), then stop.".into(),
        kickstart_prompt: "Go on.".into(),
        clear_and_init: false,
        ..Settings::default()
    };
    assert_eq!(s.own_files(Some("CLAUDE.md")), ["docs/state.txt"], "no /init, no URL, no sentence end");
}
