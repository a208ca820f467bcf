//! The New session page: a terminal session or a loop, now or at a time, checked by the core.

use super::*;
use nightshift::contract::Armed;

/// The New session form.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NewSession {
    /// A shell-like line: `claude --model opus`, `bash -c 'echo hi'`.
    pub command: String,
    pub cwd: String,
    pub agent: Option<String>,
    pub preset: Option<String>,
    #[serde(default)]
    pub auto_resume: bool,
    /// An account of `config.toml`'s [accounts]; the client's own default when empty.
    #[serde(default)]
    pub account: Option<String>,
    /// Move to the account with the most headroom before this one's limit.
    #[serde(default)]
    pub switch_accounts: bool,
    /// What it does at a usage limit (`wait`, `switch`); the preset's when empty.
    #[serde(default)]
    pub at_limit: Option<nightshift::limits::AtLimit>,
    /// The other agent the work moves to at a limit (`codex --model …`); none when empty.
    #[serde(default)]
    pub failover_to: Option<String>,
    /// The user's standing instructions for the night; the preset's when empty.
    #[serde(default)]
    pub standing: Option<String>,
    /// Work in a worktree of its own (a branch `nightshift/…` outside the user's checkout).
    #[serde(default)]
    pub worktree: bool,
    /// When to start: now, or later.
    #[serde(default)]
    pub start: StartAt,
}

/// The New session form's "Start": now, at a local time (`23:30`), or when the 5-hour window
/// resets.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StartAt {
    pub at: Option<String>,
    pub after_reset: bool,
}

/// A form whose start was scheduled, as a journal older than scheduled contracts keeps it for
/// the app to start it by.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Form {
    Session(NewSession),
    Loop(NewLoop),
}

/// When the form's session is due, if later than now; `account` is the one it runs under.
fn due(
    state: &AppState,
    start: &StartAt,
    account: Option<&str>,
    agent: AgentKind,
) -> Result<Option<schedule::Due>, UiError> {
    let now = state.supervisor.clock().now();
    let bad = |e: schedule::ScheduleError| UiError::new(Code::BadStart, e.to_string());
    if let Some(at) = start.at.as_deref().map(str::trim) {
        if at.is_empty() {
            return Err(UiError::new(Code::BadStart, "choose the time to start at, or Start: Now"));
        }
        return Ok(Some(schedule::at(at.parse().map_err(bad)?, now)));
    }
    if !start.after_reset {
        return Ok(None);
    }
    let rows = state.supervisor.with_store(|s| s.latest_limits_by_account(agent))?;
    let latest = rows.iter().find(|r| r.account.as_deref() == account).map(|r| &r.sample);
    Ok(Some(schedule::after_reset(latest, account.unwrap_or("the default account"), now).map_err(bad)?))
}

/// Records `contract` to start at `due`; whichever Nightshift process runs then starts it (see
/// `crate::schedule`).
fn schedule(
    state: &AppState,
    contract: nightshift::contract::Contract,
    due: &schedule::Due,
) -> Result<Started, UiError> {
    let id = state.supervisor.schedule(contract, due)?;
    Ok(Started { id: id.to_string() })
}

#[derive(Debug, Serialize)]
pub struct Started {
    pub id: String,
}

/// What the form describes, checked: every problem named with its fix.
pub fn session_contract(state: &AppState, request: NewSession) -> Result<Armed, UiError> {
    use nightshift::supervisor::build::{build, AccountChoice, Request};
    let cwd = request.cwd.trim();
    if cwd.is_empty() {
        return Err(UiError::new(Code::BadCwd, "choose the working directory the agent runs in"));
    }
    let cwd = PathBuf::from(expand_home(cwd, std::env::var("HOME").ok().as_deref()));
    let argv = shlex::split(request.command.trim())
        .ok_or_else(|| UiError::new(Code::BadCommand, "the command has an unclosed quote; close it and try again"))?;
    let mut built = Request::new(cwd, argv);
    built.agent = match request.agent.as_deref().filter(|a| !a.is_empty()) {
        Some(name) => Some(name.parse::<AgentKind>().map_err(|e| UiError::new(Code::BadAgent, e.to_string()))?),
        None => None,
    };
    built.preset = request.preset.filter(|p| !p.is_empty());
    built.auto_resume = request.auto_resume.then(resume::Settings::default);
    built.account = match request.account.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
        Some(name) => AccountChoice::Named(name.to_string()),
        None => AccountChoice::Default,
    };
    built.switch_accounts = request.switch_accounts.then_some(None);
    built.standing = request.standing.filter(|s| !s.trim().is_empty());
    built.at_limit = request.at_limit;
    if let Some(line) = request.failover_to.as_deref().map(str::trim).filter(|l| !l.is_empty()) {
        let command = shlex::split(line).filter(|argv| !argv.is_empty()).ok_or_else(|| {
            UiError::new(Code::BadCommand, "the other agent's command has an unclosed quote; close it and try again")
        })?;
        built.at_limit = Some(nightshift::limits::AtLimit::Failover);
        built.failover =
            Some(nightshift::supervisor::build::FailoverAsk { command, account: AccountChoice::Default, back: true });
    }
    Ok(build(&state.paths, built, |_| Ok(()))?)
}

/// The account names of `config.toml`, for the New session form's picker.
#[tauri::command]
pub fn accounts(state: State<'_, AppState>) -> Result<Vec<String>, UiError> {
    Ok(Config::load(state.paths.config_dir.as_deref())?.accounts.into_keys().collect())
}

/// `~/x` as the user means it.
pub(super) fn expand_home(path: &str, home: Option<&str>) -> String {
    match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => format!("{home}/{rest}"),
        (None, Some(home)) if path == "~" => home.to_string(),
        _ => path.to_string(),
    }
}

#[tauri::command]
pub async fn new_session(app: AppHandle, state: State<'_, AppState>, request: NewSession) -> Result<Started, UiError> {
    let (start, worktree) = (request.start.clone(), request.worktree);
    let contract = session_contract(&state, request)?;
    let (agent, account) = (contract.contract().agent, contract.contract().account.clone());
    let due = due(&state, &start, account.as_ref().map(|a| a.name.as_str()), agent)?;
    let contract = in_worktree(&state, contract, worktree)?;
    if let Some(due) = due {
        return schedule(&state, contract.into_contract(), &due);
    }
    let handle = state
        .supervisor
        .start(SessionSpec::from(contract))
        .map_err(|e| UiError::new(Code::StartFailed, e.to_string()))?;
    crate::awake::recheck(&app);
    Ok(Started { id: handle.id().to_string() })
}

/// `contract`'s session in a worktree of its own when the form asks (made last, once nothing
/// else can refuse it; a scheduled one's when it is scheduled, as at the command line).
pub fn in_worktree(state: &AppState, mut contract: Armed, asked: bool) -> Result<Armed, UiError> {
    if asked {
        nightshift::supervisor::build::in_worktree(&mut contract, state.paths.config_dir.as_deref(), "")
            .map_err(|e| UiError::new(Code::BadCwd, e))?;
    }
    Ok(contract)
}

/// `spec` in worktrees when the loop form asks: one for the loop, or one per task (made last, once
/// nothing else can refuse it; a scheduled one's when it is scheduled).
pub fn loop_in_worktrees(
    state: &AppState,
    mut spec: nightshift::loops::LoopSpec,
    form: &NewLoop,
) -> Result<nightshift::loops::LoopSpec, UiError> {
    if form.worktree || form.worktree_per_task {
        let dir = state.paths.config_dir.as_deref();
        nightshift::supervisor::build::loop_in_worktrees(&mut spec, dir, "", form.worktree_per_task)
            .map_err(|e| UiError::new(Code::BadCwd, e))?;
    }
    Ok(spec)
}

/// The New session form, for a loop.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NewLoop {
    pub cwd: String,
    pub agent: Option<String>,
    pub tasks: Option<String>,
    pub prompt: Option<String>,
    pub max_iterations: Option<u32>,
    pub max_cost_usd: Option<f64>,
    #[serde(default)]
    pub max_tokens: Option<u64>,
    #[serde(default)]
    pub harness_args: String,
    #[serde(default)]
    pub account: Option<String>,
    /// Work in a worktree of its own (one for the loop), outside the user's checkout…
    #[serde(default)]
    pub worktree: bool,
    /// …or a new one for each task.
    #[serde(default)]
    pub worktree_per_task: bool,
    #[serde(default)]
    pub start: StartAt,
}

#[tauri::command]
pub async fn new_loop(app: AppHandle, state: State<'_, AppState>, request: NewLoop) -> Result<Started, UiError> {
    let form = request.clone();
    let spec = loop_spec(&state, request)?;
    let due = due(&state, &form.start, spec.account.as_ref().map(|a| a.name.as_str()), spec.agent)?;
    let spec = loop_in_worktrees(&state, spec, &form)?;
    if let Some(due) = due {
        return schedule(&state, nightshift::contract::Contract::looping(spec), &due);
    }
    let handle = state.supervisor.start_loop(spec).map_err(|e| UiError::new(Code::StartFailed, e.to_string()))?;
    crate::awake::recheck(&app);
    Ok(Started { id: handle.id().to_string() })
}

/// What the loop form describes, checked as the command line's `loop` is.
pub fn loop_spec(state: &AppState, request: NewLoop) -> Result<nightshift::loops::LoopSpec, UiError> {
    use nightshift::supervisor::build::{build_loop, AccountChoice, LoopAsk};
    let cwd = PathBuf::from(expand_home(request.cwd.trim(), std::env::var("HOME").ok().as_deref()));
    if !cwd.is_absolute() {
        return Err(UiError::new(Code::BadCwd, format!("{}: give the full path of the directory", cwd.display())));
    }
    let agent = match request.agent.as_deref().filter(|a| !a.is_empty()) {
        Some(name) => Some(name.parse::<AgentKind>().map_err(|e| UiError::new(Code::BadAgent, e.to_string()))?),
        None => None,
    };
    let harness_args = shlex::split(request.harness_args.trim()).ok_or_else(|| {
        UiError::new(Code::BadArgs, "the agent's flags have an unclosed quote; close it and try again")
    })?;
    let ask = LoopAsk {
        request: nightshift::loops::LoopRequest {
            agent,
            tasks: request.tasks.filter(|t| !t.trim().is_empty()).map(|t| PathBuf::from(t.trim())),
            prompt: request.prompt.filter(|p| !p.trim().is_empty()),
            max_iterations: request.max_iterations,
            max_cost_usd: request.max_cost_usd,
            max_tokens: request.max_tokens,
            harness_args,
            ..nightshift::loops::LoopRequest::default()
        },
        account: match request.account.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
            Some(name) => AccountChoice::Named(name.to_string()),
            None => AccountChoice::Default,
        },
        // The pace (the settings' "Pacing the night"), the sandbox and its fence as config.toml says.
        ..LoopAsk::default()
    };
    let (spec, warnings) = build_loop(&state.paths, &cwd, ask, |_| {})?;
    for warning in warnings {
        tracing::warn!("{warning}");
    }
    Ok(spec)
}
