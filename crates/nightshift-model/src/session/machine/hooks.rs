//! What the session decides on its client's hooks: the conversation it resumes (Codex's notify
//! names it too), a usage limit the client reports itself, the guard's refusals, and the handoff
//! before the context fills (rota's):
//! once the statusLine shows the context at the threshold, the client is asked for a handoff — at
//! the next `Stop` (blocking it once, with a reason the model reads), or as the next respawn
//! cycle's update step — and its answer is kept; the cycle's `/clear` follows, and `SessionStart`
//! gives the handoff back as context. An agent that will not write one is asked twice more at most.

use super::*;
use crate::automated::Automated;
use crate::hooks::{guard, Answer, Event, Hook, StartSource};
use crate::limits::Source;

/// Times a handoff is asked for before the cycle goes on without one.
const HANDOFF_ASKS: u32 = 3;
/// A handoff this old or newer is given to a client that starts again.
const FRESH_HANDOFF: chrono::Duration = chrono::Duration::minutes(15);
/// Shorter than this is not a handoff.
const HANDOFF_MIN_CHARS: usize = 40;
/// How much of a handoff's opening a move's first prompt is checked for.
const HANDOFF_CHECK_CHARS: usize = 60;
/// How much a fresh conversation that starts past the threshold must grow, in points of its
/// context, before it is asked for a handoff again.
pub(super) const CONTEXT_GROWTH: f64 = 10.0;

/// Where a fresh conversation's context starts, after a handoff's reset: one that already starts
/// past the threshold (huge memory files, a huge system prompt) is not asked again and again — it
/// would hand off every turn and do no work — but once, when it has grown by a real amount.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) enum Floor {
    #[default]
    None,
    /// Reset after a handoff: the next reading says where the fresh conversation starts.
    Pending,
    /// It started at this much, past the threshold.
    At(f64),
}

/// Where the session is with its handoff.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) enum Handoff {
    #[default]
    None,
    /// The context passed the threshold: the next `Stop` (or update step) asks.
    Due,
    /// Asked `times`; the answer comes with the next `Stop`.
    Asked { times: u32 },
    /// Written: the cycle's `/clear` is next, then `SessionStart` gives it back.
    Written,
}

/// What the session keeps of the latest handoff.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Written {
    pub text: String,
    pub at: DateTime<Utc>,
    /// A conversation received it: it belongs to that one, and no later one is given it.
    pub given: bool,
}

/// What the client's hooks told the session, and where it is with its handoff.
#[derive(Debug, Clone)]
pub(super) struct Client {
    /// The client's conversation id, from its hooks.
    conversation: Option<String>,
    /// Claude's hooks reach the session: its own word on a limit comes before the screen's.
    heard: bool,
    guard_rules: Option<std::sync::Arc<guard::Rules>>,
    handoff: Handoff,
    /// The latest handoff the agent wrote.
    last_handoff: Option<Written>,
    /// The next kickstart says what the handoff holds.
    kick_with_handoff: bool,
    /// A move's first turn must carry the handoff that begins with this.
    check: Option<String>,
    /// The context's use, as the statusLine last said.
    context_pct: Option<f64>,
    /// Where the fresh conversation after the last handoff started.
    context_floor: Floor,
    /// A handoff request to type once the screen is back at the prompt (its asking), for a client
    /// that asks it by typing.
    typed_ask: Option<u32>,
    /// When a typed handoff request's turn should have begun.
    ask_check: Option<Instant>,
}

impl Client {
    /// A client resuming `conversation` (if any), with the guard's rules and the last handoff the
    /// journal kept.
    pub(super) fn new(
        conversation: Option<String>,
        guard_rules: Option<std::sync::Arc<guard::Rules>>,
        handoff: Option<(String, DateTime<Utc>)>,
        handoff_given: bool,
    ) -> Self {
        Self {
            conversation,
            heard: false,
            guard_rules,
            handoff: Handoff::None,
            last_handoff: handoff.map(|(text, at)| Written { text, at, given: handoff_given }),
            kick_with_handoff: false,
            check: None,
            context_pct: None,
            context_floor: Floor::None,
            typed_ask: None,
            ask_check: None,
        }
    }

    /// When a typed handoff request is checked for its turn, while one is.
    pub(super) fn ask_check(&self) -> Option<Instant> {
        self.ask_check
    }

    /// A turn began: a typed request's Enter was not lost.
    pub(super) fn turn_began(&mut self) {
        self.ask_check = None;
    }

    /// Whether the client's hooks reach the session (Claude's; Codex's notify does not count).
    pub(super) fn heard(&self) -> bool {
        self.heard
    }

    /// The conversation a client started again resumes.
    pub(super) fn conversation(&self) -> Option<String> {
        self.conversation.clone()
    }

    /// The session moves to another account: its conversation is not the next client's.
    pub(super) fn leave_conversation(&mut self) -> Option<String> {
        self.conversation.take()
    }

    /// A handoff written within [`FRESH_HANDOFF`] of `now` that no conversation received yet.
    pub(super) fn fresh_handoff(&self, now: Now) -> bool {
        self.undelivered().is_some_and(|h| now.wall - h.at <= FRESH_HANDOFF)
    }

    /// The last handoff the agent wrote (or Nightshift built).
    pub(super) fn written(&self) -> Option<&Written> {
        self.last_handoff.as_ref()
    }

    /// The last handoff, while no conversation has received it.
    fn undelivered(&self) -> Option<&Written> {
        self.last_handoff.as_ref().filter(|h| !h.given)
    }

    /// The last handoff went to a conversation: no later one gets it.
    pub(super) fn delivered(&mut self) {
        if let Some(h) = &mut self.last_handoff {
            h.given = true;
        }
    }

    /// A switch is due: it waits for a handoff, unless one is under way already.
    pub(super) fn handoff_for_switch(&mut self) {
        if self.handoff == Handoff::None {
            self.handoff = Handoff::Due;
        }
    }
}

/// The request for a handoff: the reason of the blocked `Stop`, or the cycle's update step.
pub fn handoff_request(context_pct: Option<f64>) -> String {
    let full = context_pct.map(|p| format!(" (it is {}% full)", p.round())).unwrap_or_default();
    format!(
        "Your context will be reset soon{full}. Before it is, answer with a handoff for your next self, as your \
         reply (not in a file): where you got to, what is next, and what to check first. It will be given back \
         to you after the reset; keep it under 300 words."
    )
}

/// The prompt a later start of a session's agent begins with — a restart, a restore after
/// Nightshift's own end, a move to another account — never the opening prompt, which starts the
/// first conversation only: the kickstart, naming the handoff when one is fresh (written within
/// 15 minutes: the client is given it as context too); a fresh handoff alone when no kickstart is
/// armed; nothing otherwise (an attended session waits for its user).
///
/// `in_context` says whether the client has the handoff as context already (Claude's
/// `SessionStart`, a resumed conversation that holds it); a fresh Codex thread does not, and gets
/// the whole of it in the prompt.
pub fn continuation(
    handoff: Option<(&str, DateTime<Utc>)>,
    kickstart: Option<&str>,
    now: DateTime<Utc>,
    in_context: bool,
) -> Option<String> {
    let kickstart = kickstart.map(str::trim).filter(|k| !k.is_empty());
    let fresh = handoff.filter(|(_, at)| now - *at <= FRESH_HANDOFF).map(|(text, _)| text);
    match (kickstart, fresh) {
        (Some(kick), Some(text)) => Some(with_handoff(kick, text, in_context)),
        (Some(kick), None) => Some(kick.to_string()),
        (None, Some(text)) => {
            Some(format!("Continue the work from your handoff (written before you stopped):\n\n{text}"))
        }
        (None, None) => None,
    }
}

/// The kickstart, saying what the handoff in the client's context begins with, or with the whole
/// handoff when the client does not have it.
fn with_handoff(kickstart: &str, handoff: &str, in_context: bool) -> String {
    if !in_context {
        return format!(
            "{kickstart}\n\nYour handoff, written before your context was reset. Start from it:\n\n{handoff}"
        );
    }
    let opening: String = handoff.chars().take(120).collect();
    format!("{kickstart}\n\nYour handoff from before the context reset is in your context; it begins: \"{opening}…\"")
}

impl Machine {
    pub(super) fn on_hook(
        &mut self,
        hook: Hook,
        limit: Option<LimitText>,
        facts: Option<guard::Facts>,
        now: Now,
        fx: &mut Vec<Effect>,
    ) {
        // Claude's hooks report limits too (StopFailure); Codex's notify says only that turns end.
        if !matches!(hook.event, Event::TurnComplete { .. }) {
            self.client.heard = true;
        }
        let conversation =
            hook.conversation.filter(|id| !self.switch_disowns(id) && self.client.conversation.as_ref() != Some(id));
        if let Some(id) = conversation {
            self.emit(EventKind::Conversation { id: id.clone() }, fx);
            self.client.conversation = Some(id);
        }
        let answer = match hook.event {
            Event::SessionStart { source } => self.session_started(&source, now, fx),
            Event::Stop { continued, last_message } => {
                self.turn_done(now, fx);
                let answer = self.stopped(continued, last_message, now, fx);
                // A blocked Stop goes on with the same turn.
                if !matches!(answer, Answer::Block { .. }) {
                    self.drive(respawn::Input::TurnEnded, now, fx);
                }
                answer
            }
            Event::TurnComplete { last_message, input } => {
                self.check_handoff(&input.join("\n"), fx);
                self.drive(respawn::Input::TurnEnded, now, fx);
                self.turn_completed(last_message, now, fx);
                Answer::Pass
            }
            Event::StopFailure { error, last_message } => {
                if error == crate::hooks::StopError::RateLimit {
                    let limit = limit.unwrap_or_else(|| LimitText {
                        kind: crate::limits::LimitKind::Unspecified,
                        resets_at: None,
                        line: last_message.unwrap_or_else(|| "the client reports a rate limit".into()),
                    });
                    if self.limits.limit().is_paused() {
                        // The turn a resume (ours or the client's) started was refused: limited again.
                        self.refused(limit.resets_at, now, fx);
                    } else {
                        self.pause(limit, Source::Hook, false, limit::Timer::Maybe, now, fx);
                    }
                }
                Answer::Pass
            }
            Event::PreToolUse { tool, input, .. } => {
                // A turn that runs tools was not refused: after the reset, the limit is over.
                self.turn_done(now, fx);
                self.guarded(&tool, &input, facts.as_ref(), fx)
            }
            Event::ToolEnded { tool, input, error } => {
                // Asked for of a sandboxed session's Bash calls only: what its commands did.
                if tool == "Bash" {
                    let clip = |s: &str| s.trim().chars().take(300).collect::<String>();
                    let command = clip(input["command"].as_str().unwrap_or_default());
                    // The client's own fence names the hosts it refused in the failed result;
                    // Nightshift's proxy told of its refusals while the command ran.
                    for (host, port) in error.as_deref().map(crate::agent::refused_hosts).unwrap_or_default() {
                        let refused = fence::Fenced::refused(&mut self.fence, host, port, Some(command.clone()));
                        self.emit(refused, fx);
                    }
                    let refused = fence::Fenced::take_refused(&mut self.fence);
                    let blocked = refused || error.as_deref().is_some_and(crate::agent::sandbox_refused);
                    let failed = error.as_deref().map(clip);
                    self.emit(EventKind::SandboxCommand { command: command.clone(), failed, blocked }, fx);
                }
                Answer::Pass
            }
            Event::PreCompact { trigger } => {
                self.emit(EventKind::Compacted { trigger: trigger.to_string() }, fx);
                Answer::Pass
            }
            Event::UserPromptSubmit { prompt } => {
                self.check_handoff(prompt.as_deref().unwrap_or_default(), fx);
                Answer::Pass
            }
            Event::Notification { .. } | Event::SessionEnd { .. } | Event::Other { .. } => Answer::Pass,
        };
        fx.push(Effect::Answer(answer));
    }

    /// The statusLine's context figure: at the threshold, a handoff is due (with respawn armed);
    /// for a fresh conversation that starts past it, once it has grown by [`CONTEXT_GROWTH`].
    pub(super) fn context_seen(&mut self, pct: Option<f64>, fx: &mut Vec<Effect>) {
        self.client.context_pct = pct.or(self.client.context_pct);
        // Respawn's threshold, or without respawn auto-resume's: either way the agent hands off.
        let threshold = match self.cycles.active() {
            Some(r) => Some(r.cycle.settings.handoff_at),
            None => self.limits.auto_resume().map(|a| a.handoff_at),
        };
        let (Some(pct), Some(threshold)) = (pct, threshold) else { return };
        if !(threshold > 0.0 && threshold < 100.0) {
            return;
        }
        if self.client.context_floor == Floor::Pending {
            self.client.context_floor = if pct >= threshold {
                tracing::info!(pct, threshold, "the fresh conversation starts past the handoff threshold");
                self.emit(EventKind::ContextHigh { pct, threshold }, fx);
                Floor::At(pct)
            } else {
                Floor::None
            };
        }
        let due_at = match self.client.context_floor {
            Floor::At(floor) => threshold.max(floor + CONTEXT_GROWTH),
            _ => threshold,
        };
        if pct >= due_at && self.client.handoff == Handoff::None {
            tracing::info!(pct, threshold, "the context is past the handoff threshold: a handoff is due");
            self.client.handoff = Handoff::Due;
            self.emit(EventKind::ContextThreshold { pct, threshold }, fx);
        }
    }

    fn session_started(&mut self, source: &StartSource, now: Now, fx: &mut Vec<Effect>) -> Answer {
        if !matches!(source, StartSource::Clear | StartSource::Startup | StartSource::Resume | StartSource::Compact) {
            return Answer::Pass;
        }
        // After the handoff's /clear (or, without respawn, the client's own compaction), or a
        // client started again soon after one was written; once a conversation received it, it is
        // that one's alone.
        let fresh = self.client.handoff == Handoff::Written || self.client.fresh_handoff(now);
        if matches!(source, StartSource::Clear | StartSource::Compact) && self.client.handoff == Handoff::Written {
            self.client.handoff = Handoff::None;
            self.client.context_floor = Floor::Pending;
        }
        let Some(written) = self.client.undelivered().filter(|_| fresh) else { return Answer::Pass };
        let text = format!(
            "Your handoff, written before your context was reset ({}). Start from it:\n\n{}",
            crate::clock::format_ts(written.at),
            written.text
        );
        self.client.delivered();
        self.emit(EventKind::HandoffGiven { source: source.to_string() }, fx);
        Answer::Context { text: self.automated(Automated::Handoff, &text, fx) }
    }

    fn stopped(&mut self, continued: bool, last_message: Option<String>, now: Now, fx: &mut Vec<Effect>) -> Answer {
        match self.client.handoff {
            Handoff::Due if !self.cycles.held() => {
                self.client.handoff = Handoff::Asked { times: 1 };
                self.emit(EventKind::HandoffAsked { times: 1 }, fx);
                Answer::Block {
                    reason: self.automated(Automated::HandoffRequest, &handoff_request(self.client.context_pct), fx),
                }
            }
            Handoff::Asked { times } => {
                let text = last_message.map(|t| t.trim().to_string()).unwrap_or_default();
                if text.chars().count() >= HANDOFF_MIN_CHARS {
                    self.handoff_written(text, now, fx);
                    if self.moving_due() {
                        // The new account's client starts from it (and SessionStart gives it back).
                        self.move_now(now, fx);
                        return Answer::Pass;
                    }
                    // Blocked for it: the cycle's reset comes now, without its update step.
                    if continued {
                        self.drive(respawn::Input::CycleNow, now, fx);
                    }
                    return Answer::Pass;
                }
                if times >= HANDOFF_ASKS {
                    // It will not write one: the cycle goes on without (and asks no more this time).
                    self.client.handoff = Handoff::None;
                    self.emit(EventKind::HandoffMissing { times }, fx);
                    self.move_now(now, fx);
                    return Answer::Pass;
                }
                self.client.handoff = Handoff::Asked { times: times + 1 };
                self.emit(EventKind::HandoffAsked { times: times + 1 }, fx);
                Answer::Block {
                    reason: self.automated(Automated::HandoffRequest, &handoff_request(self.client.context_pct), fx),
                }
            }
            // A switch due without a handoff to ask for (one was just written): at this turn's end.
            Handoff::None | Handoff::Written if self.moving_due() && !self.cycles.held() => {
                self.move_now(now, fx);
                Answer::Pass
            }
            _ => Answer::Pass,
        }
    }

    /// The guard as the session's options show it: armed, and whether it can refuse anything.
    pub(super) fn guard_view(&self) -> Option<String> {
        self.client.guard_rules.as_ref()?;
        Some(if self.asks_by_typing() {
            let held = if self.sandbox.is_some() { "; its sandbox keeps it to its folder" } else { "" };
            format!("armed, but it cannot refuse Codex's commands: Codex has no hook before one runs{held}")
        } else {
            "on: refuses the commands its rules name (force pushes, hard resets, deletions outside the working \
             directory, …)"
                .to_string()
        })
    }

    /// Whether the client has no hook that holds a turn's end (Codex: its notify only reports one),
    /// so a handoff is asked by typing the request at its prompt once a turn has ended.
    pub(super) fn asks_by_typing(&self) -> bool {
        self.agent == AgentKind::Codex
    }

    /// Codex's notify: a turn ended, with its last message. A handoff due for an account switch is
    /// asked now, at the prompt; the next turn's last message is the handoff, and the switch goes.
    fn turn_completed(&mut self, last_message: Option<String>, now: Now, fx: &mut Vec<Effect>) {
        if !self.asks_by_typing() {
            return;
        }
        let switching = self.moving_due() && !self.cycles.held();
        match self.client.handoff {
            Handoff::Due if switching => self.ask_typed(1, now, fx),
            Handoff::Asked { times } => {
                let text = last_message.map(|t| t.trim().to_string()).unwrap_or_default();
                if text.chars().count() >= HANDOFF_MIN_CHARS {
                    self.handoff_written(text, now, fx);
                    if switching {
                        self.move_now(now, fx);
                    }
                    return;
                }
                // A respawn cycle's update step asked: the cycle goes on, once.
                if times >= HANDOFF_ASKS || !switching {
                    self.client.handoff = Handoff::None;
                    self.emit(EventKind::HandoffMissing { times }, fx);
                    if switching {
                        self.move_now(now, fx);
                    }
                    return;
                }
                self.ask_typed(times + 1, now, fx);
            }
            Handoff::None | Handoff::Written if switching => self.move_now(now, fx),
            _ => {}
        }
    }

    /// Types the handoff request at the client's prompt (the `times`th asking), once the screen is
    /// back at it: Codex's notify can come before its prompt takes keys again, and what is typed
    /// then is lost.
    fn ask_typed(&mut self, times: u32, now: Now, fx: &mut Vec<Effect>) {
        if self.screen.activity() == Some(Activity::Idle) {
            self.type_ask(times, now, fx);
        } else {
            self.client.typed_ask = Some(times);
        }
    }

    /// The screen is at the prompt again: a handoff request held for it is typed now.
    pub(super) fn prompt_back(&mut self, now: Now, fx: &mut Vec<Effect>) {
        // Asked only for a switch: one that went meanwhile (the client ended) asks nothing.
        if let Some(times) = self.client.typed_ask.take().filter(|_| self.moving_due()) {
            self.type_ask(times, now, fx);
        }
    }

    /// A move is due and no turn runs: the handoff is asked at the prompt now.
    pub(super) fn ask_at_the_prompt(&mut self, now: Now, fx: &mut Vec<Effect>) {
        self.type_ask(1, now, fx);
    }

    fn type_ask(&mut self, times: u32, now: Now, fx: &mut Vec<Effect>) {
        self.client.handoff = Handoff::Asked { times };
        self.emit(EventKind::HandoffAsked { times }, fx);
        let ask = self.automated(Automated::HandoffRequest, &handoff_request(self.client.context_pct), fx);
        self.type_text(ask, true, fx);
        self.client.ask_check = Some(now.mono + ASK_CHECK);
    }

    /// A typed request whose turn has not begun by its check had its Enter lost (a client busy
    /// drawing takes the text and drops the key): Enter is pressed once more.
    pub(super) fn ask_tick(&mut self, now: Now, fx: &mut Vec<Effect>) {
        if self.client.ask_check.is_some_and(|t| t <= now.mono) {
            self.client.ask_check = None;
            let asked = matches!(self.client.handoff, Handoff::Asked { .. });
            if asked && self.moving_due() && self.screen.activity() != Some(Activity::Working) {
                fx.push(Effect::Write { after: Duration::ZERO, bytes: b"\r".to_vec() });
            }
        }
    }

    fn handoff_written(&mut self, text: String, now: Now, fx: &mut Vec<Effect>) {
        self.client.handoff = Handoff::Written;
        self.client.kick_with_handoff = true;
        self.emit(EventKind::Handoff { chars: text.chars().count() }, fx);
        fx.push(Effect::SaveHandoff { text: text.clone() });
        self.client.last_handoff = Some(Written { text, at: now.wall, given: false });
    }

    /// The files a handoff Nightshift builds carries: those the opening prompt and the cycle's
    /// prompts name (`TASKS.md`, `PROGRESS.md`).
    pub(super) fn handoff_files(&self) -> Vec<String> {
        let cycle = self.cycles.respawn().map(|r| &r.cycle.settings);
        let prompts = self
            .opening
            .as_deref()
            .into_iter()
            .chain(cycle.into_iter().flat_map(|c| [c.update_prompt.as_str(), c.kickstart_prompt.as_str()]));
        respawn::files_named(prompts)
    }

    /// The handoff Nightshift builds for a move the agent could not write one for (see
    /// [`crate::session::handoff`]).
    pub(super) fn build_handoff(&self, why: &str, gathered: &crate::session::handoff::Gathered) -> String {
        let known = crate::session::handoff::Known {
            why,
            opening: self.opening.as_deref(),
            kickstart: self.cycles.respawn().map(|r| r.cycle.settings.kickstart_prompt.as_str()),
            last_handoff: self.client.last_handoff.as_ref().map(|h| (h.text.as_str(), h.at)),
        };
        crate::session::handoff::compose(&known, gathered)
    }

    /// A handoff Nightshift built: kept as the agent's would be, for the next conversation.
    pub(super) fn handoff_built(&mut self, text: String, why: String, now: Now, fx: &mut Vec<Effect>) {
        self.emit(EventKind::HandoffBuilt { chars: text.chars().count(), why }, fx);
        self.client.handoff = Handoff::Written;
        self.client.kick_with_handoff = true;
        fx.push(Effect::SaveHandoff { text: text.clone() });
        self.client.last_handoff = Some(Written { text, at: now.wall, given: false });
    }

    /// A move's first turn: whether its prompt carried the handoff (journalled, and told when it
    /// did not: the work is in the folder, but the agent starts without the words on it).
    pub(super) fn check_handoff(&mut self, prompt: &str, fx: &mut Vec<Effect>) {
        let Some(opening) = self.client.check.take() else { return };
        let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let received = flat(prompt).contains(&flat(&opening));
        if !received {
            tracing::warn!("the first turn after a move did not carry its handoff");
        }
        self.emit(EventKind::HandoffChecked { received }, fx);
    }

    /// A move's first prompt carries the handoff: its first turn is checked for it.
    pub(super) fn expect_handoff(&mut self, prompt: Option<&str>) {
        let handoff = self.client.last_handoff.as_ref().map(|h| h.text.as_str());
        self.client.check = handoff.zip(prompt).and_then(|(handoff, prompt)| {
            let opening: String = handoff.trim().chars().take(HANDOFF_CHECK_CHARS).collect();
            prompt.contains(opening.as_str()).then_some(opening)
        });
    }

    /// A cycle's update step while a handoff is due: it asks for the handoff instead.
    pub(super) fn update_text(&mut self, text: String, fx: &mut Vec<Effect>) -> String {
        if self.client.handoff != Handoff::Due {
            return text;
        }
        self.client.handoff = Handoff::Asked { times: 1 };
        self.emit(EventKind::HandoffAsked { times: 1 }, fx);
        handoff_request(self.client.context_pct)
    }

    /// The kickstart after a handoff says what is in it (the client has it as context too).
    pub(super) fn kickstart_text(&mut self, text: String, fx: &mut Vec<Effect>) -> String {
        if !std::mem::take(&mut self.client.kick_with_handoff) {
            return text;
        }
        let Some(written) = &self.client.last_handoff else { return text };
        // After Codex's /clear nothing gives the handoff back: the kickstart carries it.
        let typed = self.asks_by_typing();
        let kick = with_handoff(&text, &written.text, !typed);
        if typed && self.client.handoff == Handoff::Written {
            // Given back, as Claude's SessionStart after /clear: the next one is due when the fresh
            // thread's context reaches the threshold again.
            self.client.handoff = Handoff::None;
            self.client.context_floor = Floor::Pending;
            self.client.delivered();
            self.emit(EventKind::HandoffGiven { source: "kickstart".into() }, fx);
        }
        kick
    }

    /// The prompt a client started again begins with (see [`continuation`]); none while a limit
    /// holds the session (the resume after the reset says it, and nothing is sent into a window
    /// that would refuse it).
    ///
    /// `fresh`: the client starts a new conversation (an account switch), which has the handoff as
    /// context only through Claude's `SessionStart`.
    pub(super) fn restart_prompt(&self, now: Now, fresh: bool) -> Option<String> {
        let window_closed =
            self.limits.limit().paused().is_some_and(|p| p.limit.resets_at.is_none_or(|reset| reset > now.wall));
        if window_closed {
            return None;
        }
        let kickstart = self.cycles.active().map(|r| r.cycle.settings.kickstart_prompt.as_str());
        // A handoff a conversation received is not given to another.
        let handoff = self.client.undelivered().map(|h| (h.text.as_str(), h.at));
        continuation(handoff, kickstart, now.wall, !(fresh && self.asks_by_typing()))
    }

    fn guarded(
        &mut self,
        tool: &str,
        input: &serde_json::Value,
        facts: Option<&guard::Facts>,
        fx: &mut Vec<Effect>,
    ) -> Answer {
        let (Some(rules), Some(command)) = (&self.client.guard_rules, input["command"].as_str()) else {
            return Answer::Pass;
        };
        if tool != "Bash" {
            return Answer::Pass;
        }
        let fallback = guard::Facts::default();
        let Some(denial) = rules.check(command, facts.unwrap_or(&fallback)) else { return Answer::Pass };
        tracing::info!(rule = %denial.kind, "the guard refused a command");
        self.emit(
            EventKind::GuardDenied {
                rule: denial.kind.clone(),
                what: denial.what.clone(),
                command: command.chars().take(500).collect(),
            },
            fx,
        );
        Answer::Deny { reason: denial.reason }
    }
}
