//! Claude Code's hooks, per session: the client's own word on its turns, dialogs and limits.
//!
//! Every Claude session Nightshift starts gets, in the same ephemeral `--settings` JSON as the
//! statusLine exporter, one `nightshift hook` command per event. The hook forwards the client's
//! payload over the session's control socket with the session's token and prints what Nightshift
//! answers (block a `Stop` to ask for a handoff, deny a `PreToolUse` the guard forbids, add context
//! at `SessionStart`). It fails open: when Nightshift cannot be reached it exits 0 at once (no
//! socket) or within [`HOOK_TIMEOUT`] (a socket that does not answer), printing nothing, and the
//! client carries on. Hooks given in `--settings` run beside the user's own, which stay untouched.

pub mod codex;
pub mod guard;
pub mod handoff;

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

/// What the client said, as Nightshift reads it. Every payload carries the client's conversation id.
#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    /// The client's conversation id (`claude --resume <id>`).
    pub conversation: Option<String>,
    pub event: Event,
}

/// The events, with what Nightshift reads of each.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The client started (`startup`), resumed a conversation (`resume`), or cleared it (`clear`).
    SessionStart { source: String },
    /// A prompt was submitted: a turn starts.
    UserPromptSubmit,
    /// The turn ended. `continued` is true when it ended after a block of ours (its answer to it).
    Stop { continued: bool, last_message: Option<String> },
    /// The turn ended in an error (`rate_limit` for a usage limit, with the client's message).
    StopFailure { error: String, last_message: Option<String> },
    /// The client needs the user: `permission_prompt` (a tool), `idle_prompt` (sitting idle).
    Notification { kind: String, message: String },
    /// A tool is about to run.
    PreToolUse { tool: String, input: Value },
    /// The context is about to be compacted (`manual` or `auto`).
    PreCompact { trigger: String },
    /// The client is ending.
    SessionEnd { reason: String },
    /// Codex's notify: a turn completed. (Codex says nothing of a turn that failed, a usage limit
    /// included, or that the user interrupted.)
    TurnComplete { last_message: Option<String> },
    /// An event of a newer client.
    Other { name: String },
}

#[derive(Debug, thiserror::Error)]
#[error("not a Claude Code hook payload: {0}")]
pub struct NotAHook(String);

fn text(v: &Value, key: &str) -> Option<String> {
    v[key].as_str().map(|s| s.chars().take(64 * 1024).collect())
}

impl Hook {
    /// Reads a payload as the client sends it on the hook's stdin.
    pub fn from_payload(v: &Value) -> Result<Self, NotAHook> {
        let name = v["hook_event_name"].as_str().ok_or_else(|| NotAHook("no hook_event_name".into()))?;
        let event = match name {
            "SessionStart" => Event::SessionStart { source: text(v, "source").unwrap_or_default() },
            "UserPromptSubmit" => Event::UserPromptSubmit,
            "Stop" => Event::Stop {
                continued: v["stop_hook_active"].as_bool().unwrap_or(false),
                last_message: text(v, "last_assistant_message"),
            },
            "StopFailure" => Event::StopFailure {
                error: text(v, "error").unwrap_or_default(),
                last_message: text(v, "last_assistant_message"),
            },
            "Notification" => Event::Notification {
                kind: text(v, "notification_type").unwrap_or_default(),
                message: text(v, "message").unwrap_or_default(),
            },
            "PreToolUse" => {
                Event::PreToolUse { tool: text(v, "tool_name").unwrap_or_default(), input: v["tool_input"].clone() }
            }
            "PreCompact" => Event::PreCompact { trigger: text(v, "trigger").unwrap_or_default() },
            "SessionEnd" => Event::SessionEnd { reason: text(v, "reason").unwrap_or_default() },
            other => Event::Other { name: other.chars().take(64).collect() },
        };
        Ok(Self { conversation: text(v, "session_id").filter(|s| !s.is_empty()), event })
    }

    /// The event's name, as the client spells it.
    pub fn name(&self) -> &str {
        match &self.event {
            Event::SessionStart { .. } => "SessionStart",
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::Stop { .. } => "Stop",
            Event::StopFailure { .. } => "StopFailure",
            Event::Notification { .. } => "Notification",
            Event::PreToolUse { .. } => "PreToolUse",
            Event::PreCompact { .. } => "PreCompact",
            Event::SessionEnd { .. } => "SessionEnd",
            Event::TurnComplete { .. } => codex::TURN_COMPLETE,
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

/// The hooks part of the `--settings` JSON: every event runs `command`.
pub fn settings(command: &str) -> Value {
    let entry = |matcher: Option<&str>| {
        let mut e = json!({"hooks": [{"type": "command", "command": command, "timeout": 10}]});
        if let Some(m) = matcher {
            e["matcher"] = json!(m);
        }
        json!([e])
    };
    let mut hooks = serde_json::Map::new();
    for event in EVENTS {
        let matcher = (event == "PreToolUse").then_some("*");
        hooks.insert(event.to_string(), entry(matcher));
    }
    Value::Object(hooks)
}

/// Lays `ours` (a `--settings` JSON) over settings the user gave the client themselves with
/// `--settings` (inline JSON): their keys stay, their hooks run beside ours, our statusLine
/// exporter (which prints theirs) takes the status line.
pub fn merge_settings(theirs: &Value, ours: &Value) -> Value {
    let mut merged = theirs.clone();
    let Some(out) = merged.as_object_mut() else { return ours.clone() };
    if let Some(status) = ours.get("statusLine") {
        out.insert("statusLine".into(), status.clone());
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
    fn payloads_are_read_as_the_real_client_sends_them() {
        let stop = json!({"session_id": "0b2c", "hook_event_name": "Stop", "stop_hook_active": false,
            "last_assistant_message": "Done.", "cwd": "/w", "transcript_path": "/t"});
        let hook = Hook::from_payload(&stop).unwrap();
        assert_eq!(hook.conversation.as_deref(), Some("0b2c"));
        assert_eq!(hook.event, Event::Stop { continued: false, last_message: Some("Done.".into()) });
        let limit = json!({"session_id": "0b2c", "hook_event_name": "StopFailure", "error": "rate_limit",
            "last_assistant_message": "You've hit your 5-hour limit · resets 8:32am (UTC)"});
        assert!(
            matches!(Hook::from_payload(&limit).unwrap().event, Event::StopFailure { error, .. } if error == "rate_limit")
        );
        let tool = json!({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}});
        let hook = Hook::from_payload(&tool).unwrap();
        assert_eq!(hook.conversation, None);
        assert!(matches!(hook.event, Event::PreToolUse { tool, input } if tool == "Bash" && input["command"] == "ls"));
        assert!(Hook::from_payload(&json!({"x": 1})).is_err());
        assert!(matches!(Hook::from_payload(&json!({"hook_event_name": "Later"})).unwrap().event, Event::Other { .. }));
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
        let ours = json!({"statusLine": {"type": "command", "command": "ns statusline"}, "hooks": settings("ns hook")});
        assert_eq!(ours["hooks"].as_object().unwrap().len(), EVENTS.len());
        assert_eq!(ours["hooks"]["PreToolUse"][0]["matcher"], "*");
        let theirs =
            json!({"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}});
        let merged = merge_settings(&theirs, &ours);
        assert_eq!(merged["model"], "opus");
        assert_eq!(merged["hooks"]["Stop"].as_array().unwrap().len(), 2, "theirs and ours");
        assert_eq!(merged["hooks"]["Stop"][0]["hooks"][0]["command"], "say done");
        assert_eq!(merged["statusLine"]["command"], "ns statusline");
    }
}
