//! The dialogs in a session's events: each followed from the moment the agent asked until it is
//! over (answered, and by whom; gone with nothing typed; left when the agent exited), counted, and
//! told as a line.

use super::*;
use crate::agent::DialogKind;
use crate::event::Answerer;

/// A dialog the agent showed, until it is answered or the session moves on.
pub(super) struct Asked {
    pub(super) kind: Option<DialogKind>,
    pub(super) text: Option<String>,
    pub(super) at: DateTime<Utc>,
    /// When the session left `waiting_input` (the answer's event may come just after).
    pub(super) left: Option<(DateTime<Utc>, bool)>,
}

/// What the agent asked, for people, with and without the question itself.
fn asked_what(kind: Option<DialogKind>, text: Option<&str>) -> String {
    match (kind, text) {
        (Some(DialogKind::Question) | None, Some(t)) => format!("asked \"{t}\""),
        (Some(DialogKind::Question), None) => "asked a question".into(),
        (None, None) => "waited for the user".into(),
        (Some(DialogKind::Permission), Some(t)) => format!("asked permission: \"{t}\""),
        (Some(DialogKind::Permission), None) => "asked permission for a tool call".into(),
        (Some(DialogKind::Trust), _) => "asked whether to trust the folder".into(),
        (Some(DialogKind::Confirmation), Some(t)) => format!("asked to confirm \"{t}\""),
        (Some(DialogKind::Confirmation), None) => "asked for a confirmation".into(),
        (Some(DialogKind::Menu), Some(t)) => format!("showed a menu: \"{t}\""),
        (Some(DialogKind::Menu), None) => "showed a menu".into(),
    }
}

/// A dialog over: answered (by whom, when known) at `at`, or ended by the agent's exit.
pub(super) fn settle(
    a: Asked,
    by: Option<Answerer>,
    at: DateTime<Utc>,
    exited: bool,
    from: DateTime<Utc>,
    c: &mut Counts,
    lines: &mut Lines,
) {
    if at < from {
        return;
    }
    let what = asked_what(a.kind, a.text.as_deref());
    if exited || by == Some(Answerer::Nobody) {
        c.dialogs_unanswered += 1;
        let (key, once) = if exited {
            let key = format!("{what}, unanswered when the agent exited");
            (key, format!("{what} at {}, unanswered when the agent exited at {}", hhmm(a.at), hhmm(at)))
        } else {
            let key = format!("{what}, gone with nothing typed");
            (key, format!("{what} at {}, gone at {} with nothing typed", hhmm(a.at), hhmm(at)))
        };
        lines.note(HappeningKind::Unanswered, key, once, a.at);
        return;
    }
    match a.kind {
        Some(DialogKind::Question) => c.questions_answered += 1,
        Some(DialogKind::Permission) => c.permissions_answered += 1,
        _ => {}
    }
    if let Some(by) = by {
        c.answered_by.add(by);
    }
    // Nightshift's routine answers are counted, not told.
    let routine =
        by == Some(Answerer::Nightshift) && !matches!(a.kind, Some(DialogKind::Question | DialogKind::Permission));
    if !routine {
        let who = by.map(|b| format!(" {}", b.as_str())).unwrap_or_default();
        let key = format!("{what}, answered{who}");
        let once = format!("{what} at {}, answered{who} at {}", hhmm(a.at), hhmm(at));
        lines.note(HappeningKind::Answered, key, once, a.at);
    }
}

pub(super) fn count_ask(kind: Option<DialogKind>, c: &mut Counts) {
    match kind {
        Some(DialogKind::Question) => c.questions += 1,
        Some(DialogKind::Permission) => c.permissions += 1,
        _ => {}
    }
}
