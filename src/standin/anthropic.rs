//! A stand-in for the Anthropic Messages API on 127.0.0.1, for driving the real Claude Code client.
//!
//! The scenario of each request is chosen by the last `mock:NAME[:ARG]` marker in the last user
//! message, so a test picks what happens by what it types: `mock:fast`, `mock:slow:20` (a streamed
//! answer lasting 20 s), `mock:tool:30` (a Bash tool call running `sleep 30`), `mock:perm` (a tool
//! call that needs the user's permission in the default permission mode), `mock:question` (the
//! AskUserQuestion tool), `mock:edit` (a Bash call that edits, adds and deletes files), `mock:commit`
//! (a Bash call that appends a step to `work.txt` and commits it), `mock:outside` (a Bash call
//! that writes `$HOME/outside-the-project.txt`), `mock:inside` (one that writes `inside.txt` and
//! commits it), `mock:limit` (HTTP 429 with the
//! unified rate-limit headers; like the real API, every request of that credential is then refused
//! until the window resets, as `refused`), `mock:overload`
//! (HTTP 529; `mock:overload:2`: for the first two requests of that prompt, then an answer),
//! `mock:bash COMMAND` (a Bash call of the rest of the line), `mock:call TOOL {JSON}` (any tool
//! with that input). A tool result is answered with a short text. Every request is logged with when its
//! answer's last byte was sent, which is what detection latency is measured from.
//!
//! The scenarios, and the streamed answer of each, are in `anthropic/scenario.rs`; here, the server.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

mod scenario;

use scenario::stream_answer;
pub use scenario::{scenario_for, Scenario, HANDOFF_ANSWER};

/// One request as the mock saw it.
#[derive(Debug, Clone)]
pub struct Record {
    pub at: SystemTime,
    pub method: String,
    pub path: String,
    pub scenario: String,
    pub status: u16,
    /// The text of the last user message (text blocks joined; `[tool_result]` for tool results).
    pub last_user: String,
    /// When the answer's last byte was handed to the connection.
    pub done_at: Option<SystemTime>,
    /// The whole request, as JSON text (what a hook added to the conversation shows here).
    pub body: String,
    /// The credential it came with: the bearer token or the API key.
    pub credential: String,
}

/// The subscription usage the mock reports in its rate-limit headers.
#[derive(Debug, Clone)]
pub struct Usage {
    pub five_hour: f64,
    pub five_hour_reset: u64,
    pub seven_day: f64,
    pub seven_day_reset: u64,
}

impl Default for Usage {
    fn default() -> Self {
        let now = epoch(SystemTime::now());
        Self { five_hour: 0.35, five_hour_reset: now + 3 * 3600, seven_day: 0.38, seven_day_reset: now + 4 * 86400 }
    }
}

#[derive(Debug)]
struct Shared {
    log: Mutex<Vec<Record>>,
    usage: Mutex<Usage>,
    /// The usage of particular credentials (each account's own), over `usage`.
    usage_of: Mutex<std::collections::HashMap<String, Usage>>,
    /// The scenario of a request without a marker.
    default: Mutex<String>,
    /// `anthropic-ratelimit-unified-upgrade-paths`, when set.
    upgrade_paths: Mutex<Option<String>>,
    /// How many `overload:K` answers each prompt has had.
    overloaded: super::Overloads,
    /// The tool calls whose results have been answered (their ids).
    answered: super::Answered,
    /// Credentials whose window a limit closed, until its reset (epoch seconds).
    refusing: Mutex<std::collections::HashMap<String, u64>>,
}

/// A running stand-in; stops when dropped.
#[derive(Debug)]
pub struct AnthropicApi {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    /// Held: the server stops when the stand-in is dropped.
    _serving: super::Serving,
}

pub use super::epoch;

impl AnthropicApi {
    /// Starts serving on a free port of 127.0.0.1 (never another address).
    pub async fn start() -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            log: Mutex::new(Vec::new()),
            usage: Mutex::new(Usage::default()),
            usage_of: Mutex::new(std::collections::HashMap::new()),
            default: Mutex::new("fast".into()),
            upgrade_paths: Mutex::new(None),
            overloaded: super::Overloads::default(),
            answered: super::Answered::default(),
            refusing: Mutex::new(std::collections::HashMap::new()),
        });
        let app = Router::new().fallback(handle).with_state(Arc::clone(&shared));
        let serving = super::Serving::start(app).await?;
        Ok(Self { addr: serving.addr, shared, _serving: serving })
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Record> {
        self.shared.log.lock().unwrap().clone()
    }

    /// The Messages requests only.
    pub fn messages(&self) -> Vec<Record> {
        self.requests()
            .into_iter()
            .filter(|r| r.path.starts_with("/v1/messages") && !r.path.contains("count_tokens"))
            .collect()
    }

    /// What a request without a `mock:` marker gets (`slow:2`, …).
    pub fn set_default(&self, marker: &str) {
        *self.shared.default.lock().unwrap() = marker.to_string();
    }

    pub fn set_usage(&self, usage: Usage) {
        *self.shared.usage.lock().unwrap() = usage;
    }

    /// Reports `usage` to requests made with `credential` (a bearer token or an API key): one
    /// account's windows.
    pub fn set_usage_for(&self, credential: &str, usage: Usage) {
        self.shared.usage_of.lock().unwrap().insert(credential.to_string(), usage);
    }

    /// Sends `anthropic-ratelimit-unified-upgrade-paths: PATHS` (comma-separated: `upgrade_plan`,
    /// `overage`) with the rate-limit headers from now on; `None` leaves it out, as by default. The
    /// client's limit menu offers "Upgrade your plan" only when the header is absent or lists `upgrade_plan`.
    pub fn set_upgrade_paths(&self, paths: Option<&str>) {
        *self.shared.upgrade_paths.lock().unwrap() = paths.map(String::from);
    }
}

/// The last user message's text, and whether it carries a tool result.
fn last_user(body: &Value) -> (String, bool) {
    let Some(msg) = body["messages"].as_array().and_then(|m| m.iter().rev().find(|m| m["role"] == "user")) else {
        return (String::new(), false);
    };
    match &msg["content"] {
        Value::String(s) => (s.clone(), false),
        Value::Array(blocks) => {
            let tool = blocks.iter().any(|b| b["type"] == "tool_result");
            let mut parts: Vec<String> = Vec::new();
            for b in blocks {
                match (b["type"].as_str(), &b["content"]) {
                    (Some("text"), _) => parts.extend(b["text"].as_str().map(String::from)),
                    (Some("tool_result"), Value::String(s)) => parts.push(s.clone()),
                    (Some("tool_result"), Value::Array(inner)) => {
                        parts.extend(inner.iter().filter_map(|c| c["text"].as_str()).map(String::from))
                    }
                    _ => {}
                }
            }
            let text = parts.join("\n");
            (if tool { format!("[tool_result] {text}") } else { text }, tool)
        }
        _ => (String::new(), false),
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let upgrade_paths = shared.upgrade_paths.lock().unwrap().clone();
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let credential = header("authorization")
        .map(|a| a.trim_start_matches("Bearer ").to_string())
        .or_else(|| header("x-api-key"))
        .unwrap_or_default();
    let mut resp = answer(shared, method, uri, body, credential).await;
    // Only on answers that carry the rate-limit headers (not the 529's).
    if let Some(paths) = upgrade_paths.filter(|_| resp.headers().contains_key("anthropic-ratelimit-unified-status")) {
        resp.headers_mut().insert("anthropic-ratelimit-unified-upgrade-paths", HeaderValue::from_str(&paths).unwrap());
    }
    resp
}

async fn answer(shared: Arc<Shared>, method: Method, uri: Uri, body: Bytes, credential: String) -> Response {
    let path = uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
    let at = SystemTime::now();
    let full = String::from_utf8_lossy(&body).into_owned();
    let record = |scenario: &str, status: u16, last_user: String| {
        let mut log = shared.log.lock().unwrap();
        log.push(Record {
            at,
            method: method.to_string(),
            path: path.clone(),
            scenario: scenario.to_string(),
            status,
            last_user,
            done_at: None,
            body: full.clone(),
            credential: credential.clone(),
        });
        log.len() - 1
    };
    let usage = shared
        .usage_of
        .lock()
        .unwrap()
        .get(&credential)
        .cloned()
        .unwrap_or_else(|| shared.usage.lock().unwrap().clone());

    if uri.path() == "/v1/models" {
        record("models", 200, String::new());
        return json_response(
            StatusCode::OK,
            &usage,
            json!({"data": [{"type": "model", "id": "claude-sonnet-5-5", "display_name": "Claude Sonnet 5.5",
                             "created_at": "2026-01-01T00:00:00Z"}],
                   "has_more": false, "first_id": "claude-sonnet-5-5", "last_id": "claude-sonnet-5-5"}),
        );
    }
    if uri.path() == "/v1/messages/count_tokens" {
        record("count_tokens", 200, String::new());
        return json_response(StatusCode::OK, &usage, json!({"input_tokens": 1200}));
    }
    if uri.path() != "/v1/messages" {
        record("unknown", 404, String::new());
        return json_response(
            StatusCode::NOT_FOUND,
            &usage,
            json!({"type": "error", "error": {"type": "not_found_error", "message": format!("mock: no {path}")}}),
        );
    }

    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (text, tool_result) = last_user(&request);
    // A marker typed with the message wins over a tool result it rides along with (after the user
    // refused a tool, the client sends the refusal and the new prompt together; and it keeps earlier
    // results in the message a later prompt is added to), but not over the result of a call that
    // has not been answered yet: that result is what is being answered.
    let last_user_blocks = request["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_array());
    let typed_marker = last_user_blocks.is_some_and(|blocks| {
        blocks.iter().any(|b| b["type"] == "text" && b["text"].as_str().is_some_and(|t| t.contains("mock:")))
    });
    let results = last_user_blocks.map(Vec::as_slice).unwrap_or_default().iter().filter(|b| b["type"] == "tool_result");
    // A refusal is marked answered too, but is no result to answer.
    let (refused, given): (Vec<&Value>, Vec<&Value>) = results.partition(|b| b["is_error"] == true);
    shared.answered.any_new(refused.iter().filter_map(|b| b["tool_use_id"].as_str()));
    let fresh_result = shared.answered.any_new(given.iter().filter_map(|b| b["tool_use_id"].as_str()));
    let mut scenario = if tool_result && typed_marker && !fresh_result {
        scenario_for(&text)
    } else if tool_result {
        Scenario::AfterTool
    } else if text.contains("handoff for your next self") {
        Scenario::Handoff
    } else if text.contains("mock:") {
        scenario_for(&text)
    } else {
        scenario_for(&format!("mock:{}", shared.default.lock().unwrap()))
    };
    if let Scenario::OverloadFor(k) = scenario {
        scenario = if shared.overloaded.refuse(&text, k) { Scenario::Overload } else { Scenario::Fast };
    }
    // A limit lasts until its window resets, like the real one.
    let reset = if usage.seven_day >= 1.0 { usage.seven_day_reset } else { usage.five_hour_reset };
    if scenario == Scenario::Limit && epoch(SystemTime::now()) >= reset {
        scenario = Scenario::Fast;
    }
    // A window a limit closed refuses every request until it resets, as the real one does.
    let now = epoch(SystemTime::now());
    {
        let mut refusing = shared.refusing.lock().unwrap();
        match refusing.get(&credential) {
            Some(until) if now < *until => scenario = Scenario::Refused,
            Some(_) => {
                refusing.remove(&credential);
            }
            None if scenario == Scenario::Limit => {
                refusing.insert(credential.clone(), reset);
            }
            None => {}
        }
    }
    let model = request["model"].as_str().unwrap_or("claude-sonnet-5-5").to_string();
    let stream = request["stream"].as_bool().unwrap_or(false);

    match scenario {
        Scenario::Limit | Scenario::Refused => {
            let i = record(&scenario.name(), 429, text);
            mark_done(&shared, i);
            limit_response(&usage)
        }
        Scenario::Overload => {
            let i = record(&scenario.name(), 529, text);
            mark_done(&shared, i);
            // An overloaded API answers from its front door: no rate-limit headers.
            let body = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
            let mut resp = (StatusCode::from_u16(529).unwrap(), axum::Json(body)).into_response();
            resp.headers_mut().insert("x-should-retry", HeaderValue::from_static("true"));
            resp
        }
        _ if !stream => {
            let i = record(&scenario.name(), 200, text);
            mark_done(&shared, i);
            json_response(StatusCode::OK, &usage, whole_message(&model, "Hello from the mock server."))
        }
        _ => {
            let i = record(&scenario.name(), 200, text);
            let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(64);
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                stream_answer(&tx, &model, &scenario).await;
                mark_done(&shared, i);
            });
            let mut resp = Response::new(Body::from_stream(ReceiverStream::new(rx)));
            let h = resp.headers_mut();
            h.insert("content-type", HeaderValue::from_static("text/event-stream"));
            h.insert("cache-control", HeaderValue::from_static("no-cache"));
            add_usage_headers(h, &usage, "allowed");
            resp
        }
    }
}

fn mark_done(shared: &Shared, i: usize) {
    if let Some(r) = shared.log.lock().unwrap().get_mut(i) {
        r.done_at = Some(SystemTime::now());
    }
}

fn add_usage_headers(h: &mut HeaderMap, u: &Usage, status: &str) {
    let mut set = |k: &'static str, v: String| {
        h.insert(k, HeaderValue::from_str(&v).unwrap());
    };
    set("anthropic-ratelimit-unified-status", status.to_string());
    set("anthropic-ratelimit-unified-5h-utilization", format!("{}", u.five_hour));
    set("anthropic-ratelimit-unified-5h-reset", u.five_hour_reset.to_string());
    set("anthropic-ratelimit-unified-5h-status", if u.five_hour >= 1.0 { "rejected" } else { "allowed" }.into());
    set("anthropic-ratelimit-unified-7d-utilization", format!("{}", u.seven_day));
    set("anthropic-ratelimit-unified-7d-reset", u.seven_day_reset.to_string());
    set("anthropic-ratelimit-unified-7d-status", if u.seven_day >= 1.0 { "rejected" } else { "allowed" }.into());
    let (claim, reset) =
        if u.seven_day >= 1.0 { ("seven_day", u.seven_day_reset) } else { ("five_hour", u.five_hour_reset) };
    set("anthropic-ratelimit-unified-representative-claim", claim.into());
    set("anthropic-ratelimit-unified-reset", reset.to_string());
    set("anthropic-ratelimit-unified-overage-status", "rejected".into());
    set("anthropic-ratelimit-unified-overage-disabled-reason", "org_level_disabled".into());
    set("anthropic-ratelimit-unified-fallback", "available".into());
    set("request-id", "req_mock".into());
}

fn json_response(status: StatusCode, usage: &Usage, body: Value) -> Response {
    let mut resp = (status, axum::Json(body)).into_response();
    add_usage_headers(resp.headers_mut(), usage, if status.as_u16() == 429 { "rejected" } else { "allowed" });
    resp
}

fn limit_response(usage: &Usage) -> Response {
    let mut limited = usage.clone();
    // The full window: the weekly one when the mock was told so, else the 5-hour one.
    if limited.seven_day < 1.0 {
        limited.five_hour = limited.five_hour.max(1.0);
    }
    let mut resp = json_response(
        StatusCode::TOO_MANY_REQUESTS,
        &limited,
        json!({"type": "error", "error": {"type": "rate_limit_error",
               "message": "This request would exceed your account's rate limit. Please try again later."}}),
    );
    let reset = if limited.seven_day >= 1.0 { limited.seven_day_reset } else { limited.five_hour_reset };
    let wait = reset.saturating_sub(epoch(SystemTime::now()));
    resp.headers_mut().insert("retry-after", HeaderValue::from_str(&wait.to_string()).unwrap());
    resp
}

fn whole_message(model: &str, text: &str) -> Value {
    json!({"id": "msg_mock", "type": "message", "role": "assistant", "model": model,
           "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": null,
           "usage": {"input_tokens": 1200, "output_tokens": 12}})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Posts a streamed Messages request; the tool calls' ids in the answer's events.
    async fn post(base: &str, body: Value) -> (String, Vec<String>) {
        let url = format!("{base}/v1/messages");
        let text = tokio::task::spawn_blocking(move || {
            let mut resp = ureq::post(&url).content_type("application/json").send(body.to_string().as_bytes()).unwrap();
            resp.body_mut().read_to_string().unwrap()
        })
        .await
        .unwrap();
        let ids = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter_map(|v| v["content_block"]["id"].as_str().map(String::from))
            .collect();
        (text, ids)
    }

    fn user(content: Value) -> Value {
        json!({"role": "user", "content": content})
    }

    #[tokio::test]
    async fn each_tool_call_has_its_own_id_and_the_answer_to_a_fresh_call_wins_over_a_kept_prompt() {
        let api = AnthropicApi::start().await.unwrap();
        let base = api.base_url();
        let ask = |messages: Vec<Value>| json!({"model": "m", "stream": true, "max_tokens": 10, "messages": messages});
        let prompt = user(json!([{"type": "text", "text": "ask me mock:question"}]));
        let (_, first) = post(&base, ask(vec![prompt.clone()])).await;
        let (_, second) = post(&base, ask(vec![prompt.clone()])).await;
        assert_eq!((first.len(), second.len()), (1, 1));
        assert_ne!(first, second, "a second call under a used id has its result taken for the first's");
        // The client keeps the prompt in the message that carries the call's result: the result is
        // what is answered, once; the same message again with a new prompt asks anew.
        let call = json!({"role": "assistant", "content": [{"type": "tool_use", "id": first[0], "name": "AskUserQuestion", "input": {}}]});
        let answered = user(json!([{"type": "tool_result", "tool_use_id": first[0], "content": "SQLite"},
                                   {"type": "text", "text": "ask me mock:question"}]));
        let (_, ids) = post(&base, ask(vec![prompt.clone(), call.clone(), answered])).await;
        assert!(ids.is_empty(), "the answer to the question is answered, not the question asked again");
        let next = user(json!([{"type": "tool_result", "tool_use_id": first[0], "content": "SQLite"},
                               {"type": "text", "text": "ask me mock:question"},
                               {"type": "text", "text": "now make a file mock:perm"}]));
        let (_, ids) = post(&base, ask(vec![prompt, call, next])).await;
        assert_eq!(ids.len(), 1, "a new prompt beside an answered result asks anew");
        let scenarios: Vec<String> = api.messages().into_iter().map(|r| r.scenario).collect();
        assert_eq!(scenarios, ["question", "question", "after_tool", "perm"]);
    }
}
