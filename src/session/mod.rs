//! One session: a task that owns a child's PTY and its screen model.
//!
//! Only the actor touches the child. Everyone else holds a cloneable [`SessionHandle`] that sends
//! [`Control`] messages; the actor `select!`s over the child's output, its exit, those controls and
//! the stop deadline, and reports what happened through the supervisor's emitter.

mod actor;
mod guard;
pub mod login;
pub(crate) use actor::salvage;
pub use nightshift_model::session::{
    machine, Change, FenceView, Options, Paused, RespawnArm, Switch, SwitchView, DEFAULT_STOP_GRACE,
};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, watch};

use crate::event::{SessionId, SessionState};
use crate::pty::{Exit, PtySize};
use crate::screen::Snapshot;

pub(crate) use actor::{Actor, Carried, Handover};

/// Environment variable that tells a child (a session's client, a loop's iteration, their hooks)
/// which Nightshift session it runs in.
pub const SESSION_ENV: &str = "NIGHTSHIFT_SESSION";

/// What the outside world can ask of a session.
#[derive(Debug)]
pub enum Control {
    /// Type text, then optionally press Enter.
    Send {
        text: String,
        enter: bool,
        by: crate::event::Answerer,
    },
    /// Raw bytes (keys, escape sequences) as the user's terminal produced them; not journalled.
    Keys(Vec<u8>),
    Resize(PtySize),
    /// SIGHUP to the process group, SIGKILL after the grace period.
    Stop {
        source: String,
        kind: crate::event::StopKind,
    },
    Snapshot(oneshot::Sender<Snapshot>),
    /// Answer the dialog fingerprinted `dialog` (see [`crate::agent::Dialog::print`]) with `reply`,
    /// as `by`, if that dialog is still on the screen, claiming the phone token's `nonce` in the
    /// journal once it is; the reply says whether it was typed.
    Answer {
        dialog: String,
        reply: crate::agent::Reply,
        by: crate::event::Answerer,
        nonce: Option<String>,
        respond: oneshot::Sender<Result<(), crate::phone::Refusal>>,
    },
    /// Close the session's breakers; an agent the crash-loop breaker stopped is started again.
    ResetBreaker(oneshot::Sender<String>),
    /// The agent's latest usage (its cost feeds the respawn cycles' accounting).
    Usage(crate::usage::Sample),
    /// The machine woke from a suspend that began then.
    Woke(chrono::DateTime<chrono::Utc>),
    /// Change what the session does by itself; the reply is its options after the change.
    Configure(Box<Change>, oneshot::Sender<Options>),
    /// A hook of the session's client; the reply is what the hook answers it.
    Hook(crate::hooks::Hook, oneshot::Sender<crate::hooks::Answer>),
    /// Let `host` (a name, `host:port`, `*.domain`) through the network fence from now on, as `by`
    /// asked; the reply is the session's options after it (an error when it is no host).
    AllowHost {
        host: String,
        by: String,
        respond: oneshot::Sender<Result<Options, String>>,
    },
    /// A viewer attaches: the reply is the size and the screen as escape codes that draw it, and the
    /// output from then on (closed when the session ends, when the viewer falls behind, or when the
    /// terminal is resized: it attaches again for a fresh screen).
    Attach(oneshot::Sender<Attached>),
    /// Another Nightshift process took the session over while this one did not renew its lease
    /// (it was stopped, or starved): end here, journalling nothing more and sending the agent no
    /// signal; the process that took it over runs it now.
    StandDown,
}

/// What an attached viewer gets: the terminal's size and the screen drawn at it, then the live
/// output (closed when the session ends, falls behind, or is resized: a fresh screen follows).
#[derive(Debug)]
pub struct Attached {
    pub size: PtySize,
    pub screen: Vec<u8>,
    pub output: Backlog,
}

/// Bytes of output a viewer may fall behind by before it is given a fresh screen instead (what a
/// slow viewer costs the session at most).
pub const VIEWER_BACKLOG: usize = 1 << 20;

/// A viewer's output not yet taken, at most [`VIEWER_BACKLOG`] bytes.
#[derive(Debug)]
pub struct Backlog {
    rx: mpsc::UnboundedReceiver<Vec<u8>>,
    queued: Arc<AtomicUsize>,
}

/// The session's end of a viewer's [`Backlog`].
#[derive(Debug)]
pub(crate) struct ViewerQueue {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    queued: Arc<AtomicUsize>,
}

impl Backlog {
    pub(crate) fn new() -> (ViewerQueue, Self) {
        let (tx, rx) = mpsc::unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        (ViewerQueue { tx, queued: Arc::clone(&queued) }, Self { rx, queued })
    }

    /// The next chunk; `None` once the viewer has been let go (behind, resized, or the end).
    pub async fn recv(&mut self) -> Option<Vec<u8>> {
        let chunk = self.rx.recv().await?;
        self.queued.fetch_sub(chunk.len(), Ordering::Relaxed);
        Some(chunk)
    }
}

impl ViewerQueue {
    /// Queues `bytes` for the viewer; false when it is too far behind (or gone) to keep.
    pub(crate) fn offer(&self, bytes: &[u8]) -> bool {
        if self.queued.load(Ordering::Relaxed) + bytes.len() > VIEWER_BACKLOG {
            return false;
        }
        self.queued.fetch_add(bytes.len(), Ordering::Relaxed);
        self.tx.send(bytes.to_vec()).is_ok()
    }
}

/// Where a session is, as its handle sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    pub state: SessionState,
    pub exit: Option<Exit>,
    pub options: Options,
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
    kind: crate::store::SessionKind,
}

impl SessionHandle {
    pub(crate) fn new(
        id: SessionId,
        control: mpsc::Sender<Control>,
        status: watch::Receiver<Status>,
        kind: crate::store::SessionKind,
    ) -> Self {
        Self { id, control, status, kind }
    }

    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// A terminal session, or a loop of headless iterations (which takes no typing).
    pub fn kind(&self) -> crate::store::SessionKind {
        self.kind
    }

    pub fn status(&self) -> Status {
        self.status.borrow().clone()
    }

    async fn control(&self, c: Control) -> Result<(), SessionEnded> {
        self.control.send(c).await.map_err(|_| SessionEnded(self.id.clone()))
    }

    /// Types `text` (and Enter) into the agent, as `by` typed it.
    pub async fn send_text(
        &self,
        text: impl Into<String>,
        enter: bool,
        by: crate::event::Answerer,
    ) -> Result<(), SessionEnded> {
        self.control(Control::Send { text: text.into(), enter, by }).await
    }

    pub async fn send_keys(&self, bytes: Vec<u8>) -> Result<(), SessionEnded> {
        self.control(Control::Keys(bytes)).await
    }

    /// Ends the session here quietly: another process runs it now (see [`Control::StandDown`]).
    pub fn stand_down(&self) {
        let _ = self.control.try_send(Control::StandDown);
    }

    pub async fn resize(&self, size: PtySize) -> Result<(), SessionEnded> {
        self.control(Control::Resize(size)).await
    }

    /// The user stops the session: its agent, and any resume it was waiting for.
    pub async fn stop(&self, source: &str) -> Result<(), SessionEnded> {
        self.control(Control::Stop { source: source.to_string(), kind: crate::event::StopKind::User }).await
    }

    /// Stops the session because Nightshift itself is ending (Quit, a logout or reboot): its agent
    /// stops, and a resume it was waiting for is kept for the next Nightshift process.
    pub async fn shut_down(&self, source: &str) -> Result<(), SessionEnded> {
        self.control(Control::Stop { source: source.to_string(), kind: crate::event::StopKind::Shutdown }).await
    }

    /// Answers the dialog fingerprinted `dialog` with `reply`, as `by`, if it is the one on the
    /// screen now (checked, `nonce` claimed, and typed in one step of the session, so nothing
    /// comes between).
    pub async fn answer(
        &self,
        dialog: &str,
        reply: crate::agent::Reply,
        by: crate::event::Answerer,
        nonce: Option<&str>,
    ) -> Result<(), crate::phone::Refusal> {
        let (respond, rx) = oneshot::channel();
        let nonce = nonce.map(str::to_string);
        let control = Control::Answer { dialog: dialog.to_string(), reply, by, nonce, respond };
        self.control(control).await.map_err(|_| crate::phone::Refusal::SessionEnded)?;
        rx.await.map_err(|_| crate::phone::Refusal::SessionEnded)?
    }

    /// Resets the session's breakers; says what was reset.
    pub async fn reset_breaker(&self) -> Result<String, SessionEnded> {
        let (tx, rx) = oneshot::channel();
        self.control(Control::ResetBreaker(tx)).await?;
        rx.await.map_err(|_| SessionEnded(self.id.clone()))
    }

    /// Hands the session a hook of its client; returns what the hook answers.
    pub async fn hook(&self, hook: crate::hooks::Hook) -> Result<crate::hooks::Answer, SessionEnded> {
        let (tx, rx) = oneshot::channel();
        self.control(Control::Hook(hook, tx)).await?;
        rx.await.map_err(|_| SessionEnded(self.id.clone()))
    }

    /// Passes a usage sample to the session without waiting.
    pub fn usage(&self, sample: crate::usage::Sample) {
        let _ = self.control.try_send(Control::Usage(sample));
    }

    /// Tells the session the machine woke from a suspend that began at `from`, without waiting.
    pub fn woke(&self, from: chrono::DateTime<chrono::Utc>) {
        let _ = self.control.try_send(Control::Woke(from));
    }

    /// Changes the session's options; returns them as they are after the change.
    pub async fn configure(&self, change: Change) -> Result<Options, SessionEnded> {
        let (tx, rx) = oneshot::channel();
        self.control(Control::Configure(Box::new(change), tx)).await?;
        rx.await.map_err(|_| SessionEnded(self.id.clone()))
    }

    /// Lets `host` through the session's network fence from now on (`by`: who asked).
    pub async fn allow_host(&self, host: &str, by: &str) -> Result<Result<Options, String>, SessionEnded> {
        let (respond, rx) = oneshot::channel();
        self.control(Control::AllowHost { host: host.to_string(), by: by.to_string(), respond }).await?;
        rx.await.map_err(|_| SessionEnded(self.id.clone()))
    }

    /// Attaches a viewer: the screen now, then the output as it comes.
    pub async fn attach(&self) -> Result<Attached, SessionEnded> {
        let (tx, rx) = oneshot::channel();
        self.control(Control::Attach(tx)).await?;
        rx.await.map_err(|_| SessionEnded(self.id.clone()))
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
