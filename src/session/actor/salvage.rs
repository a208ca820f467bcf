//! The session's uncommitted work kept as it ends (a life, a loop's iteration): a salvage snapshot
//! per repository, journalled.

use crate::event::SessionId;
use crate::journal::Journal;

/// Keeps the uncommitted work of every repository of `dir` for `session`, and journals it: a new
/// snapshot (naming the files that were there before the session began), or, when the session's
/// latest snapshot holds that work already, that it is unchanged.
/// Blocking (git): off the async workers, or where the end waits for it anyway.
pub(crate) fn salvage(dir: &std::path::Path, session: &SessionId, reason: &str, journal: &Journal) {
    use crate::event::EventKind;
    use crate::git::salvage::{self, Outcome};
    let repos = salvage::repos(dir);
    if repos.is_empty() {
        return;
    }
    // When the session began: files older than that, untouched since, are not the agent's work.
    let began = journal
        .read(|s| s.session(session.as_str()))
        .ok()
        .flatten()
        .and_then(|row| chrono::DateTime::parse_from_rfc3339(&row.created).ok())
        .map(std::time::SystemTime::from);
    for repo in repos {
        let message = format!("WIP salvage of session {session}: {reason} (unreviewed, may not build)");
        let shown = repo.display().to_string();
        let reason = reason.to_string();
        match salvage::snapshot(&repo, session.as_str(), &message, began) {
            Outcome::Saved { snapshot: s, users, too_big } => {
                journal.emit(
                    session,
                    EventKind::Salvaged {
                        repo: shown,
                        reference: s.reference,
                        commit: s.commit,
                        files: s.files.len(),
                        bytes: s.bytes,
                        reason,
                        preexisting: Vec::new(),
                        users,
                        too_big,
                    },
                );
            }
            Outcome::Unchanged { reference, .. } => {
                journal.emit(session, EventKind::SalvageUnchanged { repo: shown, reference, reason });
            }
            Outcome::Clean => {}
            Outcome::UsersOnly(users) => {
                let why = format!(
                    "nothing of the agent's is uncommitted; your own files, there before the session began and \
                     untouched since, are left as they are: {}",
                    users.join(", ")
                );
                journal.emit(session, EventKind::SalvageSkipped { repo: shown, why, reason, users });
            }
            Outcome::TooBig(files) => {
                let big: Vec<String> = files.iter().map(ToString::to_string).collect();
                let why = format!("only files too big to keep are uncommitted: {}", big.join(", "));
                journal.emit(session, EventKind::SalvageSkipped { repo: shown, why, reason, users: Vec::new() });
            }
            Outcome::Refused(why) => {
                journal.emit(session, EventKind::SalvageSkipped { repo: shown, why, reason, users: Vec::new() });
            }
        }
    }
}
