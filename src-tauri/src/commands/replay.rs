//! A life of a session played back in the window: its recording's frames on the playback's clock
//! (long still stretches cut short), and the journal's moments of that life as marks on the seek
//! bar.

use super::*;
use nightshift::store::EventQuery;

/// Life `life` of session `id` (its last when `None`): `{lives, life, cast, marks}`, each mark at
/// its second of the playback with still stretches cut (`t`), of the life (`real`) and of the wall
/// clock (`at`).
#[tauri::command]
pub async fn session_replay(state: State<'_, AppState>, id: String, life: Option<u32>) -> Result<Value, UiError> {
    let id = state.supervisor.with_store(|s| s.find_session(&id))?.id;
    let query = EventQuery { session: Some(id.clone()), ..EventQuery::default() };
    let events: Vec<nightshift::Event> = state
        .supervisor
        .with_store(|s| s.events(&query))?
        .iter()
        .filter_map(|e| serde_json::from_str(&e.body).ok())
        .collect();
    let dir = state.paths.state_dir.clone();
    tauri::async_runtime::spawn_blocking(move || {
        let (lives, n, file) = super::sessions::recorded_life(&dir, &id, life)?;
        let cast = nightshift::record::cast(&file)
            .map_err(|e| UiError::new(Code::RecordingUnreadable, format!("{}: {e}", file.display())))?;
        if cast.frames.is_empty() {
            return Err(UiError::new(Code::NoRecording, format!("nothing of life {n} of session {id} is saved yet")));
        }
        let started =
            chrono::DateTime::from_timestamp_millis(i64::try_from(cast.started_ms).unwrap_or(0)).unwrap_or_default();
        let last = cast.frames.last().map_or(0.0, |f| f.real);
        let end = started + chrono::Duration::milliseconds((last * 1000.0) as i64 + 1000);
        let marks: Vec<Value> = nightshift::digest::timeline::replay_marks(&id, &events, started, end)
            .into_iter()
            .map(|m| {
                let real = (m.at - started).num_milliseconds() as f64 / 1000.0;
                json!({ "t": cast.played_at(real), "real": real, "at": m.at, "kind": m.kind, "text": m.text })
            })
            .collect();
        Ok(json!({ "lives": lives, "life": n, "cast": cast, "marks": marks }))
    })
    .await
    .map_err(|e| UiError::new(Code::RecordingUnreadable, format!("the recording could not be read: {e}")))?
}
