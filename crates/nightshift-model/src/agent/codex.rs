//! What Codex's own ids and notifications look like, as the hooks and the detector read them.

/// The `type` of the notification Codex sends at the end of a turn.
pub const TURN_COMPLETE: &str = "agent-turn-complete";

/// Thread ids are UUIDs; nothing else is looked up in the file system or put on a command line.
pub fn is_thread_id(id: &str) -> bool {
    (8..=64).contains(&id.len()) && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}
