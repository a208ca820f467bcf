//! A session whose work moved to the other agent at a limit (or back at the reset): the next
//! agent starts in the same session, from the handoff, taking the first's channels on, so a
//! `nightshift run` waiting on it, the window and `attach` follow without a seam.

use super::*;
use crate::session::machine::Resumed;
use crate::session::Handover;

impl Supervisor {
    /// Starts what `handover` says comes next in session `id`. When it cannot start (its client is
    /// gone, its sandbox cannot run), the work stays where it was: the first agent starts again on
    /// its conversation, paused on the limit it met, and waits for the reset as it would have.
    pub(super) fn relaunch(&self, id: SessionId, handover: Handover) {
        let Handover { relayed, carried, output_tap } = handover;
        let mut carried = Some(carried);
        let from = Resumed {
            conversation: relayed.conversation.clone(),
            prompt: Some(relayed.prompt.clone()),
            handoff: Some(relayed.handoff.clone()),
            handoff_given: relayed.given,
            spent: relayed.spent.clone(),
            ..Resumed::default()
        };
        let fresh = relayed.conversation.is_none();
        let runtime = Runtime { from: Some(from), output_tap: output_tap.clone(), fresh, ..Runtime::default() };
        // What keeps it from starting, as a phrase: a login gone since the start (its client would
        // ask for one, with nobody awake to give it), or the launch's own error.
        let to = relayed.contract.agent;
        let cannot = match crate::session::login::contract_login(&relayed.contract) {
            Err(why) => why,
            Ok(_) => {
                self.journal_agent(&id, &relayed.contract);
                let Err(error) = self.launch_with(id.clone(), &relayed.contract, runtime, &mut carried) else {
                    return;
                };
                format!("{to} could not start ({error})")
            }
        };
        tracing::warn!(session = %id, "{to} could not take the work over: {cannot}");
        let Some((mut stay, conversation, limit)) = relayed.stay else {
            return self.relay_failed(&id, carried, cannot);
        };
        let from_agent = stay.agent;
        let until = if limit.is_some() { "until its reset" } else { "for the rest of the night" };
        let reason = format!("{cannot}; the work stays with {from_agent} {until}");
        let held = crate::event::SwitchAction::Held;
        self.journal.emit(&id, EventKind::AgentSwitch { action: held, from: from_agent, to, back_at: None, reason });
        // This time it stays: a move that cannot start is not tried again at once.
        if let crate::contract::Kind::Terminal(t) = &mut stay.kind {
            t.failover = None;
            t.returns = None;
        }
        self.journal_agent(&id, &stay);
        let from = Resumed {
            conversation,
            paused_on: limit,
            handoff: Some(relayed.handoff),
            handoff_given: true,
            spent: relayed.spent,
            ..Resumed::default()
        };
        let runtime = Runtime { from: Some(from), output_tap, ..Runtime::default() };
        if let Err(e) = self.launch_with(id.clone(), &stay, runtime, &mut carried) {
            self.relay_failed(&id, carried, format!("neither {to} nor {from_agent} could start: {e}"));
        }
    }

    /// The session's agent from now on, as the journal keeps it: its contract (what a restore
    /// starts from) and the row's agent, command and account.
    fn journal_agent(&self, id: &SessionId, contract: &Contract) {
        self.journal.emit(id, EventKind::Contract { contract: Box::new(contract.clone()) });
        let Kind::Terminal(t) = &contract.kind else { return };
        let command: Vec<String> = std::iter::once(t.program.clone()).chain(t.args.iter().cloned()).collect();
        let account = contract.account.as_ref().map(|a| (a.name.clone(), a.dir.display().to_string()));
        let written = self.write_store(|s| {
            let account = account.as_ref().map(|(n, d)| (n.as_str(), d.as_str()));
            s.set_agent(id.as_str(), contract.agent, &command, account)
        });
        if let Err(e) = written {
            tracing::error!(session = %id, "could not journal the session's new agent: {e}");
        }
    }

    /// Nothing could start: the session ends, and every handle hears it.
    fn relay_failed(&self, id: &SessionId, carried: Option<crate::session::Carried>, why: String) {
        tracing::error!(session = %id, "{why}");
        self.journal.emit(id, EventKind::state(SessionState::Failed, format!("the work could not go on: {why}")));
        lock(&self.sessions).remove(id);
        lock(&self.reporters).remove(id);
        if let Some(carried) = carried {
            carried.end(SessionState::Failed);
        }
    }
}
