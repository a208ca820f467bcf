//! One session's events read once, oldest first: what it did in the range, counted; which of the
//! needs it raised were met (a question answered, a breaker closed again, a limit over, the
//! session restored), each as one line of what happened; which are still open at the end; and
//! the same line said again collapsed into one, with its count and first and last time. Pure: the
//! caller brings the events, the range and each salvage commit's tree.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Local, Utc};

use super::counts::{busiest_hour, plural, Counts, Unusual, UnusualKind, MAX_AN_HOUR};
use super::{GuardDenial, Happening, HappeningKind, IterationLine, SalvageKept};
use crate::agent::DialogKind;
use crate::breaker::{BreakerKind, BreakerState};
use crate::event::{Answerer, Event, EventKind, SessionState, SwitchAction};
use crate::respawn;

/// A time of day as the digest says it (local).
pub(crate) fn hhmm(t: DateTime<Utc>) -> String {
    t.with_timezone(&Local).format("%H:%M").to_string()
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

/// A dialog the agent showed, until it is answered or the session moves on.
struct Asked {
    kind: Option<DialogKind>,
    text: Option<String>,
    at: DateTime<Utc>,
    /// When the session left `waiting_input` (the answer's event may come just after).
    left: Option<(DateTime<Utc>, bool)>,
}

/// A snapshot being followed through the later salvages that found it unchanged.
struct Snapshot {
    kept: SalvageKept,
    tree: Option<String>,
    /// Every later salvage was a respawn cycle's.
    by_cycles: bool,
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

/// What the agent asked, for people, with and without the question itself.
fn asked_what(kind: Option<DialogKind>, text: Option<&str>) -> String {
    match (kind, text) {
        (Some(DialogKind::Question) | None, Some(t)) => format!("asked \"{t}\""),
        (Some(DialogKind::Question), None) => "asked a question".into(),
        (None, None) => "waited for the user".into(),
        (Some(DialogKind::Permission), Some(t)) => format!("asked permission: \"{t}\""),
        (Some(DialogKind::Permission), None) => "asked permission for a tool call".into(),
        (Some(DialogKind::Trust), _) => "asked whether to trust the folder".into(),
        (Some(DialogKind::Confirmation), Some(t)) => format!("asked to confirm \"{t}\""),
        (Some(DialogKind::Confirmation), None) => "asked for a confirmation".into(),
        (Some(DialogKind::Menu), Some(t)) => format!("showed a menu: \"{t}\""),
        (Some(DialogKind::Menu), None) => "showed a menu".into(),
    }
}

fn is_cycle(reason: &str) -> bool {
    reason.starts_with("before respawn cycle ")
}

/// The salvage line of one snapshot of session `id`.
fn salvage_line(id: &str, s: &Snapshot) -> String {
    let k = &s.kept;
    let n = k.reference.rsplit('/').next().unwrap_or("1");
    let mut kept = if k.unchanged == 0 {
        format!("kept at {}", hhmm(k.at))
    } else {
        let (through, one, many) =
            if s.by_cycles { ("through", "cycle", "cycles") } else { ("at", "salvage", "salvages") };
        let later = if k.unchanged == 1 { one } else { many };
        format!("kept since {}, unchanged {through} {} later {later}", hhmm(k.at), k.unchanged)
    };
    if !k.preexisting.is_empty() {
        let shown: Vec<&str> = k.preexisting.iter().take(3).map(String::as_str).collect();
        let more = if k.preexisting.len() > 3 { ", …" } else { "" };
        let were = if k.preexisting.len() == 1 { "was" } else { "were" };
        kept.push_str(&format!(
            "; {} of them {were} there before the session began, untouched since: {}{more}",
            k.preexisting.len(),
            shown.join(", ")
        ));
    }
    format!(
        "work kept by salvage: {} ({}) of {}, {kept}; look: nightshift salvage show {id}/{n}",
        plural(k.files as u64, "uncommitted file", "uncommitted files"),
        crate::units::bytes(k.bytes),
        k.repo
    )
}

/// A dialog over: answered (by whom, when known) at `at`, or ended by the agent's exit.
fn settle(
    a: Asked,
    by: Option<Answerer>,
    at: DateTime<Utc>,
    exited: bool,
    from: DateTime<Utc>,
    c: &mut Counts,
    lines: &mut Lines,
) {
    if at < from {
        return;
    }
    let what = asked_what(a.kind, a.text.as_deref());
    if exited || by == Some(Answerer::Nobody) {
        c.dialogs_unanswered += 1;
        let (key, once) = if exited {
            let key = format!("{what}, unanswered when the agent exited");
            (key, format!("{what} at {}, unanswered when the agent exited at {}", hhmm(a.at), hhmm(at)))
        } else {
            let key = format!("{what}, gone with nothing typed");
            (key, format!("{what} at {}, gone at {} with nothing typed", hhmm(a.at), hhmm(at)))
        };
        lines.note(HappeningKind::Unanswered, key, once, a.at);
        return;
    }
    match a.kind {
        Some(DialogKind::Question) => c.questions_answered += 1,
        Some(DialogKind::Permission) => c.permissions_answered += 1,
        _ => {}
    }
    if let Some(by) = by {
        c.answered_by.add(by);
    }
    // Nightshift's routine answers are counted, not told.
    let routine =
        by == Some(Answerer::Nightshift) && !matches!(a.kind, Some(DialogKind::Question | DialogKind::Permission));
    if !routine {
        let who = by.map(|b| format!(" {}", b.as_str())).unwrap_or_default();
        let key = format!("{what}, answered{who}");
        let once = format!("{what} at {}, answered{who} at {}", hhmm(a.at), hhmm(at));
        lines.note(HappeningKind::Answered, key, once, a.at);
    }
}

fn count_ask(kind: Option<DialogKind>, c: &mut Counts) {
    match kind {
        Some(DialogKind::Question) => c.questions += 1,
        Some(DialogKind::Permission) => c.permissions += 1,
        _ => {}
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
                EventKind::DialogAnswered { dialog, text, by, waited_secs } => {
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
                EventKind::Restored { reason, down_secs } if in_range => {
                    c.restores += 1;
                    let down = super::render::hm(i64::try_from(*down_secs).unwrap_or(i64::MAX));
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
                EventKind::Suspended { from: slept, to: woke } if in_range => {
                    c.suspends += 1;
                    l.suspends.push(*slept);
                    let once = format!("the machine slept from {} to {}", hhmm(*slept), hhmm(*woke));
                    lines.note(HappeningKind::Slept, "the machine slept".into(), once, *slept);
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
                EventKind::Salvaged { repo, reference, commit, files, bytes, reason, preexisting } => {
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
                            };
                            snapshots.push(Snapshot { kept, tree, by_cycles: true });
                        }
                    }
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
                _ => {}
            }
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
mod tests {
    use super::super::AnsweredBy;
    use super::*;
    use crate::agent::Dialog;
    use chrono::TimeZone;

    fn at(h: u32, m: u32) -> DateTime<Utc> {
        let (day, h) = if h >= 12 { (30, h) } else { (31, h) };
        Utc.with_ymd_and_hms(2026, 12, day, h, m, 0).unwrap()
    }

    fn ev(t: DateTime<Utc>, kind: EventKind) -> Event {
        Event { ts: t, session: String::from("s1").into(), kind }
    }

    fn state(t: DateTime<Utc>, s: SessionState) -> Event {
        ev(t, EventKind::state(s, "because"))
    }

    fn asking(t: DateTime<Utc>, kind: DialogKind, text: &str) -> Event {
        let mut e = EventKind::state(SessionState::WaitingInput, "a dialog");
        if let EventKind::State { dialog, .. } = &mut e {
            *dialog = Some(Dialog { kind, text: Some(text.into()) });
        }
        ev(t, e)
    }

    fn answered(t: DateTime<Utc>, kind: DialogKind, by: Answerer, waited_secs: u64) -> Event {
        ev(t, EventKind::DialogAnswered { dialog: kind, text: None, by, waited_secs })
    }

    fn read(events: &[Event]) -> Ledger {
        Ledger::read("s1", events, at(22, 0), at(8, 0), true, &HashMap::new())
    }

    fn texts(l: &Ledger) -> Vec<&str> {
        l.happened.iter().map(|h| h.text.as_str()).collect()
    }

    #[test]
    fn a_dialog_answered_is_met_whichever_comes_first_the_answer_or_the_state_after_it() {
        let answer_first = [
            state(at(22, 0), SessionState::Working),
            asking(at(2, 10), DialogKind::Question, "Which database?"),
            answered(at(2, 11), DialogKind::Question, Answerer::Phone, 60),
            state(at(2, 11), SessionState::Working),
        ];
        let state_first = [
            state(at(22, 0), SessionState::Working),
            asking(at(2, 10), DialogKind::Question, "Which database?"),
            state(at(2, 11), SessionState::Working),
            answered(at(2, 11), DialogKind::Question, Answerer::Phone, 60),
        ];
        for events in [&answer_first[..], &state_first[..]] {
            let l = read(events);
            assert_eq!(l.waiting, None);
            assert_eq!((l.counts.questions, l.counts.questions_answered, l.counts.answered_by.phone), (1, 1, 1));
            assert_eq!(
                texts(&l),
                [format!(
                    "asked \"Which database?\" at {}, answered from the phone at {}",
                    hhmm(at(2, 10)),
                    hhmm(at(2, 11))
                )]
            );
        }
        // A journal from before `dialog_answered`: the session going on is the answer, by someone.
        let old =
            read(&answer_first.iter().filter(|e| e.kind.name() != "dialog_answered").cloned().collect::<Vec<_>>());
        assert_eq!((old.counts.questions_answered, old.counts.answered_by.phone), (1, 0));
        assert_eq!(
            texts(&old),
            [format!("asked \"Which database?\" at {}, answered at {}", hhmm(at(2, 10)), hhmm(at(2, 11)))]
        );
        // Still on screen at the end: waiting, and no line.
        let open = read(&answer_first[..2]);
        assert_eq!(open.waiting, Some(Some("Which database?".to_string())));
        assert!(open.happened.is_empty());
    }

    #[test]
    fn routine_answers_are_counted_not_told_and_an_exit_leaves_a_dialog_unanswered() {
        let l = read(&[
            state(at(22, 0), SessionState::Working),
            asking(at(23, 0), DialogKind::Trust, "Trust this folder?"),
            answered(at(23, 0), DialogKind::Trust, Answerer::Nightshift, 0),
            // The limit menu, answered under `limit_paused`: never seen asked as a state.
            answered(at(1, 0), DialogKind::Menu, Answerer::Nightshift, 1),
            asking(at(3, 0), DialogKind::Permission, "Allow git push?"),
            state(at(3, 5), SessionState::Exited),
        ]);
        assert_eq!(l.counts.answered_by.nightshift, 2);
        assert_eq!((l.counts.permissions, l.counts.permissions_answered, l.counts.dialogs_unanswered), (1, 0, 1));
        assert_eq!(l.waiting, None);
        assert_eq!(
            texts(&l),
            [format!(
                "asked permission: \"Allow git push?\" at {}, unanswered when the agent exited at {}",
                hhmm(at(3, 0)),
                hhmm(at(3, 5))
            )]
        );
    }

    #[test]
    fn a_dialog_gone_with_nothing_typed_is_no_answer_and_no_need() {
        let l = read(&[
            state(at(22, 0), SessionState::Working),
            asking(at(2, 10), DialogKind::Question, "Shall I go on?"),
            answered(at(2, 40), DialogKind::Question, Answerer::Nobody, 1800),
            state(at(2, 40), SessionState::Idle),
        ]);
        assert_eq!(l.waiting, None);
        assert_eq!((l.counts.questions, l.counts.questions_answered, l.counts.dialogs_unanswered), (1, 0, 1));
        assert_eq!(l.counts.answered_by, AnsweredBy::default());
        assert_eq!(
            texts(&l),
            [format!(
                "asked \"Shall I go on?\" at {}, gone at {} with nothing typed",
                hhmm(at(2, 10)),
                hhmm(at(2, 40))
            )]
        );
    }

    #[test]
    fn the_same_line_again_is_one_line_with_its_count_and_first_and_last_time() {
        let mut events = vec![state(at(22, 0), SessionState::Working)];
        for h in [1, 2, 3] {
            events.push(asking(at(h, 0), DialogKind::Question, "Go on?"));
            events.push(answered(at(h, 1), DialogKind::Question, Answerer::Terminal, 60));
            events.push(state(at(h, 1), SessionState::Working));
        }
        let l = read(&events);
        assert_eq!(l.happened.len(), 1);
        let h = &l.happened[0];
        assert_eq!((h.count, h.first, h.last), (3, at(1, 0), at(3, 0)));
        assert_eq!(
            h.text,
            format!("asked \"Go on?\", answered at the terminal: 3 times, {} to {}", hhmm(at(1, 0)), hhmm(at(3, 0)))
        );
        assert_eq!(l.counts.questions_answered, 3);
    }

    #[test]
    fn a_breaker_closed_after_a_half_open_back_off_is_met_and_one_never_opened_is_not_counted() {
        let breaker = |t, state| {
            ev(t, EventKind::Breaker { breaker: BreakerKind::CrashLoop, state, reason: "5 lives in a row".into() })
        };
        let l = read(&[
            breaker(at(1, 0), BreakerState::Open),
            breaker(at(1, 30), BreakerState::HalfOpen),
            breaker(at(1, 31), BreakerState::Closed),
            // Closed from half-open without opening: nothing met.
            ev(
                at(2, 0),
                EventKind::Breaker {
                    breaker: BreakerKind::NoProgress,
                    state: BreakerState::HalfOpen,
                    reason: "2 cycles".into(),
                },
            ),
            ev(
                at(2, 30),
                EventKind::Breaker {
                    breaker: BreakerKind::NoProgress,
                    state: BreakerState::Closed,
                    reason: "progress".into(),
                },
            ),
            breaker(at(4, 0), BreakerState::Open),
        ]);
        assert_eq!((l.counts.breakers_opened, l.counts.breakers_closed), (2, 1));
        assert_eq!(l.breakers_open, [BreakerKind::CrashLoop], "open again at the end");
        assert_eq!(
            texts(&l),
            [format!(
                "the crash-loop breaker opened at {} (5 lives in a row), closed at {}",
                hhmm(at(1, 0)),
                hhmm(at(1, 31))
            )]
        );
        assert_eq!(l.unusual.len(), 1);
        assert_eq!((l.unusual[0].kind, l.unusual[0].count), (UnusualKind::BreakerReopened, 2));
    }

    #[test]
    fn a_limit_that_ended_and_a_resume_that_failed_then_worked() {
        let limit = |t| {
            ev(
                t,
                EventKind::LimitDetected {
                    resets_at: None,
                    source: crate::limits::Source::Text,
                    kind: crate::limits::LimitKind::Unspecified,
                    line: "limit".into(),
                },
            )
        };
        let l = read(&[limit(at(1, 0)), ev(at(5, 0), EventKind::LimitFailed { reason: "no".into() })]);
        assert!(l.resume_failed);
        let l = read(&[
            limit(at(1, 0)),
            ev(at(5, 0), EventKind::LimitFailed { reason: "no".into() }),
            ev(at(6, 0), EventKind::LimitCleared { reason: "working".into() }),
        ]);
        assert!(!l.resume_failed, "met: the agent works again");
        assert_eq!(
            texts(&l),
            [format!(
                "hit a usage limit at {}, working again after a resume failed at {}",
                hhmm(at(1, 0)),
                hhmm(at(6, 0))
            )]
        );
    }

    #[test]
    fn pushes_are_counted_per_message_and_an_old_journals_outage_as_one() {
        use crate::notice::Kind;
        let sent = |t| ev(t, EventKind::PushSent { target: "ntfy".into(), kind: Kind::Question });
        let not_sent = |t| ev(t, EventKind::PushNotSent { target: "ntfy".into(), kind: Kind::Finished });
        let outage =
            |t| ev(t, EventKind::PushFailed { target: "ntfy".into(), reason: "the server answered 503".into() });
        let l = read(&[sent(at(1, 0)), outage(at(2, 0)), not_sent(at(2, 0)), not_sent(at(3, 0)), sent(at(4, 0))]);
        assert_eq!((l.counts.pushes_sent, l.counts.pushes_failed), (2, 2));
        assert_eq!(
            texts(&l),
            [format!("push notifications to ntfy failed at {}: the server answered 503", hhmm(at(2, 0)))]
        );
        let old = read(&[outage(at(2, 0)), outage(at(4, 0))]);
        assert_eq!(old.counts.pushes_failed, 2);
    }

    #[test]
    fn only_what_is_in_the_range_is_counted_and_restarts_in_a_burst_are_unusual() {
        let restart = |t| {
            ev(t, EventKind::Respawn { action: respawn::Action::Restart, cycle: None, reason: None, cost_usd: None })
        };
        let mut events = vec![restart(at(21, 0)), restart(at(21, 10))];
        events.extend((0..4).map(|i| restart(at(3, 10 * i))));
        events.push(restart(at(9, 0)));
        let l = read(&events);
        assert_eq!(l.counts.restarts, 4, "before and after the range are left out");
        assert_eq!(l.unusual.len(), 1);
        assert_eq!((l.unusual[0].kind, l.unusual[0].count), (UnusualKind::Restarts, 4));
        assert!(l.unusual[0].text.starts_with("4 restarts, 4 of them within an hour"), "{}", l.unusual[0].text);
        let calm = read(&events[..5]);
        assert!(calm.unusual.is_empty(), "3 in an hour is not unusual");
    }

    #[test]
    fn a_snapshot_followed_through_unchanged_salvages_and_one_of_the_users_files_alone() {
        let salvaged = |t, n: u32, commit: &str, preexisting: Vec<String>| {
            ev(
                t,
                EventKind::Salvaged {
                    repo: "/r".into(),
                    reference: format!("refs/nightshift/salvage/s1/{n}"),
                    commit: commit.into(),
                    files: 1,
                    bytes: 10,
                    reason: "the agent exited with code 1".into(),
                    preexisting,
                },
            )
        };
        let unchanged = |t, n: u32, reason: &str| {
            ev(
                t,
                EventKind::SalvageUnchanged {
                    repo: "/r".into(),
                    reference: format!("refs/nightshift/salvage/s1/{n}"),
                    reason: reason.into(),
                },
            )
        };
        let cycle = "before respawn cycle 2's /clear";
        let l =
            read(&[salvaged(at(1, 0), 1, "c1", vec![]), unchanged(at(2, 0), 1, cycle), unchanged(at(3, 0), 1, cycle)]);
        assert_eq!((l.counts.salvages, l.counts.salvages_unchanged), (1, 2));
        assert_eq!(l.salvaged.len(), 1);
        assert_eq!((l.salvaged[0].0.unchanged, l.salvaged[0].0.last), (2, at(3, 0)));
        assert!(l.salvaged[0].1.contains(", unchanged through 2 later cycles;"), "{}", l.salvaged[0].1);
        let stop = "stopped (the app)";
        let l =
            read(&[salvaged(at(1, 0), 1, "c1", vec![]), unchanged(at(2, 0), 1, cycle), unchanged(at(3, 0), 1, stop)]);
        assert!(l.salvaged[0].1.contains(", unchanged at 2 later salvages;"), "{}", l.salvaged[0].1);
        // Two commits of one tree (a journal from before salvage skipped them): one snapshot.
        let trees = HashMap::from([("c1".to_string(), "t".to_string()), ("c2".to_string(), "t".to_string())]);
        let events = [salvaged(at(1, 0), 1, "c1", vec![]), salvaged(at(2, 0), 2, "c2", vec![])];
        let l = Ledger::read("s1", &events, at(22, 0), at(8, 0), true, &trees);
        assert_eq!((l.counts.salvages, l.counts.salvages_unchanged, l.salvaged.len()), (1, 1, 1));
        // Only the user's own file: a line of what happened, not a need.
        let l = read(&[salvaged(at(1, 0), 1, "c1", vec!["mine.txt".into()])]);
        assert!(l.salvaged.is_empty());
        assert_eq!(l.happened[0].kind, HappeningKind::SalvagePreexisting);
        assert!(l.happened[0].text.contains("mine.txt") && l.happened[0].text.contains("not the agent's work"));
    }
}
