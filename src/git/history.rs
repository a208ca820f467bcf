//! What a repository says happened: the commits made in a range, their size, and the changes not
//! committed yet (at risk if the machine dies).

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// git's empty tree: the base when the repository was born inside the range.
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Commit {
    pub hash: String,
    pub subject: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stat {
    pub files: u32,
    pub insertions: u32,
    pub deletions: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitProgress {
    /// Newest first.
    pub commits: Vec<Commit>,
    /// The committed change over the range.
    pub committed: Stat,
    /// Changes in the working tree now, not committed.
    pub uncommitted: Stat,
    pub untracked: u32,
    /// Work that exists only in the working tree.
    pub at_risk: bool,
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    super::run(dir, args, &[])
}

/// `3 files changed, 10 insertions(+), 2 deletions(-)`
fn shortstat(text: &str) -> Stat {
    let mut stat = Stat::default();
    for part in text.trim().split(',') {
        let mut words = part.split_whitespace();
        let (Some(n), Some(what)) = (words.next().and_then(|n| n.parse().ok()), words.next()) else { continue };
        if what.starts_with("file") {
            stat.files = n;
        } else if what.starts_with("insertion") {
            stat.insertions = n;
        } else if what.starts_with("deletion") {
            stat.deletions = n;
        }
    }
    stat
}

/// The repository at `dir` over `[from, to)`; `None` when `dir` is not in one.
pub fn progress(dir: &Path, from: DateTime<Utc>, to: DateTime<Utc>) -> Option<GitProgress> {
    git(dir, &["rev-parse", "--is-inside-work-tree"])?;
    let (since, until) = (from.to_rfc3339(), to.to_rfc3339());
    let has_head = git(dir, &["rev-parse", "--verify", "-q", "HEAD"]).is_some();
    let mut commits = Vec::new();
    let mut committed = Stat::default();
    if has_head {
        let log = git(dir, &["log", &format!("--since={since}"), &format!("--until={until}"), "--format=%H%x1f%s"])
            .unwrap_or_default();
        commits = log
            .lines()
            .filter_map(|l| l.split_once('\u{1f}'))
            .map(|(h, s)| Commit { hash: h.to_string(), subject: s.to_string() })
            .collect();
        if !commits.is_empty() {
            let rev = |before: &str| {
                git(dir, &["rev-list", "-1", &format!("--before={before}"), "HEAD"])
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
            };
            let base = rev(&since).unwrap_or_else(|| EMPTY_TREE.to_string());
            let tip = rev(&until).unwrap_or_else(|| "HEAD".to_string());
            committed = shortstat(&git(dir, &["diff", "--shortstat", &base, &tip]).unwrap_or_default());
        }
    }
    let uncommitted = if has_head {
        shortstat(&git(dir, &["diff", "HEAD", "--shortstat"]).unwrap_or_default())
    } else {
        Stat::default()
    };
    let untracked = git(dir, &["ls-files", "--others", "--exclude-standard"]).map_or(0, |t| t.lines().count() as u32);
    let at_risk = uncommitted.files > 0 || untracked > 0;
    Some(GitProgress { commits, committed, uncommitted, untracked, at_risk })
}

/// The commits made in `[from, to)` in the repository at `dir` (any branch's, newest first), with
/// their commit times, for marks on a timeline.
pub fn commits_between(dir: &Path, from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<(DateTime<Utc>, Commit)> {
    let since = format!("--since=@{}", from.timestamp());
    let until = format!("--until=@{}", to.timestamp());
    let Some(out) = git(dir, &["log", "--all", "--no-merges", "--format=%H%x09%ct%x09%s", &since, &until]) else {
        return Vec::new();
    };
    out.lines()
        .filter_map(|line| {
            let mut cols = line.splitn(3, '\t');
            let hash = cols.next()?.to_string();
            let at = DateTime::from_timestamp(cols.next()?.parse().ok()?, 0)?;
            let subject = cols.next().unwrap_or_default().to_string();
            (at >= from && at < to).then_some((at, Commit { hash, subject }))
        })
        .collect()
}

/// Whether the night's commits reached a remote, from what git already knows (no network call).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Delivery {
    pub branch: Option<String>,
    /// The branch's upstream (`origin/main`), when it has one.
    pub upstream: Option<String>,
    /// Commits on the branch that its upstream lacks, and the other way round.
    pub ahead: u32,
    pub behind: u32,
    /// Commits made since the range's start that are on no remote branch, newest first.
    pub unpushed: Vec<Commit>,
    /// The repository has a remote at all.
    pub has_remote: bool,
}

impl Delivery {
    /// Something the user should do before trusting the night's work is safe.
    pub fn needs_you(&self) -> Option<String> {
        let mut parts = Vec::new();
        // A repository with no remote at all is the user's choice: nothing to push to.
        if !self.unpushed.is_empty() && self.has_remote {
            parts.push(format!("{} commit(s) from tonight on no remote branch", self.unpushed.len()));
        }
        if self.behind > 0 {
            let upstream = self.upstream.as_deref().unwrap_or("its upstream");
            parts.push(format!("{upstream} moved: {} commit(s) there the branch lacks", self.behind));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// The delivery of the repository at `dir` for commits made since `from`; `None` outside a repository.
pub fn delivery(dir: &Path, from: DateTime<Utc>) -> Option<Delivery> {
    git(dir, &["rev-parse", "--verify", "-q", "HEAD"])?;
    let branch = git(dir, &["symbolic-ref", "-q", "--short", "HEAD"]).map(|b| b.trim().to_string());
    let upstream =
        git(dir, &["rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}"]).map(|u| u.trim().to_string());
    let (ahead, behind) = upstream
        .as_ref()
        .and_then(|_| git(dir, &["rev-list", "--left-right", "--count", "HEAD...@{upstream}"]))
        .and_then(|counts| {
            let mut it = counts.split_whitespace().map(|n| n.parse::<u32>().ok());
            Some((it.next()??, it.next()??))
        })
        .unwrap_or((0, 0));
    let has_remote = git(dir, &["remote"]).is_some_and(|r| !r.trim().is_empty());
    let since = format!("--since=@{}", from.timestamp());
    let unpushed = git(dir, &["log", "--format=%H%x09%s", &since, "HEAD", "--not", "--remotes"])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (hash, subject) = l.split_once('\t')?;
            Some(Commit { hash: hash.to_string(), subject: subject.to_string() })
        })
        .collect();
    Some(Delivery { branch, upstream, ahead, behind, unpushed, has_remote })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortstat_lines_are_read() {
        assert_eq!(
            shortstat(" 3 files changed, 10 insertions(+), 2 deletions(-)\n"),
            Stat { files: 3, insertions: 10, deletions: 2 }
        );
        assert_eq!(shortstat(" 1 file changed, 1 deletion(-)"), Stat { files: 1, insertions: 0, deletions: 1 });
        assert_eq!(shortstat(""), Stat::default());
    }

    #[test]
    fn commits_in_a_range_come_with_their_times() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str], date: &str| {
            let ok = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
                .args(args)
                .current_dir(dir.path())
                .env("GIT_COMMITTER_DATE", date)
                .env("GIT_AUTHOR_DATE", date)
                .output()
                .unwrap()
                .status
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"], "2026-12-01T20:00:00Z");
        git(&["commit", "-q", "--allow-empty", "-m", "before the night"], "2026-12-01T20:00:00Z");
        git(&["commit", "-q", "--allow-empty", "-m", "parser done"], "2026-12-02T01:15:00Z");
        let from: DateTime<Utc> = "2026-12-01T22:00:00Z".parse().unwrap();
        let to: DateTime<Utc> = "2026-12-02T08:00:00Z".parse().unwrap();
        let found = commits_between(dir.path(), from, to);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, "2026-12-02T01:15:00Z".parse::<DateTime<Utc>>().unwrap());
        assert_eq!(found[0].1.subject, "parser done");
        assert!(commits_between(&dir.path().join("nope"), from, to).is_empty());
    }
}
