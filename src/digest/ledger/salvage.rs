//! Salvage in a session's events: each snapshot followed through the later salvages that found it
//! unchanged, and told as a line.

use super::*;

/// A snapshot being followed through the later salvages that found it unchanged.
pub(super) struct Snapshot {
    pub(super) kept: SalvageKept,
    pub(super) tree: Option<String>,
    /// Every later salvage was a respawn cycle's.
    pub(super) by_cycles: bool,
}

pub(super) fn is_cycle(reason: &str) -> bool {
    reason.starts_with("before respawn cycle ")
}

/// The salvage line of one snapshot of session `id`.
pub(super) fn salvage_line(id: &str, s: &Snapshot) -> String {
    let k = &s.kept;
    let n = k.reference.rsplit('/').next().unwrap_or("1");
    let mut kept = if k.unchanged == 0 {
        format!("kept at {}", hhmm(k.at))
    } else {
        let (through, one, many) =
            if s.by_cycles { ("through", "cycle", "cycles") } else { ("at", "salvage", "salvages") };
        let later = if k.unchanged == 1 { one } else { many };
        format!("kept since {}, unchanged {through} {} later {later}", hhmm(k.at), k.unchanged)
    };
    if !k.preexisting.is_empty() {
        let shown: Vec<&str> = k.preexisting.iter().take(3).map(String::as_str).collect();
        let more = if k.preexisting.len() > 3 { ", …" } else { "" };
        let were = if k.preexisting.len() == 1 { "was" } else { "were" };
        kept.push_str(&format!(
            "; {} of them {were} there before the session began, untouched since: {}{more}",
            k.preexisting.len(),
            shown.join(", ")
        ));
    }
    if !k.users.is_empty() {
        let shown: Vec<&str> = k.users.iter().take(3).map(String::as_str).collect();
        let more = if k.users.len() > 3 { ", …" } else { "" };
        let (whose, left) = match k.users.len() {
            1 => ("your own file".to_string(), "left as it is"),
            n => (format!("your own {n} files"), "left as they are"),
        };
        kept.push_str(&format!("; {whose}, there before the session began, {left}: {}{more}", shown.join(", ")));
    }
    format!(
        "work kept by salvage: {} ({}) of {}, {kept}; look: nightshift salvage show {id}/{n}",
        plural(k.files as u64, "uncommitted file", "uncommitted files"),
        crate::units::bytes(k.bytes),
        k.repo
    )
}
