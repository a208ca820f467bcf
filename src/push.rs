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
//!
//! Its parts: `keep` (the token, the phone's key and topics, kept secret), `message` (what a push
//! says, and its buttons), `deliver` (the delivery thread); here, a process following its own
//! sessions' events.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use crate::notice::{self, Notice};

mod deliver;
mod keep;
mod message;
pub use deliver::{Failure, Pusher, Report, Target};
pub use keep::{
    find_token, phone_key, qr_svg, qr_text, save_phone_key, set_up_phone, token, token_kept, Kept, Phone, Secret,
    KEYRING_ITEM, PHONE_KEY_FILE, PHONE_KEY_ITEM, TOKEN_FILE,
};
pub use message::{buttons, message, Button, Message, Priority, MAX_BUTTONS};

/// The wait before each retry of a message that could not be delivered.
pub const RETRY_AFTER: [Duration; 3] = [Duration::from_secs(2), Duration::from_secs(10), Duration::from_secs(30)];
/// How long one delivery may take, connection included.
const TIMEOUT: Duration = Duration::from_secs(15);
/// Messages waiting for the delivery thread; more are dropped (and logged) rather than queued
/// without bound behind a dead server.
const QUEUE: usize = 64;

/// The `[push]` table of `config.toml` (kept with the other notice settings, so the configuration
/// does not depend on the delivery).
pub use crate::notice::PushSettings as Settings;

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

/// The settings and token in force, shared by the process's follower and its delivery thread, and
/// changed in place from the window.
type Live = Setup;

type Shared = Arc<RwLock<Live>>;

fn read(live: &Shared) -> std::sync::RwLockReadGuard<'_, Live> {
    live.read().unwrap_or_else(std::sync::PoisonError::into_inner)
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

    #[test]
    fn bad_urls_are_named_with_the_fix() {
        let bad = |ntfy: &str| Settings { ntfy: Some(ntfy.into()), ..Settings::default() }.problem();
        assert_eq!(bad("https://ntfy.sh/my-night"), None);
        assert_eq!(bad("http://127.0.0.1:8080/t"), None);
        // Plain http carries the access token and the buttons' tokens in clear: loopback only.
        for ok in ["http://127.0.0.5:80/t", "http://[::1]:8080/t", "http://localhost/t", "http://LOCALHOST:2586/t"] {
            assert_eq!(bad(ok), None, "{ok}");
        }
        for far in [
            "http://ntfy.example.org/t",
            "http://10.0.0.2/t",
            "http://127.0.0.1.nip.io/t",
            "http://127.0.0.1@evil.org/t",
        ] {
            let why = bad(far).unwrap_or_default();
            assert!(
                why.starts_with("push.ntfy: ") && why.contains("https://") && why.contains("loopback"),
                "{far}: {why}"
            );
            assert_eq!(why.lines().count(), 1);
        }
        let hook = Settings { webhook: Some("http://hooks.example.org/n".into()), ..Settings::default() }.problem();
        assert!(hook.is_some_and(|w| w.starts_with("push.webhook: ")));
        assert!(
            crate::notice::public_server("https://ntfy.sh/ns-a")
                && !crate::notice::public_server("https://ntfy.example.org/a")
        );
        assert!(bad("ntfy.sh/t").unwrap().starts_with("push.ntfy: `ntfy.sh/t` is not an http:// or https:// URL"));
        assert!(bad("https://ntfy.sh/").unwrap().contains("no topic"), "{:?}", bad("https://ntfy.sh/"));
        assert!(bad("https://ntfy.sh").unwrap().contains("such as https://ntfy.sh/my-night"));
        let hook = Settings { webhook: Some("ftp://x".into()), ..Settings::default() }.problem();
        assert!(hook.unwrap().starts_with("push.webhook:"));
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
}
