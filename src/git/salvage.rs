//! Salvage: the working tree's uncommitted work, kept as a commit under
//! `refs/nightshift/salvage/<session>/<n>` when a life ends badly or a cycle is about to `/clear`.
//! What is at risk is the uncommitted change from HEAD, and a snapshot is due only when that
//! changed since the session's latest one (the agent's commits move HEAD and the tree, not what is
//! at risk). The user's own files, there before the session began and untouched since, are never
//! stored as the agent's work: they are left out and named.
//!
//! Built through a temporary index: the user's index, HEAD, branch, stash and files are untouched,
//! nothing the repository configures runs (no hook, filter, fsmonitor or diff driver: see
//! [`super::output`]), nothing is signed, and a ref that exists is never overwritten. Only the new
//! objects and the ref are written. A file over [`Limits::max_file`] is listed, not stored (a
//! rewritten 500 MB artifact must not add 500 MB a cycle), and a snapshot that takes longer than
//! [`Limits::time`] is given up, saying so (a hung git must not hold the session's end). Never
//! during a rebase, merge, cherry-pick, revert or bisect, or with conflicts: the caller journals
//! why instead.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

use super::run;

/// Where salvage refs live.
pub const REF_PREFIX: &str = "refs/nightshift/salvage";

/// How much one snapshot may store and how long it may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// A file bigger than this is listed as too big, not stored.
    pub max_file: u64,
    /// Past this the snapshot is given up.
    pub time: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self { max_file: 32 << 20, time: Duration::from_secs(120) }
    }
}

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

pub use nightshift_model::repo::TooBig;

/// What a salvage attempt did in one repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A new snapshot; `users` are the paths left out of it as the user's own (there before the
    /// session began, older than its start, untouched since: not the agent's work); `too_big` the
    /// files left out for their size.
    Saved { snapshot: Snapshot, users: Vec<String>, too_big: Vec<TooBig> },
    /// What is at risk (the uncommitted change from HEAD) is what the session's latest snapshot
    /// holds, though HEAD may have moved since: no new ref.
    Unchanged { reference: String, commit: String },
    /// Nothing uncommitted.
    Clean,
    /// Nothing uncommitted but the user's own files, there before the session began.
    UsersOnly(Vec<String>),
    /// Nothing uncommitted but files too big to keep.
    TooBig(Vec<TooBig>),
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

/// The git calls of one snapshot: each given up at the snapshot's deadline, with its words.
struct Run<'a> {
    repo: &'a Path,
    until: Instant,
    limits: Limits,
}

impl Run<'_> {
    fn git(&self, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Result<String, String> {
        let mut env: Vec<(&str, &std::ffi::OsStr)> = env.to_vec();
        env.extend(IDENTITY.iter().map(|(k, v)| (*k, std::ffi::OsStr::new(*v))));
        super::output_until(self.repo, args, &env, None, self.until).map_err(|e| self.why(&e, args))
    }

    /// What to say of a failed call: that the snapshot ran out of time, or what failed.
    fn why(&self, said: &str, args: &[&str]) -> String {
        if Instant::now() >= self.until {
            return format!("gave up after {} s ({said})", self.limits.time.as_secs());
        }
        format!("git {} failed ({said})", args.first().copied().unwrap_or_default())
    }
}

/// Keeps the uncommitted work of `repo` (tracked changes and untracked files that are not ignored)
/// as the next snapshot of `session`, unless the session's latest snapshot holds that very tree.
/// `began`: when the session began, to tell the files that were there before it.
pub fn snapshot(repo: &Path, session: &str, message: &str, began: Option<SystemTime>) -> Outcome {
    snapshot_within(repo, session, message, began, Limits::default())
}

/// [`snapshot`] within `limits`.
pub fn snapshot_within(
    repo: &Path,
    session: &str,
    message: &str,
    began: Option<SystemTime>,
    limits: Limits,
) -> Outcome {
    let run = Run { repo, until: Instant::now() + limits.time, limits };
    match taken(&run, session, message, began) {
        Ok(outcome) => outcome,
        Err(why) => Outcome::Refused(why),
    }
}

fn taken(run: &Run<'_>, session: &str, message: &str, began: Option<SystemTime>) -> Result<Outcome, String> {
    let repo = run.repo;
    if let Some(op) = operation(repo) {
        return Ok(Outcome::Refused(format!("a {op} is in progress")));
    }
    if !run.git(&["ls-files", "-u"], &[])?.trim().is_empty() {
        return Ok(Outcome::Refused("the working tree has unresolved conflicts".into()));
    }
    let head = run.git(&["rev-parse", "--verify", "-q", "HEAD"], &[]).ok().map(|h| h.trim().to_string());
    let Ok(scratch) = tempfile::Builder::new().prefix("nightshift-salvage-").tempdir() else {
        return Ok(Outcome::Refused("no temporary directory for the index".into()));
    };
    let index = scratch.path().join("index");
    let env = [("GIT_INDEX_FILE", index.as_os_str())];
    if let Some(head) = &head {
        run.git(&["read-tree", head], &env)?;
    }
    // What would be stored, file by file: those over the limit, and the user's own from before
    // the session, are left out by name.
    // An empty file nobody tracks holds no work (Claude's sandbox leaves one at each start-up file it
    // guards in the folder): left out without a word. A tracked file emptied is a change, and kept.
    let (mut too_big, mut users, mut empty) = (Vec::new(), Vec::new(), Vec::new());
    let untracked = run.git(&["ls-files", "-z", "--others", "--exclude-standard"], &env)?;
    let untracked: std::collections::HashSet<&str> = untracked.split('\0').filter(|p| !p.is_empty()).collect();
    let listed = run.git(&["ls-files", "-z", "--others", "--modified", "--exclude-standard"], &env)?;
    let mut listed: Vec<&str> = listed.split('\0').filter(|p| !p.is_empty()).collect();
    listed.sort_unstable();
    listed.dedup();
    for path in listed {
        let Ok(meta) = std::fs::symlink_metadata(repo.join(path)) else { continue };
        if began.is_some_and(|b| meta.modified().is_ok_and(|t| t < b)) {
            users.push(path.to_string());
        } else if meta.len() > run.limits.max_file {
            too_big.push(TooBig { path: path.to_string(), bytes: meta.len() });
        } else if meta.len() == 0 && !meta.is_dir() && untracked.contains(path) {
            empty.push(path.to_string());
        }
    }
    let mut pathspecs = String::from(".\0");
    for path in users.iter().chain(too_big.iter().map(|b| &b.path)).chain(&empty) {
        pathspecs.push_str(&format!(":(exclude,literal){path}\0"));
    }
    let spec_file = scratch.path().join("pathspecs");
    std::fs::write(&spec_file, pathspecs).map_err(|e| format!("cannot write the pathspecs: {e}"))?;
    let from = format!("--pathspec-from-file={}", spec_file.display());
    run.git(&["add", "-A", "--pathspec-file-nul", &from], &env)?;
    let tree = run.git(&["write-tree"], &env)?.trim().to_string();
    let at_risk = delta(run, head.as_deref(), &tree)?;
    if at_risk.is_empty() {
        return Ok(match (too_big.is_empty(), users.is_empty()) {
            (false, _) => Outcome::TooBig(too_big),
            (true, false) => Outcome::UsersOnly(users),
            (true, true) => Outcome::Clean,
        });
    }
    let taken = kept(run, session);
    if let Some(latest) = taken.last() {
        if delta(run, latest.parent.as_deref(), &latest.commit)? == at_risk {
            return Ok(Outcome::Unchanged { reference: latest.reference.clone(), commit: latest.commit.clone() });
        }
    }
    let mut args = vec!["commit-tree", tree.as_str(), "-m", message];
    if let Some(head) = &head {
        args.extend(["-p", head.as_str()]);
    }
    let commit = run.git(&args, &[])?.trim().to_string();
    // The next number; an empty old value makes git refuse to move a ref that exists.
    let next = taken.last().map_or(0, |k| k.n) + 1;
    for n in next..next + 100 {
        let reference = format!("{REF_PREFIX}/{session}/{n}");
        if run.git(&["update-ref", "-m", "nightshift salvage", &reference, &commit, ""], &[]).is_ok() {
            let (files, bytes) = changes(repo, head.as_deref(), &commit);
            let snapshot = Snapshot { repo: repo.to_path_buf(), reference, commit, files, bytes };
            return Ok(Outcome::Saved { snapshot, users, too_big });
        }
        if Instant::now() >= run.until {
            break;
        }
    }
    Err(run.why("update-ref refused every number", &["update-ref"]))
}

/// A snapshot's ref as `for-each-ref` lists it.
struct Kept {
    n: u64,
    reference: String,
    commit: String,
    /// The commit it was taken on (HEAD then; `None` in a repository with no commit yet).
    parent: Option<String>,
}

/// What `tree` changes from `base`'s (a commit, or nothing: the empty tree), entry by entry: the
/// path, what it became and its mode. Two snapshots with the same delta hold the same work at risk.
fn delta(run: &Run<'_>, base: Option<&str>, tree: &str) -> Result<std::collections::BTreeSet<String>, String> {
    let base = base.map_or_else(|| EMPTY_TREE.to_string(), |b| format!("{b}^{{tree}}"));
    let raw = run.git(&["diff-tree", "-r", "-z", "--no-renames", "--raw", &base, tree], &[])?;
    let mut fields = raw.split('\0').filter(|f| !f.is_empty());
    let mut out = std::collections::BTreeSet::new();
    while let (Some(meta), Some(path)) = (fields.next(), fields.next()) {
        // `:old-mode new-mode old-sha new-sha status`: what it became is the new mode and sha.
        let parts: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        let (mode, sha) = (parts.get(1).copied().unwrap_or_default(), parts.get(3).copied().unwrap_or_default());
        out.insert(format!("{mode} {sha} {path}"));
    }
    Ok(out)
}

/// git's tree with nothing in it.
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// The session's snapshots in the repository, by number (one git call, no diffs).
fn kept(run: &Run<'_>, session: &str) -> Vec<Kept> {
    let prefix = format!("{REF_PREFIX}/{session}/");
    let out = run.git(&["for-each-ref", "--format=%(refname)%09%(objectname)%09%(parent)", &prefix], &[]);
    let mut kept: Vec<Kept> = out
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut fields = l.split('\t');
            let (reference, commit) = (fields.next()?, fields.next()?);
            let parent = fields.next().filter(|p| !p.is_empty()).map(String::from);
            let n = reference.strip_prefix(&prefix)?.parse().ok()?;
            Some(Kept { n, reference: reference.into(), commit: commit.into(), parent })
        })
        .collect();
    kept.sort_by_key(|k| k.n);
    kept
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
    let base = parent.as_deref().map(str::trim).unwrap_or(EMPTY_TREE);
    let patch = super::output(repo, &["diff", "--binary", base, reference], &[])?;
    match super::output_until(repo, &["apply", "--whitespace=nowarn", "-"], &[], Some(patch.as_bytes()), far()) {
        Ok(_) => Ok(()),
        Err(said) => Err(format!(
            "the snapshot does not apply to this commit ({said}); restore it onto a new branch with --branch NAME"
        )),
    }
}

/// The deadline of a call the user waits for.
fn far() -> Instant {
    Instant::now() + super::DEFAULT_LIMIT
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

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

    /// A repository whose one commit holds `a.txt`.
    fn committed() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path();
        git(repo, &["init", "-q"]);
        std::fs::write(repo.join("a.txt"), "a\n").unwrap();
        git(repo, &["add", "."]);
        git(repo, &["commit", "-qm", "start"]);
        tmp
    }

    fn saved(outcome: Outcome) -> (String, Vec<String>) {
        match outcome {
            Outcome::Saved { snapshot, users, .. } => (snapshot.reference, users),
            other => panic!("not saved: {other:?}"),
        }
    }

    #[test]
    fn only_a_tree_unlike_the_latest_snapshot_makes_a_ref() {
        let tmp = committed();
        let repo = tmp.path();
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
    fn an_empty_untracked_file_holds_no_work_but_an_emptied_tracked_one_does() {
        let tmp = committed();
        let repo = tmp.path();
        // What Claude's sandbox leaves in the folder: an empty file at each start-up file it guards.
        for name in [".bash_profile", ".bashrc", ".gitmodules"] {
            std::fs::write(repo.join(name), "").unwrap();
        }
        assert_eq!(snapshot(repo, "s1", "m", None), Outcome::Clean, "nothing there is work");
        std::fs::write(repo.join("notes.txt"), "the agent's\n").unwrap();
        let (first, _) = saved(snapshot(repo, "s1", "m", None));
        let stored = git(repo, &["ls-tree", "-r", "--name-only", &first]);
        assert!(stored.contains("notes.txt") && !stored.contains(".bash_profile"), "{stored}");
        // A tracked file emptied is a change to keep.
        std::fs::remove_file(repo.join("notes.txt")).unwrap();
        std::fs::write(repo.join("a.txt"), "").unwrap();
        let (second, _) = saved(snapshot(repo, "s1", "m", None));
        assert!(git(repo, &["ls-tree", "-r", "--name-only", &second]).contains("a.txt"));
    }

    /// A repository whose config and attributes name a filter, an fsmonitor and diff drivers that
    /// would each leave `marker`: the agent writes such config as easily as any file.
    fn hostile_repo(repo: &Path, marker: &Path) {
        git(repo, &["init", "-q"]);
        git(repo, &["commit", "-q", "--allow-empty", "-m", "start"]);
        let touch = format!("touch '{}'", marker.display());
        for (key, value) in [
            ("filter.evil.clean", format!("{touch}; cat")),
            ("filter.evil.smudge", format!("{touch}; cat")),
            ("filter.evil.process", touch.clone()),
            ("filter.evil.required", "true".to_string()),
            ("filter.x.y.clean", format!("{touch}; cat")),
            ("diff.evil.textconv", format!("{touch}; cat")),
            ("diff.evil.command", touch.clone()),
            ("diff.external", touch.clone()),
            ("core.fsmonitor", touch.clone()),
            ("core.hooksPath", repo.join("hooks").display().to_string()),
        ] {
            git(repo, &["config", key, &value]);
        }
        std::fs::create_dir_all(repo.join("hooks")).unwrap();
        for hook in ["reference-transaction", "post-commit", "post-index-change"] {
            let path = repo.join("hooks").join(hook);
            std::fs::write(&path, format!("#!/bin/sh\n{touch}\n")).unwrap();
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        }
        std::fs::write(repo.join(".gitattributes"), "* filter=evil diff=evil\n*.y filter=x.y\n").unwrap();
    }

    #[test]
    fn nothing_the_repository_configures_runs_while_its_work_is_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, marker) = (tmp.path().join("repo"), tmp.path().join("ran"));
        std::fs::create_dir_all(&repo).unwrap();
        hostile_repo(&repo, &marker);
        std::fs::write(repo.join("work.txt"), "the agent's work\n").unwrap();
        std::fs::write(repo.join("more.y"), "more\n").unwrap();
        let (reference, _) = saved(snapshot(&repo, "s1", "m", None));
        assert!(!marker.exists(), "a command the repository configured ran");
        assert_eq!(git(&repo, &["cat-file", "-p", &format!("{reference}:work.txt")]), "the agent's work\n");
        assert!(list(&repo, Some("s1"))[0].files.iter().any(|c| c.path == "work.txt"));
        show(&repo, &reference).unwrap();
        assert!(!marker.exists(), "a diff driver ran for `salvage show`");
    }

    #[test]
    fn a_file_over_the_limit_is_listed_and_not_stored() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path();
        git(repo, &["init", "-q"]);
        git(repo, &["commit", "-q", "--allow-empty", "-m", "start"]);
        let big: Vec<u8> = (0..3_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        std::fs::write(repo.join("model.bin"), &big).unwrap();
        std::fs::write(repo.join("notes.txt"), "small\n").unwrap();
        let limits = Limits { max_file: 1 << 20, ..Limits::default() };
        let Outcome::Saved { snapshot, too_big, .. } = snapshot_within(repo, "s1", "m", None, limits) else {
            panic!("the small file is kept")
        };
        assert_eq!(snapshot.files.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(), ["notes.txt"]);
        assert_eq!(too_big, [TooBig { path: "model.bin".into(), bytes: 3_000_000 }]);
        let stored = git(repo, &["count-objects", "-v"]);
        let size_kib: u64 = stored.lines().find_map(|l| l.strip_prefix("size: ")).unwrap().trim().parse().unwrap();
        assert!(size_kib < 100, "the big file went into the objects: {stored}");
    }

    #[test]
    fn a_git_that_hangs_is_given_up_on_in_time_saying_so() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path();
        git(repo, &["init", "-q"]);
        git(repo, &["commit", "-q", "--allow-empty", "-m", "start"]);
        std::fs::write(repo.join("work.txt"), "work\n").unwrap();
        // git opens this to read it, and a FIFO with no writer blocks the open for ever.
        nix::unistd::mkfifo(&repo.join(".git/objects/info/alternates"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let started = std::time::Instant::now();
        let outcome = snapshot_within(
            repo,
            "s1",
            "m",
            None,
            Limits { time: std::time::Duration::from_secs(2), ..Limits::default() },
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "took {:?}", started.elapsed());
        let Outcome::Refused(why) = outcome else { panic!("{outcome:?}") };
        assert!(why.starts_with("gave up after 2 s"), "{why}");
    }

    /// Sets `path`'s modification time `ago` before `at`.
    fn touched(path: &Path, at: SystemTime, ago: std::time::Duration) {
        std::fs::File::options().write(true).open(path).unwrap().set_modified(at - ago).unwrap();
    }

    #[test]
    fn a_snapshot_is_due_only_when_what_is_at_risk_changed_not_when_head_moved() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path();
        git(repo, &["init", "-q"]);
        git(repo, &["commit", "-q", "--allow-empty", "-m", "start"]);
        std::fs::write(repo.join("draft.txt"), "the agent's draft\n").unwrap();
        let (first, _) = saved(snapshot(repo, "s1", "m", None));
        // The agent commits other work: HEAD moves, the draft at risk is the same.
        for step in 1..=3 {
            std::fs::write(repo.join("work.txt"), format!("step {step}\n")).unwrap();
            git(repo, &["add", "work.txt"]);
            git(repo, &["commit", "-qm", &format!("step {step}")]);
            let again = snapshot(repo, "s1", "m", None);
            assert!(
                matches!(&again, Outcome::Unchanged { reference, .. } if *reference == first),
                "step {step}: {again:?}"
            );
        }
        // The draft changes: what is at risk changed, so a snapshot is due.
        std::fs::write(repo.join("draft.txt"), "the agent's draft, longer\n").unwrap();
        assert_eq!(saved(snapshot(repo, "s1", "m", None)).0, "refs/nightshift/salvage/s1/2");
        // The agent commits the draft: nothing is at risk any more.
        git(repo, &["add", "draft.txt"]);
        git(repo, &["commit", "-qm", "the draft"]);
        assert_eq!(snapshot(repo, "s1", "m", None), Outcome::Clean);
    }

    #[test]
    fn the_users_own_untouched_files_are_never_stored_as_the_agents_work() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path();
        git(repo, &["init", "-q"]);
        std::fs::write(repo.join("tracked.txt"), "as committed\n").unwrap();
        git(repo, &["add", "."]);
        git(repo, &["commit", "-qm", "start"]);
        let began = SystemTime::now();
        let hour = std::time::Duration::from_secs(3600);
        // The user's, from before the session: an untracked file and an edit of a tracked one.
        std::fs::write(repo.join("mine.txt"), "the user's\n").unwrap();
        touched(&repo.join("mine.txt"), began, hour);
        std::fs::write(repo.join("tracked.txt"), "the user's edit\n").unwrap();
        touched(&repo.join("tracked.txt"), began, hour);
        let only_theirs = snapshot(repo, "s1", "m", Some(began));
        assert_eq!(only_theirs, Outcome::UsersOnly(vec!["mine.txt".into(), "tracked.txt".into()]));
        // The agent's file, after the session began: kept, and alone.
        std::fs::write(repo.join("agent.txt"), "the agent's\n").unwrap();
        let Outcome::Saved { snapshot: s, users, .. } = snapshot(repo, "s1", "m", Some(began)) else {
            panic!("the agent's work is kept")
        };
        assert_eq!(s.files.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(), ["agent.txt"]);
        assert_eq!(users, ["mine.txt", "tracked.txt"], "listed as the user's");
        let stored = git(repo, &["ls-tree", "-r", "--name-only", &s.reference]);
        assert!(!stored.contains("mine.txt"), "{stored}");
        assert_eq!(git(repo, &["show", &format!("{}:tracked.txt", s.reference)]), "as committed\n");
        // The user's file touched again (by the agent, after the start): it is at risk now.
        std::fs::write(repo.join("mine.txt"), "the user's, changed by the agent\n").unwrap();
        let Outcome::Saved { snapshot: s, users, .. } = snapshot(repo, "s1", "m", Some(began)) else {
            panic!("a changed file is kept")
        };
        assert!(s.files.iter().any(|c| c.path == "mine.txt") && users == ["tracked.txt"], "{:?} {users:?}", s.files);
    }
}
