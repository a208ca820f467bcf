//! Moving a session off its account before the account's limit (rota's rule), for sessions that
//! opted in: once the larger of the account's 5-hour and 7-day use reaches the threshold, the
//! session looks up what the journal knows of its other accounts. With one that has more than
//! `100 − threshold` left on a known meter, the move is due: at the next turn's end the `Stop` hook
//! asks for a handoff, the agent is stopped and started again under that account — a fresh
//! conversation, never the old account's — and `SessionStart` gives the handoff back. With none,
//! the session stays and holds the switch until the window resets; the usage-limit wait handles a
//! real limit. Never mid-turn, at most one switch per window, and each one counts as a restart
//! against the cap.

use super::*;
use crate::agent::Account;
use crate::event::SwitchAction;
use crate::limits::LimitText;

pub use crate::contract::DEFAULT_SWITCH_THRESHOLD as DEFAULT_THRESHOLD;

/// How long a hold lasts when the window's reset is not known.
const HOLD_WITHOUT_RESET: chrono::Duration = chrono::Duration::hours(1);

use crate::contract::SwitchSettings as Settings;

/// What the journal knows of one account's plan windows: its latest sample (`account` `None`: the
/// client's default account). Or, from the edge's look at the account's folder, that it has no
/// login (`logged_out`: why, as `no credentials in DIR`): a client started there would ask for one.
#[derive(Debug, Clone, PartialEq)]
pub struct Meter {
    pub account: Option<String>,
    pub sample: crate::usage::Sample,
    pub logged_out: Option<String>,
}

impl Meter {
    /// The larger use of the two windows at `now` (a window that has reset since counts as
    /// unused); `None` when the sample knows neither.
    pub(super) fn used(&self, now: DateTime<Utc>) -> Option<f64> {
        let window = |pct: Option<f64>, resets: Option<DateTime<Utc>>| {
            pct.map(|p| if resets.is_some_and(|r| r <= now) { 0.0 } else { p })
        };
        let s = &self.sample;
        let five = window(s.five_hour_pct, s.five_hour_resets_at);
        let seven = window(s.seven_day_pct, s.seven_day_resets_at);
        five.into_iter().chain(seven).reduce(f64::max)
    }
}

/// Where the session is with its switch.
#[derive(Debug, Clone, PartialEq)]
enum Phase {
    Watching,
    /// At the threshold (or at the limit): the other accounts' meters were asked for.
    Looking {
        used: f64,
        window: &'static str,
        resets: Option<DateTime<Utc>>,
        at_limit: bool,
    },
    /// Moving to `to` at the turn's end.
    Due {
        to: Account,
        resets: Option<DateTime<Utc>>,
    },
    /// At the limit, with no handoff of the agent's own: the folder is read for one.
    Gathering {
        to: Account,
        resets: Option<DateTime<Utc>>,
        why: String,
    },
    /// The agent was stopped to start again under `to`.
    Restarting {
        to: Account,
    },
    /// The agent is down: it starts under `to` at the next tick.
    Starting {
        to: Account,
    },
}

/// One session's switch: its settings, its account now, and where it is.
#[derive(Debug, Clone)]
pub(super) struct Switching {
    settings: Settings,
    account: Option<Account>,
    phase: Phase,
    /// No switch before this: the window of the last switch (or hold) resets.
    quiet_until: Option<DateTime<Utc>>,
    /// The conversations of the accounts it moved off: a late hook of an old client that names
    /// one is not the session's.
    left: Vec<String>,
    /// The accounts already said to be logged out (each is said once a session).
    said_out: Vec<String>,
}

impl Switching {
    pub(super) fn new(settings: Settings, account: Option<Account>) -> Self {
        Self { settings, account, phase: Phase::Watching, quiet_until: None, left: Vec::new(), said_out: Vec::new() }
    }

    /// No move for now, because `why`: the switch holds until the window resets (or a while, when
    /// no reset is known). The reason in full, and the event that journals it.
    fn hold(&mut self, resets: Option<DateTime<Utc>>, now: Now, why: &str) -> (String, EventKind) {
        let until = resets.filter(|r| *r > now.wall).unwrap_or(now.wall + HOLD_WITHOUT_RESET);
        self.quiet_until = Some(until);
        self.phase = Phase::Watching;
        let reason =
            format!("{why}; it stays until {} (the usage-limit wait handles a limit)", crate::clock::format_ts(until));
        let from = self.account.as_ref().map(|a| a.name.clone());
        let held = EventKind::AccountSwitch {
            action: SwitchAction::Held,
            from,
            to: None,
            until: Some(until),
            reason: reason.clone(),
        };
        (reason, held)
    }

    /// The accounts it could move to: every one but its own.
    fn others(&self) -> Vec<Account> {
        let (dir, name) = (self.account.as_ref().map(|a| &a.dir), self.account.as_ref().map(|a| &a.name));
        self.settings.accounts.iter().filter(|a| Some(&a.name) != name && Some(&a.dir) != dir).cloned().collect()
    }

    fn name(&self) -> String {
        self.account.as_ref().map_or_else(|| "the default account".to_string(), |a| format!("account {}", a.name))
    }
}

impl Machine {
    /// The session's own statusLine sample: at the threshold, the other accounts are looked at.
    pub(super) fn switch_seen(&mut self, sample: &crate::usage::Sample, now: Now, fx: &mut Vec<Effect>) {
        let (paused, live, held) = (self.limits.limit().is_paused(), self.lives.life().is_live(), self.cycles.held());
        // Past a full window on the plan's extra usage the account is not out: it stays.
        let extra = self.extra_carries();
        let Some(sw) = &mut self.switching else { return };
        let quiet = sw.quiet_until.is_some_and(|t| now.wall < t);
        if !sw.settings.ahead || sw.phase != Phase::Watching || paused || !live || held || quiet {
            return;
        }
        let windows = [
            (sample.five_hour_pct, sample.five_hour_resets_at, "5-hour"),
            (sample.seven_day_pct, sample.seven_day_resets_at, "7-day"),
        ];
        let at = windows
            .iter()
            .filter_map(|(pct, resets, name)| pct.filter(|p| *p >= sw.settings.threshold).map(|p| (p, *resets, *name)))
            .filter(|(used, _, _)| !(extra && *used >= 100.0))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        let Some((used, resets, window)) = at else { return };
        tracing::info!(used, threshold = sw.settings.threshold, "the account is at its switch threshold");
        sw.phase = Phase::Looking { used, window, resets, at_limit: false };
        fx.push(Effect::Meters { accounts: sw.others() });
    }

    /// The session met a usage limit: armed to move at the limit, it looks at the other accounts'
    /// meters now (a move due at the threshold that the limit came before goes now too). Not held
    /// by the quiet after a move: waiting out a window while another has room is the night lost.
    pub(super) fn switch_at_limit(&mut self, limit: &LimitText, now: Now, fx: &mut Vec<Effect>) {
        let (live, held) = (self.lives.life().is_live(), self.cycles.held());
        let Some(sw) = self.switching.as_mut().filter(|s| s.settings.at_limit) else {
            // No account of this agent to move to: the other agent, when armed.
            let why = format!("{} met its limit", self.agent);
            self.fail_over(why, limit, now, fx);
            return;
        };
        if !live || held {
            return;
        }
        let window = match limit.kind {
            crate::limits::LimitKind::Weekly => "7-day",
            crate::limits::LimitKind::FiveHour => "5-hour",
            _ => "usage",
        };
        match sw.phase.clone() {
            Phase::Watching => {
                tracing::info!(window, "the account met its limit: the other accounts are looked at");
                sw.phase = Phase::Looking { used: 100.0, window, resets: limit.resets_at, at_limit: true };
                fx.push(Effect::Meters { accounts: sw.others() });
            }
            Phase::Due { to, resets } => {
                let why = format!("{} met its {window} limit before the turn's end", sw.name());
                self.move_at_limit(to, resets, why, now, fx);
            }
            _ => {}
        }
    }

    /// At the limit, to `to`: with a handoff the agent wrote lately it goes now; without, the
    /// folder is read for one Nightshift builds ([`Effect::Gather`]), and it goes when that is in.
    fn move_at_limit(
        &mut self,
        to: Account,
        resets: Option<DateTime<Utc>>,
        why: String,
        now: Now,
        fx: &mut Vec<Effect>,
    ) {
        let fresh = self.client.fresh_handoff(now);
        let files = self.handoff_files();
        let Some(sw) = &mut self.switching else { return };
        if fresh {
            sw.phase = Phase::Due { to, resets };
            self.switch_now(now, fx);
            return;
        }
        sw.phase = Phase::Gathering { to, resets, why };
        fx.push(Effect::Gather { since: self.began, files });
    }

    /// What the folder holds, read for a handoff: it is built, kept, and the move goes.
    pub(super) fn on_gathered(&mut self, gathered: crate::session::handoff::Gathered, now: Now, fx: &mut Vec<Effect>) {
        let Some(sw) = &mut self.switching else { return };
        let Phase::Gathering { to, resets, why } = sw.phase.clone() else { return };
        sw.phase = Phase::Due { to, resets };
        let text = self.build_handoff(&why, &gathered);
        self.handoff_built(text, why, now, fx);
        self.switch_now(now, fx);
    }

    /// The other accounts' meters: the one with the most headroom becomes the switch's target, or
    /// the switch holds until the window resets.
    pub(super) fn on_meters(&mut self, meters: Result<Vec<Meter>, String>, now: Now, fx: &mut Vec<Effect>) {
        let hooks = self.client.heard() || self.asks_by_typing();
        let can_fail_over = self.can_fail_over();
        let Some(sw) = &mut self.switching else { return };
        let Phase::Looking { used, window, resets, at_limit } = sw.phase.clone() else { return };
        let here = if at_limit {
            format!("{} met its {window} limit", sw.name())
        } else {
            format!("{} is at {}% of its {window} window", sw.name(), used.round())
        };
        let meters = match meters {
            Ok(meters) => meters,
            Err(why) => {
                // Not knowing the others' windows is not knowing they are full: it says so.
                let why = format!("{here}, and the other accounts' usage could not be read from the journal ({why})");
                let (reason, held) = sw.hold(resets, now, &why);
                tracing::warn!("{reason}");
                self.emit(held, fx);
                return;
            }
        };
        let least = 100.0 - sw.settings.threshold;
        let from = sw.account.as_ref().map(|a| a.name.clone());
        let meter_of = |a: &Account| meters.iter().find(|m| m.account.as_deref() == Some(a.name.as_str()));
        // An account with no login is passed over: a client started there would ask for one, with
        // nobody awake to give it. Each is said once a session, with how to log in.
        let (out, others): (Vec<Account>, Vec<Account>) =
            sw.others().into_iter().partition(|a| meter_of(a).is_some_and(|m| m.logged_out.is_some()));
        let unsaid: Vec<(Account, String)> = out
            .iter()
            .filter(|a| !sw.said_out.contains(&a.name))
            .map(|a| (a.clone(), meter_of(a).and_then(|m| m.logged_out.clone()).unwrap_or_default()))
            .collect();
        sw.said_out.extend(unsaid.iter().map(|(a, _)| a.name.clone()));
        for (a, why) in unsaid {
            let reason = format!(
                "account {} is logged out ({why}), so the session does not move there; log in there with {}",
                a.name,
                self.agent.login_hint(&a.dir)
            );
            let to = Some(a.name);
            let held =
                EventKind::AccountSwitch { action: SwitchAction::Held, from: from.clone(), to, until: None, reason };
            self.emit(held, fx);
        }
        let Some(sw) = &mut self.switching else { return };
        let others = others.iter();
        let left_of = |a: &Account| meter_of(a)?.used(now.wall).map(|used| 100.0 - used);
        let known = others.clone().filter_map(|a| Some((a, left_of(a)?))).filter(|(_, left)| *left > least);
        // At the limit, an account the journal has no meter of is worth a try before a wait: a
        // limit there too is met at once, and its meter is known from then on.
        let unknown = others.filter(|a| at_limit && left_of(a).is_none()).map(|a| (a, f64::NAN)).next();
        let best = known.max_by(|a, b| a.1.total_cmp(&b.1)).or(unknown);
        match best {
            Some((to, left)) => {
                let room = if left.is_nan() {
                    format!("account {} has no usage on record", to.name)
                } else {
                    format!("account {} has {}% left", to.name, left.round())
                };
                let how = match (at_limit, hooks) {
                    (true, _) => ", so it moves there now, with a handoff",
                    (false, true) => ", so it moves there after a handoff",
                    (false, false) => ", so it moves there",
                };
                let reason = format!("{here}; {room}{how}");
                let to_name = to.name.clone();
                let to = to.clone();
                sw.phase = Phase::Due { to: to.clone(), resets };
                self.emit(
                    EventKind::AccountSwitch {
                        action: SwitchAction::Due,
                        from,
                        to: Some(to_name),
                        until: None,
                        reason,
                    },
                    fx,
                );
                if at_limit {
                    // No turn is left to ask for a handoff in: Nightshift builds one.
                    self.move_at_limit(to, resets, here, now, fx);
                } else if hooks {
                    self.client.handoff_for_switch();
                }
            }
            None if at_limit && can_fail_over => {
                let why = format!("{here} and no other account of it has more than {}% left", least.round());
                sw.phase = Phase::Watching;
                let limit = LimitText { kind: crate::limits::LimitKind::Unspecified, resets_at: resets, line: here };
                self.fail_over(why, &limit, now, fx);
            }
            None if at_limit => {
                let why = format!("{here} and no other account has more than {}% left", least.round());
                let (reason, held) = sw.hold(resets, now, &why);
                // The quiet is for moves ahead of a limit: the next limit looks again.
                sw.quiet_until = None;
                tracing::info!("{reason}");
                self.emit(held, fx);
            }
            None => {
                let why = format!("{here} and no other account has more than {}% left on a known meter", least.round());
                let (reason, held) = sw.hold(resets, now, &why);
                tracing::info!("{reason}");
                self.emit(held, fx);
            }
        }
    }

    /// A switch waits for the turn's end.
    pub(super) fn switch_due(&self) -> bool {
        self.switching.as_ref().is_some_and(|s| matches!(s.phase, Phase::Due { .. }))
    }

    /// The turn ended with a switch due (after its handoff, or without one): the agent is stopped,
    /// to start again under the new account. The restart counts against the cap.
    pub(super) fn switch_now(&mut self, now: Now, fx: &mut Vec<Effect>) {
        let Life::Live { stopping: None, .. } = self.lives.life() else { return };
        let Some(Phase::Due { to, resets }) = self.switching.as_ref().map(|s| s.phase.clone()) else { return };
        let cap = self
            .cycles
            .respawn()
            .map_or_else(|| respawn::Settings::default().max_restarts, |r| r.cycle.settings.max_restarts);
        let counted = self.breakers.count_switch(cap);
        let Some(sw) = &mut self.switching else { return };
        let from = sw.account.as_ref().map(|a| a.name.clone());
        let until = resets.filter(|r| *r > now.wall).unwrap_or(now.wall + HOLD_WITHOUT_RESET);
        sw.quiet_until = Some(until);
        if !counted {
            sw.phase = Phase::Watching;
            let reason = format!(
                "{} restarts in a row changed nothing in the working tree (the cap); it stays on {}",
                cap,
                sw.name()
            );
            self.emit(
                EventKind::AccountSwitch { action: SwitchAction::Held, from, to: None, until: Some(until), reason },
                fx,
            );
            return;
        }
        let reason = format!("from {} to account {}, with a fresh conversation", sw.name(), to.name);
        let to_name = to.name.clone();
        sw.phase = Phase::Restarting { to };
        self.emit(
            EventKind::AccountSwitch { action: SwitchAction::Switched, from, to: Some(to_name), until: None, reason },
            fx,
        );
        // The old account's conversation is not the new one's to resume.
        if let (Some(id), Some(sw)) = (self.client.leave_conversation(), self.switching.as_mut()) {
            sw.left.push(id);
        }
        self.stop_for_switch(now, fx);
    }

    /// The agent stopped for a switch: the account it starts again under (at the next tick).
    pub(super) fn switch_restarting(&mut self) -> Option<String> {
        let sw = self.switching.as_mut()?;
        let Phase::Restarting { to } = sw.phase.clone() else { return None };
        let name = to.name.clone();
        sw.phase = Phase::Starting { to };
        Some(name)
    }

    /// The agent is down for a switch: it starts under the new account now, once.
    pub(super) fn switch_starting(&mut self) -> Option<Account> {
        let sw = self.switching.as_mut()?;
        let Phase::Starting { to } = sw.phase.clone() else { return None };
        sw.phase = Phase::Watching;
        sw.account = Some(to.clone());
        Some(to)
    }

    /// Whether a hook's `conversation` is not the session's: the old client is on its way out for a
    /// switch, or the id is of an account the session moved off.
    pub(super) fn switch_disowns(&self, conversation: &str) -> bool {
        self.switching.as_ref().is_some_and(|s| {
            matches!(s.phase, Phase::Restarting { .. } | Phase::Starting { .. })
                || s.left.iter().any(|c| c == conversation)
        })
    }

    /// The user stopped the session while a switch was under way: it is a stop, not a switch.
    pub(super) fn switch_cancelled(&mut self) -> bool {
        let Some(sw) = &mut self.switching else { return false };
        let restarting = matches!(sw.phase, Phase::Restarting { .. } | Phase::Starting { .. });
        if restarting {
            sw.phase = Phase::Watching;
        }
        restarting
    }

    /// The switch as the session's options show it.
    pub(super) fn switch_view(&self) -> Option<super::super::SwitchView> {
        let sw = self.switching.as_ref()?;
        Some(super::super::SwitchView {
            threshold: sw.settings.threshold,
            account: sw.account.as_ref().map(|a| a.name.clone()),
            accounts: sw.settings.accounts.iter().map(|a| a.name.clone()).collect(),
            due_to: match &sw.phase {
                Phase::Due { to, .. }
                | Phase::Gathering { to, .. }
                | Phase::Restarting { to }
                | Phase::Starting { to } => Some(to.name.clone()),
                _ => None,
            },
            quiet_until: sw.quiet_until,
        })
    }
}
