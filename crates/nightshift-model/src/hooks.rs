//! Claude Code's hooks, per session: the client's own word on its turns, dialogs and limits.
//!
//! Every Claude session Nightshift starts gets, in the same ephemeral `--settings` JSON as the
//! statusLine exporter, one `nightshift hook` command per event. The hook forwards the client's
//! payload over the session's control socket with the session's token and prints what Nightshift
//! answers (block a `Stop` to ask for a handoff, deny a `PreToolUse` the guard forbids, add context
//! at `SessionStart`). It fails open: when Nightshift cannot be reached it exits 0 at once (no
//! socket) or within [`HOOK_TIMEOUT`] (a socket that does not answer), printing nothing, and the
//! client carries on. Hooks given in `--settings` run beside the user's own, which stay untouched.
//!
//! Except where the guard is armed: a guarded session's `PreToolUse` hook runs `nightshift hook
//! --guarded` and fails closed for a Bash command. No Nightshift to ask, no answer within
//! [`GUARD_TIMEOUT`], an answer it does not understand, a command too long to send: it refuses
//! the command, saying why, and journals `guard_unreachable`.

pub mod guard;
pub mod shell;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The client's events Nightshift listens to.
pub const EVENTS: [&str; 8] = [
    "SessionStart",
    "UserPromptSubmit",
    "Stop",
    "StopFailure",
    "Notification",
    "PreToolUse",
    "PreCompact",
    "SessionEnd",
];

/// The longest a hook waits for Nightshift before it lets the client go on without an answer.
pub const HOOK_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(1500);
/// The longest a guarded session's hook waits for the guard before it refuses the command. A
/// healthy supervisor answers in milliseconds: the session's answer goes before anything of its
/// step is journalled, and the repositories are read from their files.
pub const GUARD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// The longest a guarded hook then spends journalling `guard_unreachable` itself.
pub const GUARD_JOURNAL_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
/// The client's own limit on a hook, in seconds (it goes on without the hook's word after it):
/// a guarded hook says no well before it.
pub const CLIENT_HOOK_TIMEOUT_SECS: u64 = 10;

/// What the client said, as Nightshift reads it. Every payload carries the client's conversation id.
#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    /// The client's conversation id (`claude --resume <id>`).
    pub conversation: Option<String>,
    pub event: Event,
}

/// A word the client sends in a field with a few known values, typed: the known ones by name, any
/// other (a newer client's) kept as it came, cut to 64 characters.
macro_rules! wire_words {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $wire:literal),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
            /// A word this version does not know.
            Other(String),
        }

        impl $name {
            /// The word as the client spells it.
            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $wire,)*
                    Self::Other(word) => word,
                }
            }
        }

        impl From<&str> for $name {
            fn from(word: &str) -> Self {
                match word {
                    $($wire => Self::$variant,)*
                    other => Self::Other(other.chars().take(64).collect()),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

wire_words!(
    /// Why the client started: a new conversation, one resumed, one cleared, or compacted.
    StartSource { Startup = "startup", Resume = "resume", Clear = "clear", Compact = "compact" }
);
wire_words!(
    /// What a Notification hook is about.
    NotificationKind {
        /// A tool waits for the user's permission.
        PermissionPrompt = "permission_prompt",
        /// The client has sat idle at its prompt.
        IdlePrompt = "idle_prompt",
        ElicitationDialog = "elicitation_dialog",
        AuthSuccess = "auth_success",
    }
);
wire_words!(
    /// Why a turn failed (StopFailure's `error`).
    StopError {
        /// A usage limit.
        RateLimit = "rate_limit",
    }
);
wire_words!(
    /// What compacts the context: the user's `/compact` or the client itself.
    CompactTrigger { Manual = "manual", Auto = "auto" }
);
wire_words!(
    /// Why the client ends.
    EndReason { Clear = "clear", Logout = "logout", PromptInputExit = "prompt_input_exit" }
);

/// The events, with what Nightshift reads of each.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The client started (`startup`), resumed a conversation (`resume`), or cleared it (`clear`).
    SessionStart { source: StartSource },
    /// A prompt was submitted: a turn starts (`prompt`: what it says).
    UserPromptSubmit { prompt: Option<String> },
    /// The turn ended. `continued` is true when it ended after a block of ours (its answer to it).
    Stop { continued: bool, last_message: Option<String> },
    /// The turn ended in an error (`rate_limit` for a usage limit, with the client's message).
    StopFailure { error: StopError, last_message: Option<String> },
    /// The client needs the user: `permission_prompt` (a tool), `idle_prompt` (sitting idle).
    Notification { kind: NotificationKind, message: String },
    /// A tool is about to run, from `cwd` (where the agent's shell is: its `cd`s persist).
    PreToolUse { tool: String, input: Value, cwd: Option<String> },
    /// A tool ran (`PostToolUse`), or failed with `error` (`PostToolUseFailure`): asked for only in
    /// a sandboxed session, and only of Bash.
    ToolEnded { tool: String, input: Value, error: Option<String> },
    /// The context is about to be compacted (`manual` or `auto`).
    PreCompact { trigger: CompactTrigger },
    /// The client is ending.
    SessionEnd { reason: EndReason },
    /// Codex's notify: a turn completed. (Codex says nothing of a turn that failed, a usage limit
    /// included, or that the user interrupted.)
    TurnComplete { last_message: Option<String>, input: Vec<String> },
    /// An event of a newer client.
    Other { name: String },
}

#[derive(Debug, thiserror::Error)]
#[error("not a Claude Code hook payload: {0}")]
pub struct NotAHook(String);

/// A field of a few known words (empty when missing: an unknown word).
fn word<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_default()
}

fn text(v: &Value, key: &str) -> Option<String> {
    v[key].as_str().map(|s| s.chars().take(64 * 1024).collect())
}

impl Hook {
    /// Reads a payload as the client sends it on the hook's stdin.
    pub fn from_payload(v: &Value) -> Result<Self, NotAHook> {
        let name = v["hook_event_name"].as_str().ok_or_else(|| NotAHook("no hook_event_name".into()))?;
        let event = match name {
            "SessionStart" => Event::SessionStart { source: word(v, "source").into() },
            "UserPromptSubmit" => Event::UserPromptSubmit { prompt: text(v, "prompt") },
            "Stop" => Event::Stop {
                continued: v["stop_hook_active"].as_bool().unwrap_or(false),
                last_message: text(v, "last_assistant_message"),
            },
            "StopFailure" => {
                Event::StopFailure { error: word(v, "error").into(), last_message: text(v, "last_assistant_message") }
            }
            "Notification" => Event::Notification {
                kind: word(v, "notification_type").into(),
                message: text(v, "message").unwrap_or_default(),
            },
            "PreToolUse" => Event::PreToolUse {
                tool: text(v, "tool_name").unwrap_or_default(),
                input: v["tool_input"].clone(),
                cwd: text(v, "cwd"),
            },
            "PostToolUse" | "PostToolUseFailure" => Event::ToolEnded {
                tool: text(v, "tool_name").unwrap_or_default(),
                input: v["tool_input"].clone(),
                error: (name == "PostToolUseFailure").then(|| text(v, "error").unwrap_or_default()),
            },
            "PreCompact" => Event::PreCompact { trigger: word(v, "trigger").into() },
            "SessionEnd" => Event::SessionEnd { reason: word(v, "reason").into() },
            other => Event::Other { name: other.chars().take(64).collect() },
        };
        Ok(Self { conversation: text(v, "session_id").filter(|s| !s.is_empty()), event })
    }

    /// The event's name, as the client spells it.
    pub fn name(&self) -> &str {
        match &self.event {
            Event::SessionStart { .. } => "SessionStart",
            Event::UserPromptSubmit { .. } => "UserPromptSubmit",
            Event::Stop { .. } => "Stop",
            Event::StopFailure { .. } => "StopFailure",
            Event::Notification { .. } => "Notification",
            Event::PreToolUse { .. } => "PreToolUse",
            Event::ToolEnded { error: None, .. } => "PostToolUse",
            Event::ToolEnded { error: Some(_), .. } => "PostToolUseFailure",
            Event::PreCompact { .. } => "PreCompact",
            Event::SessionEnd { .. } => "SessionEnd",
            Event::TurnComplete { .. } => crate::agent::codex::TURN_COMPLETE,
            Event::Other { name } => name,
        }
    }
}

/// What a hook answers the client.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum Answer {
    /// Nothing to say: the client goes on.
    #[default]
    Pass,
    /// `Stop`: do not stop yet; the reason goes to the model as the next request.
    Block { reason: String },
    /// `PreToolUse`: the tool call is refused; the reason goes to the model.
    Deny { reason: String },
    /// `SessionStart`: context added to the conversation.
    Context { text: String },
}

impl Answer {
    /// What the hook prints for the client (nothing for a pass).
    pub fn stdout(&self) -> Option<String> {
        let v = match self {
            Self::Pass => return None,
            Self::Block { reason } => json!({"decision": "block", "reason": reason}),
            Self::Deny { reason } => json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}}),
            Self::Context { text } => {
                json!({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}})
            }
        };
        Some(v.to_string())
    }
}

/// The hooks part of the `--settings` JSON: every event runs `command`, but `PreToolUse` runs
/// `guarded` in a guarded session (the hook that fails closed).
pub fn settings(command: &str, sandboxed: bool, guarded: Option<&str>) -> Value {
    let entry = |matcher: Option<&str>, command: &str| {
        let mut e = json!({"hooks": [{"type": "command", "command": command, "timeout": CLIENT_HOOK_TIMEOUT_SECS}]});
        if let Some(m) = matcher {
            e["matcher"] = json!(m);
        }
        json!([e])
    };
    let mut hooks = serde_json::Map::new();
    for event in EVENTS {
        let (matcher, command) = match event {
            "PreToolUse" => (Some("*"), guarded.unwrap_or(command)),
            _ => (None, command),
        };
        hooks.insert(event.to_string(), entry(matcher, command));
    }
    // What a sandboxed session's commands did, for the journal.
    if sandboxed {
        for event in ["PostToolUse", "PostToolUseFailure"] {
            hooks.insert(event.to_string(), entry(Some("Bash"), command));
        }
    }
    Value::Object(hooks)
}

/// Lays `ours` (a `--settings` JSON) over settings the user gave the client themselves with
/// `--settings` (inline JSON): their keys stay, their hooks run beside ours, our statusLine
/// exporter (which prints theirs) takes the status line, and our sandbox (a sandboxed session's)
/// takes theirs.
pub fn merge_settings(theirs: &Value, ours: &Value) -> Value {
    let mut merged = theirs.clone();
    let Some(out) = merged.as_object_mut() else { return ours.clone() };
    for key in ["statusLine", "sandbox"] {
        if let Some(value) = ours.get(key) {
            out.insert(key.into(), value.clone());
        }
    }
    if let Some(Value::Object(our_hooks)) = ours.get("hooks") {
        let hooks = out.entry("hooks").or_insert_with(|| json!({}));
        if !hooks.is_object() {
            *hooks = json!({});
        }
        let hooks = hooks.as_object_mut().expect("an object");
        for (event, entries) in our_hooks {
            let list = hooks.entry(event.clone()).or_insert_with(|| json!([]));
            if let (Some(list), Some(entries)) = (list.as_array_mut(), entries.as_array()) {
                list.extend(entries.iter().cloned());
            }
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clients_words_are_typed_and_a_newer_one_is_kept_as_it_came() {
        let read = |v: Value| Hook::from_payload(&v).unwrap().event;
        let start = read(json!({"hook_event_name": "SessionStart", "source": "clear"}));
        assert_eq!(start, Event::SessionStart { source: StartSource::Clear });
        let asked = read(json!({"hook_event_name": "Notification", "notification_type": "permission_prompt",
                                "message": "Claude needs your permission"}));
        assert!(matches!(asked, Event::Notification { kind: NotificationKind::PermissionPrompt, .. }));
        let newer = read(json!({"hook_event_name": "SessionStart", "source": "teleport"}));
        assert_eq!(newer, Event::SessionStart { source: StartSource::Other("teleport".into()) });
        let Event::SessionStart { source } = newer else { unreachable!() };
        assert_eq!(source.as_str(), "teleport");
        // A field left out reads as an unknown word, never as a known one.
        let bare = read(json!({"hook_event_name": "PreCompact"}));
        assert_eq!(bare, Event::PreCompact { trigger: CompactTrigger::Other(String::new()) });
        assert_eq!(CompactTrigger::from("auto").to_string(), "auto");
    }

    #[test]
    fn payloads_are_read_as_the_real_client_sends_them() {
        let stop = json!({"session_id": "0b2c", "hook_event_name": "Stop", "stop_hook_active": false,
            "last_assistant_message": "Done.", "cwd": "/w", "transcript_path": "/t"});
        let hook = Hook::from_payload(&stop).unwrap();
        assert_eq!(hook.conversation.as_deref(), Some("0b2c"));
        assert_eq!(hook.event, Event::Stop { continued: false, last_message: Some("Done.".into()) });
        let limit = json!({"session_id": "0b2c", "hook_event_name": "StopFailure", "error": "rate_limit",
            "last_assistant_message": "You've hit your 5-hour limit · resets 8:32am (UTC)"});
        assert!(matches!(
            Hook::from_payload(&limit).unwrap().event,
            Event::StopFailure { error: StopError::RateLimit, .. }
        ));
        let tool = json!({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"},
            "cwd": "/w/sub"});
        let hook = Hook::from_payload(&tool).unwrap();
        assert_eq!(hook.conversation, None);
        assert!(matches!(hook.event, Event::PreToolUse { tool, input, cwd }
            if tool == "Bash" && input["command"] == "ls" && cwd.as_deref() == Some("/w/sub")));
        assert!(Hook::from_payload(&json!({"x": 1})).is_err());
        assert!(matches!(Hook::from_payload(&json!({"hook_event_name": "Later"})).unwrap().event, Event::Other { .. }));
    }

    #[test]
    fn a_guarded_hook_says_no_well_inside_the_clients_time() {
        let said_no = GUARD_TIMEOUT + GUARD_JOURNAL_WAIT;
        assert!(
            said_no + std::time::Duration::from_secs(2) <= std::time::Duration::from_secs(CLIENT_HOOK_TIMEOUT_SECS)
        );
    }

    #[test]
    fn answers_are_what_the_client_reads() {
        assert_eq!(Answer::Pass.stdout(), None);
        let block: Value =
            serde_json::from_str(&Answer::Block { reason: "hand off".into() }.stdout().unwrap()).unwrap();
        assert_eq!(block, json!({"decision": "block", "reason": "hand off"}));
        let deny: Value = serde_json::from_str(&Answer::Deny { reason: "no".into() }.stdout().unwrap()).unwrap();
        assert_eq!(deny["hookSpecificOutput"]["permissionDecision"], "deny");
        let ctx: Value = serde_json::from_str(&Answer::Context { text: "notes".into() }.stdout().unwrap()).unwrap();
        assert_eq!(ctx["hookSpecificOutput"]["additionalContext"], "notes");
    }

    #[test]
    fn every_event_runs_the_hook_and_the_users_own_hooks_stay() {
        let ours = json!({"statusLine": {"type": "command", "command": "ns statusline"},
            "hooks": settings("ns hook", false, None)});
        assert_eq!(ours["hooks"].as_object().unwrap().len(), EVENTS.len());
        assert_eq!(ours["hooks"]["PreToolUse"][0]["matcher"], "*");
        assert_eq!(ours["hooks"]["PreToolUse"][0]["hooks"][0]["command"], "ns hook");
        // A guarded session's PreToolUse hook is the one that fails closed; the others fail open.
        let guarded = settings("ns hook", false, Some("ns hook --guarded"));
        assert_eq!(guarded["PreToolUse"][0]["hooks"][0]["command"], "ns hook --guarded");
        assert_eq!(guarded["Stop"][0]["hooks"][0]["command"], "ns hook");
        let theirs =
            json!({"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}});
        let merged = merge_settings(&theirs, &ours);
        assert_eq!(merged["model"], "opus");
        assert_eq!(merged["hooks"]["Stop"].as_array().unwrap().len(), 2, "theirs and ours");
        assert_eq!(merged["hooks"]["Stop"][0]["hooks"][0]["command"], "say done");
        assert_eq!(merged["statusLine"]["command"], "ns statusline");
        // A sandboxed session also hears how its Bash calls ended.
        let sandboxed = settings("ns hook", true, None);
        assert_eq!(sandboxed["PostToolUseFailure"][0]["matcher"], "Bash");
        assert_eq!(sandboxed.as_object().unwrap().len(), EVENTS.len() + 2);
        let failed = Hook::from_payload(&json!({"hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
            "tool_input": {"command": "ls"}, "error": "Exit code 2"}))
        .unwrap();
        assert_eq!(failed.name(), "PostToolUseFailure");
        assert!(matches!(failed.event, Event::ToolEnded { error: Some(e), .. } if e == "Exit code 2"));
        // Our sandbox takes the place of one the user passed.
        let mine = merge_settings(&json!({"sandbox": {"enabled": false}}), &json!({"sandbox": {"enabled": true}}));
        assert_eq!(mine["sandbox"]["enabled"], true);
    }
}
