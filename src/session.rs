//! One session: a task that owns a child's PTY and its screen model.
//!
//! Only the actor touches the child. Everyone else holds a cloneable [`SessionHandle`] that sends
//! [`Control`] messages; the actor `select!`s over the child's output, its exit, those controls and
//! the stop deadline, and reports what happened through the supervisor's emitter.

use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::{sleep_until, Instant};

use crate::agent::Adapter;
use crate::detect::{Activity, DetectConfig, Transition, Watcher};
use crate::event::{EventKind, SessionId, SessionState};
use crate::pty::{Exit, PtySize, Spawned};
use crate::screen::{Screen, Snapshot};
use crate::supervisor::Emitter;

/// How long a stopped child gets between SIGHUP and SIGKILL, unless the session says otherwise.
pub const DEFAULT_STOP_GRACE: Duration = Duration::from_secs(3);
/// How long output that was already written is still read after the child exits.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);
/// The gap between typed text and the Enter that submits it (see [`crate::pty::Pty::write_after`]).
const ENTER_DELAY: Duration = Duration::from_millis(120);

/// What the outside world can ask of a session.
#[derive(Debug)]
pub enum Control {
    /// Type text, then optionally press Enter.
    Send {
        text: String,
        enter: bool,
        source: String,
    },
    /// Raw bytes (keys, escape sequences) as the user's terminal produced them; not journalled.
    Keys(Vec<u8>),
    Resize(PtySize),
    /// SIGHUP to the process group, SIGKILL after the grace period.
    Stop {
        source: String,
    },
    Snapshot(oneshot::Sender<Snapshot>),
}

/// Where a session is, as its handle sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub state: SessionState,
    pub exit: Option<Exit>,
}

#[derive(Debug, thiserror::Error)]
#[error("session {0} has ended")]
pub struct SessionEnded(pub SessionId);

/// A cloneable way to reach a running session.
#[derive(Debug, Clone)]
pub struct SessionHandle {
    id: SessionId,
    control: mpsc::Sender<Control>,
    status: watch::Receiver<Status>,
}

impl SessionHandle {
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    pub fn status(&self) -> Status {
        self.status.borrow().clone()
    }

    async fn control(&self, c: Control) -> Result<(), SessionEnded> {
        self.control.send(c).await.map_err(|_| SessionEnded(self.id.clone()))
    }

    pub async fn send_text(&self, text: impl Into<String>, enter: bool, source: &str) -> Result<(), SessionEnded> {
        self.control(Control::Send { text: text.into(), enter, source: source.to_string() }).await
    }

    pub async fn send_keys(&self, bytes: Vec<u8>) -> Result<(), SessionEnded> {
        self.control(Control::Keys(bytes)).await
    }

    pub async fn resize(&self, size: PtySize) -> Result<(), SessionEnded> {
        self.control(Control::Resize(size)).await
    }

    pub async fn stop(&self, source: &str) -> Result<(), SessionEnded> {
        self.control(Control::Stop { source: source.to_string() }).await
    }

    pub async fn snapshot(&self) -> Result<Snapshot, SessionEnded> {
        let (tx, rx) = oneshot::channel();
        self.control(Control::Snapshot(tx)).await?;
        rx.await.map_err(|_| SessionEnded(self.id.clone()))
    }

    /// Waits until the session has ended and returns how its process exited.
    pub async fn wait(&self) -> Exit {
        let mut status = self.status.clone();
        loop {
            if let Some(exit) = status.borrow_and_update().exit.clone() {
                return exit;
            }
            if status.changed().await.is_err() {
                return status.borrow().exit.clone().unwrap_or(Exit::Code(-1));
            }
        }
    }
}

/// Everything an actor needs to run one session.
pub(crate) struct Actor {
    pub id: SessionId,
    pub spawned: Spawned,
    pub screen: Screen,
    pub emitter: Emitter,
    pub stop_grace: Duration,
    pub output_tap: Option<mpsc::UnboundedSender<Vec<u8>>>,
    pub adapter: Adapter,
    pub detect: DetectConfig,
}

impl Actor {
    /// Starts the actor task; returns the handle and the task.
    pub fn start(self) -> (SessionHandle, tokio::task::JoinHandle<()>) {
        let (control_tx, control_rx) = mpsc::channel(64);
        let (status_tx, status_rx) = watch::channel(Status { state: SessionState::Running, exit: None });
        let handle = SessionHandle { id: self.id.clone(), control: control_tx, status: status_rx };
        let task = tokio::spawn(self.run(control_rx, status_tx));
        (handle, task)
    }

    async fn run(self, mut controls: mpsc::Receiver<Control>, status: watch::Sender<Status>) {
        let Actor { id, spawned, mut screen, emitter, stop_grace, output_tap, adapter, detect } = self;
        let Spawned { pty, mut output, exit: mut exit_rx } = spawned;
        let mut watcher = Watcher::new(adapter, detect, Instant::now());
        let mut output_open = true;
        let mut exit: Option<Exit> = None;
        let mut kill_at: Option<Instant> = None;
        let mut drain_until: Option<Instant> = None;
        let mut stop_source: Option<String> = None;
        let mut controls_open = true;
        let report = |transition: Option<Transition>| {
            if let Some(t) = transition {
                let state = match t.to {
                    Activity::Working => SessionState::Working,
                    Activity::Idle => SessionState::Idle,
                    Activity::WaitingInput => SessionState::WaitingInput,
                };
                tracing::debug!(session = %id, %state, reason = %t.reason, "activity changed");
                let mut kind = EventKind::state(state, t.reason);
                if let EventKind::State { dialog, .. } = &mut kind {
                    *dialog = t.verdict.dialog;
                }
                emitter.emit(&id, kind);
                status.send_modify(|s| s.state = state);
            }
        };

        loop {
            if exit.is_some() && (!output_open || drain_until.is_some_and(|t| Instant::now() >= t)) {
                break;
            }
            let wakeup = if exit.is_none() { watcher.next_wakeup() } else { None };
            tokio::select! {
                chunk = output.recv(), if output_open => match chunk {
                    Some(bytes) => {
                        let now = Instant::now();
                        screen.feed(&bytes);
                        if let Some(tap) = &output_tap {
                            let _ = tap.send(bytes);
                        }
                        if exit.is_none() {
                            report(watcher.output(now));
                        }
                    }
                    None => output_open = false,
                },
                () = sleep_until(wakeup.unwrap_or_else(Instant::now)), if wakeup.is_some() => {
                    report(watcher.wake(Instant::now(), &screen));
                }
                result = &mut exit_rx, if exit.is_none() => {
                    exit = Some(result.unwrap_or(Exit::Code(-1)));
                    drain_until = Some(Instant::now() + DRAIN_AFTER_EXIT);
                    kill_at = None;
                }
                control = controls.recv(), if controls_open => match control {
                    None => controls_open = false,
                    Some(control) => {
                        let stop = handle_control(control, &pty, &mut screen, &emitter, &id);
                        if let Some(source) = stop.filter(|_| exit.is_none() && stop_source.is_none()) {
                            emitter.emit(&id, EventKind::StopRequested { source: source.clone() });
                            pty.signal_group(Signal::SIGHUP);
                            kill_at = Some(Instant::now() + stop_grace);
                            stop_source = Some(source);
                        }
                    }
                },
                () = sleep_until(kill_at.unwrap_or_else(Instant::now)), if kill_at.is_some() => {
                    tracing::info!(session = %id, "grace period over; killing the process group");
                    pty.signal_group(Signal::SIGKILL);
                    kill_at = None;
                }
                () = sleep_until(drain_until.unwrap_or_else(Instant::now)), if drain_until.is_some() && output_open => {
                    drain_until = Some(Instant::now());
                }
            }
        }

        let exit = exit.expect("the loop ends only after the exit");
        if stop_source.is_some() {
            // Whatever the group left behind after a requested stop goes with it.
            pty.signal_group(Signal::SIGKILL);
        }
        let reason = match &stop_source {
            Some(source) => format!("stopped on request ({source}); process {exit}"),
            None => format!("process {exit}"),
        };
        // A failure's last words, for the journal and the user: what the process left on screen.
        let last_screen = (stop_source.is_none() && exit != Exit::Code(0))
            .then(|| screen.snapshot().last_rows(LAST_SCREEN_ROWS).iter().map(|r| r.trim_end().to_string()).collect());
        emitter.emit(
            &id,
            EventKind::State {
                state: SessionState::Exited,
                reason,
                pid: Some(pty.pid()),
                exit_code: exit.code(),
                signal: exit.signal().map(str::to_string),
                error: None,
                dialog: None,
                last_screen,
            },
        );
        status.send_replace(Status { state: SessionState::Exited, exit: Some(exit) });
        drop(pty);
    }
}

/// Rows of the final screen kept with a failed exit.
const LAST_SCREEN_ROWS: usize = 6;

/// Carries out a control; a stop request is returned for the actor loop, which owns the stop timer.
fn handle_control(
    control: Control,
    pty: &crate::pty::Pty,
    screen: &mut Screen,
    emitter: &Emitter,
    id: &SessionId,
) -> Option<String> {
    match control {
        Control::Send { text, enter, source } => {
            emitter.emit(id, EventKind::Input { source, chars: text.chars().count(), enter });
            pty.write(text.into_bytes());
            if enter {
                pty.write_after(ENTER_DELAY, b"\r".to_vec());
            }
        }
        Control::Keys(bytes) => pty.write(bytes),
        Control::Resize(size) => {
            screen.resize(size);
            if let Err(e) = pty.resize(size) {
                tracing::warn!(session = %id, "resize failed: {e}");
            }
        }
        Control::Stop { source } => return Some(source),
        Control::Snapshot(reply) => {
            let _ = reply.send(screen.styled_snapshot());
        }
    }
    None
}
