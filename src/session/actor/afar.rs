//! An answer from afar (a phone's button), carried out: checked against the screen as it is now,
//! its token's nonce claimed only then, and typed in the same step of the session.
//!
//! Output not judged yet is judged first, so a dialog that took another's place a moment ago is
//! the one checked; a screen in the middle of a synchronized redraw is not judged, and the answer
//! is refused. The nonce is claimed in the journal after every check passed and before the keys
//! are typed: a press refused for any reason burns nothing, and a token works once.

use super::Executor;
use crate::agent::Reply;
use crate::event::Answerer;
use crate::phone::Refusal;
use crate::session::machine::Input;

impl Executor {
    /// Types `reply` into the dialog fingerprinted `dialog`, as `by`, if it is the one on the
    /// screen now; `nonce` (a phone token's) is claimed first.
    pub(super) fn answer_from_afar(
        &mut self,
        dialog: String,
        reply: Reply,
        by: Answerer,
        nonce: Option<String>,
    ) -> Result<(), Refusal> {
        let keys = self.adapter.keys(reply).ok_or(Refusal::Unanswerable)?;
        let now = crate::clock::mono_now();
        if self.process.as_ref().is_some_and(|p| p.exited.is_none()) {
            if !self.watcher.judge_now(now, &self.screen) {
                return Err(Refusal::Redrawing);
            }
            self.wake();
        }
        self.machine.answerable(&dialog, self.now().mono)?;
        if let Some(nonce) = nonce {
            let at = self.journal.now();
            let claim = format!("nonce:{nonce}");
            match self.journal.write(|s| s.claim_phone(&claim, std::process::id(), at)) {
                Ok(true) => {}
                Ok(false) => return Err(Refusal::Replayed),
                Err(e) => {
                    tracing::warn!(session = %self.id, "the journal cannot claim a phone action: {e}");
                    return Err(Refusal::Unrecorded);
                }
            }
        }
        self.step(Input::Answer { dialog, keys, by });
        self.answered.take().unwrap_or(Err(Refusal::SessionEnded))
    }
}
