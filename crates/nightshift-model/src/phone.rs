//! The phone's one-time actions: what a push's button asks Nightshift to do (answer option 2 of
//! this question of this session, allow once, try the breaker again, …), signed with the install's
//! key. The button carries the signed token and nothing else; the key never leaves the machine. A
//! token is good for its one session, its one dialog, its one choice, until it expires; whoever
//! applies it also claims its nonce in the journal (so it works once) and checks the dialog is still
//! on screen. Also the listen topic's stream as ntfy writes it, and the bucket that cuts a flood of
//! it. A leaf: it uses nothing of the crate.
//!
//! The token is `ns1.<payload>.<mac>`: the payload is the fields joined by `|` —
//! `session|dialog|choice|expires|nonce` — and the MAC is HMAC-SHA256 over `ns1.<payload>`, both
//! base64url without padding. Every field is checked before anything is trusted, the MAC in constant
//! time before the fields mean anything.

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

const PREFIX: &str = "ns1";
/// Longer than any token this install makes: anything longer is refused unread.
pub const MAX_TOKEN: usize = 400;
/// How long a button works by default.
pub const DEFAULT_TTL: chrono::Duration = chrono::Duration::minutes(30);

/// The install's signing key (256 bits): compared and used, never shown (`Debug` prints
/// `Key(hidden)`).
#[derive(Clone, PartialEq, Eq)]
pub struct Key([u8; 32]);

impl Key {
    pub fn generate() -> Self {
        Self(rand::random())
    }

    /// The key as kept (in the keyring, or a 0600 file): 64 hex digits.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    pub fn from_hex(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("the phone's signing key is not 64 hex digits; run `nightshift push setup` again".into());
        }
        let mut key = [0u8; 32];
        for (i, byte) in key.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|e| e.to_string())?;
        }
        Ok(Self(key))
    }

    fn mac(&self) -> HmacSha256 {
        HmacSha256::new_from_slice(&self.0).expect("HMAC takes a key of any size")
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(hidden)")
    }
}

/// What a button does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// A question's option, by its number on the screen (from 1).
    Option(u8),
    /// A permission prompt: allow once.
    Allow,
    Deny,
    /// An open breaker: let one probe through now.
    Retry,
    /// Stop the session.
    Stop,
    /// A limit wait: stop at the next checkpoint instead of resuming.
    Checkpoint,
}

impl Choice {
    /// The token's word for it (`option-2`, `allow`, …), as the journal keeps it too.
    pub fn word(self) -> String {
        match self {
            Self::Option(n) => format!("option-{n}"),
            Self::Allow => "allow".into(),
            Self::Deny => "deny".into(),
            Self::Retry => "retry".into(),
            Self::Stop => "stop".into(),
            Self::Checkpoint => "checkpoint".into(),
        }
    }

    fn parse(word: &str) -> Option<Self> {
        Some(match word {
            "allow" => Self::Allow,
            "deny" => Self::Deny,
            "retry" => Self::Retry,
            "stop" => Self::Stop,
            "checkpoint" => Self::Checkpoint,
            _ => {
                let n: u8 = word.strip_prefix("option-")?.parse().ok()?;
                (1..=9).contains(&n).then_some(Self::Option(n))?
            }
        })
    }
}

/// One button's action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    pub session: String,
    /// The dialog it answers ([`fingerprint`]); empty for an action on the session itself.
    pub dialog: String,
    pub choice: Choice,
    /// Until when it works (Unix seconds).
    pub expires: i64,
    /// Claimed in the journal when applied: it works once.
    pub nonce: String,
}

/// `kind` and `text` in 16 hex digits: what a button on something other than a dialog is bound to
/// (a breaker, a limit), and a topic's name in the journal.
pub fn fingerprint(kind: &str, text: Option<&str>) -> String {
    print(&[kind, text.unwrap_or_default()])
}

fn print(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for part in parts {
        h.update(part.as_bytes());
        h.update([0]);
    }
    h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// A dialog as a button is bound to it.
#[derive(Debug, Clone, Copy)]
pub struct Shown<'a> {
    /// `question`, `permission`, …
    pub kind: &'a str,
    /// Its rows as drawn, whole: normalised here ([`normal_row`]), so a redraw binds the same.
    pub rows: &'a [String],
    /// Its question, which stands for it when no row of it was read (a dialog the client's hook
    /// alone told of).
    pub text: Option<&'a str>,
    /// What the client's hook said it asks about (the tool, its input and the input's digest).
    pub subject: Option<&'a str>,
    /// Which dialog of its session it is (from 1), and when it was first seen (Unix milliseconds):
    /// the same prompt shown twice is two dialogs, each with buttons of its own.
    pub showing: (u32, i64),
}

/// The fingerprint a button's token carries for the dialog `shown`, in 16 hex digits: a token for
/// one dialog does not answer another, whatever their question rows say.
pub fn dialog_fingerprint(shown: &Shown<'_>) -> String {
    let rows: Vec<String> = shown.rows.iter().filter_map(|r| normal_row(r)).collect();
    let text = if rows.is_empty() { shown.text.unwrap_or_default() } else { "" };
    let (n, at) = (shown.showing.0.to_string(), shown.showing.1.to_string());
    print(&["dialog", shown.kind, &rows.join("\n"), text, shown.subject.unwrap_or_default(), &n, &at])
}

/// A dialog's row as it binds a button, or `None` for a row that says nothing of which dialog it
/// is: its spaces trimmed and runs of them made one, the selection mark a client draws before the
/// chosen option (`❯`, `›`, `>`) or a blinking bullet (`●`) dropped, and a row that is only a
/// rule (`─`, `╌`, …) or blank left out, so the same dialog redrawn, at another width or with the
/// selection moved, binds the same.
pub fn normal_row(row: &str) -> Option<String> {
    let mut row = row.trim();
    while let Some(rest) = row.strip_prefix(['❯', '›', '>', '▶', '●', '⏺']) {
        row = rest.trim_start();
    }
    let rule = |c: char| matches!(c, '─' | '━' | '╌' | '╍' | '┄' | '┈' | '═' | '-' | '_' | '=');
    if row.is_empty() || row.chars().all(rule) {
        return None;
    }
    Some(row.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Why a button's token was not applied, in words for the journal and the answering push.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("it is not a Nightshift action ({0})")]
    Malformed(&'static str),
    #[error("its signature does not match this install's key (forged, or another install's)")]
    Forged,
    #[error("it expired at {0}")]
    Expired(String),
    #[error("it was used already")]
    Replayed,
    #[error("the dialog it answers is no longer on the screen (answered at the desk, or another came)")]
    DialogChanged,
    #[error("the agent's screen was being redrawn; nothing was typed")]
    Redrawing,
    #[error("someone typed into that dialog a moment ago and the screen may not show it yet; nothing was typed")]
    JustTyped,
    #[error("the journal could not record its use, so it was not applied")]
    Unrecorded,
    #[error("the session is no longer running")]
    SessionEnded,
    #[error("this agent's answers to that dialog are not known (its agent file has no [answer] keys)")]
    Unanswerable,
    /// A wait the action was for ended (the breaker closed, the limit reset).
    #[error("{0}")]
    Over(&'static str),
}

/// A field of a token: what the session ids, fingerprints and nonces are made of.
fn plain(field: &str) -> bool {
    !field.is_empty() && field.len() <= 64 && field.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

impl Action {
    /// An action on `session` (and its dialog `dialog`, or "") for `ttl` from `now`, with a fresh
    /// nonce.
    pub fn new(session: &str, dialog: &str, choice: Choice, now: DateTime<Utc>, ttl: chrono::Duration) -> Self {
        Self {
            session: session.to_string(),
            dialog: dialog.to_string(),
            choice,
            expires: (now + ttl).timestamp(),
            nonce: format!("{:032x}", rand::random::<u128>()),
        }
    }

    /// The token a button carries.
    pub fn sign(&self, key: &Key) -> String {
        let payload = [&self.session, &self.dialog, &self.choice.word(), &self.expires.to_string(), &self.nonce]
            .map(|f| f.as_str())
            .join("|");
        let signed = format!("{PREFIX}.{}", B64.encode(payload));
        let mut mac = key.mac();
        mac.update(signed.as_bytes());
        format!("{signed}.{}", B64.encode(mac.finalize().into_bytes()))
    }
}

/// The action `token` carries, if this install signed it and it has not expired at `now`. Whether
/// it was used already, and whether its dialog is still shown, are for whoever applies it.
pub fn verify(key: &Key, token: &str, now: DateTime<Utc>) -> Result<Action, Refusal> {
    let action = signed(key, token)?;
    action.fresh(now)?;
    Ok(action)
}

impl Action {
    /// Whether it still works at `now`.
    pub fn fresh(&self, now: DateTime<Utc>) -> Result<(), Refusal> {
        if now.timestamp() >= self.expires {
            let at =
                DateTime::from_timestamp(self.expires, 0).map_or_else(|| self.expires.to_string(), |t| t.to_rfc3339());
            return Err(Refusal::Expired(at));
        }
        Ok(())
    }
}

/// The action `token` carries, if this install signed it, expired or not.
pub fn signed(key: &Key, token: &str) -> Result<Action, Refusal> {
    let token = token.trim();
    if token.len() > MAX_TOKEN {
        return Err(Refusal::Malformed("too long"));
    }
    let (signed, tag) = token.rsplit_once('.').ok_or(Refusal::Malformed("no signature"))?;
    let (prefix, payload) = signed.split_once('.').ok_or(Refusal::Malformed("no payload"))?;
    if prefix != PREFIX {
        return Err(Refusal::Malformed("not a version this Nightshift reads"));
    }
    let tag = B64.decode(tag).map_err(|_| Refusal::Malformed("a signature that is not base64url"))?;
    let mut mac = key.mac();
    mac.update(signed.as_bytes());
    mac.verify_slice(&tag).map_err(|_| Refusal::Forged)?;
    let payload = B64.decode(payload).map_err(|_| Refusal::Malformed("a payload that is not base64url"))?;
    let payload = String::from_utf8(payload).map_err(|_| Refusal::Malformed("a payload that is not text"))?;
    let fields: Vec<&str> = payload.split('|').collect();
    let [session, dialog, choice, expires, nonce] = fields[..] else {
        return Err(Refusal::Malformed("not five fields"));
    };
    if !plain(session) || !(dialog.is_empty() || plain(dialog)) || !plain(nonce) {
        return Err(Refusal::Malformed("a field with characters no action has"));
    }
    let choice = Choice::parse(choice).ok_or(Refusal::Malformed("a choice no button makes"))?;
    let expires: i64 = expires.parse().map_err(|_| Refusal::Malformed("an expiry that is not a time"))?;
    Ok(Action { session: session.into(), dialog: dialog.into(), choice, expires, nonce: nonce.into() })
}

/// One message of the listen topic, as ntfy's JSON stream carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    pub id: String,
    /// When ntfy took it (Unix seconds).
    pub time: i64,
    pub message: String,
}

/// What one line of ntfy's JSON stream (`GET <topic>/json`) says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Message(Incoming),
    /// `open`, `keepalive`, `poll_request`: nothing to do.
    Other,
    /// Not a line ntfy writes.
    Malformed,
}

/// Reads one line of ntfy's JSON stream.
pub fn read_line(line: &str) -> Line {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else { return Line::Malformed };
    match value["event"].as_str() {
        Some("message") => {}
        Some(_) => return Line::Other,
        None => return Line::Malformed,
    }
    let (Some(id), Some(time)) = (value["id"].as_str(), value["time"].as_i64()) else { return Line::Malformed };
    if id.is_empty() || id.len() > 64 {
        return Line::Malformed;
    }
    let message = value["message"].as_str().unwrap_or_default().trim().to_string();
    Line::Message(Incoming { id: id.to_string(), time, message })
}

/// A token bucket: `burst` messages at once, then one per `every`; what comes faster is dropped.
#[derive(Debug, Clone)]
pub struct Bucket {
    burst: f64,
    every: std::time::Duration,
    tokens: f64,
    at: std::time::Instant,
}

impl Bucket {
    pub fn new(burst: u32, every: std::time::Duration, now: std::time::Instant) -> Self {
        Self { burst: f64::from(burst), every, tokens: f64::from(burst), at: now }
    }

    /// Whether one more message may be handled at `now`.
    pub fn take(&mut self, now: std::time::Instant) -> bool {
        let gained = now.saturating_duration_since(self.at).as_secs_f64() / self.every.as_secs_f64();
        self.tokens = (self.tokens + gained).min(self.burst);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Whether it is full again (a flood is over).
    pub fn full(&self) -> bool {
        self.tokens >= self.burst
    }
}

/// The wait before the `failures`th reconnect in a row: 2 s, doubling, at most 5 minutes.
pub fn backoff(failures: u32) -> std::time::Duration {
    std::time::Duration::from_secs(2u64.saturating_pow(failures.clamp(1, 16)).min(300))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_streams_lines_are_read_and_anything_else_is_malformed() {
        let message = r#"{"id":"hwQ2YpKdmg","time":1764900000,"event":"message","topic":"t","message":" ns1.a.b \n"}"#;
        assert_eq!(
            read_line(message),
            Line::Message(Incoming { id: "hwQ2YpKdmg".into(), time: 1_764_900_000, message: "ns1.a.b".into() })
        );
        assert_eq!(read_line(r#"{"id":"x","time":1,"event":"keepalive","topic":"t"}"#), Line::Other);
        assert_eq!(read_line(r#"{"id":"x","time":1,"event":"open","topic":"t"}"#), Line::Other);
        for bad in ["", "not json", "[1,2]", r#"{"event":"message"}"#, r#"{"id":"","time":1,"event":"message"}"#] {
            assert_eq!(read_line(bad), Line::Malformed, "{bad}");
        }
        let long_id = format!(r#"{{"id":"{}","time":1,"event":"message","message":"m"}}"#, "x".repeat(65));
        assert_eq!(read_line(&long_id), Line::Malformed);
    }

    #[test]
    fn a_flood_is_cut_to_the_burst_then_one_per_interval() {
        let t0 = std::time::Instant::now();
        let every = std::time::Duration::from_secs(3);
        let mut bucket = Bucket::new(20, every, t0);
        let taken = (0..100).filter(|_| bucket.take(t0)).count();
        assert_eq!(taken, 20, "the burst");
        assert!(!bucket.full());
        assert!(!bucket.take(t0 + std::time::Duration::from_secs(2)));
        assert!(bucket.take(t0 + std::time::Duration::from_secs(4)), "one more after the interval");
        let later = t0 + std::time::Duration::from_secs(3600);
        assert!(bucket.take(later) && !bucket.full());
        assert_eq!(backoff(0).as_secs(), 2);
        assert_eq!(backoff(3).as_secs(), 8);
        assert_eq!(backoff(40).as_secs(), 300);
    }

    fn now() -> DateTime<Utc> {
        "2026-12-05T02:00:00Z".parse().unwrap()
    }

    fn action() -> Action {
        let dialog = fingerprint("question", Some("Which database should the new service use?"));
        Action::new("3f2a9c01", &dialog, Choice::Option(2), now(), DEFAULT_TTL)
    }

    #[test]
    fn a_token_of_this_install_verifies_into_its_action_until_it_expires() {
        let key = Key::generate();
        let a = action();
        let token = a.sign(&key);
        assert!(token.starts_with("ns1.") && token.len() <= MAX_TOKEN, "{token}");
        assert_eq!(verify(&key, &token, now()), Ok(a.clone()));
        let late = now() + DEFAULT_TTL;
        assert!(matches!(verify(&key, &token, late), Err(Refusal::Expired(at)) if at.starts_with("2026-12-05T02:30")));
        for choice in [Choice::Allow, Choice::Deny, Choice::Retry, Choice::Stop, Choice::Checkpoint, Choice::Option(9)]
        {
            let other = Action { choice, ..a.clone() };
            assert_eq!(verify(&key, &other.sign(&key), now()).map(|x| x.choice), Ok(choice));
        }
        assert_ne!(action().nonce, a.nonce, "each button its own nonce");
    }

    #[test]
    fn a_forged_or_foreign_token_is_refused_as_forged() {
        let key = Key::generate();
        let token = action().sign(&key);
        assert_eq!(verify(&Key::generate(), &token, now()), Err(Refusal::Forged), "another install's key");
        // The payload changed (another option), the signature kept.
        let (_, payload, tag) = {
            let mut parts = token.split('.');
            (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap())
        };
        let text = String::from_utf8(B64.decode(payload).unwrap()).unwrap().replace("option-2", "option-1");
        let tampered = format!("ns1.{}.{tag}", B64.encode(text));
        assert_eq!(verify(&key, &tampered, now()), Err(Refusal::Forged));
        let truncated = &token[..token.len() - 2];
        assert!(matches!(verify(&key, truncated, now()), Err(Refusal::Forged | Refusal::Malformed(_))));
    }

    #[test]
    fn a_malformed_token_is_refused_unread() {
        let key = Key::generate();
        let signed = |payload: &str| {
            let signed = format!("ns1.{}", B64.encode(payload));
            let mut mac = key.mac();
            mac.update(signed.as_bytes());
            format!("{signed}.{}", B64.encode(mac.finalize().into_bytes()))
        };
        let cases = [
            ("", "no signature"),
            ("ns1.abc", "no payload"),
            ("ns2.abc.def", "not a version this Nightshift reads"),
            ("ns1.abc.not base64!", "a signature that is not base64url"),
        ];
        for (token, why) in cases {
            assert_eq!(verify(&key, token, now()), Err(Refusal::Malformed(why)), "{token:?}");
        }
        assert_eq!(verify(&key, &"x".repeat(MAX_TOKEN + 1), now()), Err(Refusal::Malformed("too long")));
        let exp = (now() + DEFAULT_TTL).timestamp();
        let signed_cases = [
            (format!("s1|d1|allow|{exp}"), "not five fields"),
            (format!("s 1|d1|allow|{exp}|n1"), "a field with characters no action has"),
            (format!("s1|d1|option-0|{exp}|n1"), "a choice no button makes"),
            (format!("s1|d1|upgrade|{exp}|n1"), "a choice no button makes"),
            ("s1|d1|allow|soon|n1".to_string(), "an expiry that is not a time"),
        ];
        for (payload, why) in signed_cases {
            assert_eq!(verify(&key, &signed(&payload), now()), Err(Refusal::Malformed(why)), "{payload}");
        }
    }

    #[test]
    fn the_refusals_the_applier_makes_say_why_in_words() {
        assert_eq!(Refusal::Replayed.to_string(), "it was used already");
        assert!(Refusal::DialogChanged.to_string().contains("answered at the desk"));
        assert_eq!(Refusal::SessionEnded.to_string(), "the session is no longer running");
    }

    fn permission(command: &str, selected: bool, pad: &str) -> Vec<String> {
        let mark = if selected { "❯" } else { " " };
        [
            "────────────────────────────────────────",
            " Bash command",
            " Run what the test asked for",
            "╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌",
            &format!(" {command}{pad}"),
            "╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌",
            " Do you want to proceed?",
            &format!(" {mark} 1. Yes{pad}"),
            "   2. No",
            "",
            " Esc to cancel · Tab to amend",
        ]
        .map(String::from)
        .to_vec()
    }

    fn shown(rows: &[String], showing: (u32, i64)) -> String {
        dialog_fingerprint(&Shown {
            kind: "permission",
            rows,
            text: Some("Do you want to proceed?"),
            subject: None,
            showing,
        })
    }

    #[test]
    fn two_prompts_with_the_same_question_row_and_other_commands_bind_apart() {
        let touch = permission("touch a", true, "");
        let rm = permission("rm -rf important-b", true, "");
        assert_ne!(shown(&touch, (1, 0)), shown(&rm, (1, 0)), "the command rows differ");
        assert_ne!(
            fingerprint("permission", Some("Do you want to proceed?")),
            shown(&touch, (1, 0)),
            "the question row alone binds nothing"
        );
        let hook = |subject| {
            dialog_fingerprint(&Shown {
                kind: "permission",
                rows: &touch,
                text: None,
                subject: Some(subject),
                showing: (1, 0),
            })
        };
        assert_ne!(
            hook("WebFetch: http://127.0.0.9/a 1f2e"),
            hook("WebFetch: http://127.0.0.9/b 9c3d"),
            "the hook's input"
        );
    }

    #[test]
    fn the_same_dialog_redrawn_binds_the_same_and_shown_again_does_not() {
        let drawn = permission("touch a", true, "");
        // Redrawn: trailing spaces, the selection moved off the first option, wider rules.
        let mut redrawn = permission("touch a", false, "   ");
        redrawn[0] = "─".repeat(120);
        assert_eq!(shown(&drawn, (3, 1_764_900_000_000)), shown(&redrawn, (3, 1_764_900_000_000)));
        assert_ne!(shown(&drawn, (3, 1_764_900_000_000)), shown(&drawn, (4, 1_764_900_009_000)), "shown again");
        // A dialog with no question row binds by its rows.
        let edit = |file: &str| ["Edit file".to_string(), file.to_string(), "1. Yes".into(), "2. No".into()];
        let bound = |rows: &[String]| {
            dialog_fingerprint(&Shown { kind: "permission", rows, text: None, subject: None, showing: (1, 0) })
        };
        assert_ne!(bound(&edit("src/a.rs")), bound(&edit("src/b.rs")));
        assert_eq!(normal_row("  ❯ 1.   Yes  "), Some("1. Yes".into()));
        assert_eq!(normal_row(" ╌╌╌╌ "), None);
        assert_eq!(normal_row("   "), None);
    }

    #[test]
    fn the_key_is_kept_as_hex_and_never_shown() {
        let key = Key::generate();
        assert_eq!(Key::from_hex(&key.to_hex()), Ok(key.clone()));
        assert_eq!(format!("{key:?}"), "Key(hidden)");
        assert!(Key::from_hex("abc").unwrap_err().contains("64 hex digits"));
        assert_ne!(fingerprint("question", Some("Which port?")), fingerprint("question", Some("Which database?")));
        assert_ne!(fingerprint("permission", None), fingerprint("question", None));
    }
}
