//! What a session does by itself, as its handles see it and as the user changes it.

use super::*;

impl Session {
    /// What the session does by itself, now.
    pub(super) fn options(&self) -> Options {
        let mut breakers = Vec::new();
        if self.crash.is_open() {
            breakers.push(("crash_loop".to_string(), BreakerState::Open.as_str().to_string()));
        }
        if self.progress.state != BreakerState::Closed {
            breakers.push(("no_progress".to_string(), self.progress.state.as_str().to_string()));
        }
        Options {
            respawn: self.cycle.as_ref().map(|c| c.settings.clone()),
            preset: self.preset.clone(),
            respawn_active: self.cycle.as_ref().is_some_and(|c| c.phase != respawn::Phase::Finished),
            respawn_until: self.respawn_until,
            respawn_cycles: self.cycle.as_ref().map_or(0, |c| c.cycles),
            auto_resume: self.auto_resume.clone(),
            held: self.held,
            breakers,
            limit: self.limit.as_ref().map(|l| crate::session::Paused { resets_at: l.resets_at }),
            window_guard: self.window_guard,
        }
    }

    /// Lets the handles see the options (every event may have changed them).
    pub(super) fn publish(&self) {
        let options = self.options();
        self.status.send_if_modified(|s| {
            let changed = s.options != options;
            if changed {
                s.options = options;
            }
            changed
        });
    }

    /// The session's state as its activity says (after something that was not activity ends).
    pub(super) fn activity_state(&self) -> SessionState {
        match self.watcher.state() {
            Some(Activity::Working) => SessionState::Working,
            Some(Activity::WaitingInput) => SessionState::WaitingInput,
            _ => SessionState::Idle,
        }
    }

    /// Applies the user's change to the session's options, journalling each part.
    pub(super) fn configure(&mut self, change: Change, pty: Option<&Pty>) {
        let source = if change.source.is_empty() { "a control request".to_string() } else { change.source };
        match change.respawn {
            Some(Switch::On(RespawnArm { preset, settings })) => {
                let reason = format!(
                    "{}idle timeout {} s, for {} min ({source})",
                    preset.as_deref().map(|p| format!("preset {p}: ")).unwrap_or_default(),
                    settings.idle_timeout.as_secs_f64(),
                    settings.duration.as_secs() / 60
                );
                self.respawn_until = Some(self.emitter.now() + settings.duration);
                self.cycle = Some(respawn::State::new(settings, Instant::now()));
                self.preset = preset;
                self.emit(EventKind::Respawn {
                    action: "armed".into(),
                    cycle: None,
                    reason: Some(reason),
                    cost_usd: None,
                });
                // The new machine starts from where the session is.
                if let Some(activity) = self.watcher.state() {
                    self.drive(Input::Activity(activity), pty);
                }
                self.blocked = None;
                self.refresh_blocker(pty);
            }
            Some(Switch::Off) => {
                if let Some(cycle) = self.cycle.take() {
                    self.respawn_until = None;
                    self.emit(EventKind::Respawn {
                        action: "disarmed".into(),
                        cycle: (cycle.cycles > 0).then_some(cycle.cycles),
                        reason: Some(format!("switched off ({source})")),
                        cost_usd: None,
                    });
                    if self.running && self.status.borrow().state == SessionState::Respawning {
                        self.set_state(self.activity_state(), "respawn switched off mid-cycle".into());
                    }
                }
            }
            None => {}
        }
        match change.auto_resume {
            Some(Switch::On(settings)) => {
                let what =
                    format!("auto-resume on ({:?} policy, margin {} s)", settings.policy, settings.margin.as_secs())
                        .to_lowercase();
                self.auto_resume = Some(settings.clone());
                self.emit(EventKind::Automation { what, source: source.clone() });
                // Already paused on a limit: start waiting for its reset now.
                if let (Some(limit), None) = (&self.limit, &self.plan) {
                    if !self.guard_active() && !self.window_guard.not_tonight {
                        let resets_at = limit.resets_at;
                        self.arm_resume(settings, resets_at, pty);
                    }
                }
            }
            Some(Switch::Off) if self.auto_resume.is_some() => {
                self.auto_resume = None;
                self.plan = None;
                self.emit(EventKind::Automation {
                    what: crate::session::AUTO_RESUME_OFF.into(),
                    source: source.clone(),
                });
            }
            Some(Switch::Off) | None => {}
        }
        if let Some(held) = change.held.filter(|h| *h != self.held) {
            self.held = held;
            let what = if held { crate::session::HELD } else { crate::session::RELEASED };
            self.emit(EventKind::Automation { what: what.into(), source });
            self.refresh_blocker(pty);
            if !held {
                self.resume_next = Instant::now();
            }
        }
        self.publish();
    }
}
