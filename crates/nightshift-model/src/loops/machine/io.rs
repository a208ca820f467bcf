//! What goes into a loop's machine and what comes out: its projects, the inputs, the run it
//! asks for and the effects the actor carries out.

use super::*;

/// One project of the loop: where its sessions run, and whether its tasks come from a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// For people and the journal (its directory).
    pub label: String,
    /// Tasks from a file (checked off as they are done), or one prompt repeated.
    pub tasks_file: bool,
}

/// A marker file the user left for the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// Finish the current iteration, then end.
    Stop,
    /// End now, killing the current iteration.
    Halt,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    Start,
    /// A project's open tasks as its tasks file (or prompt) says now.
    Tasks {
        project: usize,
        open: Vec<String>,
    },
    /// The running session's answers have reported this many tokens so far.
    Tokens {
        so_far: u64,
    },
    /// The running session ended; `progress`: its project's working tree changed.
    Ended {
        report: Box<Report>,
        progress: bool,
    },
    /// The running session could not be started.
    SpawnFailed {
        error: String,
    },
    Marker(Marker),
    /// The user holds the loop ("Pause all"): the running iteration finishes, no new one starts
    /// until released; `source` says who, for the journal.
    Held {
        held: bool,
        source: String,
    },
    Tick,
}

/// A session for the actor to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub project: usize,
    /// What the session is told.
    pub prompt: String,
    /// The task, for a file's task (to check it off).
    pub task: Option<String>,
    /// A probe for an early reset: a one-character prompt with no tools.
    pub probe: bool,
    pub iteration: u32,
    pub attempt: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Emit(EventKind),
    Spawn(Run),
    /// Stop the running session now.
    Kill {
        reason: String,
    },
    CheckOff {
        project: usize,
        task: String,
    },
    /// The loop is over (its final state was emitted).
    End,
}
