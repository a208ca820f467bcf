//! The plan's extra usage: past a full window the client may go on working, paid from the plan's
//! extra usage or credits, and says so ("You're now using extra usage"). That is no limit: nothing
//! pauses and no account moves, the journal says it once. A user who asked to stop at the plan's
//! own limits (`--plan-only`) has the session paused there instead, until the window resets.

use super::*;
use crate::limits::{LimitKind, Source};

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
