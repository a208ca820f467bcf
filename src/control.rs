//! The control socket: how `nightshift send` and `nightshift stop` reach a session owned by another
//! Nightshift process (a headless run or the tray app).
//!
//! Each process that supervises sessions listens on a Unix socket in the private runtime directory
//! (the directory is 0700, the socket 0600) and checks the peer's uid on every connection, so only
//! this user can open it. The protocol is one JSON request line and one JSON response line.
//!
//! The server gives each client a few seconds to send its line and reads at most 1 MiB of it, and
//! serves a bounded number of connections at once (more are told `busy` and closed): a client that
//! connects and says nothing, or a flood of them, costs a few file descriptors for a few seconds and
//! never delays the sessions. Tokens travel as [`Token`](crate::token::Token), whose `Debug` shows none of it.

pub mod attach;

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use crate::store::SessionRow;
use crate::supervisor::Supervisor;
use crate::token::Token;

/// How long a client waits for the owning process to answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);
/// Requests are short; anything longer is not ours.
const MAX_REQUEST: usize = 1 << 20;
/// How long the server waits for a client's request line.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);
/// Connections served at once; more are refused at once.
const MAX_CONNECTIONS: usize = 256;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    Ping,
    Send {
        session: String,
        text: String,
        #[serde(default)]
        enter: bool,
        /// Who types it, for the journal (an answered dialog names them); `nightshift send` when
        /// not given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<crate::event::Answerer>,
    },
    Stop {
        session: String,
        /// Who asked, for the journal; `nightshift stop` when not given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<String>,
    },
    /// Close the session's breakers.
    ResetBreaker {
        session: String,
    },
    /// The session's screen as text, now.
    Screen {
        session: String,
    },
    /// Attach a viewer (`nightshift attach`): after the answer's line the connection carries
    /// frames — see [`attach`] — until the viewer detaches or the session ends. The viewer's
    /// terminal size, when given, becomes the session's (the latest viewer's size wins).
    Attach {
        session: String,
        #[serde(default)]
        cols: u16,
        #[serde(default)]
        rows: u16,
    },
    /// What the session does by itself.
    Options {
        session: String,
    },
    /// Change what the session does by itself; answers with its options after the change.
    Configure {
        session: String,
        change: Box<crate::session::Change>,
    },
    /// A statusLine report from a session's exporter.
    Usage {
        session: String,
        token: Token,
        status: serde_json::Value,
    },
    /// A hook of a session's client: the payload as the client gave it; answered with what the hook
    /// prints for the client.
    Hook {
        session: String,
        token: Token,
        payload: serde_json::Value,
    },
    /// Codex's notify of a session: the payload Codex gave it, and whether Codex keeps a rollout
    /// file of its thread (only the conversation's thread has one).
    Notify {
        session: String,
        token: Token,
        payload: serde_json::Value,
        #[serde(default)]
        rollout: bool,
    },
}

/// How long a request waits for a session this process is starting (journalled, its agent not
/// started yet: its id is in the journal a moment before its actor takes requests).
const STARTING_WAIT: Duration = Duration::from_secs(2);

/// The session `id` of this process, waiting a moment for one it is starting.
async fn reachable(supervisor: &Supervisor, id: &str) -> Option<crate::session::SessionHandle> {
    if let Some(handle) = supervisor.session(id) {
        return Some(handle);
    }
    let mine = |row: &SessionRow| row.owner_pid == Some(i64::from(std::process::id())) && !row.is_final();
    if !supervisor.with_store(|s| s.session(id)).ok().flatten().is_some_and(|row| mine(&row)) {
        return None;
    }
    let deadline = tokio::time::Instant::now() + STARTING_WAIT;
    while tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if let Some(handle) = supervisor.session(id) {
            return Some(handle);
        }
    }
    None
}

/// The one error shape that crosses a process boundary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct ErrorBody {
    pub code: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screen: Option<crate::screen::Snapshot>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<crate::session::Options>,
    /// For a hook: what it prints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook: Option<String>,
}

impl Response {
    /// A refusal as an error, anything else as the response.
    pub fn into_result(self) -> Result<Self, ControlError> {
        match self.error {
            Some(body) if !self.ok => Err(ControlError::Refused(body)),
            _ => Ok(self),
        }
    }

    fn ok() -> Self {
        Self {
            ok: true,
            error: None,
            pid: Some(std::process::id()),
            screen: None,
            message: None,
            options: None,
            hook: None,
        }
    }

    fn error(code: &str, message: impl Into<String>) -> Self {
        Self {
            ok: false,
            error: Some(ErrorBody { code: code.into(), message: message.into() }),
            pid: None,
            screen: None,
            message: None,
            options: None,
            hook: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error("cannot reach the Nightshift process behind {path}: {source}")]
    Unreachable { path: PathBuf, source: io::Error },
    #[error("the Nightshift process behind {path} did not answer within {secs} s")]
    Timeout { path: PathBuf, secs: u64 },
    #[error("unexpected answer from {path}: {message}")]
    Protocol { path: PathBuf, message: String },
    #[error("{0}")]
    Refused(ErrorBody),
    /// No process runs the session: it ended, or its Nightshift is gone.
    #[error("{0}")]
    NotRunning(String),
}

/// A session that has ended, said as the journal knows it (`… has exited (code 3); …`).
pub fn ended(row: &SessionRow) -> ControlError {
    let how = match (row.exit_code, &row.exit_signal) {
        (_, Some(signal)) => format!(" ({signal})"),
        (Some(code), None) => format!(" (code {code})"),
        _ => String::new(),
    };
    ControlError::NotRunning(format!("session {} has {}{how}; there is nothing running to talk to", row.id, row.state))
}

/// The control socket of the process that runs `row`'s session, or why there is none to talk to.
/// A session that exited may still be alive in its process (a respawn restarting it), so a live
/// owner is asked before the journal's word is taken.
pub fn owner_socket(row: &SessionRow) -> Result<&Path, ControlError> {
    let Some(socket) = &row.control_socket else {
        return Err(ControlError::NotRunning(format!(
            "session {} was started without a control socket; it cannot be reached",
            row.id
        )));
    };
    if row.owner_alive() {
        return Ok(Path::new(socket));
    }
    if row.is_final() {
        return Err(ended(row));
    }
    Err(ControlError::NotRunning(format!(
        "the Nightshift process that ran session {} (pid {}) is gone; the session is lost",
        row.id,
        row.owner_pid.unwrap_or_default()
    )))
}

/// A listening control socket; removed when dropped.
#[derive(Debug)]
pub struct ControlServer {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl ControlServer {
    /// Listens at `path` for commands to `supervisor`'s sessions.
    pub fn bind(path: &Path, supervisor: Supervisor) -> io::Result<Self> {
        // A socket left by a dead process with our pid is stale; a live listener cannot have our pid.
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let listener = UnixListener::bind(path)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        let task = tokio::spawn(accept_loop(listener, supervisor));
        Ok(Self { path: path.to_path_buf(), task })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

async fn accept_loop(listener: UnixListener, supervisor: Supervisor) {
    let me = nix::unistd::geteuid().as_raw();
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors, most likely: the timeouts free them soon.
                tracing::warn!("control socket accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        match stream.peer_cred() {
            Ok(cred) if cred.uid() == me => {}
            Ok(cred) => {
                tracing::warn!(uid = cred.uid(), "refused a control connection from another user");
                continue;
            }
            Err(e) => {
                tracing::warn!("refused a control connection without credentials: {e}");
                continue;
            }
        }
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tokio::spawn(refuse_busy(stream));
            continue;
        };
        let supervisor = supervisor.clone();
        tokio::spawn(async move {
            if let Err(e) = serve(stream, supervisor).await {
                tracing::debug!("control connection ended: {e}");
            }
            drop(slot);
        });
    }
}

async fn refuse_busy(mut stream: UnixStream) {
    tracing::warn!("refused a control connection: {MAX_CONNECTIONS} are open already");
    let busy = Response::error("busy", format!("{MAX_CONNECTIONS} control connections are open; try again"));
    let mut out = serde_json::to_vec(&busy).expect("responses serialise");
    out.push(b'\n');
    let _ = tokio::time::timeout(REQUEST_TIMEOUT, stream.write_all(&out)).await;
}

/// Reads one request line: `None` when the client said nothing in time.
async fn read_request(reader: &mut BufReader<tokio::net::unix::OwnedReadHalf>) -> Option<Result<Request, String>> {
    let mut line = Vec::new();
    let mut limited = reader.take(MAX_REQUEST as u64 + 1);
    match tokio::time::timeout(REQUEST_TIMEOUT, limited.read_until(b'\n', &mut line)).await {
        Err(_) => {
            tracing::debug!("a control client sent no request within {REQUEST_TIMEOUT:?}");
            None
        }
        Ok(Err(e)) => Some(Err(format!("cannot read the request: {e}"))),
        Ok(Ok(_)) if line.len() > MAX_REQUEST => Some(Err(format!("a request is at most {MAX_REQUEST} bytes"))),
        Ok(Ok(_)) => Some(serde_json::from_slice::<Request>(&line).map_err(|e| format!("not a control request: {e}"))),
    }
}

async fn serve(stream: UnixStream, supervisor: Supervisor) -> io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let response = match read_request(&mut reader).await {
        None => return Ok(()),
        Some(Ok(Request::Attach { session, cols, rows })) => {
            return attach::serve(reader, write, &supervisor, &session, cols, rows).await;
        }
        Some(Ok(request)) => answer(request, &supervisor).await,
        Some(Err(message)) => Response::error("bad_request", message),
    };
    let mut out = serde_json::to_vec(&response).expect("responses serialise");
    out.push(b'\n');
    write.write_all(&out).await?;
    write.shutdown().await
}

/// Answers a request for a session of `supervisor`, as the socket would (the app uses it for its own
/// sessions, so its sessions and other processes' answer alike).
pub async fn answer(request: Request, supervisor: &Supervisor) -> Response {
    let session = match &request {
        Request::Ping => return Response::ok(),
        Request::Usage { session, token, status } => {
            let bytes = serde_json::to_vec(status).unwrap_or_default();
            return match supervisor.record_status(session, token.expose(), &bytes) {
                Ok(_) => Response::ok(),
                Err(e) => Response::error("usage_refused", e.to_string()),
            };
        }
        Request::Hook { session, token, payload } => {
            return match supervisor.record_hook(session, token.expose(), payload).await {
                Ok(answer) => Response { hook: answer.stdout(), ..Response::ok() },
                Err(e) => Response::error("hook_refused", e.to_string()),
            };
        }
        Request::Notify { session, token, payload, rollout } => {
            return match supervisor.record_notify(session, token.expose(), payload, *rollout).await {
                Ok(()) => Response::ok(),
                Err(e) => Response::error("notify_refused", e.to_string()),
            };
        }
        Request::Send { session, .. }
        | Request::Stop { session, .. }
        | Request::Screen { session }
        | Request::Attach { session, .. }
        | Request::ResetBreaker { session }
        | Request::Options { session }
        | Request::Configure { session, .. } => session.clone(),
    };
    let Some(handle) = reachable(supervisor, &session).await else {
        return Response::error("no_session", format!("session {session} is not running in this Nightshift process"));
    };
    if handle.kind() == crate::store::SessionKind::Loop && matches!(request, Request::Send { .. }) {
        return Response::error(
            "not_a_terminal",
            format!("session {session} is a loop: it takes no typing (end it with `nightshift loop stop {session}`)"),
        );
    }
    let result = match request {
        Request::Send { text, enter, by, .. } => {
            let by = by.unwrap_or(crate::event::Answerer::Cli);
            handle.send_text(text, enter, by).await.map(|()| Response::ok())
        }
        Request::Stop { source, .. } => {
            handle.stop(source.as_deref().unwrap_or("nightshift stop")).await.map(|()| Response::ok())
        }
        Request::Screen { .. } => handle.snapshot().await.map(|s| Response { screen: Some(s), ..Response::ok() }),
        Request::ResetBreaker { .. } => {
            handle.reset_breaker().await.map(|m| Response { message: Some(m), ..Response::ok() })
        }
        Request::Options { .. } => Ok(Response { options: Some(handle.status().options), ..Response::ok() }),
        Request::Configure { change, .. } => {
            handle.configure(*change).await.map(|o| Response { options: Some(o), ..Response::ok() })
        }
        // Only over a socket of its own (see `serve`): the window has its own way to the screen.
        Request::Attach { .. } => Ok(Response::error("not_here", "attach over the session's control socket")),
        Request::Ping | Request::Usage { .. } | Request::Hook { .. } | Request::Notify { .. } => Ok(Response::ok()),
    };
    result.unwrap_or_else(|e| Response::error("session_ended", e.to_string()))
}

/// Sends one request to the process listening at `path`.
pub async fn request(path: &Path, request: &Request) -> Result<Response, ControlError> {
    let exchange = async {
        let mut stream = UnixStream::connect(path)
            .await
            .map_err(|source| ControlError::Unreachable { path: path.to_path_buf(), source })?;
        let mut line = serde_json::to_vec(request).expect("requests serialise");
        line.push(b'\n');
        let io_err = |source| ControlError::Unreachable { path: path.to_path_buf(), source };
        stream.write_all(&line).await.map_err(io_err)?;
        let mut answer = String::new();
        BufReader::new(stream).read_line(&mut answer).await.map_err(io_err)?;
        serde_json::from_str::<Response>(&answer)
            .map_err(|e| ControlError::Protocol { path: path.to_path_buf(), message: format!("{e}: {answer:?}") })
    };
    let response = tokio::time::timeout(CLIENT_TIMEOUT, exchange)
        .await
        .map_err(|_| ControlError::Timeout { path: path.to_path_buf(), secs: CLIENT_TIMEOUT.as_secs() })??;
    response.into_result()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_tagged_json() {
        let r = Request::Send { session: "ab".into(), text: "hi".into(), enter: true, by: None };
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(json, r#"{"op":"send","session":"ab","text":"hi","enter":true}"#);
        assert_eq!(serde_json::from_str::<Request>(&json).unwrap(), r);
    }

    #[test]
    fn a_token_travels_as_itself_and_is_never_shown() {
        let token = Token::random();
        let secret = token.expose().to_string();
        let r = Request::Usage { session: "ab".into(), token, status: serde_json::json!({}) };
        assert!(serde_json::to_string(&r).unwrap().contains(&format!(r#""token":"{secret}""#)));
        let shown = format!("{r:?} {r:#?}");
        assert!(!shown.contains(&secret) && shown.contains("Token(hidden)"), "{shown}");
    }
}
