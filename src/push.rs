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

/// The phone's signing key's file, in the configuration directory.
pub const PHONE_KEY_FILE: &str = "phone.key";
/// The phone's signing key's item in the desktop's keyring, looked for before the file.
pub const PHONE_KEY_ITEM: [(&str, &str); 2] = [("application", "nightshift"), ("service", "phone-key")];

/// The phone's answers, once set up: the topic its buttons post to, and the install's key that
/// signs each button (it never leaves the machine).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answers {
    pub listen: String,
    pub key: crate::phone::Key,
}

/// What a process pushes with: the settings, the server's access token, and the phone's answers
/// when set up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Setup {
    pub settings: Settings,
    pub token: Option<Secret>,
    pub answers: Option<Answers>,
}

/// The install's signing key for the phone's buttons: the keyring's item when it holds one, else
/// the file in `dir` (`None` with neither).
pub fn phone_key(dir: Option<&Path>) -> Result<Option<crate::phone::Key>, String> {
    let found = kept_secret(&PHONE_KEY_ITEM, dir, PHONE_KEY_FILE, "the phone's key")?;
    found.map(|(text, _)| crate::phone::Key::from_hex(&text)).transpose()
}

/// A secret the keyring's item `item` holds, else the 0600 file `file` in `dir`, and where it was
/// found; `what` names it in the log. A locked keyring item is said (once per call) and the file
/// is used.
fn kept_secret(
    item: &[(&str, &str)],
    dir: Option<&Path>,
    file: &str,
    what: &str,
) -> Result<Option<(String, Kept)>, String> {
    match <Os as Secrets>::lookup(item) {
        Ok(Found::Secret(text)) => return Ok(Some((text, Kept::Keyring))),
        Ok(Found::Locked) => {
            tracing::warn!("the keyring holds {what} but is locked; unlock it, or keep it in its file")
        }
        Ok(Found::Nothing) => {}
        Err(e) => tracing::warn!("{e}; {what} is looked for in its file"),
    }
    let Some(dir) = dir else { return Ok(None) };
    Ok(private_file(&dir.join(file))?.map(|text| (text, Kept::File)))
}

/// Keeps `key` in `dir`'s key file, readable by its owner alone, replacing any key before it.
pub fn save_phone_key(dir: &Path, key: &crate::phone::Key) -> Result<std::path::PathBuf, String> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(PHONE_KEY_FILE);
    let tmp = dir.join(".phone.key.tmp");
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let _ = std::fs::remove_file(&tmp);
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
        file.write_all(format!("{}\n", key.to_hex()).as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, &path)
    };
    write().map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// The phone's answers as `nightshift push setup` left them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Phone {
    /// The topic pushes go to: the one the phone subscribes to.
    pub publish: String,
    /// The topic the buttons post to (nobody subscribes to it but Nightshift).
    pub listen: String,
    /// Where the signing key is kept.
    pub key: Kept,
    /// Whether this call made them (false: they were set up already).
    pub made: bool,
}

/// Sets up the phone's answers in `dir`: a random topic pair on `server` (each 128 bits, so
/// neither can be guessed) and the install's signing key, unless they are set up already (`fresh`
/// makes new ones: the old buttons stop working). The key stays in the keyring when it holds one;
/// otherwise it is written to a 0600 file.
pub fn set_up_phone(dir: &Path, server: Option<&str>, fresh: bool) -> Result<Phone, String> {
    let mut config = crate::config::Config::load(Some(dir)).map_err(|e| e.to_string())?;
    // One look at the keyring (a D-Bus call): it decides where the key is kept.
    let key = if <Os as Secrets>::holds(&PHONE_KEY_ITEM) == Found::Nothing { Kept::File } else { Kept::Keyring };
    let kept = |made: bool, config: &crate::config::Config| -> Result<Phone, String> {
        let (Some(publish), Some(listen)) = (config.push.ntfy.clone(), config.push.listen.clone()) else {
            return Err("push.ntfy and push.listen are not both set; run `nightshift push setup --fresh`".into());
        };
        Ok(Phone { publish, listen, key, made })
    };
    if !fresh && config.push.listen.is_some() && phone_key(Some(dir))?.is_some() {
        let now = config.push.listen.as_deref().map(crate::notice::server).unwrap_or_default();
        if let Some(asked) = server.map(|s| s.trim_end_matches('/')).filter(|s| *s != now) {
            return Err(format!(
                "the phone's answers are set up on {now} already; add --fresh to move them to {asked} (the \
                 buttons pushed before stop working)"
            ));
        }
        return kept(false, &config);
    }
    let server = match server {
        Some(s) => s.trim_end_matches('/').to_string(),
        None => config.push.ntfy.as_deref().map_or("https://ntfy.sh", crate::notice::server).to_string(),
    };
    let topic = |server: &str| format!("{server}/ns-{:032x}", rand::random::<u128>());
    let (publish, listen) = (topic(&server), topic(&server));
    let mut settings = config.push.clone();
    settings.ntfy = Some(publish);
    settings.listen = Some(listen);
    if let Some(problem) = settings.problem() {
        return Err(format!("{problem} (the server given: `{server}`, such as https://ntfy.sh)"));
    }
    if fresh || key == Kept::File {
        if key == Kept::Keyring {
            return Err("the keyring holds the phone's key: remove it there first (`secret-tool clear application \
                        nightshift service phone-key`), then run `nightshift push setup --fresh` again"
                .into());
        }
        save_phone_key(dir, &crate::phone::Key::generate())?;
    }
    config.push = settings;
    config.save(Some(dir)).map_err(|e| e.to_string())?;
    kept(true, &config)
}

/// `text` as a QR code drawn with half blocks, two rows per line, for a terminal (dark on light,
/// with the quiet zone phones need).
pub fn qr_text(text: &str) -> Result<String, String> {
    let code = qrcode::QrCode::new(text.as_bytes()).map_err(|e| e.to_string())?;
    Ok(code
        .render::<qrcode::render::unicode::Dense1x2>()
        .dark_color(qrcode::render::unicode::Dense1x2::Light)
        .light_color(qrcode::render::unicode::Dense1x2::Dark)
        .quiet_zone(true)
        .build())
}

/// `text` as a QR code in SVG, for the window.
pub fn qr_svg(text: &str) -> Result<String, String> {
    let code = qrcode::QrCode::new(text.as_bytes()).map_err(|e| e.to_string())?;
    Ok(code.render::<qrcode::render::svg::Color<'_>>().min_dimensions(200, 200).quiet_zone(true).build())
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
    Ok(kept_secret(&KEYRING_ITEM, dir, TOKEN_FILE, "the ntfy token")?.map(|(text, kept)| (Secret(text), kept)))
}

/// A secret kept in a file only its owner may read: its text, trimmed (`None` without the file).
fn private_file(path: &Path) -> Result<Option<String>, String> {
    let meta = match std::fs::metadata(path) {
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
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(format!("{} is empty; put the secret in it, or delete it", path.display()));
    }
    Ok(Some(token.to_string()))
}

/// A token: its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }

    /// The `Authorization` header's value.
    pub(crate) fn bearer(&self) -> String {
        format!("Bearer {}", self.0)
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
    /// The phone's buttons (ntfy only: a webhook gets no signed token).
    #[serde(skip)]
    pub buttons: Vec<Button>,
}

/// A button on a push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Button {
    /// Posts `body` (a signed token) to `url` (the listen topic): ntfy's `http` action.
    Post { label: String, url: String, body: String },
    /// Opens `url`: ntfy's `view` action.
    View { label: String, url: String },
}

/// How many buttons ntfy shows on one notification.
pub const MAX_BUTTONS: usize = 3;

/// ntfy's `Actions` header for `buttons`, in its short form (fields split by commas, actions by
/// semicolons, so a label loses those and quotes).
fn actions_header(buttons: &[Button]) -> String {
    let clean = |label: &str| -> String {
        let kept: String = label.chars().filter(|c| !matches!(c, ',' | ';' | '"' | '\'' | '=')).collect();
        kept.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    buttons
        .iter()
        .map(|b| match b {
            Button::Post { label, url, body } => {
                format!("http, {}, {url}, method=POST, body={body}, clear=true", clean(label))
            }
            Button::View { label, url } => format!("view, {}, {url}", clean(label)),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The buttons a push of `event` (of session `session`, run by `agent`) carries, with the phone's
/// answers set up; `now` starts each button's time. A question gets one per option the dialog offers
/// (numbered only, in short mode: its labels are the screen's), a permission prompt Allow once and
/// Deny, a breaker that opened Try again now and Stop the session, a usage limit Stop at the next
/// checkpoint; each signed for its one session, dialog and choice. "Open" follows the tap's link
/// when there is one.
pub fn buttons(
    event: &crate::EventKind,
    session: &str,
    agent: crate::agent::AgentKind,
    settings: &Settings,
    answers: &Answers,
    now: chrono::DateTime<chrono::Utc>,
) -> Vec<Button> {
    use crate::agent::{Adapter, DialogKind};
    use crate::phone::{fingerprint, Action, Choice, DEFAULT_TTL};
    use crate::EventKind as E;
    let post = |label: String, dialog: &str, choice: Choice, ttl: chrono::Duration| Button::Post {
        label,
        url: answers.listen.clone(),
        body: Action::new(session, dialog, choice, now, ttl).sign(&answers.key),
    };
    let open =
        settings.click.as_ref().map(|c| Button::View { label: "Open".into(), url: c.replace("{session}", session) });
    let mut out = Vec::new();
    match event {
        E::State { state: crate::event::SessionState::WaitingInput, dialog: Some(dialog), .. } => {
            let adapter = Adapter::builtin(agent);
            if !adapter.answers(dialog.kind) {
                return Vec::new();
            }
            let print = dialog.print();
            match dialog.kind {
                DialogKind::Question => {
                    let room = MAX_BUTTONS - usize::from(open.is_some());
                    for (n, label) in dialog.options.iter().take(room) {
                        let label = if settings.short { format!("Option {n}") } else { label.clone() };
                        out.push(post(label, &print, Choice::Option(*n), DEFAULT_TTL));
                    }
                    out.extend(open);
                }
                DialogKind::Permission => {
                    out.push(post("Allow once".into(), &print, Choice::Allow, DEFAULT_TTL));
                    out.push(post("Deny".into(), &print, Choice::Deny, DEFAULT_TTL));
                    out.extend(open);
                }
                _ => {}
            }
        }
        E::Breaker { state: crate::breaker::BreakerState::Open, .. } => {
            let print = fingerprint("breaker", None);
            out.push(post("Try again now".into(), &print, Choice::Retry, DEFAULT_TTL));
            out.push(post("Stop the session".into(), &print, Choice::Stop, DEFAULT_TTL));
        }
        E::LimitDetected { resets_at, source, .. } if *source != crate::limits::Source::Journal => {
            // Good for the whole wait (ntfy keeps a message 12 hours at most).
            let ttl = resets_at.map_or(DEFAULT_TTL, |at| (at - now).clamp(DEFAULT_TTL, chrono::Duration::hours(12)));
            out.push(post("Stop at the next checkpoint".into(), &fingerprint("limit", None), Choice::Checkpoint, ttl));
        }
        _ => {}
    }
    out
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
        Kind::Answer => "answer",
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
        Kind::Answer => (Priority::Default, "white_check_mark"),
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
        buttons: Vec::new(),
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
            if !m.buttons.is_empty() {
                request = request.header("Actions", header_value(&actions_header(&m.buttons)));
            }
            if let Some(token) = token {
                request = request.header("Authorization", token.bearer());
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
type Live = Setup;

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
                    let live = &*live;
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

    /// New settings, token and answers, from the next notice on (the window's settings).
    pub fn update(&self, setup: Setup) {
        *self.live.write().unwrap_or_else(std::sync::PoisonError::into_inner) = setup;
    }

    /// The phone's answers as set up now, if they are.
    pub fn answers(&self) -> Option<Answers> {
        read(&self.live).answers.clone()
    }

    /// The server's access token in force.
    pub(crate) fn token(&self) -> Option<Secret> {
        read(&self.live).token.clone()
    }

    /// The settings in force.
    pub fn settings(&self) -> Settings {
        read(&self.live).settings.clone()
    }

    /// Sends `m` to ntfy now (a reply to a phone's button), through the same delivery.
    pub fn say(&self, m: Message) {
        self.pusher.send(m);
    }
}

/// Pushes the notices of `supervisor`'s own sessions, with `settings`; `None` (and nothing started)
/// when no target is set. Needs the Tokio runtime (the wait before a finish or a question is told).
pub fn follow(supervisor: &crate::Supervisor, setup: Setup) -> Option<Following> {
    setup.settings.configured().then(|| start(supervisor, setup, RETRY_AFTER.to_vec()))
}

/// [`follow`] whether or not a target is set yet (the app, whose settings can set one later), with
/// its own retry waits.
pub fn start(supervisor: &crate::Supervisor, setup: Setup, retry_after: Vec<Duration>) -> Following {
    let live: Shared = Arc::new(RwLock::new(setup));
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
            let (settings, answers) = {
                let live = read(&settings);
                (live.settings.clone(), live.answers.clone())
            };
            let Some((notice, message)) = news(&supervisor, &settings, answers.as_ref(), &mut told, &event) else {
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
    answers: Option<&Answers>,
    told: &mut notice::Told,
    event: &crate::Event,
) -> Option<(Notice, Message)> {
    let id = event.session.to_string();
    let row = supervisor.with_store(|s| s.session(&id)).ok().flatten()?;
    let notice = notice::for_event(&id, &crate::overview::label(&row), &event.kind, &chrono::Local)?;
    if !settings.kinds.allows(notice.kind) || !told.first(&notice, event.ts, &chrono::Local) {
        return None;
    }
    let mut message = message(&notice, settings);
    if let (Some(answers), Ok(agent)) = (answers, row.agent.parse::<crate::agent::AgentKind>()) {
        message.buttons = buttons(&event.kind, &id, agent, settings, answers, supervisor.clock().now());
    }
    Some((notice, message))
}

/// The settings in `dir`'s `config.toml` and the token beside it, for a process that pushes: the
/// problem in one line when either is wrong (the caller says it and goes on without the phone).
pub fn load(dir: Option<&Path>) -> Result<Setup, String> {
    let config = crate::config::Config::load(dir).map_err(|e| e.to_string())?;
    setup(dir, config.push)
}

/// `settings` with the token and the phone's key kept in `dir`.
pub fn setup(dir: Option<&Path>, settings: Settings) -> Result<Setup, String> {
    if !settings.configured() {
        return Ok(Setup { settings, ..Setup::default() });
    }
    let token = token(dir)?;
    let answers = match &settings.listen {
        None => None,
        Some(listen) => {
            let key = phone_key(dir)?.ok_or_else(|| {
                "push.listen is set, but the phone's signing key is in neither the keyring nor phone.key; run \
                 `nightshift push setup` again"
                    .to_string()
            })?;
            Some(Answers { listen: listen.clone(), key })
        }
    };
    Ok(Setup { settings, token, answers })
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
        let live: Shared = Arc::new(RwLock::new(Live { settings: settings.clone(), ..Live::default() }));
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

    fn waiting(kind: crate::agent::DialogKind, options: &[&str]) -> crate::EventKind {
        let mut dialog = crate::agent::Dialog::new(kind, Some("Which database should the new service use?".into()));
        dialog.options = options.iter().enumerate().map(|(i, o)| (i as u8 + 1, o.to_string())).collect();
        crate::EventKind::State {
            state: crate::event::SessionState::WaitingInput,
            reason: "a dialog".into(),
            dialog: Some(dialog),
            pid: None,
            exit_code: None,
            signal: None,
            error: None,
            last_screen: None,
        }
    }

    fn tokens(buttons: &[Button]) -> Vec<(String, crate::phone::Action)> {
        let now = "2026-12-05T02:00:00Z".parse().unwrap();
        buttons
            .iter()
            .filter_map(|b| match b {
                Button::Post { label, body, .. } => {
                    Some((label.clone(), crate::phone::verify(&KEY, body, now).unwrap()))
                }
                Button::View { .. } => None,
            })
            .collect()
    }

    static KEY: std::sync::LazyLock<crate::phone::Key> = std::sync::LazyLock::new(crate::phone::Key::generate);

    #[test]
    fn a_question_gets_a_signed_button_per_option_and_short_mode_numbers_them() {
        use crate::agent::{AgentKind, DialogKind};
        use crate::phone::Choice;
        let now = "2026-12-05T02:00:00Z".parse().unwrap();
        let answers = Answers { listen: "https://ntfy.sh/ns-answers".into(), key: KEY.clone() };
        let mut settings = Settings { ntfy: Some("https://ntfy.sh/ns-night".into()), ..Settings::default() };
        let question = waiting(DialogKind::Question, &["SQLite (Recommended)", "PostgreSQL", "MySQL"]);
        let b = buttons(&question, "3f2a9c01", AgentKind::Claude, &settings, &answers, now);
        let got = tokens(&b);
        let labels: Vec<&str> = got.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(labels, ["SQLite (Recommended)", "PostgreSQL", "MySQL"]);
        let fp = match &question {
            crate::EventKind::State { dialog: Some(d), .. } => d.print(),
            _ => unreachable!(),
        };
        assert!(got.iter().all(|(_, a)| a.session == "3f2a9c01" && a.dialog == fp));
        assert_eq!(got[1].1.choice, Choice::Option(2));
        assert!(b.iter().all(|x| matches!(x, Button::Post { url, .. } if url == "https://ntfy.sh/ns-answers")));
        // With a link to open, one option less; short mode shows no option's words.
        settings.click = Some("https://example.org/s/{session}".into());
        settings.short = true;
        let b = buttons(&question, "3f2a9c01", AgentKind::Claude, &settings, &answers, now);
        assert_eq!(b.len(), MAX_BUTTONS);
        assert_eq!(b[2], Button::View { label: "Open".into(), url: "https://example.org/s/3f2a9c01".into() });
        let labels: Vec<String> = tokens(&b).into_iter().map(|(l, _)| l).collect();
        assert_eq!(labels, ["Option 1", "Option 2"]);
        // A client whose answers are not known gets no buttons to guess with.
        assert!(buttons(&question, "s", AgentKind::Generic, &settings, &answers, now).is_empty());
    }

    #[test]
    fn a_permission_a_breaker_and_a_limit_get_their_own_buttons() {
        use crate::agent::{AgentKind, DialogKind};
        use crate::phone::Choice;
        let now: chrono::DateTime<chrono::Utc> = "2026-12-05T02:00:00Z".parse().unwrap();
        let answers = Answers { listen: "https://ntfy.sh/ns-answers".into(), key: KEY.clone() };
        let settings = Settings::default();
        let each = |event: &crate::EventKind| -> Vec<(String, Choice, i64)> {
            tokens(&buttons(event, "s1", AgentKind::Claude, &settings, &answers, now))
                .into_iter()
                .map(|(l, a)| (l, a.choice, (a.expires - now.timestamp()) / 60))
                .collect()
        };
        let permission = waiting(DialogKind::Permission, &[]);
        assert_eq!(each(&permission), [("Allow once".into(), Choice::Allow, 30), ("Deny".into(), Choice::Deny, 30)]);
        let breaker = crate::EventKind::Breaker {
            breaker: crate::breaker::BreakerKind::CrashLoop,
            state: crate::breaker::BreakerState::Open,
            reason: "3 crashes".into(),
        };
        assert_eq!(
            each(&breaker),
            [("Try again now".into(), Choice::Retry, 30), ("Stop the session".into(), Choice::Stop, 30)]
        );
        let limit = |hours| crate::EventKind::LimitDetected {
            resets_at: Some(now + chrono::Duration::hours(hours)),
            source: crate::limits::Source::Text,
            kind: crate::limits::LimitKind::FiveHour,
            line: "limit".into(),
        };
        assert_eq!(
            each(&limit(3)),
            [("Stop at the next checkpoint".into(), Choice::Checkpoint, 180)],
            "the whole wait"
        );
        assert_eq!(each(&limit(48))[0].2, 12 * 60, "no longer than ntfy keeps it");
        let trust = waiting(DialogKind::Trust, &[]);
        assert!(each(&trust).is_empty(), "a trust question is never answered from afar");
    }

    #[test]
    fn the_actions_header_is_ntfys_short_form_and_a_label_cannot_break_it() {
        let b = [
            Button::Post {
                label: "Yes, \"and\"; more=1".into(),
                url: "https://ntfy.sh/a".into(),
                body: "ns1.x.y".into(),
            },
            Button::View { label: "Open".into(), url: "https://example.org/s/1".into() },
        ];
        assert_eq!(
            actions_header(&b),
            "http, Yes and more1, https://ntfy.sh/a, method=POST, body=ns1.x.y, clear=true; view, Open, https://example.org/s/1"
        );
    }

    #[test]
    fn the_answers_topic_is_checked_against_the_push_topic() {
        let with = |listen: &str| {
            Settings { ntfy: Some("https://ntfy.sh/ns-a".into()), listen: Some(listen.into()), ..Settings::default() }
                .problem()
        };
        assert_eq!(with("https://ntfy.sh/ns-b"), None);
        assert!(with("https://ntfy.sh/ns-a").unwrap().contains("must not be the one pushes go to"));
        assert!(with("https://other.example/ns-b").unwrap().contains("not on the server of push.ntfy"));
        assert!(with("https://ntfy.sh/").unwrap().contains("no topic"));
        let alone = Settings { listen: Some("https://ntfy.sh/ns-b".into()), ..Settings::default() }.problem();
        assert!(alone.unwrap().contains("need `push.ntfy` too"));
    }

    #[test]
    fn the_phone_key_is_kept_for_its_owner_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let key = crate::phone::Key::generate();
        let path = save_phone_key(dir.path(), &key).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(private_file(&path).unwrap().map(|t| crate::phone::Key::from_hex(&t)), Some(Ok(key)));
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
