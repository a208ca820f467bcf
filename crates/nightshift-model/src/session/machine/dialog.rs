//! The dialogs the agent waits on (a question, a permission prompt, a trust or limit menu): how
//! long each waited and who answered it, and which showing of a dialog a button from afar answers.
//!
//! Each dialog that appears is counted (its `showing`, with when it was first seen), so a button
//! is bound to one dialog shown once: the same prompt shown again, or another in its place, has
//! buttons of its own. A dialog that takes another's place with no frame between is journalled
//! as one of its own (another `waiting_input`), the one it replaced as answered. An answered
//! dialog is journalled once, as the session leaves it, so the night's record says the need was
//! met, and by whom.

use super::*;
use crate::event::Answerer;
use crate::phone::Refusal;

/// How long after someone typed into a dialog a button from afar waits before it types into it:
/// the client may not have drawn what the keys did yet (another dialog in its place).
pub(super) const TYPED_SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

/// A dialog the agent waits on.
#[derive(Debug, Clone, PartialEq)]
struct Asked {
    dialog: Dialog,
    since: Instant,
    /// Who last typed while it was shown, and when.
    by: Option<(Answerer, Instant)>,
}

/// What the agent's screen shows, as the detector judged it.
#[derive(Debug, Clone, Default)]
pub(super) struct Screen {
    activity: Option<Activity>,
    /// The dialog on screen, while the agent waits on the user.
    dialog: Option<Dialog>,
    /// Since when the agent waits on a dialog, and who typed into it since.
    asked: Option<Asked>,
    /// Dialogs shown in this session so far (all its lives).
    shown: u32,
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
    /// The agent's activity changed, showing `dialog` or none (`why`, the detector's reason): a
    /// dialog that appears starts its wait; one that is gone was answered; another in its place
    /// was answered too, and is a dialog of its own.
    pub(super) fn screen_seen(
        &mut self,
        activity: Activity,
        dialog: Option<Dialog>,
        why: &str,
        now: Now,
        fx: &mut Vec<Effect>,
    ) {
        self.screen.activity = Some(activity);
        let Some(mut dialog) = dialog.clone().filter(|_| activity == Activity::WaitingInput) else {
            self.screen.dialog = dialog;
            self.answered(now, false, fx);
            return;
        };
        if let Some(asked) = self.screen.asked.as_ref().filter(|a| a.dialog.same(&dialog)) {
            self.screen.dialog = Some(asked.dialog.clone());
            return;
        }
        let replaced = self.screen.asked.is_some();
        self.answered(now, replaced, fx);
        self.screen.shown += 1;
        dialog.showing = self.screen.shown;
        let ms = now.wall.timestamp_millis();
        dialog.shown_at = DateTime::from_timestamp_millis(ms);
        self.screen.asked = Some(Asked { dialog: dialog.clone(), since: now.mono, by: None });
        self.screen.dialog = Some(dialog.clone());
        if replaced {
            // Still waiting: no state changes, so this one is said here, with its dialog.
            let mut kind = EventKind::state(SessionState::WaitingInput, format!("{why} (in the place of another)"));
            if let EventKind::State { dialog: shown, .. } = &mut kind {
                *shown = Some(dialog);
            }
            self.journal_state(kind, fx);
        }
    }

    /// Someone typed into the session at `at`: if a dialog is shown, they answer it.
    pub(super) fn typed_by(&mut self, by: Answerer, at: Instant) {
        if let Some(asked) = &mut self.screen.asked {
            asked.by = Some((by, at));
        }
    }

    /// Whether an answer from afar to the dialog fingerprinted `dialog` would be typed at `now`:
    /// the agent runs and waits on that very dialog, this showing of it, and nobody typed into it
    /// so lately that the screen may not show what their keys did yet.
    pub fn answerable(&self, dialog: &str, now: Instant) -> Result<(), Refusal> {
        if !self.lives.life().is_live() {
            return Err(Refusal::SessionEnded);
        }
        let shown = self.screen.dialog.as_ref().filter(|_| self.screen.activity == Some(Activity::WaitingInput));
        if shown.map(Dialog::print).as_deref() != Some(dialog) {
            return Err(Refusal::DialogChanged);
        }
        let typed = self.screen.asked.as_ref().and_then(|a| a.by).map(|(_, at)| at);
        if typed.is_some_and(|at| now.saturating_duration_since(at) < TYPED_SETTLE) {
            return Err(Refusal::JustTyped);
        }
        Ok(())
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
        if let Err(refused) = self.answerable(dialog, now.mono) {
            fx.push(Effect::Answered(Err(refused)));
            return;
        }
        self.typed_by(by, now.mono);
        self.emit(EventKind::Input { source: by.source().to_string(), chars: keys.len(), enter: false }, fx);
        fx.push(Effect::Write { after: std::time::Duration::ZERO, bytes: keys });
        self.drive(crate::respawn::Input::UserInput, now, fx);
        fx.push(Effect::Answered(Ok(())));
    }

    /// The dialog waited on, if any, is no longer shown (`replaced`: another took its place):
    /// journalled as answered.
    fn answered(&mut self, now: Now, replaced: bool, fx: &mut Vec<Effect>) {
        let Some(asked) = self.screen.asked.take() else { return };
        let waited = now.mono.saturating_duration_since(asked.since);
        self.emit(
            EventKind::DialogAnswered {
                dialog: asked.dialog.kind,
                text: asked.dialog.text.map(|t| t.chars().take(200).collect()),
                by: asked.by.map_or(Answerer::Nobody, |(by, _)| by),
                waited_secs: waited.as_secs(),
                replaced,
            },
            fx,
        );
    }

    /// A new life: whatever the last one showed is gone with it, a dialog unanswered. The count of
    /// dialogs shown goes on.
    pub(super) fn screen_cleared(&mut self) {
        self.screen = Screen { shown: self.screen.shown, ..Screen::default() };
    }
}
