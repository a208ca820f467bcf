//! The activity detector: is the agent working, idle at its prompt, or waiting on the user?
//!
//! Pure: it is fed the times of output and the adapter's verdicts on whole frames, and says when the
//! activity changes and why. The rules, learnt from how the real clients draw:
//!
//! - **Idle** needs the pane quiet for the quiet window *and* the last whole frame showing no working
//!   signal. (A working Claude Code never goes ~0.2 s without output, so quiet is the end of a turn;
//!   a prompt glyph alone means nothing, since the prompt is redrawn all through a turn.)
//! - **Working** starts on a sustained run of output (no gap longer than `streak_gap`, lasting
//!   `turn_streak`) that a frame confirms with a working signal. A keystroke echo or a prompt
//!   redraw is a short burst, or shows no working signal: neither is a turn.
//! - **Waiting for input** is a whole frame showing a dialog (a permission prompt, a question).
//! - An agent whose screen is not read (`generic`) goes by output alone: steady output is working,
//!   the quiet window is idle.
//! - **The client's own word**, where it gives it (Claude Code's hooks): a submitted prompt is a turn
//!   at once (a 0.3 s answer is a turn too); its `Stop` ends the turn as soon as a frame shows no
//!   working signal, with no quiet window to wait out; its permission prompt is waiting for input,
//!   with the tool and the command. The screen still decides dialogs and stays the fallback: when the
//!   two disagree for [`DRIFT`] (a `Stop` while the screen keeps working, a screen quiet and idle with
//!   no `Stop`), that is reported as drift once, and the screen's idle wins.
//! - Codex's `notify` says only that a turn completed (nothing when it starts): it ends the turn
//!   like a `Stop`, and the screen's rules start the next one.

use std::time::Duration;

use std::time::Instant;

use crate::agent::{Adapter, Verdict};
use crate::screen::Screen;

/// What the agent is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    Working,
    Idle,
    WaitingInput,
}

/// Timing of the rules above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DetectConfig {
    /// How long the pane must be quiet before a session is idle.
    pub quiet: Duration,
    /// How long output must keep coming before it can be a turn.
    pub turn_streak: Duration,
    /// The longest gap inside a run of output.
    pub streak_gap: Duration,
}

impl Default for DetectConfig {
    fn default() -> Self {
        Self {
            quiet: Duration::from_secs(2),
            turn_streak: Duration::from_millis(600),
            streak_gap: Duration::from_millis(500),
        }
    }
}

/// A change of activity and the signal that decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    pub to: Activity,
    pub reason: String,
    pub verdict: Verdict,
}

/// How long the client's hooks and its screen may disagree before it is drift.
pub const DRIFT: Duration = Duration::from_secs(5);

/// What the client's hooks said of the turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Turn {
    /// A prompt was submitted then, and no `Stop` came yet.
    Open { since: Instant },
    /// The turn ended then.
    Ended { at: Instant, by: TurnEnd },
}

/// Who said a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnEnd {
    /// Claude Code's `Stop` or `StopFailure` hook.
    Stop,
    /// Codex's notify (`agent-turn-complete`).
    Notify,
}

impl TurnEnd {
    /// The signal's name, as the client spells it.
    fn name(self) -> &'static str {
        match self {
            Self::Stop => "Stop",
            Self::Notify => crate::agent::codex::TURN_COMPLETE,
        }
    }

    /// Who said it, as the journal's reasons put it.
    pub fn said(self) -> &'static str {
        match self {
            Self::Stop => "the client's Stop hook",
            Self::Notify => "Codex's notify (agent-turn-complete)",
        }
    }
}

/// The hooks and the screen disagreed for longer than [`DRIFT`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    /// What the hooks said (`Stop`, `a turn open with no Stop`).
    pub hook: String,
    /// What the screen showed (`working`, `idle`).
    pub screen: String,
}

#[derive(Debug)]
pub struct Detector {
    cfg: DetectConfig,
    reads_screen: bool,
    state: Option<Activity>,
    started: Instant,
    last_output: Option<Instant>,
    streak_start: Option<Instant>,
    verdict: Verdict,
    /// Since when every frame has shown a working signal.
    working_since: Option<Instant>,
    last_frame: Option<Instant>,
    /// The hooks' word on the turn, once they have spoken.
    turn: Option<Turn>,
    /// The client asked the user (its `Notification` hook), and when: until the dialog is seen
    /// answered (it leaves the screen, or work shows again after it), the client runs another tool,
    /// or the turn ends or starts anew. Answering a dialog submits no prompt, so the next turn
    /// would be too late: the night would wait on a question answered long ago.
    asked: Option<(crate::agent::Dialog, Instant)>,
    /// The last judged frame showed a dialog.
    dialog_shown: bool,
    /// The tool the client is about to run (its `PreToolUse` hook): a permission prompt is for it.
    tool: Option<crate::agent::Subject>,
    /// The dialog last reported waited on: another in its place, with no frame between, is
    /// reported too.
    reported: Option<crate::agent::Dialog>,
    /// Drift to report, and whether this turn's was reported.
    drift: Option<Drift>,
    drift_reported: bool,
    /// When keys were last typed into the session (a prompt, an answer).
    typed: Option<Instant>,
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

impl Detector {
    pub fn new(cfg: DetectConfig, reads_screen: bool, now: Instant) -> Self {
        Self {
            cfg,
            reads_screen,
            state: None,
            started: now,
            last_output: None,
            streak_start: None,
            verdict: Verdict::default(),
            working_since: None,
            last_frame: None,
            turn: None,
            asked: None,
            dialog_shown: false,
            tool: None,
            reported: None,
            drift: None,
            drift_reported: false,
            typed: None,
        }
    }

    /// The client's hook says a prompt was submitted: a turn starts now.
    pub fn on_turn_started(&mut self, now: Instant) -> Option<Transition> {
        self.turn = Some(Turn::Open { since: now });
        self.asked = None;
        self.tool = None;
        self.drift_reported = false;
        self.evaluate(now)
    }

    /// The client says the turn ended (its `Stop` hook, Codex's notify).
    pub fn on_turn_ended(&mut self, now: Instant, by: TurnEnd) -> Option<Transition> {
        self.turn = Some(Turn::Ended { at: now, by });
        self.asked = None;
        self.tool = None;
        self.drift_reported = false;
        self.evaluate(now)
    }

    /// The client's hook says it waits for the user (a permission prompt), with what it wants.
    pub fn on_asked(&mut self, now: Instant, dialog: crate::agent::Dialog) -> Option<Transition> {
        self.asked = Some((dialog, now));
        self.evaluate(now)
    }

    /// Keys were typed into the session at `now` (a prompt, an answer, a key at the terminal).
    pub fn on_typed(&mut self, now: Instant) {
        self.typed = Some(now);
    }

    /// The client's hook says which tool it is about to run, and with what (`Bash`, `touch x`).
    pub fn on_tool(&mut self, tool: crate::agent::Subject) {
        // A tool after the one it asked about: what it asked was answered.
        self.asked = None;
        self.tool = Some(tool);
    }

    /// Drift seen since the last call.
    pub fn take_drift(&mut self) -> Option<Drift> {
        self.drift.take()
    }

    pub fn state(&self) -> Option<Activity> {
        self.state
    }

    /// A turn is under way and nobody has said it ended: frames need judging only now and then.
    fn turn_being_worked(&self) -> bool {
        self.state == Some(Activity::Working) && !matches!(self.turn, Some(Turn::Ended { .. }))
    }

    pub fn config(&self) -> DetectConfig {
        self.cfg
    }

    /// The agent wrote output at `now`.
    pub fn on_output(&mut self, now: Instant) -> Option<Transition> {
        let continues = self.last_output.is_some_and(|t| now.saturating_duration_since(t) <= self.cfg.streak_gap);
        if !continues {
            self.streak_start = Some(now);
        }
        self.last_output = Some(now);
        self.evaluate(now)
    }

    /// A whole frame was judged at `now`.
    pub fn on_frame(&mut self, now: Instant, verdict: Verdict) -> Option<Transition> {
        // A pause longer than the quiet window between two frames ends the run, whatever they show.
        let continues = self.last_frame.is_some_and(|t| now.saturating_duration_since(t) <= self.cfg.quiet);
        self.working_since = match (verdict.working.is_some(), self.working_since) {
            (true, Some(since)) if continues => Some(since),
            (true, _) => Some(now),
            (false, _) => None,
        };
        self.last_frame = Some(now);
        let shown = verdict.dialog.is_some();
        let worked_since_asked = self.asked.as_ref().zip(self.working_since).is_some_and(|((_, at), w)| w > *at);
        if !shown && (self.dialog_shown || worked_since_asked) {
            // The dialog left the screen, or the work went on after it: it was answered.
            self.asked = None;
        }
        self.dialog_shown = shown;
        self.verdict = verdict;
        self.evaluate(now)
    }

    /// Time passed; call at [`Self::next_check`].
    pub fn on_tick(&mut self, now: Instant) -> Option<Transition> {
        self.evaluate(now)
    }

    /// When the passing of time alone could change the activity (the quiet window running out, the
    /// hooks and the screen disagreeing long enough to be drift).
    pub fn next_check(&self) -> Option<Instant> {
        let quiet_ends = self.last_output.unwrap_or(self.started) + self.cfg.quiet;
        match self.turn {
            Some(_) if self.drift_reported || self.verdict.dialog.is_some() || self.asked.is_some() => {}
            Some(Turn::Open { .. }) if self.verdict.interrupted && self.verdict.working.is_none() => {
                return Some(quiet_ends)
            }
            Some(Turn::Open { .. }) if self.verdict.working.is_none() => return Some(quiet_ends + DRIFT),
            Some(Turn::Ended { at, .. }) if self.verdict.working.is_some() => {
                // A run begun since the Stop with nothing typed is new work once held for a streak.
                let typed = self.typed.is_some_and(|k| k > at);
                let held = self.working_since.filter(|t| *t > at && !typed).map(|t| t + self.cfg.turn_streak);
                return Some(held.map_or(at + DRIFT, |h| h.min(at + DRIFT)));
            }
            _ => {}
        }
        if self.state == Some(Activity::Idle) || self.verdict.dialog.is_some() || self.verdict.working.is_some() {
            return None;
        }
        Some(quiet_ends)
    }

    /// Whether a run of work begun at `t`, after a turn's end at `at`, is new work by `now`: at
    /// once when keys were typed since the end (a prompt), else once it held for a streak.
    fn new_run_holds(&self, t: Instant, at: Instant, now: Instant) -> bool {
        self.typed.is_some_and(|k| k > at) || now.saturating_duration_since(t) >= self.cfg.turn_streak
    }

    fn streak(&self, now: Instant) -> Option<Duration> {
        let last = self.last_output?;
        if now.saturating_duration_since(last) > self.cfg.streak_gap {
            return None;
        }
        let length = now.saturating_duration_since(self.streak_start?);
        (length >= self.cfg.turn_streak).then_some(length)
    }

    /// The verdict with the client's hooks, while they speak; `None` leaves it to the screen.
    fn hooked(&mut self, now: Instant, quiet_for: Duration) -> Option<Option<(Activity, String)>> {
        let turn = self.turn?;
        if self.verdict.dialog.is_some() {
            return None;
        }
        if let Some((dialog, _)) = &self.asked {
            let what = dialog.text.clone().unwrap_or_else(|| "the client waits for the user".into());
            return Some(Some((Activity::WaitingInput, format!("the client's Notification hook: {what}"))));
        }
        match turn {
            Turn::Open { .. } => {
                if self.verdict.interrupted && self.verdict.working.is_none() {
                    // The user interrupted the turn: the client ends it without a Stop.
                    if quiet_for < self.cfg.quiet {
                        return Some(None);
                    }
                    self.turn = Some(Turn::Ended { at: now, by: TurnEnd::Stop });
                    return Some(Some((
                        Activity::Idle,
                        "the screen shows the turn interrupted (the client sends no Stop then)".into(),
                    )));
                }
                if self.verdict.working.is_none() && quiet_for >= self.cfg.quiet + DRIFT {
                    // Quiet and idle on screen, and no Stop: the screen wins, once said.
                    if !self.drift_reported {
                        self.drift_reported = true;
                        self.drift = Some(Drift { hook: "a turn open with no Stop".into(), screen: "idle".into() });
                    }
                    self.turn = None;
                    return None;
                }
                Some(Some((Activity::Working, "the client's UserPromptSubmit hook: a turn runs".into())))
            }
            Turn::Ended { at, by } => match &self.verdict.working {
                None => Some(Some((Activity::Idle, format!("{}, and the screen shows no working signal", by.said())))),
                // A new run of work since the Stop that no hook started (Codex's next turn, the
                // client continuing by itself): the screen's rules decide from here. With nothing
                // typed since the Stop it must hold on every frame for a streak first: the client's
                // last redraw of the turn that ended can come after its Stop, a working signal not
                // yet wiped (the footer's "esc to interrupt").
                Some(_) if self.working_since.is_some_and(|t| t > at && self.new_run_holds(t, at, now)) => {
                    self.turn = None;
                    None
                }
                Some(signal) => {
                    if now >= at + DRIFT && !self.drift_reported {
                        self.drift_reported = true;
                        self.drift = Some(Drift { hook: by.name().into(), screen: format!("working ({signal})") });
                    }
                    Some(None)
                }
            },
        }
    }

    fn evaluate(&mut self, now: Instant) -> Option<Transition> {
        let quiet_for = now.saturating_duration_since(self.last_output.unwrap_or(self.started));
        let hooked = if self.reads_screen { self.hooked(now, quiet_for) } else { None };
        let (to, reason) = if let Some(verdict) = hooked {
            verdict?
        } else if !self.reads_screen {
            if let Some(streak) = self.streak(now) {
                (Activity::Working, format!("steady output for {}", secs(streak)))
            } else if quiet_for >= self.cfg.quiet {
                (Activity::Idle, format!("no output for {}", secs(self.cfg.quiet)))
            } else {
                return None;
            }
        } else if let Some(dialog) = &self.verdict.dialog {
            let what = match &dialog.text {
                Some(text) => format!("the screen shows a {} dialog: {text}", dialog.kind),
                None => format!("the screen shows a {} dialog", dialog.kind),
            };
            (Activity::WaitingInput, what)
        } else if let Some(signal) = &self.verdict.working {
            if self.state == Some(Activity::Working) {
                return None;
            }
            // Steady output that the screen confirms, or the screen confirming it frame after frame
            // (a client retrying an overloaded API repaints only once a second).
            let recent = self.last_frame.is_some_and(|t| now.saturating_duration_since(t) <= self.cfg.quiet);
            let held = self
                .working_since
                .filter(|_| recent)
                .map(|t| now.saturating_duration_since(t))
                .filter(|d| *d >= self.cfg.turn_streak);
            let why = match (self.streak(now), held) {
                (Some(streak), _) => format!("after {} of steady output", secs(streak)),
                (None, Some(held)) => format!("on every frame for {}", secs(held)),
                (None, None) => return None,
            };
            (Activity::Working, format!("turn started: {signal}, {why}"))
        } else if quiet_for >= self.cfg.quiet {
            let prompt = if self.verdict.prompt { "; the prompt is ready" } else { "" };
            (Activity::Idle, format!("quiet for {} and no working signal on screen{prompt}", secs(self.cfg.quiet)))
        } else {
            return None;
        };
        if self.state == Some(to) && to != Activity::WaitingInput {
            return None;
        }
        let mut verdict = self.verdict.clone();
        if to == Activity::WaitingInput {
            // The hook knows the tool and the command a permission prompt is for.
            match (&mut verdict.dialog, &self.asked) {
                (None, Some((asked, _))) => verdict.dialog = Some(asked.clone()),
                // On screen: name the tool it is for, the same before the client's word on it
                // (6 s later on 2.1.332) as after.
                (Some(d), asked) if d.kind == crate::agent::DialogKind::Permission => {
                    let subject =
                        asked.as_ref().and_then(|(a, _)| a.subject.clone()).or_else(|| self.tool.clone().map(Box::new));
                    match (&subject, asked) {
                        (Some(tool), _) => {
                            let question = d.text.as_deref().unwrap_or("Permission asked");
                            d.text = Some(format!("{question} — {tool}"));
                        }
                        (None, Some((asked, _))) => d.text.clone_from(&asked.text),
                        (None, None) => {}
                    }
                    d.subject = subject;
                }
                _ => {}
            }
            // Still waiting: news only when another dialog took the place of the one reported (two
            // questions of one call, a prompt after a prompt with no frame between).
            let replaced = match (&self.reported, &verdict.dialog) {
                (Some(before), Some(now)) => !before.same(now),
                (None, Some(_)) => true,
                (_, None) => false,
            };
            if self.state == Some(to) && !replaced {
                return None;
            }
            self.reported.clone_from(&verdict.dialog);
        } else {
            self.reported = None;
        }
        self.state = Some(to);
        Some(Transition { to, reason, verdict })
    }
}

/// A frame is judged once output has paused this long (the clients write a repaint in one go)...
const FRAME_SETTLE: Duration = Duration::from_millis(30);
/// ...or at the latest this long after the first unjudged output, if it never pauses.
const FRAME_MAX_WAIT: Duration = Duration::from_millis(250);
/// While a turn is being worked, a frame is judged at most this often (and at most every half quiet
/// window, so the last frame is judged before the quiet window ends): the screen only has to keep
/// saying "working", and a dialog or a limit notice is seen at most this much later. The client
/// repaints its spinner eight times a second; judging each repaint was most of a working session's
/// cost, and four a second still a third of it. A turn's end (the quiet window, or the client's own
/// word) is judged as before.
pub const WORKING_FRAME_EVERY: Duration = Duration::from_secs(1);

/// A session's screen watched over time: decides when a frame is whole, has the adapter judge it,
/// and feeds the detector. Pure like the detector: the caller owns the clock and the screen, calls
/// [`Watcher::output`] after feeding the screen and [`Watcher::wake`] at [`Watcher::next_wakeup`].
#[derive(Debug)]
pub struct Watcher {
    adapter: Adapter,
    detector: Detector,
    /// The first output not judged yet, and when the frame it belongs to is due.
    pending: Option<(Instant, Instant)>,
    /// The limit-notice region of the last judged frame, until taken.
    limit_region: Option<String>,
    /// A judged frame showed a working signal since the last look, even if too briefly to call a
    /// turn (a quick answer).
    working_seen: bool,
    /// When the last frame was judged.
    last_judged: Option<Instant>,
    /// How often a frame is judged while a turn is worked.
    working_every: Duration,
}

impl Watcher {
    pub fn new(adapter: Adapter, cfg: DetectConfig, now: Instant) -> Self {
        let working_every = WORKING_FRAME_EVERY.min(cfg.quiet / 2);
        let detector = Detector::new(cfg, adapter.reads_screen(), now);
        Self {
            adapter,
            detector,
            pending: None,
            limit_region: None,
            working_seen: false,
            last_judged: None,
            working_every,
        }
    }

    /// The client's hook: a prompt was submitted.
    pub fn turn_started(&mut self, now: Instant) -> Option<Transition> {
        self.detector.on_turn_started(now)
    }

    /// The client: the turn ended. A frame held back while the turn was worked is judged now.
    pub fn turn_ended(&mut self, now: Instant, by: TurnEnd) -> Option<Transition> {
        if let Some((first, due)) = self.pending {
            self.pending = Some((first, due.min(now + FRAME_SETTLE)));
        }
        self.detector.on_turn_ended(now, by)
    }

    /// The client's hook: it waits for the user.
    pub fn asked(&mut self, now: Instant, dialog: crate::agent::Dialog) -> Option<Transition> {
        self.detector.on_asked(now, dialog)
    }

    /// Keys were typed into the session at `now`.
    pub fn typed(&mut self, now: Instant) {
        self.detector.on_typed(now);
    }

    /// The client's hook: the tool it is about to run.
    pub fn tool(&mut self, tool: crate::agent::Subject) {
        self.detector.on_tool(tool);
    }

    /// Drift between the hooks and the screen, seen since the last call.
    pub fn take_drift(&mut self) -> Option<Drift> {
        self.detector.take_drift()
    }

    pub fn state(&self) -> Option<Activity> {
        self.detector.state()
    }

    /// The screen was just fed output.
    pub fn output(&mut self, now: Instant) -> Option<Transition> {
        let first = self.pending.map_or(now, |(first, _)| first);
        let mut due = (now + FRAME_SETTLE).min(first + FRAME_MAX_WAIT);
        if let Some(last) = self.last_judged.filter(|_| self.detector.turn_being_worked()) {
            due = due.max(last + self.working_every);
        }
        self.pending = Some((first, due));
        self.detector.on_output(now)
    }

    /// The text where the agent draws its own limit notices, as of the frame judged since the last
    /// call (`None` when no frame was judged).
    pub fn take_limit_region(&mut self) -> Option<String> {
        self.limit_region.take()
    }

    /// Whether any judged frame showed a working signal since the last call.
    pub fn take_working_seen(&mut self) -> bool {
        std::mem::take(&mut self.working_seen)
    }

    /// Makes output not judged yet due now, so the next [`Watcher::wake`] judges the screen as it
    /// is (before an answer from afar is checked against it); false while a synchronized update is
    /// open: the screen is mid-redraw, and nothing can be said of it.
    pub fn judge_now(&mut self, now: Instant, screen: &Screen) -> bool {
        match self.pending {
            Some(_) if screen.in_sync() => false,
            Some((first, _)) => {
                self.pending = Some((first, now));
                true
            }
            None => true,
        }
    }

    /// When to call [`Watcher::wake`] next.
    pub fn next_wakeup(&self) -> Option<Instant> {
        match (self.pending.map(|(_, due)| due), self.detector.next_check()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Judges a frame that is due (unless a synchronized update is still open) and lets time pass.
    pub fn wake(&mut self, now: Instant, screen: &Screen) -> Option<Transition> {
        if let Some((first, due)) = self.pending {
            if now >= due {
                if screen.in_sync() {
                    self.pending = Some((first, now + FRAME_SETTLE));
                } else {
                    self.pending = None;
                    self.last_judged = Some(now);
                    let frame = screen.frame();
                    self.limit_region = Some(self.adapter.limit_region_of_frame(&frame));
                    let verdict = self.adapter.classify_frame(&frame);
                    self.working_seen |= verdict.working.is_some();
                    if let Some(t) = self.detector.on_frame(now, verdict) {
                        return Some(t);
                    }
                }
            }
        }
        self.detector.on_tick(now)
    }
}

#[cfg(test)]
#[path = "detect/tests.rs"]
mod tests;
