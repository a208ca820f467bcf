//! The worktrees sessions worked in, as the journal keeps them: a session's `--worktree` and a
//! loop's are in their contracts, those a loop made for its tasks in `worktree_made` events.

use serde::Serialize;

use super::{Store, StoreError};
use crate::event::{Event, EventKind};
use crate::git::worktree::Worktree;

/// A worktree a session made, and the task it was made for (a loop's `--worktree-per-task`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MadeWorktree {
    pub session: String,
    pub worktree: Worktree,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
}

impl MadeWorktree {
    /// Its name: its branch without `nightshift/`.
    pub fn name(&self) -> &str {
        self.worktree.branch.strip_prefix("nightshift/").unwrap_or(&self.worktree.branch)
    }
}

impl Store {
    /// The worktrees session `id` worked in, oldest first.
    pub fn worktrees(&self, id: &str) -> Result<Vec<MadeWorktree>, StoreError> {
        let mut out: Vec<MadeWorktree> = Vec::new();
        let mut add = |worktree: Worktree, task: Option<String>| {
            if !out.iter().any(|m| m.worktree.path == worktree.path) {
                out.push(MadeWorktree { session: id.to_string(), worktree, task });
            }
        };
        match self.contract(id)?.map(|c| c.kind) {
            Some(crate::contract::Kind::Terminal(t)) => {
                if let Some(w) = t.worktree {
                    add(w, None);
                }
            }
            Some(crate::contract::Kind::Loop(l)) => {
                for project in l.spec.projects {
                    if let crate::contract::Isolation::Worktree(w) = project.isolation {
                        add(w, None);
                    }
                }
            }
            None => {}
        }
        for e in self.events_named(id, &["worktree_made"])? {
            if let Ok(Event { kind: EventKind::WorktreeMade { worktree, task }, .. }) = serde_json::from_str(&e.body) {
                add(worktree, task);
            }
        }
        Ok(out)
    }

    /// The salvage refs kept of `made`'s folder that are still there, oldest first.
    pub fn worktree_salvage(&self, made: &MadeWorktree) -> Result<Vec<String>, StoreError> {
        let path = made.worktree.path.display().to_string();
        let kept: Vec<String> = self
            .events_named(&made.session, &["salvaged"])?
            .into_iter()
            .filter_map(|e| match serde_json::from_str::<Event>(&e.body).ok()?.kind {
                EventKind::Salvaged { repo, reference, .. } if repo == path => Some(reference),
                _ => None,
            })
            .collect();
        Ok(crate::git::salvage::list(&made.worktree.repo, Some(&made.session))
            .into_iter()
            .map(|s| s.reference)
            .filter(|r| kept.contains(r))
            .collect())
    }

    /// Every session's worktrees, newest session first, each worktree once.
    pub fn all_worktrees(&self) -> Result<Vec<MadeWorktree>, StoreError> {
        let mut out: Vec<MadeWorktree> = Vec::new();
        for row in self.sessions()? {
            for m in self.worktrees(&row.id)? {
                if !out.iter().any(|o| o.worktree.path == m.worktree.path) {
                    out.push(m);
                }
            }
        }
        Ok(out)
    }

    /// The worktree `name` names: its name, its branch, or (when it made only one) its session's id
    /// or a prefix of it; a one-line error otherwise.
    pub fn find_worktree(&self, name: &str) -> Result<MadeWorktree, String> {
        let all = self.all_worktrees().map_err(|e| e.to_string())?;
        let mut found: Vec<MadeWorktree> =
            all.iter().filter(|m| m.name() == name || m.worktree.branch == name).cloned().collect();
        if found.is_empty() && !name.is_empty() {
            found = all.into_iter().filter(|m| m.session.starts_with(name)).collect();
        }
        match found.len() {
            1 => Ok(found.remove(0)),
            0 => Err(format!("no worktree is called {name}; `nightshift worktree list` shows them")),
            n => Err(format!("{name} names {n} worktrees; give one's whole name (`nightshift worktree list`)")),
        }
    }
}
