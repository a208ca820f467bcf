//! The agent's own sandbox, set per session: Claude Code's native one (bubblewrap and a socat
//! proxy on Linux) through the session's `--settings`, Codex's `workspace-write`. Inside it, Bash
//! runs without a permission prompt, so an unattended night neither stalls on prompts nor runs
//! with `--dangerously-skip-permissions` on the whole machine. Nothing is written to the user's
//! own settings.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::AgentKind;

/// A session's or loop's sandbox.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sandbox {
    /// Folders its commands may write besides the one it starts in (and the client's own): the
    /// top of its worktree when it starts in a subfolder of it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write: Vec<PathBuf>,
    /// Domains its commands may reach (`[sandbox] network`); every other is refused, never asked
    /// about. The client's own traffic to its API is not a command's and goes on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<String>,
}

impl Sandbox {
    /// [`Sandbox::claude_settings`] with `hidden` folders its commands may not read at all
    /// (Nightshift's secrets, other accounts' logins).
    pub fn claude_settings_hiding(&self, hidden: &[PathBuf]) -> Value {
        let mut settings = self.claude_settings();
        if !hidden.is_empty() {
            settings["sandbox"]["filesystem"]["denyRead"] = json!(hidden);
        }
        settings
    }

    /// Claude Code's settings for it, laid over the session's other `--settings`. It refuses to
    /// start when the sandbox cannot run (rather than run Bash unconfined), and offers no way out
    /// of it to a command.
    pub fn claude_settings(&self) -> Value {
        let mut sandbox = json!({
            "enabled": true,
            "failIfUnavailable": true,
            "autoAllowBashIfSandboxed": true,
            "allowUnsandboxedCommands": false,
            "network": {"allowedDomains": self.network, "strictAllowlist": true},
        });
        if !self.write.is_empty() {
            sandbox["filesystem"] = json!({"allowWrite": self.write});
        }
        json!({ "sandbox": sandbox })
    }

    /// Codex's flags for it, unless `theirs` (the user's own flags) chose a sandbox or an approval
    /// policy already (the client refuses a flag twice): `workspace-write` with no approval
    /// prompts (`exec`, `headless`, never asks and takes no such flag), its extra folders writable.
    /// Codex's sandbox knows no list of domains: its commands have no network.
    pub fn codex_args(&self, theirs: &[String], headless: bool) -> Vec<String> {
        let chose = |flags: &[&str]| {
            theirs.iter().any(|a| flags.contains(&a.as_str()) || flags.iter().any(|f| a.starts_with(&format!("{f}="))))
        };
        let mut args = Vec::new();
        if !chose(&["-s", "--sandbox", "--full-auto", "--dangerously-bypass-approvals-and-sandbox", "--yolo"]) {
            args.extend(["--sandbox", "workspace-write"].map(String::from));
            for dir in &self.write {
                args.extend(["--add-dir".to_string(), dir.display().to_string()]);
            }
        }
        if !headless
            && !chose(&[
                "-a",
                "--ask-for-approval",
                "--full-auto",
                "--dangerously-bypass-approvals-and-sandbox",
                "--yolo",
            ])
        {
            args.extend(["--ask-for-approval", "never"].map(String::from));
        }
        args
    }

    /// What it lets the agent's commands do, in a line (the session's options, the journal).
    pub fn describe(&self, agent: AgentKind) -> String {
        let write = match self.write.as_slice() {
            [] => "its folder".to_string(),
            more => format!(
                "its folder and {}",
                more.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            ),
        };
        let network = match (agent, self.network.as_slice()) {
            (AgentKind::Codex, _) => "no network".to_string(),
            (_, []) => "no network".to_string(),
            (_, domains) => format!("network to {}", domains.join(", ")),
        };
        let reads = match agent {
            AgentKind::Codex => "read anything you can (Codex's sandbox limits writes, not reads)",
            _ => "read neither Nightshift's files nor other accounts'",
        };
        format!(
            "sandboxed: commands run without prompts, write {write} and the client's own folders, {reads}, {network}"
        )
    }
}

/// The user's own argument that turns `agent`'s sandbox off, if any: Codex's
/// `--dangerously-bypass-approvals-and-sandbox` or `--yolo`, a `danger-full-access` sandbox
/// (`-s`, `--sandbox`, or `-c sandbox_mode=…`). Claude's sandbox is laid over the user's settings
/// last, so no argument of theirs turns it off. Only flags count: a prompt that mentions one is a
/// prompt.
pub fn turned_off(agent: AgentKind, args: &[String]) -> Option<String> {
    if agent != AgentKind::Codex {
        return None;
    }
    let full = |value: &str| value.trim_matches(['"', '\'', ' ']) == "danger-full-access";
    let mode = |kv: &str| kv.split_once('=').is_some_and(|(k, v)| k.trim() == "sandbox_mode" && full(v));
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let off = match arg.as_str() {
            "--dangerously-bypass-approvals-and-sandbox" | "--yolo" => Some(arg.clone()),
            "-s" | "--sandbox" => it.next().filter(|v| full(v)).map(|v| format!("{arg} {v}")),
            "-c" | "--config" => it.next().filter(|v| mode(v)).map(|v| format!("{arg} {v}")),
            // Whatever follows `--` is the prompt.
            "--" => return None,
            other => {
                let set = other.strip_prefix("--sandbox=").or_else(|| other.strip_prefix("-s")).is_some_and(full)
                    || other.strip_prefix("--config=").or_else(|| other.strip_prefix("-c")).is_some_and(mode);
                set.then(|| arg.clone())
            }
        };
        if off.is_some() {
            return off;
        }
    }
    None
}

/// Whether a failed command's words say the sandbox refused it (a write outside its folders, a
/// host not allowed), not that the command failed on its own.
pub fn sandbox_refused(error: &str) -> bool {
    const SIGNS: [&str; 4] =
        ["read-only file system", "operation not permitted", "sandbox", "not in the allowed domains"];
    let error = error.to_lowercase();
    SIGNS.iter().any(|s| error.contains(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_of_the_sandbox_is_told_from_a_command_that_failed() {
        assert!(sandbox_refused("Exit code 1\n/bin/bash: line 1: /home/u/x.txt: Read-only file system"));
        assert!(!sandbox_refused("Exit code 101\nerror[E0308]: mismatched types"));
    }

    #[test]
    fn claude_gets_a_sandbox_it_must_start_and_cannot_leave() {
        let s = Sandbox { write: vec!["/wt/top".into()], network: vec!["crates.io".into()] };
        let v = s.claude_settings();
        let b = &v["sandbox"];
        assert_eq!((b["enabled"].as_bool(), b["failIfUnavailable"].as_bool()), (Some(true), Some(true)));
        assert_eq!(b["autoAllowBashIfSandboxed"], true);
        assert_eq!(b["allowUnsandboxedCommands"], false);
        assert_eq!(b["filesystem"]["allowWrite"], json!(["/wt/top"]));
        assert_eq!(b["network"], json!({"allowedDomains": ["crates.io"], "strictAllowlist": true}));
        assert!(Sandbox::default().claude_settings()["sandbox"].get("filesystem").is_none());
        let hiding = s.claude_settings_hiding(&["/home/u/.local/state/nightshift".into()]);
        assert_eq!(hiding["sandbox"]["filesystem"]["denyRead"], json!(["/home/u/.local/state/nightshift"]));
        assert_eq!(hiding["sandbox"]["filesystem"]["allowWrite"], json!(["/wt/top"]));
    }

    #[test]
    fn codex_writes_its_workspace_without_prompts_unless_the_user_chose() {
        let s = Sandbox { write: vec!["/wt/top".into()], network: vec![] };
        assert_eq!(
            s.codex_args(&[], false).join(" "),
            "--sandbox workspace-write --add-dir /wt/top --ask-for-approval never"
        );
        let theirs: Vec<String> = ["-s", "read-only"].map(String::from).to_vec();
        assert_eq!(s.codex_args(&theirs, false).join(" "), "--ask-for-approval never");
        let bypass = vec!["--dangerously-bypass-approvals-and-sandbox".to_string()];
        assert!(s.codex_args(&bypass, false).is_empty());
        assert!(s.codex_args(&["--ask-for-approval=on-request".to_string()], false).join(" ").ends_with("/wt/top"));
        assert_eq!(s.codex_args(&[], true).join(" "), "--sandbox workspace-write --add-dir /wt/top", "exec never asks");
    }

    #[test]
    fn it_says_what_it_allows() {
        let s = Sandbox { write: vec![], network: vec!["crates.io".into()] };
        assert!(s
            .describe(AgentKind::Claude)
            .ends_with("read neither Nightshift's files nor other accounts', network to crates.io"));
        assert!(s
            .describe(AgentKind::Codex)
            .ends_with("read anything you can (Codex's sandbox limits writes, not reads), no network"));
    }
}
