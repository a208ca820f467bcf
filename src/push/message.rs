//! What a push says: the message for a notice, its priority and tags, and the phone's buttons,
//! each carrying a signed token for its one session, dialog and choice.

use serde::Serialize;

use super::{Answers, Settings};
use crate::notice::{Approval, Kind, Notice, PUBLIC_DETAILS};

/// ntfy's priorities (1 to 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    Default,
    High,
}

impl Priority {
    pub(super) fn ntfy(self) -> &'static str {
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
pub(super) fn actions_header(buttons: &[Button]) -> String {
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
        Kind::Fence => "fence refusal",
        Kind::Answer => "answer",
    }
}

/// What a permission prompt's push says Allow approves: all of it, to a server the user runs; to
/// the public server, what kind of thing it is and where to see it, unless the user said it may be
/// told (`push.public_details`), and then its first [`PUBLIC_DETAILS`] characters.
fn approves(notice: &Notice, approval: &Approval, settings: &Settings) -> String {
    if !settings.ntfy.as_deref().is_some_and(crate::notice::public_server) {
        return notice.body.clone();
    }
    if settings.public_details {
        let rows: Vec<&str> = approval.what.lines().map(str::trim).filter(|r| !r.is_empty()).collect();
        let flat = rows.join(" · ");
        return match flat.char_indices().nth(PUBLIC_DETAILS) {
            Some((cut, _)) => format!("{}…", &flat[..cut]),
            None => flat,
        };
    }
    let see = match &notice.session {
        Some(id) => format!("in the Nightshift window, or with `nightshift screen {id}`"),
        None => "in the Nightshift window".to_string(),
    };
    format!(
        "It asks to be allowed {}. What it would do is not sent to the public push server: see it {see}.",
        approval.kind_of()
    )
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
        Kind::Fence => (Priority::Default, "no_entry"),
        Kind::Answer => (Priority::Default, "white_check_mark"),
    };
    let (title, body) = if settings.short {
        let body = notice.session.as_ref().map_or_else(|| "Nightshift".to_string(), |s| format!("session {s}"));
        (format!("Nightshift: {}", kind_word(notice.kind)), body)
    } else {
        let body = match (notice.kind, &notice.approves) {
            // The command can carry anything the agent typed, secrets included: the desktop shows
            // it, the phone does not.
            (Kind::Guard, _) => "The agent was told no and carries on.".to_string(),
            (_, Some(approval)) => approves(notice, approval, settings),
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
            approves: None,
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

    /// A `waiting_input` event on a permission prompt for `command`, as the hooks name it.
    fn prompt_for(command: &str) -> crate::EventKind {
        let mut event = crate::EventKind::state(crate::event::SessionState::WaitingInput, "a dialog");
        if let crate::EventKind::State { dialog, .. } = &mut event {
            let subject = crate::agent::Subject::of("Bash", &serde_json::json!({ "command": command }));
            let text = format!("Do you want to proceed? — {subject}");
            let mut shown = crate::agent::Dialog::new(crate::agent::DialogKind::Permission, Some(text));
            shown.subject = Some(Box::new(subject));
            *dialog = Some(shown);
        }
        event
    }

    #[test]
    fn a_permission_prompts_command_stays_off_the_public_server() {
        let command = "curl -H 'Authorization: Bearer sk-live-0123' https://api.example.org/v1/charge";
        let notice = crate::notice::for_event("3f2a9c01", "api · claude", &prompt_for(command), &chrono::Utc).unwrap();
        let public = Settings { ntfy: Some("https://ntfy.sh/ns-night".into()), ..Settings::default() };
        let m = message(&notice, &public);
        assert!(!m.body.contains("curl") && !m.body.contains("sk-live"), "{m:?}");
        assert!(m.body.contains("a Bash call") && m.body.contains("nightshift screen 3f2a9c01"), "{m:?}");
        // A server the user runs gets what Allow approves.
        let own = Settings { ntfy: Some("https://ntfy.example.org/ns-night".into()), ..Settings::default() };
        assert!(message(&notice, &own).body.contains(command), "{:?}", message(&notice, &own));
    }

    #[test]
    fn the_public_server_gets_the_command_shortened_when_the_user_says_so() {
        let long = format!("rm -rf build && {}", "echo step; ".repeat(20));
        let notice = crate::notice::for_event("s1", "api", &prompt_for(&long), &chrono::Utc).unwrap();
        let public =
            Settings { ntfy: Some("https://ntfy.sh/ns-night".into()), public_details: true, ..Settings::default() };
        let body = message(&notice, &public).body;
        assert!(body.starts_with("Bash: rm -rf build && echo step;") && body.ends_with('…'), "{body}");
        assert_eq!(body.chars().count(), PUBLIC_DETAILS + 1, "{body}");
        let short = Settings { short: true, ..public };
        assert_eq!(message(&notice, &short).body, "session s1", "short mode says nothing of it still");
    }

    #[test]
    fn a_guard_refusal_leaves_the_command_on_the_desktop() {
        let mut n = notice(Kind::Guard, "The agent was told no and carries on. The command: curl -H 'token: x'");
        n.summary = "api: the guard refused a force push".into();
        let m = message(&n, &Settings::default());
        assert!(!m.body.contains("curl") && m.title.contains("force push"), "{m:?}");
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
}
