//! Headless task loops: each iteration a fresh headless agent session on one task (`claude -p
//! --output-format stream-json`), so context never rots and a killed session costs one iteration,
//! not the night. A loop is a session of its own kind in the same supervisor, journal, tray and
//! digest as the terminal ones.
//!
//! (`loop` is a Rust keyword, hence `loops`.)
//!
//! - [`tasks`]: where the tasks come from (a prompt, a checklist file) and checking them off;
//! - [`stream`]: reading an iteration's event stream into how it ended and what it spent;
//! - [`machine`]: every decision of a loop, pure, in virtual time;
//! - [`request`]: a loop as asked for (the CLI's flags, the window's form), checked.

pub(crate) mod actor;
pub mod request;
pub use nightshift_model::loops::{machine, stream};
pub mod tasks;

pub use crate::event::WaitKind;
pub use actor::{global_marker, loop_dir, marker_name, stream_file, Harness, LoopSpec, ProjectSpec};
pub use request::{leftover_marker, LoopError, LoopRequest, Prepare};
