//! The dialogs the agent waits on (a question, a permission prompt, a trust or limit menu): how
//! long each waited and who answered it. An answered dialog is journalled once, as the session
//! leaves `waiting_input`, so the night's record says the need was met, and by whom.

use super::*;
use crate::event::Answerer;

/// A dialog the agent waits on.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Asked {
    dialog: Dialog,
    since: Instant,
    /// Who last typed while it was shown.
    by: Option<Answerer>,
}

impl Machine {
    /// The agent's activity changed (its dialog is `self.dialog`): a dialog that appears starts
    /// its wait; one that is gone was answered.
    pub(super) fn dialog_seen(&mut self, now: Now, fx: &mut Vec<Effect>) {
        match self.dialog.clone().filter(|_| self.activity == Some(Activity::WaitingInput)) {
            Some(dialog) => {
                if self.asked.as_ref().is_none_or(|a| a.dialog.kind != dialog.kind) {
                    self.answered(now, fx);
                    self.asked = Some(Asked { dialog, since: now.mono, by: None });
                }
            }
            None => self.answered(now, fx),
        }
    }

    /// Someone typed into the session: if a dialog is shown, they answer it.
    pub(super) fn typed_by(&mut self, by: Answerer) {
        if let Some(asked) = &mut self.asked {
            asked.by = Some(by);
        }
    }

    /// The dialog waited on, if any, is no longer shown: journalled as answered.
    fn answered(&mut self, now: Now, fx: &mut Vec<Effect>) {
        let Some(asked) = self.asked.take() else { return };
        let waited = now.mono.saturating_duration_since(asked.since);
        self.emit(
            EventKind::DialogAnswered {
                dialog: asked.dialog.kind,
                text: asked.dialog.text.map(|t| t.chars().take(200).collect()),
                by: asked.by.unwrap_or(Answerer::Nobody),
                waited_secs: waited.as_secs(),
            },
            fx,
        );
    }

    /// A new life: whatever the last one showed is gone with it, unanswered.
    pub(super) fn forget_dialog(&mut self) {
        self.asked = None;
    }
}
