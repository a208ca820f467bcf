//! The session's lives: the process runs, stops, exits, is started again or not; the breakers that
//! decide it.
//!
//! An agent that exits while respawn is armed is started again, unless the user stopped it, it
//! exited cleanly (its own end, the user's `/exit`; a setting restarts those too), or the crash-loop
//! breaker opened: five lives in a row that ended non-zero within a minute, or more restarts in a
//! row than the cap with the working tree unchanged. Each restart waits on the ladder (2 s, 10 s,
//! 30 s, 2 min, 5 min), from the bottom again once the working tree changed. Whatever ends a session
//! ends it in the journal too, with a final state.

use super::*;
use crate::breaker::{BreakerKind, Trip, SHORT_LIFE};

/// Where the session is in its lives.
#[derive(Debug, Clone, PartialEq)]
pub enum Life {
    /// The agent's process runs.
    Live { pid: u32, since: Instant, stopping: Option<Stopping> },
    /// Between lives: the agent exited (`last` says how) and may be started again.
    Between { last: Exit, next: Next },
    /// No process, and none will be.
    Ended(End),
}

/// What comes after a life, while the agent is down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// The working tree is being fingerprinted: the restart's wait depends on whether it moved.
    Measuring,
    /// The agent starts again at this instant.
    RestartAt(Instant),
    /// A restart was due while the user held the session: it happens on release.
    HeldBack,
    /// The crash-loop breaker is open: nothing until it is reset.
    BreakerOpen,
}

/// A stop asked for and under way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopping {
    pub source: String,
    pub kind: StopKind,
    /// When the grace period ends and the group gets SIGKILL (`None` once sent).
    pub kill_at: Option<Instant>,
}

/// Why a session ended.
#[derive(Debug, Clone, PartialEq)]
pub enum End {
    /// Someone asked it to stop.
    Stopped { source: String, kind: StopKind },
    /// Its agent exited and nothing armed will start it again.
    Exited,
    /// Nightshift ended while the session waited for a limit's reset: the resume is kept for the next
    /// Nightshift process.
    Kept,
    /// This agent's part is over: the work goes on with the other agent (or back to the first),
    /// in the same session.
    Relayed(Box<super::Relayed>),
}

impl Life {
    pub(super) fn live(pid: u32, since: Instant) -> Self {
        Self::Live { pid, since, stopping: None }
    }

    pub fn is_live(&self) -> bool {
        matches!(self, Self::Live { .. })
    }

    pub(super) fn next_deadline(&self) -> Option<Instant> {
        match self {
            Self::Live { stopping: Some(Stopping { kill_at, .. }), .. } => *kill_at,
            Self::Between { next: Next::RestartAt(at), .. } => Some(*at),
            _ => None,
        }
    }
}

/// The session's lives: where it is now, and the wait before the restart under way.
#[derive(Debug, Clone)]
pub(super) struct Lives {
    life: Life,
    /// The wait before the restart under way, for the journal.
    restart_wait: Option<Duration>,
}

impl Lives {
    /// The first life: process `pid`, started now.
    pub(super) fn new(pid: u32, now: Now) -> Self {
        Self { life: Life::live(pid, now.mono), restart_wait: None }
    }

    pub(super) fn life(&self) -> &Life {
        &self.life
    }
}

impl Machine {
    pub(super) fn on_stop(&mut self, source: String, kind: StopKind, now: Now, fx: &mut Vec<Effect>) {
        if self.switch_cancelled() || self.relay_cancelled() {
            // The agent is already stopping for an account switch: it is the user's stop now. Once
            // it is down (the restart under the new account not made yet), the stop below ends it.
            if let Life::Live { stopping: Some(stopping), .. } = &mut self.lives.life {
                fx.push(Effect::Emit(EventKind::StopRequested { source: source.clone(), kind }));
                stopping.source = source;
                stopping.kind = kind;
                return;
            }
        }
        match &mut self.lives.life {
            Life::Live { stopping: stopping @ None, .. } => {
                fx.push(Effect::Emit(EventKind::StopRequested { source: source.clone(), kind }));
                fx.push(Effect::Signal(Signal::Hangup));
                *stopping = Some(Stopping { source, kind, kill_at: Some(now.mono + self.stop_grace) });
            }
            Life::Between { last, .. } => {
                let last = last.clone();
                fx.push(Effect::Emit(EventKind::StopRequested { source: source.clone(), kind }));
                if kind == StopKind::Shutdown && self.keeps_resume() {
                    self.keep_resume(&last, fx);
                    self.lives.life = Life::Ended(End::Kept);
                    return;
                }
                let reason = format!("stopped on request ({source}) while the agent was down; it last {last}");
                self.end(last, reason, End::Stopped { source, kind }, fx);
            }
            Life::Live { .. } | Life::Ended(_) => {}
        }
    }

    /// The session is over: the journal says so with a final state (the process is already gone).
    fn end(&mut self, last: Exit, reason: String, end: End, fx: &mut Vec<Effect>) {
        self.journal_state(
            EventKind::State {
                state: SessionState::Exited,
                reason,
                pid: None,
                exit_code: last.code(),
                signal: last.signal().map(str::to_string),
                error: None,
                dialog: None,
                last_screen: None,
            },
            fx,
        );
        self.lives.life = Life::Ended(end);
    }

    pub(super) fn life_tick(&mut self, now: Now, fx: &mut Vec<Effect>) {
        match &mut self.lives.life {
            Life::Live { stopping: Some(Stopping { kill_at: kill_at @ Some(_), .. }), .. }
                if kill_at.is_some_and(|t| t <= now.mono) =>
            {
                tracing::info!("grace period over; killing the process group");
                *kill_at = None;
                fx.push(Effect::Signal(Signal::Kill));
            }
            Life::Between { next, .. } if matches!(*next, Next::RestartAt(at) if at <= now.mono) => {
                if self.cycles.held() {
                    *next = Next::HeldBack;
                } else {
                    self.restart(now, fx);
                }
            }
            _ => {}
        }
    }

    /// Starts the agent again.
    fn restart(&mut self, now: Now, fx: &mut Vec<Effect>) {
        if let Some(account) = self.switch_starting() {
            // Moved off the account that met its limit: the new one's window is open.
            self.limit_left(&format!("the session moved to account {}", account.name), now, fx);
            let prompt = self.restart_prompt(now, true);
            if self.asks_by_typing() && self.client.fresh_handoff(now) {
                // Codex's new thread has it in its first prompt (Claude's, from `SessionStart`).
                self.client.delivered();
                self.emit(EventKind::HandoffGiven { source: "prompt".into() }, fx);
            }
            let prompt = prompt.map(|p| self.automated(crate::automated::Automated::Switch, &p, fx));
            self.expect_handoff(prompt.as_deref());
            fx.push(Effect::SwitchAccount { account, prompt });
            return;
        }
        let reason = match self.lives.restart_wait {
            Some(wait) => {
                format!("the agent exited while respawn was armed; started again after {} s", wait.as_secs_f64())
            }
            None => "the agent exited while respawn was armed".to_string(),
        };
        self.emit(
            EventKind::Respawn { action: respawn::Action::Restart, cycle: None, reason: Some(reason), cost_usd: None },
            fx,
        );
        let prompt =
            self.restart_prompt(now, false).map(|p| self.automated(crate::automated::Automated::Restart, &p, fx));
        fx.push(Effect::Spawn { conversation: self.client.conversation(), prompt });
    }

    pub(super) fn on_started(&mut self, pid: u32, now: Now, fx: &mut Vec<Effect>) {
        self.lives.life = Life::live(pid, now.mono);
        self.screen_cleared();
        self.journal_state(EventKind::running(pid, format!("process {pid} restarted")), fx);
        // Nothing is typed into the new client before it is seen at its prompt.
        self.drive(respawn::Input::Restarted, now, fx);
        self.refresh_blocker(now, fx);
    }

    /// Starting the agent again failed: a life that ended at once.
    pub(super) fn on_spawn_failed(&mut self, error: String, exit_code: i32, now: Now, fx: &mut Vec<Effect>) {
        self.journal_state(
            EventKind::State {
                state: SessionState::Failed,
                reason: format!("failed to restart: {error}"),
                pid: None,
                exit_code: Some(exit_code),
                signal: None,
                error: Some(error),
                dialog: None,
                last_screen: None,
            },
            fx,
        );
        self.after_life(Exit::Code(exit_code), Duration::ZERO, now, fx);
    }

    pub(super) fn on_exit(&mut self, exit: Exit, last_screen: Vec<String>, now: Now, fx: &mut Vec<Effect>) {
        let Life::Live { pid, since, stopping } = &self.lives.life else { return };
        let (pid, lived, stopping) = (*pid, now.mono.saturating_duration_since(*since), stopping.clone());
        if stopping.is_some() {
            // Whatever the group left behind after a requested stop goes with it.
            fx.push(Effect::Signal(Signal::Kill));
        }
        self.cycles.life_ended();
        if let Some(relayed) = self.relay_exited(now) {
            // Stopped to move the work: the next agent starts in this session, from the handoff.
            let to = relayed.contract.agent;
            self.exited(pid, &exit, format!("stopped for the move to {to}; process {exit}"), None, fx);
            let reason = format!("the work moves to {to}: {}", relayed.why);
            self.journal_state(EventKind::state(SessionState::Starting, reason), fx);
            self.lives.life = Life::Ended(End::Relayed(Box::new(relayed)));
            return;
        }
        if let Some(account) = self.switch_restarting() {
            // Stopped to move accounts: the same working tree goes on under the new one at once.
            let reason = format!("stopped to move to account {account}; process {exit}");
            self.exited(pid, &exit, reason, None, fx);
            self.lives.life = Life::Between { last: exit, next: Next::RestartAt(now.mono) };
            return;
        }
        // A life that ends badly or is stopped may leave work nobody committed: keep it.
        match &stopping {
            Some(Stopping { source, .. }) => fx.push(Effect::Salvage { reason: format!("stopped ({source})") }),
            None if exit != Exit::Code(0) => fx.push(Effect::Salvage { reason: format!("the agent {exit}") }),
            None => {}
        }
        if let Some(Stopping { source, kind, .. }) = stopping {
            if kind == StopKind::Shutdown && self.keeps_resume() {
                self.keep_resume(&exit, fx);
                self.lives.life = Life::Ended(End::Kept);
                return;
            }
            let reason = format!("stopped on request ({source}); process {exit}");
            self.exited(pid, &exit, reason, None, fx);
            self.lives.life = Life::Ended(End::Stopped { source, kind });
            return;
        }
        // A failure's last words, for the journal and the user: what the process left on screen.
        let last_screen = (exit != Exit::Code(0)).then_some(last_screen);
        self.exited(pid, &exit, format!("process {exit}"), last_screen, fx);
        self.after_life(exit, lived, now, fx);
    }

    fn exited(
        &mut self,
        pid: u32,
        exit: &Exit,
        reason: String,
        last_screen: Option<Vec<String>>,
        fx: &mut Vec<Effect>,
    ) {
        self.journal_state(
            EventKind::State {
                state: SessionState::Exited,
                reason,
                pid: Some(pid),
                exit_code: exit.code(),
                signal: exit.signal().map(str::to_string),
                error: None,
                dialog: None,
                last_screen,
            },
            fx,
        );
    }

    /// A life ended by itself after `lived`: start the agent again, or not.
    fn after_life(&mut self, exit: Exit, lived: Duration, now: Now, fx: &mut Vec<Effect>) {
        let settings = self.cycles.active().map(|r| r.cycle.settings.clone());
        let Some(settings) = settings else {
            self.lives.life = Life::Ended(End::Exited);
            return;
        };
        if exit == Exit::Code(0) && !settings.restart_clean_exits {
            // The agent's own end, or the user's /exit: not for Nightshift to undo.
            self.lives.life = Life::Ended(End::Exited);
            return;
        }
        self.lives.life = Life::Between { last: exit.clone(), next: Next::Measuring };
        self.because("respawn is armed: the agent is started again after a wait");
        self.refresh_blocker(now, fx);
        if let Some(trip) = self.breakers.life_ended(exit.shell_code() != 0 && lived < SHORT_LIFE) {
            self.open_crash_loop(trip, now, fx);
            return;
        }
        fx.push(Effect::Measure {
            purpose: Purpose::Restart,
            exclude: settings.own_files(self.agent.instructions_file()),
        });
    }

    fn open_crash_loop(&mut self, trip: Trip, now: Now, fx: &mut Vec<Effect>) {
        self.breaker(BreakerKind::CrashLoop, trip, now, fx);
        if let Life::Between { next, .. } = &mut self.lives.life {
            *next = Next::BreakerOpen;
        }
    }

    /// The working tree as the restart finds it: the wait before it, or the breaker.
    pub(super) fn restart_measured(&mut self, fingerprint: Option<Fingerprint>, now: Now, fx: &mut Vec<Effect>) {
        let Life::Between { next: Next::Measuring, .. } = &self.lives.life else { return };
        let (cap, ladder) = self
            .cycles
            .respawn()
            .map_or((0, Vec::new()), |r| (r.cycle.settings.max_restarts, r.cycle.settings.restart_backoff.clone()));
        let (restart, closed) = self.breakers.restart(fingerprint, cap, &ladder);
        if let Some(trip) = closed {
            self.breaker(BreakerKind::CrashLoop, trip, now, fx);
        }
        match restart {
            Ok(wait) => {
                self.lives.restart_wait = Some(wait);
                if let Life::Between { next, .. } = &mut self.lives.life {
                    *next = Next::RestartAt(now.mono + wait);
                }
            }
            Err(trip) => self.open_crash_loop(trip, now, fx),
        }
    }

    /// An open crash-loop breaker lets its probe through, or was reset: the agent starts now.
    pub(super) fn breaker_lets_through(&mut self, now: Now) {
        if let Life::Between { next: next @ Next::BreakerOpen, .. } = &mut self.lives.life {
            *next = Next::RestartAt(now.mono);
        }
    }

    /// The agent is stopped to start again under another account.
    pub(super) fn stop_for_switch(&mut self, now: Now, fx: &mut Vec<Effect>) {
        self.stop_to_move("the account switch".into(), now, fx);
    }

    /// Stops the agent for a move (of account or agent): what comes after is the move's.
    pub(super) fn stop_to_move(&mut self, source: String, now: Now, fx: &mut Vec<Effect>) {
        if let Life::Live { stopping, .. } = &mut self.lives.life {
            *stopping = Some(Stopping { source, kind: StopKind::User, kill_at: Some(now.mono + self.stop_grace) });
        }
        fx.push(Effect::Signal(Signal::Hangup));
    }

    /// A hold was released: a restart it kept back happens now.
    pub(super) fn released(&mut self, now: Now) {
        if let Life::Between { next: next @ Next::HeldBack, .. } = &mut self.lives.life {
            *next = Next::RestartAt(now.mono);
        }
    }

    /// Respawn was switched off or ran out while the agent was down: the session ends.
    pub(super) fn end_if_unarmed(&mut self, fx: &mut Vec<Effect>) {
        let Life::Between { last, .. } = &self.lives.life else { return };
        if self.cycles.active().is_some() {
            return;
        }
        let last = last.clone();
        let reason = format!("respawn ended while the agent was down; it last {last}");
        self.end(last, reason, End::Exited, fx);
    }

    /// Whether a stop is under way (for the actor: the process is being stopped).
    pub fn stopping(&self) -> bool {
        matches!(self.lives.life, Life::Live { stopping: Some(_), .. })
    }
}
