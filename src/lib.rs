//! Nightshift core: supervised agent sessions in pseudo-terminals Nightshift owns, a durable journal
//! of everything that happens to them, and the control socket other Nightshift processes use.
//!
//! Data flows one way: PTY bytes → [`screen`] → (detection, later issues) → the session's state;
//! every change becomes an [`event::Event`], committed to the [`store`] journal before it is
//! broadcast to the CLI's `--events` stream and the tray app. This crate has no GUI dependency.

pub mod agent;
pub mod awake;
pub mod breaker;
pub mod clock;
pub mod config;
pub mod contract;
pub mod control;
pub mod detect;
pub mod digest;
pub mod doctor;
pub mod event;
pub mod git;
pub mod hooks;
pub mod journal;
pub mod keyring;
pub mod limits;
pub mod logging;
pub mod loops;
pub mod notice;
pub mod overview;
pub mod paths;
pub mod plan;
pub mod power;
pub mod pty;
pub mod push;
pub mod record;
pub mod respawn;
pub mod restore;
pub mod schedule;
pub mod screen;
pub mod session;
pub mod store;
pub mod supervisor;
pub mod token;
pub mod toml_error;
pub mod units;
pub mod usage;

pub use agent::AgentKind;
pub use event::{Event, EventKind, SessionId, SessionState};
pub use supervisor::{SessionSpec, Supervisor};
