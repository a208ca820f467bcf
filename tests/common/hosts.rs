//! Hosts of the outside world, each on a loopback address of its own (127.0.0.2, 127.0.0.3, …):
//! a git server that takes pushes over smart HTTP (git's own `http-backend`), a package index
//! that serves files, and a stranger nobody should reach. Each keeps the requests it was sent.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

/// One request as a host saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
}

/// A host serving on `addr` until dropped.
pub struct Host {
    pub addr: std::net::SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    serving: tokio::task::JoinHandle<()>,
}

impl Drop for Host {
    fn drop(&mut self) {
        self.serving.abort();
    }
}

impl Host {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

struct Shared {
    seen: Arc<Mutex<Vec<Seen>>>,
    serve: Serve,
}

enum Serve {
    /// A bare repository's folder, through `git http-backend`.
    Git(PathBuf),
    /// Fixed files by path.
    Files(Vec<(String, String)>),
}

/// A git server on `ip` for the bare repository at `repo` (pushes allowed, no authentication).
pub async fn git_server(ip: &str, repo: &Path) -> Host {
    let ok = Command::new("git").args(["config", "http.receivepack", "true"]).current_dir(repo).status().unwrap();
    assert!(ok.success());
    start(ip, Serve::Git(repo.to_path_buf())).await
}

/// A package index on `ip` serving `files` (path → body); anything else is 404.
pub async fn index(ip: &str, files: &[(&str, &str)]) -> Host {
    start(ip, Serve::Files(files.iter().map(|(p, b)| (p.to_string(), b.to_string())).collect())).await
}

async fn start(ip: &str, serve: Serve) -> Host {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let shared = Arc::new(Shared { seen: Arc::clone(&seen), serve });
    let app = axum::Router::new().fallback(handle).with_state(shared);
    let listener =
        tokio::net::TcpListener::bind((ip.parse::<std::net::IpAddr>().unwrap(), 0)).await.expect("the host listens");
    let addr = listener.local_addr().unwrap();
    let serving = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Host { addr, seen, serving }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    shared.seen.lock().unwrap().push(Seen { method: method.to_string(), path: uri.path().to_string() });
    match &shared.serve {
        Serve::Files(files) => match files.iter().find(|(p, _)| p == uri.path()) {
            Some((_, text)) => text.clone().into_response(),
            None => (StatusCode::NOT_FOUND, "no such file").into_response(),
        },
        Serve::Git(repo) => {
            let (repo, query) = (repo.clone(), uri.query().unwrap_or_default().to_string());
            let path = uri.path().to_string();
            let content_type =
                headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
            let out =
                tokio::task::spawn_blocking(move || cgi(&repo, method.as_str(), &path, &query, &content_type, &body))
                    .await
                    .unwrap();
            out.unwrap_or_else(|e| (StatusCode::INTERNAL_SERVER_ERROR, e).into_response())
        }
    }
}

/// One request through `git http-backend` (a CGI program): its headers, then its body.
fn cgi(
    repo: &Path,
    method: &str,
    path: &str,
    query: &str,
    content_type: &str,
    body: &[u8],
) -> Result<Response, String> {
    let root = repo.parent().unwrap();
    let name = repo.file_name().unwrap().to_string_lossy();
    // The URL names the repository by its folder's name: /repo.git/info/refs.
    let path_info = path.strip_prefix('/').map(|p| format!("/{p}")).unwrap_or_default();
    if !path_info.starts_with(&format!("/{name}")) {
        return Ok((StatusCode::NOT_FOUND, "no such repository").into_response());
    }
    let mut child = Command::new("git")
        .arg("http-backend")
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", method)
        .env("PATH_INFO", &path_info)
        .env("QUERY_STRING", query)
        .env("CONTENT_TYPE", content_type)
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("REMOTE_USER", "night")
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(body).map_err(|e| e.to_string())?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let split = out
        .stdout
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4))
        .or_else(|| out.stdout.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2)))
        .ok_or("http-backend said no headers")?;
    let (head, rest) =
        (String::from_utf8_lossy(&out.stdout[..split.0]).into_owned(), out.stdout[split.0 + split.1..].to_vec());
    let mut response = Response::builder();
    for line in head.lines() {
        let Some((k, v)) = line.split_once(':') else { continue };
        if k.eq_ignore_ascii_case("status") {
            let code: u16 = v.split_whitespace().next().and_then(|c| c.parse().ok()).unwrap_or(500);
            response = response.status(code);
        } else {
            response = response.header(k.trim(), v.trim());
        }
    }
    response.body(Body::from(rest)).map_err(|e| e.to_string())
}
