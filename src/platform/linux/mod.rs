//! Linux: `/proc` and `kill(2)` for processes, the Secret Service for secrets, D-Bus for the
//! desktop's services and the machine's power (logind, UPower), systemd's user manager for
//! services, bubblewrap and socat for the client's sandbox.

mod desktop;
mod process;
mod sandbox;
mod secrets;
mod services;
mod wake;

/// The system this build is for.
#[derive(Debug, Clone, Copy)]
pub struct Linux;
