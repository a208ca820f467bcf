//! The night as a picture: for each session over a range, its states as bands (working, idle,
//! waiting for you, limit waits, respawning, a breaker open) and its events as marks (respawn
//! cycles, restarts, restores, handoffs, breakers opened and closed, resumes, commits), with the
//! usage windows' fill beneath. The
//! window draws it; every band's start and end is a state event's time, clipped to the range.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::breaker::BreakerState;
use crate::event::{Event, EventKind, SessionState};
use crate::respawn::Action;
use crate::store::{EventQuery, Store, StoreError};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Band {
    /// The session state's name (`working`, `idle`, `waiting_input`, `limit_paused`, …).
    pub state: String,
    #[serde(with = "crate::clock::ts")]
    pub from: DateTime<Utc>,
    #[serde(with = "crate::clock::ts")]
    pub to: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mark {
    /// `cycle`, `restart`, `restore`, `handoff`, `breaker`, `breaker_closed`, `resume`, `commit`.
    pub kind: &'static str,
    #[serde(with = "crate::clock::ts")]
    pub at: DateTime<Utc>,
    pub text: String,
}

/// Who worked a stretch of a session: its agent and account (a session moves between accounts,
/// and its work between agents, at a limit).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Worker {
    pub agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    #[serde(with = "crate::clock::ts")]
    pub from: DateTime<Utc>,
    #[serde(with = "crate::clock::ts")]
    pub to: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lane {
    pub session: String,
    pub label: String,
    pub bands: Vec<Band>,
    pub marks: Vec<Mark>,
    /// Who worked when, as the session's contracts and moves say (none for a journal older than
    /// contracts).
    pub workers: Vec<Worker>,
}

/// A usage reading beneath the lanes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fill {
    #[serde(with = "crate::clock::ts")]
    pub at: DateTime<Utc>,
    pub five_hour_pct: Option<f64>,
    pub seven_day_pct: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timeline {
    #[serde(with = "crate::clock::ts")]
    pub from: DateTime<Utc>,
    #[serde(with = "crate::clock::ts")]
    pub to: DateTime<Utc>,
    pub lanes: Vec<Lane>,
    pub usage: Vec<Fill>,
}

/// Who worked session's stretches of `[from, to)`, from its events (oldest first): each contract
/// names its agent and account, each account switch the account, and the session's end (unless
/// a life follows it) ends the last stretch.
pub fn workers(events: &[Event], from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<Worker> {
    let mut workers: Vec<Worker> = Vec::new();
    // The worker since when: its agent, its account.
    let mut working: Option<(String, Option<String>, DateTime<Utc>)> = None;
    let mut hand_over = |working: &mut Option<(String, Option<String>, DateTime<Utc>)>,
                         next: Option<(String, Option<String>)>,
                         at: DateTime<Utc>| {
        if let Some((agent, account, since)) = working.take() {
            let (a, b) = (since.max(from), at.min(to));
            if a < b {
                workers.push(Worker { agent, account, from: a, to: b });
            }
        }
        *working = next.map(|(agent, account)| (agent, account, at));
    };
    let mut ended: Option<DateTime<Utc>> = None;
    for e in events.iter().take_while(|e| e.ts < to) {
        match &e.kind {
            EventKind::Contract { contract } => {
                let account = contract.account.as_ref().map(|a| a.name.clone());
                let same = working
                    .as_ref()
                    .is_some_and(|(agent, acc, _)| *agent == contract.agent.as_str() && *acc == account);
                if !same {
                    hand_over(&mut working, Some((contract.agent.as_str().to_string(), account)), e.ts);
                }
            }
            EventKind::AccountSwitch { action: crate::event::SwitchAction::Switched, to: Some(account), .. } => {
                let agent = working.as_ref().map(|(agent, ..)| agent.clone());
                if let Some(agent) = agent {
                    hand_over(&mut working, Some((agent, Some(account.clone()))), e.ts);
                }
            }
            // Its end, unless a life after it follows (a restart, a move).
            EventKind::State { state, .. } => ended = state.is_final().then_some(e.ts),
            _ => {}
        }
    }
    hand_over(&mut working, None, ended.unwrap_or(to));
    workers
}

/// One session's lane over `[from, to)` from its events (oldest first).
pub fn lane(session: &str, label: String, events: &[Event], from: DateTime<Utc>, to: DateTime<Utc>) -> Lane {
    let mut bands: Vec<Band> = Vec::new();
    let mut marks = Vec::new();
    let mut open: Option<(SessionState, DateTime<Utc>)> = None;
    let close = |open: &mut Option<(SessionState, DateTime<Utc>)>, at: DateTime<Utc>, bands: &mut Vec<Band>| {
        if let Some((state, since)) = open.take() {
            let (a, b) = (since.max(from), at.min(to));
            if a < b {
                bands.push(Band { state: state.as_str().to_string(), from: a, to: b });
            }
        }
    };
    for e in events {
        if e.ts >= to {
            break;
        }
        match &e.kind {
            EventKind::AccountSwitch {
                action: crate::event::SwitchAction::Switched,
                to: Some(account),
                reason,
                ..
            } if e.ts >= from => {
                marks.push(Mark { kind: "move", at: e.ts, text: format!("moved to account {account}: {reason}") });
            }
            EventKind::AgentSwitch { action: crate::event::SwitchAction::Switched, from: a, to: b, .. }
                if e.ts >= from =>
            {
                marks.push(Mark { kind: "move", at: e.ts, text: format!("the work moved from {a} to {b}") });
            }
            EventKind::State { state, .. } => {
                close(&mut open, e.ts, &mut bands);
                if !state.is_final() {
                    open = Some((*state, e.ts));
                }
            }
            kind if e.ts >= from => {
                let mark = match kind {
                    EventKind::Respawn { action: Action::CycleStarted, cycle, .. } => {
                        Some(("cycle", format!("respawn cycle {}", cycle.map_or("?".into(), |c| c.to_string()))))
                    }
                    EventKind::Respawn { action: Action::Restart, reason, .. } => {
                        Some(("restart", reason.clone().unwrap_or_else(|| "restarted".into())))
                    }
                    EventKind::Breaker { state: BreakerState::Open, reason, .. } => Some(("breaker", reason.clone())),
                    EventKind::Breaker { breaker, state: BreakerState::Closed, reason } => {
                        Some(("breaker_closed", format!("the {} breaker closed: {reason}", breaker.as_str())))
                    }
                    EventKind::ResumeSent { .. } => Some(("resume", "resumed after the limit".to_string())),
                    EventKind::Restored { reason, .. } => Some(("restore", format!("restored: {reason}"))),
                    EventKind::Adopted { by, reason, .. } => Some(("restore", format!("taken over by {by}: {reason}"))),
                    EventKind::HandoffAsked { times: 1 } => {
                        Some(("handoff", "a handoff, the context near full".to_string()))
                    }
                    _ => None,
                };
                if let Some((kind, text)) = mark {
                    marks.push(Mark { kind, at: e.ts, text });
                }
            }
            _ => {}
        }
    }
    close(&mut open, to, &mut bands);
    Lane { session: session.to_string(), label, bands, marks, workers: workers(events, from, to) }
}

/// The moments of one session's life `[from, to)` a replay marks on its seek bar: each turn the
/// agent began, each question or prompt it waited on, each usage limit, and the lane's own marks
/// (cycles, restarts, handoffs, breakers, resumes), in order.
pub fn replay_marks(session: &str, events: &[Event], from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<Mark> {
    let lane = lane(session, String::new(), events, from, to);
    let mut marks = lane.marks;
    let mut last: Option<&str> = None;
    for e in events.iter().filter(|e| e.ts >= from && e.ts < to) {
        let mark = match &e.kind {
            EventKind::State { state: SessionState::Working, .. } if last != Some("working") => {
                Some(("turn", "the agent began a turn".to_string()))
            }
            EventKind::State { state: SessionState::WaitingInput, dialog, .. } => {
                let text = dialog.as_ref().and_then(|d| d.text.clone());
                Some(("question", text.map_or_else(|| "it waited for you".to_string(), |t| format!("it asked: {t}"))))
            }
            EventKind::LimitDetected { line, .. } => Some(("limit", format!("usage limit: {line}"))),
            _ => None,
        };
        if let EventKind::State { state, .. } = &e.kind {
            last = Some(state.as_str());
        }
        if let Some((kind, text)) = mark {
            marks.push(Mark { kind, at: e.ts, text });
        }
    }
    marks.sort_by_key(|m| m.at);
    marks
}

/// The timeline of every session that overlaps `[from, to)`, with its repository's commits.
pub fn build(store: &Store, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Timeline, StoreError> {
    let mut lanes = Vec::new();
    let mut dirs_seen = std::collections::HashSet::new();
    for row in store.sessions()? {
        let created = super::parse_ts(&row.created).unwrap_or(to);
        let ended = row.ended.as_deref().and_then(super::parse_ts);
        if created >= to || ended.is_some_and(|e| e < from) {
            continue;
        }
        let events: Vec<Event> = store
            .events(&EventQuery { session: Some(row.id.clone()), ..Default::default() })?
            .iter()
            .filter_map(|e| serde_json::from_str(&e.body).ok())
            .collect();
        let mut lane = lane(&row.id, crate::overview::label(&row), &events, from, to);
        // A repository shared by sessions: its commits on the first one's lane.
        if dirs_seen.insert(row.cwd.clone()) {
            for (at, commit) in crate::git::commits_between(std::path::Path::new(&row.cwd), from, to) {
                let short: String = commit.hash.chars().take(8).collect();
                lane.marks.push(Mark { kind: "commit", at, text: format!("{short} {}", commit.subject) });
            }
        }
        lane.marks.sort_by_key(|m| m.at);
        if !lane.bands.is_empty() || !lane.marks.is_empty() {
            lanes.push(lane);
        }
    }
    let usage = store
        .usage(Some(crate::agent::AgentKind::Claude), None, Some(from))?
        .into_iter()
        .filter_map(|r| {
            let at = super::parse_ts(&r.ts)?;
            (at < to).then_some(Fill {
                at,
                five_hour_pct: r.sample.five_hour_pct,
                seven_day_pct: r.sample.seven_day_pct,
            })
        })
        .collect();
    Ok(Timeline { from, to, lanes, usage }.scaled_to_what_happened())
}

impl Timeline {
    /// The range cut to what happened in it: from the first band or mark to the last (a night of
    /// eight hours in a 24-hour range is drawn over its eight hours), with a little room either
    /// side, never past the range. The bands are cut to it too; an empty timeline keeps the range.
    fn scaled_to_what_happened(mut self) -> Self {
        let times = self
            .lanes
            .iter()
            .flat_map(|l| l.bands.iter().flat_map(|b| [b.from, b.to]).chain(l.marks.iter().map(|m| m.at)));
        let (Some(first), Some(last)) = (times.clone().min(), times.max()) else { return self };
        let room = ((last - first) / 50).max(chrono::Duration::seconds(30));
        let (from, to) = ((first - room).max(self.from), (last + room).min(self.to));
        self.from = from;
        self.to = to;
        for lane in &mut self.lanes {
            for band in &mut lane.bands {
                band.from = band.from.max(from);
                band.to = band.to.min(to);
            }
            lane.bands.retain(|b| b.from < b.to);
        }
        self.usage.retain(|f| f.at >= from && f.at < to);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(hm: &str) -> DateTime<Utc> {
        let day = if hm < "12:00" { "2026-12-02" } else { "2026-12-01" };
        format!("{day}T{hm}:00Z").parse().unwrap()
    }

    fn state(hm: &str, s: SessionState) -> Event {
        Event { ts: at(hm), session: String::from("s1").into(), kind: EventKind::state(s, "because") }
    }

    #[test]
    fn who_worked_when_follows_the_contracts_and_the_account_moves() {
        let contract = |agent: crate::agent::AgentKind, account: &str| {
            let mut c = crate::contract::Contract::session(
                agent,
                crate::contract::Terminal::new(agent, agent.as_str().into(), &[], "/p".into(), (80, 24)),
            );
            *c.account_mut() = Some(crate::agent::Account { name: account.into(), dir: "/a".into() });
            EventKind::Contract { contract: Box::new(c.into_contract()) }
        };
        let ev = |hm: &str, kind: EventKind| Event { ts: at(hm), session: String::from("s1").into(), kind };
        let switched = |to: &str| EventKind::AccountSwitch {
            action: crate::event::SwitchAction::Switched,
            from: Some("a".into()),
            to: Some(to.into()),
            until: None,
            reason: "at the limit".into(),
        };
        let moved = EventKind::AgentSwitch {
            action: crate::event::SwitchAction::Switched,
            from: crate::agent::AgentKind::Claude,
            to: crate::agent::AgentKind::Codex,
            back_at: None,
            reason: "at the limit".into(),
        };
        use crate::agent::AgentKind::{Claude, Codex};
        let events = vec![
            ev("21:00", contract(Claude, "a")),
            state("21:00", SessionState::Working),
            ev("23:00", switched("b")),
            state("23:00", SessionState::Exited),
            state("23:00", SessionState::Working),
            ev("01:00", moved),
            state("01:00", SessionState::Exited),
            ev("01:00", contract(Codex, "c")),
            state("01:00", SessionState::Working),
            ev("03:00", contract(Claude, "b")),
            state("06:00", SessionState::Exited),
        ];
        let l = lane("s1", "api".into(), &events, at("22:00"), at("08:00"));
        let worker = |agent: &str, account: &str, from: &str, to: &str| Worker {
            agent: agent.into(),
            account: Some(account.into()),
            from: at(from),
            to: at(to),
        };
        assert_eq!(
            l.workers,
            [
                worker("claude", "a", "22:00", "23:00"),
                worker("claude", "b", "23:00", "01:00"),
                worker("codex", "c", "01:00", "03:00"),
                worker("claude", "b", "03:00", "06:00"),
            ],
            "clipped to the range, through a restart, ended with the session"
        );
        let moves: Vec<&str> = l.marks.iter().filter(|m| m.kind == "move").map(|m| m.text.as_str()).collect();
        assert_eq!(moves, ["moved to account b: at the limit", "the work moved from claude to codex"]);
    }

    #[test]
    fn a_night_in_a_long_range_is_drawn_over_the_night() {
        let events = vec![state("23:00", SessionState::Working), state("07:00", SessionState::Exited)];
        let lanes = vec![lane("s1", "api".into(), &events, at("12:00"), at("11:59"))];
        let fill = |hm| Fill { at: at(hm), five_hour_pct: Some(10.0), seven_day_pct: None };
        let usage = vec![fill("13:00"), fill("02:00"), fill("09:00")];
        let t = Timeline { from: at("12:00"), to: at("11:59"), lanes, usage }.scaled_to_what_happened();
        // Eight hours of work, and a fiftieth of it either side.
        let room = chrono::Duration::seconds(8 * 3600 / 50);
        assert_eq!((t.from, t.to), (at("23:00") - room, at("07:00") + room));
        assert_eq!(t.lanes[0].bands.len(), 1);
        assert_eq!((t.lanes[0].bands[0].from, t.lanes[0].bands[0].to), (at("23:00"), at("07:00")));
        assert_eq!(t.usage.iter().map(|f| f.at).collect::<Vec<_>>(), [at("02:00")], "readings outside are left out");
        let empty = Timeline { from: at("12:00"), to: at("11:59"), lanes: vec![], usage: vec![] };
        assert_eq!(empty.scaled_to_what_happened().from, at("12:00"), "nothing happened: the range as it is");
    }

    #[test]
    fn bands_run_from_one_state_event_to_the_next_clipped_to_the_range() {
        let events = vec![
            state("22:00", SessionState::Running),
            state("22:05", SessionState::Working),
            state("22:30", SessionState::Idle),
            Event {
                ts: at("22:31"),
                session: String::from("s1").into(),
                kind: EventKind::Respawn { action: Action::CycleStarted, cycle: Some(1), reason: None, cost_usd: None },
            },
            state("23:00", SessionState::LimitPaused),
            state("01:00", SessionState::Working),
            state("02:00", SessionState::Exited),
        ];
        let lane = lane("s1", "api · claude".into(), &events, at("22:10"), at("01:30"));
        let bands: Vec<(&str, DateTime<Utc>, DateTime<Utc>)> =
            lane.bands.iter().map(|b| (b.state.as_str(), b.from, b.to)).collect();
        assert_eq!(
            bands,
            [
                ("working", at("22:10"), at("22:30")),
                ("idle", at("22:30"), at("23:00")),
                ("limit_paused", at("23:00"), at("01:00")),
                ("working", at("01:00"), at("01:30")),
            ]
        );
        assert_eq!(lane.marks.len(), 1);
        assert_eq!(
            (lane.marks[0].kind, lane.marks[0].at, lane.marks[0].text.as_str()),
            ("cycle", at("22:31"), "respawn cycle 1")
        );

        // Handoffs and restores are marks too (a loop of handoffs shows as a row of them).
        let more = vec![
            Event { ts: at("23:10"), session: String::from("s1").into(), kind: EventKind::HandoffAsked { times: 1 } },
            Event { ts: at("23:11"), session: String::from("s1").into(), kind: EventKind::HandoffAsked { times: 2 } },
            Event {
                ts: at("23:20"),
                session: String::from("s1").into(),
                kind: EventKind::Restored { reason: "respawn armed".into(), down_secs: 60 },
            },
        ];
        let marked = super::lane("s1", "api".into(), &more, at("22:00"), at("01:00"));
        let kinds: Vec<(&str, DateTime<Utc>)> = marked.marks.iter().map(|m| (m.kind, m.at)).collect();
        assert_eq!(kinds, [("handoff", at("23:10")), ("restore", at("23:20"))], "one mark per handoff asked");

        // An exit ends the lane: nothing after it.
        let whole = super::lane("s1", "api".into(), &events, at("21:00"), at("03:00"));
        assert_eq!(whole.bands.last().map(|b| (b.state.as_str(), b.to)), Some(("working", at("02:00"))));
    }
}
