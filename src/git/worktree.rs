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
//! Every git call here runs as all of Nightshift's do ([`super::output`]): without hooks (a
//! post-checkout hook of the user's would run unattended otherwise), filters or fsmonitor.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use nightshift_model::repo::Worktree;

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

/// Runs git in `dir`; its output, or what it said on failure.
fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    super::output(dir, args, &[]).map(|out| out.trim_end().to_string())
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
    /// Commits its HEAD holds that no branch, tag or remote branch does: work committed on a
    /// detached HEAD, which the worktree's removal would leave unreachable.
    #[serde(default)]
    pub loose: u32,
    /// What git could not tell about it (each a failed call, in its words): counted as at risk,
    /// never as nothing to lose.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<String>,
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
        if self.loose > 0 {
            parts.push(format!("{} on its detached HEAD", self.loose));
        }
        if self.uncommitted > 0 {
            parts.push(format!("{} uncommitted", self.uncommitted));
        }
        if !self.unreadable.is_empty() {
            parts.push(format!("git could not read {}", self.unreadable.join("; ")));
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
        if self.loose > 0 {
            lost.push(format!("{} commit(s) on its detached HEAD that no branch holds", self.loose));
        }
        if !self.unreadable.is_empty() {
            lost.push(format!("work that could not be read ({})", self.unreadable.join("; ")));
        }
        (!lost.is_empty()).then(|| lost.join(" and "))
    }
}

/// Where `w`'s work stands now. A git call that fails is said in [`Standing::unreadable`].
pub fn standing(w: &Worktree) -> Standing {
    let mut unreadable = Vec::new();
    let mut read = |what: &str, result: Result<String, String>| match result {
        Ok(out) => Some(out),
        Err(why) => {
            unreadable.push(format!("{what} ({why})"));
            None
        }
    };
    let tip = git(&w.repo, &["rev-parse", "--verify", "--quiet", &format!("refs/heads/{}", w.branch)]).ok();
    let present = w.path.join(".git").exists();
    let count = |out: Option<String>| out.and_then(|n| n.trim().parse::<u32>().ok());
    let ahead = match &tip {
        Some(t) => {
            count(read("its branch", git(&w.repo, &["rev-list", "--count", &format!("{}..{t}", w.base)]))).unwrap_or(0)
        }
        None => 0,
    };
    let diffstat = tip
        .as_ref()
        .and_then(|t| git(&w.repo, &["diff", "--shortstat", &w.base, t]).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let (mut uncommitted, mut loose) = (0, 0);
    if present {
        uncommitted = read("its files", git(&w.path, &["status", "--porcelain", "--untracked-files=all"]))
            .map_or(0, |s| s.lines().count() as u32);
        if let Some(head) = read("its HEAD", git(&w.path, &["rev-parse", "--verify", "HEAD^{commit}"])) {
            // What its HEAD holds that no ref the removal leaves in place does.
            let args = ["rev-list", "--count", head.trim(), "--not", "--branches", "--tags", "--remotes"];
            loose = count(read("the commits of its HEAD", git(&w.repo, &args))).unwrap_or(0);
        }
    }
    let merged = tip.as_ref().is_some_and(|t| git(&w.repo, &["merge-base", "--is-ancestor", t, "HEAD"]).is_ok());
    let remotes = read("its remotes", git(&w.repo, &["remote"])).unwrap_or_default();
    let pushed = (!remotes.trim().is_empty()).then(|| {
        tip.as_ref()
            .is_some_and(|t| git(&w.repo, &["branch", "-r", "--contains", t]).is_ok_and(|s| !s.trim().is_empty()))
    });
    Standing { present, ahead, diffstat, uncommitted, merged, pushed, loose, unreadable }
}

/// What a removal did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removed {
    /// The salvage ref that keeps its uncommitted files (a forced removal of a dirty worktree).
    pub salvaged: Option<String>,
    /// The ref that keeps the commits of its detached HEAD that no branch held (a forced removal).
    pub kept_head: Option<String>,
    /// Whether its branch went too (every commit of it is held by another ref); otherwise it is
    /// kept.
    pub branch_deleted: bool,
}

/// Where the commits of worktree `name`'s detached HEAD are kept when it is removed.
pub const KEPT_PREFIX: &str = "refs/nightshift/kept";

/// Removes `w`: refused while it holds work that would be lost (uncommitted files, commits neither
/// merged nor pushed, commits only its detached HEAD holds, or a state git cannot read) unless
/// `force`. Forced, its uncommitted files are kept under a salvage ref first and its HEAD's loose
/// commits under [`KEPT_PREFIX`]; git itself is forced only then. Its branch goes only when every
/// commit of it is held by another ref: a removal never leaves a commit unreachable. `session`
/// names the salvage.
pub fn remove(w: &Worktree, force: bool, session: &str) -> Result<Removed, String> {
    let s = standing(w);
    if let (Some(risk), false) = (s.at_risk(), force) {
        return Err(format!(
            "{} holds {risk}; merge or push it first, or remove it anyway with --force (its uncommitted files and \
             commits are kept under refs, its branch is kept)",
            w.path.display()
        ));
    }
    let mut salvaged = None;
    if s.present && s.uncommitted > 0 {
        match super::salvage::snapshot(&w.path, session, "before the worktree was removed", None) {
            super::salvage::Outcome::Saved { snapshot, .. } => salvaged = Some(snapshot.reference),
            super::salvage::Outcome::Unchanged { reference, .. } => salvaged = Some(reference),
            super::salvage::Outcome::Clean | super::salvage::Outcome::UsersOnly(_) => {}
            super::salvage::Outcome::TooBig(files) => {
                let big: Vec<String> = files.iter().map(ToString::to_string).collect();
                return Err(format!(
                    "{} was not removed: its uncommitted {} too big to keep under a salvage ref; move or commit them first",
                    w.path.display(),
                    if big.len() == 1 { format!("file {} is", big[0]) } else { format!("files {} are", big.join(", ")) }
                ));
            }
            super::salvage::Outcome::Refused(why) => {
                return Err(format!("{} was not removed: its work could not be kept first ({why})", w.path.display()))
            }
        }
    }
    let mut kept_head = None;
    if s.present && (s.loose > 0 || !s.unreadable.is_empty()) {
        if let Ok(head) = git(&w.path, &["rev-parse", "--verify", "HEAD^{commit}"]) {
            kept_head = Some(keep_head(w, head.trim())?);
        }
    }
    let path = w.path.display().to_string();
    if s.present {
        let mut args = vec!["worktree", "remove"];
        if force {
            args.push("--force");
        }
        args.push(&path);
        git(&w.repo, &args).map_err(|e| format!("{} was not removed: {e}", w.path.display()))?;
    } else {
        let _ = git(&w.repo, &["worktree", "prune"]);
    }
    let held = held_elsewhere(w);
    if held {
        git(&w.repo, &["branch", "-D", &w.branch])?;
    }
    Ok(Removed { salvaged, kept_head, branch_deleted: held })
}

/// Keeps `head` of `w` under a new ref of [`KEPT_PREFIX`], never moving one that exists.
fn keep_head(w: &Worktree, head: &str) -> Result<String, String> {
    let name = w.branch.trim_start_matches("nightshift/");
    for n in 1..100 {
        let reference = format!("{KEPT_PREFIX}/{name}/{n}");
        // An empty old value: only if the ref does not exist yet.
        if git(&w.repo, &["update-ref", "-m", "nightshift worktree remove", &reference, head, ""]).is_ok() {
            return Ok(reference);
        }
    }
    Err(format!("{} was not removed: its HEAD's commits could not be kept under {KEPT_PREFIX}", w.path.display()))
}

/// Whether every commit of `w`'s branch is held by another branch, a tag, a remote branch or the
/// user's HEAD (so deleting the branch loses none); `false` when git cannot tell.
fn held_elsewhere(w: &Worktree) -> bool {
    let Ok(tip) = git(&w.repo, &["rev-parse", "--verify", "--quiet", &format!("refs/heads/{}", w.branch)]) else {
        return false;
    };
    // `--exclude` before `--branches` takes the name below `refs/heads/`.
    let exclude = format!("--exclude={}", w.branch);
    let args = ["rev-list", "--count", tip.trim(), "--not", &exclude, "--branches", "--tags", "--remotes", "HEAD"];
    git(&w.repo, &args).is_ok_and(|n| n.trim() == "0")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standing(ahead: u32, uncommitted: u32, merged: bool, pushed: Option<bool>) -> Standing {
        let diffstat = if ahead > 0 { "1 file changed, 2 insertions(+)".into() } else { String::new() };
        Standing { present: true, ahead, diffstat, uncommitted, merged, pushed, loose: 0, unreadable: Vec::new() }
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
        let detached = Standing { loose: 1, ..standing(0, 0, false, None) };
        assert_eq!(detached.at_risk().as_deref(), Some("1 commit(s) on its detached HEAD that no branch holds"));
        let unread =
            Standing { unreadable: vec!["its files (index file corrupt)".into()], ..standing(0, 0, true, None) };
        assert_eq!(unread.at_risk().as_deref(), Some("work that could not be read (its files (index file corrupt))"));
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
