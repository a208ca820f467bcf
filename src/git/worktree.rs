//! Worktrees for unattended sessions: a session started with `--worktree` works in a linked worktree
//! of its own, on a branch `nightshift/<name>` made from the current HEAD, in Nightshift's data
//! directory, never inside the user's working tree. The user's checkout keeps its index, HEAD,
//! branches, stash and files as they were; several sessions on one repository each get their own.
//!
//! Claude's own `--worktree` is not used: it cleans its worktrees up when a session ends, which has
//! deleted unpushed commits and live trees (anthropics/claude-code#79899, #48131), and it is
//! Claude's alone. Git does the same for every agent, and what is made stays until the user removes
//! it with `nightshift worktree remove`, which refuses to lose work unless forced, and keeps the
//! uncommitted files under a salvage ref first even then.
//!
//! Every git call here runs without hooks (`core.hooksPath` to an empty place): a post-checkout hook
//! of the user's would run unattended otherwise.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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

/// Why a worktree could not be made, each with its fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorktreeError {
    #[error("{0} is not in a git repository; start the session in one, or without --worktree")]
    NotARepo(PathBuf),
    #[error("{0} is a bare repository, with no files to work on; start in a clone of it")]
    Bare(PathBuf),
    #[error("{0} has no commit yet to start a worktree from; commit once, or start without --worktree")]
    NoCommit(PathBuf),
    #[error("`{0}` is not a name git takes for a branch; give --worktree another NAME (letters, digits, - and _)")]
    BadName(String),
    #[error(
        "the branch {0} exists already; give --worktree another NAME, or remove it (`nightshift worktree remove`)"
    )]
    BranchExists(String),
    #[error(
        "{0} exists already (left from an earlier session?); remove it with `nightshift worktree remove`, or give \
         --worktree another NAME"
    )]
    PathExists(PathBuf),
    #[error("git could not make the worktree: {0}")]
    Git(String),
}

/// Runs git in `dir` without the user's hooks; its output, or what it said on failure.
fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let all: Vec<&str> = ["-c", "core.hooksPath=/dev/null"].into_iter().chain(args.iter().copied()).collect();
    super::output(dir, &all, &[]).map(|out| out.trim_end().to_string())
}

/// Where the worktrees of the repository at `top` live under `root`: one folder per repository,
/// named for it and told apart by a hash of its path.
pub fn folder(root: &Path, top: &Path) -> PathBuf {
    use sha2::Digest as _;
    let hash = sha2::Sha256::digest(top.as_os_str().as_encoded_bytes());
    let short: String = hash.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let name = top.file_name().map_or_else(|| "repo".into(), |n| n.to_string_lossy().into_owned());
    root.join(format!("{name}-{short}"))
}

/// The top level of the repository `dir` is in, if any.
pub fn top(dir: &Path) -> Option<PathBuf> {
    git(dir, &["rev-parse", "--show-toplevel"]).ok().map(PathBuf::from)
}

/// Checks that worktree `name` of the repository `dir` is in can be made under `root`, without
/// making it: the repository's top level, the commit it would start from, its branch and its place.
pub fn check(dir: &Path, name: &str, root: &Path) -> Result<Worktree, WorktreeError> {
    let not_repo = || WorktreeError::NotARepo(dir.to_path_buf());
    if git(dir, &["rev-parse", "--is-bare-repository"]).map_err(|_| not_repo())? == "true" {
        return Err(WorktreeError::Bare(dir.to_path_buf()));
    }
    let top = top(dir).ok_or_else(not_repo)?;
    let base = git(&top, &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
        .map_err(|_| WorktreeError::NoCommit(top.clone()))?;
    let branch = format!("nightshift/{name}");
    let plain =
        !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if !plain || name.starts_with('.') || git(&top, &["check-ref-format", "--branch", &branch]).is_err() {
        return Err(WorktreeError::BadName(name.to_string()));
    }
    if git(&top, &["rev-parse", "--verify", "--quiet", &format!("refs/heads/{branch}")]).is_ok() {
        return Err(WorktreeError::BranchExists(branch));
    }
    let path = folder(root, &top).join(name);
    if path.exists() {
        return Err(WorktreeError::PathExists(path));
    }
    Ok(Worktree { repo: top, path, branch, base })
}

/// Makes worktree `name` of the repository `dir` is in, under `root`, on a new branch
/// `nightshift/<name>` from HEAD (a detached HEAD too; what is uncommitted in the user's checkout
/// stays there). Submodules are not checked out in it.
pub fn make(dir: &Path, name: &str, root: &Path) -> Result<Worktree, WorktreeError> {
    let w = check(dir, name, root)?;
    std::fs::create_dir_all(w.path.parent().unwrap_or(root)).map_err(|e| WorktreeError::Git(e.to_string()))?;
    let shown = w.path.display().to_string();
    if let Err(e) = git(&w.repo, &["worktree", "add", "--quiet", "-b", &w.branch, &shown, &w.base]) {
        // Half made (a full disk): nothing of it is left, the branch it would have had included.
        let _ = std::fs::remove_dir_all(&w.path);
        let _ = git(&w.repo, &["worktree", "prune"]);
        let _ = git(&w.repo, &["branch", "-D", &w.branch]);
        return Err(WorktreeError::Git(e));
    }
    Ok(w)
}

/// The folder of `w` that stands for `dir` of the user's checkout (the same subfolder).
pub fn inside(w: &Worktree, dir: &Path) -> PathBuf {
    let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    w.path.join(real.strip_prefix(&w.repo).unwrap_or(Path::new("")))
}

/// A task's words as a part of a branch name: `Add the login page` → `add-the-login-page`, at
/// most `max` bytes, cut at a word.
pub fn slug(task: &str, max: usize) -> String {
    let mut out = String::new();
    for word in task.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()) {
        let word = word.to_ascii_lowercase();
        if out.len() + word.len() + usize::from(!out.is_empty()) > max {
            break;
        }
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&word);
    }
    out
}

/// Where a worktree's work stands, for the morning and before a removal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Standing {
    /// Whether its folder is still there.
    pub present: bool,
    /// Commits on its branch since it started.
    pub ahead: u32,
    /// `git diff --shortstat` from where it started (`3 files changed, 40 insertions(+)`).
    pub diffstat: String,
    /// Files changed and not committed in it.
    pub uncommitted: u32,
    /// Its branch's tip is in the user's HEAD (merged).
    pub merged: bool,
    /// A remote branch holds its tip; `None` when the repository has no remote.
    pub pushed: Option<bool>,
}

impl Standing {
    /// Its work in one line: `2 commits, 1 file changed, 3 insertions(+), not pushed, 1 uncommitted`.
    pub fn words(&self) -> String {
        let mut parts = vec![match self.ahead {
            0 => "no commits".to_string(),
            1 => "1 commit".to_string(),
            n => format!("{n} commits"),
        }];
        if !self.diffstat.is_empty() {
            parts.push(self.diffstat.clone());
        }
        parts.push(match (self.merged && self.ahead > 0, self.pushed) {
            (true, _) => "merged".into(),
            (_, Some(true)) => "pushed".into(),
            (_, Some(false)) => "not pushed".into(),
            (_, None) => "no remote".into(),
        });
        if self.uncommitted > 0 {
            parts.push(format!("{} uncommitted", self.uncommitted));
        }
        if !self.present {
            parts.push("its folder is gone".into());
        }
        parts.join(", ")
    }

    /// What removing it would lose, in words; `None` when nothing.
    pub fn at_risk(&self) -> Option<String> {
        let mut lost = Vec::new();
        if self.uncommitted > 0 {
            lost.push(format!("{} uncommitted file(s)", self.uncommitted));
        }
        if self.ahead > 0 && !self.merged && self.pushed != Some(true) {
            lost.push(format!("{} commit(s) neither merged nor pushed", self.ahead));
        }
        (!lost.is_empty()).then(|| lost.join(" and "))
    }
}

/// Where `w`'s work stands now.
pub fn standing(w: &Worktree) -> Standing {
    let tip = git(&w.repo, &["rev-parse", "--verify", "--quiet", &format!("refs/heads/{}", w.branch)]).ok();
    let present = w.path.join(".git").exists();
    let range = tip.as_ref().map(|t| format!("{}..{t}", w.base));
    let ahead = range
        .as_ref()
        .and_then(|r| git(&w.repo, &["rev-list", "--count", r]).ok())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let diffstat = tip
        .as_ref()
        .and_then(|t| git(&w.repo, &["diff", "--shortstat", &w.base, t]).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let uncommitted = if present {
        git(&w.path, &["status", "--porcelain", "--untracked-files=all"]).map_or(0, |s| s.lines().count() as u32)
    } else {
        0
    };
    let merged = tip.as_ref().is_some_and(|t| git(&w.repo, &["merge-base", "--is-ancestor", t, "HEAD"]).is_ok());
    let remotes = git(&w.repo, &["remote"]).unwrap_or_default();
    let pushed = (!remotes.trim().is_empty()).then(|| {
        tip.as_ref()
            .is_some_and(|t| git(&w.repo, &["branch", "-r", "--contains", t]).is_ok_and(|s| !s.trim().is_empty()))
    });
    Standing { present, ahead, diffstat, uncommitted, merged, pushed }
}

/// What a removal did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removed {
    /// The salvage ref that keeps its uncommitted files (a forced removal of a dirty worktree).
    pub salvaged: Option<String>,
    /// Whether its branch went too (it was merged, or had nothing of its own); otherwise it is kept.
    pub branch_deleted: bool,
}

/// Removes `w`: refused while it holds work that would be lost (uncommitted files, commits neither
/// merged nor pushed) unless `force`; forced, its uncommitted files are kept under a salvage ref
/// first, and a branch with commits of its own is kept. `session` names the salvage.
pub fn remove(w: &Worktree, force: bool, session: &str) -> Result<Removed, String> {
    let s = standing(w);
    if let (Some(risk), false) = (s.at_risk(), force) {
        return Err(format!(
            "{} holds {risk}; merge or push it first, or remove it anyway with --force (its uncommitted files are \
             kept under a salvage ref, its branch is kept)",
            w.path.display()
        ));
    }
    let mut salvaged = None;
    if s.present && s.uncommitted > 0 {
        match super::salvage::snapshot(&w.path, session, "before the worktree was removed", None) {
            super::salvage::Outcome::Saved { snapshot, .. } => salvaged = Some(snapshot.reference),
            super::salvage::Outcome::Unchanged { reference, .. } => salvaged = Some(reference),
            super::salvage::Outcome::Clean => {}
            super::salvage::Outcome::Refused(why) => {
                return Err(format!("{} was not removed: its work could not be kept first ({why})", w.path.display()))
            }
        }
    }
    if s.present {
        git(&w.repo, &["worktree", "remove", "--force", &w.path.display().to_string()])?;
    } else {
        let _ = git(&w.repo, &["worktree", "prune"]);
    }
    let keep = s.ahead > 0 && !s.merged;
    if !keep {
        git(&w.repo, &["branch", "-D", &w.branch])?;
    }
    Ok(Removed { salvaged, branch_deleted: !keep })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standing(ahead: u32, uncommitted: u32, merged: bool, pushed: Option<bool>) -> Standing {
        let diffstat = if ahead > 0 { "1 file changed, 2 insertions(+)".into() } else { String::new() };
        Standing { present: true, ahead, diffstat, uncommitted, merged, pushed }
    }

    #[test]
    fn what_a_removal_would_lose_is_said_and_nothing_else_stops_it() {
        assert_eq!(standing(0, 0, false, None).at_risk(), None, "nothing of its own");
        assert_eq!(standing(2, 0, true, Some(false)).at_risk(), None, "merged");
        assert_eq!(standing(2, 0, false, Some(true)).at_risk(), None, "pushed");
        assert_eq!(standing(2, 0, false, None).at_risk().as_deref(), Some("2 commit(s) neither merged nor pushed"));
        assert_eq!(
            standing(1, 3, false, Some(false)).at_risk().as_deref(),
            Some("3 uncommitted file(s) and 1 commit(s) neither merged nor pushed")
        );
        assert_eq!(
            standing(2, 1, false, Some(false)).words(),
            "2 commits, 1 file changed, 2 insertions(+), not pushed, 1 uncommitted"
        );
        assert_eq!(standing(1, 0, true, None).words(), "1 commit, 1 file changed, 2 insertions(+), merged");
    }

    #[test]
    fn each_repository_has_its_own_folder_named_for_it() {
        let root = Path::new("/data/worktrees");
        let a = folder(root, Path::new("/home/u/api"));
        assert!(a.starts_with(root) && a.file_name().unwrap().to_string_lossy().starts_with("api-"), "{}", a.display());
        assert_ne!(a, folder(root, Path::new("/home/v/api")), "two clones of one name are told apart");
    }

    #[test]
    fn a_task_becomes_words_a_branch_takes() {
        assert_eq!(slug("Add the login page (see #12)", 40), "add-the-login-page-see-12");
        assert_eq!(slug("Add the login page", 12), "add-the");
        assert_eq!(slug("日本語 only", 20), "only");
        assert_eq!(slug("", 20), "");
    }
}
