//! The canary: before a night, tonight's installed client is run through a short script of turns
//! against a stand-in of its API ([`crate::standin`]) on 127.0.0.1, in a scratch home with a
//! throwaway key, and every signal the supervisor will listen for is checked to still read: the
//! screen's, each on its own ([`crate::agent::Adapter::readings`]), and the session's, as a
//! session started by Nightshift gets them (the same adapter, hooks and detector).
//!
//! The script is data ([`Script`], `src/agent/<agent>.canary.toml`); the judging of a step's
//! signals is pure ([`judge`]); [`drive`] does the I/O. Results are kept per client version
//! ([`Results`]), so a session started on a version whose canary failed can say so.

pub mod drive;
mod outcome;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use chrono::{DateTime, Utc};
use serde::Deserialize;

pub use crate::agent::canary::{fingerprint, Results, Verdict};
pub use outcome::{checks, fold, report, Outcome, Signal};

use super::Report;
use crate::agent::{AgentKind, DialogKind, Readings, Reply};
use crate::event::{Event, EventKind, SessionState};

/// Every signal a step can expect, with the adapter key a failure points at (empty: the
/// client's hooks and the session's reading of them).
pub const SIGNALS: &[(&str, &str)] = &[
    ("title.working", "[title] working"),
    ("title.idle", "[title] idle"),
    ("working.spinner", "[working] spinner"),
    ("working.footer", "[working] footer"),
    ("composer.prompt", "[composer] prompt"),
    ("dialog.permission", "the [[dialog]] of kind \"permission\""),
    ("dialog.question", "the [[dialog]] of kind \"question\""),
    ("dialog.options", "[answer] option"),
    ("limit.notice", "[limit] region"),
    ("limit.detected", ""),
    ("limit.reset", ""),
    ("session.working", ""),
    ("session.idle", ""),
    ("session.waiting_input", ""),
    ("session.steady", ""),
    ("session.no_drift", ""),
    ("hook.turn_end", ""),
    ("api.retried", ""),
    ("usage.plan", ""),
    ("usage.context", ""),
];

/// How far the limit's reset may be read from the stand-in's: a notice on screen gives it to the
/// minute.
const RESET_SLACK_SECS: i64 = 90;
/// How far a context figure may be from the script's.
const CONTEXT_SLACK_PCT: f64 = 3.0;

/// How a step ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ends {
    /// The session is idle again.
    #[default]
    Idle,
    /// The session read a usage limit.
    Limit,
    /// The stand-in's answer is over and the screen is back at the prompt, with no working signal:
    /// for a turn too short for the session to show it (Codex has no hook when a turn begins).
    Answered,
}

/// One turn of the script.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub name: String,
    /// What is typed, with Enter; none: the step watches the client start.
    #[serde(default)]
    pub say: Option<String>,
    /// The signals that must be read during the step.
    pub expect: Vec<String>,
    /// What is typed when the session waits on a dialog: `allow`, `deny`, `pick N`.
    #[serde(default)]
    pub answer: Option<String>,
    #[serde(default)]
    pub ends: Ends,
    /// The step's time, in seconds.
    #[serde(default = "default_within")]
    pub within: u64,
    /// The context figure `usage.context` expects, in percent.
    #[serde(default)]
    pub context_pct: Option<f64>,
    /// The seconds from the step's start to the reset of the limit the stand-in reports.
    #[serde(default)]
    pub reset_in: Option<u64>,
}

fn default_within() -> u64 {
    30
}

impl Step {
    /// The reply `answer` names.
    pub fn reply(&self) -> Option<Reply> {
        reply(self.answer.as_deref()?)
    }
}

/// `allow`, `deny` or `pick N` as a reply.
fn reply(text: &str) -> Option<Reply> {
    match text.trim() {
        "allow" => Some(Reply::Allow),
        "deny" => Some(Reply::Deny),
        other => other.strip_prefix("pick ")?.trim().parse().ok().map(Reply::Pick),
    }
}

/// An agent's script of turns.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    #[serde(default)]
    pub step: Vec<Step>,
}

impl Script {
    /// The built-in script of `kind` (none for a generic agent: there is no API to stand in for).
    pub fn builtin(kind: AgentKind) -> Option<Self> {
        let text = match kind {
            AgentKind::Claude => include_str!("../agent/claude.canary.toml"),
            AgentKind::Codex => include_str!("../agent/codex.canary.toml"),
            AgentKind::Generic => return None,
        };
        Some(Self::parse(&format!("built-in {kind}.canary.toml"), text).expect("the built-in canary scripts parse"))
    }

    /// The script of `kind`: `dir/<kind>.canary.toml` when the user wrote one, else the built-in.
    pub fn load(kind: AgentKind, dir: Option<&Path>) -> Result<Option<Self>, String> {
        let Some(path) = dir.map(|d| d.join(format!("{kind}.canary.toml"))) else { return Ok(Self::builtin(kind)) };
        match std::fs::read_to_string(&path) {
            Ok(text) => Self::parse(&path.display().to_string(), &text).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::builtin(kind)),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    }

    /// Parses and checks a script; the error is one line naming the file and the fix.
    pub fn parse(file: &str, text: &str) -> Result<Self, String> {
        let script: Self =
            toml::from_str(text).map_err(|e| format!("{file}: {}", crate::toml_error::one_line(text, &e)))?;
        if script.step.is_empty() {
            return Err(format!("{file}: no [[step]]; add one, or remove the file to use the built-in script"));
        }
        for (i, step) in script.step.iter().enumerate() {
            let at = format!("{file}: step {} ({})", i + 1, step.name);
            if let Some(unknown) = step.expect.iter().find(|s| !SIGNALS.iter().any(|(name, _)| name == s)) {
                let known: Vec<&str> = SIGNALS.iter().map(|(n, _)| *n).collect();
                return Err(format!(
                    "{at} expects `{unknown}`, which is no signal; the signals are {}",
                    known.join(", ")
                ));
            }
            if step.answer.as_deref().is_some_and(|a| reply(a).is_none()) {
                return Err(format!("{at}: `answer` is \"allow\", \"deny\" or \"pick N\""));
            }
            if step.expect.iter().any(|s| s == "usage.context") && step.context_pct.is_none() {
                return Err(format!("{at} expects `usage.context`: give the figure it should read as `context_pct`"));
            }
            if step.ends == Ends::Limit && step.reset_in.is_none() {
                return Err(format!("{at} ends on a limit: give the seconds to its reset as `reset_in`"));
            }
        }
        Ok(script)
    }
}

/// One frame as the canary keeps it: when, the title, its last rows, and each signal's reading.
#[derive(Debug, Clone)]
pub struct Frame {
    pub at: SystemTime,
    pub title: String,
    /// The last non-blank rows, for saying what was seen instead.
    pub tail: Vec<String>,
    pub readings: Readings,
}

/// One request the stand-in answered during a step.
#[derive(Debug, Clone)]
pub struct Request {
    /// What the stand-in made of it (`fast`, `overload`, `after_tool`, …).
    pub scenario: String,
    /// The end of its last user message.
    pub said: String,
    pub status: u16,
    pub at: SystemTime,
    pub done_at: Option<SystemTime>,
}

/// Everything seen during one step.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    pub frames: Vec<Frame>,
    /// The session's events, in order.
    pub events: Vec<Event>,
    pub requests: Vec<Request>,
    /// The step did not end in its time.
    pub timed_out: bool,
    /// The reset the stand-in reported for the step's limit.
    pub reset: Option<DateTime<Utc>>,
    /// The five-hour window's use the stand-in reported, in percent.
    pub plan_pct: f64,
    /// Whole screens as text (the title, then the rows), for the fixture.
    pub screens: Vec<String>,
}

impl Observed {
    fn states(&self) -> impl Iterator<Item = (&Event, SessionState, &str)> {
        self.events.iter().filter_map(|e| match &e.kind {
            EventKind::State { state, reason, .. } => Some((e, *state, reason.as_str())),
            _ => None,
        })
    }

    fn usage(&self) -> impl Iterator<Item = &crate::usage::Sample> {
        self.events.iter().filter_map(|e| match &e.kind {
            EventKind::Usage { sample } => Some(sample),
            _ => None,
        })
    }

    fn last_state(&self) -> String {
        match self.states().last() {
            Some((_, state, reason)) => format!("the session was {} ({reason})", state.as_str()),
            None => "the session's state did not change".into(),
        }
    }

    /// The last rows of the last frame, as evidence.
    fn screen_tail(&self) -> String {
        match self.frames.last() {
            Some(f) => quote_rows(&f.tail),
            None => "the client drew nothing".into(),
        }
    }
}

fn quote_rows(rows: &[String]) -> String {
    let shown: Vec<String> = rows.iter().rev().take(3).rev().map(|r| format!("`{}`", r.trim())).collect();
    if shown.is_empty() {
        "a blank screen".into()
    } else {
        shown.join(" / ")
    }
}

/// Whether `signal` was read in `step`: what was seen, or what was seen instead.
pub fn judge(agent: AgentKind, signal: &str, step: &Step, seen: &Observed) -> Result<String, String> {
    let frames = &seen.frames;
    let busy_tail = || {
        // A frame from the middle of the step, while something was on screen.
        frames.get(frames.len() / 2).map(|f| quote_rows(&f.tail)).unwrap_or_else(|| "nothing".into())
    };
    let timed_out = if seen.timed_out { format!(" in {} s", step.within) } else { String::new() };
    match signal {
        "title.working" => frames
            .iter()
            .find(|f| f.readings.title_working)
            .map(|f| format!("the title `{}`", f.title))
            .ok_or_else(|| format!("no title matched while the turn ran; titles seen: {}", titles(frames))),
        "title.idle" => match frames.last() {
            Some(f) if f.readings.title_idle => Ok(format!("the title `{}`", f.title)),
            Some(f) => Err(format!("the title at the end was `{}`", f.title)),
            None => Err("the client drew nothing".into()),
        },
        "working.spinner" => frames
            .iter()
            .find_map(|f| f.readings.spinner.clone())
            .map(|row| format!("the working line `{row}`"))
            .ok_or_else(|| format!("no working line matched while the turn ran; the screen showed {}", busy_tail())),
        "working.footer" => frames
            .iter()
            .find_map(|f| f.readings.footer.clone())
            .map(|row| format!("the footer `{row}`"))
            .ok_or_else(|| format!("no footer matched while the turn ran; the screen showed {}", busy_tail())),
        "composer.prompt" => match frames.last() {
            Some(f) if f.readings.prompt => Ok("the composer at the end".into()),
            _ => Err(format!("no composer at the end; the screen showed {}", seen.screen_tail())),
        },
        "dialog.permission" | "dialog.question" => {
            let kind = if signal == "dialog.permission" { DialogKind::Permission } else { DialogKind::Question };
            match frames.iter().find_map(|f| f.readings.dialog.as_ref().filter(|d| d.kind == kind)) {
                Some(d) => Ok(format!(
                    "the {} dialog{}",
                    kind.as_str(),
                    d.text.as_ref().map(|t| format!(" `{t}`")).unwrap_or_default()
                )),
                None => Err(match frames.iter().find_map(|f| f.readings.dialog.as_ref()) {
                    Some(other) => format!("a {} dialog instead", other.kind.as_str()),
                    None => format!("no dialog read{timed_out}; the screen showed {}", busy_tail()),
                }),
            }
        }
        "dialog.options" => frames
            .iter()
            .find_map(|f| f.readings.dialog.as_ref().filter(|d| !d.options.is_empty()))
            .map(|d| {
                let options: Vec<String> = d.options.iter().map(|(n, o)| format!("{n}. {o}")).collect();
                format!("the options {}", options.join(", "))
            })
            .ok_or_else(|| format!("no option of a question was read; the screen showed {}", busy_tail())),
        "limit.notice" => {
            let Some(reset) = seen.reset else { return Err("the step set no reset".into()) };
            let text = frames.iter().rev().find_map(|f| {
                let found = crate::limits::find_limit(&f.readings.limit_region, reset, &chrono::Local)?;
                Some(found)
            });
            match text {
                Some(found) => match found.resets_at {
                    Some(at) if (at - reset).num_seconds().abs() <= RESET_SLACK_SECS => {
                        Ok(format!("`{}`, its reset read as {}", found.line, local_time(at)))
                    }
                    Some(at) => Err(format!(
                        "`{}` read as resetting at {}, not {}",
                        found.line,
                        local_time(at),
                        local_time(reset)
                    )),
                    None => Err(format!("`{}`, with no reset that could be read", found.line)),
                },
                None => Err(format!(
                    "no limit notice where the client draws them; the screen showed {}",
                    seen.screen_tail()
                )),
            }
        }
        "limit.detected" | "limit.reset" => {
            let found = seen.events.iter().find_map(|e| match &e.kind {
                EventKind::LimitDetected { resets_at, source, .. } => Some((*resets_at, *source)),
                _ => None,
            });
            let Some((resets_at, source)) = found else {
                return Err(format!("no limit was read{timed_out}; {}", seen.last_state()));
            };
            if signal == "limit.detected" {
                return Ok(format!("a limit, read from {}", source_words(source)));
            }
            let Some(reset) = seen.reset else { return Err("the step set no reset".into()) };
            match resets_at {
                Some(at) if (at - reset).num_seconds().abs() <= RESET_SLACK_SECS => Ok(format!(
                    "resets at {}, {} s from the stand-in's",
                    local_time(at),
                    (at - reset).num_seconds().abs()
                )),
                Some(at) => Err(format!("the reset was read as {}, not {}", local_time(at), local_time(reset))),
                None => Err(format!("a limit read from {}, with no reset", source_words(source))),
            }
        }
        "session.working" => seen
            .states()
            .find(|(_, s, _)| *s == SessionState::Working)
            .map(|(_, _, reason)| format!("working ({reason})"))
            .ok_or_else(|| format!("never working{timed_out}; {}", seen.last_state())),
        "session.idle" => match seen.states().filter(|(_, s, _)| *s == SessionState::Idle).last() {
            Some((_, _, reason)) if !seen.timed_out => Ok(format!("idle ({reason})")),
            _ => Err(format!("not idle{timed_out}; {}", seen.last_state())),
        },
        "session.waiting_input" => seen
            .events
            .iter()
            .find_map(|e| match &e.kind {
                EventKind::State { state: SessionState::WaitingInput, dialog, .. } => Some(
                    dialog
                        .as_ref()
                        .map(|d| format!("waiting on the {} dialog", d.kind.as_str()))
                        .unwrap_or_else(|| "waiting on the user".into()),
                ),
                _ => None,
            })
            .ok_or_else(|| format!("never waiting on the user{timed_out}; {}", seen.last_state())),
        "session.steady" => {
            let Some((first, _, _)) = seen.states().find(|(_, s, _)| *s == SessionState::Working) else {
                let states: Vec<String> = seen
                    .states()
                    .map(|(e, s, why)| format!("{} at {} ({why})", s.as_str(), e.ts.format("%H:%M:%S%.3f")))
                    .collect();
                let said = if states.is_empty() { "no change of state".into() } else { states.join(", then ") };
                return Err(format!("never working; in the step: {said}"));
            };
            let Some(done) = seen.requests.iter().filter_map(|r| r.done_at).max() else {
                return Err("the stand-in answered nothing".into());
            };
            let done: DateTime<Utc> = done.into();
            // An idle read before the answer's last byte (less a moment for the client to draw it).
            let early = seen.states().find(|(e, s, _)| {
                *s == SessionState::Idle && e.ts > first.ts && e.ts + chrono::Duration::milliseconds(300) < done
            });
            match early {
                Some((e, _, reason)) => Err(format!(
                    "read idle {:.1} s before the answer ended ({reason})",
                    (done - e.ts).num_milliseconds() as f64 / 1000.0
                )),
                None => Ok(format!(
                    "working for the whole answer, {:.1} s",
                    (done - first.ts).num_milliseconds().max(0) as f64 / 1000.0
                )),
            }
        }
        "session.no_drift" => match seen.events.iter().find_map(|e| match &e.kind {
            EventKind::Drift { hook, screen, .. } => Some((hook.clone(), screen.clone())),
            _ => None,
        }) {
            Some((hook, screen)) => Err(format!("the hooks said {hook} while the screen showed {screen}")),
            None => Ok("the hooks and the screen agreed".into()),
        },
        "hook.turn_end" => {
            let by = match agent {
                AgentKind::Codex => crate::detect::TurnEnd::Notify,
                _ => crate::detect::TurnEnd::Stop,
            };
            match seen.states().filter(|(_, s, _)| *s == SessionState::Idle).last() {
                Some((_, _, reason)) if reason.contains(by.said()) => Ok(format!("idle on {}", by.said())),
                Some((_, _, reason)) => Err(format!("idle without {}: {reason}", by.said())),
                None => Err(format!("never idle{timed_out}; {}", seen.last_state())),
            }
        }
        "api.retried" => {
            let refused = seen.requests.iter().filter(|r| r.status >= 500).count();
            let answered = seen.requests.iter().any(|r| r.status == 200);
            match (refused, answered) {
                (0, _) => Err("the stand-in was never refused an answer".into()),
                (n, true) => Ok(format!("the client retried {n} overloaded request(s), then got its answer")),
                (n, false) => Err(format!("{n} overloaded request(s), and no retry got an answer{timed_out}")),
            }
        }
        "usage.plan" => {
            let found = seen.usage().find_map(|u| u.five_hour_pct);
            match found {
                Some(pct) if (pct - seen.plan_pct).abs() < 1.0 => Ok(format!("the 5-hour window at {pct:.0} %")),
                Some(pct) => Err(format!("the 5-hour window read as {pct:.0} %, not {:.0} %", seen.plan_pct)),
                None => Err("no reading of the plan's windows reached the session".into()),
            }
        }
        "usage.context" => {
            let want = step.context_pct.unwrap_or_default();
            let found: Vec<f64> = seen.usage().filter_map(|u| u.context_pct).collect();
            match found.iter().find(|p| (**p - want).abs() <= CONTEXT_SLACK_PCT) {
                Some(pct) => Ok(format!("the context at {pct:.0} %")),
                None if found.is_empty() => Err("no context figure reached the session".into()),
                None => Err(format!("the context read as {:.0} %, not {want:.0} %", found[found.len() - 1])),
            }
        }
        other => Err(format!("`{other}` is no signal")),
    }
}

fn source_words(source: crate::limits::Source) -> &'static str {
    use crate::limits::Source;
    match source {
        Source::Text => "the client's notice on screen",
        Source::Data => "its statusLine data",
        Source::Hook => "its StopFailure hook",
        Source::Journal => "the journal",
        Source::Stream => "its event stream",
    }
}

fn titles(frames: &[Frame]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for f in frames {
        if !seen.contains(&f.title.as_str()) {
            seen.push(&f.title);
        }
    }
    let shown: Vec<String> = seen.iter().take(4).map(|t| format!("`{t}`")).collect();
    if shown.is_empty() {
        "none".into()
    } else {
        shown.join(", ")
    }
}

fn local_time(at: DateTime<Utc>) -> String {
    at.with_timezone(&chrono::Local).format("%H:%M:%S").to_string()
}

/// Runs the canary on `agents` (none named: Claude, and Codex when it is installed), one after the
/// other; the report, one line per signal, and each client's outcome. Blocking: under a minute a
/// client.
pub fn run(paths: &crate::paths::Paths, setup: &drive::Setup, agents: &[AgentKind]) -> (Report, Vec<Outcome>) {
    let explicit = !agents.is_empty();
    let agents = if explicit { agents.to_vec() } else { vec![AgentKind::Claude, AgentKind::Codex] };
    let agents_dir = paths.agents_dir();
    let mut outcomes = Vec::new();
    for kind in agents {
        let outcome = |version: Option<String>, skipped: Option<String>, broken: Option<String>| Outcome {
            agent: kind,
            version,
            skipped,
            broken,
            steps: 0,
            secs: 0.0,
            signals: Vec::new(),
            kept: None,
        };
        let script = match Script::load(kind, agents_dir.as_deref()) {
            Ok(Some(script)) => script,
            Ok(None) => {
                outcomes.push(outcome(None, Some("a generic agent has no API to stand in for".into()), None));
                continue;
            }
            Err(why) => {
                outcomes.push(outcome(None, None, Some(why)));
                continue;
            }
        };
        let adapter = match crate::agent::load_adapter(kind, agents_dir.as_deref()) {
            Ok(adapter) => adapter,
            Err(e) => {
                outcomes.push(outcome(None, None, Some(e.to_string())));
                continue;
            }
        };
        let program = adapter.launch().map(|(p, _)| p.to_string()).unwrap_or_else(|| kind.as_str().to_string());
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let bin = match crate::pty::resolve_program(&program, &cwd, std::env::var_os("PATH").as_deref()) {
            Ok(bin) => bin,
            Err(_) if !explicit && kind != AgentKind::Claude => continue,
            Err(_) => {
                outcomes.push(outcome(
                    None,
                    None,
                    Some(format!("`{program}` is not on this PATH; install it, or name it in [launch] program")),
                ));
                continue;
            }
        };
        // Only the client's own CLI can be pointed at the stand-in and given the hooks.
        let name = bin.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let own = match kind {
            AgentKind::Codex => name == "codex",
            _ => matches!(name, "claude" | "claude.exe"),
        };
        if !own {
            let why = format!(
                "`{}` is not the {kind} CLI itself (a wrapper?): the canary cannot point it at a local API; name the CLI in [launch] program to check it",
                bin.display()
            );
            outcomes.push(outcome(None, Some(why), None));
            continue;
        }
        let version = match crate::agent::canary::version_of(&bin) {
            Ok(v) => v,
            Err(why) => {
                outcomes.push(outcome(None, None, Some(format!("`{} --version` {why}", bin.display()))));
                continue;
            }
        };
        let client = drive::Client { kind, adapter, script, bin: bin.clone(), version };
        let mut found = drive::run(paths, setup, &client);
        if let Some(login) = found.signals.first().and_then(asks_login) {
            found.skipped = Some(format!(
                "the client asks for an interactive login even with a key ({login}): the canary cannot run it offline"
            ));
        }
        if found.skipped.is_none() {
            keep_verdict(&paths.state_dir, &found, &bin);
        }
        outcomes.push(found);
    }
    (report(&outcomes, agents_dir.as_deref()), outcomes)
}

/// Keeps the verdict on `bin` in the results, for the sessions started on it.
fn keep_verdict(state_dir: &Path, outcome: &Outcome, bin: &Path) {
    let (Some(version), Some((size, modified))) = (&outcome.version, fingerprint(bin)) else { return };
    let mut results = Results::load(state_dir);
    let verdict = Verdict {
        at: chrono::SubsecRound::trunc_subsecs(Utc::now(), 3),
        ok: outcome.ok(),
        failed: outcome.signals.iter().filter(|s| s.result.is_err()).map(|s| s.name.clone()).collect(),
        kept: outcome.kept.clone(),
        bin: bin.to_path_buf(),
        size,
        modified,
    };
    results.record(outcome.agent, version, verdict);
    if let Err(e) = results.save(state_dir) {
        tracing::warn!("cannot keep the canary's verdict in {}: {e}", Results::path(state_dir).display());
    }
}

/// The login prompt a first screen that never reached the prompt showed, if it is one.
fn asks_login(first: &Signal) -> Option<String> {
    let Err(instead) = &first.result else { return None };
    let re = regex::Regex::new(r"(?i)(select login method|log ?in with|sign in|paste (the|your) code)").ok()?;
    re.find(instead).map(|m| m.as_str().to_string())
}

#[cfg(test)]
mod tests;
