//! One session's events read once, oldest first: what it did in the range, counted; which of the
//! needs it raised were met (a question answered, a breaker closed again, a limit over, the
//! session restored), each as one line of what happened; which are still open at the end; and
//! the same line said again collapsed into one, with its count and first and last time. Pure: the
//! caller brings the events, the range and each salvage commit's tree.
//!
//! Its parts: `dialogs` (each dialog followed until it is over), `salvage` (each snapshot followed
//! through the salvages that found it unchanged).

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Local, Utc};

use super::counts::{busiest_hour, plural, Counts, Unusual, UnusualKind, MAX_AN_HOUR};
use super::{GuardDenial, Happening, HappeningKind, IterationLine, SalvageKept};
use crate::breaker::{BreakerKind, BreakerState};
use crate::event::{Event, EventKind, SessionState, SwitchAction};
use crate::respawn;

#[path = "ledger/dialogs.rs"]
mod dialogs;
#[path = "ledger/salvage.rs"]
mod salvage;

use dialogs::{count_ask, settle, Asked};
use salvage::{is_cycle, salvage_line, Snapshot};

/// A time of day as the digest says it (local).
pub(crate) fn hhmm(t: DateTime<Utc>) -> String {
    t.with_timezone(&Local).format("%H:%M").to_string()
}

/// A duration as the digest says it: `45s`, `30m`, `2h 05m`.
pub(super) fn hm(secs: i64) -> String {
    let (h, m) = (secs / 3600, (secs % 3600) / 60);
    match (h, m) {
        (0, 0) if secs > 0 => format!("{secs}s"),
        (0, m) => format!("{m}m"),
        (h, m) => format!("{h}h {m:02}m"),
    }
}

/// What one session's events say.
#[derive(Debug, Default)]
pub(super) struct Ledger {
    pub counts: Counts,
    pub working_secs: i64,
    pub idle_secs: i64,
    pub paused_secs: i64,
    /// Each exit in the range: `code 3`, `SIGKILL`.
    pub exits: Vec<String>,
    pub denials: Vec<GuardDenial>,
    pub switches: Vec<String>,
    pub iterations: Vec<IterationLine>,
    pub tasks_done: Vec<String>,
    pub loop_cost: f64,
    /// The distinct snapshots salvage kept, with their lines.
    pub salvaged: Vec<(SalvageKept, String)>,
    pub happened: Vec<Happening>,
    pub unusual: Vec<Unusual>,
    /// The last exit came after a stop was asked for (the user's, or Nightshift's own end).
    pub stopped: bool,
    /// A usage-limit resume failed in the range, and the limit is not over yet.
    pub resume_failed: bool,
    /// The dialog still unanswered at the end: its text, if it could be read.
    pub waiting: Option<Option<String>>,
    /// Breakers open at the end, by the events.
    pub breakers_open: Vec<BreakerKind>,
    /// The journal has breaker events at all (a journal without them says nothing of which is open).
    pub breakers_seen: bool,
    /// When each suspend in the range began (the night counts one shared by sessions once).
    pub suspends: Vec<DateTime<Utc>>,
}

/// A line of what happened, before it is collapsed: `key` says it without times (the same key is
/// the same line), `once` with them.
struct Line {
    kind: HappeningKind,
    key: String,
    once: String,
    count: u32,
    first: DateTime<Utc>,
    last: DateTime<Utc>,
}

#[derive(Default)]
struct Lines(Vec<Line>);

impl Lines {
    fn note(&mut self, kind: HappeningKind, key: String, once: String, at: DateTime<Utc>) {
        match self.0.iter_mut().find(|l| l.kind == kind && l.key == key) {
            Some(line) => {
                line.count += 1;
                line.first = line.first.min(at);
                line.last = line.last.max(at);
            }
            None => self.0.push(Line { kind, key, once, count: 1, first: at, last: at }),
        }
    }

    fn finish(self) -> Vec<Happening> {
        let mut out: Vec<Happening> = self
            .0
            .into_iter()
            .map(|l| {
                let text = if l.count == 1 {
                    l.once
                } else {
                    format!("{}: {} times, {} to {}", l.key, l.count, hhmm(l.first), hhmm(l.last))
                };
                Happening { kind: l.kind, text, count: l.count, first: l.first, last: l.last }
            })
            .collect();
        out.sort_by_key(|h| h.first);
        out
    }
}

impl Ledger {
    /// Reads the events of session `id` (all of them, oldest first: what came before `from` sets
    /// the scene, only what is in `[from, to)` is counted). `live`: a Nightshift process runs the
    /// session, so the state in force at the end lasts to `to`. `trees`: each salvage commit's
    /// tree, to see a snapshot that repeats the one before (journals written before salvage
    /// learnt to skip them).
    pub fn read(
        id: &str,
        events: &[Event],
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        live: bool,
        trees: &HashMap<String, String>,
    ) -> Self {
        let mut l = Ledger::default();
        let mut lines = Lines::default();
        let mut time: [i64; 3] = [0; 3];
        let mut close = |state: SessionState, start: DateTime<Utc>, end: DateTime<Utc>| {
            let bucket = match state {
                SessionState::Working | SessionState::Respawning => 0,
                SessionState::Idle => 1,
                SessionState::LimitPaused | SessionState::BreakerOpen | SessionState::WaitingInput => 2,
                _ => return,
            };
            let (a, b) = (start.max(from), end.min(to));
            if b > a {
                time[bucket] += (b - a).num_seconds();
            }
        };
        let mut current: Option<(SessionState, DateTime<Utc>)> = None;
        let mut last_event_at = from;
        let mut stop_asked = false;
        let mut asked: Option<Asked> = None;
        let mut limit_since: Option<DateTime<Utc>> = None;
        // By the breaker's name (its kind has no order of its own).
        let mut breakers: BTreeMap<&str, (BreakerKind, DateTime<Utc>, String)> = BTreeMap::new();
        let mut opened: BTreeMap<&str, Vec<DateTime<Utc>>> = BTreeMap::new();
        let (mut handoffs, mut restarts) = (Vec::new(), Vec::new());
        let mut snapshots: Vec<Snapshot> = Vec::new();
        let (mut outages, mut not_sent_seen) = (0, false);
        // A stretch the pace parked: since when, and why.
        let mut parked: Option<(DateTime<Utc>, String)> = None;

        for ev in events {
            if ev.ts >= to {
                break;
            }
            last_event_at = last_event_at.max(ev.ts);
            let in_range = ev.ts >= from;
            let c = &mut l.counts;
            match &ev.kind {
                EventKind::State { state, exit_code, signal, dialog, .. } => {
                    if let Some((prev, start)) = current.take() {
                        close(prev, start, ev.ts);
                    }
                    // A dialog left without an answer's event: its answer is the session going on.
                    if let Some(a) = asked.as_mut().filter(|a| a.left.is_none() && *state != SessionState::WaitingInput)
                    {
                        a.left = Some((ev.ts, state.is_final()));
                    }
                    match state {
                        SessionState::WaitingInput => {
                            if let Some(a) = asked.take() {
                                let (at, exited) = a.left.unwrap_or((ev.ts, false));
                                settle(a, None, at, exited, from, c, &mut lines);
                            }
                            let (kind, text) =
                                (dialog.as_ref().map(|d| d.kind), dialog.as_ref().and_then(|d| d.text.clone()));
                            if in_range {
                                count_ask(kind, c);
                            }
                            asked = Some(Asked { kind, text, at: ev.ts, left: None });
                        }
                        SessionState::Exited if in_range => {
                            c.exits += 1;
                            l.exits.push(match (signal, exit_code) {
                                (Some(sig), _) => sig.clone(),
                                (None, Some(code)) => format!("code {code}"),
                                _ => "unknown".to_string(),
                            });
                            l.stopped = stop_asked;
                        }
                        SessionState::Running => stop_asked = false,
                        _ => {}
                    }
                    current = Some((*state, ev.ts));
                }
                EventKind::DialogAnswered { dialog, text, by, waited_secs, .. } => {
                    let a = match asked.take() {
                        Some(mut a) => {
                            // Its kind known only now: counted as asked now.
                            if a.kind.is_none() && a.at >= from {
                                count_ask(Some(*dialog), c);
                            }
                            a.kind = a.kind.or(Some(*dialog));
                            a.text = a.text.or_else(|| text.clone());
                            a
                        }
                        // One not seen asked (a second dialog under the same state): asked too.
                        None => {
                            let at = ev.ts - chrono::Duration::seconds(i64::try_from(*waited_secs).unwrap_or(0));
                            if in_range {
                                count_ask(Some(*dialog), c);
                            }
                            Asked { kind: Some(*dialog), text: text.clone(), at, left: None }
                        }
                    };
                    settle(a, Some(*by), ev.ts, false, from, c, &mut lines);
                }
                EventKind::StopRequested { .. } => stop_asked = true,
                EventKind::Respawn { action: respawn::Action::CycleStarted, .. } if in_range => c.respawn_cycles += 1,
                EventKind::Respawn { action: respawn::Action::Restart, .. } if in_range => {
                    c.restarts += 1;
                    restarts.push(ev.ts);
                }
                EventKind::Adopted { by, down_secs, why, .. } if in_range => {
                    c.restores += 1;
                    c.adoptions += 1;
                    let down = hm(i64::try_from(*down_secs).unwrap_or(i64::MAX));
                    let once = format!("taken over by {by} at {} after {down}: {why}", hhmm(ev.ts));
                    lines.note(HappeningKind::Adopted, "taken over when its Nightshift died".into(), once, ev.ts);
                }
                EventKind::Restored { reason, down_secs } if in_range => {
                    c.restores += 1;
                    let down = hm(i64::try_from(*down_secs).unwrap_or(i64::MAX));
                    let once = format!("restored at {} after {down} without Nightshift ({reason})", hhmm(ev.ts));
                    lines.note(HappeningKind::Restored, "restored after Nightshift ended".into(), once, ev.ts);
                }
                EventKind::LimitDetected { source, .. } => {
                    // A restored session paused again on the limit it waited for is the same one.
                    if in_range && *source != crate::limits::Source::Journal {
                        c.limits += 1;
                    }
                    limit_since.get_or_insert(ev.ts);
                }
                EventKind::ResumeSent { .. } if in_range => c.resumes += 1,
                EventKind::AutomatedInput { what, .. } if in_range => {
                    c.automated += 1;
                    let what = what.as_str();
                    let key = format!("sent an automated {what}, marked as not the user's");
                    let once = format!("sent an automated {what} at {}, marked as not the user's", hhmm(ev.ts));
                    lines.note(HappeningKind::Automated, key, once, ev.ts);
                }
                EventKind::LimitFailed { .. } if in_range => l.resume_failed = true,
                EventKind::LimitCleared { .. } => {
                    if let Some(since) = limit_since.take().filter(|_| in_range) {
                        let failed = if l.resume_failed { " after a resume failed" } else { "" };
                        let key = format!("hit a usage limit and worked on{failed}");
                        let once =
                            format!("hit a usage limit at {}, working again{failed} at {}", hhmm(since), hhmm(ev.ts));
                        lines.note(HappeningKind::LimitOver, key, once, since);
                    }
                    l.resume_failed = false;
                }
                EventKind::Breaker { breaker, state, reason } => {
                    l.breakers_seen = true;
                    match state {
                        BreakerState::Open => {
                            if in_range {
                                c.breakers_opened += 1;
                                opened.entry(breaker.as_str()).or_default().push(ev.ts);
                            }
                            breakers.insert(breaker.as_str(), (*breaker, ev.ts, reason.clone()));
                        }
                        BreakerState::HalfOpen => {}
                        BreakerState::Closed => {
                            if let Some((_, since, why)) = breakers.remove(breaker.as_str()).filter(|_| in_range) {
                                c.breakers_closed += 1;
                                let name = breaker.as_str();
                                let key = format!("the {name} breaker opened and closed again");
                                let once = format!(
                                    "the {name} breaker opened at {} ({why}), closed at {}",
                                    hhmm(since),
                                    hhmm(ev.ts)
                                );
                                lines.note(HappeningKind::BreakerClosed, key, once, since);
                            }
                        }
                    }
                }
                EventKind::Contract { contract } if in_range => {
                    if let crate::contract::Kind::Terminal(t) = &contract.kind {
                        if let Some(why) = &t.unsandboxed {
                            let once = format!("started at {} without its sandbox: {why}", hhmm(ev.ts));
                            lines.note(
                                HappeningKind::Unsandboxed,
                                format!("ran without its sandbox: {why}"),
                                once,
                                ev.ts,
                            );
                        }
                    }
                }
                EventKind::SandboxCommand { command, blocked, .. } if in_range => {
                    c.sandbox_commands += 1;
                    if *blocked {
                        c.sandbox_blocked += 1;
                        let once = format!("the sandbox refused a command at {}: {command}", hhmm(ev.ts));
                        lines.note(
                            HappeningKind::SandboxBlocked,
                            format!("the sandbox refused {command}"),
                            once,
                            ev.ts,
                        );
                    }
                }
                EventKind::NetRefused { host, command, .. } if in_range => {
                    c.net_refused += 1;
                    let by = command.as_ref().map(|c| format!(", by {c}")).unwrap_or_default();
                    let once = format!("the fence refused {host} at {}{by}", hhmm(ev.ts));
                    lines.note(HappeningKind::NetRefused, format!("the fence refused {host}"), once, ev.ts);
                }
                EventKind::GuardDenied { what, command, .. } if in_range => {
                    c.guard_denials += 1;
                    l.denials.push(GuardDenial { at: ev.ts, what: what.clone(), command: command.clone() });
                }
                EventKind::AccountSwitch { action, reason, .. } if in_range && *action != SwitchAction::Due => {
                    let at = hhmm(ev.ts);
                    let (key, once) = if *action == SwitchAction::Switched {
                        c.account_switches += 1;
                        (format!("switched accounts: {reason}"), format!("switched accounts at {at}: {reason}"))
                    } else {
                        (
                            format!("held an account switch: {reason}"),
                            format!("held an account switch at {at}: {reason}"),
                        )
                    };
                    l.switches.push(once.clone());
                    lines.note(HappeningKind::AccountSwitch, key, once, ev.ts);
                }
                EventKind::HandoffAsked { times: 1 } if in_range => {
                    c.handoffs += 1;
                    handoffs.push(ev.ts);
                }
                EventKind::Handoff { .. } if in_range => c.handoffs_written += 1,
                EventKind::AgentSwitch { action, from, to, reason, .. } if in_range && *action != SwitchAction::Due => {
                    let at = hhmm(ev.ts);
                    let (key, once) = if *action == SwitchAction::Switched {
                        c.agent_switches += 1;
                        (
                            format!("the work moved from {from} to {to}"),
                            format!("the work moved from {from} to {to} at {at}: {reason}"),
                        )
                    } else {
                        (
                            format!("the work stayed with {from}: {reason}"),
                            format!("the work stayed with {from} at {at}: {reason}"),
                        )
                    };
                    l.switches.push(once.clone());
                    lines.note(HappeningKind::AccountSwitch, key, once, ev.ts);
                }
                EventKind::HandoffBuilt { why, .. } if in_range => {
                    let once = format!("Nightshift built the handoff at {}: {why}", hhmm(ev.ts));
                    lines.note(
                        HappeningKind::AccountSwitch,
                        "Nightshift built the handoff for a move".into(),
                        once,
                        ev.ts,
                    );
                }
                EventKind::HandoffChecked { received: false } if in_range => {
                    let once = format!("the first turn after the move at {} did not carry the handoff", hhmm(ev.ts));
                    let key = "a first turn after a move did not carry the handoff".to_string();
                    lines.note(HappeningKind::AccountSwitch, key, once, ev.ts);
                }
                EventKind::HandoffGiven { .. } if in_range => c.handoffs_given += 1,
                EventKind::HandoffMissing { times } if in_range => {
                    c.handoffs_missing += 1;
                    let once = format!("the agent wrote no handoff at {}, asked {times} times", hhmm(ev.ts));
                    lines.note(
                        HappeningKind::HandoffMissing,
                        "the agent wrote no handoff when asked".into(),
                        once,
                        ev.ts,
                    );
                }
                EventKind::ContextHigh { pct, threshold } if in_range => {
                    c.context_high += 1;
                    let key = "a fresh conversation started past the handoff threshold".to_string();
                    let once = format!(
                        "a fresh conversation started at {} with its context at {}%, past the handoff threshold of {}%",
                        hhmm(ev.ts),
                        pct.round(),
                        threshold.round()
                    );
                    lines.note(HappeningKind::ContextHigh, key, once, ev.ts);
                }
                EventKind::PushSent { .. } if in_range => c.pushes_sent += 1,
                EventKind::PushNotSent { .. } => {
                    not_sent_seen = true;
                    if in_range {
                        c.pushes_failed += 1;
                    }
                }
                EventKind::PushFailed { target, reason } if in_range => {
                    outages += 1;
                    let key = format!("push notifications to {target} failed: {reason}");
                    let once = format!("push notifications to {target} failed at {}: {reason}", hhmm(ev.ts));
                    lines.note(HappeningKind::PushFailed, key, once, ev.ts);
                }
                EventKind::RemoteAction { action, applied, refused, .. } if in_range => {
                    let (key, once) = if *applied {
                        c.phone_applied += 1;
                        (format!("from the phone: {action}"), format!("from the phone at {}: {action}", hhmm(ev.ts)))
                    } else {
                        c.phone_refused += 1;
                        let why = refused.as_deref().unwrap_or("it could not be applied");
                        (
                            format!("from the phone, refused: {action} ({why})"),
                            format!("from the phone at {}, refused: {action} ({why})", hhmm(ev.ts)),
                        )
                    };
                    lines.note(HappeningKind::Phone, key, once, ev.ts);
                }
                EventKind::PhoneListen { working: false, reason } if in_range => {
                    let key = format!("the phone's answers could not be heard: {reason}");
                    let once = format!("the phone's answers could not be heard from {}: {reason}", hhmm(ev.ts));
                    lines.note(HappeningKind::PhoneListen, key, once, ev.ts);
                }
                EventKind::Suspended { from: slept, to: woke } if in_range => {
                    c.suspends += 1;
                    l.suspends.push(*slept);
                    let once = format!("the machine slept from {} to {}", hhmm(*slept), hhmm(*woke));
                    lines.note(HappeningKind::Slept, "the machine slept".into(), once, *slept);
                }
                EventKind::Sleep { action: crate::event::SleepAction::Woken, at, .. } if in_range => {
                    c.wake_alarms += 1;
                    let once = format!("slept through a long wait; the wake alarm went off at {}", hhmm(*at));
                    lines.note(HappeningKind::Slept, "the wake alarm went off".into(), once, ev.ts);
                }
                EventKind::Sleep { action: crate::event::SleepAction::Refused, reason, .. } if in_range => {
                    let key = format!("no wake alarm could be set: {reason}");
                    let once = format!("no wake alarm could be set, so waits were held awake: {reason}");
                    lines.note(HappeningKind::Slept, key, once, ev.ts);
                }
                EventKind::JournalGap { since, lost, error } if in_range => {
                    c.events_lost += lost;
                    let key = "events were not written to the journal: these figures may miss them".to_string();
                    let once = format!(
                        "{} from {} were not written to the journal ({error}): these figures may miss them",
                        plural(*lost, "event", "events"),
                        hhmm(*since)
                    );
                    lines.note(HappeningKind::JournalGap, key, once, *since);
                }
                EventKind::Salvaged { repo, reference, commit, files, bytes, reason, preexisting, users, .. } => {
                    let tree = trees.get(commit).cloned();
                    let same = snapshots
                        .iter_mut()
                        .rev()
                        .find(|s| s.kept.repo == *repo)
                        .filter(|s| tree.is_some() && s.tree == tree);
                    match same {
                        Some(s) => {
                            if in_range {
                                c.salvages_unchanged += 1;
                            }
                            s.kept.unchanged += 1;
                            s.kept.last = ev.ts;
                            s.by_cycles &= is_cycle(reason);
                        }
                        None => {
                            if in_range {
                                c.salvages += 1;
                            }
                            let kept = SalvageKept {
                                repo: repo.clone(),
                                reference: reference.clone(),
                                files: *files,
                                bytes: *bytes,
                                at: ev.ts,
                                last: ev.ts,
                                unchanged: 0,
                                preexisting: preexisting.clone(),
                                users: users.clone(),
                            };
                            snapshots.push(Snapshot { kept, tree, by_cycles: true });
                        }
                    }
                }
                EventKind::SalvageSkipped { repo, users, .. } if in_range && !users.is_empty() => {
                    let names = users.join(", ");
                    let key = format!("your own files in {repo} were left as they are: {names}");
                    let once = format!(
                        "your own files in {repo}, there before the session began and untouched since, were left as \
                         they are (not the agent's work) at {}: {names}",
                        hhmm(ev.ts)
                    );
                    lines.note(HappeningKind::SalvagePreexisting, key, once, ev.ts);
                }
                EventKind::SalvageUnchanged { reference, reason, .. } => {
                    if in_range {
                        c.salvages_unchanged += 1;
                    }
                    if let Some(s) = snapshots.iter_mut().rev().find(|s| s.kept.reference == *reference) {
                        s.kept.unchanged += 1;
                        s.kept.last = ev.ts;
                        s.by_cycles &= is_cycle(reason);
                    }
                }
                EventKind::IterationEnded {
                    iteration,
                    attempt,
                    task,
                    probe,
                    outcome,
                    cost_usd,
                    tokens,
                    project,
                    ..
                } if in_range => {
                    l.loop_cost += cost_usd.unwrap_or(0.0);
                    if !*probe {
                        c.iterations += 1;
                        l.iterations.push(IterationLine {
                            iteration: *iteration,
                            attempt: *attempt,
                            task: task.clone(),
                            outcome: outcome.clone(),
                            cost_usd: *cost_usd,
                            tokens: *tokens,
                            project: project.clone(),
                        });
                    }
                }
                EventKind::TaskDone { task, .. } if in_range => {
                    c.tasks_done += 1;
                    l.tasks_done.push(task.clone());
                }
                EventKind::Paced { until: Some(_), reason, .. } => {
                    let since = parked.as_ref().map_or(ev.ts, |(since, _)| *since);
                    parked = Some((since, reason.clone()));
                }
                EventKind::Paced { until: None, .. } => {
                    if let Some((since, reason)) = parked.take() {
                        if ev.ts >= from {
                            c.parked += 1;
                            c.parked_minutes += u32::try_from((ev.ts - since.max(from)).num_minutes()).unwrap_or(0);
                            let minutes = (ev.ts - since).num_minutes();
                            let once = format!("parked {}–{} ({minutes} min) {reason}", hhmm(since), hhmm(ev.ts));
                            lines.note(HappeningKind::Parked, once.clone(), once, since);
                        }
                    }
                }
                _ => {}
            }
        }
        if let Some((since, reason)) = parked.filter(|_| live) {
            l.counts.parked += 1;
            // Parked still: to the range's end, as the state in force is.
            let end = to;
            l.counts.parked_minutes += u32::try_from((end - since.max(from)).num_minutes().max(0)).unwrap_or(0);
            let once = format!("parked since {} {reason}", hhmm(since));
            lines.note(HappeningKind::Parked, once.clone(), once, since);
        }
        // The state in force at the end runs to the end of the range, unless no process is behind it.
        if let Some((state, start)) = current {
            let end = if live { to } else { last_event_at.max(start) };
            close(state, start, end);
        }
        [l.working_secs, l.idle_secs, l.paused_secs] = time;
        if let Some(a) = asked {
            match a.left {
                Some((at, exited)) => settle(a, None, at, exited, from, &mut l.counts, &mut lines),
                None => l.waiting = Some(a.text),
            }
        }
        // A journal from before `push_not_sent`: each outage is one push that failed at least.
        if !not_sent_seen {
            l.counts.pushes_failed += outages;
        }
        l.breakers_open = breakers.into_values().map(|(kind, _, _)| kind).collect();

        for s in &snapshots {
            let touched = s.kept.at >= from || s.kept.last >= from;
            if !touched {
                continue;
            }
            let k = &s.kept;
            let theirs = !k.preexisting.is_empty() && k.preexisting.len() >= k.files;
            if theirs {
                // Only files that were there before the session: not the agent's work to look at.
                let names = k.preexisting.join(", ");
                let key =
                    format!("salvage kept files that were there before the session began, untouched since: {names}");
                let once = format!(
                    "salvage kept {names} at {}: there before the session began, untouched since (not the agent's work)",
                    hhmm(k.at)
                );
                lines.note(HappeningKind::SalvagePreexisting, key, once, k.at);
            } else {
                l.salvaged.push((k.clone(), salvage_line(id, s)));
            }
        }
        l.happened = lines.finish();
        l.unusual = unusual(&l.counts, &handoffs, &restarts, &opened);
        l
    }
}

/// The counts worth a look: more than [`MAX_AN_HOUR`] handoffs or restarts within an hour, a
/// breaker that opened more than once.
fn unusual(
    counts: &Counts,
    handoffs: &[DateTime<Utc>],
    restarts: &[DateTime<Utc>],
    opened: &BTreeMap<&str, Vec<DateTime<Utc>>>,
) -> Vec<Unusual> {
    let mut out = Vec::new();
    for (kind, times, total, word, why) in [
        (UnusualKind::Handoffs, handoffs, counts.handoffs, "handoffs", "the agent may be looping"),
        (UnusualKind::Restarts, restarts, counts.restarts, "restarts", "the agent keeps ending"),
    ] {
        if let Some((n, first, last)) = busiest_hour(times).filter(|(n, _, _)| *n > MAX_AN_HOUR) {
            out.push(Unusual {
                kind,
                count: u32::try_from(n).unwrap_or(u32::MAX),
                text: format!(
                    "{total} {word}, {n} of them within an hour ({}–{}): more than {MAX_AN_HOUR} an hour; {why}",
                    hhmm(first),
                    hhmm(last)
                ),
            });
        }
    }
    for (breaker, times) in opened.iter().filter(|(_, t)| t.len() > 1) {
        let at: Vec<String> = times.iter().map(|t| hhmm(*t)).collect();
        out.push(Unusual {
            kind: UnusualKind::BreakerReopened,
            count: u32::try_from(times.len()).unwrap_or(u32::MAX),
            text: format!("the {breaker} breaker opened {} times ({})", times.len(), at.join(", ")),
        });
    }
    out
}

#[cfg(test)]
#[path = "ledger/tests.rs"]
mod tests;
