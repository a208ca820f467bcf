//! The handoffs agents write before their context fills, kept in the state directory (never the
//! repository): `<state>/handoffs/<session>/<UTC stamp>.md` for each, and `latest.md`, which the
//! window shows.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Serialize;

/// Where `session`'s handoffs are kept.
pub fn dir(state_dir: &Path, session: &str) -> PathBuf {
    state_dir.join("handoffs").join(session)
}

/// Keeps `text` as `session`'s latest handoff, written at `now`.
pub fn keep(state_dir: &Path, session: &str, now: DateTime<Utc>, text: &str) -> std::io::Result<PathBuf> {
    let dir = dir(state_dir, session);
    crate::paths::private_dirs(&dir)?;
    crate::paths::write_private(&dir.join(format!("{}.md", now.format("%Y%m%dT%H%M%SZ"))), text)?;
    let latest = dir.join("latest.md");
    crate::paths::write_private(&latest, text)?;
    Ok(latest)
}

/// A kept handoff, as the window shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Kept {
    pub text: String,
    /// When it was written.
    #[serde(with = "crate::clock::ts")]
    pub written: DateTime<Utc>,
    pub path: PathBuf,
}

/// `session`'s latest handoff, if it wrote one.
pub fn latest(state_dir: &Path, session: &str) -> std::io::Result<Option<Kept>> {
    let path = dir(state_dir, session).join("latest.md");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let written = std::fs::metadata(&path)?.modified()?.into();
    Ok(Some(Kept { text, written, path }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_handoff_is_kept_beside_each_one_and_read_back() {
        let state = tempfile::tempdir().unwrap();
        assert_eq!(latest(state.path(), "s1").unwrap(), None, "none written yet");
        let at: DateTime<Utc> = "2026-12-01T02:10:00Z".parse().unwrap();
        keep(state.path(), "s1", at, "first").unwrap();
        let path = keep(state.path(), "s1", at + chrono::Duration::minutes(40), "second").unwrap();
        let kept = latest(state.path(), "s1").unwrap().unwrap();
        assert_eq!((kept.text.as_str(), kept.path), ("second", path));
        let all = std::fs::read_dir(dir(state.path(), "s1")).unwrap().count();
        assert_eq!(all, 3, "two stamped handoffs and latest.md");
        assert_eq!(latest(state.path(), "s2").unwrap(), None, "per session");
    }
}
