//! A child process as the decisions see it: how it ended, or why it could not start. Starting and
//! reaping one is the runtime's (`pty`).

use std::fmt;
use std::path::PathBuf;

/// How a child process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal { number: i32, name: String },
}

impl Exit {
    /// The exit code a shell would report: the code, or 128 + the signal number.
    pub fn shell_code(&self) -> i32 {
        match self {
            Self::Code(code) => *code,
            Self::Signal { number, .. } => 128 + number,
        }
    }

    pub fn code(&self) -> Option<i32> {
        match self {
            Self::Code(code) => Some(*code),
            Self::Signal { .. } => None,
        }
    }

    pub fn signal(&self) -> Option<&str> {
        match self {
            Self::Code(_) => None,
            Self::Signal { name, .. } => Some(name),
        }
    }
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Code(code) => write!(f, "exited with code {code}"),
            Self::Signal { name, .. } => write!(f, "killed by {name}"),
        }
    }
}

/// Why a command could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("command not found: `{program}` (not an existing file, and not found in PATH)")]
    NotFound { program: String },
    #[error("cannot run `{program}`: {path} is not an executable file")]
    NotExecutable { program: String, path: PathBuf },
    #[error("working directory {cwd} does not exist or is not a directory")]
    BadCwd { cwd: PathBuf },
    #[error("could not open a pseudo-terminal: {0}")]
    Pty(String),
    #[error("could not start `{program}`: {message}")]
    Spawn { program: String, message: String },
}

impl SpawnError {
    /// The exit code a shell would give for this failure (127 not found, 126 not executable).
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::NotFound { .. } => 127,
            Self::NotExecutable { .. } => 126,
            _ => 1,
        }
    }
}

/// A signal the decisions send the agent's process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// The terminal hung up: a client saves and ends.
    Hangup,
    /// Ended at once, for a child that did not end when asked.
    Kill,
}
