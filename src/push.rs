//! Notifications for the phone: ntfy (the open protocol, a self-hosted server or the public one)
//! and a generic JSON webhook, from the app and from headless runs alike.
//!
//! ```toml
//! [push]
//! ntfy = "https://ntfy.sh/my-night"   # the topic's URL; nothing is sent without one
//! webhook = "https://example.org/hook" # a JSON POST of every notice, for other services
//! short = false                        # true: only the kind and the session, no text at all
//! click = "https://example.org/s/{session}"  # the link a tap opens, `{session}` filled in
//!
//! [push.kinds]
//! finished = false                     # the same switches as `[notifications]`
//! ```
//!
//! An ntfy access token is read from the desktop's keyring where it holds one (the Secret Service:
//! `secret-tool store --label='Nightshift ntfy token' application nightshift service ntfy`), else
//! from `ntfy-token` in the configuration directory, a file only its owner may read (mode 0600);
//! it never reaches a log, an event or the window. Each process pushes
//! the notices of its own sessions (the app those it runs, a headless run its own), with the same
//! rules as the desktop's: a finish that respawn undoes within seconds, or a dialog Nightshift
//! answers itself, is not told. The text never carries the screen beyond the question itself.
//!
//! Delivery runs on a thread of its own, so a slow or dead server never holds up a session: each
//! message is tried, then retried after [`RETRY_AFTER`]; a target that still fails is journalled
//! once (a `push_failed` event) and, until it works again, tried once per message without retries.
//! What became of each message at each target is journalled too (`push_sent`, `push_not_sent`),
//! so the digest counts the pushes sent and those that did not arrive.

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde::Serialize;

use crate::notice::{self, Kind, Notice};
use crate::platform::{Found, Os, Secrets};

/// The wait before each retry of a message that could not be delivered.
pub const RETRY_AFTER: [Duration; 3] = [Duration::from_secs(2), Duration::from_secs(10), Duration::from_secs(30)];
/// How long one delivery may take, connection included.
const TIMEOUT: Duration = Duration::from_secs(15);
/// Messages waiting for the delivery thread; more are dropped (and logged) rather than queued
/// without bound behind a dead server.
const QUEUE: usize = 64;
/// The access token's file, in the configuration directory.
pub const TOKEN_FILE: &str = "ntfy-token";

/// The `[push]` table of `config.toml` (kept with the other notice settings, so the configuration
/// does not depend on the delivery).
pub use crate::notice::PushSettings as Settings;

/// The ntfy access token's item in the desktop's keyring (see [`crate::platform::Secrets`]).
pub const KEYRING_ITEM: [(&str, &str); 2] = [("application", "nightshift"), ("service", "ntfy")];

/// Where the ntfy access token was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kept {
    Keyring,
    File,
}

/// The ntfy access token: the desktop's keyring's item when it holds one, else the file in `dir`
/// (`None` with neither).
pub fn token(dir: Option<&Path>) -> Result<Option<Secret>, String> {
    Ok(find_token(dir)?.map(|(secret, _)| secret))
}

/// Where the token is kept, without reading it (for the window's settings).
pub fn token_kept(dir: Option<&Path>) -> Option<Kept> {
    if <Os as Secrets>::holds(&KEYRING_ITEM) != Found::Nothing {
        return Some(Kept::Keyring);
    }
    dir.is_some_and(|d| d.join(TOKEN_FILE).exists()).then_some(Kept::File)
}

/// The token and where it is kept. A locked keyring item is said (once per call, in the log) and
/// the file is used.
pub fn find_token(dir: Option<&Path>) -> Result<Option<(Secret, Kept)>, String> {
    match <Os as Secrets>::lookup(&KEYRING_ITEM) {
        Ok(Found::Secret(token)) => return Ok(Some((Secret(token), Kept::Keyring))),
        Ok(Found::Locked) => {
            tracing::warn!("the keyring holds the ntfy token but is locked; unlock it, or keep the token in the file")
        }
        Ok(Found::Nothing) => {}
        Err(e) => tracing::warn!("{e}; the ntfy token is looked for in its file"),
    }
    Ok(file_token(dir)?.map(|secret| (secret, Kept::File)))
}

/// The ntfy access token kept in `dir`'s file (`None` without the file).
fn file_token(dir: Option<&Path>) -> Result<Option<Secret>, String> {
    let Some(dir) = dir else { return Ok(None) };
    let path = dir.join(TOKEN_FILE);
    let meta = match std::fs::metadata(&path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "{} may be read by others (mode {mode:o}); run `chmod 600 {}` and start again",
            path.display(),
            path.display()
        ));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(format!("{} is empty; put the ntfy access token in it, or delete it", path.display()));
    }
    Ok(Some(Secret(token.to_string())))
}

/// A token: its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<hidden>)")
    }
}

/// ntfy's priorities (1 to 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    Default,
    High,
}

impl Priority {
    fn ntfy(self) -> &'static str {
        match self {
            Self::Default => "3",
            Self::High => "4",
        }
    }
}

/// One message for the phone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Message {
    pub kind: Kind,
    pub title: String,
    pub body: String,
    pub priority: Priority,
    /// ntfy's tags (emoji short codes show as emoji on the phone).
    pub tags: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub click: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

fn kind_word(kind: Kind) -> &'static str {
    match kind {
        Kind::Question => "question",
        Kind::Limit => "usage limit",
        Kind::Resume => "resumed",
        Kind::Breaker => "breaker tripped",
        Kind::Finished => "finished",
        Kind::Morning => "morning summary",
        Kind::Guard => "guard refusal",
    }
}

/// What the phone is told of `notice`.
pub fn message(notice: &Notice, settings: &Settings) -> Message {
    let (priority, tag) = match notice.kind {
        Kind::Question => (Priority::High, "question"),
        Kind::Breaker => (Priority::High, "rotating_light"),
        Kind::Limit => (Priority::Default, "hourglass"),
        Kind::Resume => (Priority::Default, "arrow_forward"),
        Kind::Finished => (Priority::Default, "checkered_flag"),
        Kind::Morning => (Priority::Default, "sunrise"),
        Kind::Guard => (Priority::Default, "shield"),
    };
    let (title, body) = if settings.short {
        let body = notice.session.as_ref().map_or_else(|| "Nightshift".to_string(), |s| format!("session {s}"));
        (format!("Nightshift: {}", kind_word(notice.kind)), body)
    } else {
        let body = match notice.kind {
            // The command can carry anything the agent typed, secrets included: the desktop shows
            // it, the phone does not.
            Kind::Guard => "The agent was told no and carries on.".to_string(),
            _ => notice.body.clone(),
        };
        (notice.summary.clone(), body)
    };
    let click = settings.click.as_ref().map(|c| c.replace("{session}", notice.session.as_deref().unwrap_or("")));
    Message {
        kind: notice.kind,
        title,
        body,
        priority,
        tags: vec![tag, "nightshift"],
        click,
        session: notice.session.clone(),
    }
}

/// Where messages go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Ntfy,
    Webhook,
}

impl Target {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ntfy => "ntfy",
            Self::Webhook => "webhook",
        }
    }
}

/// A header value as ntfy reads it: plain ASCII as is, anything else as an RFC 2047 encoded word.
fn header_value(text: &str) -> String {
    let flat: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    if flat.is_ascii() {
        flat
    } else {
        use base64::Engine as _;
        format!("=?UTF-8?B?{}?=", base64::engine::general_purpose::STANDARD.encode(flat.as_bytes()))
    }
}

/// Sends one message to one target, once.
fn deliver(agent: &ureq::Agent, target: Target, url: &str, token: Option<&Secret>, m: &Message) -> Result<(), String> {
    let sent = match target {
        Target::Ntfy => {
            let mut request = agent
                .post(url)
                .header("Title", header_value(&m.title))
                .header("Priority", m.priority.ntfy())
                .header("Tags", m.tags.join(","));
            if let Some(click) = &m.click {
                request = request.header("Click", header_value(click));
            }
            if let Some(Secret(token)) = token {
                request = request.header("Authorization", format!("Bearer {token}"));
            }
            request.content_type("text/plain; charset=utf-8").send(m.body.as_bytes())
        }
        Target::Webhook => {
            let body = serde_json::to_vec(m).map_err(|e| e.to_string())?;
            agent.post(url).content_type("application/json").send(&body[..])
        }
    };
    match sent {
        Ok(_) => Ok(()),
        // The server's answer, never the URL (an ntfy topic is a secret of sorts).
        Err(ureq::Error::StatusCode(code)) => Err(format!("the server answered {code}")),
        Err(e) => Err(e.to_string()),
    }
}

/// A delivery that failed for good: journalled once per outage of the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub target: Target,
    pub session: Option<String>,
    pub reason: String,
}

/// What became of one message at one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    Sent {
        target: Target,
        session: Option<String>,
        kind: Kind,
    },
    /// Not delivered, retries included; `outage` when the target worked until now (said once,
    /// until it works again).
    NotSent {
        target: Target,
        session: Option<String>,
        kind: Kind,
        outage: Option<Failure>,
    },
}

enum Job {
    Send(Message),
    /// Answered once everything queued before it was tried.
    Flush(std_mpsc::Sender<()>),
}

/// The delivery thread's handle. Dropping every clone lets the thread finish what is queued and end.
#[derive(Debug, Clone)]
pub struct Pusher {
    queue: std_mpsc::SyncSender<Job>,
}

impl fmt::Debug for Job {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Send(m) => f.debug_tuple("Send").field(&m.kind).finish(),
            Self::Flush(_) => f.write_str("Flush"),
        }
    }
}

/// The settings and token in force, shared by the process's follower and its delivery thread, and
/// changed in place from the window.
#[derive(Debug, Default)]
struct Live {
    settings: Settings,
    token: Option<Secret>,
}

type Shared = Arc<RwLock<Live>>;

fn read(live: &Shared) -> std::sync::RwLockReadGuard<'_, Live> {
    live.read().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Pusher {
    /// Starts the delivery thread. `told` hears what became of each message at each target, with
    /// each target that stopped working (once, until it works again). Each message goes to the
    /// targets set when it is delivered.
    fn start(live: Shared, retry_after: Vec<Duration>, told: impl Fn(Report) + Send + 'static) -> Self {
        let (queue, jobs) = std_mpsc::sync_channel::<Job>(QUEUE);
        let run = move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .timeout_global(Some(TIMEOUT))
                .http_status_as_error(true)
                .user_agent(concat!("nightshift/", env!("CARGO_PKG_VERSION")))
                .build()
                .into();
            // Per target: whether its outage was journalled already.
            let mut down = [false; 2];
            for job in jobs {
                let m = match job {
                    Job::Send(m) => m,
                    Job::Flush(done) => {
                        let _ = done.send(());
                        continue;
                    }
                };
                let (targets, token) = {
                    let live = read(&live);
                    let urls =
                        [(Target::Ntfy, live.settings.ntfy.clone()), (Target::Webhook, live.settings.webhook.clone())];
                    (urls, live.token.clone())
                };
                for (i, (target, url)) in targets.iter().enumerate() {
                    let Some(url) = url else { continue };
                    let retries: &[Duration] = if down[i] { &[] } else { &retry_after };
                    let mut result = deliver(&agent, *target, url, token.as_ref(), &m);
                    for wait in retries {
                        if result.is_ok() {
                            break;
                        }
                        std::thread::sleep(*wait);
                        result = deliver(&agent, *target, url, token.as_ref(), &m);
                    }
                    let (target, session, kind) = (*target, m.session.clone(), m.kind);
                    match result {
                        Ok(()) => {
                            down[i] = false;
                            told(Report::Sent { target, session, kind });
                        }
                        Err(reason) if !down[i] => {
                            down[i] = true;
                            tracing::warn!(target = target.as_str(), "a push notification was not delivered: {reason}");
                            let outage = Some(Failure { target, session: session.clone(), reason });
                            told(Report::NotSent { target, session, kind, outage });
                        }
                        Err(reason) => {
                            tracing::debug!(target = target.as_str(), "still not delivered: {reason}");
                            told(Report::NotSent { target, session, kind, outage: None });
                        }
                    }
                }
            }
        };
        std::thread::Builder::new().name("push".into()).spawn(run).expect("the OS refused to start a thread");
        Self { queue }
    }

    /// Queues `m`; never blocks (a full queue drops it).
    pub fn send(&self, m: Message) {
        if let Err(std_mpsc::TrySendError::Full(job)) = self.queue.try_send(Job::Send(m)) {
            tracing::warn!(?job, "a push notification was dropped: too many are waiting for delivery");
        }
    }

    /// Waits, at most `within`, until everything queued so far was tried. Blocking.
    pub fn flush(&self, within: Duration) -> bool {
        let (done, heard) = std_mpsc::channel();
        self.queue.send(Job::Flush(done)).is_ok() && heard.recv_timeout(within).is_ok()
    }
}

/// A process's pushes: the notices of its own sessions, on their way to the phone.
#[derive(Debug, Clone)]
pub struct Following {
    pusher: Pusher,
    live: Shared,
    /// Events heard and not yet either dropped or queued (some wait to settle).
    pending: Arc<AtomicUsize>,
}

impl Following {
    /// Lets what is under way reach the phone before the process exits (a headless run's last
    /// "finished"), waiting at most `within`.
    pub async fn finish(&self, within: Duration) {
        let until = tokio::time::Instant::now() + within;
        while self.pending.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let left = until.saturating_duration_since(tokio::time::Instant::now());
        let pusher = self.pusher.clone();
        let _ = tokio::task::spawn_blocking(move || pusher.flush(left)).await;
    }

    /// New settings and token, from the next notice on (the window's settings).
    pub fn update(&self, settings: Settings, token: Option<Secret>) {
        *self.live.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Live { settings, token };
    }
}

/// Pushes the notices of `supervisor`'s own sessions, with `settings`; `None` (and nothing started)
/// when no target is set. Needs the Tokio runtime (the wait before a finish or a question is told).
pub fn follow(supervisor: &crate::Supervisor, settings: Settings, token: Option<Secret>) -> Option<Following> {
    settings.configured().then(|| start(supervisor, settings, token, RETRY_AFTER.to_vec()))
}

/// [`follow`] whether or not a target is set yet (the app, whose settings can set one later), with
/// its own retry waits.
pub fn start(
    supervisor: &crate::Supervisor,
    settings: Settings,
    token: Option<Secret>,
    retry_after: Vec<Duration>,
) -> Following {
    let live: Shared = Arc::new(RwLock::new(Live { settings, token }));
    let journal = supervisor.clone();
    let pusher = Pusher::start(Arc::clone(&live), retry_after, move |report: Report| {
        let id = |s: Option<String>| crate::event::SessionId::from(s.unwrap_or_default());
        match report {
            Report::Sent { target, session, kind } => {
                journal.emit(&id(session), crate::EventKind::PushSent { target: target.as_str().into(), kind });
            }
            Report::NotSent { target, session, kind, outage } => {
                let session = id(session);
                if let Some(f) = outage {
                    journal.emit(
                        &session,
                        crate::EventKind::PushFailed { target: target.as_str().into(), reason: f.reason },
                    );
                }
                journal.emit(&session, crate::EventKind::PushNotSent { target: target.as_str().into(), kind });
            }
        }
    });
    let pending = Arc::new(AtomicUsize::new(0));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<crate::Event>();
    let (counted, watched) = (Arc::clone(&pending), Arc::clone(&live));
    supervisor.add_sink(Box::new(move |event| {
        if notice::may_notify(&event.kind) && read(&watched).settings.configured() {
            counted.fetch_add(1, Ordering::SeqCst);
            if tx.send(event.clone()).is_err() {
                counted.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }));
    let supervisor = supervisor.clone();
    let (out, done, settings) = (pusher.clone(), Arc::clone(&pending), Arc::clone(&live));
    tokio::spawn(async move {
        let mut told = notice::Told::default();
        while let Some(event) = rx.recv().await {
            let settings = read(&settings).settings.clone();
            let Some((notice, message)) = news(&supervisor, &settings, &mut told, &event) else {
                done.fetch_sub(1, Ordering::SeqCst);
                continue;
            };
            let Some(wait) = notice::settle_for(notice.kind) else {
                out.send(message);
                done.fetch_sub(1, Ordering::SeqCst);
                continue;
            };
            let (supervisor, out, done) = (supervisor.clone(), out.clone(), Arc::clone(&done));
            tokio::spawn(async move {
                tokio::time::sleep(wait).await;
                let id = event.session.to_string();
                let due = supervisor.with_store(|s| notice::still_due(s, notice.kind, &id, &event.kind));
                if due.unwrap_or(false) {
                    out.send(message);
                }
                done.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    Following { pusher, live, pending }
}

/// The notice `event` makes for the phone, if any.
fn news(
    supervisor: &crate::Supervisor,
    settings: &Settings,
    told: &mut notice::Told,
    event: &crate::Event,
) -> Option<(Notice, Message)> {
    let id = event.session.to_string();
    let row = supervisor.with_store(|s| s.session(&id)).ok().flatten()?;
    let notice = notice::for_event(&id, &crate::overview::label(&row), &event.kind, &chrono::Local)?;
    if !settings.kinds.allows(notice.kind) || !told.first(&notice, event.ts, &chrono::Local) {
        return None;
    }
    let message = message(&notice, settings);
    Some((notice, message))
}

/// The settings in `dir`'s `config.toml` and the token beside it, for a process that pushes: the
/// problem in one line when either is wrong (the caller says it and goes on without the phone).
pub fn load(dir: Option<&Path>) -> Result<(Settings, Option<Secret>), String> {
    let config = crate::config::Config::load(dir).map_err(|e| e.to_string())?;
    if !config.push.configured() {
        return Ok((config.push, None));
    }
    let token = token(dir)?;
    Ok((config.push, token))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice(kind: Kind, body: &str) -> Notice {
        Notice {
            kind,
            summary: "api · claude is waiting for you".into(),
            body: body.into(),
            session: Some("s1".into()),
            once: None,
        }
    }

    #[test]
    fn a_question_is_high_priority_with_its_text_and_link() {
        let settings = Settings {
            ntfy: Some("https://ntfy.sh/t".into()),
            click: Some("https://example.org/s/{session}".into()),
            ..Settings::default()
        };
        let m = message(&notice(Kind::Question, "Which database?"), &settings);
        assert_eq!((m.title.as_str(), m.body.as_str()), ("api · claude is waiting for you", "Which database?"));
        assert_eq!(m.priority, Priority::High);
        assert_eq!(m.tags, ["question", "nightshift"]);
        assert_eq!(m.click.as_deref(), Some("https://example.org/s/s1"));
    }

    #[test]
    fn short_mode_sends_only_the_kind_and_the_session() {
        let settings = Settings { short: true, ..Settings::default() };
        let m = message(&notice(Kind::Question, "Which database?"), &settings);
        assert_eq!((m.title.as_str(), m.body.as_str()), ("Nightshift: question", "session s1"));
        assert!(!serde_json::to_string(&m).unwrap().contains("database"));
    }

    #[test]
    fn a_guard_refusal_leaves_the_command_on_the_desktop() {
        let mut n = notice(Kind::Guard, "The agent was told no and carries on. The command: curl -H 'token: x'");
        n.summary = "api: the guard refused a force push".into();
        let m = message(&n, &Settings::default());
        assert!(!m.body.contains("curl") && m.title.contains("force push"), "{m:?}");
    }

    #[test]
    fn bad_urls_are_named_with_the_fix() {
        let bad = |ntfy: &str| Settings { ntfy: Some(ntfy.into()), ..Settings::default() }.problem();
        assert_eq!(bad("https://ntfy.sh/my-night"), None);
        assert_eq!(bad("http://127.0.0.1:8080/t"), None);
        assert!(bad("ntfy.sh/t").unwrap().starts_with("push.ntfy: `ntfy.sh/t` is not an http:// or https:// URL"));
        assert!(bad("https://ntfy.sh/").unwrap().contains("no topic"), "{:?}", bad("https://ntfy.sh/"));
        assert!(bad("https://ntfy.sh").unwrap().contains("such as https://ntfy.sh/my-night"));
        let hook = Settings { webhook: Some("ftp://x".into()), ..Settings::default() }.problem();
        assert!(hook.unwrap().starts_with("push.webhook:"));
    }

    /// A local HTTP server answering every request with the status in `status`, then closing.
    fn server(status: Arc<std::sync::atomic::AtomicU16>) -> String {
        use std::io::{BufRead as _, BufReader, Read as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let code = status.load(Ordering::SeqCst);
                let _ = write!(stream, "HTTP/1.1 {code} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            }
        });
        format!("http://{addr}/night")
    }

    #[test]
    fn each_message_is_reported_sent_or_not_and_an_outage_once() {
        let status = Arc::new(std::sync::atomic::AtomicU16::new(200));
        let settings = Settings { ntfy: Some(server(Arc::clone(&status))), ..Settings::default() };
        let live: Shared = Arc::new(RwLock::new(Live { settings: settings.clone(), token: None }));
        let (tx, rx) = std_mpsc::channel();
        let tx = std::sync::Mutex::new(tx);
        let pusher = Pusher::start(live, vec![Duration::from_millis(10)], move |r| {
            tx.lock().unwrap().send(r).unwrap();
        });
        let push = |kind: Kind| {
            pusher.send(message(&notice(kind, "x"), &settings));
            assert!(pusher.flush(Duration::from_secs(20)));
            rx.try_iter().collect::<Vec<Report>>()
        };
        let session = Some("s1".to_string());
        assert_eq!(
            push(Kind::Question),
            [Report::Sent { target: Target::Ntfy, session: session.clone(), kind: Kind::Question }]
        );
        status.store(503, Ordering::SeqCst);
        let first = push(Kind::Finished);
        let outage =
            Failure { target: Target::Ntfy, session: session.clone(), reason: "the server answered 503".into() };
        assert_eq!(
            first,
            [Report::NotSent {
                target: Target::Ntfy,
                session: session.clone(),
                kind: Kind::Finished,
                outage: Some(outage)
            }]
        );
        let again = push(Kind::Limit);
        assert_eq!(
            again,
            [Report::NotSent { target: Target::Ntfy, session: session.clone(), kind: Kind::Limit, outage: None }]
        );
        status.store(200, Ordering::SeqCst);
        assert_eq!(push(Kind::Resume), [Report::Sent { target: Target::Ntfy, session, kind: Kind::Resume }]);
    }

    #[test]
    fn headers_carry_utf8_as_encoded_words() {
        assert_eq!(header_value("plain"), "plain");
        assert_eq!(header_value("a\nb"), "a b");
        assert_eq!(header_value("api · claude"), "=?UTF-8?B?YXBpIMK3IGNsYXVkZQ==?=");
    }

    #[test]
    fn the_token_file_must_be_the_owners_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(token(Some(dir.path())), Ok(None));
        let path = dir.path().join(TOKEN_FILE);
        std::fs::write(&path, "tk_secret\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = token(Some(dir.path())).unwrap_err();
        assert!(err.contains("mode 644") && err.contains("chmod 600"), "{err}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let secret = token(Some(dir.path())).unwrap().unwrap();
        assert_eq!(secret, Secret::new("tk_secret"));
        assert!(!format!("{secret:?}").contains("tk_secret"));
    }
}
