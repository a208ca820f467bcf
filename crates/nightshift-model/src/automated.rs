//! What an input Nightshift types by itself says of itself. A resume, a respawn cycle's update and
//! kickstart, a handoff request, a restart's or an account switch's first prompt, a loop's probe:
//! none of them is the user's fresh instruction, and an agent that reads "continue" as one may
//! spend a new window on work the user told it to stop. So each begins with a marker that names it
//! as automated, says why it was sent, and restates the user's standing instructions for the night
//! (`--standing`, or a preset's `standing`), or that the instructions given still stand.
//!
//! The marker is one line, in brackets, before the text: a client's prompt takes it as typed, and
//! an agent reads it first. The client's own commands a cycle types (`/clear`, `/init`) and the
//! keys that answer a dialog are never marked: they are not read as words.

use serde::{Deserialize, Serialize};

/// The words every marker begins with, so a request log (or an agent) can tell them apart.
pub const MARKER: &str = "[Automated";

/// The longest standing instruction a marker restates; longer ones are cut at a word.
pub const STANDING_MAX_CHARS: usize = 600;

/// What Nightshift sent by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Automated {
    /// The continuation after a usage limit's reset.
    Resume,
    /// A respawn cycle's first step: write down where you got to.
    Update,
    /// A respawn cycle's last step: carry on.
    Kickstart,
    /// The request for a handoff before the context is reset or the session moves.
    HandoffRequest,
    /// A handoff given back to a fresh conversation.
    Handoff,
    /// The first prompt of an agent started again after it exited, or after Nightshift's own end.
    Restart,
    /// The first prompt under another account, after a move.
    Switch,
    /// A loop's one-word check that a usage window has reopened.
    Probe,
}

impl Automated {
    /// How the journal and the morning name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Resume => "resume",
            Self::Update => "update prompt",
            Self::Kickstart => "kickstart",
            Self::HandoffRequest => "handoff request",
            Self::Handoff => "handoff",
            Self::Restart => "restart prompt",
            Self::Switch => "account switch",
            Self::Probe => "probe",
        }
    }

    /// Why it was sent, as the marker says it.
    fn why(self) -> &'static str {
        match self {
            Self::Resume => "resume by Nightshift after a usage limit",
            Self::Update => "progress check by Nightshift before a context reset",
            Self::Kickstart => "kickstart by Nightshift after a context reset",
            Self::HandoffRequest => "handoff request by Nightshift",
            Self::Handoff => "handoff given back by Nightshift",
            Self::Restart => "restart by Nightshift after the agent stopped",
            Self::Switch => "move by Nightshift to another account",
            Self::Probe => "check by Nightshift that the usage window has reopened",
        }
    }
}

/// The user's standing instructions, trimmed to one line of at most [`STANDING_MAX_CHARS`]
/// (`None` when empty).
pub fn standing(text: &str) -> Option<String> {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.is_empty() {
        return None;
    }
    if one_line.chars().count() <= STANDING_MAX_CHARS {
        return Some(one_line);
    }
    let cut: String = one_line.chars().take(STANDING_MAX_CHARS).collect();
    let at_word = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
    Some(format!("{at_word}…"))
}

/// The marker line alone.
pub fn marker(what: Automated, instructions: Option<&str>) -> String {
    let still = match instructions.and_then(standing) {
        Some(s) => format!("the user's instructions for tonight still stand: {s}"),
        None => "the instructions you were given still stand".to_string(),
    };
    format!("{MARKER} {}, not a new instruction from the user; {still}]", what.why())
}

/// `text` as Nightshift sends it: the marker, then the text. Text already marked is left as it is.
pub fn mark(what: Automated, text: &str, instructions: Option<&str>) -> String {
    if text.starts_with(MARKER) {
        return text.to_string();
    }
    format!("{} {text}", marker(what, instructions))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marked_input_names_itself_and_restates_what_stands() {
        let resume = mark(Automated::Resume, "continue", Some("Only the parser; never push."));
        assert_eq!(
            resume,
            "[Automated resume by Nightshift after a usage limit, not a new instruction from the user; the \
             user's instructions for tonight still stand: Only the parser; never push.] continue"
        );
        let bare = mark(Automated::Kickstart, "Carry on.", None);
        assert!(bare.starts_with(MARKER), "{bare}");
        assert!(bare.contains("the instructions you were given still stand"), "{bare}");
        assert!(bare.ends_with("] Carry on."), "{bare}");
        // An empty standing instruction is none.
        assert_eq!(mark(Automated::Kickstart, "Carry on.", Some("  ")), bare);
    }

    #[test]
    fn a_marker_is_put_on_once() {
        let once = mark(Automated::Restart, "Carry on.", None);
        assert_eq!(mark(Automated::Restart, &once, None), once);
        assert_eq!(mark(Automated::Switch, &once, Some("x")), once);
    }

    #[test]
    fn standing_instructions_are_one_line_and_bounded() {
        assert_eq!(standing("  Only src/.\n\nNever push.  ").as_deref(), Some("Only src/. Never push."));
        assert_eq!(standing(" \n "), None);
        let long = "word ".repeat(400);
        let cut = standing(&long).unwrap();
        assert!(cut.chars().count() <= STANDING_MAX_CHARS + 1, "{}", cut.len());
        assert!(cut.ends_with("word…"), "{cut}");
        // The marker is one line whatever was given.
        assert!(!marker(Automated::Resume, Some("Only src/.\nNever push.")).contains('\n'));
    }
}
