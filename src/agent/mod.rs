//! The agent CLIs Nightshift knows. Each session is run as one of them; `generic` is any command.
//! [`Adapter`] holds what each one's screen looks like in its states.

mod adapter;

pub use adapter::{Adapter, AdapterError, Dialog, DialogKind, Verdict};

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentKind {
    Claude,
    Codex,
    Generic,
}

impl AgentKind {
    pub const ALL: [AgentKind; 3] = [Self::Claude, Self::Codex, Self::Generic];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::Generic => "generic",
        }
    }

    /// Makes the agent carry on its conversation when it is started again: Claude resumes the one
    /// named (`--resume <id>`, from its hooks), or else its directory's latest (`--continue`);
    /// Codex resumes the one named (`codex resume <id>`, from its notify), and without one starts
    /// as it did. When `program` is the agent's CLI itself, whatever its arguments said about
    /// which conversation (or, for Codex, its opening prompt) goes; a wrapper's arguments
    /// (`bash -c …`) are its own and stay.
    pub fn continue_conversation(self, program: &str, args: &mut Vec<String>, conversation: Option<&str>) {
        match self {
            Self::Claude => claude_continue(Self::infer(program) == Self::Claude, args, conversation),
            Self::Codex => {
                if let Some(id) = conversation.filter(|id| crate::hooks::codex::is_thread_id(id)) {
                    if Self::infer(program) == Self::Codex {
                        codex_resume(args, id);
                    }
                }
            }
            Self::Generic => {}
        }
    }

    /// Arguments for a fresh conversation: without those that pick one up (Claude's `--continue`
    /// and `--resume`). Other agents' arguments stay as they are.
    pub fn start_fresh(self, program: &str, args: &mut Vec<String>) {
        if self == Self::Claude && Self::infer(program) == Self::Claude {
            claude_fresh(args);
        }
    }

    /// The instructions file the agent's `/init` writes in its working directory.
    pub fn instructions_file(self) -> Option<&'static str> {
        match self {
            Self::Claude => Some("CLAUDE.md"),
            Self::Codex => Some("AGENTS.md"),
            Self::Generic => None,
        }
    }

    /// The agent a command runs, judged by the program's file name (`claude`, `/opt/bin/codex`, …).
    pub fn infer(program: &str) -> Self {
        match Path::new(program).file_name().and_then(|n| n.to_str()) {
            Some("claude" | "claude.exe") => Self::Claude,
            Some("codex") => Self::Codex,
            _ => Self::Generic,
        }
    }
}

fn claude_continue(ours: bool, args: &mut Vec<String>, conversation: Option<&str>) {
    if ours {
        claude_fresh(args);
    }
    match conversation {
        Some(id) => args.extend(["--resume".to_string(), id.to_string()]),
        None => args.push("--continue".into()),
    }
}

/// Claude's arguments without the ones that pick up a conversation (`--continue`, `--resume`).
fn claude_fresh(args: &mut Vec<String>) {
    let mut kept = Vec::with_capacity(args.len());
    let mut it = std::mem::take(args).into_iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--continue" | "-c" => {}
            "--resume" | "-r" => {
                it.next();
            }
            a if a.starts_with("--resume=") => {}
            _ => kept.push(arg),
        }
    }
    *args = kept;
}

/// The Codex CLI's options that take a value (0.171.0's `codex --help` and `codex resume --help`).
const CODEX_VALUE_OPTIONS: [&str; 20] = [
    "-c",
    "--config",
    "--enable",
    "--disable",
    "--remote",
    "--remote-auth-token-env",
    "-i",
    "--image",
    "-m",
    "--model",
    "--local-provider",
    "-p",
    "--profile",
    "-s",
    "--sandbox",
    "-C",
    "--cd",
    "--add-dir",
    "-a",
    "--ask-for-approval",
];

/// Its subcommands that do not start an interactive session (or not one of a conversation).
const CODEX_OTHER_COMMANDS: [&str; 27] = [
    "agents",
    "exec",
    "e",
    "review",
    "login",
    "logout",
    "mcp",
    "plugin",
    "app-server",
    "remote-control",
    "completion",
    "update",
    "doctor",
    "sandbox",
    "debug",
    "apply",
    "a",
    "queue",
    "archive",
    "delete",
    "migrate-rollouts",
    "migrate-nfs-db",
    "unarchive",
    "cloud",
    "exec-server",
    "features",
    "help",
];

/// `codex [OPTIONS] resume <id>`: the options stay (they go before the subcommand, where Codex
/// takes them too); an opening prompt, and a `resume`/`fork` with its id, picker flags and prompt,
/// go. A command line of another subcommand (`codex exec …`) is left as it is.
fn codex_resume(args: &mut Vec<String>, id: &str) {
    let mut kept = Vec::with_capacity(args.len() + 2);
    let mut it = args.iter();
    let mut subcommand = false;
    while let Some(arg) = it.next() {
        let a = arg.as_str();
        if a == "--" {
            break;
        }
        if a.starts_with('-') && a.len() > 1 {
            if matches!(a, "--last" | "--all" | "--include-non-interactive") {
                continue;
            }
            kept.push(arg.clone());
            if CODEX_VALUE_OPTIONS.contains(&a) {
                kept.extend(it.next().cloned());
            }
            continue;
        }
        if !subcommand && matches!(a, "resume" | "fork") {
            subcommand = true;
        } else if !subcommand && CODEX_OTHER_COMMANDS.contains(&a) {
            return;
        }
        // A session id or a prompt: this start's own, not the restart's.
    }
    kept.extend(["resume".to_string(), id.to_string()]);
    *args = kept;
}

impl fmt::Display for AgentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, thiserror::Error)]
#[error("unknown agent `{0}`: expected one of claude, codex, generic")]
pub struct UnknownAgent(String);

impl FromStr for AgentKind {
    type Err = UnknownAgent;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|a| a.as_str().eq_ignore_ascii_case(s)).ok_or_else(|| UnknownAgent(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infers_from_the_program_name() {
        assert_eq!(AgentKind::infer("claude"), AgentKind::Claude);
        assert_eq!(AgentKind::infer("/usr/local/bin/codex"), AgentKind::Codex);
        assert_eq!(AgentKind::infer("bash"), AgentKind::Generic);
        assert_eq!("Claude".parse::<AgentKind>().unwrap(), AgentKind::Claude);
        assert!("gpt".parse::<AgentKind>().unwrap_err().to_string().contains("claude, codex, generic"));
    }

    #[test]
    fn a_restart_resumes_the_conversation_it_knows() {
        let mut args: Vec<String> = ["--model", "opus", "--continue"].map(String::from).to_vec();
        AgentKind::Claude.continue_conversation("claude", &mut args, Some("0b2c"));
        assert_eq!(args, ["--model", "opus", "--resume", "0b2c"]);
        AgentKind::Claude.continue_conversation("claude", &mut args, Some("77aa"));
        assert_eq!(args, ["--model", "opus", "--resume", "77aa"], "the latest conversation, once");
        AgentKind::Claude.continue_conversation("claude", &mut args, None);
        assert_eq!(args, ["--model", "opus", "--continue"]);
        let mut bash: Vec<String> = ["-c", "exit 1"].map(String::from).to_vec();
        AgentKind::Generic.continue_conversation("bash", &mut bash, Some("x"));
        assert_eq!(bash, ["-c", "exit 1"], "a generic agent is not told");
    }

    const ID: &str = "01a23180-6259-7a52-95e6-8e00230df027";

    fn codex(args: &[&str], conversation: Option<&str>) -> Vec<String> {
        let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        AgentKind::Codex.continue_conversation("/usr/local/bin/codex", &mut args, conversation);
        args
    }

    #[test]
    fn a_codex_restart_resumes_its_thread_without_its_opening_prompt() {
        let notify = r#"notify=["/bin/nightshift", "notify"]"#;
        assert_eq!(
            codex(&["-c", notify, "--no-daemon", "-m", "o3", "fix the flaky test"], Some(ID)),
            ["-c", notify, "--no-daemon", "-m", "o3", "resume", ID]
        );
        // Started on a conversation: the latest one is resumed, once.
        let resumed = codex(&["--no-daemon", "resume", "--last", "-s", "workspace-write", "go on"], Some(ID));
        assert_eq!(resumed, ["--no-daemon", "-s", "workspace-write", "resume", ID]);
        let again: Vec<&str> = resumed.iter().map(String::as_str).collect();
        let later = "01a23190-0000-7000-8000-000000000000";
        assert_eq!(codex(&again, Some(later)), ["--no-daemon", "-s", "workspace-write", "resume", later]);
        assert_eq!(codex(&["fork", ID, "--", "-x"], Some(later)), ["resume", later]);
    }

    #[test]
    fn a_codex_restart_without_a_known_thread_starts_as_before() {
        assert_eq!(codex(&["--no-daemon", "fix it"], None), ["--no-daemon", "fix it"]);
        assert_eq!(codex(&["exec", "--json", "fix it"], Some(ID)), ["exec", "--json", "fix it"], "not a TUI session");
        assert_eq!(codex(&["fix it"], Some("--last; rm -rf")), ["fix it"], "only a thread id goes on a command line");
        let mut wrapped: Vec<String> = ["-c", "exec codex"].map(String::from).to_vec();
        AgentKind::Codex.continue_conversation("/bin/sh", &mut wrapped, Some(ID));
        assert_eq!(wrapped, ["-c", "exec codex"], "a wrapper's arguments are its own");
    }

    #[test]
    fn a_claude_run_through_a_wrapper_keeps_the_wrappers_arguments() {
        // `nightshift run --agent claude -- bash -c 'claude …'`: bash's `-c` is not Claude's.
        let mut args: Vec<String> = ["-c", "exec claude"].map(String::from).to_vec();
        AgentKind::Claude.continue_conversation("/usr/bin/bash", &mut args, None);
        assert_eq!(args, ["-c", "exec claude", "--continue"]);
    }
}
