//! What the guard judges a command with, gathered at the edge: where the agent's shell is (the
//! hook payload's `cwd`: the client's `cd`s persist), the session's working tree, the home folder,
//! and what the repositories the rules ask about say. Files are read, no process is started.

use std::path::{Path, PathBuf};

use crate::hooks::guard::{Facts, Rules};

/// The facts for `command`, run from the payload's `cwd` (the session's `tree` when it names
/// none, or one that is not absolute).
pub(crate) fn facts(rules: &Rules, command: &str, cwd: Option<&str>, tree: &Path) -> Facts {
    let home = directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf());
    let cwd = cwd.map(PathBuf::from).filter(|p| p.is_absolute()).unwrap_or_else(|| tree.to_path_buf());
    let mut facts = Facts { cwd, tree: tree.to_path_buf(), home, ..Facts::default() };
    for dir in rules.repos_needed(command, &facts.cwd, facts.home.as_deref()) {
        facts = facts.with_repo(&dir, crate::git::branches(&dir));
    }
    facts
}
