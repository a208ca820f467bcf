//! The clients' hooks as the runtime meets them: what a hook says and how Nightshift answers, the
//! guard and the shell parser it reads commands with, are the model's (re-exported here); reading
//! the user's files, Codex's home and the handoff notes is I/O, and lives here.

pub use nightshift_model::hooks::*;

pub mod codex;
pub mod handoff;

use serde_json::{json, Value};

/// Lays `ours` over the `--settings` of a Claude command line `args` (inline JSON, or a file
/// relative to `cwd`: the user's, or ones laid before), or gives it as its first arguments.
pub fn lay_settings(args: &mut Vec<String>, cwd: &std::path::Path, ours: &Value) {
    match args.iter().position(|a| a == "--settings").filter(|i| *i + 1 < args.len()) {
        Some(i) => {
            let theirs = &args[i + 1];
            let theirs: Value = serde_json::from_str(theirs)
                .or_else(|_| {
                    std::fs::read_to_string(cwd.join(theirs))
                        .map_err(|_| ())
                        .and_then(|t| serde_json::from_str(&t).map_err(|_| ()))
                })
                .unwrap_or_else(|()| json!({}));
            args[i + 1] = merge_settings(&theirs, ours).to_string();
        }
        None => args.splice(0..0, ["--settings".to_string(), ours.to_string()]).for_each(drop),
    }
}

/// The guard: its rules and what it decides are the model's; the user's `guard.toml` is read here.
pub mod guard {
    pub use nightshift_model::hooks::guard::*;

    use std::path::Path;

    /// The built-in rules with `dir/guard.toml` added (its rules and protected branches, and its
    /// `disable`d kinds left out).
    pub fn load_rules(dir: Option<&Path>) -> Result<Rules, GuardError> {
        load_kept(dir).map(|(rules, _)| rules)
    }

    /// [`load_rules`], with the user's file as read (for the contract: a later start judges by
    /// the same rules, whatever the file says by then); `None` when there is none.
    pub fn load_kept(dir: Option<&Path>) -> Result<(Rules, Option<crate::agent::Overrides>), GuardError> {
        let Some(path) = dir.map(|d| d.join("guard.toml")) else { return Ok((Rules::builtin(), None)) };
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Rules::builtin(), None)),
            Err(source) => return Err(GuardError::Read { path, source }),
        };
        let file = path.display().to_string();
        let rules = Rules::with_user(&file, &text)?;
        Ok((rules, Some(crate::agent::Overrides { file, text })))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn no_file_is_the_built_in_rules_and_one_that_cannot_be_read_is_named() {
            let dir = tempfile::tempdir().unwrap();
            assert_eq!(load_rules(None).unwrap().check("git status", &Facts::default()), None);
            assert!(load_rules(Some(dir.path())).is_ok(), "no guard.toml: the built-in rules");
            std::fs::write(dir.path().join("guard.toml"), "disable = [\"force_push\"]\n").unwrap();
            assert!(load_rules(Some(dir.path())).is_ok());
            std::fs::write(dir.path().join("guard.toml"), "[[rule]]\nkind = 3\n").unwrap();
            let err = load_rules(Some(dir.path())).unwrap_err().to_string();
            assert!(err.contains(&dir.path().join("guard.toml").display().to_string()), "{err}");
            std::fs::remove_file(dir.path().join("guard.toml")).unwrap();
            std::fs::create_dir(dir.path().join("guard.toml")).unwrap();
            let err = load_rules(Some(dir.path())).unwrap_err().to_string();
            assert!(err.contains("guard.toml"), "a file that cannot be read is named: {err}");
        }
    }
}
