//! What the window can ask for. Each command is a thin call into the core.

use nightshift::store::SessionSummary;
use serde_json::Value;
use tauri::State;

use crate::error::UiError;
use crate::AppState;

/// How many of a session's most recent events its page shows.
const SESSION_EVENTS: usize = 500;

#[tauri::command]
#[tracing::instrument(skip(state))]
pub fn list_sessions(state: State<'_, AppState>) -> Result<Vec<SessionSummary>, UiError> {
    let rows = state.supervisor.with_store(|s| s.sessions())?;
    Ok(rows.into_iter().map(SessionSummary::from).collect())
}

#[tauri::command]
#[tracing::instrument(skip(state))]
pub fn session_events(state: State<'_, AppState>, id: String) -> Result<Vec<Value>, UiError> {
    let events = state.supervisor.with_store(|s| {
        let id = s.find_session(&id)?.id;
        s.recent_events(&id, SESSION_EVENTS)
    })?;
    Ok(events.iter().filter_map(|e| serde_json::from_str(&e.body).ok()).collect())
}
