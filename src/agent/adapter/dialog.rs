//! What a dialog is, and how an adapter reads one off the screen: its kind, its question, the
//! options a button can give.

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::{Adapter, Composer, DIALOG_ROWS};
use crate::screen::Rows;

/// What kind of dialog an agent shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DialogKind {
    /// A question the agent asks the user (never answered automatically).
    Question,
    /// Permission for a tool call.
    Permission,
    /// Whether to trust the folder.
    Trust,
    /// A routine confirmation.
    Confirmation,
    /// A menu of choices (the usage-limit menu among them).
    Menu,
}

impl DialogKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Question => "question",
            Self::Permission => "permission",
            Self::Trust => "trust",
            Self::Confirmation => "confirmation",
            Self::Menu => "menu",
        }
    }
}

impl std::fmt::Display for DialogKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A dialog the agent is blocked on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dialog {
    pub kind: DialogKind,
    /// The question it asks, when one can be read (the last row ending in `?`).
    pub text: Option<String>,
    /// A question's options that a button can give, by their number on the screen (those that
    /// want typed text are left out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<(u8, String)>,
}

impl Dialog {
    pub fn new(kind: DialogKind, text: Option<String>) -> Self {
        Self { kind, text, options: Vec::new() }
    }
}

/// How a dialog of one kind is recognised ([`DialogFile`], compiled).
#[derive(Debug, Clone)]
pub(super) struct DialogSignal {
    pub(super) kind: DialogKind,
    pub(super) pattern: Regex,
    pub(super) question: Option<Regex>,
}

impl Adapter {
    pub(super) fn find_dialog<R: Rows + ?Sized>(&self, rows: &R, composer: Option<Composer>) -> Option<Dialog> {
        // A client draws its dialogs in place of the composer: with a ruled composer on screen, text
        // above it is transcript, whatever it says.
        // Otherwise the rows at the bottom of what is drawn: a dialog drawn from the top of a tall
        // terminal (a first start's trust question) leaves blank rows below it, which count for
        // nothing.
        let end = (0..rows.row_count()).rev().find(|&i| !rows.row(i).trim().is_empty()).map_or(0, |i| i + 1);
        let from = match (composer, &self.rule) {
            (Some(c), Some(_)) => c.top + 1,
            _ => end.saturating_sub(DIALOG_ROWS),
        };
        let from = from.min(end);
        for signal in &self.dialogs {
            if let Some(at) = (from..end).find(|&i| signal.pattern.is_match(rows.row(i))) {
                let text = match &signal.question {
                    Some(question) => (from..end).map(|i| rows.row(i).trim()).find(|r| question.is_match(r)),
                    None => (from..=at).rev().map(|i| rows.row(i).trim()).find(|r| r.ends_with('?') && r.len() > 3),
                };
                let options = match signal.kind {
                    DialogKind::Question => self.options(rows, from, end),
                    _ => Vec::new(),
                };
                return Some(Dialog { kind: signal.kind, text: text.map(str::to_string), options });
            }
        }
        None
    }

    /// A question's options between rows `from` and `to`: each row the `answer.option` pattern
    /// reads (its number, its label), less those that want typed text.
    fn options<R: Rows + ?Sized>(&self, rows: &R, from: usize, to: usize) -> Vec<(u8, String)> {
        let Some(re) = &self.answer.option else { return Vec::new() };
        let mut options: Vec<(u8, String)> = Vec::new();
        for i in from..to {
            let Some(c) = re.captures(rows.row(i)) else { continue };
            let (Some(n), Some(label)) = (c.get(1), c.get(2)) else { continue };
            let Ok(n) = n.as_str().parse::<u8>() else { continue };
            let label = label.as_str().trim();
            if self.answer.typed.as_ref().is_some_and(|t| t.is_match(label)) || options.iter().any(|(m, _)| *m == n) {
                continue;
            }
            options.push((n, label.to_string()));
        }
        options
    }
}
