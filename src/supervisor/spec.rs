//! What a session is started from: the contract the user armed (built by [`super::build`], or
//! read back from a schedule), and what of one start is not kept in it.

use super::*;
use crate::contract::{Armed, Terminal};
use crate::loops::Harness as _;

/// What the journal's row of a session says, made from its contract: for a start now and for a
/// schedule alike.
pub(super) struct Row {
    pub(super) kind: crate::store::SessionKind,
    pub(super) command: Vec<String>,
    pub(super) cwd: String,
    pub(super) agent: AgentKind,
    pub(super) preset: Option<String>,
    pub(super) account: Option<crate::agent::Account>,
}

impl Row {
    pub(super) fn of(contract: &Contract) -> Self {
        let (kind, command, preset) = match &contract.kind {
            Kind::Terminal(t) => (
                crate::store::SessionKind::Terminal,
                [vec![t.program.clone()], t.command(contract.agent, &Conversation::Opening)].concat(),
                t.preset.clone(),
            ),
            Kind::Loop(l) => (crate::store::SessionKind::Loop, l.spec.command_line(), None),
        };
        Self {
            kind,
            command,
            cwd: contract.cwd().display().to_string(),
            agent: contract.agent,
            preset,
            account: contract.account.clone(),
        }
    }
}

/// What to start: a terminal session's contract, and what of this start is not kept in it.
#[derive(Debug)]
pub struct SessionSpec {
    pub contract: Armed,
    /// The first start's own environment for the command (what of it names places is kept in the
    /// contract too).
    pub env: Vec<(String, String)>,
    /// Receives a copy of every byte the child writes (the CLI's passthrough).
    pub output_tap: Option<mpsc::UnboundedSender<Vec<u8>>>,
}

impl SessionSpec {
    /// `command`, its agent inferred from its program, with nothing armed.
    pub fn new(command: CommandSpec) -> Self {
        Self::of(AgentKind::infer(&command.program), command)
    }

    /// `command` as `agent`'s, with nothing armed.
    pub fn of(agent: AgentKind, command: CommandSpec) -> Self {
        let CommandSpec { program, args, cwd, env, size } = command;
        let terminal = Terminal::new(agent, program, &args, cwd, (size.cols, size.rows));
        Self { contract: Contract::session(agent, terminal), env, output_tap: None }
    }

    /// What it arms, to change.
    pub fn terminal_mut(&mut self) -> &mut Terminal {
        self.contract.terminal_mut()
    }
}

impl From<Armed> for SessionSpec {
    fn from(contract: Armed) -> Self {
        Self { contract, env: Vec::new(), output_tap: None }
    }
}

/// `contract`'s environment, when no start has kept one yet: the variables of
/// [`crate::contract::KEPT_ENV`] this process has, with `own`'s (the command's own environment)
/// over them. Nothing else of it is journalled.
pub(super) fn keep_env(contract: &mut Contract, own: &[(String, String)]) {
    if !contract.env.is_empty() {
        return;
    }
    let mut env = crate::contract::kept_env();
    for (k, v) in own.iter().filter(|(k, _)| crate::contract::KEPT_ENV.contains(&k.as_str())) {
        env.retain(|(key, _)| key != k);
        env.push((k.clone(), v.clone()));
    }
    contract.env = env;
}
