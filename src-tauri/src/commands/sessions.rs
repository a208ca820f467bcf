//! A session's page: its journal, lives, screen and options, and what it may be asked: stop,
//! resume, type, hold.

use super::*;

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
    /// Resume here, on its own conversation: a lost one itself, an ended terminal session in a new
    /// session (a kept one comes back by itself).
    pub resume: bool,
    /// Type to the agent: a live terminal session (a loop takes no typing).
    pub send: bool,
}

impl Actions {
    /// `conversing`: its agent names conversations to carry on (Claude, Codex), so an ended one can be.
    pub fn of(standing: Standing, kind: SessionKind, conversing: bool) -> Self {
        let ended_terminal = standing == Standing::Ended && kind == SessionKind::Terminal && conversing;
        Self {
            stop: standing != Standing::Ended,
            resume: standing == Standing::Lost || ended_terminal,
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
            let conversing = row.agent != AgentKind::Generic.as_str();
            let actions = Actions::of(row.standing(), row.kind, conversing);
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
        .map_err(|e| UiError::new(Code::HandoffUnreadable, format!("the session's handoff cannot be read: {e}")))
}

/// A session's recorded lives, and the file of one of them (the last unless `life` says).
pub(super) fn recorded_life(
    dir: &std::path::Path,
    id: &str,
    life: Option<u32>,
) -> Result<(Vec<u32>, u32, PathBuf), UiError> {
    let lives = nightshift::record::lives(dir, id);
    let Some((n, file)) = lives.iter().find(|(n, _)| Some(*n) == life).or(lives.last()).cloned() else {
        return Err(UiError::new(Code::NoRecording, format!("session {id} has no recording")));
    };
    Ok((lives.into_iter().map(|(n, _)| n).collect(), n, file))
}

/// A session's recorded lives, and one of them (the last unless `life` says) as text.
#[tauri::command]
pub async fn session_lives(state: State<'_, AppState>, id: String, life: Option<u32>) -> Result<Value, UiError> {
    let id = state.supervisor.with_store(|s| s.find_session(&id))?.id;
    let dir = state.paths.state_dir.clone();
    tauri::async_runtime::spawn_blocking(move || {
        let (lives, n, file) = recorded_life(&dir, &id, life)?;
        let text = nightshift::record::text(&file)
            .map_err(|e| UiError::new(Code::RecordingUnreadable, format!("{}: {e}", file.display())))?;
        Ok(json!({ "lives": lives, "life": n, "file": file, "text": text }))
    })
    .await
    .map_err(|e| UiError::new(Code::RecordingUnreadable, format!("the recording could not be read: {e}")))?
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

/// Lets `host` through the session's network fence now, and through every night's after it (it
/// joins `[sandbox] network` in config.toml). Answers with the session's options.
#[tauri::command]
pub async fn allow_host(state: State<'_, AppState>, id: String, host: String) -> Result<SessionOptions, UiError> {
    let Some(pattern) = nightshift::proxy::Pattern::parse(host.trim()) else {
        return Err(UiError::new(
            Code::BadHost,
            format!("`{}` is not a host: give a name, an address, host:port or *.domain", host.trim()),
        ));
    };
    let host = pattern.to_string();
    Config::update(state.paths.config_dir.as_deref(), |c| {
        if !c.sandbox.network.contains(&host) {
            c.sandbox.network.push(host.clone());
        }
        Ok(())
    })?;
    let by = Some("the app".to_string());
    match ask(&state, &id, |session| Request::AllowHost { session, host: host.clone(), by }).await? {
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

/// Resumes a session on its own conversation in this app: a lost one (its Nightshift ended without
/// ending it, and nothing armed was left to bring it back by itself) under its own id, an ended one
/// in a new session from its contract. Returns the id of the session that runs.
#[tauri::command]
pub async fn resume_session(state: State<'_, AppState>, id: String) -> Result<String, UiError> {
    let row = state.supervisor.with_store(|s| s.find_session(&id))?;
    let supervisor = state.supervisor.clone();
    let handle = tauri::async_runtime::spawn_blocking(move || {
        if row.is_final() {
            supervisor.continue_ended(&row)
        } else {
            supervisor.resume_lost(&row)
        }
    })
    .await
    .map_err(|e| UiError::new(Code::ResumeFailed, e.to_string()))?
    .map_err(|e| UiError::new(Code::ResumeFailed, e.to_string()))?;
    Ok(handle.id().to_string())
}

#[tauri::command]
pub async fn send_text(state: State<'_, AppState>, id: String, text: String) -> Result<(), UiError> {
    if text.is_empty() {
        return Err(UiError::new(Code::EmptyText, "there is nothing to send; type the text first"));
    }
    let by = Some(nightshift::event::Answerer::Window);
    ask(&state, &id, |session| Request::Send { session, text, enter: true, by }).await.map(|_| ())
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
            Code::NotAllReached,
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
