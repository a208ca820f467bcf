//! What the window can ask for. Each command is a thin call into the core; every error reaches the
//! window as one `{code, message}`.
//!
//! A session is reached the same way whoever runs it: the app's own sessions answer through
//! [`control::answer`] in-process, those of a headless `nightshift run` through their control
//! socket.

use std::path::PathBuf;

use nightshift::config::Config;
use nightshift::control::{self, Request, Response};
use nightshift::digest::{self, Format, Range, LAST_VIEWED_KEY};
use nightshift::limits::resume;
use nightshift::notice::Switches;
use nightshift::pty::{CommandSpec, PtySize};
use nightshift::schedule;
use nightshift::session::{Change, Options};
use nightshift::store::{SessionKind, SessionSummary, Standing};
use nightshift::supervisor::Scheduled;
use nightshift::{AgentKind, SessionSpec};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tauri::{AppHandle, State};

use crate::error::UiError;
use crate::AppState;

/// How many of a session's most recent events its page shows.
const SESSION_EVENTS: usize = 500;

/// A session as the window lists it: the journal's summary, and what its page may ask of it.
#[derive(Debug, Serialize)]
pub struct SessionView {
    #[serde(flatten)]
    pub summary: SessionSummary,
    pub actions: Actions,
}

/// What a session's page may ask, by where the session stands: the rules of `stop_session`,
/// `resume_session` and `send_text`, said here once so that the window enables its buttons by
/// them instead of by rules of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Actions {
    /// Stop (Cancel, before it starts): whoever runs it stops it, and one that no Nightshift runs
    /// (lost, kept, scheduled) is ended in the journal.
    pub stop: bool,
    /// Resume a lost one here, on its own conversation (a kept one comes back by itself).
    pub resume: bool,
    /// Type to the agent: a live terminal session (a loop takes no typing).
    pub send: bool,
}

impl Actions {
    pub fn of(standing: Standing, kind: SessionKind) -> Self {
        Self {
            stop: standing != Standing::Ended,
            resume: standing == Standing::Lost,
            send: standing == Standing::Live && kind == SessionKind::Terminal,
        }
    }
}

#[tauri::command]
pub fn list_sessions(state: State<'_, AppState>) -> Result<Vec<SessionView>, UiError> {
    let rows = state.supervisor.with_store(|s| s.sessions())?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let actions = Actions::of(row.standing(), row.kind);
            SessionView { summary: SessionSummary::from(row), actions }
        })
        .collect())
}

#[tauri::command]
pub fn session_events(state: State<'_, AppState>, id: String) -> Result<Vec<Value>, UiError> {
    let events = state.supervisor.with_store(|s| {
        let id = s.find_session(&id)?.id;
        s.recent_events(&id, SESSION_EVENTS)
    })?;
    Ok(views(&events))
}

/// The session's latest handoff (what its agent wrote before its context was reset), if any.
#[tauri::command]
pub fn session_handoff(
    state: State<'_, AppState>,
    id: String,
) -> Result<Option<nightshift::hooks::handoff::Kept>, UiError> {
    let id = state.supervisor.with_store(|s| s.find_session(&id))?.id;
    nightshift::hooks::handoff::latest(&state.paths.state_dir, &id)
        .map_err(|e| UiError::new("handoff_unreadable", format!("the session's handoff cannot be read: {e}")))
}

/// A session's recorded lives, and one of them (the last unless `life` says) as text.
#[tauri::command]
pub async fn session_lives(state: State<'_, AppState>, id: String, life: Option<u32>) -> Result<Value, UiError> {
    let id = state.supervisor.with_store(|s| s.find_session(&id))?.id;
    let dir = state.paths.state_dir.clone();
    tauri::async_runtime::spawn_blocking(move || {
        let lives = nightshift::record::lives(&dir, &id);
        let Some((n, file)) = lives.iter().find(|(n, _)| Some(*n) == life).or(lives.last()).cloned() else {
            return Err(UiError::new("no_recording", format!("session {id} has no recording")));
        };
        let text = nightshift::record::text(&file)
            .map_err(|e| UiError::new("recording_unreadable", format!("{}: {e}", file.display())))?;
        Ok(json!({ "lives": lives.iter().map(|(n, _)| n).collect::<Vec<_>>(), "life": n, "file": file, "text": text }))
    })
    .await
    .map_err(|e| UiError::new("recording_unreadable", format!("the recording could not be read: {e}")))?
}

/// Journal rows as the window shows them: each event with what it means (`text`).
pub fn views(rows: &[nightshift::store::StoredEvent]) -> Vec<Value> {
    rows.iter()
        .filter_map(|r| serde_json::from_str::<nightshift::Event>(&r.body).ok())
        .map(|e| e.view(&chrono::Local))
        .collect()
}

/// Sends `request` (built for the session's full id) to whoever runs the session.
pub async fn ask(state: &AppState, id: &str, request: impl FnOnce(String) -> Request) -> Result<Response, UiError> {
    let row = state.supervisor.with_store(|s| s.find_session(id))?;
    let request = request(row.id.clone());
    let answered = if state.supervisor.session(&row.id).is_some() {
        control::answer(request, &state.supervisor).await.map_err(control::ControlError::Refused)
    } else {
        match control::owner_socket(&row) {
            Ok(socket) => control::request(socket, &request).await,
            Err(e) => Err(e),
        }
    };
    Ok(answered?)
}

#[tauri::command]
pub async fn session_screen(state: State<'_, AppState>, id: String) -> Result<nightshift::screen::Snapshot, UiError> {
    match ask(&state, &id, |session| Request::Screen { session }).await? {
        Response::Screen(screen) => Ok(*screen),
        other => Err(other.unexpected("the screen").into()),
    }
}

/// A session's options as its Options page shows them: what it is armed with, and the settings
/// auto-resume would start from while it is off (the core's, never a copy in the window).
#[derive(Debug, Serialize)]
pub struct SessionOptions {
    #[serde(flatten)]
    pub options: Options,
    pub auto_resume_defaults: resume::Settings,
}

impl From<Options> for SessionOptions {
    fn from(options: Options) -> Self {
        Self { options, auto_resume_defaults: resume::Settings::default() }
    }
}

#[tauri::command]
pub async fn session_options(state: State<'_, AppState>, id: String) -> Result<SessionOptions, UiError> {
    match ask(&state, &id, |session| Request::Options { session }).await? {
        Response::Options(options) => Ok((*options).into()),
        other => Err(other.unexpected("the options").into()),
    }
}

#[tauri::command]
pub async fn configure_session(
    app: AppHandle,
    state: State<'_, AppState>,
    id: String,
    mut change: Change,
) -> Result<SessionOptions, UiError> {
    if change.source.is_empty() {
        change.source = "the app".into();
    }
    let response = ask(&state, &id, |session| Request::Configure { session, change: Box::new(change) }).await?;
    crate::awake::recheck(&app);
    match response {
        Response::Options(options) => Ok((*options).into()),
        other => Err(other.unexpected("the options").into()),
    }
}

#[tauri::command]
pub async fn reset_breaker(state: State<'_, AppState>, id: String) -> Result<String, UiError> {
    match ask(&state, &id, |session| Request::ResetBreaker { session }).await? {
        Response::Reset(message) => Ok(message),
        other => Err(other.unexpected("the breaker's reset").into()),
    }
}

#[tauri::command]
pub async fn stop_session(state: State<'_, AppState>, id: String) -> Result<(), UiError> {
    // A session no Nightshift runs (lost, or kept waiting on a limit) is stopped in the journal.
    let row = state.supervisor.with_store(|s| s.find_session(&id))?;
    if state.supervisor.end_orphan(&row, "the app")?.is_some() {
        return Ok(());
    }
    ask(&state, &id, |session| Request::Stop { session, source: Some("the app".into()) }).await.map(|_| ())
}

/// Resumes a lost session (its Nightshift ended without ending it, and nothing armed was left to
/// bring it back by itself) in this app, on its own conversation.
#[tauri::command]
pub async fn resume_session(state: State<'_, AppState>, id: String) -> Result<String, UiError> {
    let row = state.supervisor.with_store(|s| s.find_session(&id))?;
    let supervisor = state.supervisor.clone();
    let handle = tauri::async_runtime::spawn_blocking(move || supervisor.resume_lost(&row))
        .await
        .map_err(|e| UiError::new("resume_failed", e.to_string()))?
        .map_err(|e| UiError::new("resume_failed", e.to_string()))?;
    Ok(handle.id().to_string())
}

#[tauri::command]
pub async fn send_text(state: State<'_, AppState>, id: String, text: String) -> Result<(), UiError> {
    if text.is_empty() {
        return Err(UiError::new("empty_text", "there is nothing to send; type the text first"));
    }
    let by = Some(nightshift::event::Answerer::Window);
    ask(&state, &id, |session| Request::Send { session, text, enter: true, by }).await.map(|_| ())
}

/// The New session form.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NewSession {
    /// A shell-like line: `claude --model opus`, `bash -c 'echo hi'`.
    pub command: String,
    pub cwd: String,
    pub agent: Option<String>,
    pub preset: Option<String>,
    #[serde(default)]
    pub auto_resume: bool,
    /// An account of `config.toml`'s [accounts]; the client's own default when empty.
    #[serde(default)]
    pub account: Option<String>,
    /// Move to the account with the most headroom before this one's limit.
    #[serde(default)]
    pub switch_accounts: bool,
    /// When to start: now, or later.
    #[serde(default)]
    pub start: StartAt,
}

/// The New session form's "Start": now, at a local time (`23:30`), or when the 5-hour window
/// resets.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StartAt {
    pub at: Option<String>,
    pub after_reset: bool,
}

/// A form whose start was scheduled, as the journal keeps it for the app to start it by.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Form {
    Session(NewSession),
    Loop(NewLoop),
}

/// When the form's session is due, if later than now; `account` is the one it runs under.
fn due(state: &AppState, start: &StartAt, account: Option<&str>) -> Result<Option<schedule::Due>, UiError> {
    let now = state.supervisor.clock().now();
    let bad = |e: schedule::ScheduleError| UiError::new("bad_start", e.to_string());
    if let Some(at) = start.at.as_deref().map(str::trim) {
        if at.is_empty() {
            return Err(UiError::new("bad_start", "choose the time to start at, or Start: Now"));
        }
        return Ok(Some(schedule::at(at.parse().map_err(bad)?, now)));
    }
    if !start.after_reset {
        return Ok(None);
    }
    let rows = state.supervisor.with_store(|s| s.latest_limits_by_account())?;
    let latest = rows.iter().find(|r| r.account.as_deref() == account).map(|r| &r.sample);
    Ok(Some(schedule::after_reset(latest, account.unwrap_or("the default account"), now).map_err(bad)?))
}

/// Records `form`'s session to start at `due`; the app starts it then (see `crate::schedule`).
fn schedule_form(state: &AppState, row: Scheduled, due: &schedule::Due, form: &Form) -> Result<Started, UiError> {
    let form = serde_json::to_value(form).map_err(|e| UiError::new("bad_form", e.to_string()))?;
    let id = state.supervisor.schedule(row, due, &schedule::Launch::App { form })?;
    Ok(Started { id: id.to_string() })
}

#[derive(Debug, Serialize)]
pub struct Started {
    pub id: String,
}

/// What the form describes, checked: every problem named with its fix.
pub fn session_spec(state: &AppState, request: NewSession) -> Result<SessionSpec, UiError> {
    let cwd = request.cwd.trim();
    if cwd.is_empty() {
        return Err(UiError::new("bad_cwd", "choose the working directory the agent runs in"));
    }
    let cwd = PathBuf::from(expand_home(cwd, std::env::var("HOME").ok().as_deref()));
    if !cwd.is_absolute() {
        return Err(UiError::new("bad_cwd", format!("{}: give the full path of the directory", cwd.display())));
    }
    if !cwd.is_dir() {
        return Err(UiError::new(
            "bad_cwd",
            format!("{} is not a directory; create it or choose another", cwd.display()),
        ));
    }
    let argv = shlex::split(request.command.trim())
        .ok_or_else(|| UiError::new("bad_command", "the command has an unclosed quote; close it and try again"))?;
    let agent = match request.agent.as_deref().filter(|a| !a.is_empty()) {
        Some(name) => name.parse::<AgentKind>().map_err(|e| UiError::new("bad_agent", e.to_string()))?,
        None => argv.first().map_or(AgentKind::Generic, |p| AgentKind::infer(p)),
    };
    let adapter = nightshift::agent::Adapter::load(agent, state.paths.agents_dir().as_deref())
        .map_err(|e| UiError::new("agent_signals", e.to_string()))?;
    let mut argv = argv.into_iter();
    let (program, args) = match argv.next() {
        Some(program) => (program, argv.collect()),
        None => match adapter.launch() {
            Some((program, args)) => (program.to_string(), args.to_vec()),
            None => return Err(UiError::new("bad_command", "type the command that starts the agent")),
        },
    };
    let mut spec = SessionSpec::new(CommandSpec { program, args, cwd, env: Vec::new(), size: PtySize::default() });
    spec.agent = agent;
    spec.adapter = Some(adapter);
    if let Some(name) = request.preset.filter(|p| !p.is_empty()) {
        let config = Config::load(state.paths.config_dir.as_deref())?;
        let (settings, _) = config.preset(&name)?;
        spec.preset = Some(name);
        spec.respawn = Some(settings);
    }
    if request.auto_resume {
        spec.auto_resume = Some(resume::Settings::default());
    }
    spec.account = account(state, request.account.as_deref(), agent)?;
    if request.switch_accounts {
        let config = Config::load(state.paths.config_dir.as_deref())?;
        spec.switch = Some(
            config
                .switch_settings(agent, spec.account.as_ref(), None)
                .map_err(|e| UiError::new("bad_switch", e.to_string()))?,
        );
    }
    Ok(spec)
}

/// The account the form names for `agent`'s session, if it names one.
fn account(
    state: &AppState,
    name: Option<&str>,
    agent: AgentKind,
) -> Result<Option<nightshift::agent::Account>, UiError> {
    let Some(name) = name.map(str::trim).filter(|n| !n.is_empty()) else { return Ok(None) };
    Ok(Some(Config::load(state.paths.config_dir.as_deref())?.account(name, agent)?))
}

/// The account names of `config.toml`, for the New session form's picker.
#[tauri::command]
pub fn accounts(state: State<'_, AppState>) -> Result<Vec<String>, UiError> {
    Ok(Config::load(state.paths.config_dir.as_deref())?.accounts.into_keys().collect())
}

/// `~/x` as the user means it.
fn expand_home(path: &str, home: Option<&str>) -> String {
    match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => format!("{home}/{rest}"),
        (None, Some(home)) if path == "~" => home.to_string(),
        _ => path.to_string(),
    }
}

#[tauri::command]
pub async fn new_session(app: AppHandle, state: State<'_, AppState>, request: NewSession) -> Result<Started, UiError> {
    let mut form = request.clone();
    let spec = session_spec(&state, request)?;
    if let Some(due) = due(&state, &form.start, spec.account.as_ref().map(|a| a.name.as_str()))? {
        form.start = StartAt::default();
        return schedule_form(&state, Scheduled::session(&spec), &due, &Form::Session(form));
    }
    let handle = state.supervisor.start(spec).map_err(|e| UiError::new("start_failed", e.to_string()))?;
    crate::awake::recheck(&app);
    Ok(Started { id: handle.id().to_string() })
}

/// The New session form, for a loop.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NewLoop {
    pub cwd: String,
    pub agent: Option<String>,
    pub tasks: Option<String>,
    pub prompt: Option<String>,
    pub max_iterations: Option<u32>,
    pub max_cost_usd: Option<f64>,
    #[serde(default)]
    pub harness_args: String,
    #[serde(default)]
    pub account: Option<String>,
    #[serde(default)]
    pub start: StartAt,
}

#[tauri::command]
pub async fn new_loop(app: AppHandle, state: State<'_, AppState>, request: NewLoop) -> Result<Started, UiError> {
    let mut form = request.clone();
    let spec = loop_spec(&state, request)?;
    if let Some(due) = due(&state, &form.start, spec.account.as_ref().map(|a| a.name.as_str()))? {
        form.start = StartAt::default();
        return schedule_form(&state, Scheduled::looping(&spec), &due, &Form::Loop(form));
    }
    let handle = state.supervisor.start_loop(spec).map_err(|e| UiError::new("start_failed", e.to_string()))?;
    crate::awake::recheck(&app);
    Ok(Started { id: handle.id().to_string() })
}

/// What the loop form describes, checked.
pub fn loop_spec(state: &AppState, request: NewLoop) -> Result<nightshift::loops::LoopSpec, UiError> {
    let cwd = PathBuf::from(expand_home(request.cwd.trim(), std::env::var("HOME").ok().as_deref()));
    if !cwd.is_absolute() {
        return Err(UiError::new("bad_cwd", format!("{}: give the full path of the directory", cwd.display())));
    }
    let agent = match request.agent.as_deref().filter(|a| !a.is_empty()) {
        Some(name) => Some(name.parse::<AgentKind>().map_err(|e| UiError::new("bad_agent", e.to_string()))?),
        None => None,
    };
    let harness_args = shlex::split(request.harness_args.trim())
        .ok_or_else(|| UiError::new("bad_args", "the agent's flags have an unclosed quote; close it and try again"))?;
    let ask = nightshift::loops::LoopRequest {
        agent,
        tasks: request.tasks.filter(|t| !t.trim().is_empty()).map(|t| PathBuf::from(t.trim())),
        prompt: request.prompt.filter(|p| !p.trim().is_empty()),
        max_iterations: request.max_iterations,
        max_cost_usd: request.max_cost_usd,
        harness_args,
        ..nightshift::loops::LoopRequest::default()
    };
    let (mut spec, warnings) =
        ask.plan(&cwd, &state.paths.state_dir).map_err(|e| UiError::new("bad_loop", e.to_string()))?;
    spec.account = account(state, request.account.as_deref(), spec.agent)?;
    for warning in warnings {
        tracing::warn!("{warning}");
    }
    Ok(spec)
}

/// What the window must say until it is fixed: files the app started without (their defaults
/// apply), and journal writes failing (a full disk). Each is one line naming the file and the fix.
#[tauri::command]
pub fn problems(state: State<'_, AppState>) -> Vec<String> {
    let mut out = Vec::new();
    // The core's messages mostly say the fix already; the rest get what happens meanwhile.
    let mut say = |e: String, meanwhile: &str| {
        out.push(if e.contains("fix it") { e } else { format!("{e} — {meanwhile}") });
    };
    let dir = state.paths.config_dir.as_deref();
    if let Err(e) = Config::load(dir) {
        say(e.to_string(), "until it is fixed, the defaults apply");
    }
    let agents = state.paths.agents_dir();
    for kind in AgentKind::ALL {
        if let Err(e) = nightshift::agent::Adapter::load(kind, agents.as_deref()) {
            say(e.to_string(), &format!("until it is fixed, the built-in {kind} signals apply"));
        }
    }
    if let Err(e) = nightshift::hooks::guard::Rules::load(dir) {
        say(e.to_string(), "until it is fixed, the guard uses its built-in rules");
    }
    if let Some(f) = state.supervisor.journal_failing() {
        out.push(format!(
            "the journal cannot be written ({}): {} event(s) since {} are missing; free disk space in {} — sessions go on",
            f.error,
            f.lost,
            nightshift::clock::format_ts(f.since),
            state.paths.state_dir.display()
        ));
    }
    out
}

/// The rest of the night's forecast (`nightshift plan`), to the next 08:00.
#[tauri::command]
pub fn plan(state: State<'_, AppState>) -> Result<Value, UiError> {
    let now = state.supervisor.clock().now();
    let morning = chrono::NaiveTime::from_hms_opt(8, 0, 0).expect("08:00");
    let until = nightshift::plan::next_local(now, morning, &chrono::Local);
    let plan = state.supervisor.with_store(|s| nightshift::plan::from_store(s, now, until))?;
    Ok(json!({ "text": plan.text(&chrono::Local), "plan": plan }))
}

/// What the "Ready for tonight?" panel and the New session page ask the doctor.
#[derive(Debug, Default, Deserialize)]
pub struct DoctorAsk {
    /// The agents; empty: Claude, and Codex when installed.
    #[serde(default)]
    pub agents: Vec<String>,
    /// The working directories; empty: the home directory.
    #[serde(default)]
    pub cwds: Vec<String>,
    /// Start each agent's CLI for the drift probe (a few seconds each).
    #[serde(default)]
    pub probe: bool,
}

/// The doctor's checks, as `nightshift doctor --json` gives them.
#[tauri::command]
pub async fn doctor(state: State<'_, AppState>, ask: DoctorAsk) -> Result<nightshift::doctor::Report, UiError> {
    let home = std::env::var("HOME").ok();
    let mut agents = Vec::new();
    for name in ask.agents.iter().filter(|a| !a.is_empty()) {
        agents.push(name.parse::<AgentKind>().map_err(|e| UiError::new("bad_agent", e.to_string()))?);
    }
    let cwds: Vec<PathBuf> = ask
        .cwds
        .iter()
        .map(|c| c.trim())
        .filter(|c| !c.is_empty())
        .map(|c| PathBuf::from(expand_home(c, home.as_deref())))
        .collect();
    let here = home.map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/"));
    let opts = nightshift::doctor::Options { agents, cwds, agent_args: Vec::new(), no_probe: !ask.probe };
    let paths = state.paths.clone();
    tauri::async_runtime::spawn_blocking(move || nightshift::doctor::run(&paths, &here, &opts))
        .await
        .map_err(|e| UiError::new("doctor_failed", format!("the checks could not run: {e}")))
}

#[derive(Debug, Serialize)]
pub struct PresetView {
    pub name: String,
    pub title: String,
    pub description: String,
    pub source: nightshift::config::Source,
    pub settings: nightshift::respawn::Settings,
}

#[tauri::command]
pub fn presets(state: State<'_, AppState>) -> Result<Vec<PresetView>, UiError> {
    let config = Config::load(state.paths.config_dir.as_deref())?;
    Ok(config
        .all()
        .into_iter()
        .map(|(name, settings, source)| {
            let builtin = nightshift::respawn::BUILTIN_PRESETS.iter().find(|p| p.0 == name);
            PresetView {
                title: builtin.map_or_else(|| name.clone(), |p| p.1.to_string()),
                description: builtin.map_or_else(|| "your preset".to_string(), |p| p.4.to_string()),
                name,
                source,
                settings,
            }
        })
        .collect())
}

#[tauri::command]
pub fn save_preset(
    state: State<'_, AppState>,
    name: String,
    settings: nightshift::respawn::Settings,
) -> Result<(), UiError> {
    let dir = state.paths.config_dir.as_deref();
    let mut config = Config::load(dir)?;
    config.save_preset(name.trim(), settings)?;
    config.save(dir)?;
    Ok(())
}

#[tauri::command]
pub fn delete_preset(state: State<'_, AppState>, name: String) -> Result<(), UiError> {
    let dir = state.paths.config_dir.as_deref();
    let mut config = Config::load(dir)?;
    config.delete_preset(&name)?;
    config.save(dir)?;
    Ok(())
}

#[tauri::command]
pub fn usage(state: State<'_, AppState>) -> Result<Value, UiError> {
    let now = state.supervisor.clock().now();
    Ok(state.supervisor.with_store(|s| nightshift::digest::usage_report(s, now))?)
}

/// The digest reads the whole range of the journal and runs git in every session's repository: on
/// the blocking pool, never the window's thread or the async workers.
#[tauri::command]
pub async fn digest(state: State<'_, AppState>, range: String, mark_viewed: bool) -> Result<Value, UiError> {
    let supervisor = state.supervisor.clone();
    tauri::async_runtime::spawn_blocking(move || digest_of(&supervisor, &range, mark_viewed))
        .await
        .map_err(|e| UiError::new("digest_failed", format!("the digest could not be made: {e}")))?
}

fn digest_of(supervisor: &nightshift::Supervisor, range: &str, mark_viewed: bool) -> Result<Value, UiError> {
    let range = match range {
        "since_last" => Range::SinceLastViewed,
        "1h" => Range::LastHour,
        "today" => Range::Today,
        "24h" => Range::Last24h,
        other => return Err(UiError::new("bad_range", format!("`{other}`: choose since_last, 1h, today or 24h"))),
    };
    let now = supervisor.clock().now();
    let d = supervisor.with_store(|s| -> Result<_, nightshift::store::StoreError> {
        let last_viewed = s
            .meta(LAST_VIEWED_KEY)?
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(&t).ok())
            .map(|t| t.with_timezone(&chrono::Utc));
        let (from, to) = range.bounds(now, last_viewed);
        Ok((digest::build(s, from, to)?, digest::timeline::build(s, from, to)?))
    })?;
    let (d, timeline) = d;
    if mark_viewed {
        supervisor.write_store(|s| s.set_meta(LAST_VIEWED_KEY, &nightshift::clock::format_ts(now)))?;
    }
    Ok(json!({ "text": digest::render(&d, Format::Text), "digest": d, "timeline": timeline }))
}

#[tauri::command]
pub fn morning(state: State<'_, AppState>) -> Result<Value, UiError> {
    let Some(summary) = state.supervisor.with_store(|s| s.latest_summary())? else { return Ok(Value::Null) };
    // The stored digest itself too: the window shows its figures (`counts`, `totals`) beside the text
    // made from it. A night when nothing ran has none.
    let stored = serde_json::from_str::<digest::Digest>(&summary.body).ok();
    let text = stored.as_ref().map_or_else(|| summary.headline.clone(), |d| digest::render(d, Format::Text));
    let range = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok().map(|t| t.with_timezone(&chrono::Utc));
    let timeline = match (range(&summary.from_ts), range(&summary.to_ts)) {
        (Some(from), Some(to)) => Some(state.supervisor.with_store(|s| digest::timeline::build(s, from, to))?),
        _ => None,
    };
    Ok(json!({
        "scheduled_for": summary.scheduled_for,
        "created_at": summary.created_at,
        "headline": summary.headline,
        "text": text,
        "digest": stored,
        "timeline": timeline,
    }))
}

// Off the main thread: it asks the keyring over D-Bus.
#[tauri::command(async)]
pub fn app_settings(app: AppHandle, state: State<'_, AppState>) -> Result<Value, UiError> {
    use tauri_plugin_autostart::ManagerExt;
    let config = Config::load(state.paths.config_dir.as_deref())?;
    let launch_at_login = app.autolaunch().is_enabled().unwrap_or(false);
    Ok(json!({
        "notifications": config.notifications,
        "launch_at_login": launch_at_login,
        "keep_resumes_on_quit": config.app.keep_resumes_on_quit,
        "push": config.push,
        // Where a token is kept (the keyring, the file), never the token.
        "push_token": nightshift::push::token_kept(state.paths.config_dir.as_deref()),
        "power": crate::awake::status(&app),
    }))
}

#[tauri::command]
pub fn set_keep_resumes_on_quit(state: State<'_, AppState>, keep: bool) -> Result<(), UiError> {
    let dir = state.paths.config_dir.as_deref();
    let mut config = Config::load(dir)?;
    config.app.keep_resumes_on_quit = keep;
    config.save(dir)?;
    Ok(())
}

#[tauri::command]
pub fn set_notifications(state: State<'_, AppState>, switches: Switches) -> Result<(), UiError> {
    let dir = state.paths.config_dir.as_deref();
    let mut config = Config::load(dir)?;
    config.notifications = switches;
    config.save(dir)?;
    crate::notify::set_switches(&state, switches);
    Ok(())
}

/// Saves where the phone's notifications go and applies it from the next notice on. Blank URLs
/// are none; a bad one, or a token file others may read, is refused with the fix.
#[tauri::command(async)]
pub fn set_push(state: State<'_, AppState>, mut settings: nightshift::push::Settings) -> Result<(), UiError> {
    for url in [&mut settings.ntfy, &mut settings.webhook, &mut settings.click] {
        *url = url.take().map(|u| u.trim().to_string()).filter(|u| !u.is_empty());
    }
    if let Some(problem) = settings.problem() {
        return Err(UiError::new("bad_push", problem));
    }
    let dir = state.paths.config_dir.as_deref();
    let token = nightshift::push::token(dir).map_err(|problem| UiError::new("bad_push_token", problem))?;
    let mut config = Config::load(dir)?;
    config.push = settings.clone();
    config.save(dir)?;
    state.push.update(settings, token);
    Ok(())
}

#[tauri::command]
pub fn set_launch_at_login(app: AppHandle, enabled: bool) -> Result<(), UiError> {
    use tauri_plugin_autostart::ManagerExt;
    let launcher = app.autolaunch();
    let result = if enabled { launcher.enable() } else { launcher.disable() };
    result.map_err(|e| UiError::new("autostart", format!("could not change launch at login: {e}")))
}

/// Holds or releases every live session's automatic actions; returns how many changed, or which
/// could not be reached.
pub async fn hold_all(app: &AppHandle, held: bool) -> Result<usize, UiError> {
    use tauri::Manager;
    let state = app.state::<AppState>();
    let rows = state.supervisor.with_store(|s| s.sessions())?;
    let source = if held { "Pause all" } else { "Resume all" };
    let mut changed = 0;
    let mut failed = Vec::new();
    // Live ones only: a scheduled one has nothing to hold yet.
    for row in rows.iter().filter(|r| r.standing() == nightshift::store::Standing::Live) {
        let change = Change { held: Some(held), source: source.into(), ..Change::default() };
        match ask(&state, &row.id, |session| Request::Configure { session, change: Box::new(change) }).await {
            Ok(_) => changed += 1,
            Err(e) => failed.push(format!("{}: {}", row.id, e.message)),
        }
    }
    crate::awake::recheck(app);
    if failed.is_empty() {
        Ok(changed)
    } else {
        Err(UiError::new(
            "not_all_reached",
            format!("{source} reached {changed} session(s) but not {}", failed.join("; ")),
        ))
    }
}

#[tauri::command]
pub async fn pause_all(app: AppHandle) -> Result<usize, UiError> {
    hold_all(&app, true).await
}

#[tauri::command]
pub async fn resume_all(app: AppHandle) -> Result<usize, UiError> {
    hold_all(&app, false).await
}

#[cfg(test)]
mod tests {
    use super::{expand_home, Actions, SessionKind, SessionOptions, Standing};

    #[test]
    fn the_options_page_gets_the_core_auto_resume_defaults() {
        let json = serde_json::to_value(SessionOptions::from(nightshift::session::Options::default())).unwrap();
        assert_eq!(json["respawn_active"], false, "the options themselves stay at the top level");
        let defaults = serde_json::to_value(nightshift::limits::resume::Settings::default()).unwrap();
        assert_eq!(json["auto_resume_defaults"], defaults);
        assert_eq!(json["auto_resume_defaults"]["margin"], 5.0, "seconds, as the page's field takes them");
    }

    #[test]
    fn a_session_page_may_ask_what_the_commands_do() {
        use SessionKind::{Loop, Terminal};
        use Standing::*;
        let table = [
            // standing, kind, (stop, resume, send)
            (Live, Terminal, (true, false, true)),
            (Live, Loop, (true, false, false)),
            (Scheduled, Terminal, (true, false, false)),
            // No Nightshift runs these: Stop ends them in the journal (`end_orphan`).
            (Lost, Terminal, (true, true, false)),
            (Kept, Terminal, (true, false, false)),
            (Ended, Terminal, (false, false, false)),
        ];
        for (standing, kind, (stop, resume, send)) in table {
            assert_eq!(Actions::of(standing, kind), Actions { stop, resume, send }, "{standing:?} {kind:?}");
        }
    }

    #[test]
    fn home_is_expanded_only_at_the_start() {
        assert_eq!(expand_home("~/src", Some("/home/me")), "/home/me/src");
        assert_eq!(expand_home("~", Some("/home/me")), "/home/me");
        assert_eq!(expand_home("/srv/~/x", Some("/home/me")), "/srv/~/x");
        assert_eq!(expand_home("~/src", None), "~/src");
    }
}
