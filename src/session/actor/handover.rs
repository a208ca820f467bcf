//! A session whose work moves to the other agent keeps its channels: the next agent's actor takes
//! them on, so every handle (a `nightshift run`'s, the window's) follows without a seam.

use tokio::sync::{mpsc, watch};

use super::super::{Control, Status};
use crate::event::SessionState;
use crate::pty::Exit;

/// A session's control and status channels, carried from one agent's actor to the next.
pub(crate) struct Carried {
    pub(super) control_tx: mpsc::Sender<Control>,
    pub(super) controls: mpsc::Receiver<Control>,
    pub(super) status: watch::Sender<Status>,
    pub(super) status_rx: watch::Receiver<Status>,
}

/// What an actor whose agent's part ended hands on: what starts next, and the channels.
pub(crate) struct Handover {
    pub relayed: super::super::machine::Relayed,
    pub carried: Carried,
    pub output_tap: Option<mpsc::UnboundedSender<Vec<u8>>>,
}

impl Carried {
    /// The session ends here after all (the next agent could not start): every handle hears it.
    pub(crate) fn end(self, state: SessionState) {
        self.status.send_modify(|st| {
            st.exit = Some(Exit::Code(-1));
            st.state = state;
        });
    }
}
