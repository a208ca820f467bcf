//! A fake ntfy server on 127.0.0.1 that speaks ntfy's publish protocol (a POST to the topic's URL,
//! the message in the body, the rest in headers), and notes every publish; and its JSON subscribe
//! stream (`GET <topic>/json?since=…`: an `open` line, the cached messages since then, then each
//! new one as it is published), with switches to drop every stream and to refuse subscribers.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;

/// One publish as the fake server saw it.
#[derive(Debug, Clone)]
pub struct Publish {
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: String,
}

impl Publish {
    /// Its buttons, from ntfy's `Actions` header: each label and what it posts.
    pub fn buttons(&self) -> Vec<(String, String)> {
        let Some(header) = self.headers.get("actions") else { return Vec::new() };
        header
            .split("; ")
            .filter_map(|action| {
                let fields: Vec<&str> = action.split(", ").collect();
                let body = fields.iter().find_map(|f| f.strip_prefix("body="))?;
                Some((fields.get(1)?.to_string(), body.to_string()))
            })
            .collect()
    }
}

/// A message as the fake keeps it for subscribers.
#[derive(Debug, Clone)]
struct Cached {
    topic: String,
    id: String,
    time: i64,
    message: String,
}

#[derive(Default)]
struct Streams {
    cached: Vec<Cached>,
    /// Open subscriptions: the topic, and where its lines go.
    open: Vec<(String, tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>)>,
    /// The `since` of each subscription, as asked.
    asked: Vec<String>,
    next: u64,
}

#[derive(Clone)]
pub struct Fake {
    seen: Arc<Mutex<Vec<Publish>>>,
    /// The status every publish gets (503: the server is "down").
    pub status: Arc<AtomicU16>,
    /// The status a subscription gets (200 streams).
    pub subscribe_status: Arc<AtomicU16>,
    streams: Arc<Mutex<Streams>>,
    pub addr: SocketAddr,
}

impl Fake {
    /// Serves on a thread of its own, so tests on any runtime (or none) can use it.
    pub fn start() -> Self {
        let (tx, rx) = std::sync::mpsc::channel();
        let seen: Arc<Mutex<Vec<Publish>>> = Arc::default();
        let status = Arc::new(AtomicU16::new(200));
        let subscribe_status = Arc::new(AtomicU16::new(200));
        let streams: Arc<Mutex<Streams>> = Arc::default();
        let shared = Shared {
            seen: Arc::clone(&seen),
            status: Arc::clone(&status),
            subscribe_status: Arc::clone(&subscribe_status),
            streams: Arc::clone(&streams),
        };
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                let app = Router::new().fallback(serve).with_state(shared);
                axum::serve(listener, app).await.unwrap();
            });
        });
        let addr = rx.recv().unwrap();
        Self { seen, status, subscribe_status, streams, addr }
    }

    /// Ends every open subscription, as a server restart or a dropped connection does.
    pub fn drop_streams(&self) {
        self.streams.lock().unwrap().open.clear();
    }

    /// How many subscriptions are open now.
    pub fn subscribers(&self) -> usize {
        let mut streams = self.streams.lock().unwrap();
        streams.open.retain(|(_, tx)| !tx.is_closed());
        streams.open.len()
    }

    /// The `since` each subscription asked for, in order.
    pub fn asked_since(&self) -> Vec<String> {
        self.streams.lock().unwrap().asked.clone()
    }

    /// The short pushes to `/night` that answered the phone's buttons, in order.
    pub fn replies(&self) -> Vec<String> {
        self.seen()
            .into_iter()
            .filter(|p| p.path == "/night" && p.headers.get("title").is_some_and(|t| t.starts_with("Nightshift: ")))
            .map(|p| p.body)
            .collect()
    }

    /// Publishes `body` to `topic` as a phone's button does (an HTTP POST).
    pub fn press(&self, topic: &str, body: &str) {
        ureq::post(&self.url(topic)).send(body).expect("the fake takes a publish");
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }

    pub fn seen(&self) -> Vec<Publish> {
        self.seen.lock().unwrap().clone()
    }
}

#[derive(Clone)]
struct Shared {
    seen: Arc<Mutex<Vec<Publish>>>,
    status: Arc<AtomicU16>,
    subscribe_status: Arc<AtomicU16>,
    streams: Arc<Mutex<Streams>>,
}

async fn serve(State(shared): State<Shared>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    match (method, uri.path().strip_suffix("/json")) {
        (Method::GET, Some(topic)) => subscribe(&shared, topic, uri.query().unwrap_or_default()),
        _ => publish(&shared, &uri, &headers, body).into_response(),
    }
}

fn line(m: &Cached) -> Bytes {
    let v = serde_json::json!({"id": m.id, "time": m.time, "event": "message", "topic": m.topic.trim_start_matches('/'),
        "message": m.message});
    Bytes::from(format!("{v}\n"))
}

fn subscribe(shared: &Shared, topic: &str, query: &str) -> Response {
    let code = StatusCode::from_u16(shared.subscribe_status.load(Ordering::SeqCst)).unwrap();
    if code != StatusCode::OK {
        return code.into_response();
    }
    let since = query.split('&').find_map(|kv| kv.strip_prefix("since=")).unwrap_or_default().to_string();
    let (tx, rx) = tokio::sync::mpsc::channel(1024);
    let mut streams = shared.streams.lock().unwrap();
    streams.asked.push(since.clone());
    let open = serde_json::json!({"id": "open", "time": 0, "event": "open", "topic": topic.trim_start_matches('/')});
    let _ = tx.try_send(Ok(Bytes::from(format!("{open}\n"))));
    let from_time: Option<i64> = since.parse().ok();
    let after_id = streams.cached.iter().position(|m| m.id == since);
    for (i, m) in streams.cached.iter().enumerate().filter(|(_, m)| m.topic == topic) {
        let wanted = since == "all" || from_time.is_some_and(|t| m.time >= t) || after_id.is_some_and(|at| i > at);
        if wanted {
            let _ = tx.try_send(Ok(line(m)));
        }
    }
    streams.open.push((topic.to_string(), tx));
    Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx)).into_response()
}

fn publish(shared: &Shared, uri: &Uri, headers: &HeaderMap, body: Bytes) -> StatusCode {
    let headers = headers
        .iter()
        .map(|(k, v)| (k.as_str().to_ascii_lowercase(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    let body = String::from_utf8_lossy(&body).into_owned();
    shared.seen.lock().unwrap().push(Publish { path: uri.path().to_string(), headers, body: body.clone() });
    let code = StatusCode::from_u16(shared.status.load(Ordering::SeqCst)).unwrap();
    if code == StatusCode::OK {
        let mut streams = shared.streams.lock().unwrap();
        streams.next += 1;
        let time = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
        let m = Cached { topic: uri.path().to_string(), id: format!("m{:06}", streams.next), time, message: body };
        let out = line(&m);
        streams.open.retain(|(topic, tx)| *topic != m.topic || tx.try_send(Ok(out.clone())).is_ok());
        streams.cached.push(m);
    }
    code
}
