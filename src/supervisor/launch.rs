//! Every start of a terminal session, from its contract: the first, a restore, a scheduled one.

use super::*;

impl Supervisor {
    /// Starts the agent of a recorded session from its contract, and its actor.
    pub(super) fn launch(
        &self,
        id: SessionId,
        contract: &Contract,
        runtime: Runtime,
    ) -> Result<SessionHandle, StartError> {
        self.launch_with(id, contract, runtime, &mut None)
    }

    /// [`Self::launch`], the actor taking `carried`'s channels once its agent has started (they
    /// stay in `carried` when it could not).
    pub(super) fn launch_with(
        &self,
        id: SessionId,
        contract: &Contract,
        runtime: Runtime,
        carried: &mut Option<crate::session::Carried>,
    ) -> Result<SessionHandle, StartError> {
        // What the machine starts from; the command line below is laid over a copy of it.
        let Some(armed) = crate::contract::Armed::new(contract.clone()) else {
            return Err(StartError::NotTerminal(id));
        };
        let agent = contract.agent;
        let mut t = armed.terminal().clone();
        let mut env = contract.env.clone();
        env.extend(runtime.env);
        env.push((crate::session::SESSION_ENV.to_string(), id.to_string()));
        // Before the exporter, which reads Codex's home from the child's environment.
        if let (Some(account), Some(var)) = (&contract.account, crate::agent::Account::variable(agent)) {
            env.retain(|(k, _)| k != var);
            env.push((var.to_string(), account.dir.display().to_string()));
        }
        let adapter = Adapter::with(agent, t.adapter.as_ref()).unwrap_or_else(|e| {
            tracing::warn!(session = %id, "the session's screen signals no longer read ({e}); using the built-in ones");
            Adapter::builtin(agent)
        });
        // The client settings of the agent's file, the sandbox, then our statusLine, hooks or
        // notify ride on every start's arguments.
        if AgentKind::infer(&t.program) == agent {
            t.args.splice(0..0, adapter.session_args().iter().cloned()).for_each(drop);
            env.extend(adapter.session_env().iter().cloned());
        }
        let state_dir = self.journal.path().and_then(|p| p.parent());
        let own = contract.account.as_ref().map(|a| a.dir.clone());
        let hidden = crate::config::hidden_from_agents(state_dir, own.as_deref());
        let fence = self.fence_up(&id, agent, &t, &env);
        let proxied = fence.as_ref().map(|f| (&f.proxied, f.allowed.as_slice()));
        attach_sandbox(agent, &mut t, &hidden, proxied);
        let guard = t.guard.then(|| Arc::new(armed_rules(&id, t.guard_file.as_ref())));
        self.attach_exporter(&id, agent, (t.hooks, guard.is_some()), &mut t, &mut env);
        let conversation = match &runtime.from {
            None => Conversation::Opening,
            Some(from) if runtime.fresh => Conversation::Fresh { prompt: from.prompt.clone() },
            Some(from) => Conversation::Resume { id: from.conversation.clone(), prompt: from.prompt.clone() },
        };
        let size = PtySize::new(t.cols, t.rows);
        let command = CommandSpec {
            program: t.program.clone(),
            args: t.command(agent, &conversation),
            cwd: t.cwd.clone(),
            env,
            size,
        };
        let spawned = match pty::spawn(&command) {
            Ok(spawned) => spawned,
            Err(error) => {
                tracing::info!(session = %id, "{error}");
                self.journal.emit(&id, EventKind::failed("failed to start", &error));
                return Err(StartError::Spawn { session: id, error });
            }
        };
        let pid = spawned.pty.pid();
        self.journal.emit(&id, EventKind::running(pid, format!("process {pid} started")));
        let start = Start {
            armed,
            zone: crate::clock::local_zone(),
            pid,
            auto_accept: adapter.auto_accepted(),
            commands: adapter.cycle_commands().clone(),
            guard,
            from: runtime.from.unwrap_or_default(),
            // From the final command line: a flag that turns the sandbox off is said as such.
            sandbox: match (&t.sandbox, crate::agent::turned_off(agent, &t.args)) {
                (Some(_), Some(flag)) => Some(format!("not sandboxed: `{flag}` turns Codex's sandbox off")),
                (Some(sandbox), None) => Some(sandbox.describe(agent)),
                (None, _) => t.unsandboxed.clone(),
            },
            fence: fence.as_ref().map(|f| f.view.clone()),
            canary: self.journal.path().and_then(|p| p.parent()).and_then(|state| {
                crate::agent::canary::Standing::of(agent, &t.program, &t.cwd, state).map(|s| s.describe())
            }),
        };
        let detect = DetectConfig { quiet: t.quiet, ..DetectConfig::default() };
        let actor = Actor {
            id: id.clone(),
            terminal: t,
            command,
            spawned,
            journal: self.journal.clone(),
            output_tap: runtime.output_tap,
            adapter,
            detect,
            start,
            state_dir: self.journal.path().and_then(|p| p.parent()).map(std::path::Path::to_path_buf),
            fence: fence.map(|f| (f.proxy, f.reports)),
            carried: carried.take(),
        };
        let (handle, task) = actor.start();
        lock(&self.sessions).insert(id.clone(), handle.clone());
        let sup = self.clone();
        tokio::spawn(async move {
            match task.await {
                // The work moved to the other agent (or back): it starts in the same session.
                Ok(Some(handover)) => sup.relaunch(id, handover),
                _ => {
                    lock(&sup.sessions).remove(&id);
                    lock(&sup.reporters).remove(&id);
                }
            }
        });
        Ok(handle)
    }

    /// For a Claude session whose command is the `claude` CLI itself: the statusLine exporter and
    /// the hooks, passed with `--settings` (never written to a file; laid over settings the user
    /// passed the same way). For a Codex session whose command is the `codex` CLI: its notify,
    /// passed with `-c notify=[…]` (never written to its config.toml; the user's own notify runs
    /// after ours). And the secret they report with. A guarded Claude session's `PreToolUse` hook
    /// fails closed (`hook --guarded`), journalling into this supervisor's journal when it cannot
    /// reach it.
    fn attach_exporter(
        &self,
        id: &SessionId,
        agent: AgentKind,
        (hooks, guarded): (bool, bool),
        t: &mut crate::contract::Terminal,
        env: &mut Vec<(String, String)>,
    ) {
        let (Some(cli_path), Some(socket)) = (&self.cli, &self.control_socket) else { return };
        let program = std::path::Path::new(&t.program).file_name().and_then(|n| n.to_str());
        let claude = agent == AgentKind::Claude && matches!(program, Some("claude" | "claude.exe"));
        // Codex has no statusLine: without its notify there is nothing to pass.
        let codex = agent == AgentKind::Codex && program == Some("codex") && hooks;
        if !claude && !codex {
            return;
        }
        let token = crate::token::Token::random();
        env.push((usage::CONTROL_ENV.to_string(), socket.display().to_string()));
        env.push((usage::TOKEN_ENV.to_string(), token.expose().to_string()));
        if codex {
            let home = crate::hooks::codex::home_for(env);
            crate::hooks::codex::attach(&mut t.args, cli_path, home.as_deref());
            lock(&self.reporters).insert(id.clone(), Reporter { token, last: None, guarded: false });
            return;
        }
        // The user's own statusLine, read now from the scopes this start's client reads (a
        // sandboxed one's from the user's settings alone); the exporter runs it and nothing else.
        let var = |key: &str| match env.iter().rev().find(|(k, _)| k == key) {
            Some((_, v)) => Some(std::path::PathBuf::from(v)),
            None => std::env::var_os(key).map(std::path::PathBuf::from),
        };
        let config_dir = var("CLAUDE_CONFIG_DIR").or_else(|| var("HOME").map(|home| home.join(".claude")));
        env.retain(|(k, _)| k != usage::USER_STATUSLINE_ENV);
        if let Some((command, _)) = usage::launch_statusline(&t.cwd, config_dir.as_deref(), t.sandbox.is_some()) {
            env.push((usage::USER_STATUSLINE_ENV.to_string(), command));
        }
        let cli = shell_words(&[cli_path.display().to_string()]);
        let mut ours = usage::settings(&format!("{cli} statusline"));
        let guarded = (hooks && guarded).then(|| {
            let journal =
                self.journal.path().map(|p| format!(" --journal {}", shell_words(&[p.display().to_string()])));
            format!("{cli} hook --guarded{}", journal.unwrap_or_default())
        });
        if hooks {
            ours["hooks"] = crate::hooks::settings(&format!("{cli} hook"), t.sandbox.is_some(), guarded.as_deref());
        }
        crate::hooks::lay_settings(&mut t.args, &t.cwd, &ours);
        lock(&self.reporters).insert(id.clone(), Reporter { token, last: None, guarded: guarded.is_some() });
    }
}

/// The agent's own sandbox on its command line: Claude's through `--settings`, Codex's flags
/// (build only arms one for a command that is the agent's CLI itself).
fn attach_sandbox(
    agent: AgentKind,
    t: &mut crate::contract::Terminal,
    hidden: &[std::path::PathBuf],
    proxied: Option<(&crate::agent::Proxied, &[String])>,
) {
    let Some(sandbox) = t.sandbox.clone() else { return };
    match agent {
        AgentKind::Claude => {
            let settings = match proxied {
                Some((proxy, allowed)) => sandbox.claude_settings_fenced(hidden, proxy, allowed),
                None => sandbox.claude_settings_hiding(hidden),
            };
            crate::hooks::lay_settings(&mut t.args, &t.cwd, &settings);
        }
        AgentKind::Codex => {
            let ours = sandbox.codex_args(&t.args, false, proxied.map(|(p, _)| p));
            t.args.splice(0..0, ours).for_each(drop);
        }
        AgentKind::Generic => {}
    }
}

/// A start's fence, up: the proxy its sandbox goes through, what it reports, what it lets
/// through and why.
struct FenceUp {
    proxy: crate::proxy::Proxy,
    reports: tokio::sync::mpsc::UnboundedReceiver<crate::proxy::Report>,
    proxied: crate::agent::Proxied,
    allowed: Vec<String>,
    view: crate::session::FenceView,
}

impl Supervisor {
    /// Tonight's fence for a sandboxed start that has one (`project`, `open`): read from the
    /// project now, journalled, its proxy started (Codex's commands are pointed at it by their
    /// environment: [`crate::agent::Sandbox::codex_args`]). Without a proxy (it could not listen) the client's own fence holds the
    /// same hosts, and the journal says so.
    fn fence_up(
        &self,
        id: &SessionId,
        agent: AgentKind,
        t: &crate::contract::Terminal,
        env: &[(String, String)],
    ) -> Option<FenceUp> {
        let sandbox = t.sandbox.as_ref().filter(|s| s.fence != crate::agent::Fence::None)?;
        if agent == AgentKind::Generic {
            return None;
        }
        let tonight = super::fence::tonight(sandbox, &t.cwd, env);
        let view = tonight.view.clone();
        self.journal.emit(
            id,
            EventKind::Fence { fence: view.fence, hosts: view.hosts.clone(), warnings: view.warnings.clone() },
        );
        let allowed = tonight.allowed();
        let (tx, reports) = tokio::sync::mpsc::unbounded_channel();
        let proxy = match crate::proxy::Proxy::start_now(tonight.policy, tx) {
            Ok(proxy) => proxy,
            Err(e) => {
                tracing::warn!(session = %id, "the fence's proxy cannot listen ({e}); the client's own holds its hosts");
                return None;
            }
        };
        let var = |key: &str| {
            env.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.clone()).or_else(|| std::env::var(key).ok())
        };
        let unix_sockets = var("SSH_AUTH_SOCK").map(std::path::PathBuf::from).into_iter().collect();
        let proxied = crate::agent::Proxied { http_port: proxy.http_port, socks_port: proxy.socks_port, unix_sockets };
        Some(FenceUp { proxy, reports, proxied, allowed, view })
    }
}

/// The guard's rules a session was armed with: the built-in ones with the user's file of its
/// contract laid over them. A file that no longer reads (a newer Nightshift's stricter reading)
/// leaves the built-in rules, said in the log.
fn armed_rules(id: &SessionId, file: Option<&crate::agent::Overrides>) -> crate::hooks::guard::Rules {
    let Some(file) = file else { return crate::hooks::guard::Rules::builtin() };
    crate::hooks::guard::Rules::with_user(&file.file, &file.text).unwrap_or_else(|e| {
        tracing::warn!(session = %id, "the guard file it was armed with no longer reads ({e}); the built-in rules judge");
        crate::hooks::guard::Rules::builtin()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::guard::Facts;

    #[test]
    fn a_guarded_start_judges_by_the_file_it_was_armed_with() {
        let id = SessionId::from("0123abcd".to_string());
        let facts = Facts { cwd: "/work/p".into(), ..Facts::default() };
        let deploy = crate::agent::Overrides {
            file: "/home/u/.config/nightshift/guard.toml".into(),
            text: "[[rule]]\nkind = \"deploy\"\nwhat = \"a deploy\"\ncommand = \"make deploy\"\nwhen = \"always\"\n"
                .into(),
        };
        let kind = |rules: &crate::hooks::guard::Rules| rules.check("make deploy", &facts).map(|d| d.kind);
        assert_eq!(kind(&armed_rules(&id, Some(&deploy))).as_deref(), Some("deploy"), "the user's rule judges");
        assert_eq!(kind(&armed_rules(&id, None)), None, "no file: the built-in rules");
        let unread = crate::agent::Overrides { text: "[[rule]]\nkind = 3\n".into(), ..deploy };
        assert_eq!(kind(&armed_rules(&id, Some(&unread))), None, "a file that no longer reads: the built-in rules");
        assert!(armed_rules(&id, Some(&unread)).check("git push --force origin main", &facts).is_some());
    }
}
