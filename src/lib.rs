//! Nightshift core: supervised agent sessions in pseudo-terminals Nightshift owns, a durable journal
//! of everything that happens to them, and the control socket other Nightshift processes use.
//!
//! Data flows one way: PTY bytes → [`screen`] → [`detect`] (with the client's [`hooks`]) → the
//! session's state machine; every change becomes an [`event::Event`], committed to the [`store`]
//! journal before it is broadcast to the CLI's `--events` stream and the tray app. This crate has
//! no GUI dependency.
//!
//! # Layers
//!
//! Under every layer is the model crate, `nightshift-model` (`crates/nightshift-model`): the
//! vocabulary and the decisions, with no I/O. Its modules are re-exported here under their own
//! names (`crate::units`, …), so the runtime's paths do not say which crate a module lives in.
//!
//! Each top-level module uses modules of its own layer or below, never above, and no two modules
//! use each other, even by a detour. The table is the rule: `layers::the_modules_keep_their_layers`
//! reads it and fails naming the edge that breaks it, so a new module finds its place here first.
//!
//! | Layer | Modules | What they are |
//! |-------|---------|---------------|
//! | 1. foundations | `awake`, `clock`, `fence`, `git`, `logging`, `paths`, `platform`, `power`, `proxy`, `pty`, `record`, `standin`, `usage` | the world as Nightshift meets it: time, terminals, repositories and the hosts a project reaches, the machine's power, the plan's windows and usage; each knows nothing of sessions |
//! | 2. agents and decisions | `agent`, `hooks` | what each client is and how its screen and hooks read; the pure decisions over them |
//! | 3. the contract | `contract` | what the user armed for a session or a loop, as every start rebuilds it |
//! | 5. the journal | `journal`, `store` | where events are kept, written once, read by all |
//! | 6. settings and what the journal tells | `config`, `digest`, `notice`, `overview`, `plan`, `schedule` | the user's settings, and what the journal says to the user: notices, the tray's glance, the plan, the morning |
//! | 7. executors | `loops`, `session` | the actors that own a child and apply their machines' effects |
//! | 8. the supervisor | `restore`, `supervisor` | the sessions of one process, and bringing a night back after any end |
//! | 9. surfaces | `control`, `doctor`, `push`, `remote` | what other processes and the user reach: the control socket, the checks before a night, the phone's pushes and its answers |
//! | 10. the host | `host` | one long-lived process's sessions with their surfaces wired, alike in `run`, `loop`, `restore` and the app |
//!
//! The CLI (`src/cli`, `src/main.rs`) and the tray app (`src-tauri`) stand on top of all of them.

pub mod agent;
pub mod awake;
pub mod clock;
pub mod config;
pub mod contract;
pub mod control;
pub mod digest;
pub mod doctor;
pub mod fence;
pub mod git;
pub mod hooks;
pub mod host;
pub mod journal;
pub mod logging;
pub mod loops;
pub mod notice;
pub mod overview;
pub mod paths;
pub mod plan;
pub mod platform;
pub mod power;
pub mod proxy;
pub mod pty;
pub mod push;
pub mod record;
pub mod remote;
pub mod restore;
pub mod schedule;
pub mod session;
pub mod standin;
pub mod store;
pub mod supervisor;
pub mod usage;

pub use nightshift_model::{
    automated, breaker, child, detect, event, limits, phone, respawn, screen, token, toml_error, units,
};

pub use agent::AgentKind;
pub use event::{Event, EventKind, SessionId, SessionState};
pub use supervisor::{SessionSpec, Supervisor};

#[cfg(test)]
mod layers;
