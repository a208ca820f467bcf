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
pub const MAX_REQUEST: usize = 1 << 20;
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
    /// Let `host` (a name, an address, `host:port`, `*.domain`) through the session's network fence
    /// from now on; answers with its options after the change.
    AllowHost {
        session: String,
        host: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
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
        /// The latest figures of the thread's rollout file (Codex's own usage data), when it has
        /// any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<crate::usage::Sample>,
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

/// Why a request was refused, by its name on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Code {
    /// Too many connections are open.
    Busy,
    /// The line was not a request.
    BadRequest,
    /// The session does not run in the answering process.
    NoSession,
    /// Typing into a loop, or attaching to one: it has no terminal.
    NotATerminal,
    /// The session ended while the request was answered.
    SessionEnded,
    /// The request belongs on another channel (attach over its own socket).
    NotHere,
    /// A statusLine's report, a hook's or a notify's was not the session's (a wrong token).
    UsageRefused,
    HookRefused,
    NotifyRefused,
    /// A code a newer Nightshift sent that this one does not know.
    #[serde(other)]
    Unknown,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Busy => "busy",
            Self::BadRequest => "bad_request",
            Self::NoSession => "no_session",
            Self::NotATerminal => "not_a_terminal",
            Self::SessionEnded => "session_ended",
            Self::NotHere => "not_here",
            Self::UsageRefused => "usage_refused",
            Self::HookRefused => "hook_refused",
            Self::NotifyRefused => "notify_refused",
            Self::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The one error shape that crosses a process boundary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct ErrorBody {
    pub code: Code,
    pub message: String,
}

impl ErrorBody {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }
}

/// What a request is answered with, one kind per request: [`Request::Screen`] gets a screen,
/// [`Request::Options`] and [`Request::Configure`] the options, [`Request::ResetBreaker`] what it
/// did, [`Request::Hook`] what the hook prints; the others are done or refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    Done,
    Screen(Box<crate::screen::Snapshot>),
    Options(Box<crate::session::Options>),
    /// What a breaker reset did, in words.
    Reset(String),
    /// What the hook prints for its client (nothing: the client goes on as it would).
    Hook(Option<String>),
}

impl Response {
    /// The error for an answer of another kind than the one asked for.
    pub fn unexpected(&self, asked: &str) -> ControlError {
        let kind = match self {
            Self::Done => "done",
            Self::Screen(_) => "a screen",
            Self::Options(_) => "the options",
            Self::Reset(_) => "a breaker's reset",
            Self::Hook(_) => "a hook's answer",
        };
        ControlError::Unexpected { asked: asked.to_string(), answered: kind }
    }
}

/// The answer's line on the socket: `ok`, then the refusal or the one field the request asks for
/// (and the answering process's pid).
#[derive(Debug, Default, Serialize, Deserialize)]
struct Line {
    ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<ErrorBody>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    screen: Option<Box<crate::screen::Snapshot>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    options: Option<Box<crate::session::Options>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hook: Option<String>,
}

/// An answer as its line on the socket, newline included.
pub(crate) fn answer_line(answer: Result<Response, ErrorBody>) -> Vec<u8> {
    let line = match answer {
        Err(error) => Line { error: Some(error), ..Line::default() },
        Ok(response) => {
            let done = Line { ok: true, pid: Some(std::process::id()), ..Line::default() };
            match response {
                Response::Done => done,
                Response::Screen(screen) => Line { screen: Some(screen), ..done },
                Response::Options(options) => Line { options: Some(options), ..done },
                Response::Reset(message) => Line { message: Some(message), ..done },
                Response::Hook(hook) => Line { hook, ..done },
            }
        }
    };
    let mut out = serde_json::to_vec(&line).expect("answers serialise");
    out.push(b'\n');
    out
}

/// Reads the answer to `request` from its line, from the process listening at `path`: a refusal,
/// or the kind of answer the request asks for (a line without it is the other process's fault).
pub fn read_answer(request: &Request, line: &str, path: &Path) -> Result<Response, ControlError> {
    let protocol = |message: String| ControlError::Protocol { path: path.to_path_buf(), message };
    let read: Line = serde_json::from_str(line).map_err(|e| protocol(format!("{e}: {line:?}")))?;
    if !read.ok {
        return Err(match read.error {
            Some(body) => ControlError::Refused(body),
            None => protocol(format!("a refusal without its reason: {line:?}")),
        });
    }
    let missing = |what: &str| protocol(format!("an answer without its {what}: {line:?}"));
    Ok(match request {
        Request::Screen { .. } => Response::Screen(read.screen.ok_or_else(|| missing("screen"))?),
        Request::Options { .. } | Request::Configure { .. } | Request::AllowHost { .. } => {
            Response::Options(read.options.ok_or_else(|| missing("options"))?)
        }
        Request::ResetBreaker { .. } => Response::Reset(read.message.ok_or_else(|| missing("message"))?),
        Request::Hook { .. } => Response::Hook(read.hook),
        Request::Ping
        | Request::Send { .. }
        | Request::Stop { .. }
        | Request::Attach { .. }
        | Request::Usage { .. }
        | Request::Notify { .. } => Response::Done,
    })
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
    /// An answer of another kind than the request asks for (a bug on one side or the other).
    #[error("asked for {asked}, the session's process answered with {answered}")]
    Unexpected { asked: String, answered: &'static str },
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
    let pid = row.owner_pid.map(|pid| format!(" (pid {pid})"));
    Err(ControlError::NotRunning(format!(
        "the Nightshift process that ran session {}{} is gone; the session is lost",
        row.id,
        pid.as_deref().unwrap_or("")
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
    let out = answer_line(Err(ErrorBody::new(
        Code::Busy,
        format!("{MAX_CONNECTIONS} control connections are open; try again"),
    )));
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
        Some(Err(message)) => Err(ErrorBody::new(Code::BadRequest, message)),
    };
    write.write_all(&answer_line(response)).await?;
    write.shutdown().await
}

/// Answers a request for a session of `supervisor`, as the socket would (the app uses it for its own
/// sessions, so its sessions and other processes' answer alike).
pub async fn answer(request: Request, supervisor: &Supervisor) -> Result<Response, ErrorBody> {
    let session = match &request {
        Request::Ping => return Ok(Response::Done),
        Request::Usage { session, token, status } => {
            // A JSON value's text: what the statusLine's command printed, as the supervisor reads it.
            let text = status.to_string();
            return match supervisor.record_status(session, token.expose(), text.as_bytes()) {
                Ok(_) => Ok(Response::Done),
                Err(e) => Err(ErrorBody::new(Code::UsageRefused, e.to_string())),
            };
        }
        Request::Hook { session, token, payload } => {
            return match supervisor.record_hook(session, token.expose(), payload).await {
                Ok(answer) => Ok(Response::Hook(answer.stdout())),
                Err(e) => Err(ErrorBody::new(Code::HookRefused, e.to_string())),
            };
        }
        Request::Notify { session, token, payload, rollout, usage } => {
            return match supervisor.record_notify(session, token.expose(), payload, *rollout, usage.clone()).await {
                Ok(()) => Ok(Response::Done),
                Err(e) => Err(ErrorBody::new(Code::NotifyRefused, e.to_string())),
            };
        }
        Request::Send { session, .. }
        | Request::Stop { session, .. }
        | Request::Screen { session }
        | Request::Attach { session, .. }
        | Request::ResetBreaker { session }
        | Request::Options { session }
        | Request::Configure { session, .. }
        | Request::AllowHost { session, .. } => session.clone(),
    };
    let Some(handle) = reachable(supervisor, &session).await else {
        return Err(ErrorBody::new(
            Code::NoSession,
            format!("session {session} is not running in this Nightshift process"),
        ));
    };
    if handle.kind() == crate::store::SessionKind::Loop && matches!(request, Request::Send { .. }) {
        return Err(ErrorBody::new(
            Code::NotATerminal,
            format!("session {session} is a loop: it takes no typing (end it with `nightshift loop stop {session}`)"),
        ));
    }
    let result = match request {
        Request::Send { text, enter, by, .. } => {
            let by = by.unwrap_or(crate::event::Answerer::Cli);
            handle.send_text(text, enter, by).await.map(|()| Response::Done)
        }
        Request::Stop { source, .. } => {
            handle.stop(source.as_deref().unwrap_or("nightshift stop")).await.map(|()| Response::Done)
        }
        Request::Screen { .. } => handle.snapshot().await.map(|s| Response::Screen(Box::new(s))),
        Request::ResetBreaker { .. } => handle.reset_breaker().await.map(Response::Reset),
        Request::Options { .. } => Ok(Response::Options(Box::new(handle.status().options))),
        Request::Configure { change, .. } => handle.configure(*change).await.map(|o| Response::Options(Box::new(o))),
        Request::AllowHost { host, by, .. } => {
            match handle.allow_host(&host, by.as_deref().unwrap_or("nightshift")).await {
                Ok(Ok(options)) => Ok(Response::Options(Box::new(options))),
                Ok(Err(refused)) => return Err(ErrorBody::new(Code::BadRequest, refused)),
                Err(ended) => Err(ended),
            }
        }
        // Only over a socket of its own (see `serve`): the window has its own way to the screen.
        Request::Attach { .. } => {
            return Err(ErrorBody::new(Code::NotHere, "attach over the session's control socket"));
        }
        Request::Ping | Request::Usage { .. } | Request::Hook { .. } | Request::Notify { .. } => Ok(Response::Done),
    };
    result.map_err(|e| ErrorBody::new(Code::SessionEnded, e.to_string()))
}

/// Sends one request to the process listening at `path`, and reads its answer.
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
        read_answer(request, &answer, path)
    };
    tokio::time::timeout(CLIENT_TIMEOUT, exchange)
        .await
        .map_err(|_| ControlError::Timeout { path: path.to_path_buf(), secs: CLIENT_TIMEOUT.as_secs() })?
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

    fn line(answer: Result<Response, ErrorBody>) -> String {
        String::from_utf8(answer_line(answer)).unwrap()
    }

    #[test]
    fn each_request_reads_its_own_kind_of_answer_and_nothing_is_defaulted() {
        let here = Path::new("/run/test.sock");
        let options = crate::session::Options::default();
        let ask = Request::Options { session: "ab".into() };
        let said = line(Ok(Response::Options(Box::new(options.clone()))));
        // The line on the socket is the one older Nightshift processes read and write.
        let v: serde_json::Value = serde_json::from_str(&said).unwrap();
        assert_eq!((v["ok"].as_bool(), v["pid"].as_u64()), (Some(true), Some(u64::from(std::process::id()))));
        assert!(v["options"].is_object(), "{said}");
        assert_eq!(read_answer(&ask, &said, here).unwrap(), Response::Options(Box::new(options)));

        // An answer without what was asked for is an error, not an empty value.
        let done = line(Ok(Response::Done));
        for asked in [ask, Request::Screen { session: "ab".into() }, Request::ResetBreaker { session: "ab".into() }] {
            let e = read_answer(&asked, &done, here).unwrap_err();
            assert!(matches!(e, ControlError::Protocol { .. }) && e.to_string().contains("without its"), "{e}");
        }
        let hook = Request::Hook { session: "ab".into(), token: Token::random(), payload: serde_json::json!({}) };
        assert_eq!(read_answer(&hook, &done, here).unwrap(), Response::Hook(None));
        let stop = Request::Stop { session: "ab".into(), source: None };
        assert_eq!(read_answer(&stop, &done, here).unwrap(), Response::Done);

        let refused = line(Err(ErrorBody::new(Code::NoSession, "session ab is not running")));
        assert_eq!(
            refused.trim_end(),
            r#"{"ok":false,"error":{"code":"no_session","message":"session ab is not running"}}"#
        );
        match read_answer(&stop, &refused, here) {
            Err(ControlError::Refused(body)) => assert_eq!(body.code, Code::NoSession),
            other => panic!("{other:?}"),
        }
        // A code from a newer Nightshift still reads, as one this one does not know.
        let newer = r#"{"ok":false,"error":{"code":"on_fire","message":"m"}}"#;
        assert!(matches!(read_answer(&stop, newer, here), Err(ControlError::Refused(b)) if b.code == Code::Unknown));
        assert!(matches!(read_answer(&stop, r#"{"ok":false}"#, here), Err(ControlError::Protocol { .. })));
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
