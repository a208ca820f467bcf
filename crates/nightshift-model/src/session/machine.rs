//! The session machine: every decision one session makes, as data and one pure function.
//!
//! The actor turns what it hears — the agent's output judged by the detector, its exit, the user's
//! controls, statusLine samples, the time — into an [`Input`]; [`Machine::step`] returns the
//! [`Effect`]s to carry out (journal an event, type keys, signal the process group, start the agent
//! again, measure progress). Nothing here reads a clock, touches a process or writes a file, so
//! every night-time decision is tested in virtual time without a PTY.
//!
//! The state is one sub-machine per concern, each in its own file, owning its fields and carrying
//! only the data valid in it: the session's [`Life`] (live, between lives, ended), what its screen
//! shows, its respawn cycles and the user's hold, its usage [`Limit`] (clear, or paused with the
//! limit, where it came from and the resume plan) with the fresh-window guard, the breakers, what
//! the client's hooks said and the handoff, the budget, and the account switch. The session's
//! state is derived from them; only a life's own state events (a start's pid, an exit's code) are
//! journalled as they are, through the same one writer.

mod breakers;
mod budget;
mod cycles;
mod dialog;
mod fence;
mod hooks;
mod io;
mod life;
mod limit;
mod relay;
mod switch;

use std::time::Duration;

use chrono::{DateTime, Utc};
use std::time::Instant;

use super::{Change, Options, RespawnArm, Switch};
use crate::agent::{AgentKind, Dialog, DialogKind};
use crate::breaker::{BreakerState, CrashLoop, NoProgress};
use crate::child::{Exit, Signal};
use crate::detect::{Activity, Transition};
use crate::event::{EventKind, SessionState, StopKind};
use crate::limits::{self, menu::LimitMenu, resume, LimitText};
use crate::repo::Fingerprint;
use crate::respawn;

pub use crate::contract::SwitchSettings;
pub use hooks::continuation;
pub use io::{Effect, Input, Now, OtherAgent, Purpose, Resumed, Seen, Start};
pub use life::{End, Life};
pub use limit::Limit;
pub use relay::Relayed;
pub use switch::{Meter, DEFAULT_THRESHOLD as DEFAULT_SWITCH_THRESHOLD};

/// The gap between typed text and the Enter that submits it (see the runtime's `Pty::write_after`).
const ENTER_DELAY: Duration = Duration::from_millis(120);
/// How long after a typed handoff request its turn should have begun.
const ASK_CHECK: Duration = Duration::from_secs(3);
/// The pause between the Escape and the resume prompt.
const RESUME_AFTER_ESCAPE: Duration = Duration::from_millis(600);
/// How often a pending resume looks at the wall clock.
const RESUME_CHECK: Duration = Duration::from_secs(5);

/// One session's whole decision state: a few facts fixed at its start, the sub-machines, and what
/// was last journalled. Each sub-machine's fields are private to its file, so only that file
/// changes them; the others ask it narrow questions.
#[derive(Debug, Clone)]
pub struct Machine {
    agent: AgentKind,
    /// The dialogs respawn may accept by itself.
    auto_accept: Vec<DialogKind>,
    /// How long a stopped agent has before its group gets SIGKILL.
    stop_grace: Duration,
    /// Its lives: live, between lives, ended (`life.rs`).
    lives: life::Lives,
    /// What the agent's screen shows: its activity, and the dialog it waits on (`dialog.rs`).
    screen: dialog::Screen,
    /// Respawn as armed, the user's hold, what blocks cycles (`cycles.rs`).
    cycles: cycles::Cycles,
    /// The usage limits: paused or not, the notice on screen, the fresh-window guard, auto-resume
    /// (`limit.rs`).
    limits: limit::Watch,
    /// The crash-loop and no-progress breakers, and the working tree they judge by (`breakers.rs`).
    breakers: breakers::Breakers,
    /// What the client's hooks said: its conversation, whether it has hooks, the handoff
    /// (`hooks.rs`).
    client: hooks::Client,
    /// What it may spend and what it spent (`budget.rs`).
    budget: budget::Budget,
    /// The move to another account before the limit, when the session opted in (`switch.rs`).
    switching: Option<switch::Switching>,
    /// The move to the other agent at a limit, and back at the reset (`relay.rs`).
    relay: Option<relay::Relay>,
    /// Whether the agent runs in its own sandbox, in words (for the options).
    sandbox: Option<String>,
    /// Tonight's network fence and what it refused (`fence.rs`).
    fence: Option<fence::Fenced>,
    /// What the canary said of the client, in words (for the options).
    canary: Option<String>,
    /// The user's standing instructions, restated by every input the machine sends by itself.
    standing: Option<String>,
    /// When the session began, and the task it was given: a handoff Nightshift builds says them.
    began: DateTime<Utc>,
    opening: Option<String>,
    /// The agent's own commands a cycle types (`/clear`, `/init`).
    commands: crate::agent::CycleCommands,
    /// The state last journalled (written by `journal_state` only).
    state: SessionState,
    /// What decided the next change of state, for its reason.
    why: Option<String>,
    /// The session lets the machine sleep because its next action is out of reach, as journalled
    /// (`options.rs`).
    far: bool,
}

impl Machine {
    /// A session whose process `start.pid` has just started.
    pub fn new(start: Start, now: Now) -> (Self, Vec<Effect>) {
        let Start { armed, zone, pid, auto_accept, commands, guard, from, sandbox, fence, canary } = start;
        let first_prompt = from.prompt.clone();
        let (contract, t) = (armed.contract(), armed.terminal());
        // Respawn is armed for what is left of its hours: none when they are over.
        let respawn = t.respawn.clone().and_then(|mut settings| {
            let until = match t.respawn_until {
                Some(until) => {
                    settings.duration = (until - now.wall).to_std().ok()?;
                    until
                }
                None => now.wall + settings.duration,
            };
            Some(cycles::Respawn { until, cycle: respawn::State::new(settings, now.mono), preset: t.preset.clone() })
        });
        let mut m = Self {
            agent: contract.agent,
            auto_accept,
            stop_grace: t.stop_grace,
            lives: life::Lives::new(pid, now),
            screen: dialog::Screen::default(),
            cycles: cycles::Cycles::new(respawn, from.held),
            limits: limit::Watch::new(t.auto_resume.clone(), t.window_guard, t.pace, zone),
            breakers: breakers::Breakers::default(),
            state: SessionState::Running,
            why: None,
            far: false,
            client: hooks::Client::new(from.conversation, guard, from.handoff, from.handoff_given),
            budget: budget::Budget::new(t.budget, from.spent, Some(contract.started), now),
            switching: t.switch.clone().map(|s| switch::Switching::new(s, contract.account.clone())),
            relay: relay::Relay::new(contract, t, now),
            sandbox,
            fence: fence.map(fence::Fenced::new),
            canary,
            commands,
            standing: t.standing.as_deref().and_then(crate::automated::standing),
            began: contract.started,
            opening: t.prompt.clone(),
        };
        // A start whose first prompt carries the handoff (a move's): its first turn is checked for it.
        m.expect_handoff(first_prompt.as_deref());
        let mut fx = Vec::new();
        if let Some(r) = m.cycles.respawn() {
            let exclude = r.cycle.settings.own_files(m.agent.instructions_file());
            fx.push(Effect::Measure { purpose: Purpose::Baseline, exclude });
            let reason = format!(
                "idle timeout {} s, for {} min",
                r.cycle.settings.idle_timeout.as_secs_f64(),
                (r.cycle.settings.duration.as_secs_f64() / 60.0).round()
            );
            fx.push(Effect::Emit(EventKind::Respawn {
                action: respawn::Action::Armed,
                cycle: None,
                reason: Some(reason),
                cost_usd: None,
            }));
            fx.push(Effect::Emit(r.settings_event()));
        }
        if let Some(limit) = from.paused_on {
            // Started again on its conversation: the client has no continuation of its own armed.
            let exact = from.paused_exact;
            m.pause(limit, limits::Source::Journal, exact, limit::Timer::None, now, &mut fx);
        }
        m.refresh_blocker(now, &mut fx);
        m.settle_state(&mut fx);
        (m, fx)
    }

    /// The machine moved by one input at `now`.
    pub fn step(&mut self, input: Input, now: Now) -> Vec<Effect> {
        let mut fx = Vec::new();
        match input {
            Input::Activity { transition, menu, menu_limit } => {
                self.on_activity(transition, menu, menu_limit, now, &mut fx)
            }
            Input::TurnSeen => self.turn_seen(now, &mut fx),
            Input::LimitNotice(found) => self.on_limit_notice(found, now, &mut fx),
            Input::ExtraUsage => self.on_extra_usage(now, &mut fx),
            Input::NetRefused { host, port, command } => {
                let refused = fence::Fenced::refused(&mut self.fence, host, port, command);
                self.emit(refused, &mut fx);
            }
            Input::HostAllowed { host, by } => {
                let allowed = fence::Fenced::allowed(&mut self.fence, host, by);
                self.emit(allowed, &mut fx);
            }
            Input::Sample(sample) => self.on_sample(sample, now, &mut fx),
            Input::Typed { text, enter, by } => self.on_typed(text, enter, by, now, &mut fx),
            Input::Keys(bytes) => {
                if self.lives.life().is_live() {
                    self.typed_by(crate::event::Answerer::Terminal, now.mono);
                    fx.push(Effect::Write { after: Duration::ZERO, bytes });
                    self.drive(respawn::Input::UserInput, now, &mut fx);
                }
            }
            Input::Answer { dialog, keys, by } => self.answer_from_afar(&dialog, keys, by, now, &mut fx),
            Input::Stop { source, kind } => self.on_stop(source, kind, now, &mut fx),
            Input::ResetBreakers => self.reset_breakers(now, &mut fx),
            Input::Configure(change) => self.configure(change, now, &mut fx),
            Input::Exited { exit, last_screen } => self.on_exit(exit, last_screen, now, &mut fx),
            Input::Started { pid } => self.on_started(pid, now, &mut fx),
            Input::SpawnFailed { error, exit_code } => self.on_spawn_failed(error, exit_code, now, &mut fx),
            Input::Measured { purpose, fingerprint } => self.on_measured(purpose, fingerprint, now, &mut fx),
            Input::Hook { hook, limit, facts, seen } => {
                if let Some(seen) = seen {
                    self.on_activity(seen.transition, seen.menu, seen.menu_limit, now, &mut fx);
                    // The turn's end is journalled before what the hook decides after it.
                    self.settle_state(&mut fx);
                }
                self.on_hook(hook, limit, facts, now, &mut fx);
                // Every hook is answered by the machine, a pass included: the executor never
                // answers for it.
                if !fx.iter().any(|e| matches!(e, Effect::Answer(_))) {
                    fx.push(Effect::Answer(crate::hooks::Answer::Pass));
                }
            }
            Input::Drift { drift, capture } => {
                self.emit(EventKind::Drift { hook: drift.hook, screen: drift.screen, capture }, &mut fx)
            }
            Input::Meters(meters) => self.on_meters(meters, now, &mut fx),
            Input::OtherChecked(other) => self.on_other_checked(other, now, &mut fx),
            Input::Woke { from } => self.on_woke(from, now, &mut fx),
            Input::Reread(sample) => self.on_reread(sample, now, &mut fx),
            Input::Gathered(gathered) => {
                if !self.relay_gathered(&gathered, now, &mut fx) {
                    self.on_gathered(gathered, now, &mut fx);
                }
            }
            Input::Tick => self.on_tick(now, &mut fx),
        }
        self.settle_state(&mut fx);
        self.settle_awake(now, &mut fx);
        fx
    }

    /// When [`Input::Tick`] should come next, if time alone can change anything.
    pub fn next_deadline(&self) -> Option<Instant> {
        let cycle = self.cycles.next_deadline();
        let life = self.lives.life().next_deadline();
        let resume = self.limits.limit().next_check().filter(|_| self.lives.life().is_live() && !self.cycles.held());
        let notice = self.limits.notice_deadline();
        let budget = self.budget.deadline().filter(|_| self.lives.life().is_live());
        let breakers = self.breaker_deadline();
        let pace = self.limits.pace_deadline();
        [
            cycle,
            life,
            resume,
            self.limits.guard().next_deadline(),
            notice,
            budget,
            breakers,
            self.client.ask_check(),
            pace,
            self.relay.as_ref().and_then(relay::Relay::deadline),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The state last journalled.
    pub fn state(&self) -> SessionState {
        self.state
    }

    /// How the session ended, once it has: the actor stops then.
    pub fn ended(&self) -> Option<&life::End> {
        match self.lives.life() {
            Life::Ended(end) => Some(end),
            _ => None,
        }
    }

    /// Whether the agent's process runs now.
    pub fn is_live(&self) -> bool {
        self.lives.life().is_live()
    }

    fn emit(&self, kind: EventKind, fx: &mut Vec<Effect>) {
        fx.push(Effect::Emit(kind));
    }

    /// Says why the session's state is about to change (the reason of the state event that follows,
    /// if the state does change).
    fn because(&mut self, why: impl Into<String>) {
        self.why = Some(why.into());
    }

    /// The state the session is in, from everything the machine knows: a limit pause is not undone by
    /// the agent going idle under it, and an open breaker is not hidden by the prompt coming back.
    fn derived_state(&self) -> SessionState {
        match self.lives.life() {
            Life::Ended(_) => self.state,
            Life::Between { next: life::Next::BreakerOpen, .. } => SessionState::BreakerOpen,
            // Down, and about to be started again: not an end.
            Life::Between { .. } => SessionState::Starting,
            Life::Live { .. } if self.cycles.cycling() => SessionState::Respawning,
            Life::Live { .. } if self.limits.limit().is_paused() => SessionState::LimitPaused,
            Life::Live { .. } => match self.screen.activity() {
                Some(Activity::WaitingInput) => SessionState::WaitingInput,
                Some(Activity::Working) => SessionState::Working,
                _ if self.breakers.progress_open() => SessionState::BreakerOpen,
                Some(Activity::Idle) => SessionState::Idle,
                None => SessionState::Running,
            },
        }
    }

    /// Journals the session's state when it changed, with the reason of what changed it.
    fn settle_state(&mut self, fx: &mut Vec<Effect>) {
        let state = self.derived_state();
        let why = self.why.take();
        if state == self.state {
            return;
        }
        let mut kind = EventKind::state(state, why.unwrap_or_else(|| "the session's state changed".into()));
        if let (EventKind::State { dialog, .. }, SessionState::WaitingInput) = (&mut kind, state) {
            dialog.clone_from(&self.screen.dialog().cloned());
        }
        self.journal_state(kind, fx);
    }

    /// Journals a state event, and keeps its state as the one last journalled: the only place
    /// `state` is written. The lives' own (a start's pid, an exit's code) come here as they are;
    /// every other change of state is derived (see `derived_state`).
    fn journal_state(&mut self, kind: EventKind, fx: &mut Vec<Effect>) {
        if let Some(state) = kind.new_state() {
            self.state = state;
        }
        fx.push(Effect::Emit(kind));
    }

    /// Whether the session moves (to another account or agent) at this turn's end.
    fn moving_due(&self) -> bool {
        self.switch_due() || self.relay_due()
    }

    /// The turn ended with a move due: it goes.
    fn move_now(&mut self, now: Now, fx: &mut Vec<Effect>) {
        if self.switch_due() {
            self.switch_now(now, fx);
        } else if self.relay_due() {
            self.relay_now(now, fx);
        }
    }

    /// `text` as the machine sends it by itself: marked as an automated `what` with the user's
    /// standing instructions, and journalled as sent.
    fn automated(&self, what: crate::automated::Automated, text: &str, fx: &mut Vec<Effect>) -> String {
        let marked = crate::automated::mark(what, text, self.standing.as_deref());
        self.emit(EventKind::AutomatedInput { what, chars: marked.chars().count() }, fx);
        marked
    }

    /// Types `text`, then Enter on its own.
    fn type_text(&self, text: String, enter: bool, fx: &mut Vec<Effect>) {
        fx.push(Effect::Write { after: Duration::ZERO, bytes: text.into_bytes() });
        if enter {
            fx.push(Effect::Write { after: ENTER_DELAY, bytes: b"\r".to_vec() });
        }
    }

    fn on_activity(
        &mut self,
        t: Transition,
        menu: Option<LimitMenu>,
        menu_limit: Option<LimitText>,
        now: Now,
        fx: &mut Vec<Effect>,
    ) {
        self.screen_seen(t.to, t.verdict.dialog.clone(), &t.reason, now, fx);
        self.cycles.activity_seen();
        // The respawn machine hears of the activity before anything it unblocks: a limit ending on a
        // working agent must not let a cycle start on top of it.
        self.drive(respawn::Input::Activity(t.to), now, fx);
        // With the client's hooks its Stop ends the limit: a turn that starts may be refused.
        if t.to == Activity::Working && !self.client.heard() {
            self.clear_limit(now, fx);
        }
        // Without the client's hooks there is no Stop to ask a handoff at: the switch goes at the
        // prompt. (Codex's notify asks it by typing at the turn's end.)
        if t.to == Activity::Idle && !self.client.heard() && !self.asks_by_typing() && self.moving_due() {
            self.move_now(now, fx);
        }
        if t.to == Activity::Idle {
            self.prompt_back(now, fx);
        }
        if t.to == Activity::Working {
            self.client.turn_began();
        }
        self.because(t.reason);
        let dialog = self.screen.dialog().cloned();
        if let Some(Dialog { kind: dialog_kind, text, .. }) = &dialog {
            let auto = self.cycles.respawn().is_some_and(|r| r.cycle.settings.auto_accept);
            // Routine only: whatever an agent file says, a question or a permission waits for a
            // person (or a button from afar).
            let routine = matches!(dialog_kind, DialogKind::Trust | DialogKind::Confirmation);
            if auto && routine && !self.cycles.held() && self.auto_accept.contains(dialog_kind) {
                self.typed_by(crate::event::Answerer::Nightshift, now.mono);
                fx.push(Effect::Write { after: Duration::ZERO, bytes: b"\r".to_vec() });
                let text = text.as_ref().map(|t| t.chars().take(200).collect());
                self.emit(EventKind::AutoAccepted { dialog: *dialog_kind, text }, fx);
            }
            if *dialog_kind == DialogKind::Menu {
                self.on_limit_menu(menu, menu_limit, now, fx);
            }
        }
    }

    fn on_typed(&mut self, text: String, enter: bool, by: crate::event::Answerer, now: Now, fx: &mut Vec<Effect>) {
        if !self.lives.life().is_live() {
            tracing::info!("input dropped: the agent is not running");
            return;
        }
        self.typed_by(by, now.mono);
        self.emit(EventKind::Input { source: by.source().to_string(), chars: text.chars().count(), enter }, fx);
        self.type_text(text, enter, fx);
        self.drive(respawn::Input::UserInput, now, fx);
    }

    /// The budget: a crossing opens the budget breaker and stops the agent (no restart follows).
    fn check_budget(&mut self, now: Now, fx: &mut Vec<Effect>) {
        let Some(why) = self.budget.crossed(now) else { return };
        let (breaker, state) = (crate::breaker::BreakerKind::Budget, crate::breaker::BreakerState::Open);
        self.emit(EventKind::Breaker { breaker, state, reason: why.clone() }, fx);
        self.on_stop(format!("its budget: {why}"), StopKind::User, now, fx);
    }

    fn on_tick(&mut self, now: Now, fx: &mut Vec<Effect>) {
        self.ask_tick(now, fx);
        self.relay_tick(now, fx);
        self.check_budget(now, fx);
        self.breaker_tick(now, fx);
        self.life_tick(now, fx);
        self.notice_tick(now, fx);
        self.guard_tick(now, fx);
        if self.limits.pace_deadline().is_some_and(|t| t <= now.mono) {
            self.pace_tick(now, fx);
        }
        if self.cycles.next_deadline().is_some_and(|t| t <= now.mono) {
            self.drive(respawn::Input::Tick, now, fx);
            // The armed duration ended while the agent was down: nothing will start it again.
            self.end_if_unarmed(fx);
        }
        if self.lives.life().is_live()
            && !self.cycles.held()
            && self.limits.limit().next_check().is_some_and(|t| t <= now.mono)
        {
            self.resume_tick(now, fx);
        }
    }

    /// What keeps cycles from running now, if anything.
    fn blocker(&self, now: Now) -> Option<String> {
        if !self.lives.life().is_live() {
            return Some("the agent is not running".into());
        }
        if self.cycles.held() {
            return Some("held by the user".into());
        }
        if self.breakers.progress_open() {
            return Some("the no-progress breaker is open".into());
        }
        if self.limits.limit().is_paused() {
            return Some("paused on a usage limit".into());
        }
        if let Some(p) = self.limits.parked() {
            return Some(format!("parked {}", p.reason));
        }
        if self.limits.guard().active(now.wall) {
            return Some(if self.limits.guard().settings.not_tonight {
                "not tonight: the fresh window is left for you".into()
            } else {
                "the fresh window's reserve is reached".into()
            });
        }
        None
    }

    /// A snapshot of what the session does by itself.
    /// The client's conversation, as its hooks or notify named it.
    pub fn conversation(&self) -> Option<String> {
        self.client.conversation()
    }

    pub fn options(&self, now: Now) -> Options {
        self.options_at(now)
    }
}

// ---- What the session does by itself, as its handles see it and as the user changes it ----------

impl Machine {
    /// What the session does by itself, now.
    pub(super) fn options_at(&self, now: Now) -> Options {
        Options {
            respawn: self.cycles.respawn().map(|r| r.cycle.settings.clone()),
            preset: self.cycles.respawn().and_then(|r| r.preset.clone()),
            respawn_active: self.cycles.active().is_some(),
            respawn_until: self.cycles.respawn().map(|r| r.until),
            respawn_cycles: self.cycles.respawn().map_or(0, |r| r.cycle.cycles),
            auto_resume: self.limits.auto_resume().cloned(),
            held: self.cycles.held(),
            breakers: self.breakers.shown(),
            limit: self.limits.limit().paused().map(|p| crate::session::Paused { resets_at: p.limit.resets_at }),
            window_guard: self.limits.guard().settings,
            pace: self.limits.pace(),
            parked_until: self.limits.parked().map(|p| p.until),
            parked_why: self.limits.parked().map(|p| p.reason.clone()),
            awake: self.want(now),
            resume_due: self.limits.limit().waiting().filter(|w| !w.plan.failed).map(|w| w.plan.due),
            account_switch: self.switch_view(),
            breaker_retry_at: self.breaker_probe_at(now),
            budget: self.budget.limits(),
            spent_usd: self.budget.spent().spent,
            spent_tokens: self.budget.spent().tokens_spent,
            sandbox: self.sandbox.clone(),
            fence: fence::Fenced::view(&self.fence),
            guard: self.guard_view(),
            canary: self.canary.clone(),
        }
    }

    /// What the session needs of the machine now.
    pub(super) fn want(&self, now: Now) -> crate::awake::Want {
        let facts = crate::awake::Facts {
            ended: matches!(self.lives.life(), Life::Ended(_)),
            held: self.cycles.held(),
            working: self.lives.life().is_live() && self.screen.activity() == Some(Activity::Working),
            cycling: self.cycles.cycling(),
            restarting: matches!(
                self.lives.life(),
                Life::Between { next: life::Next::RestartAt(_) | life::Next::Measuring, .. }
            ),
            waiting_for_user: self.screen.activity() == Some(Activity::WaitingInput),
            resume_due: self.limits.limit().waiting().filter(|w| !w.plan.failed).map(|w| w.plan.due),
            armed_until: self.cycles.active().map(|r| r.until),
            cycles_blocked: self.cycles.blocked(),
            breaker_probe: self.breaker_probe_at(now),
            paced_until: self.limits.parked().map(|p| p.until),
        };
        crate::awake::want(&facts, now.wall)
    }

    /// Journals the moments the session lets the machine sleep because its next action is out of
    /// reach, and when it needs it again.
    pub(super) fn settle_awake(&mut self, now: Now, fx: &mut Vec<Effect>) {
        if matches!(self.lives.life(), Life::Ended(_)) {
            // Nothing more is journalled after the end (a kept resume must stay the last word).
            return;
        }
        let want = self.want(now);
        let far = !want.hold && want.next_action.is_some();
        if far != self.far {
            self.far = far;
            self.emit(EventKind::Awake { hold: want.hold, reason: want.reason }, fx);
        }
    }

    /// Applies the user's change to the session's options, journalling each part.
    pub(super) fn configure(&mut self, change: Change, now: Now, fx: &mut Vec<Effect>) {
        let source = if change.source.is_empty() { "a control request".to_string() } else { change.source };
        match change.respawn {
            Some(Switch::On(RespawnArm { preset, settings })) => self.arm_respawn(preset, settings, &source, now, fx),
            Some(Switch::Off) => self.disarm_respawn(&source, fx),
            None => {}
        }
        if let Some(auto_resume) = change.auto_resume {
            self.set_auto_resume(auto_resume, &source, now, fx);
        }
        if let Some(held) = change.held {
            self.hold(held, source, now, fx);
        }
    }
}

#[cfg(test)]
mod tests;
