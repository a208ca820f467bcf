//! The session's usage limits: the notices and samples that pause it, the client's limit menu, the
//! fresh-window guard, the plan's extra usage, and the resume after the reset (in
//! `limit/resuming.rs`).

use super::*;
use crate::limits::{LimitKind, Source};

mod resuming;

use resuming::first_look;

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
    /// The user's time zone, which the pace's morning reserve is said in.
    zone: crate::clock::Zone,
    /// The client works on the plan's extra usage past a full window, until a window resets.
    pub(super) extra: Option<Extra>,
}

/// How often parked cycles look at the wall clock.
const PACE_CHECK: Duration = Duration::from_secs(30);

impl Watch {
    pub(super) fn new(
        auto_resume: Option<resume::Settings>,
        guard: limits::WindowGuard,
        pace: crate::limits::pace::PaceSettings,
        zone: crate::clock::Zone,
    ) -> Self {
        Self {
            zone,
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
            self.typed_by(crate::event::Answerer::Nightshift, now.mono);
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
            Some(s) if !self.limits.pace.is_off() => pace::decide(&self.limits.pace, s, now.wall, &self.limits.zone),
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
        self.limits.limit = Limit::Paused(Paused { limit: limit.clone(), source, client_continues, resume, exact });
        self.limits.notice_held = None;
        self.limits.notice_gone = false;
        self.refresh_blocker(now, fx);
        self.switch_at_limit(&limit, now, fx);
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

    /// The session left the limit behind (it moved to another account): no resume is waited for,
    /// and the window that opens is not the user's fresh one.
    pub(super) fn limit_left(&mut self, why: &str, now: Now, fx: &mut Vec<Effect>) {
        if !self.limits.limit.is_paused() {
            return;
        }
        self.limits.limit = Limit::Clear;
        self.limits.notice_held = None;
        self.emit(EventKind::LimitCleared { reason: why.to_string() }, fx);
        self.because(why.to_string());
        self.refresh_blocker(now, fx);
    }

    /// The window the guard kept its reserve in may have reset: cycles and resumes may run again.
    pub(super) fn guard_tick(&mut self, now: Now, fx: &mut Vec<Effect>) {
        let guard = &mut self.limits.guard;
        if guard.next_deadline().is_some_and(|t| t <= now.mono) && guard.tick(now) {
            tracing::info!("the window the reserve was kept in has reset: cycles and resumes may run again");
            self.refresh_blocker(now, fx);
        }
    }
}

// ---- The plan's extra usage ----------------------------------------------------------------------
// Past a full window the client may go on working, paid from the plan's
// extra usage or credits, and says so ("You're now using extra usage"). That is no limit: nothing
// pauses and no account moves, the journal says it once. A user who asked to stop at the plan's
// own limits (`--plan-only`) has the session paused there instead, until the window resets.

/// The client works on the plan's extra usage past a full window (until a window resets).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Extra;

impl Machine {
    /// The client said it now works on the plan's extra usage.
    pub(super) fn on_extra_usage(&mut self, now: Now, fx: &mut Vec<Effect>) {
        let (resets_at, kind) = self.full_window(now.wall).unzip();
        if self.limits.guard().settings.plan_only {
            if !self.limits.limit().is_paused() {
                let line = "the client went on on the plan's extra usage; stopping at the plan's limit (--plan-only)";
                let limit = LimitText { kind: kind.unwrap_or(LimitKind::Unspecified), resets_at, line: line.into() };
                self.pause(limit, Source::Text, resets_at.is_some(), limit::Timer::None, now, fx);
            }
            return;
        }
        if self.limits.extra.replace(Extra).is_none() {
            self.emit(EventKind::ExtraUsage { resets_at }, fx);
        }
        // Paused on the data alone (a window at 100 %): the client's own word is that it goes on.
        let on_data = matches!(self.limits.limit(), Limit::Paused(p) if p.source == Source::Data);
        if on_data {
            self.clear_limit(now, fx);
        }
    }

    /// Whether the plan's extra usage carries the work past a full window now.
    pub(super) fn extra_carries(&self) -> bool {
        self.limits.extra.is_some() && !self.limits.guard().settings.plan_only
    }

    /// The latest reset among the windows the last sample shows full, with the window's kind.
    fn full_window(&self, now: DateTime<Utc>) -> Option<(DateTime<Utc>, LimitKind)> {
        let s = self.limits.last_sample()?;
        [
            (s.five_hour_pct, s.five_hour_resets_at, LimitKind::FiveHour),
            (s.seven_day_pct, s.seven_day_resets_at, LimitKind::Weekly),
        ]
        .into_iter()
        .filter_map(|(pct, reset, kind)| {
            reset.filter(|r| *r > now && pct.is_some_and(|p| p >= 100.0)).map(|r| (r, kind))
        })
        .max_by_key(|(r, _)| *r)
    }
}
