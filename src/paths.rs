//! Where Nightshift keeps things: the state directory (journal, logs) and the runtime directory
//! (control sockets). Neither is ever inside a session's working directory.

use std::fs::DirBuilder;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Overrides the state directory (same as `--state-dir`).
pub const STATE_DIR_ENV: &str = "NIGHTSHIFT_STATE_DIR";
/// Overrides the runtime directory that holds the control sockets.
pub const RUNTIME_DIR_ENV: &str = "NIGHTSHIFT_RUNTIME_DIR";
/// Overrides the configuration directory (settings, agent signal overrides).
pub const CONFIG_DIR_ENV: &str = "NIGHTSHIFT_CONFIG_DIR";

#[derive(Debug, thiserror::Error)]
pub enum PathsError {
    #[error("cannot find a home directory for the state files; pass --state-dir DIR or set {STATE_DIR_ENV}")]
    NoHome,
    #[error("cannot create directory {path}: {source}")]
    Create { path: PathBuf, source: io::Error },
    #[error(
        "{path} belongs to another user (uid {owner}); refusing to use it for control sockets. \
         Remove it or set {RUNTIME_DIR_ENV} to a directory you own"
    )]
    NotOwned { path: PathBuf, owner: u32 },
}

/// The resolved directories of one Nightshift process.
#[derive(Debug, Clone)]
pub struct Paths {
    pub state_dir: PathBuf,
    pub runtime_dir: PathBuf,
    /// Read, never created: `$XDG_CONFIG_HOME/nightshift` (usually `~/.config/nightshift`).
    pub config_dir: Option<PathBuf>,
}

impl Paths {
    /// Resolves the directories: an explicit state dir wins, then `$NIGHTSHIFT_STATE_DIR`, then the XDG
    /// state dir (`$XDG_STATE_HOME/nightshift`, usually `~/.local/state/nightshift`). Creates both.
    pub fn resolve(state_dir: Option<PathBuf>) -> Result<Self, PathsError> {
        let state_dir = match state_dir {
            Some(dir) => dir,
            None => default_state_dir()?,
        };
        let state_dir = absolute(&state_dir);
        ensure_dir(&state_dir)?;
        let runtime_dir = default_runtime_dir();
        ensure_private_dir(&runtime_dir)?;
        Ok(Self { state_dir, runtime_dir, config_dir: Self::config_dir() })
    }

    /// The SQLite journal.
    pub fn journal(&self) -> PathBuf {
        self.state_dir.join("journal.sqlite3")
    }

    /// The rotating log files.
    pub fn log_dir(&self) -> PathBuf {
        self.state_dir.join("logs")
    }

    /// `$NIGHTSHIFT_CONFIG_DIR`, or `$XDG_CONFIG_HOME/nightshift`.
    pub fn config_dir() -> Option<PathBuf> {
        std::env::var_os(CONFIG_DIR_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| directories::ProjectDirs::from("", "", "nightshift").map(|d| d.config_dir().to_path_buf()))
    }

    /// Where users override an agent's screen signals (`agents/claude.toml`, …).
    pub fn agents_dir(&self) -> Option<PathBuf> {
        self.config_dir.as_ref().map(|d| d.join("agents"))
    }

    /// The control socket of the process with this pid.
    pub fn control_socket(&self, pid: u32) -> PathBuf {
        self.runtime_dir.join(format!("control-{pid}.sock"))
    }
}

fn default_state_dir() -> Result<PathBuf, PathsError> {
    if let Some(dir) = std::env::var_os(STATE_DIR_ENV).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let dirs = directories::ProjectDirs::from("", "", "nightshift").ok_or(PathsError::NoHome)?;
    Ok(dirs.state_dir().unwrap_or_else(|| dirs.data_local_dir()).to_path_buf())
}

fn default_runtime_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(RUNTIME_DIR_ENV).filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) =
        directories::ProjectDirs::from("", "", "nightshift").and_then(|d| d.runtime_dir().map(Path::to_path_buf))
    {
        return dir;
    }
    // No XDG_RUNTIME_DIR (a root shell, a container): a per-user directory in the temp dir, which
    // `ensure_private_dir` checks is ours and closed to others, as tmux does.
    std::env::temp_dir().join(format!("nightshift-{}", nix::unistd::geteuid()))
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Creates a directory (and parents); a directory we create is private to this user.
pub fn ensure_dir(path: &Path) -> Result<(), PathsError> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(|source| PathsError::Create { path: path.to_path_buf(), source })
}

/// Creates a directory that only this user may enter, or checks that an existing one is ours and
/// closes it to others.
pub fn ensure_private_dir(path: &Path) -> Result<(), PathsError> {
    ensure_dir(path)?;
    let meta = std::fs::metadata(path).map_err(|source| PathsError::Create { path: path.to_path_buf(), source })?;
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(PathsError::NotOwned { path: path.to_path_buf(), owner: meta.uid() });
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
            .map_err(|source| PathsError::Create { path: path.to_path_buf(), source })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_dir_is_closed_to_others() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        ensure_private_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }
}
