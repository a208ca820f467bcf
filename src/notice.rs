//! What is told to the user when (the model's, re-exported here), and whether a notice held for
//! its settle time is still due, by the journal.

pub use nightshift_model::notice::*;

use crate::event::{EventKind, SessionState};
use crate::store::{Store, StoreError};

/// Whether a notice of `kind` for `event` of `session`, held for [`settle_for`](nightshift_model::notice::settle_for), is still to be
/// told: a finish only when nothing started the agent again (the session's last state is still
/// this one: what follows an exit, a salvage or a recording, is not a new state), a question only
/// while nobody answered it and no other dialog took its place (the last state is still this
/// one's wait, on this very dialog).
pub fn still_due(store: &Store, kind: Kind, session: &str, event: &EventKind) -> Result<bool, StoreError> {
    let last = || -> Result<Option<EventKind>, StoreError> {
        Ok(store
            .recent_events(session, 50)?
            .iter()
            .rev()
            .find(|e| e.event == "state")
            .and_then(|e| serde_json::from_str::<crate::event::Event>(&e.body).ok())
            .map(|e| e.kind))
    };
    let print = |kind: &EventKind| match kind {
        EventKind::State { state: SessionState::WaitingInput, dialog, .. } => Some(dialog.as_ref().map(|d| d.print())),
        _ => None,
    };
    Ok(match kind {
        Kind::Finished => last()?.is_some_and(|last| &last == event),
        Kind::Question => {
            store.session(session)?.is_some_and(|r| r.state == SessionState::WaitingInput)
                && last()?.is_some_and(|last| print(&last) == print(event))
        }
        _ => true,
    })
}
