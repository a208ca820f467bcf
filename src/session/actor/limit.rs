//! The session's usage limits: the notices and samples that pause it, the client's limit menu, and
//! the resume after the reset.

use super::*;

impl Session {
    /// The client's usage-limit menu (a weekly limit, or automatic continue off): a limit, and with
    /// auto-resume on, a menu to answer so the session is never left stuck on it — "wait here, then
    /// continue automatically" under the watch policy, "stop and wait" under own (Nightshift resumes
    /// itself) or not tonight. Never "upgrade"; nothing when the rows are not the known ones.
    pub(super) fn on_limit_menu(&mut self, pty: Option<&Pty>) {
        let Some(pty) = pty else { return };
        let Some(menu) = limits::menu::read(&self.screen.snapshot().rows) else { return };
        let stop = menu.stop.map(|k| (k, "stop and wait for the reset"));
        let choice = match &self.auto_resume {
            // Held: the user answers it.
            _ if self.held => None,
            _ if self.window_guard.not_tonight => stop,
            Some(s) if s.policy == resume::Policy::Watch => {
                menu.wait.map(|k| (k, "wait here, then continue automatically")).or(stop)
            }
            Some(_) => stop,
            None => None,
        };
        if let Some((key, what)) = choice {
            pty.write(vec![key as u8]);
            self.emit(EventKind::Automation {
                what: format!("answered the usage-limit menu with {key} ({what})"),
                source: "auto-resume".into(),
            });
        }
        if self.limit.is_none() {
            let now = self.emitter.now();
            let limit =
                menu.notice.as_deref().and_then(|n| limits::find_limit(n, now, &chrono::Local)).unwrap_or_else(|| {
                    LimitText {
                        kind: LimitKind::Unspecified,
                        resets_at: None,
                        line: menu.notice.clone().unwrap_or_else(|| "the client's usage-limit menu".into()),
                    }
                });
            self.pause(limit, "text", Some(pty));
        }
    }

    pub(super) fn guard_active(&self) -> bool {
        self.guarded_until.is_some_and(|until| until.is_none_or(|t| self.emitter.now() < t))
    }

    /// The frame's limit-notice region, read: a new notice pauses the session.
    pub(super) fn on_limit_region(&mut self, region: &str, pty: Option<&Pty>) {
        let now = self.emitter.now();
        let Some(found) = limits::find_limit(region, now, &chrono::Local) else {
            self.limit_seen_gone = true;
            return;
        };
        if self.limit.is_some() || !self.limit_seen_gone {
            return;
        }
        // Data beats text: a notice while the statusLine shows headroom in every window is stale.
        if let Some(s) = &self.last_sample {
            let headroom = |pct: Option<f64>, reset: Option<chrono::DateTime<chrono::Utc>>| {
                pct.is_some_and(|p| p < 100.0) || reset.is_some_and(|r| r <= now)
            };
            if s.has_limits()
                && headroom(s.five_hour_pct, s.five_hour_resets_at)
                && headroom(s.seven_day_pct, s.seven_day_resets_at)
            {
                tracing::info!(session = %self.id, line = %found.line, "limit notice dismissed: the usage data shows headroom");
                return;
            }
        }
        self.pause(found, "text", pty);
    }

    /// A usage sample at 100 % with its reset ahead is a limit, whatever the screen says.
    pub(super) fn on_sample(&mut self, sample: crate::usage::Sample, pty: Option<&Pty>) {
        let now = self.emitter.now();
        let full = |pct: Option<f64>, reset: Option<chrono::DateTime<chrono::Utc>>| {
            reset.filter(|r| *r > now && pct.is_some_and(|p| p >= 100.0))
        };
        let windows = [
            (full(sample.five_hour_pct, sample.five_hour_resets_at), LimitKind::FiveHour),
            (full(sample.seven_day_pct, sample.seven_day_resets_at), LimitKind::Weekly),
        ];
        // The later reset wins: the agent can work only when every full window has reset.
        let latest = windows.iter().filter_map(|(r, k)| r.map(|r| (r, *k))).max_by_key(|(r, _)| *r);
        if self.fresh_window && self.guarded_until.is_none() && self.window_guard.reserve_reached(sample.five_hour_pct)
        {
            self.guarded_until = Some(sample.five_hour_resets_at);
            self.emit(EventKind::WindowGuard {
                reason: format!(
                    "the fresh window is at {}%: the last {}% is left for you; no more resumes or respawn cycles until it resets",
                    sample.five_hour_pct.unwrap_or_default().round(),
                    self.window_guard.reserve_pct.unwrap_or_default().round()
                ),
            });
            self.refresh_blocker(pty);
            self.plan = None;
        }
        self.last_sample = Some(sample);
        match (latest, &mut self.limit) {
            (Some((resets_at, kind)), None) => {
                let line = format!(
                    "the statusLine reports the {} window full",
                    if kind == LimitKind::Weekly { "7-day" } else { "5-hour" }
                );
                self.pause(LimitText { kind, resets_at: Some(resets_at), line }, "data", pty);
            }
            (Some((resets_at, _)), Some(paused)) if paused.resets_at.is_none_or(|r| r < resets_at) => {
                paused.resets_at = Some(resets_at);
            }
            _ => {}
        }
    }

    pub(super) fn pause(&mut self, limit: LimitText, source: &str, pty: Option<&Pty>) {
        let until = match limit.resets_at {
            Some(at) => format!("until {}", crate::clock::format_ts(at)),
            None => "with no reset time given".to_string(),
        };
        self.emit(EventKind::LimitDetected {
            resets_at: limit.resets_at,
            source: source.to_string(),
            kind: limit.kind,
            line: limit.line.clone(),
        });
        self.set_state(SessionState::LimitPaused, format!("usage limit ({source}: {}) {until}", limit.line));
        if self.window_guard.not_tonight {
            // Not tonight: the fresh window is the user's. Cancel the client's own continuation too.
            if let Some(pty) = pty {
                pty.write(b"\x1b".to_vec());
            }
            self.emit(EventKind::WindowGuard {
                reason: "not tonight: the fresh window is left for you; the client's own continuation was cancelled"
                    .into(),
            });
        } else if let Some(settings) = self.auto_resume.clone().filter(|_| !self.guard_active()) {
            self.arm_resume(settings, limit.resets_at, pty);
        }
        self.limit = Some(limit);
        self.limit_seen_gone = false;
        self.refresh_blocker(pty);
    }

    /// A frame showed the agent in a turn, however short. After the reset (or a resume), that is the
    /// limit over: the client took the continuation.
    pub(super) fn turn_seen(&mut self, pty: Option<&Pty>) {
        let now = self.emitter.now();
        let resumed = self.plan.as_ref().is_some_and(|p| p.sent_at.is_some());
        let reset_passed = self.limit.as_ref().and_then(|l| l.resets_at).is_some_and(|r| r <= now);
        if resumed || reset_passed {
            self.clear_limit(pty, true);
        }
    }

    /// The limit is over. With `announce`, the session's state is said again (a quick turn may have
    /// come and gone without the detector's activity changing, and `limit_paused` must not linger).
    pub(super) fn clear_limit(&mut self, pty: Option<&Pty>, announce: bool) {
        if self.limit.take().is_none() {
            return;
        }
        self.plan = None;
        self.fresh_window = true;
        self.emit(EventKind::LimitCleared { reason: "the agent is working again".into() });
        if announce {
            self.set_state(self.activity_state(), "the usage limit is over: the agent took its continuation".into());
        }
        self.refresh_blocker(pty);
    }

    /// What the usage data says of the quota now: a window counts as full only while its reset is
    /// ahead (a sample from before the reset says nothing about after it).
    pub(super) fn quota(&self) -> resume::Quota {
        let now = self.emitter.now();
        let Some(s) = self.last_sample.as_ref().filter(|s| s.has_limits()) else { return resume::Quota::Unknown };
        let full = |pct: Option<f64>, reset: Option<chrono::DateTime<chrono::Utc>>| {
            pct.is_some_and(|p| p >= 100.0) && reset.is_some_and(|r| r > now)
        };
        let stale = |pct: Option<f64>, reset: Option<chrono::DateTime<chrono::Utc>>| {
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
    pub(super) fn arm_resume(
        &mut self,
        settings: resume::Settings,
        resets_at: Option<chrono::DateTime<chrono::Utc>>,
        pty: Option<&Pty>,
    ) {
        let (plan, effects) = resume::Plan::new(settings.clone(), resets_at, self.emitter.now());
        self.emit(EventKind::ResumeArmed { resets_at, due: plan.due, settings, guard: self.window_guard });
        self.plan = Some(plan);
        self.resume_next = Instant::now() + RESUME_CHECK;
        self.carry_out_resume(effects, pty);
    }

    pub(super) fn resume_tick(&mut self, pty: Option<&Pty>) {
        self.resume_next = Instant::now() + RESUME_CHECK;
        let quota = self.quota();
        let now = self.emitter.now();
        let Some(plan) = self.plan.as_mut() else { return };
        let effects = plan.tick(now, quota);
        self.carry_out_resume(effects, pty);
    }

    pub(super) fn carry_out_resume(&mut self, effects: Vec<resume::Effect>, pty: Option<&Pty>) {
        for effect in effects {
            match effect {
                resume::Effect::CancelClientTimer => {
                    if let Some(pty) = pty {
                        pty.write(b"\x1b".to_vec());
                    }
                }
                resume::Effect::Resume { attempt, prompt } => {
                    if let Some(pty) = pty {
                        // Escape first: it also cancels a continuation the client still has pending, so
                        // there is never a second one on top of ours.
                        pty.write(b"\x1b".to_vec());
                        pty.write_after(RESUME_AFTER_ESCAPE, prompt.into_bytes());
                        pty.write_after(ENTER_DELAY, b"\r".to_vec());
                    }
                    self.emit(EventKind::ResumeSent { attempt });
                }
                resume::Effect::Postponed { until, reason } => {
                    tracing::info!(session = %self.id, %until, "resume postponed: {reason}");
                }
                resume::Effect::Failed { reason } => {
                    self.emit(EventKind::LimitFailed { reason });
                }
            }
        }
    }
}
