//! What the edge finds before a move to another account or agent: whether the client that would
//! start has a login (a token in its environment, or the credentials file in its account's folder,
//! or the client's own; one with none would ask for it at its first screen, with nobody awake to
//! give it), and what the journal last read of the windows there.

/// Whether the client `contract` starts would have a login ([`crate::agent::login`]): its account's folder, or
/// the client's own. `Err`: why not, and how to log in.
pub fn contract_login(contract: &crate::contract::Contract) -> Result<String, String> {
    let dir = match &contract.account {
        Some(account) => Some(account.dir.clone()),
        None => config_dir(contract.agent, &contract.env),
    };
    let Some(dir) = dir else { return Err(format!("{} has no folder to log in to (HOME is not set)", contract.agent)) };
    crate::agent::login(contract.agent, &dir, &contract.env).map_err(|why| {
        format!("{} is logged out ({why}); log in with {}", contract.agent, contract.agent.login_hint(&dir))
    })
}

/// The failover agent `contract` starts, as the edge finds it before a move: its login, and the
/// journal's latest reading of its account's windows (a journal that cannot be read knows none).
pub(super) fn other_agent(
    contract: &crate::contract::Contract,
    journal: &crate::journal::Journal,
) -> super::machine::OtherAgent {
    let account = contract.account.as_ref().map(|a| a.name.clone());
    let meter = journal
        .read(|s| s.latest_limits_by_account(contract.agent))
        .ok()
        .and_then(|rows| rows.into_iter().find(|r| r.account == account))
        .map(read);
    super::machine::OtherAgent { login: contract_login(contract).map(|_| ()), meter }
}

/// What the journal knows of each account's windows, for a move between `agent`'s accounts, with
/// each of `accounts` (the ones it could move to) that has no login first, as such (its client
/// would ask for one). What could not be read is said to the machine as such, never as no meters.
pub(super) fn meters(
    agent: crate::agent::AgentKind,
    accounts: &[crate::agent::Account],
    env: &[(String, String)],
    journal: &crate::journal::Journal,
) -> Result<Vec<super::machine::Meter>, String> {
    let out = accounts.iter().filter_map(|a| {
        let why = crate::agent::login(agent, &a.dir, env).err()?;
        let sample = crate::usage::Sample::default();
        Some(super::machine::Meter { account: Some(a.name.clone()), sample, logged_out: Some(why) })
    });
    let rows = journal.read(|s| s.latest_limits_by_account(agent)).map_err(|e| e.to_string())?;
    Ok(out.chain(rows.into_iter().map(read)).collect())
}

/// An account's windows as the journal last read them.
fn read(row: crate::store::UsageRow) -> super::machine::Meter {
    super::machine::Meter { account: row.account, sample: row.sample, logged_out: None }
}

/// The folder `kind`'s client keeps its login in, as a child started with `env` (over this
/// process's environment) sees it: `CODEX_HOME` or `~/.codex`, `CLAUDE_CONFIG_DIR` or `~/.claude`.
pub(crate) fn config_dir(kind: crate::agent::AgentKind, env: &[(String, String)]) -> Option<std::path::PathBuf> {
    let var = |key: &str| match env.iter().rfind(|(k, _)| k == key) {
        Some((_, v)) => Some(std::ffi::OsString::from(v)),
        None => std::env::var_os(key),
    };
    match kind {
        crate::agent::AgentKind::Codex => crate::hooks::codex::home_for(env),
        crate::agent::AgentKind::Claude | crate::agent::AgentKind::Generic => var("CLAUDE_CONFIG_DIR")
            .filter(|d| !d.is_empty())
            .map(std::path::PathBuf::from)
            .or_else(|| var("HOME").map(|h| std::path::PathBuf::from(h).join(".claude"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{Account, AgentKind};

    #[test]
    fn a_contracts_login_is_looked_for_in_its_accounts_folder() {
        let dir = tempfile::tempdir().unwrap();
        let mut armed = crate::contract::Contract::session(
            AgentKind::Codex,
            crate::contract::Terminal::new(AgentKind::Codex, "codex".into(), &[], dir.path().into(), (80, 24)),
        );
        *armed.account_mut() = Some(Account { name: "night".into(), dir: dir.path().into() });
        let mut contract = armed.into_contract();
        // Empty tokens in its own environment: only the folder counts.
        contract.env = AgentKind::Codex.token_vars().iter().map(|k| ((*k).to_string(), String::new())).collect();
        let out = contract_login(&contract).unwrap_err();
        assert!(out.starts_with("codex is logged out (no credentials in "), "{out}");
        assert!(out.contains(&format!("`CODEX_HOME={} codex login`", dir.path().display())), "{out}");
        std::fs::write(dir.path().join("auth.json"), "{}").unwrap();
        assert!(contract_login(&contract).is_ok());
    }
}
