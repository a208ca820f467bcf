//! What the digest's and the morning's "needs you" rows do: show or restore the work salvage kept,
//! and dismiss a row. (Resume, answer and the breaker's reset are the session page's own commands.)

use super::*;
use nightshift::digest::Dismissed;
use nightshift::git::salvage;

/// Where salvage keeps its snapshots: a reference outside it is not the window's to show.
const SALVAGE_REFS: &str = "refs/nightshift/salvage/";

fn snapshot(repo: &str, reference: &str) -> Result<PathBuf, UiError> {
    if !reference.starts_with(SALVAGE_REFS) || reference.contains("..") {
        return Err(UiError::new(Code::BadSalvage, format!("`{reference}` is not a snapshot salvage kept")));
    }
    let repo = PathBuf::from(repo);
    if !repo.is_dir() {
        return Err(UiError::new(
            Code::BadSalvage,
            format!("{} is gone: the snapshot was kept in that repository", repo.display()),
        ));
    }
    Ok(repo)
}

/// The snapshot's change from the commit it was taken on: its stat, then its patch.
#[tauri::command]
pub async fn salvage_show(repo: String, reference: String) -> Result<String, UiError> {
    let dir = snapshot(&repo, &reference)?;
    tauri::async_runtime::spawn_blocking(move || salvage::show(&dir, &reference))
        .await
        .ok()
        .flatten()
        .ok_or_else(|| UiError::new(Code::BadSalvage, "the snapshot could not be read; it may have been deleted"))
}

/// Puts the snapshot on a new branch of its repository, named after it
/// (`nightshift/salvage-<session>-<n>`, or with `-2`, `-3` when that exists); the working tree, the
/// index and the current branch are left as they are. Returns the branch.
#[tauri::command]
pub async fn salvage_restore(repo: String, reference: String) -> Result<String, UiError> {
    let dir = snapshot(&repo, &reference)?;
    let name = reference.trim_start_matches(SALVAGE_REFS).replace('/', "-");
    tauri::async_runtime::spawn_blocking(move || {
        let mut last = String::new();
        for n in 1..=20 {
            let branch =
                if n == 1 { format!("nightshift/salvage-{name}") } else { format!("nightshift/salvage-{name}-{n}") };
            match salvage::restore_to_branch(&dir, &reference, &branch) {
                Ok(()) => return Ok(branch),
                Err(e) if e.contains("exists already") => last = e,
                Err(e) => return Err(UiError::new(Code::BadSalvage, e)),
            }
        }
        Err(UiError::new(Code::BadSalvage, last))
    })
    .await
    .map_err(|e| UiError::new(Code::BadSalvage, e.to_string()))?
}

/// Dismisses one "needs you" row of a session for good (until what it says changes): the digest
/// leaves it out, here and in `nightshift digest`.
#[tauri::command]
pub fn dismiss_need(state: State<'_, AppState>, session: String, key: String) -> Result<(), UiError> {
    if key.trim().is_empty() {
        return Err(UiError::new(Code::BadForm, "which row to dismiss was not said"));
    }
    let row = state.supervisor.with_store(|s| s.find_session(&session))?;
    Ok(state.supervisor.write_store(|s| Dismissed::add(s, &row.id, &key))?)
}
