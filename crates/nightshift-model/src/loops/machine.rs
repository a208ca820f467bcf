//! A loop's decisions, as one pure machine: `step(input, now) -> effects`.
//!
//! Each iteration is a fresh headless session on one task. Between iterations (and inside every
//! wait) the machine checks the budget, the STOP and HALT markers and the iteration cap; it re-runs
//! an iteration after a transient failure on a doubling ladder and after a usage limit at its reset
//! (probing for an early reset on the way), backs a project off after iterations that settle
//! nothing, and goes round the projects one iteration each. Every wait is a wall-clock deadline
//! checked on ticks, so a machine that slept through one acts as soon as it wakes. The actor
//! (`loops::actor`) runs the children, reads their streams and the tasks files, and carries out the
//! effects.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::stream::{Outcome, Report};
use crate::breaker::{BreakerKind, BreakerState};
use crate::event::{EventKind, SessionState, WaitKind};
use crate::limits::{LimitKind, Source};
use crate::session::machine::Now;

pub use crate::contract::LoopSettings as Settings;
pub use io::{Effect, Input, Marker, Project, Run};

#[path = "machine/io.rs"]
mod io;

/// What the loop waits for.
#[derive(Debug, Clone, PartialEq)]
enum Wait {
    /// Nothing: the next iteration may start.
    None,
    /// A transient failure: the same run again at `until`.
    Retry { run: Run, until: DateTime<Utc> },
    /// A usage limit: the same run again at the reset plus the margin; probes on the way.
    Limit { run: Run, resets_at: Option<DateTime<Utc>>, until: DateTime<Utc>, next_probe: DateTime<Utc> },
}

#[derive(Debug, Clone, Default)]
struct ProjectState {
    /// `None` until read.
    open: Option<Vec<String>>,
    /// Tasks seen open so far (a new one ends a back-off).
    seen: std::collections::HashSet<String>,
    fruitless: u32,
    /// Backed off until.
    backoff: Option<DateTime<Utc>>,
    backoffs: usize,
}

#[derive(Debug)]
pub struct Machine {
    settings: Settings,
    /// The user's time zone: the pace's morning reserve is read in it.
    zone: crate::clock::Zone,
    projects: Vec<Project>,
    state: Vec<ProjectState>,
    /// The next project to look at (round robin).
    cursor: usize,
    /// Iterations that ran to an end.
    finished: u32,
    running: Option<Run>,
    wait: Wait,
    /// Transient failures of the current iteration so far.
    retries: u32,
    cost_usd: f64,
    /// Some iteration reported its cost.
    costed: bool,
    tokens: u64,
    /// The running session's tokens so far (from its stream, before its total).
    running_tokens: u64,
    started: Option<Now>,
    stop: Option<Marker>,
    /// Held by the user: no new iteration starts.
    held: bool,
    ended: bool,
    /// It ended on a failure (not its own end: tasks done, a cap, a marker, the budget).
    failed: bool,
    shown: Option<SessionState>,
    /// The plan's windows as the last iteration's harness reported them, for the pace.
    windows: Option<crate::usage::Sample>,
    /// Where the pace parked new iterations.
    paced: Option<crate::limits::pace::Parking>,
}

impl Machine {
    pub fn new(settings: Settings, projects: Vec<Project>, zone: crate::clock::Zone) -> Self {
        let state = vec![ProjectState::default(); projects.len()];
        Self {
            settings,
            zone,
            projects,
            state,
            cursor: 0,
            finished: 0,
            running: None,
            wait: Wait::None,
            retries: 0,
            cost_usd: 0.0,
            costed: false,
            tokens: 0,
            running_tokens: 0,
            started: None,
            stop: None,
            held: false,
            ended: false,
            failed: false,
            shown: None,
            windows: None,
            paced: None,
        }
    }

    pub fn step(&mut self, input: Input, now: Now) -> Vec<Effect> {
        let mut fx = Vec::new();
        if self.ended {
            return fx;
        }
        match input {
            Input::Start => {
                self.started = Some(now);
            }
            Input::Tasks { project, open } => self.tasks_read(project, open, now, &mut fx),
            Input::Tokens { so_far } => {
                self.running_tokens = so_far;
                if let Some(why) = self.over_budget(now) {
                    self.trip(why, now, &mut fx);
                    return fx;
                }
            }
            Input::Ended { report, progress } => {
                self.windows = report.windows.clone().or(self.windows.take());
                self.ended_run(*report, progress, now, &mut fx)
            }
            Input::SpawnFailed { error } => {
                self.running = None;
                self.fail(format!("stopped: the harness could not be started: {error}"), now, &mut fx);
            }
            Input::Marker(marker) => self.marker(marker, now, &mut fx),
            Input::Held { held, source } if held != self.held => {
                self.held = held;
                let (change, detail) = if held {
                    (crate::event::Automation::Held, "the running iteration finishes; no new one starts until released")
                } else {
                    (crate::event::Automation::Released, "the next iteration may start")
                };
                self.emit(EventKind::Automation { change, source, detail: Some(detail.into()) }, &mut fx);
            }
            Input::Held { .. } => {}
            Input::Tick => {
                if self.running.is_some() {
                    if let Some(why) = self.over_budget(now) {
                        self.trip(why, now, &mut fx);
                    }
                    return fx;
                }
            }
        }
        if !self.ended && self.running.is_none() {
            self.decide(now, &mut fx);
        }
        fx
    }

    /// When a tick could change something (a wait ending, the wall-clock ceiling).
    pub fn next_deadline(&self) -> Option<DateTime<Utc>> {
        if self.ended {
            return None;
        }
        let wait = match &self.wait {
            // Parked by the pace until then.
            Wait::None => self.paced.as_ref().map(|p| p.until),
            Wait::Retry { until, .. } => Some(*until),
            Wait::Limit { until, next_probe, .. } => Some((*until).min(*next_probe)),
        };
        let backoff = self.state.iter().filter_map(|p| p.backoff).min();
        [wait, backoff, self.wall_deadline()].into_iter().flatten().min()
    }

    pub fn is_ended(&self) -> bool {
        self.ended
    }

    /// Held by the user.
    pub fn held(&self) -> bool {
        self.held
    }

    /// It ended on a failure: the harness could not be started, failed for good, or kept failing.
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// Iterations run to an end so far.
    pub fn iterations(&self) -> u32 {
        self.finished
    }

    /// What the loop has spent so far (the harnesses' own totals).
    pub fn spent(&self) -> (f64, u64) {
        (self.cost_usd, self.tokens + self.running_tokens)
    }

    fn wall_deadline(&self) -> Option<DateTime<Utc>> {
        let (started, max) = (self.started?, self.settings.budget.max_wall_clock?);
        Some(started.wall + chrono::Duration::from_std(max).unwrap_or(chrono::Duration::MAX))
    }

    fn emit(&mut self, kind: EventKind, fx: &mut Vec<Effect>) {
        fx.push(Effect::Emit(kind));
    }

    fn show(&mut self, state: SessionState, reason: String, fx: &mut Vec<Effect>) {
        self.shown = Some(state);
        self.emit(EventKind::state(state, reason), fx);
    }

    fn tasks_read(&mut self, project: usize, open: Vec<String>, now: Now, fx: &mut Vec<Effect>) {
        let Some(p) = self.state.get_mut(project) else { return };
        let new: Vec<String> = open.iter().filter(|t| !p.seen.contains(*t)).cloned().collect();
        let first_read = p.open.is_none();
        p.seen.extend(open.iter().cloned());
        p.open = Some(open);
        if !new.is_empty() && !first_read && (p.fruitless > 0 || p.backoff.is_some()) {
            // A new task forgets the fruitless count and ends the wait.
            p.fruitless = 0;
            p.backoffs = 0;
            if p.backoff.take().is_some() {
                let label = self.projects[project].label.clone();
                self.emit(
                    EventKind::LoopWait {
                        why: WaitKind::Fruitless,
                        until: None,
                        project: Some(label),
                        detail: format!("a new task ({}): the back-off ends", new[0]),
                    },
                    fx,
                );
            }
        }
        let _ = now;
    }

    fn marker(&mut self, marker: Marker, now: Now, fx: &mut Vec<Effect>) {
        if self.stop == Some(Marker::Halt) || self.stop == Some(marker) {
            return;
        }
        self.stop = Some(marker);
        let (source, kind) = match marker {
            Marker::Stop => ("a STOP marker: the current iteration finishes, then the loop ends", "stop"),
            Marker::Halt => ("a HALT marker: the loop ends now", "halt"),
        };
        self.emit(EventKind::StopRequested { source: source.into(), kind: crate::event::StopKind::User }, fx);
        if self.running.is_some() {
            if marker == Marker::Halt {
                fx.push(Effect::Kill { reason: "HALT".into() });
            }
            return;
        }
        self.finish(format!("ended by its {kind} marker"), now, fx);
    }

    fn ended_run(&mut self, report: Report, progress: bool, now: Now, fx: &mut Vec<Effect>) {
        let Some(run) = self.running.take() else { return };
        self.running_tokens = 0;
        let known = report.spend.cost_usd.is_some() || report.spend.tokens.is_some();
        self.cost_usd += report.spend.cost_usd.unwrap_or(0.0);
        self.costed |= report.spend.cost_usd.is_some();
        self.tokens += report.spend.tokens.unwrap_or(0);
        let label = self.projects[run.project].label.clone();
        let detail = match &report.outcome {
            Outcome::Done => None,
            Outcome::Unfinished { reason } | Outcome::Transient { reason } | Outcome::Failed { reason } => {
                Some(reason.clone())
            }
            Outcome::Limit { message, .. } => Some(message.clone()),
        };
        self.emit(
            EventKind::IterationEnded {
                iteration: run.iteration,
                attempt: run.attempt,
                project: label.clone(),
                task: run.task.clone(),
                probe: run.probe,
                outcome: report.outcome.name().to_string(),
                detail,
                cost_usd: report.spend.cost_usd,
                tokens: report.spend.tokens,
                duration_ms: report.duration_ms,
                conversation: report.conversation.clone(),
                progress,
            },
            fx,
        );
        if !known {
            self.emit(
                EventKind::SpendUnknown {
                    iteration: run.iteration,
                    reason: "its stream ended before the harness reported its totals".into(),
                },
                fx,
            );
            if self.settings.budget.has_spend_ceiling() {
                // The ceiling asked for can no longer be honoured: fail closed.
                self.trip(
                    "the spend of an iteration could not be measured, so the spend ceiling cannot be kept".into(),
                    now,
                    fx,
                );
                return;
            }
        }
        // A finished iteration's work counts whatever comes next (a halt, a crossed ceiling).
        let worked = matches!(report.outcome, Outcome::Done | Outcome::Unfinished { .. }) && !run.probe;
        let settled = worked && matches!(report.outcome, Outcome::Done) && run.task.is_some();
        if worked {
            self.retries = 0;
            if settled {
                let task = run.task.clone().expect("a task");
                fx.push(Effect::CheckOff { project: run.project, task: task.clone() });
                self.emit(EventKind::TaskDone { project: label.clone(), task: task.clone() }, fx);
                if let Some(open) = self.state[run.project].open.as_mut() {
                    if let Some(i) = open.iter().position(|t| *t == task) {
                        open.remove(i);
                    }
                }
            }
            self.finished += 1;
        }
        if self.stop == Some(Marker::Halt) {
            self.finish("ended by its halt marker".into(), now, fx);
            return;
        }
        if let Some(why) = self.over_budget(now) {
            self.trip(why, now, fx);
            return;
        }
        match report.outcome {
            Outcome::Done | Outcome::Unfinished { .. } if run.probe => {
                // The probe got an answer: the limit is over; the iteration runs again now.
                if let Wait::Limit { run: waiting, .. } = std::mem::replace(&mut self.wait, Wait::None) {
                    self.emit(
                        EventKind::LimitCleared { reason: "a probe was answered: the limit reset early".into() },
                        fx,
                    );
                    self.wait = Wait::Retry { run: waiting, until: now.wall };
                }
            }
            Outcome::Done | Outcome::Unfinished { .. } => self.settle(run.project, settled || progress, now, fx),
            Outcome::Transient { reason } => self.retry(run, reason, now, fx),
            Outcome::Limit { resets_at, message } => self.limited(run, resets_at, message, now, fx),
            Outcome::Failed { reason } => {
                self.fail(format!("stopped: the harness failed in a way another try will not fix: {reason}"), now, fx)
            }
        }
    }

    /// After an iteration: progress forgets the fruitless count; nothing settled counts towards a
    /// back-off.
    fn settle(&mut self, project: usize, settled: bool, now: Now, fx: &mut Vec<Effect>) {
        let p = &mut self.state[project];
        if settled {
            p.fruitless = 0;
            p.backoffs = 0;
            return;
        }
        p.fruitless += 1;
        if p.fruitless < self.settings.fruitless_after {
            return;
        }
        let waits = &self.settings.fruitless_waits;
        let Some(wait) = waits.get(p.backoffs.min(waits.len().saturating_sub(1))).copied() else { return };
        p.backoffs += 1;
        let until = now.wall + chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::MAX);
        p.backoff = Some(until);
        let n = p.fruitless;
        let label = self.projects[project].label.clone();
        self.emit(
            EventKind::LoopWait {
                why: WaitKind::Fruitless,
                until: Some(until),
                project: Some(label),
                detail: format!(
                    "{n} iterations in a row settled nothing: backing off {}",
                    humantime::format_duration(wait)
                ),
            },
            fx,
        );
    }

    fn retry(&mut self, run: Run, reason: String, now: Now, fx: &mut Vec<Effect>) {
        if run.probe {
            // A probe that failed tells nothing: the limit wait goes on.
            return;
        }
        self.retries += 1;
        if self.settings.max_retries > 0 && self.retries > self.settings.max_retries {
            let n = self.settings.max_retries;
            self.fail(format!("stopped: {n} retries of the same iteration failed (last: {reason})"), now, fx);
            return;
        }
        let exp = self.retries.saturating_sub(1).min(16);
        let wait = self.settings.retry_first.saturating_mul(1 << exp).min(self.settings.retry_cap);
        let until = now.wall + chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::MAX);
        let again = Run { attempt: run.attempt + 1, ..run };
        self.wait = Wait::Retry { run: again, until };
        self.emit(
            EventKind::LoopWait {
                why: WaitKind::Retry,
                until: Some(until),
                project: None,
                detail: format!("retry {} in {}: {reason}", self.retries, humantime::format_duration(wait)),
            },
            fx,
        );
        self.show(SessionState::Idle, format!("retrying after a transient failure: {reason}"), fx);
    }

    fn limited(&mut self, run: Run, resets_at: Option<DateTime<Utc>>, message: String, now: Now, fx: &mut Vec<Effect>) {
        let probe_at = now.wall + margin(self.settings.probe_every);
        let limit_margin = margin(self.settings.limit_margin);
        if let Wait::Limit { resets_at: known, until, next_probe, .. } = &mut self.wait {
            // A probe met the limit again: wait on, to a later reset if it names one.
            if let Some(r) = resets_at.filter(|r| known.is_none_or(|k| *r > k)) {
                *known = Some(r);
                *until = r + limit_margin;
            }
            *next_probe = probe_at.min(*until);
            return;
        }
        self.emit(
            EventKind::LimitDetected {
                resets_at,
                source: Source::Stream,
                kind: LimitKind::Unspecified,
                line: message.clone(),
            },
            fx,
        );
        let until = match resets_at {
            Some(r) => r + limit_margin,
            None => probe_at,
        };
        if self.wall_deadline().is_some_and(|d| until > d) {
            let when = resets_at.map_or_else(
                || "at a time the harness did not say".to_string(),
                |r| format!("at {}", crate::clock::format_ts(r)),
            );
            self.finish(
                format!("stopped: a usage limit resets past the run's wall-clock ceiling; the quota returns {when}"),
                now,
                fx,
            );
            return;
        }
        self.wait = Wait::Limit { run, resets_at, until, next_probe: probe_at.min(until) };
        let every = humantime::format_duration(self.settings.probe_every);
        self.emit(
            EventKind::LoopWait {
                why: WaitKind::Limit,
                until: Some(until),
                project: None,
                detail: format!(
                    "a usage limit: the iteration runs again then, probing every {every} for an early reset"
                ),
            },
            fx,
        );
        let reason = match resets_at {
            Some(r) => format!("usage limit ({message}) until {}", crate::clock::format_ts(r)),
            None => format!("usage limit ({message}), reset time unknown"),
        };
        self.show(SessionState::LimitPaused, reason, fx);
    }

    fn over_budget(&self, now: Now) -> Option<String> {
        let (cost, tokens) = self.spent();
        let elapsed = self.started.map(|s| (now.wall - s.wall).to_std().unwrap_or_default()).unwrap_or_default();
        self.settings.budget.crossed(cost, tokens, elapsed)
    }

    fn trip(&mut self, why: String, now: Now, fx: &mut Vec<Effect>) {
        self.emit(
            EventKind::Breaker { breaker: BreakerKind::Budget, state: BreakerState::Open, reason: why.clone() },
            fx,
        );
        if self.running.is_some() {
            fx.push(Effect::Kill { reason: why.clone() });
            self.running = None;
        }
        self.finish(format!("stopped by its budget: {why}"), now, fx);
    }

    fn fail(&mut self, reason: String, now: Now, fx: &mut Vec<Effect>) {
        self.failed = !self.ended;
        self.finish(reason, now, fx);
    }

    fn finish(&mut self, reason: String, now: Now, fx: &mut Vec<Effect>) {
        if self.ended {
            return;
        }
        self.ended = true;
        self.wait = Wait::None;
        let (cost, tokens) = self.spent();
        // A harness that never reports a cost (Codex) is told in tokens alone.
        let cost = if self.costed { format!("{}, ", crate::units::usd(cost)) } else { String::new() };
        let mut reason = format!("{reason} ({} iteration(s), {cost}{tokens} tokens", self.finished);
        if let Some(started) = self.started {
            let wall = (now.wall - started.wall).to_std().unwrap_or_default();
            let mono = now.mono.saturating_duration_since(started.mono);
            let asleep = wall.saturating_sub(mono);
            if asleep >= Duration::from_secs(60) {
                reason.push_str(&format!("; the machine slept {} of it", humantime::format_duration(round(asleep))));
            }
        }
        reason.push(')');
        self.shown = Some(SessionState::Exited);
        let mut ended = EventKind::state(SessionState::Exited, reason);
        if let EventKind::State { exit_code, .. } = &mut ended {
            *exit_code = Some(i32::from(self.failed));
        }
        self.emit(ended, fx);
        fx.push(Effect::End);
    }

    /// Nothing runs: start what is due, or wait.
    fn decide(&mut self, now: Now, fx: &mut Vec<Effect>) {
        let Some(_) = self.started else { return };
        if self.held && self.stop.is_none() {
            return;
        }
        if self.stop.is_some() {
            let kind = if self.stop == Some(Marker::Halt) { "halt" } else { "stop" };
            self.finish(format!("ended by its {kind} marker"), now, fx);
            return;
        }
        if let Some(why) = self.over_budget(now) {
            self.trip(why, now, fx);
            return;
        }
        match std::mem::replace(&mut self.wait, Wait::None) {
            Wait::Retry { run, until } if until <= now.wall => return self.spawn(run, now, fx),
            Wait::Limit { run, until, .. } if until <= now.wall => {
                self.emit(EventKind::LimitCleared { reason: "the limit's reset has passed".into() }, fx);
                return self.spawn(Run { attempt: run.attempt + 1, ..run }, now, fx);
            }
            Wait::Limit { run, resets_at, until, next_probe }
                if next_probe <= now.wall && until - now.wall <= PROBE_SKIP =>
            {
                // The reset is minutes away: no probe for so little.
                self.wait = Wait::Limit { run, resets_at, until, next_probe: until };
                return;
            }
            Wait::Limit { run, resets_at, until, next_probe } if next_probe <= now.wall => {
                // One word asked, marked as Nightshift's: an agent that read a bare prompt as the
                // user's could start work the user had not asked for in the reopened window.
                let standing = self.settings.standing.as_deref();
                let prompt = crate::automated::mark(crate::automated::Automated::Probe, PROBE_ASK, standing);
                let what = crate::automated::Automated::Probe;
                self.emit(EventKind::AutomatedInput { what, chars: prompt.chars().count() }, fx);
                let probe = Run { prompt, task: None, probe: true, ..run.clone() };
                let next = now.wall + margin(self.settings.probe_every);
                self.wait = Wait::Limit { run, resets_at, until, next_probe: next.min(until) };
                return self.spawn(probe, now, fx);
            }
            wait @ (Wait::Retry { .. } | Wait::Limit { .. }) => {
                self.wait = wait;
                return;
            }
            Wait::None => {}
        }
        if self.settings.max_iterations.is_some_and(|max| self.finished >= max) {
            self.finish(format!("ran its {} iteration(s)", self.finished), now, fx);
            return;
        }
        if self.parked_by_pace(now, fx) {
            return;
        }
        // Back-offs that ended.
        for p in &mut self.state {
            if p.backoff.is_some_and(|t| t <= now.wall) {
                p.backoff = None;
            }
        }
        let n = self.projects.len();
        let mut all_done = true;
        for k in 0..n {
            let i = (self.cursor + k) % n;
            let p = &self.state[i];
            let Some(open) = &p.open else {
                all_done = false;
                continue;
            };
            if open.is_empty() {
                continue;
            }
            all_done = false;
            if p.backoff.is_some() {
                continue;
            }
            let task = open[0].clone();
            self.cursor = (i + 1) % n;
            let file = self.projects[i].tasks_file;
            let run = Run {
                project: i,
                prompt: task.clone(),
                task: file.then_some(task),
                probe: false,
                iteration: self.finished + 1,
                attempt: 1,
            };
            self.retries = 0;
            return self.spawn(run, now, fx);
        }
        if all_done {
            self.finish("every task is done".into(), now, fx);
        } else if self.shown != Some(SessionState::Idle) && self.state.iter().any(|p| p.backoff.is_some()) {
            self.show(SessionState::Idle, "every project with open tasks is backed off".into(), fx);
        }
    }

    /// Whether the pace parks the next iteration now, by the windows the last one reported; a new
    /// park and its end are journalled.
    fn parked_by_pace(&mut self, now: Now, fx: &mut Vec<Effect>) -> bool {
        use crate::limits::pace::{decide, Parking, Turn, Verdict};
        let verdict = match &self.windows {
            Some(w) if !self.settings.pace.is_off() => decide(&self.settings.pace, w, now.wall, &self.zone),
            _ => Verdict::Go,
        };
        if let Some(turn) = Parking::follow(&mut self.paced, verdict) {
            let shown = match &turn {
                Turn::Parked(p) => Some(format!("parked {}", p.reason)),
                Turn::Ended(_) => None,
            };
            self.emit(turn.into(), fx);
            if let Some(reason) = shown {
                self.show(SessionState::Idle, reason, fx);
            }
        }
        self.paced.is_some()
    }

    fn spawn(&mut self, run: Run, _now: Now, fx: &mut Vec<Effect>) {
        let label = self.projects[run.project].label.clone();
        self.emit(
            EventKind::IterationStarted {
                iteration: run.iteration,
                attempt: run.attempt,
                project: label.clone(),
                task: run.task.clone(),
                probe: run.probe,
            },
            fx,
        );
        let what = if run.probe {
            "probing for an early reset".to_string()
        } else {
            format!("iteration {} in {label}", run.iteration)
        };
        if !run.probe || self.shown != Some(SessionState::LimitPaused) {
            self.show(SessionState::Working, what, fx);
        }
        self.running = Some(run.clone());
        fx.push(Effect::Spawn(run));
    }
}

/// A probe due this close to the reset is not made.
const PROBE_SKIP: chrono::Duration = chrono::Duration::minutes(5);

/// What a probe asks (after its marker): a one-word answer, no tools, no work.
pub(crate) const PROBE_ASK: &str = "Reply with the one word ok, and do nothing else.";

fn margin(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

fn round(d: Duration) -> Duration {
    Duration::from_secs(d.as_secs() / 60 * 60)
}

#[cfg(test)]
#[path = "machine/tests.rs"]
mod tests;
