//! Which journal events deserve a desktop notification, and what it says.
//!
//! Pure: the app delivers the [`Notice`]s (notify-rust) and the user switches each [`Kind`] on or
//! off in its settings.

use std::collections::HashSet;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, TimeZone, Utc};
use serde::{Deserialize, Serialize};

use crate::breaker::BreakerState;
use crate::event::{EventKind, SessionState};

/// The kinds of notification, each with its own switch (named in the journal's push events, so
/// the type is the events').
pub use crate::event::NoticeKind as Kind;

/// The per-kind switches, all on unless the user says otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Switches {
    pub question: bool,
    pub limit: bool,
    pub resume: bool,
    pub breaker: bool,
    pub finished: bool,
    pub morning: bool,
    pub guard: bool,
    pub fence: bool,
}

impl Default for Switches {
    fn default() -> Self {
        Self {
            question: true,
            limit: true,
            resume: true,
            breaker: true,
            finished: true,
            morning: true,
            guard: true,
            fence: true,
        }
    }
}

impl Switches {
    pub fn allows(&self, kind: Kind) -> bool {
        match kind {
            Kind::Question => self.question,
            Kind::Limit => self.limit,
            Kind::Resume => self.resume,
            Kind::Breaker => self.breaker,
            Kind::Finished => self.finished,
            Kind::Morning => self.morning,
            Kind::Guard => self.guard,
            Kind::Fence => self.fence,
            Kind::Answer => true,
        }
    }
}

/// The `[push]` table of `config.toml`: where the phone's notifications go (`crate::push` sends them).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PushSettings {
    /// The ntfy topic's URL (`https://ntfy.sh/my-night`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ntfy: Option<String>,
    /// A URL that gets every notice as a JSON POST.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
    /// Only the kind and the session: no summary, no text.
    pub short: bool,
    /// What a permission prompt approves (its command, path or URL) goes to the public server too,
    /// cut to [`PUBLIC_DETAILS`] characters; otherwise only a server the user runs is told it.
    pub public_details: bool,
    /// The link a tap on the notification opens; `{session}` is the session's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub click: Option<String>,
    /// The ntfy topic the phone's buttons post their answers to, on the same server as `ntfy`
    /// (`nightshift push setup` makes both): without it pushes carry no buttons.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
    /// Which kinds are pushed (all unless switched off).
    pub kinds: Switches,
}

impl PushSettings {
    /// Whether anything is to be sent at all.
    pub fn configured(&self) -> bool {
        self.ntfy.is_some() || self.webhook.is_some()
    }

    /// What is wrong with the settings, as `key: problem; fix` (for the config file's error).
    pub fn problem(&self) -> Option<String> {
        if let Some(url) = &self.ntfy {
            match http_url(url) {
                Err(why) => return Some(format!("push.ntfy: {why}")),
                Ok(rest) if rest.split_once('/').is_none_or(|(_, topic)| topic.trim_matches('/').is_empty()) => {
                    return Some(format!(
                        "push.ntfy: `{url}` names a server but no topic; give the topic's URL, such as \
                         https://ntfy.sh/my-night"
                    ))
                }
                Ok(_) => {}
            }
        }
        if let Some(url) = &self.listen {
            let Some(ntfy) = &self.ntfy else {
                return Some(
                    "push.listen: the phone's answers need `push.ntfy` too; run `nightshift push setup`".to_string(),
                );
            };
            match http_url(url) {
                Err(why) => return Some(format!("push.listen: {why}")),
                Ok(rest) if rest.split_once('/').is_none_or(|(_, topic)| topic.trim_matches('/').is_empty()) => {
                    return Some(format!(
                        "push.listen: `{url}` names a server but no topic; run `nightshift push setup`"
                    ))
                }
                Ok(_) if url.trim_end_matches('/') == ntfy.trim_end_matches('/') => {
                    return Some(
                        "push.listen: the answers' topic must not be the one pushes go to; run `nightshift push setup`"
                            .to_string(),
                    )
                }
                Ok(_) if server(url) != server(ntfy) => {
                    return Some(format!(
                        "push.listen: `{url}` is not on the server of push.ntfy; the phone posts its answers to the \
                         server it reads; run `nightshift push setup`"
                    ))
                }
                Ok(_) => {}
            }
        }
        if let Some(url) = &self.webhook {
            if let Err(why) = http_url(url) {
                return Some(format!("push.webhook: {why}"));
            }
        }
        if let Some(url) = &self.click {
            if let Err(why) = link(url) {
                return Some(format!("push.click: {why}"));
            }
        }
        None
    }
}

/// How much of what a permission prompt approves the public server is told, when the user says
/// it may be (`push.public_details`).
pub const PUBLIC_DETAILS: usize = 80;

/// Whether `url` is on the public ntfy server (the one `nightshift push setup` picks by default),
/// where whoever learns a topic reads it; any other server is taken for one the user runs.
pub fn public_server(url: &str) -> bool {
    let host = host(url).unwrap_or_default().to_ascii_lowercase();
    let host = host.trim_end_matches('.');
    host == "ntfy.sh" || host.ends_with(".ntfy.sh")
}

/// The host of an http(s) URL (no port, no brackets around an IPv6 address, no user).
fn host(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if let Some(v6) = authority.strip_prefix('[') {
        return v6.split_once(']').map(|(h, _)| h);
    }
    Some(authority.rsplit_once(':').map_or(authority, |(h, _)| h))
}

/// Whether `host` is this machine: 127.0.0.0/8, ::1 or localhost.
fn loopback(host: &str) -> bool {
    let host = host.trim_end_matches('.');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
        || host.parse::<std::net::Ipv6Addr>().is_ok_and(|ip| ip.is_loopback())
}

/// The scheme and host of a topic's URL (`https://ntfy.sh`).
pub fn server(url: &str) -> &str {
    let after = url.find("://").map_or(0, |i| i + 3);
    url[after..].find('/').map_or(url, |i| &url[..after + i])
}

/// The part of `url` after its scheme, if it is an http(s) URL with a host, and plain http only to
/// this machine: a push server elsewhere would get the access token and the buttons' tokens (or,
/// a webhook, the notices) in clear.
fn http_url(url: &str) -> Result<&str, String> {
    let rest = link(url)?;
    if url.starts_with("http://") && !host(url).is_some_and(loopback) {
        return Err(format!(
            "`{url}` is plain http to another machine, so the access token and the buttons' tokens would travel \
             in clear; use https://, or http:// only on loopback (127.0.0.1, ::1, localhost)"
        ));
    }
    Ok(rest)
}

/// The part of `url` after its scheme, if it is an http(s) URL with a host (a link the phone
/// opens: it carries nothing secret).
fn link(url: &str) -> Result<&str, String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| format!("`{url}` is not an http:// or https:// URL"))?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(format!("`{url}` has no host"));
    }
    if url.chars().any(char::is_whitespace) {
        return Err(format!("`{url}` has a space in it"));
    }
    Ok(rest)
}

/// `text` for a desktop notification's body, which notification servers read as a small markup
/// (`<b>`, `<a href>`, `<img>`): `&`, `<` and `>` escaped, so an agent's words show as written.
pub fn markup(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// One notification to show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Notice {
    pub kind: Kind,
    pub summary: String,
    pub body: String,
    /// The session a click opens.
    pub session: Option<String>,
    /// Told once per night under this key (see [`Told`]); `None`: every time.
    #[serde(skip)]
    pub once: Option<String>,
    /// For a permission prompt: what Allow would approve, which `body` says in full; a push to a
    /// server the user does not run says only what kind of thing it is (see `crate::push`).
    #[serde(skip)]
    pub approves: Option<Approval>,
}

/// What a permission prompt asks to be allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// The tool, as the client's hook named it (`Bash`, `WebFetch`), when it did.
    pub tool: Option<String>,
    /// What it would run, read, write or fetch, as the client drew it (or the hook named it).
    pub what: String,
}

impl Approval {
    /// What kind of thing it is, in words: "a Bash call", "a tool call".
    pub fn kind_of(&self) -> String {
        self.tool.as_ref().map_or_else(|| "a tool call".to_string(), |t| format!("a {t} call"))
    }
}

/// The night `at` belongs to: nights turn at noon, local time, so an evening and the small hours
/// after it are one night.
pub fn night_of<Z: TimeZone>(at: DateTime<Utc>, local: &Z) -> NaiveDate {
    (at.with_timezone(local) - chrono::Duration::hours(12)).date_naive()
}

/// What was told already tonight, for notices told once per night.
#[derive(Debug, Default)]
pub struct Told {
    seen: HashSet<(NaiveDate, String)>,
}

impl Told {
    /// Whether `notice`, due at `at`, is to be shown: always, unless it is told once per night and
    /// was told already this night.
    pub fn first<Z: TimeZone>(&mut self, notice: &Notice, at: DateTime<Utc>, local: &Z) -> bool {
        let Some(key) = &notice.once else { return true };
        let night = night_of(at, local);
        // Earlier nights are never asked about again.
        self.seen.retain(|(n, _)| *n >= night);
        self.seen.insert((night, key.clone()))
    }
}

fn time<Z: TimeZone>(at: DateTime<Utc>, local: &Z) -> String
where
    Z::Offset: std::fmt::Display,
{
    at.with_timezone(local).format("%H:%M").to_string()
}

/// The notification an event of session `id` (called `label`) deserves, if any. `Finished` comes
/// for every exit: the caller checks that the session did not start again.
pub fn for_event<Z: TimeZone>(id: &str, label: &str, kind: &EventKind, local: &Z) -> Option<Notice>
where
    Z::Offset: std::fmt::Display,
{
    let notice = |kind: Kind, summary: String, body: String| Notice {
        kind,
        summary,
        body,
        session: Some(id.into()),
        once: None,
        approves: None,
    };
    match kind {
        EventKind::State { state: SessionState::WaitingInput, dialog, reason, .. } => {
            let about = dialog.as_ref().and_then(crate::agent::Dialog::about).filter(|a| !a.trim().is_empty());
            let body = about
                .clone()
                .or_else(|| dialog.as_ref().map(|d| format!("The agent shows a {} dialog.", d.kind)))
                .unwrap_or_else(|| reason.clone());
            // A permission prompt says what Allow would approve.
            let approves = dialog.as_ref().filter(|d| d.kind == crate::agent::DialogKind::Permission).map(|d| {
                Approval { tool: d.subject.as_ref().map(|s| s.tool.clone()), what: about.unwrap_or_default() }
            });
            Some(Notice { approves, ..notice(Kind::Question, format!("{label} is waiting for you"), body) })
        }
        // Said again by a restarted session: the user was told when it happened.
        EventKind::LimitDetected { source: crate::limits::Source::Journal, .. } => None,
        EventKind::LimitDetected { resets_at, line, .. } => {
            let body = match resets_at {
                Some(at) => format!("Resets at {}. {line}", time(*at, local)),
                None => format!("No reset time given. {line}"),
            };
            Some(notice(Kind::Limit, format!("{label} hit a usage limit"), body))
        }
        EventKind::LimitFailed { reason } => {
            Some(notice(Kind::Limit, format!("{label} could not resume after the limit"), reason.clone()))
        }
        EventKind::WindowGuard { reason } => {
            Some(notice(Kind::Limit, format!("{label} is holding off"), reason.clone()))
        }
        EventKind::ResumeSent { attempt } => Some(notice(
            Kind::Resume,
            format!("{label} resumed"),
            format!("The usage limit reset; Nightshift sent the resume prompt (attempt {attempt})."),
        )),
        // Once a night: a breaker that waits and probes may open again several times.
        EventKind::Breaker { breaker, state: BreakerState::Open, reason } => Some(Notice {
            once: Some(format!("breaker:{}:{id}", breaker.as_str())),
            ..notice(Kind::Breaker, format!("{label}: the {} breaker tripped", breaker.as_str()), reason.clone())
        }),
        EventKind::State { state: SessionState::Exited | SessionState::Failed, reason, .. } => {
            Some(notice(Kind::Finished, format!("{label} finished"), reason.clone()))
        }
        EventKind::AgentSwitch { action: crate::event::SwitchAction::Held, to, reason, .. } => Some(notice(
            Kind::Breaker,
            format!("{label}: {to} could not take the work over"),
            format!("{reason}. Nothing was lost: the work is in the same folder and branch."),
        )),
        // An account the session could not move to for want of a login: once a session and account.
        EventKind::AccountSwitch { action: crate::event::SwitchAction::Held, to: Some(account), reason, .. } => {
            Some(Notice {
                once: Some(format!("logged_out:{account}:{id}")),
                ..notice(
                    Kind::Breaker,
                    format!("{label}: account {account} could not take the work over"),
                    format!("{reason}. Nothing was lost: the work is in the same folder and branch."),
                )
            })
        }
        EventKind::HandoffChecked { received: false } => Some(notice(
            Kind::Breaker,
            format!("{label} moved without its handoff"),
            "It moved to another account, but the first prompt there did not carry the handoff. It works in the \
             same folder and branch; its commits and uncommitted work are there, and the handoff is kept (the \
             session's page in the window shows it)."
                .to_string(),
        )),
        EventKind::ContextHigh { pct, threshold } => Some(Notice {
            once: Some(format!("context_high:{id}")),
            ..notice(
                Kind::Breaker,
                format!("{label} starts each conversation nearly full"),
                format!(
                    "After a handoff its fresh context is already at {}% (the handoff threshold is {}%): \
                     its memory files or system prompt are huge. It goes on, and hands off again only once \
                     the context has grown.",
                    pct.round(),
                    threshold.round()
                ),
            )
        }),
        EventKind::Restored { reason, down_secs } => Some(notice(
            Kind::Resume,
            format!("{label} was brought back"),
            format!(
                "Nightshift had stopped for {} without ending it; it goes on ({reason}).",
                humantime::format_duration(Duration::from_secs(*down_secs))
            ),
        )),
        // Once a night however many sessions it took: one Nightshift died, the night goes on.
        EventKind::Adopted { by, .. } => Some(Notice {
            once: Some("adopted".into()),
            ..notice(
                Kind::Resume,
                "Nightshift on this machine restarted; the night goes on".into(),
                format!("{label} and any other session its Nightshift ran were taken over by {by}."),
            )
        }),
        // Once a night for each host: the agent may try it again and again.
        // The host alone: the command that tried it may carry anything the agent typed (the journal
        // keeps it).
        EventKind::NetRefused { host, .. } => Some(Notice {
            once: Some(format!("fence:{host}")),
            ..notice(
                Kind::Fence,
                format!("{label}: the fence refused {host}"),
                format!(
                    "The agent tried to reach {host}, which is not among tonight's hosts. Allow it with \
                     `--allow-host {host}` or `[sandbox] network` in config.toml (the session's options can)."
                ),
            )
        }),
        EventKind::GuardDenied { rule, what, command } => Some(Notice {
            once: Some(format!("guard:{rule}")),
            ..notice(
                Kind::Guard,
                format!("{label}: the guard refused {what}"),
                format!("The agent was told no and carries on. The command: {command}"),
            )
        }),
        EventKind::GuardUnreachable { command, why } => Some(Notice {
            once: Some("guard:unreachable".into()),
            ..notice(
                Kind::Guard,
                format!("{label}: the guard could not answer"),
                format!("So it refused the command ({why}); the agent may try again. The command: {command}"),
            )
        }),
        _ => None,
    }
}

/// Whether an event of this kind can make a notice at all (a cheap look before [`for_event`]).
pub fn may_notify(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::State { state: SessionState::WaitingInput | SessionState::Exited | SessionState::Failed, .. }
            | EventKind::LimitDetected { .. }
            | EventKind::LimitFailed { .. }
            | EventKind::WindowGuard { .. }
            | EventKind::ResumeSent { .. }
            | EventKind::Breaker { .. }
            | EventKind::GuardDenied { .. }
            | EventKind::GuardUnreachable { .. }
            | EventKind::NetRefused { .. }
            | EventKind::ContextHigh { .. }
            | EventKind::HandoffChecked { received: false }
            | EventKind::AgentSwitch { action: crate::event::SwitchAction::Held, .. }
            | EventKind::AccountSwitch { action: crate::event::SwitchAction::Held, to: Some(_), .. }
            | EventKind::Restored { .. }
            | EventKind::Adopted { .. }
    )
}

/// A session that exits and is not started again within this long has finished.
pub const FINISHED_AFTER: Duration = Duration::from_secs(3);
/// A dialog still open after this long needs the user (routine ones and the usage-limit menu are
/// answered by Nightshift within a frame or two).
pub const QUESTION_AFTER: Duration = Duration::from_secs(2);

/// How long a notice of `kind` waits before it is told, if it waits: a finish that respawn undoes,
/// or a dialog Nightshift answers itself, is not news. Then [`still_due`] says whether to tell it.
pub fn settle_for(kind: Kind) -> Option<Duration> {
    match kind {
        Kind::Finished => Some(FINISHED_AFTER),
        Kind::Question => Some(QUESTION_AFTER),
        _ => None,
    }
}

/// Said when the app quits while sessions wait for a usage limit's reset: their resumes are kept
/// for the next start. `due` is when each was due.
pub fn resumes_kept<Z: TimeZone>(due: &[DateTime<Utc>], local: &Z) -> Notice
where
    Z::Offset: std::fmt::Display,
{
    let first = due.iter().min().map(|t| time(*t, local)).unwrap_or_default();
    let body = match due.len() {
        1 => format!(
            "The session waiting for a usage limit resumes when Nightshift next starts (it was due at {first})."
        ),
        n => format!(
            "{n} sessions waiting for a usage limit resume when Nightshift next starts (the first was due at {first})."
        ),
    };
    Notice {
        kind: Kind::Limit,
        summary: "Nightshift quit: pending resumes are kept".into(),
        body,
        session: None,
        once: None,
        approves: None,
    }
}

/// The morning run summary's notification.
pub fn morning(headline: &str) -> Notice {
    Notice {
        kind: Kind::Morning,
        summary: "Good morning: the night's run".into(),
        body: headline.to_string(),
        session: None,
        once: None,
        approves: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Dialog;
    use crate::limits::LimitKind;

    #[test]
    fn a_notifications_body_shows_markup_as_written() {
        assert_eq!(
            markup("<b>x</b> & <a href=\"file:///etc\">y</a>"),
            "&lt;b&gt;x&lt;/b&gt; &amp; &lt;a href=\"file:///etc\"&gt;y&lt;/a&gt;"
        );
        assert_eq!(markup("Which port?"), "Which port?");
    }

    #[test]
    fn a_logged_out_account_is_pushed_once_and_an_ordinary_hold_is_not() {
        let held = |to: Option<&str>| EventKind::AccountSwitch {
            action: crate::event::SwitchAction::Held,
            from: Some("a".into()),
            to: to.map(Into::into),
            until: None,
            reason: "account b is logged out (no credentials in /b)".into(),
        };
        let n = for_event("s1", "api", &held(Some("b")), &Utc).expect("a logged-out account is pushed");
        assert!(may_notify(&held(Some("b"))));
        assert_eq!(n.once.as_deref(), Some("logged_out:b:s1"));
        assert!(n.body.contains("logged out") && n.body.contains("Nothing was lost"), "{}", n.body);
        assert!(for_event("s1", "api", &held(None), &Utc).is_none(), "a hold until the reset is the limit's");
        assert!(!may_notify(&held(None)));
    }

    #[test]
    fn a_question_carries_its_text() {
        let mut kind = EventKind::state(SessionState::WaitingInput, "a dialog");
        if let EventKind::State { dialog, .. } = &mut kind {
            *dialog = Some(Dialog::new(crate::agent::DialogKind::Question, Some("Which database?".into())));
        }
        let n = for_event("s1", "api · claude", &kind, &Utc).unwrap();
        assert_eq!(
            (n.kind, n.summary.as_str(), n.body.as_str()),
            (Kind::Question, "api · claude is waiting for you", "Which database?")
        );
        assert_eq!(n.session.as_deref(), Some("s1"));
    }

    #[test]
    fn a_limit_says_when_it_resets_in_local_time() {
        let at = "2026-11-30T14:33:00Z".parse().unwrap();
        let kind = EventKind::LimitDetected {
            resets_at: Some(at),
            source: crate::limits::Source::Text,
            kind: LimitKind::FiveHour,
            line: "You've hit your limit".into(),
        };
        let tz = chrono::FixedOffset::east_opt(3600).unwrap();
        let n = for_event("s1", "api", &kind, &tz).unwrap();
        assert_eq!(n.kind, Kind::Limit);
        assert_eq!(n.body, "Resets at 15:33. You've hit your limit");
        let again = EventKind::LimitDetected {
            resets_at: Some(at),
            source: crate::limits::Source::Journal,
            kind: LimitKind::Unspecified,
            line: "restored".into(),
        };
        assert_eq!(for_event("s1", "api", &again, &tz), None, "a restored session's limit is not news");
    }

    #[test]
    fn adoptions_are_told_once_a_night_however_many_sessions() {
        let adopted = |id: &str| EventKind::Adopted {
            by: "the tray app (process 7)".into(),
            down_secs: 4,
            why: "its Nightshift (process 6) was gone".into(),
            reason: format!("respawn was armed for {id}"),
        };
        let at: DateTime<Utc> = "2026-12-01T02:00:00Z".parse().unwrap();
        let mut told = Told::default();
        let first = for_event("s1", "api", &adopted("s1"), &Utc).unwrap();
        assert_eq!(first.summary, "Nightshift on this machine restarted; the night goes on");
        assert!(first.body.contains("taken over by the tray app (process 7)"), "{}", first.body);
        assert!(told.first(&first, at, &Utc));
        let second = for_event("s2", "web", &adopted("s2"), &Utc).unwrap();
        assert!(!told.first(&second, at + chrono::Duration::minutes(1), &Utc), "the same night: told once");
        assert!(told.first(&second, at + chrono::Duration::days(1), &Utc), "the next night: told again");
    }

    #[test]
    fn working_and_idle_are_not_worth_a_notification() {
        for state in [SessionState::Working, SessionState::Idle, SessionState::Running] {
            assert_eq!(for_event("s", "l", &EventKind::state(state, "x"), &Utc), None);
        }
        let half = EventKind::Breaker {
            breaker: crate::breaker::BreakerKind::NoProgress,
            state: BreakerState::HalfOpen,
            reason: "r".into(),
        };
        assert_eq!(for_event("s", "l", &half, &Utc), None);
    }

    #[test]
    fn quitting_says_the_resumes_are_kept() {
        let due: DateTime<Utc> = "2026-11-30T14:34:00Z".parse().unwrap();
        let n = resumes_kept(&[due], &Utc);
        assert_eq!(n.kind, Kind::Limit);
        assert!(n.body.contains("resumes when Nightshift next starts") && n.body.contains("14:34"), "{}", n.body);
        let n = resumes_kept(&[due, due - chrono::Duration::hours(1)], &Utc);
        assert!(n.body.starts_with("2 sessions") && n.body.contains("13:34"), "{}", n.body);
    }

    #[test]
    fn a_guard_denial_is_told_once_per_kind_per_night() {
        let denial = |rule: &str| EventKind::GuardDenied {
            rule: rule.into(),
            what: "a force push to the default branch".into(),
            command: "git push -f origin main".into(),
        };
        let tz = chrono::FixedOffset::east_opt(3600).unwrap();
        let at = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        let n = for_event("s1", "api", &denial("force_push"), &tz).unwrap();
        assert_eq!(n.kind, Kind::Guard);
        assert!(n.summary.contains("refused a force push") && n.body.contains("git push -f origin main"), "{n:?}");
        let mut told = Told::default();
        assert!(told.first(&n, at("2026-11-30T22:00:00Z"), &tz), "the first of the night");
        assert!(!told.first(&n, at("2026-12-01T03:00:00Z"), &tz), "the same kind later that night");
        let other = for_event("s2", "web", &denial("gh_pr_merge"), &tz).unwrap();
        assert!(told.first(&other, at("2026-12-01T03:00:00Z"), &tz), "another kind");
        assert!(told.first(&n, at("2026-12-01T22:00:00Z"), &tz), "the next night");
        let unreachable = EventKind::GuardUnreachable { command: "rm -r x".into(), why: "no answer within 5 s".into() };
        let n = for_event("s1", "api", &unreachable, &tz).unwrap();
        assert!(n.summary.contains("could not answer") && n.body.contains("no answer within 5 s"), "{n:?}");
        let question = for_event("s1", "api", &EventKind::state(SessionState::WaitingInput, "x"), &tz).unwrap();
        assert!(
            told.first(&question, at("2026-12-01T22:01:00Z"), &tz)
                && told.first(&question, at("2026-12-01T22:02:00Z"), &tz)
        );
    }

    #[test]
    fn switches_default_on_and_read_from_toml() {
        assert!(Switches::default().allows(Kind::Finished));
        let s: Switches = toml::from_str("finished = false").unwrap();
        assert!(!s.allows(Kind::Finished) && s.allows(Kind::Question));
        assert!(toml::from_str::<Switches>("finsihed = false").is_err());
    }
}
