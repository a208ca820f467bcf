//! The user's own statusLine, read from the files the client reads for a start, and Codex's
//! rollout files: the I/O of plan usage. What the data says ([`Sample`], the chip, the bands) is
//! the model's.

pub use nightshift_model::usage::*;

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The user's own statusLine command for a start of Claude Code in `cwd`, from the scopes the
/// client reads for that start, nearest first: the project's `.claude/settings.local.json` and
/// `.claude/settings.json` in `cwd` itself (never a folder above or below it), then the user's
/// `settings.json` in `config_dir` (`CLAUDE_CONFIG_DIR`, or `~/.claude`). A `sandboxed` start takes
/// the user's settings alone: the project's files are the agent's to write. Nightshift's own
/// exporter is skipped.
pub fn launch_statusline(cwd: &Path, config_dir: Option<&Path>, sandboxed: bool) -> Option<(String, PathBuf)> {
    let mut candidates = Vec::new();
    if !sandboxed {
        candidates.push(cwd.join(".claude/settings.local.json"));
        candidates.push(cwd.join(".claude/settings.json"));
    }
    candidates.extend(config_dir.map(|config| config.join("settings.json")));
    candidates.into_iter().find_map(|path| {
        let text = std::fs::read_to_string(&path).ok()?;
        let v: Value = serde_json::from_str(&text).ok()?;
        let command = v["statusLine"]["command"].as_str()?.trim();
        (!command.is_empty() && !is_ours(command)).then(|| (command.to_string(), path))
    })
}

/// Codex's usage data as it writes it in each thread's rollout file; [`codex::read_latest`] reads
/// a file's end.
pub mod codex {
    pub use nightshift_model::usage::codex::*;

    use nightshift_model::usage::Sample;

    /// The latest figures of the rollout file at `path`: its end only, read, never written.
    pub fn read_latest(path: &std::path::Path) -> Option<Sample> {
        use std::io::{Read as _, Seek as _};
        let mut file = std::fs::File::open(path).ok()?;
        let len = file.metadata().ok()?.len();
        file.seek(std::io::SeekFrom::Start(len.saturating_sub(TAIL))).ok()?;
        let mut tail = Vec::new();
        file.read_to_end(&mut tail).ok()?;
        from_rollout(&String::from_utf8_lossy(&tail))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_statusline_comes_from_the_scopes_of_the_start_and_never_from_a_folder_the_agent_chose() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("project");
        let write = |path: &Path, command: &str| {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(
                path,
                serde_json::json!({"statusLine": {"type": "command", "command": command}}).to_string(),
            )
            .unwrap();
        };
        let config = tmp.path().join("config");
        write(&config.join("settings.json"), "user-level");
        // Above and below the folder the client starts in: neither is a scope of that start.
        write(&tmp.path().join(".claude/settings.json"), "above");
        write(&project.join("sub/.claude/settings.local.json"), "below");
        let found = |sandboxed| launch_statusline(&project, Some(&config), sandboxed).map(|(c, _)| c);
        assert_eq!(found(false).as_deref(), Some("user-level"));
        write(&project.join(".claude/settings.json"), "project-level");
        assert_eq!(found(false).as_deref(), Some("project-level"));
        write(&project.join(".claude/settings.local.json"), "/x/nightshift statusline");
        assert_eq!(found(false).as_deref(), Some("project-level"), "our own exporter is skipped");
        write(&project.join(".claude/settings.local.json"), "local");
        assert_eq!(found(false).as_deref(), Some("local"));
        assert_eq!(found(true).as_deref(), Some("user-level"), "a sandboxed start reads the user's own alone");
        std::fs::remove_file(config.join("settings.json")).unwrap();
        assert_eq!(found(true), None);
        assert_eq!(launch_statusline(&project, None, true), None);
        std::fs::write(project.join(".claude/settings.local.json"), "{not json").unwrap();
        assert_eq!(found(false).as_deref(), Some("project-level"), "a file that does not parse is passed over");
    }
}
