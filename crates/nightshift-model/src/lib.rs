//! Nightshift's model: the vocabulary every part speaks and the decisions taken over it, with no
//! I/O. Nothing here opens a file, a terminal, a socket or a process, or reads the time: the
//! runtime crate (`nightshift`) does those and hands what it found in as inputs, so every decision
//! here is a function of its inputs, testable in virtual time.
//!
//! The compiler keeps it so: this crate's dependencies have no SQLite, PTY, process, HTTP, D-Bus
//! or tokio runtime, and `chrono` comes without its clock (`scripts/check-model`, run by
//! `make test`, fails when one appears in the tree).
//!
//! # Modules, bottom up
//!
//! | Module | What it is |
//! |--------|------------|
//! | `units`, `token`, `toml_error` | leaves: how money and sizes are written, a session's secret, a TOML error in one line |
//! | `automated` | a leaf: how an input Nightshift sends by itself says so, with the user's standing instructions |
//! | `clock` | the [`clock::Clock`] decisions are given, the test clock, timestamp formats |
//! | `child`, `repo` | a child process's end or failed start; a repository's state, worktree and left-out files |
//! | `hosts`, `phone` | what the network fence lets through; the phone's signed one-time actions |
//! | `usage` | the plan's windows and usage as the clients report them, the chip |
//! | `limits`, `breaker` | a usage limit read from the screen and when to resume; budgets, back-off and the crash-loop breaker |
//! | `screen` | the terminal grid the agent drew, as rows and frames |
//! | `agent` | what each client is: its signals (adapters), dialogs, sandbox and fence settings |
//! | `hooks` | what a client's hook says and how it is answered; the guard and the shell parser it reads a command with |
//! | `awake` | when the machine must stay awake, and when it may sleep through a wait |
//! | `detect`, `respawn` | what the screen and the hooks say the agent is doing; when a respawn cycle is due |
//! | `session`, `loops` | the two machines: a terminal session's, with its options as the user sees them, and a loop's, with what an iteration's stream said |
//! | `notice`, `plan`, `restore` | what is told the user and when; the night's forecast and waits; what a session's journal says after Nightshift's end, and whether it comes back |
//! | `contract` | what the user armed for a session or a loop, as every start rebuilds it |
//! | `event` | the journal's vocabulary: everything that happens, typed, and how it is said |
//!
//! Time inside: wall-clock instants come from a [`clock::Clock`], monotonic ones are
//! `std::time::Instant`s the runtime reads from tokio's clock (`clock::mono_now` there), so a test
//! that pauses tokio's time moves them; local times are read in the [`clock::Zone`] a machine is
//! started with (the runtime's `clock::local_zone`, a named zone in the specs).

pub mod agent;
pub mod automated;
pub mod awake;
pub mod breaker;
pub mod child;
pub mod clock;
pub mod contract;
pub mod detect;
pub mod event;
pub mod hooks;
pub mod hosts;
pub mod limits;
pub mod loops;
pub mod notice;
pub mod phone;
pub mod plan;
pub mod repo;
pub mod respawn;
pub mod restore;
pub mod screen;
pub mod session;
pub mod token;
pub mod toml_error;
pub mod units;
pub mod usage;

pub use agent::AgentKind;
