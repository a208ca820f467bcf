//! The session actor: one task that owns the session's child, its screen, its detector, its respawn
//! cycle and its breakers.
//!
//! It lives as long as the session: while respawn is armed, an agent that exits is started again
//! (after a short back-off, Claude with `--continue`) unless the user stopped it or the crash-loop
//! breaker tripped; then the actor waits, without a process, for a breaker reset, a stop, or the end
//! of the armed duration.

use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::sync::{mpsc, watch};
use tokio::time::{sleep_until, Instant};

use super::{Change, Control, Options, RespawnArm, SessionHandle, Status, Switch};
use crate::agent::{Adapter, AgentKind};
use crate::breaker::{BreakerState, CrashLoop, NoProgress, Trip};
use crate::detect::{Activity, DetectConfig, Transition, Watcher};
use crate::event::{EventKind, SessionId, SessionState};
use crate::journal::Journal;
use crate::limits::resume;
use crate::limits::{self, LimitKind, LimitText};
use crate::pty::{self, CommandSpec, Exit, Pty, Spawned};
use crate::respawn::{self, Effect, Input};
use crate::screen::Screen;

mod limit;
mod options;

/// How long output that was already written is still read after the child exits.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);
/// The gap between typed text and the Enter that submits it (see [`crate::pty::Pty::write_after`]).
const ENTER_DELAY: Duration = Duration::from_millis(120);
/// The wait before an exited agent is started again.
const RESTART_BACKOFF: Duration = Duration::from_secs(2);
/// The pause between the Escape and the resume prompt.
const RESUME_AFTER_ESCAPE: Duration = Duration::from_millis(600);
/// How often a pending resume looks at the wall clock.
const RESUME_CHECK: Duration = Duration::from_secs(5);
/// Rows of the final screen kept with a failed exit.
const LAST_SCREEN_ROWS: usize = 6;

/// Everything an actor needs to run one session.
pub(crate) struct Actor {
    pub id: SessionId,
    pub command: CommandSpec,
    pub agent: AgentKind,
    pub spawned: Spawned,
    pub screen: Screen,
    pub journal: Journal,
    pub stop_grace: Duration,
    pub output_tap: Option<mpsc::UnboundedSender<Vec<u8>>>,
    pub adapter: Adapter,
    pub detect: DetectConfig,
    pub respawn: Option<respawn::Settings>,
    pub preset: Option<String>,
    pub auto_resume: Option<resume::Settings>,
    pub window_guard: limits::WindowGuard,
    /// Paused on this limit from the start (a session restored with its pending resume).
    pub paused_on: Option<LimitText>,
    /// Every automatic action held from the start (a restored session the user had paused).
    pub held: bool,
}

impl Actor {
    /// Starts the actor task; returns the handle and the task.
    pub fn start(self) -> (SessionHandle, tokio::task::JoinHandle<()>) {
        let (control_tx, control_rx) = mpsc::channel(64);
        let (status_tx, status_rx) =
            watch::channel(Status { state: SessionState::Running, exit: None, options: Options::default() });
        let handle = SessionHandle { id: self.id.clone(), control: control_tx, status: status_rx };
        let task = tokio::spawn(self.run(control_rx, status_tx));
        (handle, task)
    }

    async fn run(self, mut controls: mpsc::Receiver<Control>, status: watch::Sender<Status>) {
        let Actor {
            id,
            command,
            agent,
            spawned,
            screen,
            journal: emitter,
            stop_grace,
            output_tap,
            adapter,
            detect,
            respawn,
            preset,
            auto_resume,
            window_guard,
            paused_on,
            held,
        } = self;
        let now = Instant::now();
        let respawn_until = respawn.as_ref().map(|r| emitter.now() + r.duration);
        let mut s = Session {
            watcher: Watcher::new(adapter.clone(), detect, now),
            cycle: respawn.map(|settings| respawn::State::new(settings, now)),
            preset,
            respawn_until,
            held,
            id,
            command,
            agent,
            screen,
            emitter,
            status,
            adapter,
            detect,
            stop_grace,
            output_tap,
            crash: CrashLoop::default(),
            progress: NoProgress::default(),
            fingerprint: None,
            cost: None,
            spent: None,
            cycle_cost_start: None,
            stopped_by: None,
            running: true,
            limit: None,
            limit_seen_gone: true,
            last_sample: None,
            auto_resume,
            plan: None,
            resume_next: now,
            window_guard,
            fresh_window: false,
            guarded_until: None,
            blocked: None,
        };
        if let Some(cycle) = &s.cycle {
            let reason = format!(
                "idle timeout {} s, for {} min",
                cycle.settings.idle_timeout.as_secs_f64(),
                cycle.settings.duration.as_secs() / 60
            );
            s.emit(EventKind::Respawn { action: "armed".into(), cycle: None, reason: Some(reason), cost_usd: None });
        }
        if let Some(limit) = paused_on {
            s.pause(limit, "journal", None);
        }
        s.publish();

        let mut process = Some(spawned);
        let mut last_exit = Exit::Code(-1);
        loop {
            match process.take() {
                Some(spawned) => last_exit = s.live(spawned, &mut controls).await,
                None => match s.dormant(&mut controls).await {
                    Some(spawned) => {
                        process = Some(spawned);
                        continue;
                    }
                    None => break,
                },
            }
            // The process is gone. Start it again only while respawn is armed, the user did not stop
            // it, and the crash-loop breaker allows (the dormant wait sees to the breaker).
            let armed = s.cycle.as_ref().is_some_and(|c| c.phase != respawn::Phase::Finished);
            if s.stopped_by.is_some() || !armed {
                break;
            }
            if let Some(trip) = s.crash.record_exit(last_exit.shell_code(), Instant::now()) {
                s.breaker("crash_loop", trip);
            }
        }
        let mut options = s.options();
        options.respawn_active = false;
        options.auto_resume = None;
        s.status.send_modify(|st| {
            st.exit = Some(last_exit);
            st.options = options;
        });
    }
}

/// The actor's state across the lives of its process.
struct Session {
    id: SessionId,
    command: CommandSpec,
    agent: AgentKind,
    screen: Screen,
    emitter: Journal,
    status: watch::Sender<Status>,
    adapter: Adapter,
    detect: DetectConfig,
    stop_grace: Duration,
    output_tap: Option<mpsc::UnboundedSender<Vec<u8>>>,
    watcher: Watcher,
    cycle: Option<respawn::State>,
    /// The preset the cycle came from, for the record.
    preset: Option<String>,
    /// When the armed duration ends, on the wall clock.
    respawn_until: Option<chrono::DateTime<chrono::Utc>>,
    /// The user holds every automatic action (respawn cycles, resumes).
    held: bool,
    crash: CrashLoop,
    progress: NoProgress,
    fingerprint: Option<crate::git::Fingerprint>,
    /// The session's cost as its statusLine last reported it (it starts again after `/clear`).
    cost: Option<f64>,
    /// Everything spent since the session started, across those restarts of the count.
    spent: Option<f64>,
    cycle_cost_start: Option<f64>,
    stopped_by: Option<String>,
    running: bool,
    /// The usage limit the agent is paused on, if it is.
    limit: Option<LimitText>,
    /// After a limit ends, its notice may linger on screen: only a notice drawn after it has gone
    /// counts again.
    limit_seen_gone: bool,
    last_sample: Option<crate::usage::Sample>,
    auto_resume: Option<resume::Settings>,
    /// The resume being waited for, while paused on a limit with auto-resume on.
    plan: Option<resume::Plan>,
    /// When the pending resume looks at the wall clock next.
    resume_next: Instant,
    window_guard: limits::WindowGuard,
    /// The 5-hour window now open began after a limit in this session.
    fresh_window: bool,
    /// The guard holds resumes and respawns until this instant (the fresh window's reset).
    guarded_until: Option<Option<chrono::DateTime<chrono::Utc>>>,
    /// What currently keeps respawn cycles from running (what the machine was last told).
    blocked: Option<String>,
}

impl Session {
    fn emit(&self, kind: EventKind) {
        self.emitter.emit(&self.id, kind);
        self.publish();
    }

    fn set_state(&self, state: SessionState, reason: String) {
        self.emit(EventKind::state(state, reason));
        self.status.send_modify(|s| s.state = state);
    }

    fn report(&mut self, transition: Option<Transition>, pty: Option<&Pty>) {
        let Some(t) = transition else { return };
        let state = match t.to {
            Activity::Working => SessionState::Working,
            Activity::Idle => SessionState::Idle,
            Activity::WaitingInput => SessionState::WaitingInput,
        };
        tracing::debug!(session = %self.id, %state, reason = %t.reason, "activity changed");
        let mut kind = EventKind::state(state, t.reason);
        let dialog = t.verdict.dialog.clone();
        if let EventKind::State { dialog: d, .. } = &mut kind {
            d.clone_from(&dialog);
        }
        if t.to == Activity::Working {
            // The working state that follows says where the session is now.
            self.clear_limit(pty, false);
        }
        let menu = dialog.as_ref().is_some_and(|d| d.kind == "menu");
        self.emit(kind);
        self.status.send_modify(|s| s.state = state);
        if let (Some(dialog), Some(pty)) = (dialog, pty) {
            let auto = self.cycle.as_ref().is_some_and(|c| c.settings.auto_accept);
            if auto && !self.held && self.adapter.auto_accepts(&dialog.kind) {
                pty.write(b"\r".to_vec());
                self.emit(EventKind::Respawn {
                    action: "auto_accept".into(),
                    cycle: None,
                    reason: Some(format!("accepted a routine {} dialog", dialog.kind)),
                    cost_usd: None,
                });
            }
        }
        if menu {
            self.on_limit_menu(pty);
        }
        self.drive(Input::Activity(t.to), pty);
    }

    /// What keeps cycles from running now, if anything.
    fn blocker(&self) -> Option<String> {
        if !self.running {
            return Some("the agent is not running".into());
        }
        if self.held {
            return Some("held by the user".into());
        }
        if self.progress.state == BreakerState::Open {
            return Some("the no-progress breaker is open".into());
        }
        if self.limit.is_some() {
            return Some("paused on a usage limit".into());
        }
        if self.guard_active() {
            return Some("the fresh window's reserve is reached".into());
        }
        None
    }

    fn refresh_blocker(&mut self, pty: Option<&Pty>) {
        let blocker = self.blocker();
        if blocker != self.blocked {
            self.blocked.clone_from(&blocker);
            self.drive(Input::Blocked(blocker), pty);
        }
    }

    /// Feeds the respawn machine and carries out what it says.
    fn drive(&mut self, input: Input, pty: Option<&Pty>) {
        let Some(state) = &self.cycle else { return };
        let (next, effects) = respawn::step(state, input, Instant::now());
        self.cycle = Some(next);
        for effect in effects {
            self.carry_out(effect, pty);
        }
    }

    fn carry_out(&mut self, effect: Effect, pty: Option<&Pty>) {
        match effect {
            Effect::CycleStarted { cycle } => {
                self.cycle_cost_start = self.spent;
                self.set_state(SessionState::Respawning, format!("respawn cycle {cycle} started"));
                self.emit(EventKind::Respawn {
                    action: "cycle_started".into(),
                    cycle: Some(cycle),
                    reason: None,
                    cost_usd: self.cost,
                });
                self.measure_progress(cycle);
                self.refresh_blocker(pty);
            }
            Effect::Send { cycle, step, text } => {
                if let Some(pty) = pty {
                    pty.write(text.into_bytes());
                    pty.write_after(ENTER_DELAY, b"\r".to_vec());
                }
                self.emit(EventKind::RespawnStep { cycle, step, outcome: "sent".into() });
            }
            Effect::StepEnded { cycle, step, outcome } => {
                self.emit(EventKind::RespawnStep { cycle, step, outcome: outcome.into() });
            }
            Effect::Abandoned { cycle, reason } => {
                self.emit(EventKind::Respawn {
                    action: "abandoned".into(),
                    cycle: Some(cycle),
                    reason: Some(reason),
                    cost_usd: None,
                });
            }
            Effect::CycleFinished { cycle } => {
                let spent = self.spent.zip(self.cycle_cost_start).map(|(now, then)| now - then);
                self.emit(EventKind::Respawn {
                    action: "cycle_finished".into(),
                    cycle: Some(cycle),
                    reason: None,
                    cost_usd: spent,
                });
            }
            Effect::Expired => {
                self.emit(EventKind::Respawn {
                    action: "expired".into(),
                    cycle: None,
                    reason: Some("the armed duration ended".into()),
                    cost_usd: None,
                });
            }
        }
    }

    /// The no-progress breaker's verdict at the start of a cycle: did the working tree's content
    /// change since the last one (the cycle's own notes aside)?
    fn measure_progress(&mut self, cycle: u32) {
        let own = self.cycle.as_ref().map(|c| c.settings.own_files(self.agent.instructions_file())).unwrap_or_default();
        let Some(now) = crate::git::fingerprint(&self.command.cwd, &own) else { return };
        let before = self.fingerprint.replace(now.clone());
        if cycle == 1 || before.is_none() {
            return;
        }
        if let Some(trip) = self.progress.record(before.as_ref() != Some(&now)) {
            self.breaker("no_progress", trip);
        }
    }

    fn breaker(&self, name: &str, trip: Trip) {
        tracing::info!(session = %self.id, breaker = name, state = trip.state.as_str(), "{}", trip.reason);
        self.emit(EventKind::Breaker { breaker: name.into(), state: trip.state, reason: trip.reason.clone() });
        if trip.state == BreakerState::Open {
            self.set_state(SessionState::BreakerOpen, format!("{name} breaker open: {}", trip.reason));
        }
    }

    fn reset_breakers(&mut self) -> String {
        let mut reset = Vec::new();
        if let Some(trip) = self.crash.reset() {
            self.breaker("crash_loop", trip);
            reset.push("crash_loop");
        }
        if let Some(trip) = self.progress.reset() {
            self.breaker("no_progress", trip);
            reset.push("no_progress");
        }
        if reset.is_empty() {
            "no breaker was open".to_string()
        } else {
            format!("reset: {}", reset.join(", "))
        }
    }

    /// Runs one life of the process; returns how it ended.
    async fn live(&mut self, spawned: Spawned, controls: &mut mpsc::Receiver<Control>) -> Exit {
        let Spawned { pty, mut output, exit: mut exit_rx } = spawned;
        self.running = true;
        self.refresh_blocker(Some(&pty));
        let mut output_open = true;
        let mut exit: Option<Exit> = None;
        let mut kill_at: Option<Instant> = None;
        let mut drain_until: Option<Instant> = None;
        let mut controls_open = true;
        loop {
            if exit.is_some() && (!output_open || drain_until.is_some_and(|t| Instant::now() >= t)) {
                break;
            }
            let wakeup = if exit.is_none() { self.watcher.next_wakeup() } else { None };
            let cycle_due = self.cycle.as_ref().and_then(respawn::State::next_deadline).filter(|_| exit.is_none());
            let resume_check =
                self.plan.as_ref().filter(|p| !p.failed && exit.is_none() && !self.held).map(|_| self.resume_next);
            tokio::select! {
                chunk = output.recv(), if output_open => match chunk {
                    Some(bytes) => {
                        let now = Instant::now();
                        self.screen.feed(&bytes);
                        if let Some(tap) = &self.output_tap {
                            let _ = tap.send(bytes);
                        }
                        if exit.is_none() {
                            let t = self.watcher.output(now);
                            self.report(t, Some(&pty));
                        }
                    }
                    None => output_open = false,
                },
                () = sleep_until(wakeup.unwrap_or_else(Instant::now)), if wakeup.is_some() => {
                    let t = self.watcher.wake(Instant::now(), &self.screen);
                    if let Some(region) = self.watcher.take_limit_region() {
                        self.on_limit_region(&region, Some(&pty));
                    }
                    if self.watcher.take_working_seen() {
                        self.turn_seen(Some(&pty));
                    }
                    self.report(t, Some(&pty));
                }
                () = sleep_until(cycle_due.unwrap_or_else(Instant::now)), if cycle_due.is_some() => {
                    self.drive(Input::Tick, Some(&pty));
                }
                () = sleep_until(resume_check.unwrap_or_else(Instant::now)), if resume_check.is_some() => {
                    self.resume_tick(Some(&pty));
                }
                result = &mut exit_rx, if exit.is_none() => {
                    exit = Some(result.unwrap_or(Exit::Code(-1)));
                    drain_until = Some(Instant::now() + DRAIN_AFTER_EXIT);
                    kill_at = None;
                }
                control = controls.recv(), if controls_open => match control {
                    // Every handle is gone: the supervisor dropped the session.
                    None => {
                        controls_open = false;
                        if exit.is_none() && self.stopped_by.is_none() {
                            self.begin_stop(&pty, "the supervisor", &mut kill_at);
                        }
                    }
                    Some(Control::Stop { source }) if exit.is_none() && self.stopped_by.is_none() => {
                        self.begin_stop(&pty, &source, &mut kill_at);
                    }
                    Some(control) => self.handle(control, Some(&pty)),
                },
                () = sleep_until(kill_at.unwrap_or_else(Instant::now)), if kill_at.is_some() => {
                    tracing::info!(session = %self.id, "grace period over; killing the process group");
                    pty.signal_group(Signal::SIGKILL);
                    kill_at = None;
                }
                () = sleep_until(drain_until.unwrap_or_else(Instant::now)), if drain_until.is_some() && output_open => {
                    drain_until = Some(Instant::now());
                }
            }
        }

        let exit = exit.expect("the loop ends only after the exit");
        if self.stopped_by.is_some() {
            // Whatever the group left behind after a requested stop goes with it.
            pty.signal_group(Signal::SIGKILL);
        }
        let reason = match &self.stopped_by {
            Some(source) => format!("stopped on request ({source}); process {exit}"),
            None => format!("process {exit}"),
        };
        // A failure's last words, for the journal and the user: what the process left on screen.
        let last_screen = (self.stopped_by.is_none() && exit != Exit::Code(0)).then(|| {
            self.screen.snapshot().last_rows(LAST_SCREEN_ROWS).iter().map(|r| r.trim_end().to_string()).collect()
        });
        self.emit(EventKind::State {
            state: SessionState::Exited,
            reason,
            pid: Some(pty.pid()),
            exit_code: exit.code(),
            signal: exit.signal().map(str::to_string),
            error: None,
            dialog: None,
            last_screen,
        });
        self.status.send_modify(|s| s.state = SessionState::Exited);
        self.running = false;
        self.refresh_blocker(None);
        exit
    }

    fn begin_stop(&mut self, pty: &Pty, source: &str, kill_at: &mut Option<Instant>) {
        self.emit(EventKind::StopRequested { source: source.to_string() });
        pty.signal_group(Signal::SIGHUP);
        *kill_at = Some(Instant::now() + self.stop_grace);
        self.stopped_by = Some(source.to_string());
    }

    /// Between lives: waits to restart the agent (after the back-off, unless a breaker or the user's
    /// hold keeps it back), for a reset or a stop, or for the armed duration to end. `None` ends the
    /// session.
    async fn dormant(&mut self, controls: &mut mpsc::Receiver<Control>) -> Option<Spawned> {
        let mut restart_at = (!self.crash.is_open()).then(|| Instant::now() + RESTART_BACKOFF);
        // A restart the user's hold kept back: it happens when the hold is released.
        let mut held_back = false;
        loop {
            let expiry = self.cycle.as_ref().and_then(respawn::State::next_deadline);
            tokio::select! {
                () = sleep_until(restart_at.unwrap_or_else(Instant::now)), if restart_at.is_some() => {
                    restart_at = None;
                    if self.held {
                        held_back = true;
                    } else if let Some(spawned) = self.restart() {
                        return Some(spawned);
                    }
                }
                () = sleep_until(expiry.unwrap_or_else(Instant::now)), if expiry.is_some() => {
                    self.drive(Input::Tick, None);
                    if self.cycle.as_ref().is_some_and(|c| c.phase == respawn::Phase::Finished) {
                        return None;
                    }
                }
                control = controls.recv() => match control {
                    None => return None,
                    Some(Control::Stop { source }) => {
                        self.emit(EventKind::StopRequested { source: source.clone() });
                        self.stopped_by = Some(source);
                        return None;
                    }
                    Some(Control::ResetBreaker(reply)) => {
                        let said = self.reset_breakers();
                        let _ = reply.send(said);
                        if !self.crash.is_open() {
                            restart_at = Some(Instant::now());
                        }
                    }
                    Some(control) => self.handle(control, None),
                },
            }
            // Respawn switched off (or its duration over) while the agent was down: nothing will
            // start it again, so the session ends here.
            if !self.cycle.as_ref().is_some_and(|c| c.phase != respawn::Phase::Finished) {
                return None;
            }
            if held_back && !self.held {
                held_back = false;
                restart_at = Some(Instant::now());
            }
        }
    }

    /// Starts the agent again, Claude with `--continue` so the conversation carries on.
    fn restart(&mut self) -> Option<Spawned> {
        if self.agent == AgentKind::Claude && !self.command.args.iter().any(|a| a == "--continue" || a == "-c") {
            self.command.args.push("--continue".into());
        }
        self.emit(EventKind::Respawn {
            action: "restart".into(),
            cycle: None,
            reason: Some("the agent exited while respawn was armed".into()),
            cost_usd: None,
        });
        match pty::spawn(&self.command) {
            Ok(spawned) => {
                let pid = spawned.pty.pid();
                self.screen = Screen::new(self.command.size);
                self.watcher = Watcher::new(self.adapter.clone(), self.detect, Instant::now());
                self.emit(EventKind::running(pid, format!("process {pid} restarted")));
                self.status.send_modify(|s| s.state = SessionState::Running);
                Some(spawned)
            }
            Err(error) => {
                self.emit(EventKind::failed("failed to restart", &error));
                if let Some(trip) = self.crash.record_exit(error.exit_code(), Instant::now()) {
                    self.breaker("crash_loop", trip);
                }
                None
            }
        }
    }

    /// Controls that mean the same with or without a process.
    fn handle(&mut self, control: Control, pty: Option<&Pty>) {
        match control {
            Control::Send { text, enter, source } => match pty {
                Some(pty) => {
                    self.emit(EventKind::Input { source, chars: text.chars().count(), enter });
                    pty.write(text.into_bytes());
                    if enter {
                        pty.write_after(ENTER_DELAY, b"\r".to_vec());
                    }
                    self.drive(Input::UserInput, Some(pty));
                }
                None => tracing::info!(session = %self.id, "input dropped: the agent is not running"),
            },
            Control::Keys(bytes) => {
                if let Some(pty) = pty {
                    pty.write(bytes);
                    self.drive(Input::UserInput, Some(pty));
                }
            }
            Control::Resize(size) => {
                self.screen.resize(size);
                self.command.size = size;
                if let Some(Err(e)) = pty.map(|p| p.resize(size)) {
                    tracing::warn!(session = %self.id, "resize failed: {e}");
                }
            }
            Control::Snapshot(reply) => {
                let _ = reply.send(self.screen.styled_snapshot());
            }
            Control::ResetBreaker(reply) => {
                let said = self.reset_breakers();
                self.refresh_blocker(pty);
                let _ = reply.send(said);
            }
            Control::Usage(sample) => {
                self.on_sample(sample.clone(), pty);
                if let Some(cost) = sample.cost_usd {
                    // A lower figure is a new count (after /clear or a restart), not money back.
                    let added = match self.cost {
                        Some(before) if cost >= before => cost - before,
                        _ => cost,
                    };
                    self.spent = Some(self.spent.unwrap_or(0.0) + added);
                    self.cost = Some(cost);
                }
            }
            Control::Configure(change, reply) => {
                self.configure(change, pty);
                let _ = reply.send(self.options());
            }
            Control::Stop { .. } => {}
        }
    }
}
