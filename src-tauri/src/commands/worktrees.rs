//! The worktrees sessions and loops worked in (`--worktree`, the New session page's box): listed
//! with where their work stands, and removed without losing work, as `nightshift worktree` does.

use super::*;
use nightshift::git::worktree;

/// One worktree as the window lists it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WorktreeRow {
    pub session: String,
    pub name: String,
    pub branch: String,
    pub path: String,
    pub task: Option<String>,
    /// Its work in one line (`2 commits, 1 file changed, …, not pushed`).
    pub work: String,
    /// What removing it would lose; none when nothing.
    pub at_risk: Option<String>,
    pub look: String,
    pub merge: String,
}

/// Every worktree made that is still there, newest session first (git is asked where each one's
/// work stands).
#[tauri::command]
pub async fn worktrees(state: State<'_, AppState>) -> Result<Vec<WorktreeRow>, UiError> {
    let made = state.supervisor.with_store(|s| s.all_worktrees())?;
    tauri::async_runtime::spawn_blocking(move || {
        made.into_iter()
            .filter(|m| m.worktree.path.exists())
            .map(|m| {
                let s = worktree::standing(&m.worktree);
                WorktreeRow {
                    name: m.name().to_string(),
                    session: m.session,
                    branch: m.worktree.branch.clone(),
                    path: m.worktree.path.display().to_string(),
                    task: m.task,
                    work: s.words(),
                    at_risk: s.at_risk(),
                    look: m.worktree.look(),
                    merge: m.worktree.merge(),
                }
            })
            .collect()
    })
    .await
    .map_err(|e| UiError::new(Code::BadWorktree, e.to_string()))
}

/// Removes worktree `name`: refused while it holds work that would be lost unless `force` (its
/// uncommitted files are then kept under a salvage ref, a branch with commits of its own is kept).
/// Returns what was done, in words.
#[tauri::command]
pub async fn remove_worktree(state: State<'_, AppState>, name: String, force: bool) -> Result<String, UiError> {
    let made =
        state.supervisor.with_store(|s| s.find_worktree(&name)).map_err(|e| UiError::new(Code::BadWorktree, e))?;
    tauri::async_runtime::spawn_blocking(move || {
        let removed = worktree::remove(&made.worktree, force, &made.session)
            .map_err(|e| UiError::new(Code::WorktreeAtRisk, e))?;
        let mut said = format!("Removed {}.", made.worktree.path.display());
        if let Some(reference) = removed.salvaged {
            said.push_str(&format!(" Its uncommitted files are kept as {reference}."));
        }
        if removed.branch_deleted {
            said.push_str(&format!(" Its branch {} is deleted too: it held nothing unmerged.", made.worktree.branch));
        } else {
            said.push_str(&format!(" Its branch {} is kept, with its commits.", made.worktree.branch));
        }
        Ok(said)
    })
    .await
    .map_err(|e| UiError::new(Code::BadWorktree, e.to_string()))?
}
