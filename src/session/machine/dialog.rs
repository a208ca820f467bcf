//! The dialogs the agent waits on (a question, a permission prompt, a trust or limit menu): how
//! long each waited and who answered it. An answered dialog is journalled once, as the session
//! leaves `waiting_input`, so the night's record says the need was met, and by whom.

use super::*;
use crate::event::Answerer;

/// A dialog the agent waits on.
#[derive(Debug, Clone, PartialEq)]
struct Asked {
    dialog: Dialog,
    since: Instant,
    /// Who last typed while it was shown.
    by: Option<Answerer>,
}

/// What the agent's screen shows, as the detector judged it.
#[derive(Debug, Clone, Default)]
pub(super) struct Screen {
    activity: Option<Activity>,
    /// The dialog on screen, while the agent waits on the user.
    dialog: Option<Dialog>,
    /// Since when the agent waits on a dialog, and who typed into it since.
    asked: Option<Asked>,
}

impl Screen {
    /// The agent's activity; `None` until the detector first judged this life's screen.
    pub(super) fn activity(&self) -> Option<Activity> {
        self.activity
    }

    pub(super) fn dialog(&self) -> Option<&Dialog> {
        self.dialog.as_ref()
    }
}

impl Machine {
    /// The agent's activity changed, showing `dialog` or none: a dialog that appears starts its
    /// wait; one that is gone was answered.
    pub(super) fn screen_seen(&mut self, activity: Activity, dialog: Option<Dialog>, now: Now, fx: &mut Vec<Effect>) {
        self.screen.activity = Some(activity);
        self.screen.dialog.clone_from(&dialog);
        match dialog.filter(|_| activity == Activity::WaitingInput) {
            Some(dialog) => {
                if self.screen.asked.as_ref().is_none_or(|a| a.dialog.kind != dialog.kind) {
                    self.answered(now, fx);
                    self.screen.asked = Some(Asked { dialog, since: now.mono, by: None });
                }
            }
            None => self.answered(now, fx),
        }
    }

    /// Someone typed into the session: if a dialog is shown, they answer it.
    pub(super) fn typed_by(&mut self, by: Answerer) {
        if let Some(asked) = &mut self.screen.asked {
            asked.by = Some(by);
        }
    }

    /// An answer from afar to the dialog fingerprinted `dialog`: typed as `by` typed it while that
    /// very dialog waits on the user, refused otherwise (answered at the desk, or another came).
    pub(super) fn answer_from_afar(
        &mut self,
        dialog: &str,
        keys: Vec<u8>,
        by: Answerer,
        now: Now,
        fx: &mut Vec<Effect>,
    ) {
        use crate::phone::{fingerprint, Refusal};
        if !self.lives.life().is_live() {
            fx.push(Effect::Answered(Err(Refusal::SessionEnded)));
            return;
        }
        let shown = self
            .screen
            .dialog
            .as_ref()
            .filter(|_| self.screen.activity == Some(Activity::WaitingInput))
            .map(|d| fingerprint(d.kind.as_str(), d.text.as_deref()));
        if shown.as_deref() != Some(dialog) {
            fx.push(Effect::Answered(Err(Refusal::DialogChanged)));
            return;
        }
        self.typed_by(by);
        self.emit(EventKind::Input { source: by.source().to_string(), chars: keys.len(), enter: false }, fx);
        fx.push(Effect::Write { after: std::time::Duration::ZERO, bytes: keys });
        self.drive(crate::respawn::Input::UserInput, now, fx);
        fx.push(Effect::Answered(Ok(())));
    }

    /// The dialog waited on, if any, is no longer shown: journalled as answered.
    fn answered(&mut self, now: Now, fx: &mut Vec<Effect>) {
        let Some(asked) = self.screen.asked.take() else { return };
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

    /// A new life: whatever the last one showed is gone with it, a dialog unanswered.
    pub(super) fn screen_cleared(&mut self) {
        self.screen = Screen::default();
    }
}
