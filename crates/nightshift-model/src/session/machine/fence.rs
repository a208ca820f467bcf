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

    /// The fence refused `host:port` to `command`: counted, and the event that says so.
    pub(super) fn refused(fence: &mut Option<Self>, host: String, port: u16, command: Option<String>) -> EventKind {
        if let Some(Fenced { view, refused_now }) = fence {
            *refused_now |= command.is_some();
            match view.refused.iter_mut().find(|(h, _)| *h == host) {
                Some((_, n)) => *n += 1,
                None => view.refused.push((host.clone(), 1)),
            }
        }
        let command = command.map(|c| c.chars().take(300).collect());
        EventKind::NetRefused { host, port, command }
    }

    /// `host` is let through from now on: the event that says so.
    pub(super) fn allowed(fence: &mut Option<Self>, host: String, by: String) -> EventKind {
        if let Some(Fenced { view, .. }) = fence {
            view.refused.retain(|(h, _)| *h != host);
            if !view.hosts.iter().any(|h| h.host == host) {
                view.hosts.push(crate::event::FencedHost { host: host.clone(), why: format!("allowed by {by}") });
            }
        }
        EventKind::NetAllowed { host, by }
    }

    /// What the options show of it.
    pub(super) fn view(fence: &Option<Self>) -> Option<FenceView> {
        fence.as_ref().map(|f| f.view.clone())
    }

    /// Whether the fence refused a connection of the command that just ended; the next starts anew.
    pub(super) fn take_refused(fence: &mut Option<Self>) -> bool {
        fence.as_mut().is_some_and(|f| std::mem::take(&mut f.refused_now))
    }
}
