//! Salvage: the working tree's uncommitted work, kept as a commit under
//! `refs/nightshift/salvage/<session>/<n>` when a life ends badly or a cycle is about to `/clear`.
//! Only what is new: a tree the session's latest snapshot holds already makes no new ref.
//!
//! Built through a temporary index: the user's index, HEAD, branch, stash and files are untouched,
//! no hook runs (`core.hooksPath=/dev/null`), nothing is signed, and a ref that exists is never
//! overwritten. Only the new objects and the ref are written. Never during a rebase, merge,
//! cherry-pick, revert or bisect, or with conflicts: the caller journals why instead.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::run;

/// Where salvage refs live.
pub const REF_PREFIX: &str = "refs/nightshift/salvage";

const CONFIG: [&str; 10] = [
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "gc.auto=0",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "commit.gpgSign=false",
    "-c",
    "maintenance.auto=false",
];

/// The identity of salvage commits (the user may have none configured).
const IDENTITY: [(&str, &str); 4] = [
    ("GIT_AUTHOR_NAME", "Nightshift"),
    ("GIT_AUTHOR_EMAIL", "nightshift@localhost"),
    ("GIT_COMMITTER_NAME", "Nightshift"),
    ("GIT_COMMITTER_EMAIL", "nightshift@localhost"),
];

/// One changed path of a snapshot: `A`dded, `M`odified, `D`eleted (git's letters).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    pub status: String,
    pub path: String,
}

/// A snapshot kept under a salvage ref.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    pub repo: PathBuf,
    pub reference: String,
    pub commit: String,
    pub files: Vec<Change>,
    /// The size of the files it holds that HEAD does not (added and modified).
    pub bytes: u64,
}

/// What a salvage attempt did in one repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A new snapshot; `preexisting` are the paths it holds that were there, as they are, before
    /// the session began (older than its start), so the user's own files are not taken for the
    /// agent's work.
    Saved { snapshot: Snapshot, preexisting: Vec<String> },
    /// The uncommitted work is the session's latest snapshot's, as it was: no new ref.
    Unchanged { reference: String, commit: String },
    /// Nothing uncommitted.
    Clean,
    /// Not now: a rebase, merge, cherry-pick, revert or bisect, or conflicts; or git failed.
    Refused(String),
}

/// The repositories a session's work can be in: the one `cwd` is in, else those up to two levels
/// below it.
pub fn repos(cwd: &Path) -> Vec<PathBuf> {
    if let Some(top) = run(cwd, &["rev-parse", "--show-toplevel"], &[]) {
        return vec![PathBuf::from(top.trim())];
    }
    let mut found = Vec::new();
    let mut level = vec![cwd.to_path_buf()];
    for _ in 0..2 {
        let mut next = Vec::new();
        for dir in level {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
            entries.sort();
            for child in entries {
                if child.file_name().is_some_and(|n| n == ".git") {
                    continue;
                }
                if child.join(".git").exists() {
                    found.push(child);
                } else {
                    next.push(child);
                }
            }
        }
        level = next;
    }
    found
}

/// The operation half done in the repository at `dir`, from git's own files.
pub fn operation(dir: &Path) -> Option<&'static str> {
    in_progress(dir).flatten()
}

/// `None` when `dir` is in no repository; else the operation half done there, if any (a rebase,
/// merge, cherry-pick, revert or bisect), read from git's own files.
pub fn in_progress(dir: &Path) -> Option<Option<&'static str>> {
    let git_dir = PathBuf::from(run(dir, &["rev-parse", "--absolute-git-dir"], &[])?.trim());
    Some(
        [
            ("rebase-merge", "rebase"),
            ("rebase-apply", "rebase"),
            ("MERGE_HEAD", "merge"),
            ("CHERRY_PICK_HEAD", "cherry-pick"),
            ("REVERT_HEAD", "revert"),
            ("BISECT_LOG", "bisect"),
        ]
        .into_iter()
        .find(|(file, _)| git_dir.join(file).exists())
        .map(|(_, op)| op),
    )
}

fn git(repo: &Path, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Option<String> {
    let all: Vec<&str> = CONFIG.iter().copied().chain(args.iter().copied()).collect();
    let mut env: Vec<(&str, &std::ffi::OsStr)> = env.to_vec();
    env.extend(IDENTITY.iter().map(|(k, v)| (*k, std::ffi::OsStr::new(*v))));
    run(repo, &all, &env)
}

/// Keeps the uncommitted work of `repo` (tracked changes and untracked files that are not ignored)
/// as the next snapshot of `session`, unless the session's latest snapshot holds that very tree.
/// `began`: when the session began, to tell the files that were there before it.
pub fn snapshot(repo: &Path, session: &str, message: &str, began: Option<SystemTime>) -> Outcome {
    if let Some(op) = operation(repo) {
        return Outcome::Refused(format!("a {op} is in progress"));
    }
    if run(repo, &["ls-files", "-u"], &[]).is_some_and(|u| !u.trim().is_empty()) {
        return Outcome::Refused("the working tree has unresolved conflicts".into());
    }
    let head = run(repo, &["rev-parse", "--verify", "-q", "HEAD"], &[]).map(|h| h.trim().to_string());
    let Ok(scratch) = tempfile::Builder::new().prefix("nightshift-salvage-").tempdir() else {
        return Outcome::Refused("no temporary directory for the index".into());
    };
    let index = scratch.path().join("index");
    let env = [("GIT_INDEX_FILE", index.as_os_str())];
    if let Some(head) = &head {
        if git(repo, &["read-tree", head], &env).is_none() {
            return Outcome::Refused("git read-tree failed".into());
        }
    }
    if git(repo, &["add", "-A", "--", "."], &env).is_none() {
        return Outcome::Refused("git add failed (into a temporary index)".into());
    }
    let Some(tree) = git(repo, &["write-tree"], &env).map(|t| t.trim().to_string()) else {
        return Outcome::Refused("git write-tree failed".into());
    };
    let head_tree = head.as_ref().and_then(|h| run(repo, &["rev-parse", &format!("{h}^{{tree}}")], &[]));
    if head_tree.as_deref().map(str::trim) == Some(tree.as_str()) {
        return Outcome::Clean;
    }
    let taken = kept(repo, session);
    if let Some(latest) = taken.last().filter(|k| k.tree == tree) {
        return Outcome::Unchanged { reference: latest.reference.clone(), commit: latest.commit.clone() };
    }
    let mut args = vec!["commit-tree", tree.as_str(), "-m", message];
    if let Some(head) = &head {
        args.extend(["-p", head.as_str()]);
    }
    let Some(commit) = git(repo, &args, &[]).map(|c| c.trim().to_string()) else {
        return Outcome::Refused("git commit-tree failed".into());
    };
    // The next number; `create` fails rather than move a ref that exists.
    let next = taken.last().map_or(0, |k| k.n) + 1;
    for n in next..next + 100 {
        let reference = format!("{REF_PREFIX}/{session}/{n}");
        if create_ref(repo, &reference, &commit) {
            let (files, bytes) = changes(repo, head.as_deref(), &commit);
            let preexisting = began.map(|b| untouched_since(repo, &files, b)).unwrap_or_default();
            let snapshot = Snapshot { repo: repo.to_path_buf(), reference, commit, files, bytes };
            return Outcome::Saved { snapshot, preexisting };
        }
    }
    Outcome::Refused("git update-ref failed".into())
}

/// A snapshot's ref as `for-each-ref` lists it.
struct Kept {
    n: u64,
    reference: String,
    commit: String,
    tree: String,
}

/// The session's snapshots in `repo`, by number (one git call, no diffs).
fn kept(repo: &Path, session: &str) -> Vec<Kept> {
    let prefix = format!("{REF_PREFIX}/{session}/");
    let out = run(repo, &["for-each-ref", "--format=%(refname)%09%(objectname)%09%(tree)", &prefix], &[]);
    let mut kept: Vec<Kept> = out
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut fields = l.split('\t');
            let (reference, commit, tree) = (fields.next()?, fields.next()?, fields.next()?);
            let n = reference.strip_prefix(&prefix)?.parse().ok()?;
            Some(Kept { n, reference: reference.into(), commit: commit.into(), tree: tree.into() })
        })
        .collect();
    kept.sort_by_key(|k| k.n);
    kept
}

/// The added and modified paths of `files` whose file in the working tree was last changed before
/// `began`: there before the session, and untouched by it.
fn untouched_since(repo: &Path, files: &[Change], began: SystemTime) -> Vec<String> {
    files
        .iter()
        .filter(|c| c.status != "D")
        .filter(|c| std::fs::symlink_metadata(repo.join(&c.path)).and_then(|m| m.modified()).is_ok_and(|t| t < began))
        .map(|c| c.path.clone())
        .collect()
}

/// The tree of each of `commits` in `repo` (`None` for one git no longer has), in one git call
/// when all are there.
pub fn trees(repo: &Path, commits: &[&str]) -> Vec<Option<String>> {
    if commits.is_empty() {
        return Vec::new();
    }
    let args: Vec<String> = commits.iter().map(|c| format!("{c}^{{tree}}")).collect();
    let mut all = vec!["rev-parse"];
    all.extend(args.iter().map(String::as_str));
    if let Some(out) = run(repo, &all, &[]) {
        let lines: Vec<Option<String>> = out.lines().map(|l| Some(l.trim().to_string())).collect();
        if lines.len() == commits.len() {
            return lines;
        }
    }
    args.iter().map(|a| run(repo, &["rev-parse", "--verify", "-q", a], &[]).map(|t| t.trim().to_string())).collect()
}

fn create_ref(repo: &Path, reference: &str, commit: &str) -> bool {
    let child = Command::new("git")
        .args(["update-ref", "--stdin", "-m", "nightshift salvage"])
        .current_dir(repo)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else { return false };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = writeln!(stdin, "create {reference} {commit}");
    }
    child.wait().is_ok_and(|s| s.success())
}

/// The paths `commit` changes from `base`, and the size of what it adds or modifies.
fn changes(repo: &Path, base: Option<&str>, commit: &str) -> (Vec<Change>, u64) {
    let listed = match base {
        Some(base) => run(repo, &["diff-tree", "-r", "--no-commit-id", "--name-status", base, commit], &[]),
        None => run(repo, &["diff-tree", "-r", "--root", "--no-commit-id", "--name-status", commit], &[]),
    };
    let files: Vec<Change> = listed
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (status, path) = l.split_once('\t')?;
            Some(Change { status: status.to_string(), path: path.to_string() })
        })
        .collect();
    let sizes = run(repo, &["ls-tree", "-r", "-l", commit], &[]).unwrap_or_default();
    let kept: std::collections::HashSet<&str> =
        files.iter().filter(|c| c.status != "D").map(|c| c.path.as_str()).collect();
    let bytes = sizes
        .lines()
        .filter_map(|l| {
            let (meta, path) = l.split_once('\t')?;
            kept.contains(path).then(|| meta.split_whitespace().nth(3)?.parse::<u64>().ok()).flatten()
        })
        .sum();
    (files, bytes)
}

/// The snapshots kept in `repo` (of `session`, or all), oldest first.
pub fn list(repo: &Path, session: Option<&str>) -> Vec<Snapshot> {
    let prefix = match session {
        Some(s) => format!("{REF_PREFIX}/{s}/"),
        None => format!("{REF_PREFIX}/"),
    };
    let out = run(repo, &["for-each-ref", "--format=%(refname)\t%(objectname)", &prefix], &[]).unwrap_or_default();
    let mut found: Vec<Snapshot> = out
        .lines()
        .filter_map(|l| {
            let (reference, commit) = l.split_once('\t')?;
            let parent = run(repo, &["rev-parse", "--verify", "-q", &format!("{commit}^")], &[]);
            let (files, bytes) = changes(repo, parent.as_deref().map(str::trim), commit);
            Some(Snapshot {
                repo: repo.to_path_buf(),
                reference: reference.into(),
                commit: commit.into(),
                files,
                bytes,
            })
        })
        .collect();
    // refs/…/<session>/<n>: by session, then by number.
    found.sort_by_key(|s| {
        let mut parts = s.reference.rsplitn(2, '/');
        let n = parts.next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
        (parts.next().unwrap_or_default().to_string(), n)
    });
    found
}

/// The snapshot's change from the commit it was taken on, as a patch with its stat.
pub fn show(repo: &Path, reference: &str) -> Option<String> {
    run(repo, &["show", "--stat", "--patch", "--format=%s%n", reference], &[])
}

/// Puts the snapshot on a new branch `branch` (at the snapshot's commit); the working tree, the
/// index and the current branch are left as they are.
pub fn restore_to_branch(repo: &Path, reference: &str, branch: &str) -> Result<(), String> {
    if run(repo, &["check-ref-format", "--branch", branch], &[]).is_none() {
        return Err(format!("`{branch}` is not a valid branch name"));
    }
    if run(repo, &["rev-parse", "--verify", "-q", &format!("refs/heads/{branch}")], &[]).is_some() {
        return Err(format!("a branch `{branch}` exists already; choose another name"));
    }
    run(repo, &["branch", branch, reference], &[]).map(|_| ()).ok_or_else(|| format!("git branch {branch} failed"))
}

/// Writes the snapshot's changes into the working tree (not the index), which must be clean and on
/// the commit the snapshot was taken on (or one it applies to).
pub fn restore_to_worktree(repo: &Path, reference: &str) -> Result<(), String> {
    let status = run(repo, &["status", "--porcelain"], &[]).ok_or("git status failed")?;
    if !status.trim().is_empty() {
        return Err("the working tree has changes of its own; commit or stash them first, or restore onto a new branch with --branch NAME".into());
    }
    let parent = run(repo, &["rev-parse", "--verify", "-q", &format!("{reference}^")], &[]);
    let base = parent.as_deref().map(str::trim).unwrap_or("4b825dc642cb6eb9a060e54bf8d69288fbee4904");
    let patch = Command::new("git")
        .args(["diff", "--binary", base, reference])
        .current_dir(repo)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    let mut apply = Command::new("git")
        .args(["apply", "--whitespace=nowarn", "-"])
        .current_dir(repo)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    if let Some(mut stdin) = apply.stdin.take() {
        stdin.write_all(&patch.stdout).map_err(|e| e.to_string())?;
    }
    let out = apply.wait_with_output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "the snapshot does not apply to this commit ({}); restore it onto a new branch with --branch NAME",
            String::from_utf8_lossy(&out.stderr).lines().next().unwrap_or("git apply failed")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    fn saved(outcome: Outcome) -> (String, Vec<String>) {
        match outcome {
            Outcome::Saved { snapshot, preexisting } => (snapshot.reference, preexisting),
            other => panic!("not saved: {other:?}"),
        }
    }

    #[test]
    fn only_a_tree_unlike_the_latest_snapshot_makes_a_ref() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path();
        git(repo, &["init", "-q"]);
        std::fs::write(repo.join("a.txt"), "a\n").unwrap();
        git(repo, &["add", "."]);
        git(repo, &["commit", "-qm", "start"]);
        assert_eq!(snapshot(repo, "s1", "m", None), Outcome::Clean);

        std::fs::write(repo.join("a.txt"), "one\n").unwrap();
        let (first, _) = saved(snapshot(repo, "s1", "m", None));
        assert_eq!(first, "refs/nightshift/salvage/s1/1");
        let again = snapshot(repo, "s1", "m", None);
        assert!(matches!(&again, Outcome::Unchanged { reference, .. } if *reference == first), "{again:?}");

        // Changed, then back as the first snapshot had it: new against the latest, so kept again.
        std::fs::write(repo.join("a.txt"), "two\n").unwrap();
        assert_eq!(saved(snapshot(repo, "s1", "m", None)).0, "refs/nightshift/salvage/s1/2");
        std::fs::write(repo.join("a.txt"), "one\n").unwrap();
        assert_eq!(saved(snapshot(repo, "s1", "m", None)).0, "refs/nightshift/salvage/s1/3");
        // Another session's first snapshot of the same tree is its own.
        assert_eq!(saved(snapshot(repo, "s2", "m", None)).0, "refs/nightshift/salvage/s2/1");
        let listed = git(repo, &["for-each-ref", "--format=%(refname)", REF_PREFIX]);
        assert_eq!(listed.lines().count(), 4, "{listed}");
    }

    #[test]
    fn files_older_than_the_session_are_named_as_there_before_it() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path();
        git(repo, &["init", "-q"]);
        git(repo, &["commit", "-q", "--allow-empty", "-m", "start"]);
        std::fs::write(repo.join("mine.txt"), "the user's\n").unwrap();
        let began = SystemTime::now() + std::time::Duration::from_secs(1);
        let old = std::fs::File::options().write(true).open(repo.join("mine.txt")).unwrap();
        old.set_modified(began - std::time::Duration::from_secs(3600)).unwrap();
        std::fs::write(repo.join("agent.txt"), "the agent's\n").unwrap();
        let new = std::fs::File::options().write(true).open(repo.join("agent.txt")).unwrap();
        new.set_modified(began + std::time::Duration::from_secs(60)).unwrap();
        let (_, preexisting) = saved(snapshot(repo, "s1", "m", Some(began)));
        assert_eq!(preexisting, ["mine.txt"]);
    }
}
