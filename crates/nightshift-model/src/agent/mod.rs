//! The agent CLIs Nightshift knows. Each session is run as one of them; `generic` is any command.
//! [`Adapter`] holds what each one's screen looks like in its states; [`Sandbox`] is the agent's own
//! sandbox, as a session passes it.

mod adapter;
pub mod codex;
mod sandbox;

pub use adapter::{
    Adapter, AdapterError, CycleCommands, Dialog, DialogKind, Overrides, Readings, Reply, Subject, Verdict,
};
pub use sandbox::{refused_hosts, sandbox_refused, turned_off, Fence, Proxied, Sandbox};

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

    /// The plan whose windows the agent's usage counts against: Codex's own, and Claude's for
    /// Claude Code and anything else (only Claude's statusLine reported before Codex's data did).
    pub fn plan(self) -> AgentKind {
        match self {
            Self::Codex => Self::Codex,
            Self::Claude | Self::Generic => Self::Claude,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::Generic => "generic",
        }
    }

    /// How to log this agent's client in to the account whose folder is `dir`, as a phrase.
    pub fn login_hint(self, dir: &std::path::Path) -> String {
        let dir = dir.display().to_string();
        let plain = !dir.is_empty() && dir.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:,+@%".contains(c));
        let dir = if plain { dir } else { format!("'{}'", dir.replace('\'', r"'\''")) };
        match self {
            Self::Codex => format!("`CODEX_HOME={dir} codex login`"),
            Self::Claude | Self::Generic => format!("`CLAUDE_CONFIG_DIR={dir} claude` and /login"),
        }
    }

    /// The file in an account's folder that holds its client's login (a token in the environment
    /// stands in for it).
    pub fn credentials_file(self) -> &'static str {
        match self {
            Self::Codex => "auth.json",
            Self::Claude | Self::Generic => ".credentials.json",
        }
    }

    /// The environment variables whose token logs the client in without its folder's file.
    pub fn token_vars(self) -> &'static [&'static str] {
        match self {
            Self::Codex => &["OPENAI_API_KEY", "CODEX_API_KEY"],
            Self::Claude | Self::Generic => &["CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"],
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
                if let Some(id) = conversation.filter(|id| codex::is_thread_id(id)) {
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

    /// The command's arguments without its opening prompt, and the prompt: the prompt starts the
    /// first conversation only, and a restart or a restore must never give it again (a prompt
    /// such as "migrate the database and drop the old table" must not run twice because a process
    /// died). Only the agent's own CLI is read so; a wrapper's arguments (`bash -c …`) are its own
    /// and stay whole.
    pub fn split_prompt(self, program: &str, args: &[String]) -> (Vec<String>, Option<String>) {
        let whole = || (args.to_vec(), None);
        if Self::infer(program) != self {
            return whole();
        }
        let (values, optional, variadic, commands): (&[&str], &[&str], &[&str], &[&str]) = match self {
            Self::Claude => (&CLAUDE_VALUE_OPTIONS, &CLAUDE_OPTIONAL_VALUE, &CLAUDE_VARIADIC, &CLAUDE_COMMANDS),
            Self::Codex => (&CODEX_VALUE_OPTIONS, &[], &[], &CODEX_OTHER_COMMANDS),
            Self::Generic => return whole(),
        };
        let mut kept = Vec::with_capacity(args.len());
        let mut prompt = None;
        let mut it = args.iter().peekable();
        let mut only_positionals = false;
        while let Some(arg) = it.next() {
            let a = arg.as_str();
            let positional = only_positionals || !a.starts_with('-') || a == "-";
            if !positional {
                kept.push(arg.clone());
                if a == "--" {
                    only_positionals = true;
                } else if a.contains('=') {
                    // `--model=opus`: the value is in the word.
                } else if variadic.contains(&a) {
                    // Commander's variadic options take every word up to the next option (so a
                    // prompt after `--allowedTools Bash` is a tool name to the client, not a prompt).
                    while let Some(v) = it.next_if(|v| !v.starts_with('-')) {
                        kept.push(v.clone());
                    }
                } else if values.contains(&a) {
                    kept.extend(it.next().cloned());
                } else if optional.contains(&a) {
                    kept.extend(it.next_if(|v| !v.starts_with('-')).cloned());
                }
                continue;
            }
            if prompt.is_some() {
                kept.push(arg.clone());
                continue;
            }
            if !only_positionals && (commands.contains(&a) || (self == Self::Codex && matches!(a, "resume" | "fork"))) {
                // A subcommand (`claude mcp …`, `codex exec …`, `codex resume ID`): its words are
                // its own; a restart picks its conversation up by itself.
                return whole();
            }
            prompt = Some(arg.clone());
        }
        (kept, prompt)
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

/// The Claude Code options that take a value (2.1.332's `claude --help`, and the hidden ones its
/// own text names).
const CLAUDE_VALUE_OPTIONS: [&str; 33] = [
    "--agent",
    "--agents",
    "--append-system-prompt",
    "--append-system-prompt-file",
    "--autocompact",
    "--debug-file",
    "--effort",
    "--environment",
    "--fallback-model",
    "--input-format",
    "--json-schema",
    "--max-budget-usd",
    "--max-turns",
    "--model",
    "-n",
    "--name",
    "--output-format",
    "--permission-mode",
    "--permission-prompt-tool",
    "--permission-prompts",
    "--plugin-dir",
    "--plugin-url",
    "--remote-control-session-name-prefix",
    "--session-id",
    "--setting-sources",
    "--settings",
    "--system-prompt",
    "--system-prompt-file",
    "--system-prompt-snapshot",
    "--resume-session-at",
    "--worktree-name",
    "--teammate-mode",
    "--sandbox-settings",
];

/// Its options whose value may be left out (taken when the next word is not an option).
const CLAUDE_OPTIONAL_VALUE: [&str; 11] = [
    "--cloud",
    "-d",
    "--debug",
    "--from-pr",
    "--prompt-suggestions",
    "--remote-control",
    "-r",
    "--resume",
    "--teleport",
    "-w",
    "--worktree",
];

/// Its options that take every word up to the next option.
const CLAUDE_VARIADIC: [&str; 10] = [
    "--add-dir",
    "--allowedTools",
    "--allowed-tools",
    "--betas",
    "--disallowedTools",
    "--disallowed-tools",
    "--file",
    "--mcp-config",
    "--tools",
    "--plugin",
];

/// Its subcommands, which start no conversation of a prompt.
const CLAUDE_COMMANDS: [&str; 22] = [
    "agents",
    "attach",
    "auth",
    "auto-mode",
    "config",
    "doctor",
    "gateway",
    "import",
    "install",
    "kill",
    "logs",
    "mcp",
    "migrate-installer",
    "plugin",
    "plugins",
    "purge",
    "respawn",
    "rm",
    "setup-token",
    "stop",
    "ultrareview",
    "update",
];

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

/// The account a session runs under: its name (or the directory given alone) and the client's
/// config directory. Nightshift hands the directory to the client and never looks inside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    pub name: String,
    pub dir: std::path::PathBuf,
}

impl Account {
    /// The variable that points `agent` at its config directory.
    pub fn variable(agent: AgentKind) -> Option<&'static str> {
        match agent {
            AgentKind::Claude => Some("CLAUDE_CONFIG_DIR"),
            AgentKind::Codex => Some("CODEX_HOME"),
            AgentKind::Generic => None,
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

    fn split(agent: AgentKind, program: &str, args: &[&str]) -> (Vec<String>, Option<String>) {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        agent.split_prompt(program, &args)
    }

    #[test]
    fn the_opening_prompt_is_told_apart_from_the_options_and_their_values() {
        let prompt = Some("Work through TASKS.md".to_string());
        let (args, p) = split(
            AgentKind::Claude,
            "/opt/claude",
            &["--model", "opus", "--permission-mode", "acceptEdits", "Work through TASKS.md", "--verbose"],
        );
        assert_eq!(
            (args, p),
            (
                ["--model", "opus", "--permission-mode", "acceptEdits", "--verbose"].map(String::from).to_vec(),
                prompt.clone()
            )
        );
        let (args, p) = split(AgentKind::Claude, "claude", &["--model=opus", "-c", "Work through TASKS.md"]);
        assert_eq!((args, p), (["--model=opus", "-c"].map(String::from).to_vec(), prompt.clone()));
        // An optional value is taken when the next word is not an option, as the client does.
        assert_eq!(split(AgentKind::Claude, "claude", &["--resume", "abc", "go on"]).1.as_deref(), Some("go on"));
        assert_eq!(split(AgentKind::Claude, "claude", &["--resume", "--verbose", "go on"]).1.as_deref(), Some("go on"));
        // A variadic option takes every word up to the next option: the client sees no prompt.
        let (args, p) = split(AgentKind::Claude, "claude", &["--allowedTools", "Bash", "Edit", "go on"]);
        assert_eq!((args.len(), p), (4, None));
        assert_eq!(split(AgentKind::Claude, "claude", &["--allowedTools=Bash", "go on"]).1.as_deref(), Some("go on"));
        assert_eq!(
            split(AgentKind::Claude, "claude", &["--", "-p is a prompt here"]).1.as_deref(),
            Some("-p is a prompt here")
        );
        assert_eq!(split(AgentKind::Claude, "claude", &["mcp", "list"]), (vec!["mcp".into(), "list".into()], None));
        assert_eq!(split(AgentKind::Claude, "claude", &["--model", "opus"]).1, None, "no prompt at all");
        // A wrapper's words are its own.
        assert_eq!(split(AgentKind::Claude, "bash", &["-c", "claude 'go on'"]).1, None);
        assert_eq!(split(AgentKind::Generic, "aider", &["go on"]).1, None);
        // Codex: its value options, and its subcommands keep their words.
        let (args, p) = split(AgentKind::Codex, "codex", &["-m", "o3", "--no-daemon", "fix the flaky test"]);
        assert_eq!(
            (args, p.as_deref()),
            (["-m", "o3", "--no-daemon"].map(String::from).to_vec(), Some("fix the flaky test"))
        );
        assert_eq!(split(AgentKind::Codex, "codex", &["resume", ID, "go on"]).1, None);
        assert_eq!(split(AgentKind::Codex, "codex", &["exec", "go on"]).1, None);
    }

    #[test]
    fn a_claude_run_through_a_wrapper_keeps_the_wrappers_arguments() {
        // `nightshift run --agent claude -- bash -c 'claude …'`: bash's `-c` is not Claude's.
        let mut args: Vec<String> = ["-c", "exec claude"].map(String::from).to_vec();
        AgentKind::Claude.continue_conversation("/usr/bin/bash", &mut args, None);
        assert_eq!(args, ["-c", "exec claude", "--continue"]);
    }
}
