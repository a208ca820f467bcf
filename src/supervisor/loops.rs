//! Loops in the supervisor: started now, at a scheduled time, or brought back.

use super::*;
use crate::loops::Harness as _;

impl Supervisor {
    /// Starts scheduled loop `id` (its schedule claimed by this process) from `spec`: its
    /// journalled contract's, or one built again from what an older Nightshift journalled.
    pub fn start_rebuilt_loop(&self, id: SessionId, spec: crate::loops::LoopSpec) -> Result<SessionHandle, StartError> {
        self.adopt_scheduled(&id, spec.account.as_ref())?;
        let projects: Vec<String> = spec.projects.iter().map(|p| p.cwd.display().to_string()).collect();
        tracing::info!(session = %id, ?projects, "starting a scheduled loop");
        let what = format!("starting a loop of {} in {}, as scheduled", spec.command_line()[0], projects.join(", "));
        self.journal.emit(&id, EventKind::state(SessionState::Starting, what));
        Ok(self.open_loop(id, spec))
    }

    /// Journals the loop's contract and runs it from that.
    fn open_loop(&self, id: SessionId, spec: crate::loops::LoopSpec) -> SessionHandle {
        let mut contract = Contract::looping(spec.clone()).begun(self.journal.now());
        keep_env(&mut contract, &[]);
        self.journal.emit(&id, EventKind::Contract { contract: Box::new(contract) });
        self.run_loop(id, spec)
    }

    /// Runs a restored loop again from its contract, for what is left of its caps: its
    /// iterations, its budget and its time; its tasks file says which task it was on.
    pub(super) fn restore_loop(
        &self,
        id: SessionId,
        contract: &Contract,
        looping: &crate::contract::Looping,
    ) -> Result<SessionHandle, StartError> {
        let mut spec = looping.spec.clone();
        spec.account.clone_from(&contract.account);
        let (done, cost, tokens) = self.with_store(|s| loop_spent(s, id.as_str()))?;
        let settings = &mut spec.settings;
        settings.max_iterations = settings.max_iterations.map(|max| max.saturating_sub(done).max(1));
        settings.budget.max_cost_usd = settings.budget.max_cost_usd.map(|max| (max - cost).max(0.01));
        settings.budget.max_tokens = settings.budget.max_tokens.map(|max| max.saturating_sub(tokens).max(1));
        let ran = (self.journal.now() - contract.started).to_std().unwrap_or_default();
        settings.budget.max_wall_clock =
            settings.budget.max_wall_clock.map(|max| max.saturating_sub(ran).max(Duration::from_secs(1)));
        let projects: Vec<String> = spec.projects.iter().map(|p| p.cwd.display().to_string()).collect();
        let what = format!("restarting a loop of {} in {}", spec.command_line()[0], projects.join(", "));
        self.journal.emit(&id, EventKind::state(SessionState::Starting, what));
        Ok(self.run_loop(id, spec))
    }

    /// Records and starts a loop of headless iterations (see [`crate::loops`]).
    pub fn start_loop(&self, spec: crate::loops::LoopSpec) -> Result<SessionHandle, StartError> {
        let id = SessionId::generate();
        let row = Row::of(&Contract::looping(spec.clone()));
        self.record(&id, &row)?;
        let projects: Vec<String> = spec.projects.iter().map(|p| p.cwd.display().to_string()).collect();
        tracing::info!(session = %id, ?projects, "starting loop");
        self.journal.emit(
            &id,
            EventKind::state(
                SessionState::Starting,
                format!("starting a loop of {} in {}", row.command[0], projects.join(", ")),
            ),
        );
        Ok(self.open_loop(id, spec))
    }

    /// The actor of a recorded loop (its iterations run under its account).
    fn run_loop(&self, id: SessionId, mut spec: crate::loops::LoopSpec) -> SessionHandle {
        // The client's own switches of the night (its updater held), as for terminal sessions.
        if crate::agent::AgentKind::infer(&spec.program) == spec.agent {
            let adapter = crate::agent::Adapter::builtin(spec.agent);
            for (k, v) in adapter.session_env() {
                spec.env.retain(|(key, _)| key != k);
                spec.env.push((k.clone(), v.clone()));
            }
        }
        if let (Some(account), Some(var)) = (&spec.account, crate::agent::Account::variable(spec.agent)) {
            spec.env.retain(|(k, _)| k != var);
            spec.env.push((var.to_string(), account.dir.display().to_string()));
        }
        let (control_tx, controls) = tokio::sync::mpsc::channel(64);
        let (status, status_rx) = tokio::sync::watch::channel(crate::session::Status {
            state: SessionState::Starting,
            exit: None,
            options: crate::session::Options::default(),
        });
        let handle = SessionHandle::new(id.clone(), control_tx, status_rx, crate::store::SessionKind::Loop);
        let fence = self.loop_fence(&id, &spec);
        let actor = crate::loops::actor::LoopActor {
            id: id.clone(),
            spec,
            journal: self.journal.clone(),
            state_dir: self.journal.path().and_then(|p| p.parent()).map(std::path::Path::to_path_buf),
            status,
            fence,
        };
        lock(&self.sessions).insert(id.clone(), handle.clone());
        let sessions = Arc::clone(&self.sessions);
        tokio::spawn(async move {
            actor.run(controls).await;
            lock(&sessions).remove(&id);
        });
        handle
    }
}

/// What a loop did before its Nightshift ended: the iterations that ran to an end, their cost
/// and their tokens.
fn loop_spent(store: &Store, session: &str) -> Result<(u32, f64, u64), StoreError> {
    let mut done = (0, 0.0, 0);
    for e in store.events_named(session, &["iteration_ended"])? {
        let Ok(Event { kind: EventKind::IterationEnded { probe, cost_usd, tokens, outcome, .. }, .. }) =
            serde_json::from_str(&e.body)
        else {
            continue;
        };
        done.1 += cost_usd.unwrap_or(0.0);
        done.2 += tokens.unwrap_or(0);
        if !probe && outcome != "killed" {
            done.0 += 1;
        }
    }
    Ok(done)
}

impl Supervisor {
    /// A sandboxed loop's fence (`project`, `open`): every project's hosts, journalled, its proxy
    /// started; `None` without one (or when the proxy cannot listen: the client's own fence holds
    /// the hosts of `[sandbox] network`).
    fn loop_fence(&self, id: &SessionId, spec: &crate::loops::LoopSpec) -> Option<crate::loops::actor::LoopFence> {
        let sandbox = spec.sandbox.as_ref().filter(|s| s.fence != crate::agent::Fence::None)?;
        if spec.agent == crate::agent::AgentKind::Generic {
            return None;
        }
        let mut view: Option<crate::session::FenceView> = None;
        let mut policy = crate::proxy::Policy::default();
        for project in &spec.projects {
            let tonight = super::fence::tonight(sandbox, &project.cwd, &spec.env);
            if tonight.policy.is_open() {
                policy = crate::proxy::Policy::open();
            } else if !policy.is_open() {
                for pattern in tonight.policy.patterns() {
                    policy.add(pattern.clone());
                }
            }
            match &mut view {
                None => view = Some(tonight.view),
                Some(v) => {
                    for h in tonight.view.hosts {
                        if !v.hosts.iter().any(|k| k.host == h.host) {
                            v.hosts.push(h);
                        }
                    }
                    v.warnings.extend(tonight.view.warnings);
                }
            }
        }
        let view = view?;
        self.journal.emit(id, EventKind::Fence { fence: view.fence, hosts: view.hosts, warnings: view.warnings });
        let allowed = policy.patterns().iter().map(ToString::to_string).collect();
        let (tx, reports) = tokio::sync::mpsc::unbounded_channel();
        let proxy = match crate::proxy::Proxy::start_now(policy, tx) {
            Ok(proxy) => proxy,
            Err(e) => {
                tracing::warn!(session = %id, "the fence's proxy cannot listen ({e}); the client's own holds its hosts");
                return None;
            }
        };
        let unix_sockets = std::env::var_os("SSH_AUTH_SOCK").map(std::path::PathBuf::from).into_iter().collect();
        let proxied = crate::agent::Proxied { http_port: proxy.http_port, socks_port: proxy.socks_port, unix_sockets };
        Some(crate::loops::actor::LoopFence { proxy, reports, proxied, allowed })
    }
}
