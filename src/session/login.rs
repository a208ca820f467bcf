//! Whether a client the session would start has a login: a token in its environment, or the
//! credentials file in its account's folder (or the client's own). A client with none would ask
//! for one at its first screen, with nobody awake to give it.

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
        .map(|r| super::machine::Meter { account: r.account, sample: r.sample, logged_out: None });
    super::machine::OtherAgent { login: contract_login(contract).map(|_| ()), meter }
}

/// The folder `kind`'s client keeps its login in, as a child started with `env` (over this
/// process's environment) sees it: `CODEX_HOME` or `~/.codex`, `CLAUDE_CONFIG_DIR` or `~/.claude`.
fn config_dir(kind: crate::agent::AgentKind, env: &[(String, String)]) -> Option<std::path::PathBuf> {
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
