//! A stand-in for the OpenAI Responses API on 127.0.0.1, for driving the real Codex CLI.
//!
//! Codex streams every turn from `POST /v1/responses` (`stream: true`) as server-sent events, and
//! makes a side request on the same endpoint for the thread's title. The scenario of a request is
//! chosen by the last `mock:NAME[:ARG]` marker in its last user message, so what happens is picked
//! by what is typed: `mock:fast` (a short answer), `mock:slow:20` (an answer streamed over 20 s),
//! `mock:limit` (HTTP 429 `usage_limit_reached` with the `x-codex-*` rate-limit headers; like the
//! real service, every turn is then refused until the reset), `mock:status:500` (that status,
//! always), `mock:overload:2` (503 for the prompt's first two turns, then an answer), `mock:perm`
//! (an `exec_command` call asking to leave the sandbox; its output is answered with a short text),
//! `mock:bash CMD` (an `exec_command` call of the shell command CMD, the rest of the marker's line,
//! run in the sandbox as the session's policy allows; its output answered likewise). The title
//! request is answered at once (with the limit too, as the real API would). Every request is
//! logged with its whole body and when its answer's last byte was sent, which is what detection
//! latency is measured from.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

/// What a request was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A turn of the conversation.
    Turn,
    /// The side request for the thread's title.
    Title,
    /// Anything else (`GET /v1/models`, unknown paths).
    Other,
}

/// One request as the mock saw it.
#[derive(Debug, Clone)]
pub struct Record {
    pub at: SystemTime,
    pub method: String,
    pub path: String,
    pub kind: Kind,
    pub scenario: String,
    pub status: u16,
    /// The text of the last user message.
    pub last_user: String,
    /// Every message of the request's `input` as (role, text), oldest first: what the model was
    /// given of the conversation so far.
    pub messages: Vec<(String, String)>,
    /// The thread the client said the request is for (its `session-id` header).
    pub thread: Option<String>,
    /// The account the request came from: the `x-mock-account` header a test's config.toml adds
    /// (`http_headers` of the provider), as a login would tell the real service.
    pub account: Option<String>,
    /// When the answer's last byte was handed to the connection.
    pub done_at: Option<SystemTime>,
    /// The whole request body.
    pub body: String,
}

#[derive(Debug)]
struct Shared {
    log: Mutex<Vec<Record>>,
    /// The scenario of a request without a marker.
    default: Mutex<String>,
    /// When the limit of `mock:limit` resets (epoch seconds).
    reset: Mutex<u64>,
    /// A `mock:limit` was answered: every turn is refused until the reset, whatever it asks.
    limited: Mutex<bool>,
    /// The 5-hour window's use each account's answers report ([`DEFAULT_USED_PCT`] when not set).
    used: Mutex<std::collections::HashMap<Option<String>, f64>>,
    /// How many `overload:K` turns each prompt has had.
    overloaded: super::Overloads,
    /// The function calls whose output has been answered (their call ids).
    answered: super::Answered,
}

/// A running stand-in; stops when dropped.
#[derive(Debug)]
pub struct ResponsesApi {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    /// Held: the server stops when the stand-in is dropped.
    _serving: super::Serving,
}

/// The 5-hour window's use the answers report when a test set none, in percent.
pub const DEFAULT_USED_PCT: f64 = 35.0;

pub use super::epoch;

impl ResponsesApi {
    /// Starts serving on a free port of 127.0.0.1 (never another address).
    pub async fn start() -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            log: Mutex::new(Vec::new()),
            default: Mutex::new("fast".into()),
            reset: Mutex::new(epoch(SystemTime::now()) + 3600),
            limited: Mutex::new(false),
            used: Mutex::new(std::collections::HashMap::new()),
            overloaded: super::Overloads::default(),
            answered: super::Answered::default(),
        });
        let app = Router::new().fallback(handle).with_state(Arc::clone(&shared));
        let serving = super::Serving::start(app).await?;
        Ok(Self { addr: serving.addr, shared, _serving: serving })
    }

    /// What Codex's `model_providers.<id>.base_url` is set to.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn requests(&self) -> Vec<Record> {
        self.shared.log.lock().unwrap().clone()
    }

    /// The conversation's turns only (no title requests).
    pub fn turns(&self) -> Vec<Record> {
        self.requests().into_iter().filter(|r| r.kind == Kind::Turn).collect()
    }

    /// What a request without a `mock:` marker gets (`slow:2`, …).
    pub fn set_default(&self, marker: &str) {
        *self.shared.default.lock().unwrap() = marker.to_string();
    }

    /// When the usage limit of `mock:limit` resets (epoch seconds).
    pub fn set_reset(&self, at: u64) {
        *self.shared.reset.lock().unwrap() = at;
    }

    /// The 5-hour window's use the answers to `account` report (`None`: requests without the
    /// account header).
    pub fn set_used(&self, account: Option<&str>, percent: f64) {
        self.shared.used.lock().unwrap().insert(account.map(String::from), percent);
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Scenario {
    Fast,
    Slow(Duration),
    Limit,
    /// Every request answered with this HTTP status and an error body (`mock:status:500`).
    Status(u16),
    /// The first K turns of a prompt answered 503, as an overloaded service does, then a short
    /// answer (`mock:overload:2`).
    OverloadFor(u32),
    /// An `exec_command` call that creates a file outside the sandbox, which asks for approval
    /// under the approval policy `on-request` (`mock:perm`); its result is answered with a short
    /// text.
    Perm,
    /// An `exec_command` call of the shell command on the rest of the marker's line (`mock:bash
    /// CMD`), with no escalation asked: it runs as the session's sandbox allows.
    Bash(String),
}

impl Scenario {
    fn name(&self) -> String {
        match self {
            Self::Fast => "fast".into(),
            Self::Slow(d) => format!("slow:{}", d.as_secs()),
            Self::Limit => "limit".into(),
            Self::Status(code) => format!("status:{code}"),
            Self::OverloadFor(k) => format!("overload:{k}"),
            Self::Perm => "perm".into(),
            Self::Bash(_) => "bash".into(),
        }
    }
}

/// The scenario named by the last `mock:` marker in `text` (`None` when there is none).
pub fn scenario_for(text: &str) -> Option<Scenario> {
    let pos = text.rfind("mock:")?;
    if let Some(rest) = text[pos..].strip_prefix("mock:bash ") {
        let line = rest.lines().next().unwrap_or_default();
        return Some(Scenario::Bash(line.trim().to_string()));
    }
    let marker: String =
        text[pos + 5..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == ':' || *c == '.').collect();
    let mut parts = marker.split(':');
    let name = parts.next().unwrap_or("");
    let arg = parts.next().and_then(|a| a.parse::<f64>().ok());
    Some(match name {
        "slow" => Scenario::Slow(Duration::from_secs_f64(arg.unwrap_or(20.0))),
        "limit" => Scenario::Limit,
        "status" => Scenario::Status(arg.map_or(500, |a| a as u16)),
        "overload" => Scenario::OverloadFor(arg.map_or(1, |a| a as u32)),
        "perm" => Scenario::Perm,
        _ => Scenario::Fast,
    })
}

/// The text of one `input` item: its `input_text`/`output_text` parts joined.
fn item_text(item: &Value) -> String {
    match &item["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}

/// The request's messages as (role, text).
fn messages(body: &Value) -> Vec<(String, String)> {
    let Some(items) = body["input"].as_array() else { return Vec::new() };
    items
        .iter()
        .filter(|i| i["type"] == "message" || i.get("role").is_some())
        .map(|i| (i["role"].as_str().unwrap_or_default().to_string(), item_text(i)))
        .collect()
}

/// A title request says so in its turn metadata; it also asks for a structured `text` answer.
fn kind_of(headers: &HeaderMap, body: &Value) -> Kind {
    let metadata = headers
        .get("x-codex-turn-metadata")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| serde_json::from_str::<Value>(v).ok());
    match metadata.as_ref().and_then(|m| m["thread_source"].as_str()) {
        Some("thread_title") => Kind::Title,
        Some(_) => Kind::Turn,
        None if body.get("text").is_some() => Kind::Title,
        None => Kind::Turn,
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
    let at = SystemTime::now();
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let msgs = messages(&request);
    let last_user = msgs.iter().rev().find(|(role, _)| role == "user").map(|(_, t)| t.clone()).unwrap_or_default();
    let thread = headers.get("session-id").and_then(|v| v.to_str().ok()).map(String::from);
    let account = headers.get("x-mock-account").and_then(|v| v.to_str().ok()).map(String::from);
    let kind =
        if uri.path() == "/v1/responses" && method == Method::POST { kind_of(&headers, &request) } else { Kind::Other };
    let record = |scenario: &str, status: u16| {
        let mut log = shared.log.lock().unwrap();
        log.push(Record {
            at,
            method: method.to_string(),
            path: path.clone(),
            kind,
            scenario: scenario.to_string(),
            status,
            last_user: last_user.clone(),
            messages: msgs.clone(),
            thread: thread.clone(),
            account: account.clone(),
            done_at: None,
            body: String::from_utf8_lossy(&body).into_owned(),
        });
        log.len() - 1
    };

    if uri.path() == "/v1/models" {
        let i = record("models", 200);
        mark_done(&shared, i);
        return (StatusCode::OK, axum::Json(json!({"object": "list", "data": [], "models": []}))).into_response();
    }
    if kind == Kind::Other {
        let i = record("unknown", 404);
        mark_done(&shared, i);
        let error = json!({"error": {"type": "not_found", "message": format!("mock: no {} {path}", method)}});
        return (StatusCode::NOT_FOUND, axum::Json(error)).into_response();
    }

    let default = shared.default.lock().unwrap().clone();
    let scenario =
        scenario_for(&last_user).or_else(|| scenario_for(&format!("mock:{default}"))).unwrap_or(Scenario::Fast);
    let reset = *shared.reset.lock().unwrap();
    // A limit lasts until its window resets, like the real one: until then every turn is refused.
    let before_reset = epoch(SystemTime::now()) < reset;
    let scenario = {
        let mut limited = shared.limited.lock().unwrap();
        *limited = before_reset && (*limited || scenario == Scenario::Limit);
        match scenario {
            _ if *limited => Scenario::Limit,
            Scenario::Limit => Scenario::Fast,
            other => other,
        }
    };
    let scenario = match scenario {
        Scenario::OverloadFor(k) if kind == Kind::Turn => {
            if shared.overloaded.refuse(&last_user, k) {
                Scenario::Status(503)
            } else {
                Scenario::Fast
            }
        }
        Scenario::OverloadFor(_) => Scenario::Fast,
        // The output of a call not answered yet is what this turn answers (the prompt that asked
        // for the call is still the last user message).
        _ if kind == Kind::Turn && fresh_output(&shared, &request) => Scenario::Fast,
        other => other,
    };
    if scenario == Scenario::Limit {
        let i = record(&scenario.name(), 429);
        mark_done(&shared, i);
        return limit_response(reset);
    }
    if let Scenario::Status(code) = scenario {
        let i = record(&scenario.name(), code);
        mark_done(&shared, i);
        let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let kind = if code >= 500 { "server_error" } else { "invalid_request_error" };
        let error = json!({"error": {"type": kind, "message": format!("mock: HTTP {code}")}});
        return (status, axum::Json(error)).into_response();
    }
    let i = record(&scenario.name(), 200);
    let model = request["model"].as_str().unwrap_or("gpt-5-codex").to_string();
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(64);
    let used = shared.used.lock().unwrap().get(&account).copied().unwrap_or(DEFAULT_USED_PCT);
    let shared = Arc::clone(&shared);
    tokio::spawn(async move {
        let (words, pause) = match (&kind, &scenario) {
            (Kind::Title, _) => (vec!["Mock thread".to_string()], Duration::ZERO),
            (_, Scenario::Slow(total)) => {
                let n = (total.as_secs_f64() / 0.5).ceil().max(1.0) as usize;
                let words = (0..n).map(|i| format!("Part {} of a slowly streamed answer. ", i + 1)).collect();
                (words, *total / n as u32)
            }
            (_, Scenario::Perm) => (vec!["I'll create a file.".to_string()], Duration::from_millis(20)),
            (_, Scenario::Bash(_)) => (vec!["I'll run it.".to_string()], Duration::from_millis(20)),
            _ => (
                ["Hello ", "from the ", "mock server. ", "This is a ", "short answer."].map(String::from).to_vec(),
                Duration::from_millis(30),
            ),
        };
        let arguments = match &scenario {
            Scenario::Perm => {
                Some(json!({"cmd": "touch mock-permission-file", "sandbox_permissions": "require_escalated",
                                          "justification": "Create a file"}))
            }
            Scenario::Bash(command) => Some(json!({"cmd": command})),
            _ => None,
        };
        let call = arguments.filter(|_| kind == Kind::Turn).map(|arguments| Call {
            id: format!("call_mock_{i}"),
            name: "exec_command",
            arguments: arguments.to_string(),
        });
        stream_answer(&tx, &model, i, &words, pause, call).await;
        mark_done(&shared, i);
    });
    let mut resp = Response::new(Body::from_stream(ReceiverStream::new(rx)));
    let h = resp.headers_mut();
    h.insert("content-type", HeaderValue::from_static("text/event-stream"));
    h.insert("cache-control", HeaderValue::from_static("no-cache"));
    add_usage_headers(h, used, reset);
    resp
}

fn mark_done(shared: &Shared, i: usize) {
    if let Some(r) = shared.log.lock().unwrap().get_mut(i) {
        r.done_at = Some(SystemTime::now());
    }
}

/// The rate-limit headers Codex reads: the primary (5-hour) window's use and reset.
fn add_usage_headers(h: &mut HeaderMap, used_percent: f64, reset: u64) {
    let mut set = |k: &'static str, v: String| {
        h.insert(k, HeaderValue::from_str(&v).unwrap());
    };
    set("x-codex-primary-used-percent", format!("{used_percent}"));
    set("x-codex-primary-window-minutes", "300".into());
    set("x-codex-primary-reset-at", reset.to_string());
    set("x-codex-secondary-used-percent", "12".into());
    set("x-codex-secondary-window-minutes", "10080".into());
    set("x-codex-secondary-reset-at", (reset + 4 * 86400).to_string());
    set("x-codex-active-limit", "codex".into());
    set("x-request-id", "req_mock".into());
}

fn limit_response(reset: u64) -> Response {
    let wait = reset.saturating_sub(epoch(SystemTime::now()));
    let body = json!({"error": {"type": "usage_limit_reached", "message": "You've hit your usage limit.",
        "resets_at": reset, "resets_in_seconds": wait}});
    let mut resp = (StatusCode::TOO_MANY_REQUESTS, axum::Json(body)).into_response();
    add_usage_headers(resp.headers_mut(), 100.0, reset);
    resp
}

fn sse(event: &str, mut data: Value, seq: &mut u64) -> Bytes {
    data["type"] = json!(event);
    data["sequence_number"] = json!(*seq);
    *seq += 1;
    Bytes::from(format!("event: {event}\ndata: {data}\n\n"))
}

/// Whether `request` carries the output of a function call no turn has answered yet (and marks
/// every output it carries as answered).
fn fresh_output(shared: &Shared, request: &Value) -> bool {
    let items = request["input"].as_array().map(Vec::as_slice).unwrap_or_default();
    let outputs = items.iter().filter(|i| i["type"] == "function_call_output").filter_map(|i| i["call_id"].as_str());
    shared.answered.any_new(outputs)
}

/// A function call an answer ends with.
struct Call {
    id: String,
    name: &'static str,
    arguments: String,
}

/// One assistant message, streamed word by word, and a function call after it when there is one,
/// then the response completed with its usage.
async fn stream_answer(
    tx: &mpsc::Sender<Result<Bytes, Infallible>>,
    model: &str,
    n: usize,
    words: &[String],
    pause: Duration,
    call: Option<Call>,
) {
    let mut seq = 0;
    let send = |b: Bytes| async move { tx.send(Ok(b)).await.is_ok() };
    let id = format!("resp_mock_{n}");
    let item = format!("msg_mock_{n}");
    let created = epoch(SystemTime::now());
    let response = |status: &str, output: Value| {
        json!({"id": id, "object": "response", "created_at": created, "status": status, "model": model,
               "output": output})
    };
    if !send(sse("response.created", json!({"response": response("in_progress", json!([]))}), &mut seq)).await {
        return;
    }
    send(sse("response.in_progress", json!({"response": response("in_progress", json!([]))}), &mut seq)).await;
    let added = json!({"output_index": 0,
        "item": {"id": item, "type": "message", "status": "in_progress", "role": "assistant", "content": []}});
    send(sse("response.output_item.added", added, &mut seq)).await;
    let part = json!({"item_id": item, "output_index": 0, "content_index": 0,
        "part": {"type": "output_text", "text": "", "annotations": []}});
    send(sse("response.content_part.added", part, &mut seq)).await;
    for word in words {
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
        let delta = json!({"item_id": item, "output_index": 0, "content_index": 0, "delta": word});
        if !send(sse("response.output_text.delta", delta, &mut seq)).await {
            return;
        }
    }
    let text: String = words.concat();
    let done = json!({"item_id": item, "output_index": 0, "content_index": 0, "text": text});
    send(sse("response.output_text.done", done, &mut seq)).await;
    let part = json!({"item_id": item, "output_index": 0, "content_index": 0,
        "part": {"type": "output_text", "text": text, "annotations": []}});
    send(sse("response.content_part.done", part, &mut seq)).await;
    let message = json!({"id": item, "type": "message", "status": "completed", "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}]});
    send(sse("response.output_item.done", json!({"output_index": 0, "item": message}), &mut seq)).await;
    let mut output = vec![message];
    if let Some(call) = call {
        let item = |status: &str, arguments: &str| {
            json!({"id": format!("fc_mock_{n}"), "type": "function_call", "status": status, "call_id": call.id,
                   "name": call.name, "arguments": arguments})
        };
        send(sse("response.output_item.added", json!({"output_index": 1, "item": item("in_progress", "")}), &mut seq))
            .await;
        let delta = json!({"item_id": format!("fc_mock_{n}"), "output_index": 1, "delta": call.arguments});
        send(sse("response.function_call_arguments.delta", delta, &mut seq)).await;
        let done = json!({"item_id": format!("fc_mock_{n}"), "output_index": 1, "arguments": call.arguments});
        send(sse("response.function_call_arguments.done", done, &mut seq)).await;
        let finished = item("completed", &call.arguments);
        send(sse("response.output_item.done", json!({"output_index": 1, "item": finished}), &mut seq)).await;
        output.push(finished);
    }
    let mut completed = response("completed", json!(output));
    completed["usage"] = json!({"input_tokens": 1200, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 1240});
    send(sse("response.completed", json!({"response": completed}), &mut seq)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_marker_names_the_scenario() {
        assert_eq!(scenario_for("mock:fast then mock:slow:3"), Some(Scenario::Slow(Duration::from_secs(3))));
        assert_eq!(scenario_for("mock:limit go"), Some(Scenario::Limit));
        assert_eq!(
            scenario_for("do it mock:bash curl -s http://h/ && echo 'a b' > out\nWhen you are done, say so."),
            Some(Scenario::Bash("curl -s http://h/ && echo 'a b' > out".into()))
        );
        assert_eq!(scenario_for("nothing here"), None);
        assert_eq!(scenario_for("fail mock:status:503"), Some(Scenario::Status(503)));
    }
}
