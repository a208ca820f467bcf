//! What a session needs of its user now, typed: what it is about says which action answers it (the
//! window draws a row with that action; the CLI prints the text), and a need the user dismissed
//! stays dismissed, in the window and in `nightshift digest` alike, until it changes.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::store::{Store, StoreError};

/// Where the dismissed needs are kept (the journal's meta table).
const DISMISSED_KEY: &str = "dismissed_needs";

/// One thing a session needs of its user now.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Need {
    #[serde(flatten)]
    pub about: About,
    /// For people: what it is, and where to look from a terminal.
    pub text: String,
    /// What names it among the session's, for dismissing it (see [`Need::key_of`]).
    #[serde(default)]
    pub key: String,
    /// The user dismissed it (only in a digest stored before they did: a fresh one leaves it out).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dismissed: bool,
}

/// What a need is about, and so what answers it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum About {
    /// The agent waits on a question or a prompt: answer it at its terminal.
    Question,
    /// A breaker is open: reset it, once what tripped it is understood.
    Breaker,
    /// The resume after a usage limit failed: look at the session.
    ResumeFailed,
    /// No Nightshift runs it any more: resume its conversation.
    Lost,
    /// Nightshift ended while it waited for a limit's reset: resume it now, or at the next start.
    Kept,
    /// It failed to start.
    Failed,
    /// Work salvage kept: show it, or restore it onto a branch.
    Salvage { repo: String, reference: String },
    /// Commits that reached no remote, or an upstream that moved: look at the branches.
    Delivery { repo: String },
    /// It exited with an error: resume its conversation, when its client named one (`resume`).
    Crashed { resume: bool },
}

impl Need {
    pub fn new(about: About, text: impl Into<String>) -> Self {
        let text = text.into();
        let key = Self::key_of(&about, &text);
        Self { about, text, key, dismissed: false }
    }

    /// What names a need among the session's, for dismissing it: one that changes (another
    /// question, more commits, a new snapshot) is a new one.
    pub fn key_of(about: &About, text: &str) -> String {
        match about {
            About::Salvage { reference, .. } => format!("salvage {reference}"),
            About::Question | About::Breaker | About::Delivery { .. } | About::Crashed { .. } => {
                format!("{} {text}", Self::kind_of(about))
            }
            About::ResumeFailed | About::Lost | About::Kept | About::Failed => Self::kind_of(about).to_string(),
        }
    }

    /// The kind's wire name.
    pub fn kind_of(about: &About) -> &'static str {
        match about {
            About::Question => "question",
            About::Breaker => "breaker",
            About::ResumeFailed => "resume_failed",
            About::Lost => "lost",
            About::Kept => "kept",
            About::Failed => "failed",
            About::Salvage { .. } => "salvage",
            About::Delivery { .. } => "delivery",
            About::Crashed { .. } => "crashed",
        }
    }
}

/// The needs the user dismissed, by session and key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dismissed(BTreeSet<(String, String)>);

impl Dismissed {
    pub fn load(store: &Store) -> Result<Self, StoreError> {
        let pairs: Vec<(String, String)> =
            store.meta(DISMISSED_KEY)?.and_then(|text| serde_json::from_str(&text).ok()).unwrap_or_default();
        Ok(Self(pairs.into_iter().collect()))
    }

    pub fn contains(&self, session: &str, need: &Need) -> bool {
        self.0.contains(&(session.to_string(), Need::key_of(&need.about, &need.text)))
    }

    /// Dismisses the need `key` of `session` for good.
    pub fn add(store: &mut Store, session: &str, key: &str) -> Result<(), StoreError> {
        let mut dismissed = Self::load(store)?;
        dismissed.0.insert((session.to_string(), key.to_string()));
        let pairs: Vec<&(String, String)> = dismissed.0.iter().collect();
        store.set_meta(DISMISSED_KEY, &serde_json::to_string(&pairs).unwrap_or_else(|_| "[]".into()))
    }
}

/// Marks the needs of `digest` the user dismissed since it was made (a stored morning summary).
pub fn mark_dismissed(digest: &mut super::Digest, dismissed: &Dismissed) {
    for s in &mut digest.sessions {
        for need in &mut s.needs {
            need.dismissed = dismissed.contains(&s.id, need);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_need_that_changes_is_a_new_one_and_a_dismissal_is_kept_per_session() {
        let salvage = |r: &str| About::Salvage { repo: "/r".into(), reference: r.into() };
        let first = Need::new(salvage("refs/nightshift/salvage/s1/1"), "work kept by salvage: 1 file");
        let later = Need::new(salvage("refs/nightshift/salvage/s1/2"), "work kept by salvage: 1 file");
        assert_ne!(first.key, later.key, "another snapshot is another need");
        let q1 = Need::new(About::Question, "waiting on a question: Which database?");
        let q2 = Need::new(About::Question, "waiting on a question: Which port?");
        assert_ne!(q1.key, q2.key, "another question is another need");
        let lost = Need::new(About::Lost, "its Nightshift process was killed; the session is lost");
        assert_eq!(lost.key, "lost");

        let mut store = Store::open_in_memory().unwrap();
        assert!(!Dismissed::load(&store).unwrap().contains("s1", &first));
        Dismissed::add(&mut store, "s1", &first.key).unwrap();
        Dismissed::add(&mut store, "s1", &q1.key).unwrap();
        let dismissed = Dismissed::load(&store).unwrap();
        assert!(dismissed.contains("s1", &first) && dismissed.contains("s1", &q1));
        assert!(!dismissed.contains("s1", &later) && !dismissed.contains("s1", &q2));
        assert!(!dismissed.contains("s2", &first), "dismissed for its own session only");
    }

    #[test]
    fn the_window_reads_what_a_need_is_about_beside_its_text() {
        let need = Need::new(About::Crashed { resume: true }, "exited with code 5");
        let json = serde_json::to_value(&need).unwrap();
        assert_eq!(json["kind"], "crashed");
        assert_eq!(json["resume"], true);
        assert_eq!(json["text"], "exited with code 5");
        assert_eq!(json["key"], "crashed exited with code 5");
        assert!(json.get("dismissed").is_none(), "said only when it is");
        let back: Need = serde_json::from_value(json).unwrap();
        assert_eq!(back, need);
    }
}
