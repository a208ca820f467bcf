//! Linux: `/proc` and `kill(2)` for processes, the Secret Service for secrets.

mod process;
mod secrets;

/// The system this build is for.
#[derive(Debug, Clone, Copy)]
pub struct Linux;
