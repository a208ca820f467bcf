//! The session's usage limits: the notices and samples that pause it, the client's limit menu, the
//! fresh-window guard, and the resume after the reset.

use super::*;
use crate::limits::{LimitKind, Source};

/// Where the session stands with its plan's usage limits.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Limit {
    #[default]
    Clear,
    /// Paused on a limit until its window resets.
    Paused(Paused),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Paused {
    pub limit: LimitText,
    pub source: Source,
    /// The client may continue by itself at the reset (its own timer, which nobody cancelled).
    pub client_continues: bool,
    /// The resume being waited for, with auto-resume on.
    pub resume: Option<Waiting>,
    /// The reset is known to the second (the client's rate-limit data), not to a notice's minute.
    pub exact: bool,
}

/// A resume waited for.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    pub plan: resume::Plan,
    /// When the wall clock is looked at next.
    pub next_check: Instant,
}

impl Limit {
    pub fn is_paused(&self) -> bool {
        matches!(self, Self::Paused(_))
    }

    pub fn paused(&self) -> Option<&Paused> {
        match self {
            Self::Paused(p) => Some(p),
            Self::Clear => None,
        }
    }

    pub(super) fn waiting(&self) -> Option<&Waiting> {
        self.paused().and_then(|p| p.resume.as_ref())
    }

    /// When a pending resume looks at the wall clock next.
    pub(super) fn next_check(&self) -> Option<Instant> {
        self.waiting().filter(|w| !w.plan.failed).map(|w| w.next_check)
    }
}

/// Whether the client may have a continuation of its own armed when a limit pauses the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Timer {
    /// Its notice may say "Continuing automatically at …": Escape cancels it.
    Maybe,
    /// None to cancel (the limit menu, a restored session), and Escape would do something else.
    None,
}

/// The fresh-window guard: what of a 5-hour window that opens after a limit is left for the user.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Guard {
    pub settings: limits::WindowGuard,
    /// The 5-hour window now open began after a limit in this session.
    fresh_window: bool,
    /// Holding resumes and respawns until the fresh window resets (`Some(None)`: no reset known).
    until: Option<Option<DateTime<Utc>>>,
    /// While holding until a known reset, when the wall clock is looked at next.
    next_check: Option<Instant>,
}

/// The session's watch on its usage limits.
#[derive(Debug, Clone)]
pub(super) struct Watch {
    limit: Limit,
    auto_resume: Option<resume::Settings>,
    guard: Guard,
    /// The last limit-notice region read showed no limit: a notice now is a new one (an old one
    /// may linger on screen after its limit ended).
    notice_gone: bool,
    /// A limit notice on screen, waiting until then for the client's hook to say it first-hand.
    notice_held: Option<(LimitText, Instant)>,
    /// The statusLine's latest usage sample.
    last_sample: Option<crate::usage::Sample>,
    /// After a wake, the usage is being read again: a pending resume waits for it until then.
    rereading: Option<Instant>,
    /// The pace cycles keep, where it parked them, and when the wall clock is looked at next
    /// while parked.
    pace: crate::limits::pace::PaceSettings,
    parked: Option<crate::limits::pace::Parking>,
    pace_check: Option<Instant>,
    /// The client works on the plan's extra usage past a full window, until a window resets.
    pub(super) extra: Option<super::extra::Extra>,
}

/// How often parked cycles look at the wall clock.
const PACE_CHECK: Duration = Duration::from_secs(30);

impl Watch {
    pub(super) fn new(
        auto_resume: Option<resume::Settings>,
        guard: limits::WindowGuard,
        pace: crate::limits::pace::PaceSettings,
    ) -> Self {
        Self {
            limit: Limit::Clear,
            auto_resume,
            guard: Guard::new(guard),
            notice_gone: true,
            notice_held: None,
            last_sample: None,
            rereading: None,
            pace,
            parked: None,
            pace_check: None,
            extra: None,
        }
    }

    /// The latest usage sample.
    pub(super) fn last_sample(&self) -> Option<&crate::usage::Sample> {
        self.last_sample.as_ref()
    }

    pub(super) fn limit(&self) -> &Limit {
        &self.limit
    }

    pub(super) fn guard(&self) -> &Guard {
        &self.guard
    }

    pub(super) fn auto_resume(&self) -> Option<&resume::Settings> {
        self.auto_resume.as_ref()
    }

    /// Where the pace parked the cycles, if it did.
    pub(super) fn parked(&self) -> Option<&crate::limits::pace::Parking> {
        self.parked.as_ref()
    }

    pub(super) fn pace(&self) -> crate::limits::pace::PaceSettings {
        self.pace
    }

    /// When parked cycles look at the clock again.
    pub(super) fn pace_deadline(&self) -> Option<Instant> {
        self.pace_check
    }

    /// When a notice held for the client's hook stands on its own.
    pub(super) fn notice_deadline(&self) -> Option<Instant> {
        self.notice_held.as_ref().map(|(_, at)| *at)
    }
}

/// How long a pending resume waits, after a wake, for the usage read again.
const REREAD_WAIT: Duration = Duration::from_secs(5);

/// How long a limit notice on screen waits for the client's own `StopFailure` hook.
const NOTICE_GRACE: Duration = Duration::from_millis(1500);

/// How often a guard holding until a reset looks at the wall clock.
const GUARD_CHECK: Duration = Duration::from_secs(30);

impl Guard {
    pub(super) fn new(settings: limits::WindowGuard) -> Self {
        Self { settings, fresh_window: false, until: None, next_check: None }
    }

    pub(super) fn active(&self, now: DateTime<Utc>) -> bool {
        self.until.is_some_and(|until| until.is_none_or(|t| now < t))
    }

    fn hold_until(&mut self, until: Option<DateTime<Utc>>, now: Now) {
        self.until = Some(until);
        self.next_check = until.map(|_| now.mono + GUARD_CHECK);
    }

    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.next_check
    }

    /// Time passed: the window the guard held has reset (its reserve is spent or not, the next
    /// window is not "fresh after a limit"), or it holds on.
    pub(super) fn tick(&mut self, now: Now) -> bool {
        let Some(Some(until)) = self.until else { return false };
        if now.wall < until {
            self.next_check = Some(now.mono + GUARD_CHECK);
            return false;
        }
        self.until = None;
        self.fresh_window = false;
        self.next_check = None;
        true
    }
}

/// When a pending resume looks at the wall clock next: every few seconds, and at its due instant
/// itself (a wall-clock deadline is never slept on as a whole: a suspend stops the monotonic clock).
fn first_look(plan: &resume::Plan, now: Now) -> Instant {
    if plan.sent_at.is_some() || plan.failed {
        // Waiting to see the resume start a turn: every few seconds is soon enough.
        return now.mono + RESUME_CHECK;
    }
    let until_due = (plan.due - now.wall).to_std().unwrap_or(Duration::ZERO);
    now.mono + RESUME_CHECK.min(until_due.max(Duration::from_millis(100)))
}

impl Machine {
    /// The client's usage-limit menu (a weekly limit, or automatic continue off): a limit, and with
    /// auto-resume on, a menu to answer so the session is never left stuck on it — "wait here, then
    /// continue automatically" under the watch policy, "stop and wait" under own (Nightshift resumes
    /// itself) or not tonight. Never "upgrade"; nothing when the rows are not the known ones.
    pub(super) fn on_limit_menu(
        &mut self,
        menu: Option<LimitMenu>,
        menu_limit: Option<LimitText>,
        now: Now,
        fx: &mut Vec<Effect>,
    ) {
        let Some(menu) = menu else { return };
        let stop = menu.stop.map(|k| (k, "stop and wait for the reset"));
        let choice = match &self.limits.auto_resume {
            // Held: the user answers it.
            _ if self.cycles.held() => None,
            _ if self.limits.guard.settings.not_tonight => stop,
            Some(s) if s.policy == resume::Policy::Watch => {
                menu.wait.map(|k| (k, "wait here, then continue automatically")).or(stop)
            }
            Some(_) => stop,
            None => None,
        };
        if let Some((key, what)) = choice {
            self.typed_by(crate::event::Answerer::Nightshift);
            fx.push(Effect::Write { after: Duration::ZERO, bytes: vec![key as u8] });
            self.emit(
                EventKind::Automation {
                    change: crate::event::Automation::MenuAnswered,
                    source: "auto-resume".into(),
                    detail: Some(format!("with {key} ({what})")),
                },
                fx,
            );
        }
        if !self.limits.limit.is_paused() {
            let limit = menu_limit.unwrap_or_else(|| LimitText {
                kind: LimitKind::Unspecified,
                resets_at: None,
                line: menu.notice.clone().unwrap_or_else(|| "the client's usage-limit menu".into()),
            });
            // The menu armed nothing to cancel, and Escape on it would answer it.
            self.pause(limit, Source::Text, false, Timer::None, now, fx);
        }
    }

    /// The frame's limit-notice region was read: a new notice pauses the session.
    pub(super) fn on_limit_notice(&mut self, found: Option<LimitText>, now: Now, fx: &mut Vec<Effect>) {
        let Some(found) = found else {
            self.limits.notice_gone = true;
            // The client's notice is gone after our resume, or after the reset with its own timer
            // running: it took the continuation, even one answered too fast to show a turn. (With
            // its hooks, its Stop says so, and a refused turn's StopFailure says not.)
            if let Some(p) = self.limits.limit.paused().filter(|_| !self.client.heard()) {
                let resumed = p.resume.as_ref().is_some_and(|w| w.plan.sent_at.is_some());
                let reset_passed = p.limit.resets_at.is_some_and(|r| r <= now.wall);
                if resumed || (reset_passed && p.client_continues) {
                    self.clear_limit(now, fx);
                }
            }
            return;
        };
        if let Limit::Paused(p) = &mut self.limits.limit {
            // A notice drawn anew, or one showing a later reset, is the limit seen again: after a
            // resume, another window ran out; before one, a later reset to wait for. The same
            // notice still on screen, read once its minute is long past, names tomorrow's time:
            // it is not a later limit.
            let a_day_on = found
                .resets_at
                .zip(p.limit.resets_at)
                .is_some_and(|(found, known)| (found - known - chrono::Duration::days(1)).num_seconds().abs() <= 60);
            let same = !self.limits.notice_gone && found.line == p.limit.line && a_day_on;
            let later = !same && found.resets_at.is_some_and(|r| p.limit.resets_at.is_none_or(|known| r > known));
            if self.limits.notice_gone || later {
                self.limits.notice_gone = false;
                let sent = p.resume.as_ref().is_some_and(|w| w.plan.sent_at.is_some());
                if found.resets_at.is_some() && (later || sent) {
                    p.limit.resets_at = found.resets_at;
                }
                self.learned_reset(found.resets_at, now, fx);
            }
            return;
        }
        if !self.limits.notice_gone {
            return;
        }
        // Data beats text: a notice while the statusLine shows headroom in every window is stale.
        if let Some(s) = &self.limits.last_sample {
            let headroom = |pct: Option<f64>, reset: Option<DateTime<Utc>>| {
                pct.is_some_and(|p| p < 100.0) || reset.is_some_and(|r| r <= now.wall)
            };
            if s.has_limits()
                && headroom(s.five_hour_pct, s.five_hour_resets_at)
                && headroom(s.seven_day_pct, s.seven_day_resets_at)
            {
                tracing::info!(line = %found.line, "limit notice dismissed: the usage data shows headroom");
                return;
            }
        }
        if self.client.heard() {
            // The client's own StopFailure says the same, first-hand, a moment later: wait for it.
            if self.limits.notice_held.is_none() {
                self.limits.notice_held = Some((found, now.mono + NOTICE_GRACE));
            }
            return;
        }
        self.pause(found, Source::Text, false, Timer::Maybe, now, fx);
    }

    /// A notice held for the client's hook: when the hook did not come, the screen's word stands.
    pub(super) fn notice_tick(&mut self, now: Now, fx: &mut Vec<Effect>) {
        if self.limits.notice_held.as_ref().is_some_and(|(_, at)| *at <= now.mono) {
            let (found, _) = self.limits.notice_held.take().expect("held");
            if !self.limits.limit.is_paused() {
                self.pause(found, Source::Text, false, Timer::Maybe, now, fx);
            }
        }
    }

    /// A usage sample at 100 % with its reset ahead is a limit, whatever the screen says.
    pub(super) fn on_sample(&mut self, sample: crate::usage::Sample, now: Now, fx: &mut Vec<Effect>) {
        self.context_seen(sample.context_pct, fx);
        self.budget.add(&sample);
        self.check_budget(now, fx);
        if self.limits.guard.fresh_window
            && self.limits.guard.until.is_none()
            && self.limits.guard.settings.reserve_reached(sample.five_hour_pct)
        {
            self.limits.guard.hold_until(sample.five_hour_resets_at, now);
            self.emit(
                EventKind::WindowGuard {
                    reason: format!(
                        "the fresh window is at {}%: the last {}% is left for you; no more resumes or respawn cycles until it resets",
                        sample.five_hour_pct.unwrap_or_default().round(),
                        self.limits.guard.settings.reserve_pct.unwrap_or_default().round()
                    ),
                },
                fx,
            );
            self.refresh_blocker(now, fx);
            if let Limit::Paused(p) = &mut self.limits.limit {
                p.resume = None;
            }
        }
        self.switch_seen(&sample, now, fx);
        self.limits.last_sample = Some(sample.clone());
        self.on_windows(&sample, now, fx);
        self.pace_tick(now, fx);
    }

    /// Whether the pace parks the cycles now, by the latest sample: a new park, a park that moved
    /// and one that ended are journalled, and the cycles blocked or let go.
    pub(super) fn pace_tick(&mut self, now: Now, fx: &mut Vec<Effect>) {
        use crate::limits::pace::{self, Parking, Turn, Verdict};
        let verdict = match &self.limits.last_sample {
            Some(s) if !self.limits.pace.is_off() => pace::decide(&self.limits.pace, s, now.wall, &chrono::Local),
            _ => Verdict::Go,
        };
        let turn = Parking::follow(&mut self.limits.parked, verdict);
        // While parked, the wall clock is looked at every half minute and at the park's end.
        self.limits.pace_check = self
            .limits
            .parked
            .as_ref()
            .map(|p| now.mono + PACE_CHECK.min((p.until - now.wall).to_std().unwrap_or_default()));
        let Some(turn) = turn else { return };
        if let Turn::Parked(p) = &turn {
            self.because(format!("parked {}", p.reason));
        }
        self.emit(turn.into(), fx);
        self.refresh_blocker(now, fx);
    }

    /// What a sample's plan windows say: a window full until a reset pauses the session, or tells
    /// a paused one its reset (to the second, or a later one).
    fn on_windows(&mut self, sample: &crate::usage::Sample, now: Now, fx: &mut Vec<Effect>) {
        let full = |pct: Option<f64>, reset: Option<DateTime<Utc>>| {
            reset.filter(|r| *r > now.wall && pct.is_some_and(|p| p >= 100.0))
        };
        let windows = [
            (full(sample.five_hour_pct, sample.five_hour_resets_at), LimitKind::FiveHour),
            (full(sample.seven_day_pct, sample.seven_day_resets_at), LimitKind::Weekly),
        ];
        // The later reset wins: the agent can work only when every full window has reset.
        let latest = windows.iter().filter_map(|(r, k)| r.map(|r| (r, *k))).max_by_key(|(r, _)| *r);
        if latest.is_none() {
            // Every window has room again: the next full one is a new question.
            self.limits.extra = None;
        }
        // The plan's extra usage carries the work past a full window: no pause on the data.
        let latest = latest.filter(|_| !self.extra_carries());
        match (latest, &mut self.limits.limit) {
            (Some((resets_at, kind)), Limit::Clear) => {
                let source = if self.agent == AgentKind::Codex { "Codex's usage data" } else { "the statusLine" };
                let line = format!(
                    "{source} reports the {} window full",
                    if kind == LimitKind::Weekly { "7-day" } else { "5-hour" }
                );
                let limit = LimitText { kind, resets_at: Some(resets_at), line };
                self.pause(limit, Source::Data, true, Timer::Maybe, now, fx);
            }
            (Some((resets_at, _)), Limit::Paused(p))
                if !p.exact && p.limit.resets_at.is_some_and(|r| resume::same_reset(r, resets_at)) =>
            {
                // The notice's minute, now to the second: the resume is due at the exact reset.
                p.exact = true;
                p.limit.resets_at = Some(resets_at);
                if let Some(waiting) = &mut p.resume {
                    let was = waiting.plan.due;
                    waiting.plan.reset_known(resets_at, now.wall);
                    waiting.next_check = first_look(&waiting.plan, now);
                    if waiting.plan.due != was {
                        let (settings, due, guard) =
                            (waiting.plan.settings.clone(), waiting.plan.due, self.limits.guard.settings);
                        self.emit(EventKind::ResumeArmed { resets_at: Some(resets_at), due, settings, guard }, fx);
                    }
                }
            }
            (Some((resets_at, _)), Limit::Paused(p)) if p.limit.resets_at.is_none_or(|r| r < resets_at) => {
                p.limit.resets_at = Some(resets_at);
                p.exact = true;
                self.learned_reset(Some(resets_at), now, fx);
            }
            _ => {}
        }
    }

    /// The session learnt a reset while paused (a later one in the data or on screen, or a new notice
    /// after a resume): the plan hears of it, and the journal keeps the new due time for a restore.
    fn learned_reset(&mut self, resets_at: Option<DateTime<Utc>>, now: Now, fx: &mut Vec<Effect>) {
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
    pub(super) fn refused(&mut self, resets_at: Option<DateTime<Utc>>, now: Now, fx: &mut Vec<Effect>) {
        let Limit::Paused(p) = &mut self.limits.limit else { return };
        let later = resets_at.filter(|r| p.limit.resets_at.is_none_or(|known| *r > known));
        if later.is_some() {
            p.limit.resets_at = later;
        }
        let known = p.limit.resets_at;
        self.learned_reset(known, now, fx);
    }

    /// Whether a resume is pending that only the user may cancel (Nightshift's own end keeps it).
    pub(super) fn keeps_resume(&self) -> bool {
        self.limits.limit.waiting().is_some_and(|w| !w.plan.failed)
    }

    /// Nightshift is ending while the session waits for a limit's reset: the agent is gone, and the
    /// resume is kept in the journal for the next Nightshift process (the kept resume is the
    /// session's last word there). The journal leaves the session paused, not ended.
    pub(super) fn keep_resume(&mut self, exit: &Exit, fx: &mut Vec<Effect>) {
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

    /// Paused on `limit`, its reset known to the second (`exact`: the client's data) or to a
    /// notice's minute; `timer` says whether the client may have armed a continuation of its own
    /// (its notice's "Continuing automatically at …"), which not-tonight and the own policy cancel.
    pub(super) fn pause(
        &mut self,
        limit: LimitText,
        source: Source,
        exact: bool,
        timer: Timer,
        now: Now,
        fx: &mut Vec<Effect>,
    ) {
        let until = match limit.resets_at {
            Some(at) => format!("until {}", crate::clock::format_ts(at)),
            None => "with no reset time given".to_string(),
        };
        self.emit(
            EventKind::LimitDetected { resets_at: limit.resets_at, source, kind: limit.kind, line: limit.line.clone() },
            fx,
        );
        self.because(format!("usage limit ({}: {}) {until}", source.as_str(), limit.line));
        let mut resume = None;
        if self.limits.guard.settings.not_tonight {
            // Not tonight: the fresh window is the user's, all of it. Cancel the client's own
            // continuation too, and hold respawn cycles from now on, whatever ends the pause.
            self.limits.guard.hold_until(None, now);
            if timer == Timer::Maybe {
                fx.push(Effect::Write { after: Duration::ZERO, bytes: b"\x1b".to_vec() });
            }
            self.emit(
                EventKind::WindowGuard {
                    reason:
                        "not tonight: the fresh window is left for you; the client's own continuation was cancelled"
                            .into(),
                },
                fx,
            );
        } else if let Some(settings) = self.limits.auto_resume.clone().filter(|_| !self.limits.guard.active(now.wall)) {
            resume = Some(self.arm_resume(settings, limit.resets_at, exact, timer, now, fx));
        }
        let own = self.limits.auto_resume.as_ref().is_some_and(|s| s.policy == resume::Policy::Own);
        let client_continues = timer == Timer::Maybe && !self.limits.guard.settings.not_tonight && !own;
        self.limits.limit = Limit::Paused(Paused { limit, source, client_continues, resume, exact });
        self.limits.notice_held = None;
        self.limits.notice_gone = false;
        self.refresh_blocker(now, fx);
    }

    /// A frame showed the agent in a turn, however short. After the reset (or a resume), that is the
    /// limit over: the client took the continuation.
    pub(super) fn turn_seen(&mut self, now: Now, fx: &mut Vec<Effect>) {
        if self.client.heard() {
            // The client's own word ends it: a turn that starts may still be refused.
            return;
        }
        self.turn_done(now, fx);
    }

    /// A turn ended well (the client's Stop, or a turn the screen saw): after the reset (or a
    /// resume), that is the limit over.
    pub(super) fn turn_done(&mut self, now: Now, fx: &mut Vec<Effect>) {
        let Some(p) = self.limits.limit.paused() else { return };
        let resumed = p.resume.as_ref().is_some_and(|w| w.plan.sent_at.is_some());
        let reset_passed = p.limit.resets_at.is_some_and(|r| r <= now.wall);
        if resumed || reset_passed {
            self.clear_limit(now, fx);
        }
    }

    /// The limit is over: the agent works again (a quick turn may have come and gone without the
    /// detector's activity changing, so `limit_paused` must not linger until it does).
    pub(super) fn clear_limit(&mut self, now: Now, fx: &mut Vec<Effect>) {
        if !self.limits.limit.is_paused() {
            return;
        }
        self.limits.limit = Limit::Clear;
        self.limits.guard.fresh_window = true;
        self.emit(EventKind::LimitCleared { reason: "the agent is working again".into() }, fx);
        self.because("the usage limit is over: the agent took its continuation");
        self.refresh_blocker(now, fx);
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
    pub(super) fn arm_resume(
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
    pub(super) fn on_woke(&mut self, from: DateTime<Utc>, now: Now, fx: &mut Vec<Effect>) {
        let pending = self.limits.limit.waiting().is_some_and(|w| w.plan.sent_at.is_none() && !w.plan.failed);
        tracing::info!(asleep_from = %from, pending, "awake again: the clocks and the usage are read again");
        if pending {
            self.limits.rereading = Some(now.mono + REREAD_WAIT);
            fx.push(Effect::ReadUsage);
        }
    }

    /// The usage as read again after a wake: its plan windows count as the latest sample's, and a
    /// resume that is due goes out at once.
    pub(super) fn on_reread(&mut self, sample: Option<crate::usage::Sample>, now: Now, fx: &mut Vec<Effect>) {
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

    pub(super) fn resume_tick(&mut self, now: Now, fx: &mut Vec<Effect>) {
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

    /// The window the guard kept its reserve in may have reset: cycles and resumes may run again.
    pub(super) fn guard_tick(&mut self, now: Now, fx: &mut Vec<Effect>) {
        let guard = &mut self.limits.guard;
        if guard.next_deadline().is_some_and(|t| t <= now.mono) && guard.tick(now) {
            tracing::info!("the window the reserve was kept in has reset: cycles and resumes may run again");
            self.refresh_blocker(now, fx);
        }
    }

    /// The user switched auto-resume on or off; switched on while paused, the wait for the reset
    /// starts now.
    pub(super) fn set_auto_resume(
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
    pub(super) fn check_resume_now(&mut self, now: Now) {
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
