//! The scenarios of the Anthropic stand-in: what a request asks for (the last `mock:` marker of
//! its prompt), and the streamed answer each gets: its words, their pace, the tool call it ends
//! with.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Bytes;
use serde_json::{json, Value};
use tokio::sync::mpsc;

#[derive(Debug, Clone, PartialEq)]
pub enum Scenario {
    Fast,
    Slow(Duration),
    Tool(u64),
    Perm,
    Question,
    Limit,
    Overload,
    /// Overloaded (529) for the first K requests of a prompt, then a fast answer.
    OverloadFor(u32),
    /// An answer that quotes a usage-limit message.
    Quote,
    /// Answering a tool result.
    AfterTool,
    /// A short answer reporting this many cache-read tokens: the context the client shows as used.
    Context(u64),
    /// A Bash tool call that force-pushes `main`.
    Push,
    /// A Bash tool call that edits, creates and deletes files (`mock:edit`).
    Edit,
    /// A Bash tool call that appends a step to `work.txt` and commits it (`mock:commit`).
    Commit,
    /// A Bash call that writes a file in the home folder, outside the project.
    Outside,
    /// A Bash call that writes `inside.txt` in the project and commits it (`mock:inside`).
    Inside,
    /// A request into a window a limit closed, before its reset: refused with the same 429.
    Refused,
    /// The answer to a request for a handoff (Nightshift's, found by its words).
    Handoff,
    /// A call of any tool with any input: `mock:bash COMMAND` (a Bash call running the rest of
    /// the line) or `mock:call TOOL {JSON}` (TOOL called with that input), so a test can have the
    /// agent do exactly what a hostile one would.
    Call {
        name: String,
        input: Value,
    },
}

/// What the mock answers Nightshift's request for a handoff.
pub const HANDOFF_ANSWER: &str =
    "Handoff (mock-handoff-7f3a): the parser is done and tested; next, wire it into the CLI; check the flaky test first.";

impl Scenario {
    pub(super) fn name(&self) -> String {
        match self {
            Self::Fast => "fast".into(),
            Self::Slow(d) => format!("slow:{}", d.as_secs()),
            Self::Tool(s) => format!("tool:{s}"),
            Self::Perm => "perm".into(),
            Self::Question => "question".into(),
            Self::Limit => "limit".into(),
            Self::Overload => "overload".into(),
            Self::OverloadFor(k) => format!("overload:{k}"),
            Self::Quote => "quote".into(),
            Self::AfterTool => "after_tool".into(),
            Self::Context(n) => format!("ctx:{n}"),
            Self::Push => "push".into(),
            Self::Edit => "edit".into(),
            Self::Commit => "commit".into(),
            Self::Outside => "outside".into(),
            Self::Inside => "inside".into(),
            Self::Refused => "refused".into(),
            Self::Handoff => "handoff".into(),
            Self::Call { name, .. } if name == "Bash" => "bash".into(),
            Self::Call { .. } => "call".into(),
        }
    }
}

/// The scenario named by the last `mock:` marker in `text` (fast when there is none).
pub fn scenario_for(text: &str) -> Scenario {
    let Some(pos) = text.rfind("mock:") else { return Scenario::Fast };
    let rest = text[pos + 5..].lines().next().unwrap_or_default();
    if let Some(command) = rest.strip_prefix("bash ") {
        let input = json!({"command": command.trim(), "description": "Run what the test asked for"});
        return Scenario::Call { name: "Bash".into(), input };
    }
    if let Some((name, input)) = rest.strip_prefix("call ").and_then(|r| r.trim().split_once(' ')) {
        if let Ok(input) = serde_json::from_str::<Value>(input.trim()) {
            return Scenario::Call { name: name.to_string(), input };
        }
    }
    let marker: String =
        text[pos + 5..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == ':' || *c == '.').collect();
    let mut parts = marker.split(':');
    let name = parts.next().unwrap_or("");
    let arg = parts.next().and_then(|a| a.parse::<f64>().ok());
    match name {
        "slow" => Scenario::Slow(Duration::from_secs_f64(arg.unwrap_or(20.0))),
        "tool" => Scenario::Tool(arg.unwrap_or(30.0) as u64),
        "edit" => Scenario::Edit,
        "commit" => Scenario::Commit,
        "outside" => Scenario::Outside,
        "inside" => Scenario::Inside,
        "perm" => Scenario::Perm,
        "question" => Scenario::Question,
        "limit" => Scenario::Limit,
        "overload" => match arg {
            Some(k) => Scenario::OverloadFor(k as u32),
            None => Scenario::Overload,
        },
        "quote" => Scenario::Quote,
        "ctx" => Scenario::Context(arg.unwrap_or(800_000.0) as u64),
        "push" => Scenario::Push,
        _ => Scenario::Fast,
    }
}

fn sse(event: &str, data: Value) -> Bytes {
    Bytes::from(format!("event: {event}\ndata: {data}\n\n"))
}

pub(super) async fn stream_answer(tx: &mpsc::Sender<Result<Bytes, Infallible>>, model: &str, scenario: &Scenario) {
    let send = |b: Bytes| async move { tx.send(Ok(b)).await.is_ok() };
    let cache_read = if let Scenario::Context(n) = scenario { *n } else { 0 };
    let start = json!({"type": "message_start", "message": {"id": "msg_mock", "type": "message", "role": "assistant",
        "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 1200, "cache_creation_input_tokens": 0, "cache_read_input_tokens": cache_read, "output_tokens": 1}}});
    if !send(sse("message_start", start)).await {
        return;
    }
    let (words, pause, tool): (Vec<String>, Duration, Option<Value>) = match scenario {
        Scenario::Slow(total) => {
            let n = (total.as_secs_f64() / 0.5).ceil().max(1.0) as usize;
            let words = (0..n).map(|i| format!("Part {} of a slowly streamed answer. ", i + 1)).collect();
            (words, *total / n as u32, None)
        }
        Scenario::Tool(secs) => (
            vec!["I'll run a command.".into()],
            Duration::from_millis(20),
            Some(
                json!({"name": "Bash", "input": {"command": format!("timeout {secs} tail -f /dev/null; echo waited {secs}s"), "description": "Wait a while"}}),
            ),
        ),
        Scenario::Perm => (
            vec!["I'll create a file.".into()],
            Duration::from_millis(20),
            Some(
                json!({"name": "Bash", "input": {"command": "touch mock-permission-file", "description": "Create a file"}}),
            ),
        ),
        Scenario::Question => (
            vec!["I have a question.".into()],
            Duration::from_millis(20),
            Some(json!({"name": "AskUserQuestion", "input": {"questions": [{
                "question": "Which database should the new service use?", "header": "Database", "multiSelect": false,
                "options": [{"label": "SQLite", "description": "Embedded, zero setup"},
                            {"label": "PostgreSQL", "description": "A server, more features"}]}]}})),
        ),
        Scenario::Push => (
            vec!["I'll push it.".into()],
            Duration::from_millis(20),
            Some(
                json!({"name": "Bash", "input": {"command": "git push --force origin main", "description": "Force-push main"}}),
            ),
        ),
        Scenario::Edit => (
            vec!["I'll change the files.".into()],
            Duration::from_millis(20),
            Some(json!({"name": "Bash", "input": {
                "command": "printf 'after\\n' > edit.txt && rm gone.txt && mkdir -p new && printf 'new\\n' > new/file.txt",
                "description": "Edit, add and delete files"}})),
        ),
        Scenario::Handoff => (vec![HANDOFF_ANSWER.to_string()], Duration::from_millis(20), None),
        Scenario::Call { name, input } => {
            (vec!["I'll do as asked.".into()], Duration::from_millis(20), Some(json!({"name": name, "input": input})))
        }
        Scenario::Commit => (
            vec!["I'll do the next step and commit it.".into()],
            Duration::from_millis(20),
            Some(json!({"name": "Bash", "input": {
                "command": "echo \"step $(date +%s%N)\" >> work.txt && git add work.txt && git -c user.name=agent -c user.email=agent@example.com commit -qm 'Do the next step'",
                "description": "Do the next step and commit it"}})),
        ),
        Scenario::Outside => (
            vec!["I'll leave a note in your home folder.".into()],
            Duration::from_millis(20),
            Some(json!({"name": "Bash", "input": {
                "command": "echo escaped > \"$HOME/outside-the-project.txt\"",
                "description": "Write outside the project"}})),
        ),
        Scenario::Inside => (
            vec!["I'll write it down and commit it.".into()],
            Duration::from_millis(20),
            Some(json!({"name": "Bash", "input": {
                "command": "echo kept >> inside.txt && git add inside.txt && git commit -qm 'Keep it'",
                "description": "Write inside the project and commit it"}})),
        ),
        Scenario::Quote => (
            [
                "The log said: ",
                "You've hit your limit · resets 3pm ",
                "(America/New_York) — ",
                "a quote, not a limit. ",
                "Done.",
            ]
            .map(String::from)
            .to_vec(),
            Duration::from_millis(300),
            None,
        ),
        _ => (
            ["Hello ", "from the ", "mock server. ", "This is a ", "short answer."].map(String::from).to_vec(),
            Duration::from_millis(30),
            None,
        ),
    };
    send(sse(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ))
    .await;
    for word in &words {
        tokio::time::sleep(pause).await;
        let delta = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": word}});
        if !send(sse("content_block_delta", delta)).await {
            return;
        }
    }
    send(sse("content_block_stop", json!({"type": "content_block_stop", "index": 0}))).await;
    let mut stop_reason = "end_turn";
    if let Some(tool) = tool {
        stop_reason = "tool_use";
        // Each call its own id, as the real API gives: the client pairs results with calls by id,
        // and a second call under a used id has its result taken for the first one's.
        static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = format!("toolu_mock_{}", CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let block = json!({"type": "tool_use", "id": id, "name": tool["name"], "input": {}});
        send(sse("content_block_start", json!({"type": "content_block_start", "index": 1, "content_block": block})))
            .await;
        let partial = tool["input"].to_string();
        let delta = json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": partial}});
        send(sse("content_block_delta", delta)).await;
        send(sse("content_block_stop", json!({"type": "content_block_stop", "index": 1}))).await;
    }
    send(sse(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
        "usage": {"output_tokens": 40, "cache_read_input_tokens": cache_read, "input_tokens": 1200}}),
    ))
    .await;
    send(sse("message_stop", json!({"type": "message_stop"}))).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_can_ask_for_any_command_or_tool_call() {
        let bash = scenario_for("do it mock:bash sh -c 'git push --force origin main' && echo \"done\"");
        assert_eq!(
            bash,
            Scenario::Call {
                name: "Bash".into(),
                input: json!({"command": "sh -c 'git push --force origin main' && echo \"done\"",
                              "description": "Run what the test asked for"}),
            }
        );
        let call = scenario_for(r#"mock:call WebFetch {"url": "http://127.0.0.9/x", "prompt": "read it"}"#);
        assert_eq!(call.name(), "call");
        assert_eq!(
            call,
            Scenario::Call {
                name: "WebFetch".into(),
                input: json!({"url": "http://127.0.0.9/x", "prompt": "read it"})
            }
        );
        assert_eq!(scenario_for("mock:call WebFetch {not json"), Scenario::Fast, "a malformed call is a plain answer");
        assert_eq!(scenario_for("mock:bash x mock:perm"), Scenario::Perm, "the last marker wins");
    }
}
