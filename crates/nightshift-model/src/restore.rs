//! Bringing a night back after Nightshift's own end — a killed `nightshift run`, a crash or panic
//! of the app, a logout or reboot, a power cut — from what the journal says.
//!
//! [`replay`] reads one session's journal (as the runtime's store gives it) into a [`Replay`]: its [contract](crate::contract) (or,
//! for a journal older than contracts, the same pieced together from its row and its events), and
//! what changed since — the conversation its hooks named, a hold, respawn switched on or off, a
//! limit's pending resume, what it spent. [`verdict`] (pure) decides: a session whose armed
//! automation has time left is started again; an attended one is listed as lost, for its user to
//! resume — never behind their back.

use chrono::{DateTime, Utc};

use crate::contract::{Contract, Kind, Terminal};
use crate::event::{Automation, Event, EventKind, StopKind};
use crate::limits::resume;

/// A resume a session was waiting for when its Nightshift ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub resets_at: Option<DateTime<Utc>>,
    /// The reset is known to the second: the client's rate-limit data said it.
    pub exact: bool,
    pub settings: resume::Settings,
    pub guard: crate::limits::WindowGuard,
}

/// One session as its journal leaves it.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    /// What was armed, with the last word on respawn and auto-resume laid over it.
    pub contract: Contract,
    /// The contract was pieced together from an older journal's row and events.
    pub pieced: bool,
    /// The client's conversation, as its hooks last named it.
    pub conversation: Option<String>,
    /// The user had held its automatic actions.
    pub held: bool,
    /// The resume it was waiting for, if any.
    pub pending: Option<Pending>,
    /// What it spent.
    pub spent: crate::usage::Tally,
    /// When its journal last heard of it.
    pub last_seen: DateTime<Utc>,
    /// Its Nightshift said it ended and kept the pending resume (a logout, a Quit).
    pub kept: bool,
    /// Its crash-loop breaker was open: its agent kept dying.
    pub crash_loop: bool,
    /// The agent's last process, as journalled when it started.
    pub last_pid: Option<u32>,
    /// A conversation received the last handoff the agent wrote (no later one is given it).
    pub handoff_given: bool,
}

/// What to do with a session whose Nightshift is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Its armed automation has time left: start it again, paused on its limit when one is
    /// pending.
    Restore { why: String, paused: bool },
    /// Nothing armed has time left (it was attended, or its armed hours are over): it is listed
    /// as lost, and only its user resumes it.
    Lost { why: String },
}

/// The decision for `replay` at `now`.
pub fn verdict(replay: &Replay, now: DateTime<Utc>) -> Verdict {
    let Some(t) = replay.contract.terminal() else {
        // A loop is unattended by nature: it runs its interrupted task again.
        return Verdict::Restore { why: "a loop of headless iterations".into(), paused: false };
    };
    if replay.crash_loop {
        return Verdict::Lost { why: "its crash-loop breaker was open: its agent kept dying".into() };
    }
    if let Some(p) = &replay.pending {
        let when = p.resets_at.map_or_else(|| "its limit's reset".to_string(), crate::clock::format_ts);
        return Verdict::Restore { why: format!("auto-resume was waiting for {when}"), paused: true };
    }
    match (&t.respawn, t.respawn_until) {
        (Some(_), Some(until)) if until > now => {
            let left =
                humantime::format_duration(std::time::Duration::from_secs((until - now).num_seconds().max(0) as u64));
            Verdict::Restore { why: format!("respawn was armed, {left} of it left"), paused: false }
        }
        (Some(_), Some(until)) => Verdict::Lost {
            why: format!("its armed hours ended at {} while no Nightshift ran it", crate::clock::format_ts(until)),
        },
        _ => Verdict::Lost { why: "it was attended: nothing was armed to run it without you".into() },
    }
}

/// What of a session's journal row a replay reads (the runtime's store row gives it).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub command: Vec<String>,
    pub cwd: String,
    pub agent: String,
    pub preset: Option<String>,
    /// When the row was made (RFC 3339).
    pub created: String,
    pub account: Option<crate::agent::Account>,
    /// Its Nightshift ended and kept the pending resume.
    pub kept: bool,
}

/// One session's journal as [`Replay`]: its `row`, its `contract` when one was journalled, its
/// recent `events` oldest first, and the usage `samples` it journalled; `None` when nothing in it
/// can be read.
pub fn replay(
    row: &Row,
    contract: Option<Contract>,
    events: &[Event],
    samples: &[crate::usage::Sample],
) -> Option<Replay> {
    let last_seen = events.last()?.ts;
    let (mut contract, pieced) = match contract {
        Some(c) => (c, false),
        None => (pieced(row, events)?, true),
    };
    let mut spent = crate::usage::Tally::default();
    // The resets of full windows the client's data reported, to the second.
    let mut full_resets = Vec::new();
    for sample in samples {
        spent.add(sample);
        let full = |pct: Option<f64>, at: Option<DateTime<Utc>>| at.filter(|_| pct.is_some_and(|p| p >= 100.0));
        full_resets.extend(full(sample.five_hour_pct, sample.five_hour_resets_at));
        full_resets.extend(full(sample.seven_day_pct, sample.seven_day_resets_at));
    }
    let mut replay = Replay {
        contract: contract.clone(),
        pieced,
        conversation: None,
        held: false,
        pending: None,
        spent,
        last_seen,
        kept: row.kept,
        crash_loop: false,
        last_pid: None,
        handoff_given: false,
    };
    // Oldest first: each later word replaces the one before.
    let mut pending: Option<Pending> = None;
    for event in events {
        match &event.kind {
            EventKind::Conversation { id } => replay.conversation = Some(id.clone()),
            EventKind::Handoff { .. } => replay.handoff_given = false,
            EventKind::HandoffGiven { .. } => replay.handoff_given = true,
            EventKind::State { pid: Some(pid), .. } => replay.last_pid = Some(*pid),
            EventKind::Breaker { breaker: crate::breaker::BreakerKind::CrashLoop, state, .. } => {
                replay.crash_loop = *state == crate::breaker::BreakerState::Open;
            }
            EventKind::RespawnSettings { preset, settings, until } => {
                if let Kind::Terminal(t) = &mut contract.kind {
                    t.preset.clone_from(preset);
                    t.respawn = Some((**settings).clone());
                    t.respawn_until = Some(*until);
                }
            }
            EventKind::Respawn {
                action: crate::respawn::Action::Disarmed | crate::respawn::Action::Expired, ..
            } => {
                if let Kind::Terminal(t) = &mut contract.kind {
                    t.respawn = None;
                    t.respawn_until = None;
                }
            }
            EventKind::ResumeArmed { resets_at, settings, guard, .. } => {
                // A notice says the minute; the data the second it falls in.
                let exact =
                    resets_at.and_then(|r| full_resets.iter().copied().filter(|f| resume::same_reset(r, *f)).max());
                pending = Some(Pending {
                    resets_at: exact.or(*resets_at),
                    exact: exact.is_some(),
                    settings: settings.clone(),
                    guard: *guard,
                });
            }
            EventKind::LimitCleared { .. } | EventKind::LimitFailed { .. } => pending = None,
            EventKind::StopRequested { kind: StopKind::User, .. } => pending = None,
            EventKind::Automation { change, .. } => match change {
                Automation::AutoResumeOff => {
                    pending = None;
                    if let Kind::Terminal(t) = &mut contract.kind {
                        t.auto_resume = None;
                    }
                }
                Automation::AutoResumeOn => {
                    if let Kind::Terminal(t) = &mut contract.kind {
                        t.auto_resume.get_or_insert_with(resume::Settings::default);
                    }
                }
                Automation::Held => replay.held = true,
                Automation::Released => replay.held = false,
                Automation::MenuAnswered => {}
            },
            _ => {}
        }
    }
    replay.contract = contract;
    replay.pending = pending;
    Some(replay)
}

/// The contract of a session a journal older than contracts recorded (0.1.0 and later, until
/// contracts): its row's command, directory, agent, preset and account, the respawn settings of
/// its events (or its row's built-in preset from when it was armed), and the auto-resume of its
/// pending resume.
fn pieced(row: &Row, events: &[Event]) -> Option<Contract> {
    let (program, args) = row.command.split_first()?;
    let agent = row.agent.parse().unwrap_or(crate::agent::AgentKind::Generic);
    let size = crate::screen::PtySize::default();
    // It ran without a sandbox then.
    let mut t = Terminal::new(agent, program.clone(), args, row.cwd.clone().into(), (size.cols, size.rows));
    t.preset.clone_from(&row.preset);
    for event in events {
        match &event.kind {
            // 0.1.0 journalled no settings: the row's built-in preset, from when it was armed.
            EventKind::Respawn { action: crate::respawn::Action::Armed, .. } if t.respawn.is_none() => {
                if let Some(settings) = row.preset.as_deref().and_then(crate::respawn::builtin) {
                    t.respawn_until =
                        Some(event.ts + chrono::Duration::from_std(settings.duration).unwrap_or_default());
                    t.guard = settings.guard;
                    t.respawn = Some(settings);
                }
            }
            EventKind::ResumeArmed { settings, guard, .. } => {
                t.auto_resume = Some(settings.clone());
                t.window_guard = *guard;
            }
            _ => {}
        }
    }
    let created = chrono::DateTime::parse_from_rfc3339(&row.created).map(|t| t.with_timezone(&Utc)).ok();
    Some(Contract {
        version: 0,
        started: created.or_else(|| events.first().map(|e| e.ts))?,
        agent,
        account: row.account.clone(),
        env: Vec::new(),
        kind: Kind::Terminal(Box::new(t)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn replay(respawn_until: Option<&str>, pending: bool) -> Replay {
        let mut row_command: Vec<String> = ["claude", "Work through TASKS.md"].map(String::from).to_vec();
        let program = row_command.remove(0);
        let t = Terminal {
            program,
            args: vec![],
            prompt: Some(row_command.remove(0)),
            cwd: "/p".into(),
            cols: 120,
            rows: 40,
            preset: Some("overnight".into()),
            respawn: respawn_until.map(|_| crate::respawn::Settings::default()),
            respawn_until: respawn_until.map(at),
            auto_resume: Some(resume::Settings::default()),
            window_guard: Default::default(),
            pace: Default::default(),
            budget: Default::default(),
            switch: None,
            guard: false,
            guard_file: None,
            hooks: true,
            adapter: None,
            quiet: std::time::Duration::from_secs(2),
            stop_grace: std::time::Duration::from_secs(3),
            worktree: None,
            sandbox: None,
            unsandboxed: None,
            standing: None,
            failover: None,
            returns: None,
        };
        Replay {
            contract: Contract {
                version: 1,
                started: at("2026-12-01T22:00:00Z"),
                agent: crate::agent::AgentKind::Claude,
                account: None,
                env: vec![],
                kind: Kind::Terminal(Box::new(t)),
            },
            pieced: false,
            conversation: Some("0b2c".into()),
            held: false,
            pending: pending.then(|| Pending {
                resets_at: Some(at("2026-12-02T03:00:00Z")),
                exact: false,
                settings: resume::Settings::default(),
                guard: Default::default(),
            }),
            spent: Default::default(),
            last_seen: at("2026-12-01T23:00:00Z"),
            kept: false,
            crash_loop: false,
            last_pid: None,
            handoff_given: false,
        }
    }

    #[test]
    fn armed_hours_left_bring_a_session_back_and_an_attended_one_is_left_to_its_user() {
        let now = at("2026-12-01T23:00:30Z");
        let armed = replay(Some("2026-12-02T06:00:00Z"), false);
        assert!(
            matches!(verdict(&armed, now), Verdict::Restore { paused: false, ref why } if why.contains("6h 59m 30s")),
            "{:?}",
            verdict(&armed, now)
        );
        let waiting = replay(None, true);
        assert!(matches!(verdict(&waiting, now), Verdict::Restore { paused: true, .. }));
        let over = replay(Some("2026-12-01T23:00:00Z"), false);
        assert!(matches!(verdict(&over, now), Verdict::Lost { ref why } if why.contains("armed hours ended")));
        let attended = replay(None, false);
        assert!(matches!(verdict(&attended, now), Verdict::Lost { ref why } if why.contains("attended")));
    }
}
