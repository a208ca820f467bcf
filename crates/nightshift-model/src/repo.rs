//! A repository as the decisions see it: where its content stands, the worktree a session works
//! in, a file a snapshot left out. Reading them from git is the runtime's (`git`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Where a working tree's content stands.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Fingerprint(String);

impl Fingerprint {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The fingerprint `git::fingerprint` read (a tree id, or a walk's hash), or one standing for
    /// a working tree in the machines' specs.
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }
}

/// A worktree a session works in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Worktree {
    /// The user's checkout it was made from (its top level).
    pub repo: PathBuf,
    /// Where it is.
    pub path: PathBuf,
    /// `nightshift/<name>`.
    pub branch: String,
    /// The commit it started from.
    pub base: String,
}

impl Worktree {
    /// The command that shows its work.
    pub fn look(&self) -> String {
        format!("git -C {} log --stat {}..{}", self.repo.display(), &self.base[..self.base.len().min(12)], self.branch)
    }

    /// The command that merges it into the user's checkout.
    pub fn merge(&self) -> String {
        format!("git -C {} merge {}", self.repo.display(), self.branch)
    }
}

/// A file left out of a snapshot for its size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TooBig {
    pub path: String,
    pub bytes: u64,
}

impl std::fmt::Display for TooBig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.path, crate::units::bytes(self.bytes))
    }
}
