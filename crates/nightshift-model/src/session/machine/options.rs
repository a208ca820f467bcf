//! What a session does by itself, as its handles see it and as the user changes it.

use super::*;
use crate::session::{RespawnArm, Switch};

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
                Life::Between { next: super::life::Next::RestartAt(_) | super::life::Next::Measuring, .. }
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
