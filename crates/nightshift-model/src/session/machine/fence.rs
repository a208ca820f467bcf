//! The network fence as the session sees it: the hosts it lets through (set at the start), and
//! what it refused, host by host, each refusal journalled with the command that tried it.

use super::*;
use crate::session::FenceView;

/// The fence of a session: what its options show, and whether the command running now was refused
/// a connection (its `sandbox_command` then says it was blocked, whatever its exit code hid).
#[derive(Debug, Clone)]
pub(super) struct Fenced {
    view: FenceView,
    refused_now: bool,
}

impl Fenced {
    pub(super) fn new(view: FenceView) -> Self {
        Self { view, refused_now: false }
    }
}

impl Machine {
    /// The fence refused `host:port` to `command`.
    pub(super) fn net_refused(&mut self, host: String, port: u16, command: Option<String>, fx: &mut Vec<Effect>) {
        if let Some(Fenced { view, refused_now }) = &mut self.fence {
            *refused_now |= command.is_some();
            match view.refused.iter_mut().find(|(h, _)| *h == host) {
                Some((_, n)) => *n += 1,
                None => view.refused.push((host.clone(), 1)),
            }
        }
        let command = command.map(|c| c.chars().take(300).collect());
        self.emit(EventKind::NetRefused { host, port, command }, fx);
    }

    /// `host` is let through from now on.
    pub(super) fn host_allowed(&mut self, host: String, by: String, fx: &mut Vec<Effect>) {
        if let Some(Fenced { view, .. }) = &mut self.fence {
            view.refused.retain(|(h, _)| *h != host);
            if !view.hosts.iter().any(|h| h.host == host) {
                view.hosts.push(crate::event::FencedHost { host: host.clone(), why: format!("allowed by {by}") });
            }
        }
        self.emit(EventKind::NetAllowed { host, by }, fx);
    }

    pub(super) fn fence_view(&self) -> Option<FenceView> {
        self.fence.as_ref().map(|f| f.view.clone())
    }

    /// Whether the fence refused a connection of the command that just ended; the next starts anew.
    pub(super) fn command_refused(&mut self) -> bool {
        self.fence.as_mut().is_some_and(|f| std::mem::take(&mut f.refused_now))
    }
}
