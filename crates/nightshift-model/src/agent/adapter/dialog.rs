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
    /// Its rows as drawn, from its top (the rule a client draws over it, where it draws one) to the
    /// last row of the screen, each normalised ([`crate::phone::normal_row`]): what a button is
    /// bound to, and what a push says it answers. Empty for a dialog the client's hook alone told
    /// of (and in journals from before they were kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<String>,
    /// What the client's hook said it asks about: the tool and its input (boxed: a journal event
    /// carries a dialog, and most dialogs have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Box<Subject>>,
    /// Which dialog of its session this is, from 1, counted by the session as each appears (0: not
    /// counted, a dialog read off a screen and not yet shown to anyone).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub showing: u32,
    /// When the session first saw it (to the millisecond).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::clock::opt_ts")]
    pub shown_at: Option<chrono::DateTime<chrono::Utc>>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// How many characters of a tool's input a dialog keeps in words ([`Subject::input`]); its digest
/// covers the whole.
const SUBJECT_CHARS: usize = 1000;

/// What the client's hook (`PreToolUse`) said a permission prompt is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    /// The tool (`Bash`, `WebFetch`, `mcp__github__merge_pull_request`).
    pub tool: String,
    /// Its input in words: the command, the file's path or the URL, else the whole input as JSON,
    /// cut to a thousand characters.
    pub input: String,
    /// 16 hex digits of the whole input, as the hook gave it.
    pub digest: String,
}

impl Subject {
    /// The subject of a call of `tool` with `input` (the hook's `tool_input`).
    pub fn of(tool: &str, input: &serde_json::Value) -> Self {
        let named = ["command", "file_path", "url", "path", "notebook_path", "pattern"]
            .iter()
            .find_map(|k| input[*k].as_str().map(str::to_string));
        let whole = input.to_string();
        let words = named.unwrap_or_else(|| if input.is_null() { String::new() } else { whole.clone() });
        Self {
            tool: tool.to_string(),
            input: words.chars().take(SUBJECT_CHARS).collect(),
            digest: crate::phone::fingerprint("input", Some(&whole)),
        }
    }
}

impl std::fmt::Display for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.input.lines().next() {
            Some(first) if !first.is_empty() => write!(f, "{}: {first}", self.tool),
            _ => f.write_str(&self.tool),
        }
    }
}

impl Dialog {
    pub fn new(kind: DialogKind, text: Option<String>) -> Self {
        Self { kind, text, options: Vec::new(), rows: Vec::new(), subject: None, showing: 0, shown_at: None }
    }

    /// The same dialog as `other`, shown or not: the same kind, rows and subject (the question
    /// stands for the rows when neither has any; it is not compared otherwise, since the client's
    /// later word on a dialog on screen rephrases it).
    pub fn same(&self, other: &Dialog) -> bool {
        self.kind == other.kind
            && self.rows == other.rows
            && self.subject == other.subject
            && (!self.rows.is_empty() || self.text == other.text)
    }

    /// What a button's token for this dialog carries: its kind, rows, subject and showing, in 16
    /// hex digits ([`crate::phone::dialog_fingerprint`]).
    pub fn print(&self) -> String {
        let subject = self.subject.as_ref().map(|s| format!("{}\0{}\0{}", s.tool, s.input, s.digest));
        crate::phone::dialog_fingerprint(&crate::phone::Shown {
            kind: self.kind.as_str(),
            rows: &self.rows,
            text: self.text.as_deref(),
            subject: subject.as_deref(),
            showing: (self.showing, self.shown_at.map_or(0, |t| t.timestamp_millis())),
        })
    }

    /// What it asks about, in words for a person far away: a permission prompt's rows less its
    /// options, rules, hints and footer (what it would run, read, write or fetch, as the client
    /// drew it), or the hook's word on it when no row was read; otherwise its question.
    pub fn about(&self) -> Option<String> {
        if self.kind != DialogKind::Permission {
            return self.text.clone();
        }
        if self.rows.is_empty() {
            return self.subject.as_ref().map(ToString::to_string).or_else(|| self.text.clone());
        }
        let noise = |r: &&String| {
            let lower = r.to_lowercase();
            r.split_once(". ").is_some_and(|(n, _)| n.parse::<u8>().is_ok())
                || lower.starts_with("tip:")
                || lower.contains("esc to cancel")
                || lower.contains("enter to confirm")
                || lower.contains("enter to select")
        };
        let rows: Vec<&str> = self.rows.iter().filter(|r| !noise(r)).map(String::as_str).collect();
        Some(rows.join("\n"))
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
                let mut dialog = Dialog::new(signal.kind, text.map(str::to_string));
                dialog.options = options;
                dialog.rows = self.region(rows, from, at, end);
                return Some(dialog);
            }
        }
        None
    }

    /// A dialog's rows, normalised: from below the topmost rule between `from` and its match `at`
    /// (a client that rules its dialogs off draws one over each; what is above it is transcript,
    /// which may blink), else from `from`, to `end`; less a working line or footer if the client
    /// draws one under its dialog (its timer moves while nothing else does).
    fn region<R: Rows + ?Sized>(&self, rows: &R, from: usize, at: usize, end: usize) -> Vec<String> {
        let ruled = |i: &usize| self.rule.as_ref().is_some_and(|re| re.is_match(rows.row(*i).trim_end()));
        let top = (from..=at.min(end.saturating_sub(1))).find(ruled).map_or(from, |i| i + 1);
        let moving = |row: &str| {
            self.spinner.iter().any(|re| re.is_match(row.trim_start()))
                || self.footer.as_ref().is_some_and(|re| re.is_match(row))
        };
        (top..end).map(|i| rows.row(i)).filter(|row| !moving(row)).filter_map(crate::phone::normal_row).collect()
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
