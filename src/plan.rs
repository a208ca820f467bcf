//! The night's plan: the forecast and the waits are the model's (re-exported here); reading them
//! from the journal and the canary's results is here.

pub use nightshift_model::plan::*;

use chrono::{DateTime, Utc};

use crate::usage::Sample;

/// Each installed client as the canary last judged the very file a session would run: when it
/// passed, that it failed, or that it has not run on it.
pub fn clients(state_dir: &std::path::Path) -> Vec<String> {
    use crate::agent::canary::Standing;
    use crate::agent::AgentKind;
    [AgentKind::Claude, AgentKind::Codex]
        .into_iter()
        .filter_map(|agent| {
            Some(match Standing::installed(agent, state_dir)? {
                Standing::Passed { version, at } => format!(
                    "{agent} {version}, its canary passed {}",
                    at.with_timezone(&chrono::Local).format("%a %H:%M")
                ),
                Standing::Failed { version, failed, .. } => {
                    format!("{agent} {version}, its canary FAILED ({})", failed.join(", "))
                }
                Standing::Unchecked { .. } => {
                    format!("{agent}, not checked by the canary (`nightshift doctor --canary`)")
                }
            })
        })
        .collect()
}

/// The plan from the journal: its usage readings of the lookback and the sessions not ended.
pub fn from_store(
    store: &crate::store::Store,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Result<Plan, crate::store::StoreError> {
    use crate::agent::AgentKind;
    let sessions = store.sessions()?;
    // What a parked hour costs: the cycles and tasks begun an hour over the lookback.
    let since = now - LOOKBACK;
    let query = crate::store::EventQuery { since: Some(since), ..Default::default() };
    let begun = store
        .events(&query)?
        .iter()
        .filter(|e| e.event == "task_done" || (e.event == "respawn" && e.body.contains("\"action\":\"cycle_started\"")))
        .count();
    let work_per_hour = (begun > 0).then(|| begun as f64 / (LOOKBACK.num_minutes() as f64 / 60.0));
    let of = |agent: AgentKind| -> Result<Plan, crate::store::StoreError> {
        let rows = store.usage(Some(agent), None, Some(now - LOOKBACK))?;
        let samples: Vec<(String, DateTime<Utc>, Sample)> =
            rows.into_iter().filter_map(|r| Some((r.session, r.ts.parse::<DateTime<Utc>>().ok()?, r.sample))).collect();
        let codex = |s: &crate::store::SessionRow| s.agent == AgentKind::Codex.as_str();
        let armed = sessions.iter().filter(|s| !s.is_final() && codex(s) == (agent == AgentKind::Codex)).count();
        Ok(Plan { agent, work_per_hour, ..forecast(&samples, armed, now, until) })
    };
    // Each client's plan apart: a limit of one never stops the other. Codex's alone when Claude's
    // has nothing in it.
    let (claude, codex) = (of(AgentKind::Claude)?, of(AgentKind::Codex)?);
    let active = |p: &Plan| p.armed > 0 || p.samples > 0;
    let plan = match (active(&claude), active(&codex)) {
        (false, true) => codex,
        (_, true) => Plan { codex: Some(Box::new(codex)), ..claude },
        _ => claude,
    };
    // What the armed sessions wait on now, and the sleep allowed through it, from their journals.
    let (mut waiting, mut sleeps, mut moves) = (Vec::new(), Vec::new(), Vec::new());
    for s in sessions.iter().filter(|s| !s.is_final()) {
        let events: Vec<crate::event::Event> = store
            .events_named(&s.id, waits::EVENTS)?
            .iter()
            .filter_map(|e| serde_json::from_str(&e.body).ok())
            .collect();
        let contract = store.contract(&s.id)?;
        if let Some(m) = contract.as_ref().and_then(|c| moves_at_the_limit(&s.id, c)) {
            moves.push(m);
        }
        let respawn = contract.as_ref().and_then(|c| c.terminal()).and_then(|t| t.respawn.as_ref());
        let ladder = respawn.map(|r| r.breaker_retry.clone()).unwrap_or_default();
        let unowned = matches!(s.standing(), crate::store::Standing::Lost | crate::store::Standing::Kept);
        waiting.extend(waits::of_session(&s.id, &s.agent, &events, &ladder, unowned));
        sleeps.extend(events.into_iter().filter(|e| matches!(e.kind, crate::event::EventKind::Sleep { .. })));
    }
    waiting.sort_by_key(|w| (w.until.is_none(), w.until, w.session.clone()));
    let asleep = waits::asleep(&sleeps, now);
    Ok(plan.with_waiting(waiting, asleep).with_moves(moves))
}

/// Where session `id` goes at a limit instead of waiting it out, when it is armed to move.
fn moves_at_the_limit(id: &str, contract: &crate::contract::Contract) -> Option<Move> {
    let t = contract.terminal()?;
    let agent = contract.agent;
    let to = match (&t.failover, &t.switch) {
        (Some(f), Some(s)) if s.at_limit => format!(
            "another {agent} account, or {}{}",
            f.contract.agent,
            if f.back { " (back at the reset)" } else { "" }
        ),
        (Some(f), _) => format!("{}{}", f.contract.agent, if f.back { ", back at the reset" } else { "" }),
        (None, Some(s)) if s.at_limit => format!("another {agent} account"),
        _ => return None,
    };
    Some(Move { session: id.to_string(), agent, to, at: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{Account, AgentKind};
    use crate::contract::{Contract, Failover, SwitchSettings, Terminal};

    fn claude(change: impl FnOnce(&mut Terminal)) -> Contract {
        let mut t = Terminal::new(AgentKind::Claude, "claude".into(), &[], "/p".into(), (80, 24));
        change(&mut t);
        Contract::session(AgentKind::Claude, t).into_contract()
    }

    #[test]
    fn the_plan_names_where_each_session_armed_to_move_goes() {
        let switch = |at_limit| SwitchSettings {
            threshold: 90.0,
            accounts: vec![Account { name: "b".into(), dir: "/b".into() }],
            ahead: true,
            at_limit,
        };
        let codex = Contract::session(
            AgentKind::Codex,
            Terminal::new(AgentKind::Codex, "codex".into(), &[], "/p".into(), (80, 24)),
        )
        .into_contract();
        let failover = Failover { contract: Box::new(codex), back: true };
        let to = |c: &Contract| moves_at_the_limit("s", c).map(|m| m.to);
        assert_eq!(to(&claude(|_| {})), None, "it waits");
        assert_eq!(to(&claude(|t| t.switch = Some(switch(false)))), None, "it moves ahead of the limit only");
        assert_eq!(to(&claude(|t| t.switch = Some(switch(true)))).as_deref(), Some("another claude account"));
        let over = claude(|t| t.failover = Some(failover.clone()));
        assert_eq!(to(&over).as_deref(), Some("codex, back at the reset"));
        let both = claude(|t| {
            t.switch = Some(switch(true));
            t.failover = Some(failover.clone());
        });
        assert_eq!(to(&both).as_deref(), Some("another claude account, or codex (back at the reset)"));
    }
}
