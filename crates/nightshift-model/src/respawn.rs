//! The respawn cycle: keep a session working past the point where the agent would stop.
//!
//! When the session has been idle for the idle timeout, a cycle runs up to four steps, each
//! optional — an *update prompt* (write down where you got to), `/clear`, `/init`, a *kickstart
//! prompt* (continue) — each sent only once the agent is idle again after the previous one (or its
//! timeout), with the inter-step delay in between. Cycles repeat until the armed duration ends.
//!
//! Guards: no cycle starts, and one in progress is abandoned, while the agent waits on the user, a
//! usage limit pauses the session, a breaker is open, or the user typed into it recently. A step
//! that is still running at its timeout abandons the cycle rather than type into a busy pane.
//!
//! The machine is pure: [`step`] takes the state, an input and the time, and returns the new state
//! and the effects for the session actor to carry out. Tests drive it in virtual time.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use std::time::Instant;

use crate::detect::Activity;

/// One step of a cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    Update,
    Clear,
    Init,
    Kickstart,
}

impl Step {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Update => "update",
            Self::Clear => "clear",
            Self::Init => "init",
            Self::Kickstart => "kickstart",
        }
    }

    /// Steps that start a turn of their own (a prompt, `/init`); `/clear` only redraws.
    fn starts_a_turn(self) -> bool {
        !matches!(self, Self::Clear)
    }
}

pub const DEFAULT_UPDATE_PROMPT: &str =
    "Before your context is reset: write a short note to PROGRESS.md saying what you \
finished, what you were in the middle of, and what comes next. Keep it brief; after the reset it is all you will have.";
pub const DEFAULT_KICKSTART_PROMPT: &str =
    "Continue the work. Read PROGRESS.md first if it exists, then carry on with \
the next unfinished step. Do not redo work that is already done.";

/// Every setting of the cycle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// How long the session must be idle before a cycle starts.
    #[serde(with = "crate::clock::secs")]
    pub idle_timeout: Duration,
    /// How long the arrangement stays armed.
    #[serde(with = "crate::clock::secs")]
    pub duration: Duration,
    /// The pause between steps.
    #[serde(with = "crate::clock::secs")]
    pub inter_step_delay: Duration,
    /// How long a step may keep the agent busy before the cycle is abandoned.
    #[serde(with = "crate::clock::secs")]
    pub step_timeout: Duration,
    /// Reset the context with `/clear` and `/init` between the update and the kickstart.
    pub clear_and_init: bool,
    /// Sent first; empty skips the step.
    pub update_prompt: String,
    /// Sent last; empty skips the step.
    pub kickstart_prompt: String,
    /// Answer the agent's routine dialogs (the kinds its file marks routine: a folder's trust, a
    /// confirmation), each journalled; never a question it asked or a permission prompt.
    pub auto_accept: bool,
    /// A cycle does not start within this long of the user typing into the session.
    #[serde(with = "crate::clock::secs")]
    pub user_quiet: Duration,
    /// Start the agent again after it exits with 0 too (the agent's own end, the user's `/exit`);
    /// by default a clean exit ends the session.
    pub restart_clean_exits: bool,
    /// Restarts in a row without progress in the working tree before the crash-loop breaker opens.
    pub max_restarts: u32,
    /// The waits before the first, second, … restart since the working tree last changed; the last
    /// one repeats.
    #[serde(with = "crate::clock::secs_list")]
    pub restart_backoff: Vec<Duration>,
    /// At this much of its context in use (percent, from the statusLine), the agent is asked for a
    /// handoff and its context reset; 0 never.
    pub handoff_at: f64,
    /// Refuse, through the client's hooks, the commands an unattended session must not run
    /// (force pushes to the default branch, `rm -rf` outside the working directory, …).
    pub guard: bool,
    /// Run the agent in its own sandbox (`[sandbox]` in config.toml): nobody watches it.
    pub sandbox: bool,
    /// The waits of an open no-progress or crash-loop breaker before it lets one probe through
    /// (see [`crate::breaker`]); empty: it stays open until `nightshift breaker reset`.
    #[serde(with = "crate::clock::secs_list_or_none")]
    pub breaker_retry: Vec<Duration>,
    /// The user's standing instructions for a night under this preset, restated by every input
    /// Nightshift sends by itself; empty: none (`--standing` gives them for one session).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub standing: String,
    /// What a session under this preset does at a usage limit (`wait`, or `switch` to another
    /// account); `--at-limit` says it for one session.
    #[serde(skip_serializing_if = "is_wait")]
    pub at_limit: crate::limits::AtLimit,
    /// With `at_limit = "failover"`: the other agent's command line (`codex --model gpt-5.5`);
    /// `--failover-to` says it for one session.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub failover_to: String,
    /// With `failover_to`: the account of `config.toml` the other agent logs in with (empty: its
    /// client's own); `--failover-account` says it for one session.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub failover_account: String,
}

fn is_wait(at: &crate::limits::AtLimit) -> bool {
    *at == crate::limits::AtLimit::Wait
}

/// Settings left out of a hand-written preset are the Overnight preset's timings, prompts, restart
/// ladder and breaker waits, but not its guard and sandbox: those are off unless the preset says
/// `guard = true` or `sandbox = true` (the built-in Overnight turns both on, and Ralph the sandbox:
/// [`builtin`]).
impl Default for Settings {
    fn default() -> Self {
        Self::preset(10, 480)
    }
}

impl Settings {
    fn preset(idle_secs: u64, duration_mins: u64) -> Self {
        Self {
            idle_timeout: Duration::from_secs(idle_secs),
            duration: Duration::from_secs(duration_mins * 60),
            inter_step_delay: Duration::from_secs(1),
            step_timeout: Duration::from_secs(30 * 60),
            clear_and_init: true,
            update_prompt: DEFAULT_UPDATE_PROMPT.to_string(),
            kickstart_prompt: DEFAULT_KICKSTART_PROMPT.to_string(),
            auto_accept: false,
            user_quiet: Duration::from_secs(30),
            restart_clean_exits: false,
            max_restarts: 10,
            restart_backoff: crate::breaker::LADDER.to_vec(),
            handoff_at: 75.0,
            guard: false,
            sandbox: false,
            breaker_retry: crate::breaker::RETRY.to_vec(),
            standing: String::new(),
            at_limit: crate::limits::AtLimit::Wait,
            failover_to: String::new(),
            failover_account: String::new(),
        }
    }

    /// The steps of one cycle, in order.
    pub fn steps(&self) -> Vec<Step> {
        let mut steps = Vec::new();
        if !self.update_prompt.trim().is_empty() {
            steps.push(Step::Update);
        }
        if self.clear_and_init {
            steps.extend([Step::Clear, Step::Init]);
        }
        if !self.kickstart_prompt.trim().is_empty() {
            steps.push(Step::Kickstart);
        }
        steps
    }

    /// The files the cycle's own steps write, relative to the session's directory: those its prompts
    /// name (`PROGRESS.md`) and the instructions file `/init` writes. Changes to them alone are not
    /// the agent's progress.
    pub fn own_files(&self, instructions_file: Option<&str>) -> Vec<String> {
        let mut files = files_named([self.update_prompt.as_str(), self.kickstart_prompt.as_str()]);
        if let Some(file) = instructions_file.filter(|_| self.clear_and_init) {
            if !files.iter().any(|f| f == file) {
                files.push(file.to_string());
            }
        }
        files
    }

    /// What a step types.
    pub fn text(&self, step: Step) -> &str {
        match step {
            Step::Update => &self.update_prompt,
            Step::Clear => "/clear",
            Step::Init => "/init",
            Step::Kickstart => &self.kickstart_prompt,
        }
    }
}

/// The files `prompts` name (`PROGRESS.md`, `TASKS.md`: a word with a short extension, no URL),
/// each once, in the order named.
pub fn files_named<'a>(prompts: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for prompt in prompts {
        for word in prompt.split(|c: char| c.is_whitespace() || "`'\"()[],;".contains(c)) {
            let word = word.trim_end_matches(['.', '!', '?', ':']);
            let named = word.rsplit_once('.').is_some_and(|(stem, ext)| {
                !stem.is_empty() && (1..=8).contains(&ext.len()) && ext.chars().all(|c| c.is_ascii_alphanumeric())
            });
            if named && !word.contains("://") && !files.iter().any(|f| f == word) {
                files.push(word.to_string());
            }
        }
    }
    files
}

/// How a step of a cycle went, for the journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepOutcome {
    /// Typed into the session.
    Sent,
    /// The agent is idle again after it.
    Done,
    /// It still had the agent busy at its timeout.
    TimedOut,
}

/// What happened to a session's respawn arrangement, for the journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Armed,
    Disarmed,
    CycleStarted,
    CycleFinished,
    Abandoned,
    Expired,
    /// The agent was started again after it exited.
    Restart,
    /// A routine dialog was answered with Enter.
    AutoAccept,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Armed => "armed",
            Self::Disarmed => "disarmed",
            Self::CycleStarted => "cycle started",
            Self::CycleFinished => "cycle finished",
            Self::Abandoned => "abandoned",
            Self::Expired => "expired",
            Self::Restart => "restart",
            Self::AutoAccept => "auto-accept",
        }
    }
}

/// The built-in presets: (name, title, idle timeout s, duration min, what it is for).
pub const BUILTIN_PRESETS: [(&str, &str, u64, u64, &str); 5] = [
    ("solo", "Solo", 3, 60, "one agent working alone: fast cycles with a context reset"),
    ("subagents", "Subagents", 45, 240, "a lead session running subagents; tolerates their silences"),
    ("team", "Team", 90, 480, "leading an agent team; tolerates long silences"),
    (
        "ralph",
        "Ralph/Todo",
        8,
        480,
        "quick cycles on one goal, each picking up from PROGRESS.md; a task list to check off is a loop's \
         (nightshift loop --tasks)",
    ),
    ("overnight", "Overnight", 10, 480, "unattended overnight runs with a full reset between cycles"),
];

/// A built-in preset's settings. Overnight guards its session, and it and Ralph run sandboxed
/// and answer routine dialogs (nobody watches them).
pub fn builtin(name: &str) -> Option<Settings> {
    let key = name.to_ascii_lowercase().replace("/todo", "");
    BUILTIN_PRESETS.iter().find(|p| p.0 == key).map(|p| Settings {
        guard: p.0 == "overnight",
        sandbox: matches!(p.0, "overnight" | "ralph"),
        auto_accept: matches!(p.0, "overnight" | "ralph"),
        ..Settings::preset(p.2, p.3)
    })
}

/// Where the cycle is.
#[derive(Debug, Clone, PartialEq)]
pub enum Phase {
    /// Waiting for the session to have been idle for the idle timeout.
    Watching,
    /// The cycle began: its progress is being measured, and `first` goes out once it is (or at
    /// `until`), so that a breaker the measure opens stops the cycle before anything is typed.
    Measuring { cycle: u32, first: Step, until: Instant },
    /// A step was sent at `at`; waiting for the agent to be idle again.
    Running { cycle: u32, step: Step, at: Instant, saw_working: bool },
    /// Between steps: `next` goes out at `at`.
    Pausing { cycle: u32, next: Step, at: Instant },
    /// The duration ended.
    Finished,
}

/// The machine's whole state.
#[derive(Debug, Clone, PartialEq)]
pub struct State {
    pub settings: Settings,
    pub phase: Phase,
    pub armed_until: Instant,
    pub cycles: u32,
    activity: Option<Activity>,
    idle_since: Option<Instant>,
    last_user_input: Option<Instant>,
    /// Why cycles may not run now (a limit pause, an open breaker), if anything.
    blocked: Option<String>,
    /// A cycle is asked for now, without its update step (a handoff was written already): it runs
    /// as soon as the agent is idle, not after the idle timeout.
    now_requested: bool,
    /// The steps of the cycle under way.
    cycle_steps: Vec<Step>,
}

/// What happens to the machine.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// The detector changed the session's activity.
    Activity(Activity),
    /// The user typed into the session.
    UserInput,
    /// Cycles must not run (`Some(why)`), or may again (`None`: the idle timeout counts from now).
    Blocked(Option<String>),
    /// The agent was started again: nothing is known of the new one's activity yet.
    Restarted,
    /// Run a cycle as soon as the agent is idle, without its update step (the agent has written
    /// its handoff already).
    CycleNow,
    /// The cycle's progress was measured (and any breaker it trips is open already).
    Measured,
    /// The client said a turn ended (Claude's `Stop` hook, Codex's notify). A turn too quick for
    /// the screen shows no working signal: this is then the only word that it ran.
    TurnEnded,
    /// Time passed (at the deadline the machine asked for).
    Tick,
}

/// What the session actor must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// A cycle begins: the moment to measure progress. Its first step waits for
    /// [`Input::Measured`].
    CycleStarted { cycle: u32 },
    /// Type this step's text and press Enter.
    Send { cycle: u32, step: Step, text: String },
    /// A step is over — for the journal.
    StepEnded { cycle: u32, step: Step, outcome: StepOutcome },
    /// The cycle was given up, and why.
    Abandoned { cycle: u32, reason: String },
    /// The last step went out; the agent works on the kickstart.
    CycleFinished { cycle: u32 },
    /// The armed duration is over.
    Expired,
}

/// After a step that starts no turn, idle again means this long without activity after sending.
const SETTLE: Duration = Duration::from_secs(3);
/// A prompt that did not start a turn is taken as done after this long.
const NO_TURN: Duration = Duration::from_secs(15);
/// A cycle's first step goes out after this long even when its measure never came back.
const MEASURE_WAIT: Duration = Duration::from_secs(30);

impl State {
    pub fn new(settings: Settings, now: Instant) -> Self {
        Self {
            armed_until: now + settings.duration,
            settings,
            phase: Phase::Watching,
            cycles: 0,
            activity: None,
            idle_since: None,
            last_user_input: None,
            blocked: None,
            now_requested: false,
            cycle_steps: Vec::new(),
        }
    }

    /// When [`Input::Tick`] should come next, if time alone can change anything.
    pub fn next_deadline(&self) -> Option<Instant> {
        let expiry = Some(self.armed_until);
        let own = match &self.phase {
            Phase::Finished => return None,
            Phase::Watching => self.ready_at(),
            Phase::Measuring { until, .. } => Some(*until),
            Phase::Running { step, at, saw_working, .. } => {
                let timeout = *at + self.settings.step_timeout;
                let settle = if step.starts_a_turn() && !saw_working { *at + NO_TURN } else { *at + SETTLE };
                Some(timeout.min(settle))
            }
            Phase::Pausing { at, .. } => Some(*at),
        };
        [expiry, own].into_iter().flatten().min()
    }

    /// When a cycle could start, given what is known now.
    fn ready_at(&self) -> Option<Instant> {
        if self.blocked.is_some() || self.activity != Some(Activity::Idle) {
            return None;
        }
        if self.now_requested {
            return self.idle_since;
        }
        let idle_ok = self.idle_since? + self.settings.idle_timeout;
        let user_ok = self.last_user_input.map(|t| t + self.settings.user_quiet);
        Some(user_ok.map_or(idle_ok, |u| u.max(idle_ok)))
    }

    /// Why a cycle must not go on now, if it must not.
    fn guard(&self, now: Instant) -> Option<String> {
        if let Some(why) = &self.blocked {
            return Some(why.clone());
        }
        if self.activity == Some(Activity::WaitingInput) {
            return Some("the agent is waiting for the user".into());
        }
        if self.last_user_input.is_some_and(|t| now < t + self.settings.user_quiet) {
            return Some("the user is typing in the session".into());
        }
        None
    }
}

/// The machine: the next state and what to do.
pub fn step(state: &State, input: Input, now: Instant) -> (State, Vec<Effect>) {
    let mut s = state.clone();
    let mut fx = Vec::new();
    match input {
        Input::Activity(a) => {
            if s.activity != Some(a) {
                s.idle_since = (a == Activity::Idle).then_some(now);
            }
            s.activity = Some(a);
            if let Phase::Running { saw_working, .. } = &mut s.phase {
                if a == Activity::Working {
                    *saw_working = true;
                }
            }
        }
        Input::UserInput => s.last_user_input = Some(now),
        Input::Blocked(why) => {
            // Unblocked: a pause, a hold or a breaker is not idle time to count.
            if why.is_none() && s.blocked.is_some() && s.activity == Some(Activity::Idle) {
                s.idle_since = Some(now);
            }
            s.blocked = why;
        }
        Input::Restarted => {
            s.activity = None;
            s.idle_since = None;
        }
        Input::CycleNow => s.now_requested = true,
        Input::Measured => {
            if let Phase::Measuring { cycle, first, .. } = s.phase {
                s.phase = Phase::Pausing { cycle, next: first, at: now };
            }
        }
        Input::TurnEnded => {
            // Idle since the turn's end, and the step under way had its turn.
            if s.activity == Some(Activity::Idle) {
                s.idle_since = Some(now);
            }
            if let Phase::Running { step, saw_working, .. } = &mut s.phase {
                *saw_working |= step.starts_a_turn();
            }
        }
        Input::Tick => {}
    }
    if s.phase == Phase::Finished {
        return (s, fx);
    }
    if now >= s.armed_until {
        if let Phase::Running { cycle, .. } | Phase::Pausing { cycle, .. } | Phase::Measuring { cycle, .. } = s.phase {
            fx.push(Effect::Abandoned { cycle, reason: "the armed duration ended".into() });
        }
        s.phase = Phase::Finished;
        fx.push(Effect::Expired);
        return (s, fx);
    }
    // A guard that appears mid-cycle ends the cycle cleanly.
    if let Phase::Running { cycle, .. } | Phase::Pausing { cycle, .. } | Phase::Measuring { cycle, .. } = s.phase {
        if let Some(reason) = s.guard(now) {
            s.phase = Phase::Watching;
            s.idle_since = (s.activity == Some(Activity::Idle)).then_some(now);
            fx.push(Effect::Abandoned { cycle, reason });
            return (s, fx);
        }
    }
    if let Phase::Measuring { cycle, first, until } = s.phase {
        if now >= until {
            s.phase = Phase::Pausing { cycle, next: first, at: now };
        }
    }
    match s.phase.clone() {
        Phase::Watching => {
            if s.ready_at().is_some_and(|t| now >= t) && s.guard(now).is_none() {
                let mut steps = s.settings.steps();
                if std::mem::take(&mut s.now_requested) {
                    steps.retain(|st| *st != Step::Update);
                    if !steps.contains(&Step::Clear) {
                        // The handoff is for a fresh context: the reset is the point.
                        let at = usize::from(steps.first() == Some(&Step::Update));
                        steps.insert(at, Step::Clear);
                    }
                }
                s.cycle_steps.clone_from(&steps);
                if let Some(&first) = steps.first() {
                    s.cycles += 1;
                    let cycle = s.cycles;
                    fx.push(Effect::CycleStarted { cycle });
                    s.phase = Phase::Measuring { cycle, first, until: now + MEASURE_WAIT };
                }
            }
        }
        Phase::Running { cycle, step: current, at, saw_working } => {
            let idle = s.activity == Some(Activity::Idle);
            let done = idle
                && if current.starts_a_turn() {
                    // Idle again after the turn this step started (the idle came after the send).
                    (saw_working && s.idle_since.is_some_and(|t| t >= at)) || now >= at + NO_TURN
                } else {
                    now >= at + SETTLE
                };
            if done {
                fx.push(Effect::StepEnded { cycle, step: current, outcome: StepOutcome::Done });
                let steps = &s.cycle_steps;
                let next = steps.iter().position(|x| *x == current).and_then(|i| steps.get(i + 1)).copied();
                match next {
                    Some(next) => s.phase = Phase::Pausing { cycle, next, at: now + s.settings.inter_step_delay },
                    None => {
                        s.phase = Phase::Watching;
                        s.idle_since = None;
                        fx.push(Effect::CycleFinished { cycle });
                    }
                }
            } else if now >= at + s.settings.step_timeout {
                fx.push(Effect::StepEnded { cycle, step: current, outcome: StepOutcome::TimedOut });
                fx.push(Effect::Abandoned {
                    cycle,
                    reason: format!("the {} step still had the agent busy after its timeout", current.as_str()),
                });
                s.phase = Phase::Watching;
            }
        }
        // Waiting for the measure (the step after it is due at `until` in any case).
        Phase::Measuring { .. } => {}
        Phase::Pausing { cycle, next, at } => {
            if now >= at {
                if s.activity == Some(Activity::Idle) {
                    send(&mut s, &mut fx, cycle, next, now);
                } else {
                    // Never type into a busy pane: whatever woke the agent, this cycle is over.
                    fx.push(Effect::Abandoned {
                        cycle,
                        reason: "the agent was busy when the next step was due".into(),
                    });
                    s.phase = Phase::Watching;
                }
            }
        }
        Phase::Finished => {}
    }
    (s, fx)
}

fn send(s: &mut State, fx: &mut Vec<Effect>, cycle: u32, step: Step, now: Instant) {
    fx.push(Effect::Send { cycle, step, text: s.settings.text(step).to_string() });
    s.phase = Phase::Running { cycle, step, at: now, saw_working: false };
    if step == Step::Kickstart {
        // The kickstart is the last step: the cycle is done once it is sent.
        fx.push(Effect::CycleFinished { cycle });
        s.phase = Phase::Watching;
        s.idle_since = None;
    }
}

#[cfg(test)]
mod tests;
