//! The agents as the runtime meets them: what each client is and how its screen reads are the
//! model's (re-exported here); reading the user's signal files and the canary's results is I/O,
//! and lives here.

pub use nightshift_model::agent::*;

pub mod canary;

use std::path::Path;

/// The signals of `kind`, with `dir/<kind>.toml` laid over the built-in ones when it exists.
pub fn load_adapter(kind: AgentKind, dir: Option<&Path>) -> Result<Adapter, AdapterError> {
    let Some(path) = dir.map(|d| d.join(format!("{kind}.toml"))) else { return Ok(Adapter::builtin(kind)) };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Adapter::builtin(kind)),
        Err(source) => return Err(AdapterError::Read { path, source }),
    };
    let shown = path.display().to_string();
    let adapter = Adapter::with_overrides(kind, &shown, &text)?;
    tracing::info!(agent = %kind, file = %shown, "agent signals overridden by a user file");
    Ok(adapter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_users_signal_file_is_laid_over_and_one_that_cannot_be_read_is_named() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            load_adapter(AgentKind::Claude, None).unwrap().overrides().is_none(),
            "no folder: the built-in signals"
        );
        let none = load_adapter(AgentKind::Claude, Some(dir.path())).unwrap();
        assert!(none.overrides().is_none(), "no file: the built-in signals");
        std::fs::write(dir.path().join("claude.toml"), "[working]\nfooter = 'press esc'\n").unwrap();
        let mine = load_adapter(AgentKind::Claude, Some(dir.path())).unwrap();
        let laid = mine.overrides().unwrap();
        assert!(laid.file.ends_with("claude.toml") && laid.text.contains("press esc"), "{laid:?}");
        std::fs::write(dir.path().join("claude.toml"), "[working]\nfooter = '(unclosed'\n").unwrap();
        let err = load_adapter(AgentKind::Claude, Some(dir.path())).unwrap_err().to_string();
        assert!(
            err.contains(&dir.path().join("claude.toml").display().to_string()) && err.contains("working.footer"),
            "{err}"
        );
        std::fs::remove_file(dir.path().join("claude.toml")).unwrap();
        std::fs::create_dir(dir.path().join("codex.toml")).unwrap();
        let err = load_adapter(AgentKind::Codex, Some(dir.path())).unwrap_err().to_string();
        assert!(err.contains("codex.toml"), "a file that cannot be read is named: {err}");
    }
}
