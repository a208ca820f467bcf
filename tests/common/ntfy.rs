//! A fake ntfy server on 127.0.0.1 that speaks ntfy's publish protocol (a POST to the topic's URL,
//! the message in the body, the rest in headers), and notes every publish.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::Router;

/// One publish as the fake server saw it.
#[derive(Debug, Clone)]
pub struct Publish {
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: String,
}

#[derive(Clone)]
pub struct Fake {
    seen: Arc<Mutex<Vec<Publish>>>,
    /// The status every publish gets (503: the server is "down").
    pub status: Arc<AtomicU16>,
    pub addr: SocketAddr,
}

impl Fake {
    /// Serves on a thread of its own, so tests on any runtime (or none) can use it.
    pub fn start() -> Self {
        let (tx, rx) = std::sync::mpsc::channel();
        let seen: Arc<Mutex<Vec<Publish>>> = Arc::default();
        let status = Arc::new(AtomicU16::new(200));
        let (s, st) = (Arc::clone(&seen), Arc::clone(&status));
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                let app = Router::new().fallback(publish).with_state((s, st));
                axum::serve(listener, app).await.unwrap();
            });
        });
        let addr = rx.recv().unwrap();
        Self { seen, status, addr }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }

    pub fn seen(&self) -> Vec<Publish> {
        self.seen.lock().unwrap().clone()
    }
}

type Shared = (Arc<Mutex<Vec<Publish>>>, Arc<AtomicU16>);

async fn publish(State((seen, status)): State<Shared>, uri: Uri, headers: HeaderMap, body: Bytes) -> StatusCode {
    let headers = headers
        .iter()
        .map(|(k, v)| (k.as_str().to_ascii_lowercase(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    let body = String::from_utf8_lossy(&body).into_owned();
    seen.lock().unwrap().push(Publish { path: uri.path().to_string(), headers, body });
    StatusCode::from_u16(status.load(Ordering::SeqCst)).unwrap()
}
