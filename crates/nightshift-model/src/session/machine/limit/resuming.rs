//! The resume after a limit's reset: armed when the limit pauses the session, the wall clock
//! looked at until it is due, typed at the agent's prompt, retried or failed, and kept over
//! Nightshift's own end; and the user's auto-resume switch. A part of `limit.rs` (it keeps the same
//! private fields of [`Watch`]).

use super::*;

/// How long a pending resume waits, after a wake, for the usage read again.
const REREAD_WAIT: Duration = Duration::from_secs(5);

/// When a pending resume looks at the wall clock next: every few seconds, and at its due instant
/// itself (a wall-clock deadline is never slept on as a whole: a suspend stops the monotonic clock).
pub(super) fn first_look(plan: &resume::Plan, now: Now) -> Instant {
    if plan.sent_at.is_some() || plan.failed {
        // Waiting to see the resume start a turn: every few seconds is soon enough.
        return now.mono + RESUME_CHECK;
    }
    let until_due = (plan.due - now.wall).to_std().unwrap_or(Duration::ZERO);
    now.mono + RESUME_CHECK.min(until_due.max(Duration::from_millis(100)))
}

impl Machine {
    /// The session learnt a reset while paused (a later one in the data or on screen, or a new notice
    /// after a resume): the plan hears of it, and the journal keeps the new due time for a restore.
    pub(super) fn learned_reset(&mut self, resets_at: Option<DateTime<Utc>>, now: Now, fx: &mut Vec<Effect>) {
        let guard = self.limits.guard.settings;
        let Limit::Paused(Paused { resume: Some(waiting), .. }) = &mut self.limits.limit else { return };
        let due = waiting.plan.due;
        let effects = waiting.plan.limited_again(resets_at, now.wall);
        if waiting.plan.due != due && !waiting.plan.failed {
            let (settings, due) = (waiting.plan.settings.clone(), waiting.plan.due);
            self.emit(EventKind::ResumeArmed { resets_at, due, settings, guard }, fx);
        }
        self.resume_effects(effects, fx);
    }

    /// The client's own word that a turn was refused while paused: after a resume, limited again
    /// (the plan tries again on its short ladder, never into the window); before one, the same
    /// limit, with a later reset if it says one.
    pub(in crate::session::machine) fn refused(
        &mut self,
        resets_at: Option<DateTime<Utc>>,
        now: Now,
        fx: &mut Vec<Effect>,
    ) {
        let Limit::Paused(p) = &mut self.limits.limit else { return };
        let later = resets_at.filter(|r| p.limit.resets_at.is_none_or(|known| *r > known));
        if later.is_some() {
            p.limit.resets_at = later;
        }
        let known = p.limit.resets_at;
        self.learned_reset(known, now, fx);
    }

    /// Whether a resume is pending that only the user may cancel (Nightshift's own end keeps it).
    pub(in crate::session::machine) fn keeps_resume(&self) -> bool {
        self.limits.limit.waiting().is_some_and(|w| !w.plan.failed)
    }

    /// Nightshift is ending while the session waits for a limit's reset: the agent is gone, and the
    /// resume is kept in the journal for the next Nightshift process (the kept resume is the
    /// session's last word there). The journal leaves the session paused, not ended.
    pub(in crate::session::machine) fn keep_resume(&mut self, exit: &Exit, fx: &mut Vec<Effect>) {
        let Some(due) = self.limits.limit.waiting().map(|w| w.plan.due) else { return };
        self.emit(
            EventKind::ResumeKept {
                due,
                reason: "Nightshift ended; the next Nightshift process (the app, or `nightshift restore`) resumes it"
                    .into(),
                exit_code: exit.code(),
                signal: exit.signal().map(str::to_string),
            },
            fx,
        );
    }

    /// What the usage data says of the quota now: a window counts as full only while its reset is
    /// ahead (a sample from before the reset says nothing about after it).
    fn quota(&self, now: DateTime<Utc>) -> resume::Quota {
        let Some(s) = self.limits.last_sample.as_ref().filter(|s| s.has_limits()) else {
            return resume::Quota::Unknown;
        };
        let full = |pct: Option<f64>, reset: Option<DateTime<Utc>>| {
            pct.is_some_and(|p| p >= 100.0) && reset.is_some_and(|r| r > now)
        };
        let stale = |pct: Option<f64>, reset: Option<DateTime<Utc>>| {
            pct.is_some_and(|p| p >= 100.0) && reset.is_none_or(|r| r <= now)
        };
        if full(s.five_hour_pct, s.five_hour_resets_at) || full(s.seven_day_pct, s.seven_day_resets_at) {
            resume::Quota::StillFull
        } else if stale(s.five_hour_pct, s.five_hour_resets_at) || stale(s.seven_day_pct, s.seven_day_resets_at) {
            resume::Quota::Unknown
        } else {
            resume::Quota::Back
        }
    }

    /// Starts waiting for the limit's reset to resume, and says so in the journal.
    pub(in crate::session::machine) fn arm_resume(
        &mut self,
        settings: resume::Settings,
        resets_at: Option<DateTime<Utc>>,
        exact: bool,
        timer: Timer,
        now: Now,
        fx: &mut Vec<Effect>,
    ) -> Waiting {
        let (plan, mut effects) = resume::Plan::new(settings.clone(), resets_at, exact, now.wall);
        if timer == Timer::None {
            effects.retain(|e| *e != resume::Effect::CancelClientTimer);
        }
        self.emit(EventKind::ResumeArmed { resets_at, due: plan.due, settings, guard: self.limits.guard.settings }, fx);
        self.resume_effects(effects, fx);
        let next_check = first_look(&plan, now);
        Waiting { plan, next_check }
    }

    /// The machine woke from a suspend: a resume still to go out waits until the usage is read again
    /// (a window that filled up meanwhile, a reset that moved), for [`REREAD_WAIT`] at most.
    pub(in crate::session::machine) fn on_woke(&mut self, from: DateTime<Utc>, now: Now, fx: &mut Vec<Effect>) {
        let pending = self.limits.limit.waiting().is_some_and(|w| w.plan.sent_at.is_none() && !w.plan.failed);
        tracing::info!(asleep_from = %from, pending, "awake again: the clocks and the usage are read again");
        if pending {
            self.limits.rereading = Some(now.mono + REREAD_WAIT);
            fx.push(Effect::ReadUsage);
        }
    }

    /// The usage as read again after a wake: its plan windows count as the latest sample's, and a
    /// resume that is due goes out at once.
    pub(in crate::session::machine) fn on_reread(
        &mut self,
        sample: Option<crate::usage::Sample>,
        now: Now,
        fx: &mut Vec<Effect>,
    ) {
        if self.limits.rereading.take().is_none() {
            return;
        }
        if let Some(read) = sample {
            // Only the plan windows: the context, cost and tokens are the session's own.
            let windows = read.windows();
            let mut merged = self.limits.last_sample.clone().unwrap_or_default();
            merged.five_hour_pct = windows.five_hour_pct.or(merged.five_hour_pct);
            merged.five_hour_resets_at = windows.five_hour_resets_at.or(merged.five_hour_resets_at);
            merged.seven_day_pct = windows.seven_day_pct.or(merged.seven_day_pct);
            merged.seven_day_resets_at = windows.seven_day_resets_at.or(merged.seven_day_resets_at);
            self.limits.last_sample = Some(merged);
            self.on_windows(&windows, now, fx);
        }
        self.check_resume_now(now);
        if self.lives.life().is_live() && !self.cycles.held() {
            self.resume_tick(now, fx);
        }
    }

    pub(in crate::session::machine) fn resume_tick(&mut self, now: Now, fx: &mut Vec<Effect>) {
        if let Some(until) = self.limits.rereading {
            if now.mono < until {
                if let Limit::Paused(Paused { resume: Some(waiting), .. }) = &mut self.limits.limit {
                    waiting.next_check = until;
                }
                return;
            }
            self.limits.rereading = None;
        }
        let quota = self.quota(now.wall);
        let guard = self.limits.guard.settings;
        let at_prompt = self.screen.activity() == Some(Activity::Idle);
        let Limit::Paused(Paused { resume: Some(waiting), limit, .. }) = &mut self.limits.limit else { return };
        waiting.next_check = first_look(&waiting.plan, now);
        // A resume is typed only at the agent's prompt: never into a busy pane, a dialog, or a client
        // just started again that has not shown its prompt yet. (Checking a resume sent goes on.)
        if !at_prompt && waiting.plan.sent_at.is_none() && now.wall >= waiting.plan.due {
            return;
        }
        let due = waiting.plan.due;
        let effects = waiting.plan.tick(now.wall, quota);
        let moved = waiting.plan.due != due && waiting.plan.sent_at.is_none() && !waiting.plan.failed;
        // A resume that started no turn is retried later: the journal keeps the new time for a
        // restore. (A postponement for a full window is not worth a line each time.)
        if moved && !effects.iter().any(|e| matches!(e, resume::Effect::Postponed { .. })) {
            let (settings, due, resets_at) = (waiting.plan.settings.clone(), waiting.plan.due, limit.resets_at);
            self.emit(EventKind::ResumeArmed { resets_at, due, settings, guard }, fx);
        }
        self.resume_effects(effects, fx);
    }

    /// The user switched auto-resume on or off; switched on while paused, the wait for the reset
    /// starts now.
    pub(in crate::session::machine) fn set_auto_resume(
        &mut self,
        change: crate::session::Switch<resume::Settings>,
        source: &str,
        now: Now,
        fx: &mut Vec<Effect>,
    ) {
        use crate::event::Automation;
        use crate::session::Switch;
        let source = source.to_string();
        match change {
            Switch::On(settings) => {
                let detail =
                    format!("{:?} policy, margin {} s", settings.policy, settings.margin.as_secs()).to_lowercase();
                self.limits.auto_resume = Some(settings.clone());
                let change = Automation::AutoResumeOn;
                self.emit(EventKind::Automation { change, source, detail: Some(detail) }, fx);
                // Already paused on a limit: start waiting for its reset now.
                let waiting_for = match &self.limits.limit {
                    Limit::Paused(p) if p.resume.is_none() => Some((p.limit.resets_at, p.exact)),
                    _ => None,
                };
                let guard = &self.limits.guard;
                if let Some((resets_at, exact)) = waiting_for {
                    if !guard.active(now.wall) && !guard.settings.not_tonight {
                        let waiting = self.arm_resume(settings, resets_at, exact, Timer::Maybe, now, fx);
                        if let Limit::Paused(p) = &mut self.limits.limit {
                            p.resume = Some(waiting);
                        }
                    }
                }
            }
            Switch::Off if self.limits.auto_resume.is_some() => {
                self.limits.auto_resume = None;
                if let Limit::Paused(p) = &mut self.limits.limit {
                    p.resume = None;
                }
                let change = Automation::AutoResumeOff;
                self.emit(EventKind::Automation { change, source, detail: None }, fx);
            }
            Switch::Off => {}
        }
    }

    /// A hold was released: a pending resume looks at the clock at once.
    pub(in crate::session::machine) fn check_resume_now(&mut self, now: Now) {
        if let Limit::Paused(Paused { resume: Some(waiting), .. }) = &mut self.limits.limit {
            waiting.next_check = now.mono;
        }
    }

    fn resume_effects(&mut self, effects: Vec<resume::Effect>, fx: &mut Vec<Effect>) {
        for effect in effects {
            match effect {
                resume::Effect::CancelClientTimer => {
                    fx.push(Effect::Write { after: Duration::ZERO, bytes: b"\x1b".to_vec() });
                }
                resume::Effect::Resume { attempt, prompt } => {
                    // Escape first: it also cancels a continuation the client still has pending, so
                    // there is never a second one on top of ours.
                    fx.push(Effect::Write { after: Duration::ZERO, bytes: b"\x1b".to_vec() });
                    let prompt = self.automated(crate::automated::Automated::Resume, &prompt, fx);
                    fx.push(Effect::Write { after: RESUME_AFTER_ESCAPE, bytes: prompt.into_bytes() });
                    fx.push(Effect::Write { after: ENTER_DELAY, bytes: b"\r".to_vec() });
                    self.emit(EventKind::ResumeSent { attempt }, fx);
                }
                resume::Effect::Postponed { until, reason } => {
                    tracing::info!(%until, "resume postponed: {reason}");
                }
                resume::Effect::Failed { reason } => {
                    self.emit(EventKind::LimitFailed { reason }, fx);
                }
            }
        }
    }
}
