//! Reading a headless iteration's event stream: what the harness itself said, in typed fields.
//!
//! Two harnesses, two dialects (their event types do not overlap, so one [`readable`] serves both):
//!
//! Claude Code's `-p --output-format stream-json --verbose` writes one JSON object per line:
//! `system/init` (the conversation id), `system/api_retry`, `rate_limit_event`, `assistant`, `user`,
//! `result` (`total_cost_usd`, `usage`, `duration_ms`, `is_error`, `terminal_reason`,
//! `api_error_status`). Only those typed fields, the harness's stderr (anchored patterns) and its
//! exit status decide how an iteration ended. Narration — the task's text, a file the agent read, a
//! tool result quoting "usage limit" or "API Error: 500" — is never a limit and never a blip. A
//! stream with no final `result` (cut short by a huge line, a killed child) has spend *unknown*,
//! never zero.
//!
//! Codex's `exec --json` (measured on 0.171.0, `tests/fixtures/codex/0.171.0/exec`): `thread.started`
//! (the conversation id), `turn.started`, `item.started|updated|completed` (an `agent_message`, a
//! `command_execution`, a `file_change`, … or an `error` item, which is a warning), `error` (its
//! retries: `Reconnecting... 2/5 (…)`), and the turn's end, `turn.completed` with its `usage` or
//! `turn.failed` with the error's message. Codex reports no cost, only tokens.

use crate::agent::AgentKind;
use chrono::{DateTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the stream said about the money and tokens an iteration used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spend {
    /// `None`: not known (no final result came).
    pub cost_usd: Option<f64>,
    /// Input, output, cache reads and cache writes; `None`: not known.
    pub tokens: Option<u64>,
}

/// How an iteration ended, by the harness's own account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// The harness finished its task without an error.
    Done,
    /// It ended without finishing (the turn cap, an error during the work): the task stays open.
    Unfinished { reason: String },
    /// A usage limit stopped it.
    Limit {
        #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::clock::opt_ts")]
        resets_at: Option<DateTime<Utc>>,
        message: String,
    },
    /// A server blip, an overloaded API, the network: worth the same iteration again.
    Transient { reason: String },
    /// An error that another try will not fix (a rejected key, a bad request): the loop stops.
    Failed { reason: String },
}

impl Outcome {
    pub fn name(&self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::Unfinished { .. } => "unfinished",
            Self::Limit { .. } => "limit",
            Self::Transient { .. } => "transient",
            Self::Failed { .. } => "failed",
        }
    }
}

/// Everything an iteration's stream said.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub outcome: Outcome,
    pub spend: Spend,
    /// The harness's conversation id (each iteration has its own).
    pub conversation: Option<String>,
    /// The final answer's text (for the log; never classified).
    pub result: Option<String>,
    pub duration_ms: Option<u64>,
    /// The stream ended with its final event.
    pub complete: bool,
    /// The plan's windows as the harness last reported them (Claude's `rate_limit_event`).
    pub windows: Option<crate::usage::Sample>,
}

/// Lines longer than this are not parsed (a tool result carrying a whole file): the stream's spend
/// becomes unknown unless its final result still arrives.
pub const MAX_LINE: usize = 8 << 20;

/// Reads one iteration's stream, line by line.
#[derive(Debug, Default)]
pub struct Reader {
    /// Codex's dialect (else Claude Code's).
    codex: bool,
    conversation: Option<String>,
    /// Tokens of the answers so far (the assistant events' usage), for a ceiling checked mid-way.
    tokens_so_far: u64,
    /// The rate-limit event said `rejected`, with this reset.
    rejected: Option<Option<DateTime<Utc>>>,
    /// Its windows: how full each is, and when it resets.
    windows: Option<crate::usage::Sample>,
    /// The last assistant event's typed error (`rate_limit`, `server_error`, `authentication_failed`)
    /// and its text.
    assistant_error: Option<(String, String)>,
    result: Option<Value>,
    /// Codex: the turn's end (`turn.completed` or `turn.failed`).
    turn_end: Option<Value>,
    /// Codex: items of the model's own (a message, a command, an edit) were completed.
    answered: bool,
    dropped_lines: usize,
    bad_lines: usize,
}

impl Reader {
    /// A reader of `agent`'s stream: Codex's `exec --json`, else Claude Code's `stream-json`.
    pub fn new(agent: AgentKind) -> Self {
        Self { codex: agent == AgentKind::Codex, ..Self::default() }
    }

    /// One line of the stream (without its newline). Not JSON, or not an event: ignored.
    pub fn line(&mut self, line: &str) {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            if !line.trim().is_empty() {
                self.bad_lines += 1;
            }
            return;
        };
        match v["type"].as_str() {
            Some("system") => {
                if let Some(id) = v["session_id"].as_str().filter(|_| v["subtype"] == "init") {
                    self.conversation = Some(id.to_string());
                }
            }
            Some("rate_limit_event") => {
                let info = &v["rate_limit_info"];
                if info["status"] == "rejected" {
                    let reset = info["resetsAt"].as_i64().and_then(|s| Utc.timestamp_opt(s, 0).single());
                    self.rejected = Some(reset);
                }
                let window = |name: &str| {
                    let w = &info["unifiedWindows"][name];
                    let reset = w["resetsAt"].as_i64().and_then(|s| Utc.timestamp_opt(s, 0).single());
                    (w["utilization"].as_f64().map(|u| u * 100.0), reset)
                };
                let ((five, five_reset), (seven, seven_reset)) = (window("five_hour"), window("seven_day"));
                if five.is_some() || seven.is_some() {
                    self.windows = Some(crate::usage::Sample {
                        five_hour_pct: five,
                        five_hour_resets_at: five_reset,
                        seven_day_pct: seven,
                        seven_day_resets_at: seven_reset,
                        ..crate::usage::Sample::default()
                    });
                }
            }
            Some("assistant") => {
                self.tokens_so_far += tokens(&v["message"]["usage"]).unwrap_or(0);
                if let Some(error) = v["error"].as_str() {
                    let text = text_of(&v["message"]["content"]);
                    self.assistant_error = Some((error.to_string(), text));
                }
            }
            Some("result") => self.result = Some(v),
            Some("thread.started") => self.conversation = v["thread_id"].as_str().map(str::to_string),
            Some("item.completed") if v["item"]["type"] != "error" => self.answered = true,
            // The turn's totals come with its end, not before: nothing to check mid-way (and
            // cutting a finished turn short would lose its end).
            Some("turn.completed") => self.turn_end = Some(v),
            Some("turn.failed") => self.turn_end = Some(v),
            _ => {}
        }
    }

    /// A line too long to parse was dropped.
    pub fn dropped_line(&mut self) {
        self.dropped_lines += 1;
    }

    /// The tokens the answers so far reported (before the final result gives the total).
    pub fn tokens_so_far(&self) -> u64 {
        self.tokens_so_far
    }

    pub fn conversation(&self) -> Option<&str> {
        self.conversation.as_deref()
    }

    /// How the iteration ended: the stream read so far, the harness's exit (`code`, or `None` when
    /// a signal ended it) and its stderr. `now` and `local` read a reset the message gives only as
    /// a clock time.
    pub fn finish<Z: TimeZone>(self, code: Option<i32>, stderr: &str, now: DateTime<Utc>, local: &Z) -> Report {
        if self.codex {
            return self.finish_codex(code, stderr, now, local);
        }
        let complete = self.result.is_some();
        let result = self.result.unwrap_or(Value::Null);
        let spend = if complete {
            Spend { cost_usd: result["total_cost_usd"].as_f64(), tokens: tokens(&result["usage"]) }
        } else {
            Spend::default()
        };
        let text = result["result"].as_str().map(str::to_string);
        let status = result["api_error_status"].as_u64();
        let is_error = result["is_error"].as_bool().unwrap_or(false);
        let assistant_error = self.assistant_error.as_ref().map(|(e, _)| e.as_str());
        let error_text = || {
            text.clone()
                .or_else(|| self.assistant_error.as_ref().map(|(_, t)| t.clone()))
                .filter(|t| !t.is_empty())
                .unwrap_or_else(|| "no message".into())
        };

        let outcome = if self.rejected.is_some() || assistant_error == Some("rate_limit") || status == Some(429) {
            let message = error_text();
            // The typed reset first; else the harness's own limit message (its error, not narration).
            let resets_at = self
                .rejected
                .flatten()
                .or_else(|| crate::limits::find_limit(&message, now, local).and_then(|l| l.resets_at));
            if self.rejected.is_none() && assistant_error != Some("rate_limit") && !is_limit_message(&message) {
                // A 429 that is not the plan's limit (the API's own rate limiting): a blip.
                Outcome::Transient { reason: format!("HTTP 429: {message}") }
            } else {
                Outcome::Limit { resets_at, message }
            }
        } else if let Some(status) = status.filter(|s| (500..600).contains(s)) {
            Outcome::Transient { reason: format!("HTTP {status}: {}", error_text()) }
        } else if matches!(assistant_error, Some("server_error" | "overloaded" | "api_error")) && is_error {
            Outcome::Transient { reason: error_text() }
        } else if let Some(status) = status.filter(|s| (400..500).contains(s)) {
            Outcome::Failed { reason: format!("HTTP {status}: {}", error_text()) }
        } else if matches!(assistant_error, Some("authentication_failed" | "invalid_request" | "billing_error")) {
            Outcome::Failed { reason: error_text() }
        } else if complete && !is_error && code.unwrap_or(0) == 0 {
            Outcome::Done
        } else if complete {
            let subtype = result["subtype"].as_str().unwrap_or("error");
            let why = result["terminal_reason"].as_str().unwrap_or(subtype);
            Outcome::Unfinished { reason: format!("the session ended with {why}: {}", error_text()) }
        } else if let Some(line) = transient_stderr(stderr) {
            Outcome::Transient { reason: line.to_string() }
        } else {
            let how = match code {
                Some(c) => format!("exited with code {c}"),
                None => "was killed".to_string(),
            };
            let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).map(str::trim);
            let cut = if self.dropped_lines > 0 { " (its stream was cut short by an over-long line)" } else { "" };
            Outcome::Transient {
                reason: match last {
                    Some(last) => format!("the harness {how} without a result{cut}: {last}"),
                    None => format!("the harness {how} without a result{cut}"),
                },
            }
        };
        Report {
            outcome,
            spend,
            conversation: self.conversation,
            result: text,
            duration_ms: result["duration_ms"].as_u64(),
            complete,
            windows: self.windows,
        }
    }
}

impl Reader {
    fn finish_codex<Z: TimeZone>(self, code: Option<i32>, stderr: &str, now: DateTime<Utc>, local: &Z) -> Report {
        let end = self.turn_end.unwrap_or(Value::Null);
        let complete = !end.is_null();
        let failed = end["type"] == "turn.failed";
        let spend = match codex_tokens(&end["usage"]) {
            Some(tokens) => Spend { cost_usd: None, tokens: Some(tokens) },
            // A turn that failed before the model produced anything used nothing: its every
            // request was refused. One that failed after work had begun spent an unknown amount.
            None if failed && !self.answered => Spend { cost_usd: None, tokens: Some(0) },
            None => Spend::default(),
        };
        let message = end["error"]["message"].as_str().unwrap_or("no message").to_string();
        let outcome = if failed {
            codex_failure(message, now, local)
        } else if complete && code.unwrap_or(0) == 0 {
            Outcome::Done
        } else if complete {
            Outcome::Unfinished { reason: format!("the harness exited with code {code:?} after its turn ended") }
        } else {
            let how = match code {
                Some(c) => format!("exited with code {c}"),
                None => "was killed".to_string(),
            };
            let last =
                stderr.lines().rev().map(str::trim).find(|l| !l.is_empty() && !l.starts_with("Reading additional"));
            let cut = if self.dropped_lines > 0 { " (its stream was cut short by an over-long line)" } else { "" };
            Outcome::Transient {
                reason: match last {
                    Some(last) => format!("the harness {how} before its turn ended{cut}: {last}"),
                    None => format!("the harness {how} before its turn ended{cut}"),
                },
            }
        };
        let conversation = self.conversation;
        Report { outcome, spend, conversation, result: None, duration_ms: None, complete, windows: None }
    }
}

/// How a Codex turn that failed ended, from its own error message (the final `turn.failed`, never
/// the agent's words): `unexpected status 401 Unauthorized: …`, the API's error body as JSON, the
/// plan's `You’ve hit your usage limit. Try again at 2:02 PM.`, or its wording for a 5xx.
fn codex_failure<Z: TimeZone>(message: String, now: DateTime<Utc>, local: &Z) -> Outcome {
    if is_limit_message(&message) {
        let resets_at = crate::limits::find_limit(&message, now, local).and_then(|l| l.resets_at);
        return Outcome::Limit { resets_at, message };
    }
    let status = message
        .strip_prefix("unexpected status ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse::<u16>().ok());
    let body_type =
        serde_json::from_str::<Value>(&message).ok().and_then(|v| v["error"]["type"].as_str().map(str::to_string));
    let lower = message.to_lowercase();
    const TRANSIENT: [&str; 7] = [
        "high demand",
        "stream disconnected",
        "exceeded retry limit",
        "error sending request",
        "connection refused",
        "timed out",
        "server_error",
    ];
    match (status, body_type.as_deref()) {
        (Some(s), _) if s >= 500 || s == 429 || s == 408 => Outcome::Transient { reason: message },
        (Some(_), _) | (None, Some("invalid_request_error" | "authentication_error" | "permission_error")) => {
            Outcome::Failed { reason: message }
        }
        _ if TRANSIENT.iter().any(|t| lower.contains(t)) => Outcome::Transient { reason: message },
        _ => Outcome::Unfinished { reason: format!("the turn failed: {message}") },
    }
}

/// A Codex `usage`: input (its cached part included, as the Responses API counts it) and output
/// (reasoning included).
fn codex_tokens(usage: &Value) -> Option<u64> {
    let input = usage["input_tokens"].as_u64()?;
    Some(input + usage["output_tokens"].as_u64().unwrap_or(0))
}

/// One stream event as a person reads it: the agent's words, the tools it called (`→ Bash: ls`) and
/// what came back (`← 12 lines`), the end (`= done, $0.02`). Nothing for events people skip.
pub fn readable(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    match v["type"].as_str() {
        Some("system") if v["subtype"] == "init" => {
            out.push(format!(
                "· session {} ({})",
                v["session_id"].as_str().unwrap_or("?"),
                v["model"].as_str().unwrap_or("?")
            ));
        }
        Some("system") if v["subtype"] == "api_retry" => out.push(format!(
            "· the API answered {} ({}): retry {} of {}",
            v["error_status"],
            v["error"].as_str().unwrap_or("error"),
            v["attempt"],
            v["max_retries"]
        )),
        Some("assistant") => {
            for block in v["message"]["content"].as_array().into_iter().flatten() {
                match block["type"].as_str() {
                    Some("text") => {
                        out.extend(block["text"].as_str().unwrap_or_default().lines().map(|l| format!("  {l}")))
                    }
                    Some("tool_use") => {
                        let input = &block["input"];
                        let what = ["command", "file_path", "pattern", "path", "url", "description"]
                            .iter()
                            .find_map(|k| input[*k].as_str())
                            .unwrap_or_default();
                        let what: String = what.lines().next().unwrap_or_default().chars().take(200).collect();
                        out.push(format!("→ {}: {what}", block["name"].as_str().unwrap_or("tool")));
                    }
                    _ => {}
                }
            }
        }
        Some("user") => {
            for block in v["message"]["content"].as_array().into_iter().flatten() {
                if block["type"] == "tool_result" {
                    let text = match &block["content"] {
                        Value::String(s) => s.clone(),
                        Value::Array(parts) => {
                            parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n")
                        }
                        _ => String::new(),
                    };
                    let lines = text.lines().count();
                    let first: String = text.lines().next().unwrap_or_default().chars().take(120).collect();
                    let error = if block["is_error"] == true { " (error)" } else { "" };
                    out.push(format!("← {lines} line(s){error}: {first}"));
                }
            }
        }
        Some("thread.started") => out.push(format!("· thread {}", v["thread_id"].as_str().unwrap_or("?"))),
        Some("item.completed") => {
            let item = &v["item"];
            match item["type"].as_str() {
                Some("agent_message") => {
                    out.extend(item["text"].as_str().unwrap_or_default().lines().map(|l| format!("  {l}")))
                }
                Some("command_execution") => {
                    let command: String = item["command"].as_str().unwrap_or_default().chars().take(200).collect();
                    out.push(format!("→ shell: {command}"));
                    let output = item["aggregated_output"].as_str().unwrap_or_default();
                    let first: String = output.lines().next().unwrap_or_default().chars().take(120).collect();
                    out.push(format!("← exit {}, {} line(s): {first}", item["exit_code"], output.lines().count()));
                }
                Some("file_change") => {
                    let paths: Vec<&str> =
                        item["changes"].as_array().into_iter().flatten().filter_map(|c| c["path"].as_str()).collect();
                    out.push(format!("→ edit: {}", paths.join(", ")));
                }
                Some("mcp_tool_call") => out.push(format!(
                    "→ {}: {}",
                    item["server"].as_str().unwrap_or("mcp"),
                    item["tool"].as_str().unwrap_or("tool")
                )),
                Some("web_search") => out.push(format!("→ search: {}", item["query"].as_str().unwrap_or_default())),
                Some("error") => out.push(format!("· warning: {}", item["message"].as_str().unwrap_or_default())),
                _ => {}
            }
        }
        Some("error") => out.push(format!("· {}", v["message"].as_str().unwrap_or("error"))),
        Some("turn.completed") => {
            let tokens = codex_tokens(&v["usage"]).map_or_else(|| "tokens unknown".into(), |t| format!("{t} tokens"));
            out.push(format!("= done, {tokens}"));
        }
        Some("turn.failed") => {
            out.push(format!("= failed: {}", v["error"]["message"].as_str().unwrap_or("no message")))
        }
        Some("result") => {
            let cost = v["total_cost_usd"].as_f64().map_or_else(|| "spend unknown".into(), crate::units::usd);
            let how = if v["is_error"] == true { "ended with an error" } else { "done" };
            out.push(format!("= {how}, {cost}"));
        }
        _ => {}
    }
    out
}

/// Input, output, cache reads and cache writes of a `usage` object.
fn tokens(usage: &Value) -> Option<u64> {
    let fields = ["input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"];
    let known: Vec<u64> = fields.iter().filter_map(|f| usage[*f].as_u64()).collect();
    (!known.is_empty()).then(|| known.iter().sum())
}

fn text_of(content: &Value) -> String {
    content
        .as_array()
        .map(|blocks| blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"))
        .unwrap_or_default()
}

/// A plan limit in the harness's own error message.
fn is_limit_message(text: &str) -> bool {
    let t = text.to_lowercase();
    t.contains("hit your") && t.contains("limit") || t.contains("usage limit")
}

/// The first stderr line that starts like a transient failure of the API or the network.
fn transient_stderr(stderr: &str) -> Option<&str> {
    const STARTS: [&str; 8] = [
        "API Error: 5",
        "API Error: Connection error",
        "API Error: Request timed out",
        "Error: connect ECONNREFUSED",
        "Error: read ECONNRESET",
        "Error: getaddrinfo",
        "TypeError: fetch failed",
        "Error: socket hang up",
    ];
    stderr.lines().map(str::trim).find(|l| STARTS.iter().any(|s| l.starts_with(s)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/claude-code/2.1.332/headless");
        std::fs::read_to_string(format!("{dir}/{name}")).unwrap()
    }

    fn read(stream: &str, code: Option<i32>, stderr: &str) -> Report {
        read_as(AgentKind::Claude, stream, code, stderr)
    }

    fn read_as(agent: AgentKind, stream: &str, code: Option<i32>, stderr: &str) -> Report {
        let mut r = Reader::new(agent);
        for line in stream.lines() {
            r.line(line);
        }
        let now: DateTime<Utc> = "2026-11-30T12:35:03Z".parse().unwrap();
        r.finish(code, stderr, now, &Utc)
    }

    #[test]
    fn a_finished_task_is_done_with_the_harness_totals() {
        let report = read(&fixture("stream-json-fast.jsonl"), Some(0), "");
        assert_eq!(report.outcome, Outcome::Done);
        assert!((report.spend.cost_usd.unwrap() - 0.024782).abs() < 1e-12, "{:?}", report.spend);
        assert_eq!(report.spend.tokens, Some(12316 + 15));
        assert_eq!(report.conversation.as_deref(), Some("3df0ded2-00c1-49ba-a66a-3346715dce5f"));
        assert!(report.complete);
        // Its rate-limit event's windows, for the pace.
        let w = report.windows.expect("the windows");
        assert_eq!((w.five_hour_pct, w.seven_day_pct), (Some(42.0), Some(17.0)));
        assert_eq!(w.five_hour_resets_at.map(|r| r.timestamp()), Some(1796052895));
        assert_eq!(w.seven_day_resets_at.map(|r| r.timestamp()), Some(1796387695));
    }

    #[test]
    fn a_limit_comes_with_its_typed_reset() {
        let report = read(&fixture("stream-json-limit.jsonl"), Some(1), "");
        let Outcome::Limit { resets_at, message } = &report.outcome else { panic!("{report:?}") };
        assert_eq!(resets_at.unwrap().timestamp(), 1796045703);
        assert!(message.contains("5-hour limit"), "{message}");
        assert_eq!(report.spend.cost_usd, Some(0.0), "a limit costs nothing, and the figure is known");
    }

    #[test]
    fn an_overloaded_api_is_transient() {
        let report = read(&fixture("stream-json-overload.jsonl"), Some(1), "");
        let Outcome::Transient { reason } = &report.outcome else { panic!("{report:?}") };
        assert!(reason.starts_with("HTTP 529"), "{reason}");
    }

    #[test]
    fn narration_that_quotes_a_limit_or_an_error_is_neither() {
        // The task text and a tool result quote both; the harness finished normally.
        let fast = fixture("stream-json-fast.jsonl");
        let quoted = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"You've hit your limit · resets 3pm\nAPI Error: 500 Internal"}]}}"#;
        let assistant = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"The log says: usage limit reached, API Error: 529"}],"usage":{"input_tokens":5,"output_tokens":5}}}"#;
        let mut lines: Vec<&str> = fast.lines().collect();
        lines.insert(1, quoted);
        lines.insert(2, assistant);
        let report = read(&lines.join("\n"), Some(0), "");
        assert_eq!(report.outcome, Outcome::Done);
    }

    #[test]
    fn a_stream_cut_short_has_unknown_spend_never_zero() {
        let fast = fixture("stream-json-fast.jsonl");
        let cut: Vec<&str> = fast.lines().filter(|l| !l.contains(r#""type":"result""#)).collect();
        let mut r = Reader::new(AgentKind::Claude);
        for l in &cut {
            r.line(l);
        }
        r.dropped_line();
        let report = r.finish(None, "", "2026-12-01T23:00:00Z".parse().unwrap(), &Utc);
        assert_eq!(report.spend, Spend { cost_usd: None, tokens: None });
        assert!(!report.complete);
        let Outcome::Transient { reason } = &report.outcome else { panic!("{report:?}") };
        assert!(reason.contains("was killed") && reason.contains("over-long line"), "{reason}");
    }

    #[test]
    fn stderr_decides_only_by_its_anchored_lines() {
        let report = read("", Some(1), "node: warning\nAPI Error: 503 Service Unavailable\n");
        assert!(matches!(report.outcome, Outcome::Transient { ref reason } if reason.starts_with("API Error: 503")));
        let report = read("", Some(1), "the task mentions API Error: 500 somewhere\n");
        let Outcome::Transient { reason } = &report.outcome else { panic!() };
        assert!(reason.contains("exited with code 1 without a result"), "{reason}");
    }

    #[test]
    fn a_rejected_key_stops_the_loop() {
        let result = r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":401,"result":"Invalid API key · Please run /login","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}"#;
        let report = read(result, Some(1), "");
        assert!(matches!(report.outcome, Outcome::Failed { ref reason } if reason.contains("401")), "{report:?}");
    }

    #[test]
    fn the_turn_cap_leaves_the_task_open() {
        let result = r#"{"type":"result","subtype":"error_max_turns","is_error":true,"terminal_reason":"max_turns","total_cost_usd":0.5,"usage":{"input_tokens":10,"output_tokens":10}}"#;
        let report = read(result, Some(1), "");
        assert!(matches!(report.outcome, Outcome::Unfinished { .. }), "{report:?}");
        assert_eq!(report.spend.cost_usd, Some(0.5));
    }

    fn codex(name: &str) -> String {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/codex/0.171.0/exec");
        std::fs::read_to_string(format!("{dir}/exec-json-{name}.jsonl")).unwrap()
    }

    #[test]
    fn a_codex_turn_that_completed_is_done_with_its_tokens_and_no_cost() {
        let report = read_as(AgentKind::Codex, &codex("fast"), Some(0), "Reading additional input from stdin...\n");
        assert_eq!(report.outcome, Outcome::Done, "the model-metadata warning item is not a failure");
        assert_eq!(report.spend, Spend { cost_usd: None, tokens: Some(1240) });
        assert_eq!(report.conversation.as_deref(), Some("01a231b4-9a83-7ce0-9ace-37849d1eae57"));
    }

    #[test]
    fn a_codex_limit_waits_for_the_time_its_message_gives() {
        let now: DateTime<Utc> = "2026-12-01T13:50:00Z".parse().unwrap();
        let mut r = Reader::new(AgentKind::Codex);
        codex("limit").lines().for_each(|l| r.line(l));
        let report = r.finish(Some(1), "", now, &Utc);
        let Outcome::Limit { resets_at, message } = &report.outcome else { panic!("{report:?}") };
        assert_eq!(resets_at.map(|t| t.to_rfc3339()), Some("2026-12-01T14:04:00+00:00".into()), "{message}");
        assert_eq!(report.spend.tokens, Some(0), "a turn refused before any answer used nothing");
    }

    #[test]
    fn a_codex_server_error_is_transient_and_a_rejected_request_stops() {
        let report = read_as(AgentKind::Codex, &codex("500"), Some(1), "");
        assert!(
            matches!(report.outcome, Outcome::Transient { ref reason } if reason.contains("high demand")),
            "{report:?}"
        );
        let report = read_as(AgentKind::Codex, &codex("401"), Some(1), "");
        assert!(matches!(report.outcome, Outcome::Failed { ref reason } if reason.contains("401")), "{report:?}");
        let report = read_as(AgentKind::Codex, &codex("400"), Some(1), "");
        assert!(
            matches!(report.outcome, Outcome::Failed { ref reason } if reason.contains("invalid_request")),
            "{report:?}"
        );
    }

    #[test]
    fn a_codex_answer_quoting_a_limit_is_done_and_a_cut_stream_has_unknown_spend() {
        let quoted =
            codex("fast").replace("Hello from the mock server.", "You’ve hit your usage limit. Try again at 2:02 PM.");
        assert_eq!(read_as(AgentKind::Codex, &quoted, Some(0), "").outcome, Outcome::Done);
        let cut: String =
            codex("fast").lines().filter(|l| !l.contains("turn.completed")).map(|l| format!("{l}\n")).collect();
        let report = read_as(AgentKind::Codex, &cut, None, "");
        assert_eq!(report.spend, Spend::default());
        assert!(
            matches!(report.outcome, Outcome::Transient { ref reason } if reason.contains("was killed")),
            "{report:?}"
        );
    }

    #[test]
    fn codex_events_read_as_a_person_reads_them() {
        let said: Vec<String> =
            codex("fast").lines().flat_map(|l| readable(&serde_json::from_str(l).unwrap())).collect();
        assert!(said.iter().any(|l| l.starts_with("· thread 01a231b4-9a83")), "{said:?}");
        assert!(said.iter().any(|l| l == "  Hello from the mock server. This is a short answer."), "{said:?}");
        assert_eq!(said.last().map(String::as_str), Some("= done, 1240 tokens"));
    }
}
