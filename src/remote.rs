//! The phone's answers, heard: every process that pushes also reads the listen topic its buttons
//! post to (ntfy's JSON stream), and applies each signed token it is the one to apply.
//!
//! No port of the machine is opened: the stream is an outgoing HTTP request to the ntfy server, read
//! on a thread of its own so a slow or dead server never holds up a session. It reconnects with
//! back-off and asks for what came since the last message it saw (kept in the journal), so a
//! reconnect or a restart misses nothing; lines longer than ntfy ever writes are skipped unread,
//! and a flood is cut to a burst, then one message every few seconds (said once per flood).
//!
//! Which process applies a message: the one that runs the token's session. A token no install of
//! ours signed, or one for a session no process runs any more, is answered by whichever process
//! claims the message first. Each message, and each token's nonce, is claimed in the journal with
//! one statement, so however many processes listen, a token works once. A nonce is claimed only
//! once the token verified, is fresh, and (for a dialog) the session found its dialog on the
//! screen now, in the step that types the answer: a press refused for any reason burns nothing,
//! and a press of a used token is told it was used. The same token posted again and again is
//! handled [`REPEATS`] times a minute; its other copies are dropped unread, without taking from
//! the bucket the user's own presses come through.
//!
//! Every action is journalled (`remote_action`: applied, or refused and why) and answered with a
//! short push; refusals of tokens nobody here signed are answered at most once in ten minutes by
//! all processes together, so a stranger posting to the topic cannot make the phone ring.

use std::io::BufRead;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::agent::Reply;
use crate::event::{Answerer, SessionId, SessionState};
use crate::phone::{self, Action, Choice, Incoming, Line, Refusal};
use crate::push::{Following, Message, Priority};
use crate::supervisor::Supervisor;

/// ntfy's messages are 4 KiB at most: a longer line is no token of ours, and is skipped unread.
const MAX_LINE: usize = 16 * 1024;
/// Messages handled at once, then one per [`REFILL`]; more are dropped. Tokens this install signed
/// have a bucket of their own, so a flood of anything else never drowns a press.
const BURST: u32 = 20;
const REFILL: Duration = Duration::from_secs(3);
const SIGNED_REFILL: Duration = Duration::from_secs(1);
/// How many times a minute one token is handled; more copies of it are dropped unread.
const REPEATS: u32 = 3;
/// ntfy sends a keepalive every 45 s: a stream silent for longer than this is taken for dead.
const SILENCE: Duration = Duration::from_secs(100);
/// Messages waiting to be handled; more are dropped.
const QUEUE: usize = 64;
/// A refusal of a token nobody here signed is answered at most once in this long, by all processes
/// together (the last answer's time is claimed in the journal).
const STRANGER_REPLY_EVERY: chrono::Duration = chrono::Duration::minutes(10);
/// How far back a first connection asks: a button is good for 30 minutes, a limit's for the wait.
const FIRST_LOOK_BACK: chrono::Duration = chrono::Duration::hours(12);

/// Reading the listen topic; stops when dropped (at the stream's next line or keepalive).
#[derive(Debug)]
pub struct Listening {
    stop: Arc<AtomicBool>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Reads the listen topic of `push`'s answers (whenever they are set up, now or later) and applies
/// what comes for `supervisor`'s sessions. Needs the Tokio runtime.
pub fn listen(supervisor: &Supervisor, push: &Following) -> Listening {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, mut rx) = tokio::sync::mpsc::channel::<(Incoming, String)>(QUEUE);
    let (sup, out, halt) = (supervisor.clone(), push.clone(), Arc::clone(&stop));
    let reading = std::thread::Builder::new().name("phone".into()).spawn(move || read_topic(&sup, &out, &tx, &halt));
    if let Err(e) = reading {
        tracing::warn!("no thread to hear the phone's answers ({e}); they are not heard by this process");
    }
    let (sup, out) = (supervisor.clone(), push.clone());
    tokio::spawn(async move {
        let mut pruned: Option<Instant> = None;
        while let Some((message, topic)) = rx.recv().await {
            if pruned.is_none_or(|t| t.elapsed() > Duration::from_secs(3600)) {
                let before = sup.clock().now() - FIRST_LOOK_BACK - chrono::Duration::hours(1);
                let _ = sup.write_store(|s| s.prune_phone_claims(before));
                pruned = Some(Instant::now());
            }
            handle(&sup, &out, &message).await;
            let _ = sup.write_store(|s| s.set_phone_cursor(&topic, &message.id, message.time));
        }
    });
    Listening { stop }
}

/// The listen topic, read until `stop`: reconnecting with back-off, journalling an outage once.
fn read_topic(
    supervisor: &Supervisor,
    push: &Following,
    tx: &tokio::sync::mpsc::Sender<(Incoming, String)>,
    stop: &AtomicBool,
) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(15)))
        .timeout_per_read(Some(SILENCE))
        .http_status_as_error(true)
        .user_agent(concat!("nightshift/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let mut strangers = phone::Bucket::new(BURST, REFILL, Instant::now());
    let mut signed = phone::Bucket::new(BURST, SIGNED_REFILL, Instant::now());
    let mut repeats = Repeats::default();
    let mut flooded = false;
    let (mut failures, mut down) = (0u32, false);
    let journal = |working: bool, reason: String| {
        supervisor.emit(&SessionId::from(String::new()), crate::EventKind::PhoneListen { working, reason });
    };
    while !stop.load(Ordering::SeqCst) {
        let Some(answers) = push.answers() else {
            pause(Duration::from_secs(2), stop);
            continue;
        };
        let topic = phone::fingerprint("topic", Some(&answers.listen));
        let since = since(supervisor, &topic);
        let url = format!("{}/json?since={since}", answers.listen.trim_end_matches('/'));
        let mut request = agent.get(&url);
        if let Some(token) = push.token() {
            request = request.header("Authorization", token.bearer());
        }
        let reason = match request.call() {
            Ok(response) => {
                if down {
                    journal(true, "the listen topic answers again".into());
                    down = false;
                }
                failures = 0;
                tracing::info!("listening for the phone's answers");
                let mut reader = std::io::BufReader::new(response.into_body().into_reader());
                let ended = read_lines(&mut reader, stop, |line| {
                    if push.answers().as_ref() != Some(&answers) {
                        return false;
                    }
                    match phone::read_line(line) {
                        Line::Message(message) => {
                            // The signature costs microseconds; what follows costs journal writes.
                            let ours = phone::signed(&answers.key, &message.message).ok();
                            if ours.as_ref().is_some_and(|a| !repeats.take(&a.nonce, Instant::now())) {
                                tracing::debug!("the same button's token again: dropped");
                                return true;
                            }
                            let bucket = if ours.is_some() { &mut signed } else { &mut strangers };
                            if !bucket.take(Instant::now()) {
                                if !flooded {
                                    tracing::warn!("a flood on the phone's answers' topic: messages are dropped");
                                    flooded = true;
                                }
                                return true;
                            }
                            if flooded && strangers.full() && signed.full() {
                                flooded = false;
                            }
                            if tx.try_send((message, topic.clone())).is_err() {
                                tracing::warn!("a message on the phone's answers' topic was dropped: too many wait");
                            }
                        }
                        Line::Other => {}
                        Line::Malformed => tracing::debug!("a line of the answers' stream that ntfy does not write"),
                    }
                    true
                });
                match ended {
                    Ok(()) => None,
                    Err(e) => Some(format!("the stream broke: {e}")),
                }
            }
            // The server's answer, never the URL (the topic is the secret of the two).
            Err(ureq::Error::StatusCode(code)) => Some(format!("the server answered {code}")),
            Err(e) => Some(e.to_string()),
        };
        let Some(reason) = reason else {
            pause(Duration::from_secs(1), stop);
            continue;
        };
        failures += 1;
        tracing::debug!("the phone's answers' stream: {reason}");
        // One broken stream is a blip (a server restart, a wifi change); two in a row an outage.
        if failures >= 2 && !down {
            tracing::warn!("the phone's answers cannot be heard: {reason}");
            journal(false, reason);
            down = true;
        }
        pause(phone::backoff(failures), stop);
    }
}

/// How often each token was handled lately: one posted again and again (a flood of one button)
/// is handled [`REPEATS`] times a minute.
#[derive(Debug, Default)]
struct Repeats {
    seen: std::collections::HashMap<String, (Instant, u32)>,
}

impl Repeats {
    /// Whether a message carrying `nonce` may be handled at `now`.
    fn take(&mut self, nonce: &str, now: Instant) -> bool {
        const WINDOW: Duration = Duration::from_secs(60);
        if self.seen.len() > 4096 {
            self.seen.retain(|_, (since, _)| now.saturating_duration_since(*since) < WINDOW);
        }
        let (since, count) = self.seen.entry(nonce.to_string()).or_insert((now, 0));
        if now.saturating_duration_since(*since) >= WINDOW {
            (*since, *count) = (now, 0);
        }
        *count += 1;
        *count <= REPEATS
    }
}

/// `?since=` for the topic: the last message seen (a Unix time: messages of that second come again
/// and are known by their claims), else as far back as a button lives.
fn since(supervisor: &Supervisor, topic: &str) -> i64 {
    let now = supervisor.clock().now();
    let earliest = (now - FIRST_LOOK_BACK).timestamp();
    match supervisor.with_store(|s| s.phone_cursor(topic)) {
        Ok(Some((_, time))) => time.max(earliest),
        _ => earliest,
    }
}

/// Sleeps `wait`, waking early when asked to stop.
fn pause(wait: Duration, stop: &AtomicBool) {
    let until = Instant::now() + wait;
    while !stop.load(Ordering::SeqCst) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100).min(until.saturating_duration_since(Instant::now())));
    }
}

/// Hands each line of `reader` to `line` until the stream ends, `line` says to stop (false), or
/// `stop`; a line longer than [`MAX_LINE`] is skipped without being kept.
fn read_lines(reader: &mut impl BufRead, stop: &AtomicBool, mut line: impl FnMut(&str) -> bool) -> std::io::Result<()> {
    let mut kept: Vec<u8> = Vec::new();
    let mut skipping = false;
    while !stop.load(Ordering::SeqCst) {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], i + 1),
            None => (buf, buf.len()),
        };
        let complete = done <= buf.len() && buf.get(done - 1) == Some(&b'\n');
        if !skipping {
            if kept.len() + chunk.len() > MAX_LINE {
                skipping = true;
                kept.clear();
                tracing::debug!("a line of the answers' stream longer than ntfy writes: skipped");
            } else {
                kept.extend_from_slice(chunk);
            }
        }
        reader.consume(done);
        if complete {
            if !skipping && !line(String::from_utf8_lossy(&kept).trim()) {
                return Ok(());
            }
            kept.clear();
            skipping = false;
        }
    }
    Ok(())
}

/// What a button asked, in words, with a question's option named when its push named it.
fn words(choice: Choice, label: Option<&str>) -> String {
    match (choice, label) {
        (Choice::Option(_), Some(label)) => format!("answer '{label}'"),
        (Choice::Option(n), None) => format!("answer option {n}"),
        (Choice::Allow, _) => "allow once".into(),
        (Choice::Deny, _) => "deny".into(),
        (Choice::Retry, _) => "try again now".into(),
        (Choice::Stop, _) => "stop the session".into(),
        (Choice::Checkpoint, _) => "stop at the next checkpoint".into(),
    }
}

/// The label of option `n` of the question fingerprinted `dialog` of session `id`, as the journal
/// has it.
fn option_label(supervisor: &Supervisor, id: &str, dialog: &str, n: u8) -> Option<String> {
    let events = supervisor.with_store(|s| s.recent_events(id, 200)).ok()?;
    events.iter().rev().filter(|e| e.event == "state").find_map(|e| {
        let event: crate::Event = serde_json::from_str(&e.body).ok()?;
        match event.kind {
            crate::EventKind::State { state: SessionState::WaitingInput, dialog: Some(d), .. }
                if d.print() == dialog =>
            {
                d.options.into_iter().find(|(m, _)| *m == n).map(|(_, label)| label)
            }
            _ => None,
        }
    })
}

/// Who applies a message.
enum Who {
    /// This process runs the token's session.
    Me,
    /// Another process runs it: that one applies it.
    Another,
    /// No process runs a session it may be for: the first to claim it refuses it.
    Anyone,
}

async fn handle(supervisor: &Supervisor, push: &Following, message: &Incoming) {
    let Some(answers) = push.answers() else { return };
    let now = supervisor.clock().now();
    // Signed by this install: its session is known, whether or not it expired (the applier says).
    let verdict = phone::signed(&answers.key, &message.message);
    let who = match &verdict {
        Ok(action) if supervisor.session(&action.session).is_some() => Who::Me,
        Ok(action) => {
            let elsewhere = supervisor.with_store(|s| s.session(&action.session)).ok().flatten();
            if elsewhere.is_some_and(|row| row.ended.is_none() && row.owner_alive()) {
                Who::Another
            } else {
                Who::Anyone
            }
        }
        Err(_) => Who::Anyone,
    };
    if matches!(who, Who::Another) {
        return;
    }
    let pid = std::process::id();
    let claimed = supervisor.write_store(|s| s.claim_phone(&format!("message:{}", message.id), pid, now));
    if !claimed.unwrap_or(false) {
        // Handled already: by another process, or by this one before a reconnect.
        return;
    }
    let action = match verdict {
        Ok(action) => action,
        Err(refusal) => {
            stranger(supervisor, push, &refusal, now);
            return;
        }
    };
    let short = push.settings().short;
    let label = match action.choice {
        Choice::Option(n) => option_label(supervisor, &action.session, &action.dialog, n),
        _ => None,
    };
    // A look, not a claim: the claim comes once every check has passed, in `apply`.
    let used = supervisor.with_store(|s| s.phone_claimed(&format!("nonce:{}", action.nonce))).unwrap_or(false);
    let result = if used {
        Err(Refusal::Replayed)
    } else if let Err(expired) = action.fresh(now) {
        Err(expired)
    } else if matches!(who, Who::Anyone) {
        Err(Refusal::SessionEnded)
    } else {
        apply(supervisor, &action, now).await
    };
    let said = words(action.choice, label.as_deref());
    let kind = crate::EventKind::RemoteAction {
        action: said.clone(),
        choice: action.choice.word(),
        applied: result.is_ok(),
        refused: result.as_ref().err().map(ToString::to_string),
    };
    // A session this journal never had (a journal started afresh since the push) is no session.
    let known = supervisor.with_store(|s| s.session(&action.session)).ok().flatten().is_some();
    supervisor.emit(&SessionId::from(if known { action.session.clone() } else { String::new() }), kind);
    let shown = if short { words(action.choice, None) } else { said };
    push.say(reply(&action, &shown, result.as_ref().err()));
}

/// Whether a button on a wait still finds it: a breaker's Try again while it is open, a limit's
/// Stop at the next checkpoint while the session waits on the limit (a loop's, whenever it runs).
fn still_waiting(choice: Choice, state: SessionState, loop_: bool) -> Result<(), Refusal> {
    match choice {
        Choice::Retry if state != SessionState::BreakerOpen => Err(Refusal::Over("the breaker closed already")),
        Choice::Checkpoint if !loop_ && state != SessionState::LimitPaused => {
            Err(Refusal::Over("the usage limit's wait is over"))
        }
        _ => Ok(()),
    }
}

/// Carries out `action` on its session, run by this process, claiming its nonce once it can be:
/// a dialog's in the session's own step, once it found the dialog on its screen; a wait's once
/// the wait is still there.
async fn apply(supervisor: &Supervisor, action: &Action, now: chrono::DateTime<chrono::Utc>) -> Result<(), Refusal> {
    let handle = supervisor.session(&action.session).ok_or(Refusal::SessionEnded)?;
    let loop_ = handle.kind() == crate::store::SessionKind::Loop;
    still_waiting(action.choice, handle.status().state, loop_)?;
    let reply = match action.choice {
        Choice::Option(n) => Some(Reply::Pick(n)),
        Choice::Allow => Some(Reply::Allow),
        Choice::Deny => Some(Reply::Deny),
        _ => None,
    };
    if let Some(reply) = reply {
        return handle.answer(&action.dialog, reply, Answerer::Phone, Some(&action.nonce)).await;
    }
    match supervisor.write_store(|s| s.claim_phone(&format!("nonce:{}", action.nonce), std::process::id(), now)) {
        Ok(true) => {}
        Ok(false) => return Err(Refusal::Replayed),
        Err(e) => {
            tracing::warn!("the journal cannot claim a phone action: {e}");
            return Err(Refusal::Unrecorded);
        }
    }
    match action.choice {
        Choice::Option(_) | Choice::Allow | Choice::Deny => Err(Refusal::Unanswerable),
        Choice::Retry => handle.reset_breaker().await.map(drop).map_err(|_| Refusal::SessionEnded),
        Choice::Stop => handle.stop("the phone").await.map_err(|_| Refusal::SessionEnded),
        // A loop stops at its next iteration's end; a session waiting on a limit is not resumed
        // after the reset, and stays as it is for the user.
        Choice::Checkpoint if loop_ => handle.stop("the phone").await.map_err(|_| Refusal::SessionEnded),
        Choice::Checkpoint => {
            let change = crate::session::Change {
                respawn: Some(crate::session::Switch::Off),
                auto_resume: Some(crate::session::Switch::Off),
                held: None,
                source: "the phone".into(),
            };
            handle.configure(change).await.map(drop).map_err(|_| Refusal::SessionEnded)
        }
    }
}

/// The short push that answers a button: what was done, or why not.
fn reply(action: &Action, said: &str, refused: Option<&Refusal>) -> Message {
    let session = &action.session;
    let (title, body, tag) = match refused {
        None => {
            let body = match action.choice {
                Choice::Option(_) | Choice::Allow => {
                    let done = if action.choice == Choice::Allow { "Allowed once".to_string() } else { cap(said) };
                    format!("{done} for session {session}: it goes on.")
                }
                Choice::Deny => format!("Denied for session {session}: the agent was told no."),
                Choice::Retry => format!("Session {session} tries again now."),
                Choice::Stop => format!("Session {session} stops."),
                Choice::Checkpoint => {
                    format!("Session {session} will not be resumed after the reset; it stays as it is for you.")
                }
            };
            ("Nightshift: done", body, "white_check_mark")
        }
        Some(why) => ("Nightshift: not done", format!("Not done for session {session} ({said}): {why}."), "no_entry"),
    };
    Message {
        kind: crate::notice::Kind::Answer,
        title: title.into(),
        body,
        priority: Priority::Default,
        tags: vec![tag, "nightshift"],
        click: None,
        session: Some(session.clone()),
        buttons: Vec::new(),
    }
}

/// "answer 'SQLite'" → "Answered 'SQLite'".
fn cap(said: &str) -> String {
    match said.strip_prefix("answer ") {
        Some(rest) => format!("Answered {rest}"),
        None => said.to_string(),
    }
}

/// A message no token of this install could be read from: journalled under no session, and
/// answered at most once in [`STRANGER_REPLY_EVERY`].
fn stranger(supervisor: &Supervisor, push: &Following, refusal: &Refusal, now: chrono::DateTime<chrono::Utc>) {
    let action = match refusal {
        Refusal::Forged => "an action this install did not sign",
        _ => "a message that is no action",
    };
    let kind = crate::EventKind::RemoteAction {
        action: action.into(),
        choice: String::new(),
        applied: false,
        refused: Some(refusal.to_string()),
    };
    supervisor.emit(&SessionId::from(String::new()), kind);
    let claimed = supervisor
        .write_store(|s| s.claim_phone_every("stranger-reply", STRANGER_REPLY_EVERY, std::process::id(), now));
    if !claimed.unwrap_or(false) {
        return;
    }
    push.say(Message {
        kind: crate::notice::Kind::Answer,
        title: "Nightshift: not done".into(),
        body: format!("A button's action was refused: {refusal}."),
        priority: Priority::Default,
        tags: vec!["no_entry", "nightshift"],
        click: None,
        session: None,
        buttons: Vec::new(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8]) -> (Vec<String>, std::io::Result<()>) {
        let mut seen = Vec::new();
        let mut reader = std::io::BufReader::with_capacity(7, input);
        let result = read_lines(&mut reader, &AtomicBool::new(false), |l| {
            seen.push(l.to_string());
            true
        });
        (seen, result)
    }

    #[test]
    fn lines_are_read_across_reads_and_a_huge_one_is_skipped_unkept() {
        let huge = "x".repeat(MAX_LINE + 10);
        let input = format!("{{\"a\":1}}\n{huge}\nnext\n\npartial");
        let (seen, result) = lines(input.as_bytes());
        assert!(result.is_ok());
        assert_eq!(seen, ["{\"a\":1}", "next", ""], "the huge line and the unfinished one are not read");
    }

    #[test]
    fn one_token_posted_again_and_again_is_handled_three_times_a_minute() {
        let t0 = Instant::now();
        let mut repeats = Repeats::default();
        let handled = (0..1000).filter(|_| repeats.take("5f1e", t0)).count();
        assert_eq!(handled, REPEATS as usize);
        assert!(repeats.take("9c3d", t0), "another token is not held back by it");
        assert!(!repeats.take("5f1e", t0 + Duration::from_secs(59)));
        assert!(repeats.take("5f1e", t0 + Duration::from_secs(61)), "a minute later, again");
    }

    #[test]
    fn a_button_on_a_wait_that_is_over_is_refused() {
        use SessionState::{BreakerOpen, Idle, LimitPaused, Working};
        assert_eq!(still_waiting(Choice::Retry, BreakerOpen, false), Ok(()));
        assert_eq!(still_waiting(Choice::Retry, Working, false), Err(Refusal::Over("the breaker closed already")));
        assert_eq!(still_waiting(Choice::Checkpoint, LimitPaused, false), Ok(()));
        let over = still_waiting(Choice::Checkpoint, Idle, false).unwrap_err();
        assert_eq!(over.to_string(), "the usage limit's wait is over");
        assert_eq!(still_waiting(Choice::Checkpoint, Working, true), Ok(()), "a loop stops after its iteration");
        assert_eq!(still_waiting(Choice::Stop, Idle, false), Ok(()), "a stop needs no wait");
        assert!(Refusal::Unanswerable.to_string().contains("[answer]"));
    }

    #[test]
    fn a_reply_says_what_was_done_or_why_not() {
        let now = "2026-12-05T02:00:00Z".parse().unwrap();
        let action = Action::new("3f2a9c01", "d", Choice::Option(1), now, phone::DEFAULT_TTL);
        let done = reply(&action, "answer 'SQLite'", None);
        assert_eq!(done.body, "Answered 'SQLite' for session 3f2a9c01: it goes on.");
        let refused = reply(&action, "answer 'SQLite'", Some(&Refusal::DialogChanged));
        assert!(refused.body.starts_with("Not done for session 3f2a9c01 (answer 'SQLite'): the dialog"), "{refused:?}");
        let allow = Action { choice: Choice::Allow, ..action.clone() };
        assert_eq!(reply(&allow, "allow once", None).body, "Allowed once for session 3f2a9c01: it goes on.");
        assert!(reply(&action, "x", None).buttons.is_empty(), "a reply asks nothing");
    }
}
