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
    /// named (`--resume <id>`, from its hooks), or else its directory's latest (`--continue`).
    /// When `program` is the `claude` CLI itself, whatever its arguments said about which
    /// conversation goes; a wrapper's arguments (`bash -c …`) are its own and stay.
    pub fn continue_conversation(self, program: &str, args: &mut Vec<String>, conversation: Option<&str>) {
        if self != Self::Claude {
            return;
        }
        let mut kept = Vec::with_capacity(args.len() + 2);
        let mut it = std::mem::take(args).into_iter();
        let ours = Self::infer(program) == Self::Claude;
        while let Some(arg) = it.next() {
            if !ours {
                kept.push(arg);
                continue;
            }
            match arg.as_str() {
                "--continue" | "-c" => {}
                "--resume" | "-r" => {
                    it.next();
                }
                a if a.starts_with("--resume=") => {}
                _ => kept.push(arg),
            }
        }
        match conversation {
            Some(id) => kept.extend(["--resume".to_string(), id.to_string()]),
            None => kept.push("--continue".into()),
        }
        *args = kept;
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
        assert_eq!(bash, ["-c", "exit 1"], "only Claude is told");
    }

    #[test]
    fn a_claude_run_through_a_wrapper_keeps_the_wrappers_arguments() {
        // `nightshift run --agent claude -- bash -c 'claude …'`: bash's `-c` is not Claude's.
        let mut args: Vec<String> = ["-c", "exec claude"].map(String::from).to_vec();
        AgentKind::Claude.continue_conversation("/usr/bin/bash", &mut args, None);
        assert_eq!(args, ["-c", "exec claude", "--continue"]);
    }
}
