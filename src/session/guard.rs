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
    // A folder that is not there yet (the line makes it, or clones into it) tells nothing: its
    // repository stays unknown, and every branch counts as protected there.
    for dir in rules.repos_needed(command, &facts.cwd, facts.home.as_deref()).into_iter().filter(|d| d.is_dir()) {
        facts = facts.with_repo(&dir, crate::git::branches(&dir));
    }
    facts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repository_the_line_has_not_made_yet_is_not_known() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        std::fs::create_dir_all(tree.join(".git/refs/heads")).unwrap();
        std::fs::write(tree.join(".git/HEAD"), "ref: refs/heads/feature\n").unwrap();
        std::fs::write(tree.join(".git/refs/heads/main"), "0000000000000000000000000000000000000000\n").unwrap();
        let rules = Rules::builtin();
        let kind = |command: &str| {
            let facts = facts(&rules, command, Some(tree.to_str().unwrap()), &tree);
            rules.check(command, &facts).map(|d| d.kind)
        };
        assert_eq!(kind("git push -f origin develop"), None, "the tree's default is main");
        assert_eq!(kind("git push -f"), None, "on feature");
        // A clone the line makes may have any default branch.
        let fresh = "git clone ../up fresh && cd fresh && git push -f origin develop";
        assert_eq!(kind(fresh).as_deref(), Some("force_push"));
        // Where the payload names no folder, the session's tree is where the shell is.
        let facts = facts(&rules, "rm -rf x", None, &tree);
        assert_eq!(facts.cwd, tree);
    }
}
