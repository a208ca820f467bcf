//! A fingerprint of a working tree's content: two that differ mean the agent changed something.
//!
//! In a git repository it is the tree git would write for the working tree as it is — tracked files
//! with their current content, deleted ones gone, untracked files that are not ignored — built with
//! `git add -A` into a *temporary* index (a copy of the user's, so unchanged files are not hashed
//! again) and a temporary object directory that borrows the repository's objects, then `git
//! write-tree`. The user's index, objects, HEAD and branches are never touched. Outside git it is a
//! bounded walk of the directory's file names, sizes and modification times.
//!
//! Paths in `exclude` (relative to the directory) do not count: the files a respawn cycle's own
//! prompts write (`PROGRESS.md`, the `CLAUDE.md` of `/init`) are not the agent's progress.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use super::run;

pub use nightshift_model::repo::Fingerprint;

/// Entries looked at outside git, at most: a home directory must not take minutes.
const WALK_LIMIT: usize = 20_000;
/// Directories deeper than this are not walked outside git.
const WALK_DEPTH: usize = 8;

/// The fingerprint of `dir`'s content without `exclude`; `None` when `dir` cannot be read at all.
pub fn fingerprint(dir: &Path, exclude: &[String]) -> Option<Fingerprint> {
    if !dir.is_dir() {
        return None;
    }
    match git_tree(dir, exclude) {
        Some(tree) => Some(Fingerprint::new(format!("git:{tree}"))),
        None if run(dir, &["rev-parse", "--is-inside-work-tree"], &[]).is_some() => None,
        None => Some(walk(dir, exclude)),
    }
}

/// The tree of the working tree, written to a temporary index and object directory.
fn git_tree(dir: &Path, exclude: &[String]) -> Option<String> {
    let paths = run(dir, &["rev-parse", "--show-toplevel", "--git-path", "index", "--git-path", "objects"], &[])?;
    let mut lines = paths.lines();
    let (toplevel, index, objects) = (lines.next()?, lines.next()?, lines.next()?);
    let absolute = |p: &str| if Path::new(p).is_absolute() { PathBuf::from(p) } else { dir.join(p) };
    let (index, objects) = (absolute(index), absolute(objects));
    let scratch = tempfile::Builder::new().prefix("nightshift-fingerprint-").tempdir().ok()?;
    let temp_index = scratch.path().join("index");
    let temp_objects = scratch.path().join("objects");
    std::fs::create_dir(&temp_objects).ok()?;
    let env = [
        ("GIT_INDEX_FILE", temp_index.as_os_str()),
        ("GIT_OBJECT_DIRECTORY", temp_objects.as_os_str()),
        ("GIT_ALTERNATE_OBJECT_DIRECTORIES", objects.as_os_str()),
    ];
    let hash = |copy_index: bool| -> Option<String> {
        if copy_index && index.exists() {
            std::fs::copy(&index, &temp_index).ok()?;
            // The copy keeps the index's own time: git takes an entry changed in the same second
            // as its index for racily clean and reads it again; a copy stamped now would hide an
            // edit that kept the file's size.
            let written = std::fs::metadata(&index).and_then(|m| m.modified()).ok()?;
            std::fs::File::options().write(true).open(&temp_index).and_then(|f| f.set_modified(written)).ok()?;
        } else {
            let _ = std::fs::remove_file(&temp_index);
        }
        run(Path::new(toplevel), &["add", "-A", "--", "."], &env)?;
        if !exclude.is_empty() {
            let mut rm = vec!["rm", "--cached", "-r", "-q", "--ignore-unmatch", "--"];
            rm.extend(exclude.iter().map(String::as_str));
            run(dir, &rm, &env)?;
        }
        run(dir, &["write-tree"], &env).map(|t| t.trim().to_string())
    };
    // A copied index spares hashing every unchanged file again; an index git cannot use from
    // elsewhere (a split index) is done without.
    hash(true).or_else(|| hash(false))
}

/// Names, sizes and modification times under `dir`, within the walk's bounds.
fn walk(dir: &Path, exclude: &[String]) -> Fingerprint {
    let excluded: Vec<PathBuf> = exclude.iter().map(|e| dir.join(e)).collect();
    let mut hasher = std::hash::DefaultHasher::new();
    let mut seen = 0usize;
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    while let Some((at, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else { continue };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            if seen >= WALK_LIMIT {
                break;
            }
            let path = entry.path();
            if excluded.contains(&path) {
                continue;
            }
            seen += 1;
            let Ok(meta) = entry.metadata() else { continue };
            path.strip_prefix(dir).unwrap_or(&path).hash(&mut hasher);
            if meta.is_dir() {
                if depth < WALK_DEPTH && !meta.is_symlink() {
                    stack.push((path, depth + 1));
                }
            } else {
                meta.len().hash(&mut hasher);
                meta.modified().ok().hash(&mut hasher);
            }
        }
    }
    Fingerprint::new(format!("walk:{:016x}:{seen}", hasher.finish()))
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

    /// What the user's repository holds that a fingerprint must never change.
    fn state(dir: &Path) -> (Vec<u8>, String, Vec<String>) {
        let index = std::fs::read(dir.join(".git/index")).unwrap_or_default();
        let out = Command::new("git").args(["status", "--porcelain"]).current_dir(dir).output().unwrap();
        let mut objects: Vec<String> = walkdir(dir.join(".git/objects"));
        objects.sort();
        (index, String::from_utf8(out.stdout).unwrap(), objects)
    }

    fn walkdir(dir: PathBuf) -> Vec<String> {
        let mut out = vec![];
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                out.extend(walkdir(e.path()));
            } else {
                out.push(e.path().display().to_string());
            }
        }
        out
    }

    #[test]
    fn edits_count_untracked_ones_too_and_the_repository_is_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q"]);
        std::fs::write(dir.join("a.txt"), "one").unwrap();
        git(dir, &["add", "a.txt"]);
        git(dir, &["commit", "-qm", "one"]);
        std::fs::write(dir.join("new.rs"), "fn a() {}").unwrap();
        let before_state = state(dir);
        let before = fingerprint(dir, &[]).unwrap();
        assert!(before.as_str().starts_with("git:"), "{before:?}");
        assert_eq!(state(dir), before_state, "index, status and objects untouched");
        assert_eq!(fingerprint(dir, &[]).unwrap(), before, "nothing moved");

        std::fs::write(dir.join("new.rs"), "fn a() { b() }").unwrap();
        let edited = fingerprint(dir, &[]).unwrap();
        assert_ne!(edited, before, "rewriting an untracked file is progress");
        std::fs::write(dir.join("a.txt"), "two").unwrap();
        assert_ne!(fingerprint(dir, &[]).unwrap(), edited, "editing a tracked one too");
        std::fs::remove_file(dir.join("a.txt")).unwrap();
        let deleted = fingerprint(dir, &[]).unwrap();
        std::fs::write(dir.join(".gitignore"), "build/\n").unwrap();
        let ignoring = fingerprint(dir, &[]).unwrap();
        assert_ne!(deleted, ignoring);
        std::fs::create_dir(dir.join("build")).unwrap();
        std::fs::write(dir.join("build/out.o"), "binary").unwrap();
        assert_eq!(fingerprint(dir, &[]).unwrap(), ignoring, "ignored files are not progress");
        let mid = state(dir);
        fingerprint(dir, &[]).unwrap();
        assert_eq!(state(dir), mid, "still untouched");
    }

    #[test]
    fn the_cycles_own_notes_are_not_progress() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q"]);
        std::fs::write(dir.join("lib.rs"), "fn a() {}").unwrap();
        let own = vec!["PROGRESS.md".to_string(), "CLAUDE.md".to_string()];
        let before = fingerprint(dir, &own).unwrap();
        std::fs::write(dir.join("PROGRESS.md"), "done: a").unwrap();
        std::fs::write(dir.join("CLAUDE.md"), "# project").unwrap();
        assert_eq!(fingerprint(dir, &own).unwrap(), before, "only the cycle's own files changed");
        std::fs::write(dir.join("lib.rs"), "fn a() { b() }").unwrap();
        assert_ne!(fingerprint(dir, &own).unwrap(), before);
    }

    #[test]
    fn a_subdirectory_of_a_repository_is_measured_as_the_whole_tree() {
        let tmp = tempfile::tempdir().unwrap();
        git(tmp.path(), &["init", "-q"]);
        let sub = tmp.path().join("service");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("PROGRESS.md"), "x").unwrap();
        let own = vec!["PROGRESS.md".to_string()];
        let before = fingerprint(&sub, &own).unwrap();
        std::fs::write(sub.join("PROGRESS.md"), "y").unwrap();
        assert_eq!(
            fingerprint(&sub, &own).unwrap(),
            before,
            "the excluded path is relative to the session's directory"
        );
        std::fs::write(tmp.path().join("root.txt"), "z").unwrap();
        assert_ne!(fingerprint(&sub, &own).unwrap(), before, "an edit elsewhere in the repository counts");
    }

    #[test]
    fn outside_git_a_walk_sees_edits() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join("notes.txt"), "one").unwrap();
        let own = vec!["PROGRESS.md".to_string()];
        let before = fingerprint(dir, &own).unwrap();
        assert!(before.as_str().starts_with("walk:"), "{before:?}");
        std::fs::write(dir.join("PROGRESS.md"), "mine").unwrap();
        assert_eq!(fingerprint(dir, &own).unwrap(), before);
        std::fs::write(dir.join("notes.txt"), "one and two").unwrap();
        assert_ne!(fingerprint(dir, &own).unwrap(), before);
        assert_eq!(fingerprint(&dir.join("missing"), &own), None);
    }
}
