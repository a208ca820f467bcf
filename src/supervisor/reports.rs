//! What a session's client reports on its own: its hooks, Codex's notify, the statusLine's usage,
//! each proved by the session's token.

use super::*;

impl Supervisor {
    /// Checks that `token` is the one `session`'s client was given.
    fn check_token(&self, session: &str, token: &str) -> Result<(), UsageError> {
        let reporters = lock(&self.reporters);
        let reporter = reporters
            .get(&SessionId::from(session.to_string()))
            .ok_or_else(|| UsageError::UnknownSession(session.to_string()))?;
        if reporter.token.expose() != token {
            return Err(UsageError::BadToken(session.to_string()));
        }
        Ok(())
    }

    /// Takes a hook of `session`'s client: hands it to the session and returns its answer. A session
    /// that cannot answer within the hook's time gets the client going on (a pass), unless its guard
    /// is armed and the hook is a Bash command's: that is refused, and `guard_unreachable` journalled.
    pub async fn record_hook(
        &self,
        session: &str,
        token: &str,
        payload: &serde_json::Value,
    ) -> Result<crate::hooks::Answer, UsageError> {
        use crate::hooks::{Answer, Event};
        self.check_token(session, token)?;
        let hook = crate::hooks::Hook::from_payload(payload)?;
        let guarded = lock(&self.reporters).get(&SessionId::from(session.to_string())).is_some_and(|r| r.guarded);
        let command = match &hook.event {
            Event::PreToolUse { tool, input, .. } if guarded && tool == "Bash" => {
                Some(input["command"].as_str().unwrap_or_default().chars().take(500).collect::<String>())
            }
            _ => None,
        };
        let Some(handle) = self.session(session) else {
            return Ok(match command {
                Some(command) => self.guard_unreachable(session, command, "the session is not running here"),
                None => Answer::Pass,
            });
        };
        let wait = if command.is_some() { GUARD_ANSWER } else { HOOK_ANSWER };
        Ok(match tokio::time::timeout(wait, handle.hook(hook)).await {
            Ok(Ok(answer)) => answer,
            _ => match command {
                Some(command) => {
                    let why = format!("the session did not answer within {} s", wait.as_secs());
                    self.guard_unreachable(session, command, &why)
                }
                None => {
                    tracing::warn!(session, "the session did not answer its client's hook in time; it goes on");
                    Answer::Pass
                }
            },
        })
    }

    /// The guard of `session` could not judge `command`: it is refused, and that is journalled
    /// (off the async workers: the journal may be what held the session up).
    fn guard_unreachable(&self, session: &str, command: String, why: &str) -> crate::hooks::Answer {
        tracing::warn!(session, "the guard could not judge a command ({why}): refused");
        let (journal, id, why) = (self.journal.clone(), SessionId::from(session.to_string()), why.to_string());
        let reason = crate::hooks::guard::unreachable_reason(&why);
        tokio::task::spawn_blocking(move || journal.emit(&id, EventKind::GuardUnreachable { command, why }));
        crate::hooks::Answer::Deny { reason }
    }

    /// Takes Codex's notify of `session`: a completed turn of its conversation goes to the session
    /// as the client's word. `rollout` says whether Codex keeps a rollout file of the payload's
    /// thread; without one the thread is not the conversation (it names a new thread) and nothing
    /// is said. `usage`, the rollout's latest figures, is journalled like a statusLine's sample
    /// first: the turn's end then finds it.
    pub async fn record_notify(
        &self,
        session: &str,
        token: &str,
        payload: &serde_json::Value,
        rollout: bool,
        usage: Option<Sample>,
    ) -> Result<(), UsageError> {
        self.check_token(session, token)?;
        if let Some(sample) = usage.filter(|_| rollout) {
            self.record_sample(session, sample);
        }
        let notification = crate::hooks::codex::Notification::from_payload(payload)?;
        if !notification.turn_complete() {
            tracing::debug!(session, kind = %notification.kind, "a Codex notification of a kind Nightshift does not read");
            return Ok(());
        }
        if !rollout {
            tracing::debug!(session, thread = ?notification.thread, "Codex notified for a thread it keeps no rollout of (a thread's title): not the conversation");
            return Ok(());
        }
        let Some(handle) = self.session(session) else { return Ok(()) };
        if tokio::time::timeout(HOOK_ANSWER, handle.hook(notification.into_hook())).await.is_err() {
            tracing::warn!(session, "the session did not take Codex's notify in time");
        }
        Ok(())
    }

    /// Takes a statusLine report of `session`; journals and announces the sample when it changed.
    pub fn record_status(&self, session: &str, token: &str, status: &[u8]) -> Result<Option<Sample>, UsageError> {
        let id = SessionId::from(session.to_string());
        let sample = {
            let reporters = lock(&self.reporters);
            let reporter = reporters.get(&id).ok_or_else(|| UsageError::UnknownSession(session.to_string()))?;
            if reporter.token.expose() != token {
                return Err(UsageError::BadToken(session.to_string()));
            }
            let sample = Sample::from_status(status)?;
            if reporter.last.as_ref() == Some(&sample) {
                return Ok(None);
            }
            sample
        };
        self.record_sample(session, sample.clone());
        Ok(Some(sample))
    }

    /// Journals and announces a sample of `session` (its token checked) when it changed.
    fn record_sample(&self, session: &str, sample: Sample) {
        let id = SessionId::from(session.to_string());
        if lock(&self.reporters).get(&id).is_some_and(|r| r.last.as_ref() == Some(&sample)) {
            return;
        }
        self.journal.usage(&id, &sample);
        if let Some(r) = lock(&self.reporters).get_mut(&id) {
            r.last = Some(sample.clone());
        }
        if let Some(handle) = self.session(session) {
            handle.usage(sample);
        }
    }
}
