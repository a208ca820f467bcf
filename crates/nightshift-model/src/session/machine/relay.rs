//! Moving the work to the other agent at a limit, and back at the reset (`--at-limit failover`).
//!
//! At a limit that no account of this agent has room past, the work moves to the other agent the
//! session was armed with: a handoff goes with it (the agent's own when it wrote one lately, else
//! one built from the folder), the agent is stopped, and the session ends this agent's part with
//! [`End::Relayed`]: the runtime starts the other agent's contract in the same session, in the same
//! folder, on a fresh conversation that begins with the handoff. That contract carries the way back
//! ([`crate::contract::Return`]): once the first agent's window has reset, at the next turn's end
//! the second is asked for a handoff (built when it cannot answer: limited itself), stopped, and
//! the first resumes its own conversation from it. Never two agents on the tree at once: the next
//! starts only once this one's process group is gone.

use super::*;
use crate::contract::{Contract, Failover, Return};
use crate::event::SwitchAction;

/// How often a session that gives the work back looks at the wall clock for the reset.
const BACK_CHECK: Duration = Duration::from_secs(5);
/// When the reset is not known, how long the work stays with the other agent.
const BACK_WITHOUT_RESET: chrono::Duration = chrono::Duration::hours(1);
/// Past a reset known only to its minute (a notice's "resets 2:21pm"), before the work goes back:
/// nothing is sent into a window that may still refuse it.
const BACK_MARGIN: chrono::Duration = chrono::Duration::seconds(65);

/// This agent's part is over: what starts next in the session.
#[derive(Debug, Clone, PartialEq)]
pub struct Relayed {
    /// The contract that starts next: the other agent's (with its way back), or the first's.
    pub contract: Contract,
    /// The conversation it resumes (the first agent's, coming back); none: a fresh one.
    pub conversation: Option<String>,
    /// The handoff it starts from, and when it was written.
    pub handoff: (String, DateTime<Utc>),
    /// Its first prompt: the handoff, marked as Nightshift's.
    pub prompt: String,
    /// The prompt carries the whole handoff: nothing gives it again (else the client's
    /// `SessionStart` does).
    pub given: bool,
    /// What the session spent so far: the budget counts both agents.
    pub spent: crate::usage::Tally,
    /// Why, in words.
    pub why: String,
    /// Where the work stays if the next cannot start: this agent's contract on its conversation,
    /// paused on the limit it met (none when it met none: it gave the work back at a reset).
    pub stay: Option<(Contract, Option<String>, Option<LimitText>)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// To the failover agent.
    Over,
    /// Back to the first agent.
    Back,
}

#[derive(Debug, Clone, PartialEq)]
enum Phase {
    Idle,
    /// At a limit: the other agent's login and windows are looked at before anything moves.
    Checking {
        why: String,
        limit: LimitText,
    },
    /// No fresh handoff: the folder is read for one.
    Gathering {
        to: Target,
        why: String,
    },
    /// At the next turn's end, after its handoff.
    Due {
        to: Target,
        why: String,
    },
    /// The agent is being stopped.
    Stopping {
        to: Target,
        why: String,
    },
}

/// The session's relay: what it is armed with and where it is.
#[derive(Debug, Clone)]
pub(super) struct Relay {
    /// This session's own contract, failover and all: the way back starts it again.
    own: Contract,
    failover: Option<Failover>,
    back: Option<Return>,
    phase: Phase,
    /// When the wall clock is looked at next for the way back.
    check_at: Option<Instant>,
    /// The limit this agent met, for the work to stay on if the other cannot start.
    limit: Option<LimitText>,
    /// When the work comes back: when the resume would have gone out.
    back_at: Option<DateTime<Utc>>,
}

impl Relay {
    pub(super) fn new(own: &Contract, t: &crate::contract::Terminal, now: Now) -> Option<Self> {
        if t.failover.is_none() && t.returns.is_none() {
            return None;
        }
        Some(Self {
            own: own.clone(),
            failover: t.failover.clone(),
            back: t.returns.clone(),
            phase: Phase::Idle,
            check_at: t.returns.as_ref().map(|_| now.mono),
            limit: None,
            back_at: None,
        })
    }

    pub(super) fn deadline(&self) -> Option<Instant> {
        self.check_at.filter(|_| self.phase == Phase::Idle)
    }
}

impl Machine {
    fn other_agent(&self) -> Option<AgentKind> {
        let r = self.relay.as_ref()?;
        match (&r.back, &r.failover) {
            (Some(back), _) => Some(back.contract.agent),
            (None, Some(f)) => Some(f.contract.agent),
            _ => None,
        }
    }

    /// Whether the work can move to the other agent at this limit.
    pub(super) fn can_fail_over(&self) -> bool {
        self.relay.as_ref().is_some_and(|r| r.failover.is_some() && r.phase == Phase::Idle)
            && self.lives.life().is_live()
            && !self.cycles.held()
    }

    /// At a limit no account of this agent has room past: the work moves to the other agent, once
    /// the edge has said its client has a login (one with none would ask for it, with nobody awake)
    /// and its window is not known to be full.
    pub(super) fn fail_over(&mut self, why: String, limit: &LimitText, _now: Now, fx: &mut Vec<Effect>) {
        if !self.can_fail_over() {
            return;
        }
        let Some(r) = &mut self.relay else { return };
        let Some(f) = &r.failover else { return };
        fx.push(Effect::CheckOther { contract: f.contract.clone() });
        r.phase = Phase::Checking { why, limit: limit.clone() };
    }

    /// The other agent, looked at: with a login and no window known to be full the move goes;
    /// else the work stays and waits for the reset where it is, and says why (the next limit
    /// looks again). A full window moved to would be refused at once, and the work split for
    /// nothing.
    pub(super) fn on_other_checked(&mut self, other: super::OtherAgent, now: Now, fx: &mut Vec<Effect>) {
        let Some(r) = &mut self.relay else { return };
        let Phase::Checking { why, limit } = r.phase.clone() else { return };
        r.phase = Phase::Idle;
        let (from, to) = (self.agent, self.other_agent().expect("armed"));
        let full = other.meter.as_ref().filter(|m| m.used(now.wall).is_some_and(|used| used >= 100.0));
        let cannot = match (other.login, full) {
            (Err(cannot), _) => cannot,
            (Ok(()), Some(meter)) => {
                let s = &meter.sample;
                let resets = [(s.five_hour_pct, s.five_hour_resets_at), (s.seven_day_pct, s.seven_day_resets_at)]
                    .into_iter()
                    .filter(|(pct, at)| pct.is_some_and(|p| p >= 100.0) && at.is_none_or(|at| at > now.wall))
                    .filter_map(|(_, at)| at)
                    .max();
                match resets {
                    Some(at) => format!("{to}'s own window is full until {}", crate::clock::format_ts(at)),
                    None => format!("{to}'s own window is full"),
                }
            }
            (Ok(()), None) => return self.fail_over_now(why, &limit, now, fx),
        };
        let reason = format!("{cannot}; the work stays with {from} until its reset");
        tracing::warn!("{reason}");
        self.emit(EventKind::AgentSwitch { action: SwitchAction::Held, from, to, back_at: None, reason }, fx);
    }

    fn fail_over_now(&mut self, why: String, limit: &LimitText, now: Now, fx: &mut Vec<Effect>) {
        if !self.can_fail_over() {
            return;
        }
        let (from, to) = (self.agent, self.other_agent().expect("armed"));
        // Back when the resume would have gone out (the reset plus its margin), never sooner.
        let due = self.limits.limit().waiting().map(|w| w.plan.due);
        let exact = self.limits.limit().paused().is_some_and(|p| p.exact);
        let reset = limit.resets_at.filter(|r| *r > now.wall);
        let at = due.or(reset.map(|r| if exact { r + chrono::Duration::seconds(5) } else { r + BACK_MARGIN }));
        let back_at = self
            .relay
            .as_ref()
            .and_then(|r| r.failover.as_ref())
            .filter(|f| f.back)
            .map(|_| at.unwrap_or(now.wall + BACK_WITHOUT_RESET));
        if let Some(r) = &mut self.relay {
            r.limit = Some(limit.clone());
            r.back_at = back_at;
        }
        let comes_back = back_at.map(|at| format!("; it comes back at {}", crate::clock::format_ts(at)));
        let reason = format!("{why}, so the work moves to {to}{}", comes_back.unwrap_or_default());
        self.emit(EventKind::AgentSwitch { action: SwitchAction::Due, from, to, back_at, reason }, fx);
        self.relay_with_handoff(Target::Over, why, now, fx);
    }

    /// With a handoff the agent wrote lately the move goes now; else the folder is read for one.
    fn relay_with_handoff(&mut self, to: Target, why: String, now: Now, fx: &mut Vec<Effect>) {
        if self.client.fresh_handoff(now) {
            self.relay_stop(to, why, now, fx);
            return;
        }
        let files = self.handoff_files();
        if let Some(r) = &mut self.relay {
            r.phase = Phase::Gathering { to, why };
        }
        fx.push(Effect::Gather { since: self.began, files });
    }

    /// The folder was read for the relay's handoff: it is built and the move goes. False when
    /// the relay was not waiting for it.
    pub(super) fn relay_gathered(
        &mut self,
        gathered: &crate::session::handoff::Gathered,
        now: Now,
        fx: &mut Vec<Effect>,
    ) -> bool {
        let Some(Phase::Gathering { to, why }) = self.relay.as_ref().map(|r| r.phase.clone()) else { return false };
        let text = self.build_handoff(&why, gathered);
        self.handoff_built(text, why.clone(), now, fx);
        self.relay_stop(to, why, now, fx);
        true
    }

    /// The agent is stopped for the move: the next starts once it is gone.
    fn relay_stop(&mut self, to: Target, why: String, now: Now, fx: &mut Vec<Effect>) {
        let Some(r) = &mut self.relay else { return };
        r.phase = Phase::Stopping { to, why: why.clone() };
        let from = self.agent;
        let to_agent = self.other_agent().expect("armed");
        let back_at = self.relay.as_ref().and_then(|r| r.back.as_ref()).map(|b| b.at);
        let reason = format!("{why}; {from} is stopped, and {to_agent} starts from the handoff");
        self.emit(EventKind::AgentSwitch { action: SwitchAction::Switched, from, to: to_agent, back_at, reason }, fx);
        self.stop_to_move(format!("the move to {to_agent}"), now, fx);
    }

    /// The agent stopped for the move: this agent's part of the session is over. `None` when it
    /// was not stopping for one.
    pub(super) fn relay_exited(&mut self, now: Now) -> Option<Relayed> {
        let r = self.relay.as_ref()?;
        let Phase::Stopping { to, why } = r.phase.clone() else { return None };
        let written = self.client.written()?;
        let handoff = (written.text.clone(), written.at);
        let conversation = self.client.conversation();
        let (contract, resumes, stay) = match to {
            Target::Over => {
                let failover = r.failover.as_ref()?;
                let mut next = (*failover.contract).clone();
                if let Some(at) = r.back_at.filter(|_| failover.back) {
                    if let crate::contract::Kind::Terminal(t) = &mut next.kind {
                        let own = Box::new(r.own.clone());
                        t.returns = Some(Return { contract: own, conversation: conversation.clone(), at });
                    }
                }
                let stay = Some((r.own.clone(), conversation, r.limit.clone()));
                (next, None, stay)
            }
            Target::Back => {
                let back = r.back.as_ref()?;
                // Limited itself, it gave the work back on a built handoff: it would wait there.
                let stay = Some((r.own.clone(), conversation, self.limits.limit().paused().map(|p| p.limit.clone())));
                ((*back.contract).clone(), back.conversation.clone(), stay)
            }
        };
        let kickstart = self.cycles.respawn().map(|c| c.cycle.settings.kickstart_prompt.clone());
        let in_context = contract.agent == AgentKind::Claude;
        let text = continuation(Some((&handoff.0, handoff.1)), kickstart.as_deref(), now.wall, in_context)
            .unwrap_or_else(|| handoff.0.clone());
        let prompt = crate::automated::mark(crate::automated::Automated::Switch, &text, self.standing.as_deref());
        let spent = self.budget.spent().clone();
        let given = prompt.contains(handoff.0.as_str());
        Some(Relayed { contract, conversation: resumes, handoff, prompt, given, spent, why, stay })
    }

    /// The user stopped the session while the agent was stopping for a move: it is a stop, and
    /// nothing starts after it.
    pub(super) fn relay_cancelled(&mut self) -> bool {
        let Some(r) = &mut self.relay else { return false };
        let stopping = matches!(r.phase, Phase::Stopping { .. });
        if stopping {
            r.phase = Phase::Idle;
        }
        stopping
    }

    /// Whether the work is due to move at this turn's end.
    pub(super) fn relay_due(&self) -> bool {
        self.relay.as_ref().is_some_and(|r| matches!(r.phase, Phase::Due { .. }))
    }

    /// The turn ended with the move due (after its handoff, or without one): it goes.
    pub(super) fn relay_now(&mut self, now: Now, fx: &mut Vec<Effect>) {
        let Some(Phase::Due { to, why }) = self.relay.as_ref().map(|r| r.phase.clone()) else { return };
        if let Some(r) = &mut self.relay {
            r.phase = Phase::Idle;
        }
        self.relay_with_handoff(to, why, now, fx);
    }

    /// The way back: once the first agent's window has reset, the work goes back at the next
    /// turn's end, after a handoff (asked at the prompt now when no turn runs).
    pub(super) fn relay_tick(&mut self, now: Now, fx: &mut Vec<Effect>) {
        let Some(r) = &mut self.relay else { return };
        if r.check_at.is_none_or(|t| t > now.mono) || r.phase != Phase::Idle {
            return;
        }
        let Some(back) = &r.back else { return };
        if now.wall < back.at || !self.lives.life().is_live() || self.cycles.held() {
            r.check_at = Some(now.mono + BACK_CHECK);
            return;
        }
        r.check_at = None;
        let (from, to, at) = (self.agent, back.contract.agent, back.at);
        let why = format!("{to}'s window reset at {}", crate::clock::format_ts(at));
        if self.limits.limit().is_paused() {
            // This agent is limited too: it cannot write a handoff. One is built, and it goes now.
            let reason = format!("{why}, and {from} is at a limit itself, so the work goes back now");
            self.emit(EventKind::AgentSwitch { action: SwitchAction::Due, from, to, back_at: None, reason }, fx);
            self.relay_with_handoff(Target::Back, why, now, fx);
            return;
        }
        if let Some(r) = &mut self.relay {
            r.phase = Phase::Due { to: Target::Back, why: why.clone() };
        }
        let reason = format!("{why}, so the work goes back to {to} after this turn and a handoff");
        self.emit(EventKind::AgentSwitch { action: SwitchAction::Due, from, to, back_at: None, reason }, fx);
        self.client.handoff_for_switch();
        if self.screen.activity() == Some(Activity::Idle) {
            // No turn runs: the handoff is asked at the prompt, its turn's end moves it.
            self.ask_at_the_prompt(now, fx);
        }
    }
}
