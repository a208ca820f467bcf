//! Bringing sessions back after their Nightshift ended: every one with armed time left, or one
//! the user asks for; and ending what a killed Nightshift left running.

use super::*;

impl Supervisor {
    /// Brings back every session and loop whose Nightshift ended without ending them (a killed
    /// `run`, a crash, a logout or reboot; see [`crate::restore`]): each one whose armed automation
    /// has time left is taken over by this process — claimed first, so of two processes restoring
    /// at once only one starts it — and started again under its own id from its contract: the
    /// same conversation, its budget, account and handoff, paused on its limit when a resume was
    /// pending. An attended one is left as it is and listed, for its user to resume.
    pub fn restore_all(&self) -> Restoration {
        let mut done = Restoration::default();
        let rows = match self.with_store(|s| s.sessions()) {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!("cannot look for sessions to restore: {e}");
                return done;
            }
        };
        for row in rows.iter().filter(|r| self.orphaned(r)) {
            let replay = match self.with_store(|s| crate::restore::replay(s, row)) {
                Ok(Some(replay)) => replay,
                Ok(None) => continue,
                Err(e) => {
                    tracing::warn!(session = %row.id, "cannot read the session's journal to restore it: {e}");
                    continue;
                }
            };
            let gone = super::adopt::gone_folder(&replay.contract);
            match crate::restore::verdict(&replay, self.journal.now()) {
                // Never into a folder that no longer holds its work (deleted, a worktree removed).
                crate::restore::Verdict::Restore { .. } if gone.is_some() => {
                    let gone = gone.unwrap_or_default();
                    done.lost.push((row.clone(), format!("its folder {} is gone", gone.display())));
                }
                crate::restore::Verdict::Restore { why, paused } => match self.restore(row, replay, &why, paused) {
                    Ok(Some(handle)) => done.restored.push((handle, why)),
                    Ok(None) => {}
                    Err(e) => tracing::warn!(session = %row.id, "could not restore the session: {e}"),
                },
                crate::restore::Verdict::Lost { why } => done.lost.push((row.clone(), why)),
            }
        }
        done
    }

    /// Brings back one lost session because its user asked (`nightshift restore ID`, the window's
    /// Resume): whatever it was armed with, on its own conversation; an attended one starts with
    /// no prompt, for its user to type.
    pub fn resume_lost(&self, row: &crate::store::SessionRow) -> Result<SessionHandle, ResumeError> {
        if !self.orphaned(row) {
            return Err(ResumeError::NotLost(row.id.clone(), row.shown_state()));
        }
        let replay = self
            .with_store(|s| crate::restore::replay(s, row))?
            .ok_or_else(|| ResumeError::Unreadable(row.id.clone()))?;
        let paused = replay.pending.is_some();
        let why = "its user asked to resume it".to_string();
        self.restore(row, replay, &why, paused)?.ok_or_else(|| ResumeError::Taken(row.id.clone()))
    }

    /// Carries an ended session's conversation on in a new session, because its user asked (the
    /// window's Resume, `nightshift restore ID`): the same agent, command, folder, account and armed
    /// settings from its contract, respawn armed for its whole duration again from now, and no
    /// prompt — its user is there to type. The ended session stays as it ended.
    pub fn continue_ended(&self, row: &crate::store::SessionRow) -> Result<SessionHandle, ResumeError> {
        if !row.is_final() {
            return Err(ResumeError::NotEnded(row.id.clone(), row.shown_state()));
        }
        let replay = self
            .with_store(|s| crate::restore::replay(s, row))?
            .ok_or_else(|| ResumeError::Unreadable(row.id.clone()))?;
        let conversation = replay.conversation.clone().ok_or_else(|| ResumeError::NoConversation(row.id.clone()))?;
        let now = self.journal.now();
        let mut contract = replay.contract;
        contract.account = row.account();
        let Kind::Terminal(t) = &mut contract.kind else { return Err(ResumeError::NotTerminal(row.id.clone())) };
        t.respawn_until = t.respawn.as_ref().map(|r| now + chrono::Duration::from_std(r.duration).unwrap_or_default());
        let resumed = Conversation::Resume { id: Some(conversation.clone()), prompt: None };
        let argv = [vec![t.program.clone()], t.command(contract.agent, &resumed)].concat();
        let id = SessionId::generate();
        self.record(&id, &Row { command: argv.clone(), ..Row::of(&contract) })?;
        tracing::info!(session = %id, from = %row.id, "carrying an ended session's conversation on");
        let reason = format!("carrying on session {}'s conversation: {}", row.id, shell_words(&argv));
        self.journal.emit(&id, EventKind::state(SessionState::Starting, reason));
        self.journal.emit(&id, EventKind::Contract { contract: Box::new(contract.clone()) });
        let from = Resumed { conversation: Some(conversation), ..Resumed::default() };
        Ok(self.launch(id, &contract, Runtime { from: Some(from), ..Runtime::default() })?)
    }

    /// Whether `row` is a session no Nightshift runs any more and none ended: its owner is gone
    /// (its pid is no Nightshift now: after a reboot an old pid is often another program's), or it
    /// said it ended and kept the resume. A session this very process owns is never taken again.
    fn orphaned(&self, row: &crate::store::SessionRow) -> bool {
        if row.is_final() || row.state == SessionState::Scheduled {
            return false;
        }
        let me = i64::from(std::process::id());
        row.kept.is_some() || !row.owner_pid.is_some_and(|pid| pid == me || crate::store::nightshift_alive(pid))
    }

    /// Takes `row` over and starts it again from `replay`; `None` when another process took it
    /// first.
    fn restore(
        &self,
        row: &crate::store::SessionRow,
        replay: crate::restore::Replay,
        why: &str,
        paused: bool,
    ) -> Result<Option<SessionHandle>, StartError> {
        self.restore_as(row, replay, why, paused, None)
    }

    /// [`Self::restore`]; `adopted` (who, and why: a running process taking the session over,
    /// nobody asking) journals it as an adoption.
    pub(super) fn restore_as(
        &self,
        row: &crate::store::SessionRow,
        replay: crate::restore::Replay,
        why: &str,
        paused: bool,
        adopted: Option<(String, String)>,
    ) -> Result<Option<SessionHandle>, StartError> {
        let id = SessionId::from(row.id.clone());
        let socket = self.control_socket.as_ref().map(|p| p.display().to_string());
        let me = std::process::id();
        if !self.journal.write(|s| s.claim_session(&row.id, row.owner_pid, me, socket.as_deref()))? {
            tracing::info!(session = %id, "another Nightshift took the session over first");
            return Ok(None);
        }
        self.journal.regain(&id);
        if let Some(pid) = replay.last_pid {
            // A killed run's client may linger: never two agents on one conversation.
            if crate::pty::end_leftover(pid, crate::session::SESSION_ENV, &row.id, Duration::from_secs(3)) {
                tracing::info!(session = %id, pid, "ended what was left of the agent its Nightshift ran");
            }
        }
        let now = self.journal.now();
        let mut contract = replay.contract;
        // The account it runs under now (a switch may have moved it): its conversation lives there.
        contract.account = row.account();
        let down = (now - replay.last_seen).num_seconds().max(0) as u64;
        let state_dir = self.journal.path().and_then(|p| p.parent()).map(std::path::Path::to_path_buf);
        let handoff = state_dir
            .as_deref()
            .and_then(|dir| crate::hooks::handoff::latest(dir, &row.id).ok().flatten())
            .map(|k| (k.text, k.written));
        let Kind::Terminal(t) = &contract.kind else {
            let Kind::Loop(looping) = &contract.kind else { unreachable!() };
            self.journal.emit(&id, restored(why.to_string(), down, adopted));
            return self.restore_loop(id, &contract, looping).map(Some);
        };
        let standing = t.standing.clone();
        let kickstart = t.respawn.as_ref().filter(|_| t.respawn_until.is_some_and(|u| u > now));
        let prompt = if paused {
            None
        } else {
            crate::session::machine::continuation(
                handoff.as_ref().filter(|_| !replay.handoff_given).map(|(text, at)| (text.as_str(), *at)),
                kickstart.map(|r| r.kickstart_prompt.as_str()),
                now,
                // The restored client resumes the conversation that holds it.
                true,
            )
        };
        let paused_on = replay.pending.as_ref().filter(|_| paused).map(|p| crate::limits::LimitText {
            kind: crate::limits::LimitKind::Unspecified,
            resets_at: p.resets_at,
            line: "the resume that was pending when Nightshift stopped".into(),
        });
        if let (Some(p), Kind::Terminal(_)) = (&replay.pending, &contract.kind) {
            // The pending resume's own settings and guard, as it was armed.
            if let Kind::Terminal(t) = &mut contract.kind {
                t.auto_resume = Some(p.settings.clone());
                t.window_guard = p.guard;
            }
        }
        let reason =
            if replay.pieced { format!("{why} (read from a journal older than contracts)") } else { why.to_string() };
        tracing::info!(session = %id, down_secs = down, "restoring the session: {reason}");
        self.journal.emit(&id, restored(reason, down, adopted));
        // Said as what it is: Nightshift's, not the user's, with what stands for the night.
        let prompt = prompt.map(|text| {
            let what = crate::automated::Automated::Restart;
            let marked = crate::automated::mark(what, &text, standing.as_deref());
            self.journal.emit(&id, EventKind::AutomatedInput { what, chars: marked.chars().count() });
            marked
        });
        let resumed = Conversation::Resume { id: replay.conversation.clone(), prompt: prompt.clone() };
        let line = match &contract.kind {
            Kind::Terminal(t) => shell_words(&[vec![t.program.clone()], t.command(contract.agent, &resumed)].concat()),
            Kind::Loop(_) => shell_words(&row.command),
        };
        let what = if paused { "to resume after the limit" } else { "on its conversation" };
        self.journal.emit(&id, EventKind::state(SessionState::Starting, format!("restarting {line} {what}")));
        let paused_exact = replay.pending.as_ref().is_some_and(|p| p.exact);
        let from = Resumed {
            conversation: replay.conversation,
            prompt,
            paused_on,
            paused_exact,
            held: replay.held,
            spent: replay.spent.carried_over(),
            handoff,
            handoff_given: replay.handoff_given,
        };
        self.launch(id, &contract, Runtime { from: Some(from), ..Runtime::default() }).map(Some)
    }
}

impl Supervisor {
    /// [`end_orphan`] through this process's journal writer, so its sinks and the bus (the window,
    /// `--events`) hear the stop like any other event.
    pub fn end_orphan(&self, row: &crate::store::SessionRow, source: &str) -> Result<Option<Standing>, StoreError> {
        let clock = self.clock().clone();
        let Some((standing, said)) = self.write_store(|s| end_orphan(s, clock.as_ref(), row, source))? else {
            return Ok(None);
        };
        let session = SessionId::from(row.id.clone());
        for kind in said {
            self.emit(&session, kind);
        }
        Ok(Some(standing))
    }
}

/// Ends a session that no Nightshift process runs (lost, kept waiting for a limit's reset, or
/// scheduled and not started yet): the user's stop, so nothing will start it again, and its pending
/// resume or its schedule is cancelled. For `nightshift stop` and the window's Stop, which journal
/// the events returned through their writer; `None` when the session is not such a one.
pub fn end_orphan(
    store: &mut Store,
    clock: &dyn Clock,
    row: &crate::store::SessionRow,
    source: &str,
) -> Result<Option<(Standing, Vec<EventKind>)>, StoreError> {
    let standing = row.standing();
    if standing == Standing::Scheduled {
        let said = crate::schedule::cancel(store, clock, row, source)?;
        return Ok(Some((standing, said.into())));
    }
    if !matches!(standing, Standing::Lost | Standing::Kept) {
        return Ok(None);
    }
    if standing == Standing::Lost && row.owner_process_alive() {
        // Its Nightshift still runs (only its socket is gone): it would go on running the agent.
        let pid = row.owner_pid.unwrap_or(0);
        return Err(StoreError::OwnerUnreachable { session: row.id.clone(), pid });
    }
    let reason = match standing {
        Standing::Kept => "stopped on request while no Nightshift ran it; its pending resume is cancelled",
        _ => "stopped on request while no Nightshift ran it; nothing will start it again",
    };
    let said = vec![
        EventKind::StopRequested { source: source.to_string(), kind: StopKind::User },
        EventKind::state(SessionState::Exited, reason),
    ];
    Ok(Some((standing, said)))
}

/// What a restore journals: `restored`, or `adopted` when a running process took the session over
/// (`by`, `why`) nobody asking.
fn restored(reason: String, down_secs: u64, adopted: Option<(String, String)>) -> EventKind {
    match adopted {
        Some((by, why)) => EventKind::Adopted { by, down_secs, why, reason },
        None => EventKind::Restored { reason, down_secs },
    }
}
