//! The session's lives: the process runs, stops, exits, is started again or not; the breakers that
//! decide it.

use super::*;
use crate::breaker::{BreakerKind, Trip};

/// The wait before an exited agent is started again.
const RESTART_BACKOFF: Duration = Duration::from_secs(2);

/// Where the session is in its lives.
#[derive(Debug, Clone, PartialEq)]
pub enum Life {
    /// The agent's process runs.
    Live { pid: u32, since: Instant, stopping: Option<Stopping> },
    /// Between lives: the agent exited and may be started again.
    Between {
        /// When to start it again (`None`: not until something changes, such as a breaker reset).
        restart_at: Option<Instant>,
        /// The user's hold kept a due restart back: it happens when the hold is released.
        held_back: bool,
    },
    /// No process, and none will be.
    Ended(End),
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// Someone asked it to stop.
    Stopped { source: String, kind: StopKind },
    /// Its agent exited and nothing armed will start it again.
    Unarmed,
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
            Self::Between { restart_at, .. } => *restart_at,
            _ => None,
        }
    }

    fn stopping(&self) -> Option<&Stopping> {
        match self {
            Self::Live { stopping, .. } => stopping.as_ref(),
            _ => None,
        }
    }
}

impl Machine {
    pub(super) fn on_stop(&mut self, source: String, kind: StopKind, now: Now, fx: &mut Vec<Effect>) {
        match &mut self.life {
            Life::Live { stopping: stopping @ None, .. } => {
                fx.push(Effect::Emit(EventKind::StopRequested { source: source.clone(), kind }));
                fx.push(Effect::Signal(Signal::SIGHUP));
                *stopping = Some(Stopping { source, kind, kill_at: Some(now.mono + self.stop_grace) });
            }
            Life::Between { .. } => {
                fx.push(Effect::Emit(EventKind::StopRequested { source: source.clone(), kind }));
                self.life = Life::Ended(End::Stopped { source, kind });
            }
            Life::Live { .. } | Life::Ended(_) => {}
        }
    }

    pub(super) fn life_tick(&mut self, now: Now, fx: &mut Vec<Effect>) {
        match &mut self.life {
            Life::Live { stopping: Some(Stopping { kill_at: kill_at @ Some(_), .. }), .. }
                if kill_at.is_some_and(|t| t <= now.mono) =>
            {
                tracing::info!("grace period over; killing the process group");
                *kill_at = None;
                fx.push(Effect::Signal(Signal::SIGKILL));
            }
            Life::Between { restart_at: restart_at @ Some(_), held_back }
                if restart_at.is_some_and(|t| t <= now.mono) =>
            {
                *restart_at = None;
                if self.held {
                    *held_back = true;
                } else {
                    self.restart(fx);
                }
            }
            _ => {}
        }
    }

    /// Starts the agent again.
    fn restart(&mut self, fx: &mut Vec<Effect>) {
        self.emit(
            EventKind::Respawn {
                action: respawn::Action::Restart,
                cycle: None,
                reason: Some("the agent exited while respawn was armed".into()),
                cost_usd: None,
            },
            fx,
        );
        fx.push(Effect::Spawn);
    }

    pub(super) fn on_started(&mut self, pid: u32, now: Now, fx: &mut Vec<Effect>) {
        self.life = Life::live(pid, now.mono);
        self.activity = None;
        self.state = SessionState::Running;
        self.emit(EventKind::running(pid, format!("process {pid} restarted")), fx);
        self.refresh_blocker(now, fx);
    }

    pub(super) fn on_spawn_failed(&mut self, error: String, exit_code: i32, now: Now, fx: &mut Vec<Effect>) {
        self.state = SessionState::Failed;
        self.emit(
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
        if let Some(trip) = self.crash.record_exit(exit_code, now.mono) {
            self.breaker(BreakerKind::CrashLoop, trip, fx);
        }
        self.life = Life::Between { restart_at: None, held_back: false };
    }

    pub(super) fn on_exit(&mut self, exit: Exit, last_screen: Vec<String>, now: Now, fx: &mut Vec<Effect>) {
        let Life::Live { pid, stopping, .. } = &self.life else { return };
        let (pid, stopping) = (*pid, stopping.clone());
        if stopping.is_some() {
            // Whatever the group left behind after a requested stop goes with it.
            fx.push(Effect::Signal(Signal::SIGKILL));
        }
        let reason = match &stopping {
            Some(s) => format!("stopped on request ({}); process {exit}", s.source),
            None => format!("process {exit}"),
        };
        // A failure's last words, for the journal and the user: what the process left on screen.
        let last_screen = (stopping.is_none() && exit != Exit::Code(0)).then_some(last_screen);
        self.state = SessionState::Exited;
        self.emit(
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
        self.life = Life::Between { restart_at: None, held_back: false };
        self.refresh_blocker(now, fx);
        // Start it again only while respawn is armed and the user did not stop it.
        let armed = self.respawn.as_ref().is_some_and(Respawn::active);
        if let Some(Stopping { source, kind, .. }) = stopping {
            self.life = Life::Ended(End::Stopped { source, kind });
            return;
        }
        if !armed {
            self.life = Life::Ended(End::Unarmed);
            return;
        }
        if let Some(trip) = self.crash.record_exit(exit.shell_code(), now.mono) {
            self.breaker(BreakerKind::CrashLoop, trip, fx);
        }
        let restart_at = (!self.crash.is_open()).then(|| now.mono + RESTART_BACKOFF);
        self.life = Life::Between { restart_at, held_back: false };
    }

    /// A hold was released: a restart it kept back happens now.
    pub(super) fn released(&mut self, now: Now) {
        if let Life::Between { restart_at, held_back: held_back @ true } = &mut self.life {
            *held_back = false;
            *restart_at = Some(now.mono);
        }
    }

    /// Respawn was switched off or ran out while the agent was down: the session ends.
    pub(super) fn end_if_unarmed(&mut self) {
        if matches!(self.life, Life::Between { .. }) && !self.respawn.as_ref().is_some_and(Respawn::active) {
            self.life = Life::Ended(End::Unarmed);
        }
    }

    pub(super) fn on_measured(
        &mut self,
        purpose: Purpose,
        fingerprint: Option<Fingerprint>,
        now: Now,
        fx: &mut Vec<Effect>,
    ) {
        let Purpose::Cycle(cycle) = purpose;
        let Some(fingerprint) = fingerprint else { return };
        let before = self.fingerprint.replace(fingerprint.clone());
        if cycle == 1 || before.is_none() {
            return;
        }
        if let Some(trip) = self.progress.record(before.as_ref() != Some(&fingerprint)) {
            self.breaker(BreakerKind::NoProgress, trip, fx);
            self.refresh_blocker(now, fx);
        }
    }

    pub(super) fn breaker(&mut self, kind: BreakerKind, trip: Trip, fx: &mut Vec<Effect>) {
        tracing::info!(breaker = kind.as_str(), state = trip.state.as_str(), "{}", trip.reason);
        self.emit(EventKind::Breaker { breaker: kind, state: trip.state, reason: trip.reason.clone() }, fx);
        if trip.state == BreakerState::Open {
            let kind = match kind {
                BreakerKind::CrashLoop => "crash_loop",
                BreakerKind::NoProgress => "no_progress",
            };
            self.set_state(SessionState::BreakerOpen, format!("{kind} breaker open: {}", trip.reason), fx);
        }
    }

    pub(super) fn reset_breakers(&mut self, now: Now, fx: &mut Vec<Effect>) {
        let mut reset = Vec::new();
        if let Some(trip) = self.crash.reset() {
            self.breaker(BreakerKind::CrashLoop, trip, fx);
            reset.push("crash_loop");
        }
        if let Some(trip) = self.progress.reset() {
            self.breaker(BreakerKind::NoProgress, trip, fx);
            reset.push("no_progress");
        }
        let said =
            if reset.is_empty() { "no breaker was open".to_string() } else { format!("reset: {}", reset.join(", ")) };
        fx.push(Effect::Reply(said));
        if let Life::Between { restart_at, .. } = &mut self.life {
            if !self.crash.is_open() {
                *restart_at = Some(now.mono);
            }
        }
        self.refresh_blocker(now, fx);
    }

    /// Whether a stop is under way (for the actor: the process is being stopped).
    pub fn stopping(&self) -> bool {
        self.life.stopping().is_some()
    }
}
