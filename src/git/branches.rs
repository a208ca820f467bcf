//! The branch a working tree is on and the repository's default branch, read from the repository's
//! files (no git process: the guard asks on the agent's path, for every git command it runs).

use std::path::{Path, PathBuf};

/// `(the branch checked out, the default branch)` of the repository `dir` is in; `None` where it
/// cannot be told (detached, not a repository).
pub fn branches(dir: &Path) -> (Option<String>, Option<String>) {
    let Some((git_dir, common)) = find(dir) else { return (None, None) };
    let current = std::fs::read_to_string(git_dir.join("HEAD"))
        .ok()
        .and_then(|h| h.trim().strip_prefix("ref: refs/heads/").map(str::to_string));
    let remote_head = std::fs::read_to_string(common.join("refs/remotes/origin/HEAD"))
        .ok()
        .and_then(|h| h.trim().strip_prefix("ref: refs/remotes/origin/").map(str::to_string));
    let default =
        remote_head.or_else(|| ["main", "master"].into_iter().find(|b| has_branch(&common, b)).map(str::to_string));
    (current, default)
}

fn has_branch(common: &Path, name: &str) -> bool {
    common.join("refs/heads").join(name).is_file()
        || std::fs::read_to_string(common.join("packed-refs"))
            .is_ok_and(|p| p.lines().any(|l| l.ends_with(&format!(" refs/heads/{name}"))))
}

/// The git directory of the working tree `dir` is in, and its common directory (they differ in a
/// linked worktree).
fn find(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    for at in dir.ancestors() {
        let dot = at.join(".git");
        let git_dir = if dot.is_dir() {
            dot
        } else if dot.is_file() {
            let text = std::fs::read_to_string(&dot).ok()?;
            let path = PathBuf::from(text.trim().strip_prefix("gitdir: ")?);
            if path.is_absolute() {
                path
            } else {
                at.join(path)
            }
        } else {
            continue;
        };
        let common = std::fs::read_to_string(git_dir.join("commondir"))
            .map(|c| {
                let c = PathBuf::from(c.trim());
                if c.is_absolute() {
                    c
                } else {
                    git_dir.join(c)
                }
            })
            .unwrap_or_else(|_| git_dir.clone());
        return Some((git_dir, common));
    }
    None
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn the_branch_and_the_default_of_a_clone_and_a_worktree() {
        let tmp = tempfile::tempdir().unwrap();
        let origin = tmp.path().join("origin");
        std::fs::create_dir(&origin).unwrap();
        git(&origin, &["init", "-q", "-b", "trunk"]);
        git(&origin, &["commit", "-q", "--allow-empty", "-m", "one"]);
        git(tmp.path(), &["clone", "-q", origin.to_str().unwrap(), "clone"]);
        let clone = tmp.path().join("clone");
        assert_eq!(branches(&clone), (Some("trunk".into()), Some("trunk".into())), "origin/HEAD names the default");
        git(&clone, &["checkout", "-q", "-b", "feature"]);
        std::fs::create_dir(clone.join("sub")).unwrap();
        assert_eq!(branches(&clone.join("sub")), (Some("feature".into()), Some("trunk".into())));
        git(&clone, &["worktree", "add", "-q", "-b", "other", "../wt"]);
        assert_eq!(branches(&tmp.path().join("wt")), (Some("other".into()), Some("trunk".into())));
        assert_eq!(branches(tmp.path()), (None, None), "not a repository");
        // No remote: main or master, where it exists.
        git(&origin, &["branch", "-q", "main"]);
        assert_eq!(branches(&origin).1.as_deref(), Some("main"));
    }
}
