//! The state of every session at a glance: what the tray icon, its tooltip and its menu show.
//!
//! Pure: it reads journal rows and the latest usage sample, so the tray and its tests agree without
//! a window system.

use std::path::Path;

use serde::Serialize;

use crate::event::SessionState;
use crate::store::{SessionRow, Standing};
use crate::usage::{self, Sample};

/// The tray icon's variants, mildest first: the icon shows the worst across live sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Glance {
    /// Nothing running, or every agent at its prompt.
    Idle,
    Working,
    /// Paused on a usage limit.
    Paused,
    /// An agent waits on a question or permission, or a breaker stopped it: it needs the user.
    Attention,
}

impl Glance {
    /// The glance of one session; `None` for sessions no process runs (ended, lost, kept).
    pub fn of(row: &SessionRow) -> Option<Self> {
        if row.standing() != Standing::Live {
            return None;
        }
        match row.state {
            SessionState::Idle => Some(Self::Idle),
            SessionState::Starting | SessionState::Running | SessionState::Working | SessionState::Respawning => {
                Some(Self::Working)
            }
            SessionState::LimitPaused => Some(Self::Paused),
            SessionState::WaitingInput | SessionState::BreakerOpen => Some(Self::Attention),
            // Between lives (a restart is coming).
            SessionState::Exited | SessionState::Failed => Some(Self::Working),
            // Nothing runs yet.
            SessionState::Scheduled => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Working => "working",
            Self::Paused => "paused",
            Self::Attention => "attention",
        }
    }
}

/// One live session in the tray's menu.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub id: String,
    pub label: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Overview {
    pub glance: Glance,
    pub tooltip: String,
    /// Live sessions, most recent first.
    pub entries: Vec<Entry>,
}

/// At most this many sessions are listed in the menu.
pub const MENU_SESSIONS: usize = 12;

/// How a session is named in short: its directory's last part and its program.
pub fn label(row: &SessionRow) -> String {
    let dir = Path::new(&row.cwd).file_name().map_or_else(|| row.cwd.clone(), |n| n.to_string_lossy().into_owned());
    let program = row
        .command
        .first()
        .map(|p| Path::new(p).file_name().map_or_else(|| p.clone(), |n| n.to_string_lossy().into_owned()));
    match program {
        Some(program) => format!("{dir} · {program}"),
        None => dir,
    }
}

/// Marks the sessions running a client whose canary failed (`failed`: session id, then the client
/// and version, `claude 2.1.333`): their menu entries say so, and the tooltip once per client.
pub fn with_canary(mut o: Overview, failed: &[(String, String)]) -> Overview {
    let mut clients: Vec<&str> = Vec::new();
    for entry in &mut o.entries {
        if let Some((_, client)) = failed.iter().find(|(id, _)| id == &entry.id) {
            entry.label.push_str(" · canary failed");
            if !clients.contains(&client.as_str()) {
                clients.push(client);
            }
        }
    }
    for client in clients {
        o.tooltip.push_str(&format!("\nThe canary failed on {client}: its sessions may be misread"));
    }
    o
}

/// The overview of `rows` (as the journal lists them, newest first) with each client's latest
/// plan usage: Claude's line alone as it always was, each labelled once Codex's is there too.
pub fn overview(rows: &[SessionRow], usage: &[(crate::agent::AgentKind, &Sample)]) -> Overview {
    let live: Vec<(&SessionRow, String, Glance)> =
        rows.iter().filter_map(|r| Glance::of(r).map(|g| (r, r.shown_state(), g))).collect();
    let glance = live.iter().map(|(_, _, g)| *g).max().unwrap_or(Glance::Idle);
    let count = |g: Glance| live.iter().filter(|(_, _, x)| *x == g).count();
    let counts: Vec<String> = [
        (count(Glance::Working), "working"),
        (count(Glance::Idle), "idle"),
        (count(Glance::Paused), "paused on a limit"),
        (count(Glance::Attention), "need you"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {}", if n == 1 && what == "need you" { "needs you" } else { what }))
    .collect();
    let mut tooltip = String::from("Nightshift");
    if counts.is_empty() {
        tooltip.push_str(" — no sessions running");
    } else {
        tooltip.push_str(" — ");
        tooltip.push_str(&counts.join(" · "));
    }
    let plans: Vec<_> = usage.iter().filter(|(_, s)| s.has_limits()).collect();
    let labelled = plans.iter().any(|(agent, _)| *agent != crate::agent::AgentKind::Claude);
    for (agent, sample) in plans {
        tooltip.push('\n');
        if labelled {
            tooltip.push_str(if *agent == crate::agent::AgentKind::Codex { "Codex " } else { "Claude " });
        }
        tooltip.push_str(&usage::chip(sample, false));
    }
    let entries = live
        .iter()
        .take(MENU_SESSIONS)
        .map(|(r, shown, _)| Entry { id: r.id.clone(), label: format!("{} — {}", label(r), shown.replace('_', " ")) })
        .collect();
    Overview { glance, tooltip, entries }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::AgentKind;

    fn row(id: &str, state: &str) -> SessionRow {
        let state = SessionState::parse(state).unwrap();
        SessionRow {
            kind: crate::store::SessionKind::Terminal,
            id: id.into(),
            command: vec!["/usr/bin/claude".into(), "--continue".into()],
            cwd: format!("/home/me/{id}"),
            agent: "claude".into(),
            preset: None,
            created: "2026-11-30T22:00:00.000Z".into(),
            ended: None,
            exit_code: None,
            exit_signal: None,
            error: None,
            state,
            reason: None,
            last_event: "state".into(),
            last_event_at: "2026-11-30T22:00:00.000Z".into(),
            // This process: alive, so the journal's state is believed.
            owner_pid: Some(i64::from(std::process::id())),
            control_socket: None,
            kept: None,
            account: None,
            account_dir: None,
            lease: None,
        }
    }

    #[test]
    fn the_icon_shows_the_worst_live_state() {
        let rows = [row("a", "idle"), row("b", "working"), row("c", "exited")];
        assert_eq!(overview(&rows, &[]).glance, Glance::Working);
        let rows = [row("a", "limit_paused"), row("b", "working")];
        assert_eq!(overview(&rows, &[]).glance, Glance::Paused);
        let rows = [row("a", "limit_paused"), row("b", "waiting_input"), row("c", "idle")];
        assert_eq!(overview(&rows, &[]).glance, Glance::Attention);
        assert_eq!(overview(&[row("a", "breaker_open")], &[]).glance, Glance::Attention);
        // Ended and lost sessions do not count.
        let mut lost = row("d", "working");
        lost.owner_pid = Some(i64::from(i32::MAX));
        assert_eq!(overview(&[row("c", "failed"), lost], &[]).glance, Glance::Idle);
    }

    #[test]
    fn the_tooltip_counts_sessions_and_shows_the_chip() {
        let rows = [row("a", "working"), row("b", "working"), row("c", "waiting_input"), row("d", "exited")];
        let sample = Sample { five_hour_pct: Some(41.6), seven_day_pct: Some(18.0), ..Sample::default() };
        let o = overview(&rows, &[(AgentKind::Claude, &sample)]);
        assert_eq!(o.tooltip, "Nightshift — 2 working · 1 needs you\n5h 42% · 7d 18%");
        let codex = Sample { five_hour_pct: Some(20.0), seven_day_pct: Some(12.0), ..Sample::default() };
        let o = overview(&rows, &[(AgentKind::Claude, &sample), (AgentKind::Codex, &codex)]);
        assert!(o.tooltip.ends_with("\nClaude 5h 42% · 7d 18%\nCodex 5h 20% · 7d 12%"), "{}", o.tooltip);
        let o = overview(&rows, &[(AgentKind::Codex, &codex)]);
        assert!(o.tooltip.ends_with("needs you\nCodex 5h 20% · 7d 12%"), "{}", o.tooltip);
        assert_eq!(overview(&[], &[]).tooltip, "Nightshift — no sessions running");
    }

    #[test]
    fn a_session_on_a_client_whose_canary_failed_says_so_in_the_menu_and_once_in_the_tooltip() {
        let rows = [row("a", "working"), row("b", "idle"), row("c", "working")];
        let failed = [("a".to_string(), "claude 2.1.333".to_string()), ("c".to_string(), "claude 2.1.333".to_string())];
        let o = with_canary(overview(&rows, &[]), &failed);
        let labels: Vec<&str> = o.entries.iter().map(|e| e.label.as_str()).collect();
        assert_eq!(
            labels,
            ["a · claude — working · canary failed", "b · claude — idle", "c · claude — working · canary failed"]
        );
        assert_eq!(o.tooltip.matches("The canary failed on claude 2.1.333: its sessions may be misread").count(), 1);
        assert_eq!(with_canary(overview(&rows, &[]), &[]), overview(&rows, &[]), "nothing failed: as it was");
    }

    #[test]
    fn the_menu_lists_live_sessions_by_directory_and_program() {
        let rows = [row("a", "limit_paused"), row("b", "exited")];
        let o = overview(&rows, &[]);
        assert_eq!(o.entries, [Entry { id: "a".into(), label: "a · claude — limit paused".into() }]);
        let many: Vec<SessionRow> = (0..20).map(|i| row(&format!("s{i}"), "idle")).collect();
        assert_eq!(overview(&many, &[]).entries.len(), MENU_SESSIONS);
    }
}
