//! Respawn cycles as armed, and the user's hold over what the session does by itself: the cycle
//! machine ([`crate::respawn`]) fed and carried out, what keeps it from running, and whether a
//! cycle shows as the session's state.

use super::*;

/// Respawn cycles as armed: the machine, the preset it came from and when it ends.
#[derive(Debug, Clone)]
pub(super) struct Respawn {
    pub cycle: respawn::State,
    pub preset: Option<String>,
    pub until: DateTime<Utc>,
}

impl Respawn {
    pub(super) fn active(&self) -> bool {
        self.cycle.phase != respawn::Phase::Finished
    }

    /// What the journal keeps of the arrangement, for a restore.
    pub(super) fn settings_event(&self) -> EventKind {
        EventKind::RespawnSettings {
            preset: self.preset.clone(),
            settings: Box::new(self.cycle.settings.clone()),
            until: self.until,
        }
    }
}

/// The session's cycles: respawn as armed (or not), the user's hold, and what blocks cycles now.
#[derive(Debug, Clone)]
pub(super) struct Cycles {
    armed: Option<Respawn>,
    held: bool,
    /// What the respawn machine was last told keeps cycles from running.
    blocked: Option<String>,
    /// A respawn cycle shows as the session's state (from its start until it is abandoned, or until
    /// the agent's next activity after its last step).
    cycling: bool,
}

impl Cycles {
    pub(super) fn new(armed: Option<Respawn>, held: bool) -> Self {
        Self { armed, held, blocked: None, cycling: false }
    }

    /// Respawn as armed, running or run out.
    pub(super) fn respawn(&self) -> Option<&Respawn> {
        self.armed.as_ref()
    }

    /// Respawn as armed, while it runs.
    pub(super) fn active(&self) -> Option<&Respawn> {
        self.armed.as_ref().filter(|r| r.active())
    }

    pub(super) fn held(&self) -> bool {
        self.held
    }

    pub(super) fn cycling(&self) -> bool {
        self.cycling
    }

    pub(super) fn blocked(&self) -> bool {
        self.blocked.is_some()
    }

    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.armed.as_ref().and_then(|r| r.cycle.next_deadline())
    }

    /// The agent's activity changed: once the cycle's last step is out, the activity says where the
    /// session is, not the cycle.
    pub(super) fn activity_seen(&mut self) {
        let mid_cycle = self.armed.as_ref().is_some_and(|r| {
            matches!(
                r.cycle.phase,
                respawn::Phase::Running { .. } | respawn::Phase::Pausing { .. } | respawn::Phase::Measuring { .. }
            )
        });
        if !mid_cycle {
            self.cycling = false;
        }
    }

    /// The agent's life ended: no cycle goes on in it.
    pub(super) fn life_ended(&mut self) {
        self.cycling = false;
    }
}

impl Machine {
    pub(super) fn refresh_blocker(&mut self, now: Now, fx: &mut Vec<Effect>) {
        let blocker = self.blocker(now);
        if blocker != self.cycles.blocked {
            self.cycles.blocked.clone_from(&blocker);
            self.drive(respawn::Input::Blocked(blocker), now, fx);
        }
    }

    /// Feeds the respawn machine and carries out what it says.
    pub(super) fn drive(&mut self, input: respawn::Input, now: Now, fx: &mut Vec<Effect>) {
        let Some(r) = &mut self.cycles.armed else { return };
        let (next, effects) = respawn::step(&r.cycle, input, now.mono);
        r.cycle = next;
        for effect in effects {
            self.respawn_effect(effect, now, fx);
        }
    }

    fn respawn_effect(&mut self, effect: respawn::Effect, now: Now, fx: &mut Vec<Effect>) {
        let respawn_event = |action, cycle, reason, cost_usd| EventKind::Respawn { action, cycle, reason, cost_usd };
        match effect {
            respawn::Effect::CycleStarted { cycle } => {
                let cost = self.budget.cycle_started();
                self.cycles.cycling = true;
                self.because(format!("respawn cycle {cycle} started"));
                self.emit(respawn_event(respawn::Action::CycleStarted, Some(cycle), None, cost), fx);
                let exclude = self
                    .cycles
                    .respawn()
                    .map(|r| r.cycle.settings.own_files(self.agent.instructions_file()))
                    .unwrap_or_default();
                fx.push(Effect::Measure { purpose: Purpose::Cycle(cycle), exclude });
                self.refresh_blocker(now, fx);
            }
            respawn::Effect::Send { cycle, step, text } => {
                if step == respawn::Step::Clear {
                    // The cycle's /clear forgets the agent's context: its uncommitted work is kept first.
                    fx.push(Effect::Salvage { reason: format!("before respawn cycle {cycle}'s /clear") });
                }
                use crate::automated::Automated;
                let text = match step {
                    respawn::Step::Update => {
                        let said = self.update_text(text.clone(), fx);
                        let what = if said == text { Automated::Update } else { Automated::HandoffRequest };
                        self.automated(what, &said, fx)
                    }
                    respawn::Step::Kickstart => {
                        let said = self.kickstart_text(text, fx);
                        self.automated(Automated::Kickstart, &said, fx)
                    }
                    // The client's own commands: not words to read.
                    respawn::Step::Clear => self.commands.clear.clone(),
                    respawn::Step::Init => self.commands.init.clone(),
                };
                self.type_text(text, true, fx);
                let outcome = respawn::StepOutcome::Sent;
                self.emit(EventKind::RespawnStep { cycle, step, outcome }, fx);
            }
            respawn::Effect::StepEnded { cycle, step, outcome } => {
                self.emit(EventKind::RespawnStep { cycle, step, outcome }, fx);
            }
            respawn::Effect::Abandoned { cycle, reason } => {
                self.cycles.cycling = false;
                self.because(format!("respawn cycle {cycle} abandoned: {reason}"));
                self.emit(respawn_event(respawn::Action::Abandoned, Some(cycle), Some(reason), None), fx);
            }
            respawn::Effect::CycleFinished { cycle } => {
                let spent = self.budget.cycle_spent();
                self.emit(respawn_event(respawn::Action::CycleFinished, Some(cycle), None, spent), fx);
            }
            respawn::Effect::Expired => {
                let reason = Some("the armed duration ended".to_string());
                self.emit(respawn_event(respawn::Action::Expired, None, reason, None), fx);
            }
        }
    }

    /// Respawn armed by the user, from where the session is now.
    pub(super) fn arm_respawn(
        &mut self,
        preset: Option<String>,
        settings: respawn::Settings,
        source: &str,
        now: Now,
        fx: &mut Vec<Effect>,
    ) {
        let reason = format!(
            "{}idle timeout {} s, for {} min ({source})",
            preset.as_deref().map(|p| format!("preset {p}: ")).unwrap_or_default(),
            settings.idle_timeout.as_secs_f64(),
            settings.duration.as_secs() / 60
        );
        let exclude = settings.own_files(self.agent.instructions_file());
        self.cycles.armed = Some(Respawn {
            until: now.wall + settings.duration,
            cycle: respawn::State::new(settings, now.mono),
            preset,
        });
        fx.push(Effect::Measure { purpose: Purpose::Baseline, exclude });
        self.emit(
            EventKind::Respawn { action: respawn::Action::Armed, cycle: None, reason: Some(reason), cost_usd: None },
            fx,
        );
        // The new machine starts from where the session is.
        if let Some(activity) = self.screen.activity() {
            self.drive(respawn::Input::Activity(activity), now, fx);
        }
        self.cycles.blocked = None;
        self.refresh_blocker(now, fx);
    }

    /// Respawn switched off by the user.
    pub(super) fn disarm_respawn(&mut self, source: &str, fx: &mut Vec<Effect>) {
        let Some(r) = self.cycles.armed.take() else { return };
        self.emit(
            EventKind::Respawn {
                action: respawn::Action::Disarmed,
                cycle: (r.cycle.cycles > 0).then_some(r.cycle.cycles),
                reason: Some(format!("switched off ({source})")),
                cost_usd: None,
            },
            fx,
        );
        if self.cycles.cycling {
            self.cycles.cycling = false;
            self.because("respawn switched off mid-cycle");
        }
        self.end_if_unarmed(fx);
    }

    /// The user holds the session (or releases it): no cycle, restart, resume or handoff while held.
    pub(super) fn hold(&mut self, held: bool, source: String, now: Now, fx: &mut Vec<Effect>) {
        if held == self.cycles.held {
            return;
        }
        self.cycles.held = held;
        let change = if held { crate::event::Automation::Held } else { crate::event::Automation::Released };
        self.emit(EventKind::Automation { change, source, detail: None }, fx);
        self.refresh_blocker(now, fx);
        if !held {
            self.check_resume_now(now);
            self.released(now);
        }
    }
}
