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

use tokio::time::Instant;

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
            Self::Notify => crate::hooks::codex::TURN_COMPLETE,
        }
    }

    fn said(self) -> &'static str {
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
    tool: Option<String>,
    /// Drift to report, and whether this turn's was reported.
    drift: Option<Drift>,
    drift_reported: bool,
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
            drift: None,
            drift_reported: false,
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

    /// The client's hook says which tool it is about to run (`Bash: touch x`).
    pub fn on_tool(&mut self, tool: String) {
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
            Some(Turn::Ended { at, .. }) if self.verdict.working.is_some() => return Some(at + DRIFT),
            _ => {}
        }
        if self.state == Some(Activity::Idle) || self.verdict.dialog.is_some() || self.verdict.working.is_some() {
            return None;
        }
        Some(quiet_ends)
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
                // A new run of work since the Stop that no prompt started (the client continuing by
                // itself): the screen's rules decide from here.
                Some(_) if self.working_since.is_some_and(|t| t > at) => {
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
        if self.state == Some(to) {
            return None;
        }
        self.state = Some(to);
        let mut verdict = self.verdict.clone();
        if to == Activity::WaitingInput {
            // The hook knows the tool and the command a permission prompt is for.
            match (&mut verdict.dialog, &self.asked, &self.tool) {
                (None, Some((asked, _)), _) => verdict.dialog = Some(asked.clone()),
                (Some(d), Some((asked, _)), _) if d.kind == crate::agent::DialogKind::Permission => {
                    d.text.clone_from(&asked.text)
                }
                // The screen saw the dialog before the client's word on it: name the tool it is for.
                (Some(d), None, Some(tool)) if d.kind == crate::agent::DialogKind::Permission => {
                    let question = d.text.as_deref().unwrap_or("Permission asked");
                    d.text = Some(format!("{question} — {tool}"));
                }
                _ => {}
            }
        }
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

    /// The client's hook: the tool it is about to run.
    pub fn tool(&mut self, tool: String) {
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
mod tests {
    use super::*;
    use crate::agent::Dialog;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    fn working() -> Verdict {
        Verdict {
            working: Some("the footer shows 'esc to interrupt'".into()),
            dialog: None,
            prompt: true,
            interrupted: false,
        }
    }

    fn at_prompt() -> Verdict {
        Verdict { working: None, dialog: None, prompt: true, interrupted: false }
    }

    /// Feeds output every `every` from `from` for `len`, with a frame after each chunk.
    fn run(
        d: &mut Detector,
        t0: Instant,
        from: Duration,
        len: Duration,
        every: Duration,
        v: &Verdict,
    ) -> Vec<(Duration, Transition)> {
        let mut out = Vec::new();
        let mut t = from;
        while t <= from + len {
            out.extend(d.on_output(t0 + t).map(|tr| (t, tr)));
            out.extend(d.on_frame(t0 + t + MS(30), v.clone()).map(|tr| (t, tr)));
            t += every;
        }
        out
    }

    #[test]
    fn idle_needs_the_quiet_window_and_no_working_signal() {
        let t0 = Instant::now();
        let mut d = Detector::new(DetectConfig::default(), true, t0);
        d.on_output(t0);
        assert_eq!(d.on_frame(t0 + MS(30), at_prompt()), None);
        assert_eq!(d.next_check(), Some(t0 + MS(2000)));
        assert_eq!(d.on_tick(t0 + MS(1999)), None);
        let tr = d.on_tick(t0 + MS(2000)).expect("idle after the quiet window");
        assert_eq!(tr.to, Activity::Idle);
        assert!(tr.reason.contains("quiet for 2.0 s"), "{}", tr.reason);
        assert_eq!(d.next_check(), None);
    }

    #[test]
    fn a_turn_needs_steady_output_that_the_screen_confirms() {
        let t0 = Instant::now();
        let mut d = Detector::new(DetectConfig::default(), true, t0);
        d.on_tick(t0 + MS(2000)).unwrap();
        // A keystroke echo: one burst, no working signal.
        assert!(run(&mut d, t0, MS(3000), MS(0), MS(100), &at_prompt()).is_empty());
        // A prompt redraw storm without a working line is not a turn either.
        assert!(run(&mut d, t0, MS(4000), MS(2000), MS(100), &at_prompt()).is_empty());
        // The working line with only a short burst behind it: not yet.
        assert!(run(&mut d, t0, MS(8000), MS(300), MS(100), &working()).is_empty());
        // Sustained output with the working line: a turn.
        let trs = run(&mut d, t0, MS(12000), MS(2000), MS(120), &working());
        assert_eq!(trs.len(), 1, "{trs:?}");
        assert_eq!(trs[0].1.to, Activity::Working);
        assert!(trs[0].0 >= MS(12600), "not before the streak is long enough: {:?}", trs[0].0);
        assert!(trs[0].1.reason.contains("esc to interrupt"));
    }

    #[test]
    fn a_working_signal_on_every_frame_of_slow_repaints_is_a_turn() {
        let t0 = Instant::now();
        let mut d = Detector::new(DetectConfig::default(), true, t0);
        d.on_tick(t0 + MS(2000)).unwrap();
        // Repaints once a second (a retry countdown), each showing the working signal.
        let trs = run(&mut d, t0, MS(3000), MS(3000), MS(1000), &working());
        assert_eq!(trs.len(), 1, "{trs:?}");
        assert_eq!(trs[0].0, MS(4000), "the second frame confirms it");
        assert!(trs[0].1.reason.contains("on every frame"), "{}", trs[0].1.reason);
        // A frame without the signal resets the count.
        let mut d = Detector::new(DetectConfig::default(), true, t0);
        d.on_tick(t0 + MS(2000)).unwrap();
        d.on_output(t0 + MS(3000));
        d.on_frame(t0 + MS(3000), working());
        d.on_output(t0 + MS(4000));
        d.on_frame(t0 + MS(4000), at_prompt());
        d.on_output(t0 + MS(5000));
        assert_eq!(d.on_frame(t0 + MS(5000), working()), None);
    }

    #[test]
    fn working_holds_through_a_long_turn_and_ends_quiet_window_after_the_last_output() {
        let t0 = Instant::now();
        let mut d = Detector::new(DetectConfig::default(), true, t0);
        let trs = run(&mut d, t0, MS(0), MS(20_000), MS(150), &working());
        assert_eq!(trs.iter().map(|t| t.1.to).collect::<Vec<_>>(), [Activity::Working]);
        // The turn ends: the last frames show the finished line, then nothing.
        let end = MS(20_100);
        d.on_output(t0 + end);
        assert_eq!(d.on_frame(t0 + end + MS(30), at_prompt()), None);
        assert_eq!(d.next_check(), Some(t0 + end + MS(2000)));
        assert_eq!(d.on_tick(t0 + end + MS(2000)).unwrap().to, Activity::Idle);
    }

    #[test]
    fn a_dialog_is_waiting_for_input_and_the_answer_resumes_the_turn() {
        let t0 = Instant::now();
        let mut d = Detector::new(DetectConfig::default(), true, t0);
        run(&mut d, t0, MS(0), MS(1000), MS(100), &working());
        let dialog = Verdict {
            working: None,
            dialog: Some(Dialog { kind: crate::agent::DialogKind::Question, text: Some("Which database?".into()) }),
            ..Verdict::default()
        };
        d.on_output(t0 + MS(1100));
        let tr = d.on_frame(t0 + MS(1130), dialog).unwrap();
        assert_eq!(tr.to, Activity::WaitingInput);
        assert!(tr.reason.contains("question dialog: Which database?"), "{}", tr.reason);
        assert_eq!(d.next_check(), None, "a dialog never times out into idle");
        let trs = run(&mut d, t0, MS(9000), MS(1000), MS(100), &working());
        assert_eq!(trs.last().unwrap().1.to, Activity::Working);
    }

    #[test]
    fn generic_goes_by_output_alone() {
        let t0 = Instant::now();
        let mut d = Detector::new(DetectConfig::default(), false, t0);
        let trs = run(&mut d, t0, MS(0), MS(3000), MS(200), &Verdict::default());
        assert_eq!(trs.len(), 1);
        assert_eq!(trs[0].1.to, Activity::Working);
        assert!(trs[0].1.reason.contains("steady output"));
        assert_eq!(d.on_tick(t0 + MS(3000) + MS(1999)), None);
        assert_eq!(d.on_tick(t0 + MS(3000) + MS(2000)).unwrap().to, Activity::Idle);
        // One line now and then is not work.
        assert!(run(&mut d, t0, MS(10_000), MS(0), MS(200), &Verdict::default()).is_empty());
    }

    #[test]
    fn the_quiet_window_is_the_sessions_setting() {
        let t0 = Instant::now();
        let cfg = DetectConfig { quiet: Duration::from_secs(10), ..DetectConfig::default() };
        let mut d = Detector::new(cfg, true, t0);
        d.on_output(t0);
        d.on_frame(t0, at_prompt());
        assert_eq!(d.on_tick(t0 + MS(9999)), None);
        assert_eq!(d.on_tick(t0 + MS(10_000)).unwrap().to, Activity::Idle);
    }

    #[test]
    fn a_fast_answer_is_a_turn_when_the_client_says_so() {
        let t0 = Instant::now();
        let mut d = Detector::new(DetectConfig::default(), true, t0);
        d.on_frame(t0, at_prompt());
        assert_eq!(d.on_tick(t0 + MS(2100)).map(|t| t.to), Some(Activity::Idle));
        // A 0.3 s answer: too short for the screen's rules, a turn by the client's word.
        let t = d.on_turn_started(t0 + MS(3000)).unwrap();
        assert_eq!(t.to, Activity::Working);
        assert!(t.reason.contains("UserPromptSubmit"), "{}", t.reason);
        d.on_output(t0 + MS(3100));
        d.on_frame(t0 + MS(3130), at_prompt());
        let t = d.on_turn_ended(t0 + MS(3300), TurnEnd::Stop).unwrap();
        assert_eq!(t.to, Activity::Idle, "no quiet window to wait out: the Stop and a frame with no working signal");
        assert!(t.reason.contains("Stop hook"), "{}", t.reason);
    }

    #[test]
    fn after_a_stop_idle_waits_for_the_screen_to_agree() {
        let t0 = Instant::now();
        let mut d = Detector::new(DetectConfig::default(), true, t0);
        d.on_turn_started(t0);
        d.on_output(t0 + MS(100));
        d.on_frame(t0 + MS(130), working());
        assert_eq!(d.on_turn_ended(t0 + MS(200), TurnEnd::Stop), None, "the spinner is still drawn");
        d.on_output(t0 + MS(400));
        let t = d.on_frame(t0 + MS(430), at_prompt()).unwrap();
        assert_eq!(t.to, Activity::Idle);
        assert_eq!(d.take_drift(), None);
    }

    #[test]
    fn codex_notify_ends_a_turn_the_screen_started_and_the_screen_starts_the_next() {
        // Codex says nothing when a turn starts, and notifies when it completed: streaming, its
        // screen's working signal is the title spinner and its program state.
        let t0 = Instant::now();
        let mut d = Detector::new(DetectConfig::default(), true, t0);
        d.on_frame(t0, at_prompt());
        d.on_tick(t0 + MS(2000)).unwrap();
        let turn = run(&mut d, t0, MS(3000), MS(3000), MS(100), &working());
        assert_eq!(turn.first().map(|(_, t)| t.to), Some(Activity::Working));
        assert_eq!(d.on_turn_ended(t0 + MS(6050), TurnEnd::Notify), None, "the frame still says working");
        d.on_output(t0 + MS(6060));
        let t = d.on_frame(t0 + MS(6090), at_prompt()).expect("idle with the first frame that agrees");
        assert_eq!(t.to, Activity::Idle);
        assert!(t.reason.contains("Codex's notify"), "{}", t.reason);
        assert_eq!(d.take_drift(), None);
        // The next turn: no word from Codex until it ends, so the screen's rules decide.
        let next = run(&mut d, t0, MS(8000), MS(1000), MS(100), &working());
        assert_eq!(next.first().map(|(_, t)| t.to), Some(Activity::Working), "{next:?}");
    }

    #[test]
    fn a_notify_while_codex_keeps_working_is_drift_named_after_it() {
        let t0 = Instant::now();
        let mut d = Detector::new(DetectConfig::default(), true, t0);
        run(&mut d, t0, MS(0), MS(1000), MS(100), &working());
        d.on_turn_ended(t0 + MS(1050), TurnEnd::Notify);
        let mut at = t0 + MS(1100);
        while at <= t0 + MS(1050) + DRIFT {
            d.on_output(at);
            d.on_frame(at, working());
            at += MS(200);
        }
        d.on_tick(t0 + MS(1050) + DRIFT);
        assert_eq!(d.take_drift().map(|d| d.hook), Some("agent-turn-complete".to_string()));
    }

    #[test]
    fn a_stop_while_the_screen_keeps_working_is_drift() {
        let t0 = Instant::now();
        let mut d = Detector::new(DetectConfig::default(), true, t0);
        d.on_turn_started(t0);
        d.on_frame(t0 + MS(100), working());
        d.on_turn_ended(t0 + MS(200), TurnEnd::Stop);
        assert_eq!(d.next_check(), Some(t0 + MS(200) + DRIFT));
        let mut at = t0 + MS(300);
        while at < t0 + MS(200) + DRIFT {
            d.on_output(at);
            d.on_frame(at, working());
            at += MS(200);
        }
        d.on_tick(t0 + MS(200) + DRIFT);
        let drift = d.take_drift().expect("drift");
        assert_eq!(drift.hook, "Stop");
        assert!(drift.screen.starts_with("working"), "{drift:?}");
        d.on_tick(t0 + MS(200) + DRIFT * 2);
        assert_eq!(d.take_drift(), None, "said once");
    }

    #[test]
    fn a_quiet_idle_screen_with_no_stop_is_drift_and_the_screen_wins() {
        let t0 = Instant::now();
        let mut d = Detector::new(DetectConfig::default(), true, t0);
        d.on_turn_started(t0);
        d.on_output(t0 + MS(50));
        d.on_frame(t0 + MS(80), at_prompt());
        assert_eq!(d.on_tick(t0 + MS(2100)), None, "the client said a turn runs: quiet alone is not idle");
        let due = d.next_check().unwrap();
        assert_eq!(due, t0 + MS(50) + DetectConfig::default().quiet + DRIFT);
        let t = d.on_tick(due).unwrap();
        assert_eq!(t.to, Activity::Idle);
        assert_eq!(d.take_drift().unwrap().hook, "a turn open with no Stop");
    }

    #[test]
    fn a_permission_prompt_carries_the_tool_and_command_the_hook_named() {
        let t0 = Instant::now();
        let mut d = Detector::new(DetectConfig::default(), true, t0);
        d.on_turn_started(t0);
        let asked = Dialog {
            kind: crate::agent::DialogKind::Permission,
            text: Some("Claude needs your permission: Bash touch x".into()),
        };
        let t = d.on_asked(t0 + MS(500), asked).unwrap();
        assert_eq!(t.to, Activity::WaitingInput);
        assert_eq!(t.verdict.dialog.unwrap().text.as_deref(), Some("Claude needs your permission: Bash touch x"));
    }

    /// The client's Notification comes 6 s after its dialog opened (2.1.332), often after the user
    /// has read it; the dialog answered, the session must not stay waiting on it.
    fn dialog_answered_after_the_clients_notification(kind: crate::agent::DialogKind) -> Detector {
        let t0 = Instant::now();
        let mut d = Detector::new(DetectConfig::default(), true, t0);
        d.on_turn_started(t0);
        d.on_tool("AskUserQuestion".into());
        d.on_output(t0 + MS(100));
        let on_screen = Dialog { kind, text: Some("Which database?".into()) };
        let frame = Verdict { working: None, dialog: Some(on_screen), prompt: false, interrupted: false };
        assert_eq!(d.on_frame(t0 + MS(130), frame).unwrap().to, Activity::WaitingInput);
        let asked =
            Dialog { kind: crate::agent::DialogKind::Permission, text: Some("Claude needs your permission".into()) };
        assert_eq!(d.on_asked(t0 + MS(6130), asked), None, "already waiting");
        // Answered: the dialog leaves the screen and the turn goes on.
        let trs = run(&mut d, t0, MS(9000), MS(1000), MS(100), &working());
        assert_eq!(trs.first().map(|(_, t)| t.to), Some(Activity::Working), "{trs:?}");
        d
    }

    #[test]
    fn a_question_answered_after_the_clients_notification_is_no_longer_waited_on() {
        let mut d = dialog_answered_after_the_clients_notification(crate::agent::DialogKind::Question);
        let t = d.on_turn_ended(d.last_output.unwrap() + MS(100), TurnEnd::Stop);
        assert_eq!(t.map(|t| t.to), None, "the spinner is still drawn");
        let end = d.last_output.unwrap() + MS(200);
        d.on_output(end);
        assert_eq!(d.on_frame(end + MS(30), at_prompt()).map(|t| t.to), Some(Activity::Idle));
    }

    #[test]
    fn a_permission_answered_after_the_clients_notification_is_no_longer_waited_on() {
        let mut d = dialog_answered_after_the_clients_notification(crate::agent::DialogKind::Permission);
        let end = d.last_output.unwrap() + MS(100);
        d.on_output(end);
        d.on_frame(end + MS(30), at_prompt());
        assert_eq!(d.on_turn_ended(end + MS(50), TurnEnd::Stop).map(|t| t.to), Some(Activity::Idle));
    }

    #[test]
    fn a_dialog_only_the_hook_saw_ends_when_the_work_goes_on() {
        let t0 = Instant::now();
        let mut d = Detector::new(DetectConfig::default(), true, t0);
        d.on_turn_started(t0);
        let asked =
            Dialog { kind: crate::agent::DialogKind::Permission, text: Some("Claude needs your permission".into()) };
        assert_eq!(d.on_asked(t0 + MS(6000), asked).unwrap().to, Activity::WaitingInput);
        // The screen never read it as a dialog; once work shows again, it was answered.
        let trs = run(&mut d, t0, MS(9000), MS(1000), MS(100), &working());
        assert_eq!(trs.first().map(|(_, t)| t.to), Some(Activity::Working), "{trs:?}");
    }

    #[test]
    fn a_turn_the_user_interrupted_is_idle_after_the_quiet_window_without_a_stop() {
        let t0 = Instant::now();
        let mut d = Detector::new(DetectConfig::default(), true, t0);
        d.on_turn_started(t0);
        d.on_output(t0 + MS(50));
        d.on_frame(t0 + MS(80), working());
        d.on_output(t0 + MS(1000));
        let interrupted = Verdict { prompt: true, interrupted: true, ..Verdict::default() };
        assert_eq!(d.on_frame(t0 + MS(1030), interrupted), None, "not before the quiet window");
        let due = d.next_check().unwrap();
        assert_eq!(due, t0 + MS(1000) + DetectConfig::default().quiet, "no drift wait");
        let t = d.on_tick(due).unwrap();
        assert_eq!(t.to, Activity::Idle);
        assert!(t.reason.contains("interrupted"), "{}", t.reason);
        assert_eq!(d.take_drift(), None, "an interrupt is no drift");
    }

    #[test]
    fn a_dialog_the_screen_sees_first_names_the_tool_the_hook_announced() {
        let t0 = Instant::now();
        let mut d = Detector::new(DetectConfig::default(), true, t0);
        d.on_turn_started(t0);
        d.on_tool("Bash: touch x".into());
        d.on_output(t0 + MS(50));
        let dialog =
            Dialog { kind: crate::agent::DialogKind::Permission, text: Some("Do you want to proceed?".into()) };
        let frame = Verdict { working: None, dialog: Some(dialog), prompt: false, interrupted: false };
        let t = d.on_frame(t0 + MS(80), frame).unwrap();
        assert_eq!(t.to, Activity::WaitingInput);
        assert_eq!(t.verdict.dialog.unwrap().text.as_deref(), Some("Do you want to proceed? — Bash: touch x"));
    }

    /// Drives a watcher over the real client's working frame: a repaint every `every` for `len`,
    /// waking when it asks; returns when frames were judged.
    fn watch(w: &mut Watcher, screen: &Screen, t0: Instant, len: Duration, every: Duration) -> Vec<Duration> {
        let mut judged = Vec::new();
        let mut t = t0;
        let mut next_output = t0;
        while t < t0 + len {
            let wake = w.next_wakeup().unwrap_or(next_output);
            if next_output <= wake {
                t = next_output;
                w.output(t);
                next_output += every;
            } else {
                t = wake;
                w.wake(t, screen);
                if w.take_limit_region().is_some() {
                    judged.push(t - t0);
                }
            }
        }
        judged
    }

    #[test]
    fn a_worked_turn_is_judged_once_a_second_and_its_end_at_once() {
        let mut screen = Screen::new(crate::pty::PtySize::new(120, 40));
        screen.feed(include_bytes!("../tests/fixtures/claude-code/2.1.332/working/02-working-t2s.ansi.txt"));
        let t0 = Instant::now();
        let mut w = Watcher::new(Adapter::builtin(crate::AgentKind::Claude), DetectConfig::default(), t0);
        // Before the turn is seen, each repaint (every 120 ms, as the client's spinner) is judged.
        let before = watch(&mut w, &screen, t0, MS(1200), MS(120));
        assert_eq!(w.state(), Some(Activity::Working), "{before:?}");
        assert!(before.len() >= 5, "{before:?}");
        // While the turn is worked: at most one judged frame per WORKING_FRAME_EVERY.
        let t1 = t0 + MS(1200);
        let during = watch(&mut w, &screen, t1, MS(4000), MS(120));
        assert!((3..=5).contains(&during.len()), "{} frames in 4 s: {during:?}", during.len());
        assert!(during.windows(2).all(|p| p[1] - p[0] >= WORKING_FRAME_EVERY), "{during:?}");
        // The client says the turn ended: the frame held back is judged within the settle time.
        let t2 = t1 + MS(4000);
        w.output(t2);
        w.turn_ended(t2 + MS(5), TurnEnd::Stop);
        assert!(w.next_wakeup().unwrap() <= t2 + MS(5) + FRAME_SETTLE, "{:?}", w.next_wakeup().unwrap() - t2);
    }

    #[test]
    fn a_short_quiet_window_judges_a_worked_turn_before_it_ends() {
        let mut screen = Screen::new(crate::pty::PtySize::new(120, 40));
        screen.feed(include_bytes!("../tests/fixtures/claude-code/2.1.332/working/02-working-t2s.ansi.txt"));
        let t0 = Instant::now();
        let cfg = DetectConfig { quiet: MS(800), ..DetectConfig::default() };
        let mut w = Watcher::new(Adapter::builtin(crate::AgentKind::Claude), cfg, t0);
        watch(&mut w, &screen, t0, MS(1200), MS(120));
        assert_eq!(w.state(), Some(Activity::Working));
        let during = watch(&mut w, &screen, t0 + MS(1200), MS(4000), MS(120));
        assert!(during.windows(2).all(|p| p[1] - p[0] <= MS(400) + FRAME_SETTLE), "{during:?}");
    }
}
