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

/// How `kind`'s client started with `env` (the session's, laid over this process's) and its
/// account folder `dir` would log in: a token in the environment, or the folder's credentials
/// file. Only whether they are there, never what they say. `Err`: why it has no login.
pub fn login(kind: AgentKind, dir: &Path, env: &[(String, String)]) -> Result<String, String> {
    let set = |k: &str| match env.iter().rfind(|(name, _)| name == k) {
        Some((_, value)) => !value.is_empty(),
        None => std::env::var_os(k).is_some_and(|v| !v.is_empty()),
    };
    if let Some(k) = kind.token_vars().iter().find(|k| set(k)) {
        return Ok(format!("a token in the environment ({k})"));
    }
    let file = dir.join(kind.credentials_file());
    // A link the user made to their credentials is theirs: `is_file` follows it.
    if file.is_file() {
        Ok(format!("logged in ({} holds its credentials)", dir.display()))
    } else {
        Err(format!("no credentials in {}", dir.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_is_a_token_in_the_environment_or_the_folders_credentials() {
        let dir = tempfile::tempdir().unwrap();
        let none =
            [("CLAUDE_CODE_OAUTH_TOKEN".to_string(), String::new()), ("ANTHROPIC_API_KEY".into(), String::new())];
        let none = [&none[..], &[("ANTHROPIC_AUTH_TOKEN".into(), String::new())]].concat();
        let out = login(AgentKind::Claude, dir.path(), &none).unwrap_err();
        assert_eq!(out, format!("no credentials in {}", dir.path().display()));
        std::fs::write(dir.path().join(".credentials.json"), "{}").unwrap();
        assert!(login(AgentKind::Claude, dir.path(), &none).is_ok());
        // Codex keeps its own file; an empty token is no token.
        let codex = [("OPENAI_API_KEY".to_string(), String::new()), ("CODEX_API_KEY".into(), String::new())];
        assert!(login(AgentKind::Codex, dir.path(), &codex).is_err());
        let keyed = [("OPENAI_API_KEY".to_string(), "sk-test".to_string())];
        assert_eq!(login(AgentKind::Codex, dir.path(), &keyed).unwrap(), "a token in the environment (OPENAI_API_KEY)");
        // A folder named like the file is not a login.
        std::fs::create_dir(dir.path().join("auth.json")).unwrap();
        assert!(login(AgentKind::Codex, dir.path(), &codex).is_err());
    }

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
