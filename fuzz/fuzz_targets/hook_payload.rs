//! The payloads Claude Code's hooks and Codex's notify hand `nightshift hook` / `nightshift notify`,
//! and the guard's check of the command a PreToolUse carries.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nightshift::hooks::{codex::Notification, guard, Hook};
use std::sync::OnceLock;

fn rules() -> &'static guard::Rules {
    static RULES: OnceLock<guard::Rules> = OnceLock::new();
    RULES.get_or_init(guard::Rules::builtin)
}

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    if let Ok(hook) = Hook::from_payload(&v) {
        let _ = hook.name();
        if let Some(command) = v["tool_input"]["command"].as_str() {
            let mut facts = guard::Facts {
                cwd: "/home/u/project".into(),
                tree: "/home/u/project".into(),
                home: Some("/home/u".into()),
                ..guard::Facts::default()
            };
            for dir in rules().repos_needed(command, &facts.cwd, facts.home.as_deref()) {
                facts = facts.with_repo(&dir, (Some("feature".into()), Some("main".into())));
            }
            let _ = rules().check(command, &facts);
        }
    }
    if let Ok(n) = Notification::from_payload(&v) {
        let _ = n.turn_complete();
        let _ = n.into_hook();
    }
});
