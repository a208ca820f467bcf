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

    /// Closes the state and configuration folders to other users, and the data folder's own
    /// (not the worktrees' files, which are the user's project): what an older build, a copy or a
    /// hand made open. A long-lived process (a run, a loop, restore, the app) does it as it starts.
    pub fn tighten(&self) {
        let mut changed = tighten(&self.state_dir, &[]);
        if let Some(config) = &self.config_dir {
            changed += tighten(config, &[]);
        }
        if let Some(data) = directories::ProjectDirs::from("", "", "nightshift").map(|d| d.data_dir().to_path_buf()) {
            let worktrees = data.join("worktrees");
            changed += tighten(&data, std::slice::from_ref(&worktrees));
            let repos = std::fs::read_dir(&worktrees).into_iter().flatten().flatten().map(|e| e.path());
            for dir in std::iter::once(worktrees.clone()).chain(repos) {
                let open = std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir() && m.mode() & 0o077 != 0);
                if open && std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).is_ok() {
                    changed += 1;
                }
            }
        }
        if changed > 0 {
            tracing::info!("closed {changed} of Nightshift's files and folders to other users");
        }
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

/// The runtime directory this process resolves (the control sockets' folder).
pub fn runtime_dir() -> PathBuf {
    default_runtime_dir()
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

/// Creates `path` (and any folder above it that is missing) for this user alone.
pub fn private_dirs(path: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(0o700).create(path)
}

/// Opens `path` for writing from its start, readable by this user alone (an existing file is
/// closed to others too).
pub fn private_file(path: &Path) -> io::Result<std::fs::File> {
    open_private(path, false)
}

/// Opens `path` to append to it, readable by this user alone.
pub fn private_append(path: &Path) -> io::Result<std::fs::File> {
    open_private(path, true)
}

fn open_private(path: &Path, append: bool) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file =
        std::fs::OpenOptions::new().write(true).create(true).append(append).truncate(!append).mode(0o600).open(path)?;
    if file.metadata()?.mode() & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}

/// Writes `bytes` to `path`, readable by this user alone.
pub fn write_private(path: &Path, bytes: impl AsRef<[u8]>) -> io::Result<()> {
    use std::io::Write as _;
    private_file(path)?.write_all(bytes.as_ref())
}

/// Closes everything under `root` to other users: folders 0700, files 0600 (nothing followed
/// through a link, `skip` and what is under it left as it is). What could not be changed is
/// counted and logged, never an error: the night goes on.
pub fn tighten(root: &Path, skip: &[PathBuf]) -> usize {
    let mut changed = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(at) = stack.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&at) else { continue };
        let mine = meta.uid() == nix::unistd::geteuid().as_raw();
        if meta.file_type().is_symlink() || skip.iter().any(|s| s == &at) || !mine {
            continue;
        }
        let want = if meta.is_dir() { 0o700 } else { 0o600 };
        if meta.mode() & 0o077 != 0 {
            match std::fs::set_permissions(&at, std::fs::Permissions::from_mode(want)) {
                Ok(()) => changed += 1,
                Err(e) => tracing::warn!("cannot close {} to other users: {e}", at.display()),
            }
        }
        if meta.is_dir() {
            stack.extend(std::fs::read_dir(&at).into_iter().flatten().flatten().map(|e| e.path()));
        }
    }
    changed
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
