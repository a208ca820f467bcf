//! The handoff Nightshift builds when the agent could not write its own: a session that meets its
//! usage limit moves to another account (or agent) with no turn left to ask for one. A fresh agent
//! needs what the first one knew: the task it was given, what it committed since the session
//! began, what it left uncommitted in the working tree (which stays where it is: the next agent
//! works in the same folder), and the notes its prompts name (`PROGRESS.md`, `TASKS.md`), as they
//! stand. The runtime reads those ([`Gathered`], with git's safe options, files inside the folder
//! only); this puts them in words, bounded.

use chrono::{DateTime, Utc};

/// The longest part of a named file the handoff carries.
pub const FILE_MAX_CHARS: usize = 2000;
/// The most commits it lists (the latest ones).
pub const COMMITS_MAX: usize = 30;
/// The most uncommitted paths it lists.
pub const UNCOMMITTED_MAX: usize = 40;

/// What the runtime read of the working folder for a handoff.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gathered {
    /// The commits made since the session began, oldest first (`abc1234 subject`).
    pub commits: Vec<String>,
    /// The paths changed and not committed, as `git status --porcelain` says them.
    pub uncommitted: Vec<String>,
    /// The files the session's prompts name, as they stand (regular files inside the folder).
    pub files: Vec<Named>,
    /// What could not be read, in words (the folder is not a repository, git failed).
    pub unread: Vec<String>,
}

/// A file a prompt named, read for the handoff.
#[derive(Debug, Clone, PartialEq)]
pub struct Named {
    pub name: String,
    pub text: String,
}

/// What the session itself knows, for the handoff.
#[derive(Debug, Clone, Copy)]
pub struct Known<'a> {
    /// Why it was built: `account a met its 7-day limit`.
    pub why: &'a str,
    /// The task the session was given at its start.
    pub opening: Option<&'a str>,
    /// What respawn cycles tell the agent to do.
    pub kickstart: Option<&'a str>,
    /// The last handoff the agent wrote itself, and when, when there is one.
    pub last_handoff: Option<(&'a str, DateTime<Utc>)>,
}

fn cut(text: &str, max: usize) -> (String, bool) {
    let text = text.trim();
    if text.chars().count() <= max {
        return (text.to_string(), false);
    }
    (text.chars().take(max).collect(), true)
}

/// The handoff in words: what the task is, what was done, what is left in the working tree, the
/// notes as they stand, and where to start.
pub fn compose(known: &Known<'_>, gathered: &Gathered) -> String {
    let mut out = format!(
        "Handoff built by Nightshift: {}, before the agent there could write one. You carry on the same work in \
         the same folder and branch.",
        known.why
    );
    if let Some(opening) = known.opening.map(str::trim).filter(|o| !o.is_empty()) {
        let (opening, more) = cut(opening, FILE_MAX_CHARS);
        out.push_str(&format!("\n\nThe task the session was given:\n{opening}{}", if more { "…" } else { "" }));
    }
    if let Some(kick) = known.kickstart.map(str::trim).filter(|k| !k.is_empty()) {
        out.push_str(&format!("\n\nHow to go on between turns: {kick}"));
    }
    if let Some((text, at)) = known.last_handoff {
        let (text, more) = cut(text, FILE_MAX_CHARS);
        let at = crate::clock::format_ts(at);
        out.push_str(&format!("\n\nThe last handoff the agent wrote ({at}):\n{text}{}", if more { "…" } else { "" }));
    }
    if gathered.commits.is_empty() {
        out.push_str("\n\nNo commits since the session began.");
    } else {
        let skip = gathered.commits.len().saturating_sub(COMMITS_MAX);
        let earlier = if skip > 0 { format!(" (the last {COMMITS_MAX}; {skip} earlier)") } else { String::new() };
        out.push_str(&format!("\n\nCommits since the session began, oldest first{earlier}:"));
        for c in &gathered.commits[skip..] {
            out.push_str(&format!("\n- {c}"));
        }
    }
    if gathered.uncommitted.is_empty() {
        out.push_str("\n\nNothing uncommitted in the working tree.");
    } else {
        out.push_str("\n\nUncommitted in the working tree (left as it was: pick it up, do not discard it):");
        for path in gathered.uncommitted.iter().take(UNCOMMITTED_MAX) {
            out.push_str(&format!("\n- {path}"));
        }
        if gathered.uncommitted.len() > UNCOMMITTED_MAX {
            out.push_str(&format!("\n- and {} more", gathered.uncommitted.len() - UNCOMMITTED_MAX));
        }
    }
    for file in &gathered.files {
        let (text, more) = cut(&file.text, FILE_MAX_CHARS);
        let tail = if more { "\n… (cut; read the file for the rest)" } else { "" };
        out.push_str(&format!("\n\n{} as it stands:\n{text}{tail}", file.name));
    }
    for what in &gathered.unread {
        out.push_str(&format!("\n\n(Not read: {what}.)"));
    }
    out.push_str(
        "\n\nStart by checking `git status` and `git log`; do not redo work that is already committed, and go \
         on with the next unfinished step.",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> Known<'static> {
        Known {
            why: "account a met its 7-day limit",
            opening: Some("Work through TASKS.md, one step per turn."),
            kickstart: None,
            last_handoff: None,
        }
    }

    #[test]
    fn a_built_handoff_says_the_task_what_was_done_and_what_is_left() {
        let gathered = Gathered {
            commits: vec!["a1b2c3d Add the parser".into(), "d4e5f6a Test the parser".into()],
            uncommitted: vec![" M src/cli.rs".into(), "?? notes.txt".into()],
            files: vec![Named { name: "TASKS.md".into(), text: "- [x] parser\n- [ ] cli\n".into() }],
            unread: vec![],
        };
        let text = compose(&known(), &gathered);
        for part in [
            "Handoff built by Nightshift: account a met its 7-day limit",
            "The task the session was given:\nWork through TASKS.md, one step per turn.",
            "Commits since the session began, oldest first:\n- a1b2c3d Add the parser\n- d4e5f6a Test the parser",
            "Uncommitted in the working tree (left as it was: pick it up, do not discard it):\n-  M src/cli.rs\n- ?? notes.txt",
            "TASKS.md as it stands:\n- [x] parser\n- [ ] cli",
            "do not redo work that is already committed",
        ] {
            assert!(text.contains(part), "missing {part:?} in:\n{text}");
        }
        let a = text.find("a1b2c3d").unwrap();
        assert!(a < text.find("d4e5f6a").unwrap(), "oldest first");
    }

    #[test]
    fn a_built_handoff_is_bounded_whatever_the_folder_holds() {
        let gathered = Gathered {
            commits: (0..500).map(|i| format!("{i:07x} step {i}")).collect(),
            uncommitted: (0..500).map(|i| format!("?? f{i}")).collect(),
            files: vec![Named { name: "PROGRESS.md".into(), text: "x".repeat(100_000) }],
            unread: vec![],
        };
        let text = compose(&known(), &gathered);
        assert!(text.chars().count() < 8000, "{}", text.chars().count());
        assert!(text.contains("(the last 30; 470 earlier)"), "{text}");
        assert!(text.contains(&format!("{:07x} step 499", 499)), "the latest kept");
        assert!(!text.contains("step 469\n"), "the earliest dropped");
        assert!(text.contains("- and 460 more"));
        assert!(text.contains("… (cut; read the file for the rest)"));
    }

    #[test]
    fn nothing_done_and_nothing_read_are_said_as_such() {
        let gathered = Gathered { unread: vec!["the folder is not a git repository".into()], ..Gathered::default() };
        let last = Some(("Parser done; next the CLI.", chrono::DateTime::UNIX_EPOCH));
        let text = compose(&Known { last_handoff: last, opening: None, ..known() }, &gathered);
        assert!(text.contains("No commits since the session began."), "{text}");
        assert!(text.contains("Nothing uncommitted in the working tree."), "{text}");
        assert!(text.contains("(Not read: the folder is not a git repository.)"), "{text}");
        assert!(text.contains("The last handoff the agent wrote"), "{text}");
        assert!(!text.contains("The task the session was given"), "{text}");
    }
}
