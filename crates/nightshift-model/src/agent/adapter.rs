//! An agent's screen signals, as data: what its prompt, working line, title and dialogs look like.
//!
//! Each adapter is a TOML file embedded in the binary (`claude.toml`, `codex.toml`, `generic.toml`
//! beside this file); a user file of the same name in `$XDG_CONFIG_HOME/nightshift/agents/` overrides
//! any of its keys, so a client that draws differently after an update is a data change. The adapter
//! turns one settled screen into a [`Verdict`]; timing is the detector's business.

use std::path::PathBuf;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::AgentKind;
use crate::screen::{Frame, Rows, Snapshot};

mod dialog;
use dialog::DialogSignal;
pub use dialog::{Dialog, DialogKind, Subject};

#[derive(Debug, thiserror::Error)]
pub enum AdapterError {
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
}

/// The file form; every key optional so a user file can override a few.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SignalsFile {
    /// The client version these signals were checked against (`nightshift doctor` compares).
    verified: Option<String>,
    screen: Option<bool>,
    program_state: Option<bool>,
    #[serde(default)]
    launch: LaunchFile,
    #[serde(default)]
    title: TitleFile,
    #[serde(default)]
    composer: ComposerFile,
    #[serde(default)]
    working: WorkingFile,
    #[serde(default)]
    limit: LimitFile,
    dialog: Option<Vec<DialogFile>>,
    /// Dialog kinds that are routine confirmations, answered with Enter when auto-accept is on.
    auto_accept: Option<Vec<DialogKind>>,
    #[serde(default)]
    answer: AnswerFile,
    #[serde(default)]
    respawn: RespawnFile,
}

/// What a respawn cycle types for the agent's own commands.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RespawnFile {
    /// Resets the context (a fresh conversation).
    clear: Option<String>,
    /// Writes the instructions file.
    init: Option<String>,
}

/// How a dialog is answered for the user (a phone's button): a question's options as the dialog
/// lists them, and the keys each answer types.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerFile {
    /// A row that lists one option of a question: its number, then its label.
    option: Option<String>,
    /// Options that want typed text, which no button can give.
    typed: Option<String>,
    /// The keys that pick option `{n}` of a question.
    pick: Option<String>,
    /// The keys that allow a permission prompt once.
    allow: Option<String>,
    /// The keys that deny a permission prompt.
    deny: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LaunchFile {
    program: Option<String>,
    args: Option<Vec<String>>,
    /// Arguments every start of a session running the agent's own CLI gets before the user's:
    /// client settings passed per session, never written to the client's files.
    session_args: Option<Vec<String>>,
    /// Variables set for every start of a session (or loop iteration) running the agent's own CLI:
    /// the same, through its environment.
    session_env: Option<std::collections::BTreeMap<String, String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TitleFile {
    working: Option<String>,
    idle: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ComposerFile {
    prompt: Option<String>,
    rule: Option<String>,
    /// The last row above the composer after the user interrupted a turn (the client then ends the
    /// turn without its `Stop` hook).
    interrupted: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkingFile {
    spinner: Option<Vec<String>>,
    rows_above: Option<usize>,
    footer: Option<String>,
    footer_rows: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitFile {
    /// `footer` (below the composer) or `above_prompt`.
    region: Option<String>,
    rows: Option<usize>,
    prefix: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct DialogFile {
    kind: DialogKind,
    pattern: String,
    /// The row that carries the dialog's question, when it is not the last row ending in `?`.
    question: Option<String>,
}

impl SignalsFile {
    /// `other`'s keys win.
    fn merge(self, other: SignalsFile) -> SignalsFile {
        SignalsFile {
            verified: other.verified.or(self.verified),
            screen: other.screen.or(self.screen),
            program_state: other.program_state.or(self.program_state),
            launch: LaunchFile {
                program: other.launch.program.or(self.launch.program),
                args: other.launch.args.or(self.launch.args),
                session_args: other.launch.session_args.or(self.launch.session_args),
                session_env: other.launch.session_env.or(self.launch.session_env),
            },
            title: TitleFile {
                working: other.title.working.or(self.title.working),
                idle: other.title.idle.or(self.title.idle),
            },
            composer: ComposerFile {
                prompt: other.composer.prompt.or(self.composer.prompt),
                rule: other.composer.rule.or(self.composer.rule),
                interrupted: other.composer.interrupted.or(self.composer.interrupted),
            },
            working: WorkingFile {
                spinner: other.working.spinner.or(self.working.spinner),
                rows_above: other.working.rows_above.or(self.working.rows_above),
                footer: other.working.footer.or(self.working.footer),
                footer_rows: other.working.footer_rows.or(self.working.footer_rows),
            },
            limit: LimitFile {
                region: other.limit.region.or(self.limit.region),
                rows: other.limit.rows.or(self.limit.rows),
                prefix: other.limit.prefix.or(self.limit.prefix),
            },
            dialog: other.dialog.or(self.dialog),
            auto_accept: other.auto_accept.or(self.auto_accept),
            answer: AnswerFile {
                option: other.answer.option.or(self.answer.option),
                typed: other.answer.typed.or(self.answer.typed),
                pick: other.answer.pick.or(self.answer.pick),
                allow: other.answer.allow.or(self.answer.allow),
                deny: other.answer.deny.or(self.answer.deny),
            },
            respawn: RespawnFile {
                clear: other.respawn.clear.or(self.respawn.clear),
                init: other.respawn.init.or(self.respawn.init),
            },
        }
    }
}

/// What a respawn cycle types for the agent's context reset and its instructions file: the agent's own commands
/// (`[respawn]` of its adapter file; `/clear` and `/init` for Claude Code and Codex 0.171.0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CycleCommands {
    pub clear: String,
    pub init: String,
}

impl Default for CycleCommands {
    fn default() -> Self {
        Self { clear: "/clear".into(), init: "/init".into() }
    }
}

/// Rows at the bottom of the screen searched for a dialog when no composer is drawn.
const DIALOG_ROWS: usize = 24;

/// What one settled screen says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// The signal that shows a turn running, if any.
    pub working: Option<String>,
    /// A dialog waiting for the user.
    pub dialog: Option<Dialog>,
    /// The composer (input prompt) is drawn.
    pub prompt: bool,
    /// The last thing above the composer says the user interrupted the turn.
    pub interrupted: bool,
}

/// Every screen signal of one frame, each read on its own ([`Adapter::readings`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Readings {
    /// `[title] working` matches the title.
    pub title_working: bool,
    /// `[title] idle` matches the title.
    pub title_idle: bool,
    /// The row a `[working] spinner` pattern matched.
    pub spinner: Option<String>,
    /// The row `[working] footer` matched.
    pub footer: Option<String>,
    /// `[composer] prompt` found the composer.
    pub prompt: bool,
    pub dialog: Option<Dialog>,
    /// The text of the region where the client draws its own limit notices.
    pub limit_region: String,
}

/// The compiled signals of one agent.
#[derive(Debug, Clone)]
pub struct Adapter {
    pub kind: AgentKind,
    verified: Option<String>,
    launch: Option<(String, Vec<String>)>,
    session_args: Vec<String>,
    session_env: Vec<(String, String)>,
    cycle: CycleCommands,
    screen: bool,
    program_state: bool,
    title_working: Option<Regex>,
    title_idle: Option<Regex>,
    prompt: Option<Regex>,
    rule: Option<Regex>,
    interrupted: Option<Regex>,
    spinner: Vec<Regex>,
    rows_above: usize,
    footer: Option<Regex>,
    footer_rows: usize,
    dialogs: Vec<DialogSignal>,
    auto_accept: Vec<DialogKind>,
    limit_region: LimitRegion,
    answer: Answer,
    /// The user's file laid over the built-in signals, as it was read.
    overrides: Option<Overrides>,
}

/// A user's signals file, as read when a session started: its name and its text. A session's
/// contract keeps it, so every later start of the session reads its screen the same way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overrides {
    pub file: String,
    pub text: String,
}

/// How a dialog is answered for the user ([`AnswerFile`], compiled).
#[derive(Debug, Clone, Default)]
struct Answer {
    option: Option<Regex>,
    typed: Option<Regex>,
    pick: Option<String>,
    allow: Option<String>,
    deny: Option<String>,
}

/// What a button answers a dialog with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// A question's option, by its number.
    Pick(u8),
    /// A permission prompt, allowed once.
    Allow,
    Deny,
}

/// Where an agent draws its own limit notices.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LimitRegion {
    None,
    Footer,
    AbovePrompt { rows: usize, prefix: Option<String> },
}

fn embedded(kind: AgentKind) -> &'static str {
    match kind {
        AgentKind::Claude => include_str!("claude.toml"),
        AgentKind::Codex => include_str!("codex.toml"),
        AgentKind::Generic => include_str!("generic.toml"),
    }
}

fn parse(file: &str, text: &str) -> Result<SignalsFile, AdapterError> {
    toml::from_str(text).map_err(|e| AdapterError::Invalid {
        file: file.to_string(),
        message: format!(
            "{}; fix it, or remove the file to use the built-in signals",
            crate::toml_error::one_line(text, &e)
        ),
    })
}

impl Adapter {
    /// The built-in signals of `kind`.
    pub fn builtin(kind: AgentKind) -> Self {
        // Compiled once per process: a regex's clone shares its compiled program, and compiling
        // the signals was most of what starting a session cost.
        static COMPILED: [std::sync::OnceLock<Adapter>; 3] =
            [std::sync::OnceLock::new(), std::sync::OnceLock::new(), std::sync::OnceLock::new()];
        let slot = match kind {
            AgentKind::Claude => 0,
            AgentKind::Codex => 1,
            AgentKind::Generic => 2,
        };
        COMPILED[slot]
            .get_or_init(|| {
                let file = parse(&format!("built-in {kind}.toml"), embedded(kind)).expect("built-in adapters parse");
                Self::compile(kind, file, "built-in").expect("built-in adapters compile")
            })
            .clone()
    }

    /// The signals of `kind` with the user file `text` (named `file` in errors) laid over them.
    pub fn with_overrides(kind: AgentKind, file: &str, text: &str) -> Result<Self, AdapterError> {
        let base = parse(&format!("built-in {kind}.toml"), embedded(kind)).expect("built-in adapters parse");
        let mut adapter = Self::compile(kind, base.merge(parse(file, text)?), file)?;
        adapter.overrides = Some(Overrides { file: file.to_string(), text: text.to_string() });
        Ok(adapter)
    }

    /// The signals of `kind` with `overrides` laid over them, or the built-in ones.
    pub fn with(kind: AgentKind, overrides: Option<&Overrides>) -> Result<Self, AdapterError> {
        match overrides {
            Some(o) => Self::with_overrides(kind, &o.file, &o.text),
            None => Ok(Self::builtin(kind)),
        }
    }

    /// The user's file laid over the built-in signals, if any.
    pub fn overrides(&self) -> Option<&Overrides> {
        self.overrides.as_ref()
    }

    fn compile(kind: AgentKind, f: SignalsFile, file: &str) -> Result<Self, AdapterError> {
        let re = |key: &str, pattern: &str| {
            Regex::new(pattern).map_err(|e| AdapterError::Invalid {
                file: file.to_string(),
                // regex draws the spot over several lines; one line says it here.
                message: format!(
                    "`{key}` is not a valid regular expression ({}); fix it, or remove the file to use the built-in \
                     signals",
                    e.to_string().split_whitespace().collect::<Vec<_>>().join(" ")
                ),
            })
        };
        let opt = |key: &str, p: &Option<String>| p.as_deref().map(|p| re(key, p)).transpose();
        Ok(Self {
            kind,
            verified: f.verified,
            session_args: f.launch.session_args.unwrap_or_default(),
            session_env: f.launch.session_env.unwrap_or_default().into_iter().collect(),
            cycle: {
                let default = CycleCommands::default();
                CycleCommands {
                    clear: f.respawn.clear.clone().unwrap_or(default.clear),
                    init: f.respawn.init.clone().unwrap_or(default.init),
                }
            },
            launch: f.launch.program.map(|p| (p, f.launch.args.unwrap_or_default())),
            screen: f.screen.unwrap_or(true),
            program_state: f.program_state.unwrap_or(false),
            title_working: opt("title.working", &f.title.working)?,
            title_idle: opt("title.idle", &f.title.idle)?,
            prompt: opt("composer.prompt", &f.composer.prompt)?,
            rule: opt("composer.rule", &f.composer.rule)?,
            interrupted: opt("composer.interrupted", &f.composer.interrupted)?,
            spinner: f
                .working
                .spinner
                .unwrap_or_default()
                .iter()
                .enumerate()
                .map(|(i, p)| re(&format!("working.spinner[{i}]"), p))
                .collect::<Result<_, _>>()?,
            rows_above: f.working.rows_above.unwrap_or(4),
            footer: opt("working.footer", &f.working.footer)?,
            footer_rows: f.working.footer_rows.unwrap_or(1),
            dialogs: f
                .dialog
                .unwrap_or_default()
                .into_iter()
                .enumerate()
                .map(|(i, d)| {
                    Ok(DialogSignal {
                        kind: d.kind,
                        pattern: re(&format!("dialog[{i}].pattern"), &d.pattern)?,
                        question: d.question.as_deref().map(|q| re(&format!("dialog[{i}].question"), q)).transpose()?,
                    })
                })
                .collect::<Result<_, AdapterError>>()?,
            auto_accept: f.auto_accept.unwrap_or_default(),
            limit_region: match f.limit.region.as_deref() {
                None => LimitRegion::None,
                Some("footer") => LimitRegion::Footer,
                Some("above_prompt") => {
                    LimitRegion::AbovePrompt { rows: f.limit.rows.unwrap_or(8), prefix: f.limit.prefix }
                }
                Some(other) => {
                    return Err(AdapterError::Invalid {
                        file: file.to_string(),
                        message: format!("`limit.region` is `footer` or `above_prompt`, not `{other}`"),
                    })
                }
            },
            answer: Answer {
                option: opt("answer.option", &f.answer.option)?,
                typed: opt("answer.typed", &f.answer.typed)?,
                pick: f.answer.pick,
                allow: f.answer.allow,
                deny: f.answer.deny,
            },
            overrides: None,
        })
    }

    /// The client version the signals were verified on, when the file says.
    pub fn verified(&self) -> Option<&str> {
        self.verified.as_deref()
    }

    /// The command that starts this agent when none is given.
    pub fn launch(&self) -> Option<(&str, &[String])> {
        self.launch.as_ref().map(|(p, a)| (p.as_str(), a.as_slice()))
    }

    /// What every start of a session running this agent's own CLI passes before the user's
    /// arguments (`[launch] session_args`).
    pub fn session_args(&self) -> &[String] {
        &self.session_args
    }

    /// What a respawn cycle types for this agent's context reset and instructions file.
    pub fn cycle_commands(&self) -> &CycleCommands {
        &self.cycle
    }

    /// What every start of a session running this agent's own CLI has in its environment
    /// (`[launch] session_env`).
    pub fn session_env(&self) -> &[(String, String)] {
        &self.session_env
    }

    /// The keys that give `reply` to the dialog on screen; `None` when this agent's file does not
    /// say how (no button offers it then).
    pub fn keys(&self, reply: Reply) -> Option<Vec<u8>> {
        let a = &self.answer;
        let keys = match reply {
            Reply::Pick(n) => a.pick.as_ref()?.replace("{n}", &n.to_string()),
            Reply::Allow => a.allow.clone()?,
            Reply::Deny => a.deny.clone()?,
        };
        Some(keys.into_bytes())
    }

    /// Whether this agent's file says how to answer `kind` (a question or a permission prompt).
    pub fn answers(&self, kind: DialogKind) -> bool {
        match kind {
            DialogKind::Question => self.answer.pick.is_some() && self.answer.option.is_some(),
            DialogKind::Permission => self.answer.allow.is_some() && self.answer.deny.is_some(),
            _ => false,
        }
    }

    /// Whether this agent's screen is read at all (`generic` goes by output alone).
    pub fn reads_screen(&self) -> bool {
        self.screen
    }

    /// Judges one whole (settled) frame.
    pub fn classify(&self, snap: &Snapshot) -> Verdict {
        self.verdict(&snap.rows[..], &snap.title, snap.program_state.as_deref())
    }

    /// Judges a frame as [`Adapter::classify`] does, reading only the rows it needs.
    pub fn classify_frame(&self, frame: &Frame<'_>) -> Verdict {
        self.verdict(frame, frame.title, frame.program_state)
    }

    fn verdict<R: Rows + ?Sized>(&self, rows: &R, title: &str, program_state: Option<&str>) -> Verdict {
        if !self.screen {
            return Verdict::default();
        }
        let composer = self.find_composer(rows);
        let dialog = self.find_dialog(rows, composer);
        let blank = |r: &&str| r.trim().is_empty();
        let mut working = None;
        if let Some(footer) = &self.footer {
            let mut footer_rows =
                (0..rows.row_count()).rev().map(|i| rows.row(i)).filter(|r| !blank(r)).take(self.footer_rows);
            if footer_rows.any(|r| footer.is_match(r)) {
                working = Some("the footer shows 'esc to interrupt'".to_string());
            }
        }
        if working.is_none() {
            let above = composer.map_or(rows.row_count(), |c| c.top);
            let candidates = (0..above).rev().map(|i| rows.row(i)).filter(|r| !blank(r)).take(self.rows_above);
            for row in candidates {
                if self.spinner.iter().any(|re| re.is_match(row.trim_start())) {
                    working = Some(format!("the working line `{}`", row.trim()));
                    break;
                }
            }
        }
        if working.is_none() && self.title_working.as_ref().is_some_and(|re| re.is_match(title)) {
            working = Some(format!("the title `{title}`"));
        }
        if working.is_none() && self.program_state && program_state == Some("working") {
            working = Some("the client reports state=working".to_string());
        }
        let interrupted = match (composer, &self.interrupted) {
            (Some(c), Some(re)) => {
                (0..c.top).rev().map(|i| rows.row(i)).find(|r| !blank(r)).is_some_and(|r| re.is_match(r))
            }
            _ => false,
        };
        Verdict { working, dialog, prompt: composer.is_some(), interrupted }
    }

    /// Each screen signal of one frame on its own, where [`Adapter::classify`] stops at the first
    /// that shows work: the canary checks that every one of them still reads on tonight's client.
    pub fn readings(&self, snap: &Snapshot) -> Readings {
        let rows = &snap.rows[..];
        if !self.screen {
            return Readings::default();
        }
        let composer = self.find_composer(rows);
        let blank = |r: &&str| r.trim().is_empty();
        let footer = self.footer.as_ref().and_then(|footer| {
            (0..rows.row_count())
                .rev()
                .map(|i| rows.row(i))
                .filter(|r| !blank(r))
                .take(self.footer_rows)
                .find(|r| footer.is_match(r))
                .map(|r| r.trim().to_string())
        });
        let above = composer.map_or(rows.row_count(), |c| c.top);
        let spinner = (0..above)
            .rev()
            .map(|i| rows.row(i))
            .filter(|r| !blank(r))
            .take(self.rows_above)
            .find(|row| self.spinner.iter().any(|re| re.is_match(row.trim_start())))
            .map(|r| r.trim().to_string());
        Readings {
            title_working: self.title_working.as_ref().is_some_and(|re| re.is_match(&snap.title)),
            title_idle: self.title_idle(&snap.title),
            spinner,
            footer,
            prompt: composer.is_some(),
            dialog: self.find_dialog(rows, composer),
            limit_region: self.region_of_limits(rows),
        }
    }

    /// The text of the screen region where this agent draws its own limit notices (empty when it
    /// has none): below the composer, or a dialog in its place; or marked rows above the prompt.
    pub fn limit_region(&self, snap: &Snapshot) -> String {
        self.region_of_limits(&snap.rows[..])
    }

    /// [`Adapter::limit_region`] of a frame, reading only the rows it needs.
    pub fn limit_region_of_frame(&self, frame: &Frame<'_>) -> String {
        self.region_of_limits(frame)
    }

    fn region_of_limits<R: Rows + ?Sized>(&self, rows: &R) -> String {
        let len = rows.row_count();
        let composer = self.find_composer(rows);
        let region: Vec<&str> = match (&self.limit_region, composer) {
            (LimitRegion::None, _) => return String::new(),
            (LimitRegion::Footer, Some(c)) => {
                let is_rule = |i: &usize| self.rule.as_ref().is_some_and(|re| re.is_match(rows.row(*i).trim_end()));
                let bottom = (c.top + 2..len).find(is_rule).unwrap_or(len);
                ((bottom + 1).min(len)..len).map(|i| rows.row(i)).collect()
            }
            (LimitRegion::Footer, None) => (len.saturating_sub(DIALOG_ROWS)..len).map(|i| rows.row(i)).collect(),
            (LimitRegion::AbovePrompt { rows: n, prefix }, composer) => {
                let above = composer.map_or(len, |c| c.top);
                let mut picked: Vec<&str> = (0..above)
                    .rev()
                    .map(|i| rows.row(i))
                    .filter(|r| !r.trim().is_empty())
                    .take(*n)
                    .map(|r| r.trim_start())
                    .filter(|r| prefix.as_ref().is_none_or(|p| r.starts_with(p.as_str())))
                    .collect();
                picked.reverse();
                picked
            }
        };
        region.join("\n")
    }

    /// The dialogs that are routine confirmations auto-accept may answer. A question the agent
    /// asked the user never is.
    pub fn auto_accepted(&self) -> Vec<DialogKind> {
        self.auto_accept.iter().copied().filter(|k| *k != DialogKind::Question).collect()
    }

    /// Whether the title says the agent is at rest (used in reasons).
    pub fn title_idle(&self, title: &str) -> bool {
        self.title_idle.as_ref().is_some_and(|re| re.is_match(title))
    }

    fn find_composer<R: Rows + ?Sized>(&self, rows: &R) -> Option<Composer> {
        let prompt = self.prompt.as_ref()?;
        let len = rows.row_count();
        let is_rule = |i: usize| self.rule.as_ref().is_some_and(|re| i < len && re.is_match(rows.row(i).trim_end()));
        for i in (0..len).rev() {
            if !prompt.is_match(rows.row(i)) {
                continue;
            }
            match &self.rule {
                // Between two rules: the rule right above, and one below the (maybe multi-line) input.
                Some(_) => {
                    if i > 0 && is_rule(i - 1) && (i + 1..len.min(i + 12)).any(is_rule) {
                        return Some(Composer { top: i - 1 });
                    }
                }
                None => return Some(Composer { top: i }),
            }
        }
        None
    }
}

#[derive(Debug, Clone, Copy)]
struct Composer {
    /// The row of the composer's top rule (or of the prompt when there is no rule).
    top: usize,
}

#[cfg(test)]
mod tests;
