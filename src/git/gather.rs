//! What a handoff Nightshift builds reads of the working folder (see
//! `nightshift_model::session::handoff`): the commits since the session began, what is not
//! committed, and the files the session's prompts name.
//!
//! The folder is the agent's: it may have made a named file a link to the user's secrets (which
//! its sandbox keeps it from reading), a FIFO that hangs a reader, or a repository whose config
//! runs commands. So git runs with the safe options every call here has and no optional locks (the
//! index is never written), and a file is read only when it is a regular file whose real path is
//! inside the folder, opened without following a last link and without blocking, at most
//! [`READ_MAX`] bytes.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use chrono::{DateTime, Utc};
use nightshift_model::session::handoff::{Gathered, Named};

/// The most of a named file read.
pub const READ_MAX: u64 = 16 * 1024;

/// The folder at `dir` for a handoff: commits on its branch since `since` (oldest first), the
/// paths not committed, and `files` as they stand.
pub fn gather(dir: &Path, since: DateTime<Utc>, files: &[String]) -> Gathered {
    let mut gathered = Gathered::default();
    let no_locks = [("GIT_OPTIONAL_LOCKS", std::ffi::OsStr::new("0"))];
    let after = format!("--since=@{}", since.timestamp());
    match super::output(dir, &["log", "--no-merges", "--reverse", "--format=%h %s", &after, "HEAD"], &no_locks) {
        Ok(out) => gathered.commits = out.lines().map(str::to_string).collect(),
        Err(why) => gathered.unread.push(format!("the commits (git: {why})")),
    }
    match super::output(dir, &["status", "--porcelain=v1", "--untracked-files=all"], &no_locks) {
        Ok(out) => gathered.uncommitted = out.lines().map(str::to_string).collect(),
        Err(why) => gathered.unread.push(format!("the working tree's changes (git: {why})")),
    }
    for name in files {
        match read_inside(dir, name) {
            Ok(Some(text)) => gathered.files.push(Named { name: name.clone(), text }),
            Ok(None) => {}
            Err(why) => gathered.unread.push(format!("{name} ({why})")),
        }
    }
    gathered
}

/// `name` in `dir` as text, when it is a regular file inside `dir` (`None`: there is none).
fn read_inside(dir: &Path, name: &str) -> Result<Option<String>, String> {
    let relative = Path::new(name);
    if relative.is_absolute() || relative.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return Err("not a path inside the folder".into());
    }
    let path = dir.join(relative);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(&path);
    let mut file = match file {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => return Err("a link, not read".into()),
        Err(e) => return Err(e.to_string()),
    };
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    // Where the open file really is: a link among the folders on the way may lead out.
    let real = std::fs::read_link(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&file)))
        .map_err(|e| e.to_string())?;
    let root = std::fs::canonicalize(dir).map_err(|e| e.to_string())?;
    if !real.starts_with(&root) {
        return Err("outside the folder, not read".into());
    }
    let mut bytes = Vec::new();
    (&mut file).take(READ_MAX).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn the_folder_is_read_for_a_handoff_commits_changes_and_named_files() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q", "-b", "main"]);
        std::fs::write(dir.join("a.txt"), "a").unwrap();
        git(dir, &["add", "."]);
        git(dir, &["commit", "-qm", "Before the session"]);
        // Commit times are to the second.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let since = Utc::now();
        std::thread::sleep(std::time::Duration::from_millis(1100));
        for (file, subject) in [("b.txt", "First step"), ("c.txt", "Second step")] {
            std::fs::write(dir.join(file), file).unwrap();
            git(dir, &["add", "."]);
            git(dir, &["commit", "-qm", subject]);
        }
        std::fs::write(dir.join("a.txt"), "changed").unwrap();
        std::fs::write(dir.join("TASKS.md"), "- [x] one\n- [ ] two\n").unwrap();
        let index = std::fs::metadata(dir.join(".git/index")).unwrap().modified().unwrap();
        let g = gather(dir, since, &["TASKS.md".into(), "PROGRESS.md".into()]);
        let subjects: Vec<&str> = g.commits.iter().map(|c| c.split_once(' ').unwrap().1).collect();
        assert_eq!(subjects, ["First step", "Second step"], "since the session began, oldest first");
        assert_eq!(g.uncommitted, [" M a.txt", "?? TASKS.md"]);
        assert_eq!(g.files, [Named { name: "TASKS.md".into(), text: "- [x] one\n- [ ] two\n".into() }]);
        assert!(g.unread.is_empty(), "{:?}", g.unread);
        assert_eq!(
            std::fs::metadata(dir.join(".git/index")).unwrap().modified().unwrap(),
            index,
            "the index untouched"
        );
    }

    #[test]
    fn a_named_file_that_leads_out_of_the_folder_is_never_read() {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, outside) = (tmp.path().join("p"), tmp.path().join("secret"));
        std::fs::create_dir_all(dir.join("notes")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("key"), "SECRET-KEY").unwrap();
        std::os::unix::fs::symlink(outside.join("key"), dir.join("PROGRESS.md")).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("up")).unwrap();
        nix::unistd::mkfifo(&dir.join("PLAN.md"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::fs::write(dir.join("notes/ok.md"), "fine").unwrap();
        let names = ["PROGRESS.md", "up/key", "../secret/key", "/etc/hostname", "PLAN.md", "notes/ok.md"];
        let g = gather(&dir, Utc::now(), &names.map(String::from));
        let read: Vec<&str> = g.files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(read, ["notes/ok.md"], "only the regular file inside: {:?}", g.unread);
        assert!(g.files.iter().all(|f| !f.text.contains("SECRET")));
        assert_eq!(g.unread.len(), 2 + 5, "the commits and changes (no repository) and five files: {:?}", g.unread);
    }
}
