//! The canary's I/O: a scratch home and folder under `<state>/canary/`, the stand-in API on
//! 127.0.0.1, and the installed client started as a session of a supervisor of the canary's own
//! (its own journal in the scratch folder, its own control socket for the hooks), typed at step by
//! step while its screen and events are kept for [`super::judge`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use tokio::sync::{broadcast, mpsc};

use super::{fold, judge, Ends, Frame, Observed, Outcome, Request, Script, Step};
use crate::agent::{Adapter, AgentKind};
use crate::clock::SystemClock;
use crate::control::ControlServer;
use crate::event::{Answerer, Event, EventKind, SessionState};
use crate::paths::Paths;
use crate::pty::{CommandSpec, PtySize};
use crate::screen::Screen;
use crate::session::SessionHandle;
use crate::standin::{anthropic, AnthropicApi, ResponsesApi};
use crate::store::Store;
use crate::supervisor::{SessionSpec, Supervisor};

/// The key the scratch client is given: the stand-in takes any. Claude Code is given it as a
/// subscriber's token, as most nights run: only then does it draw a plan's limit as its notice,
/// and give its statusLine the plan's windows.
const THROWAWAY_KEY: &str = "sk-ant-oat01-nightshift-canary-throwaway-token-000000000";
/// The variable the scratch Codex home's provider reads its key from (not the user's own).
const CODEX_KEY_VAR: &str = "NIGHTSHIFT_CANARY_API_KEY";
/// The terminal the client draws in.
const SIZE: PtySize = PtySize { cols: 120, rows: 40 };
/// After the step's end, how long the canary still reads (a statusLine's figures come after the
/// turn, the last frame a moment after the state).
const SETTLE: Duration = Duration::from_millis(1500);
/// The most of the client's output kept for the fixture.
const PTY_KEEP: usize = 8 << 20;

/// What the canary needs besides the client.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The `nightshift` CLI the client's hooks and statusLine run.
    pub cli: PathBuf,
}

/// The stand-in for `kind`'s API.
enum StandIn {
    Anthropic(AnthropicApi),
    Responses(ResponsesApi),
}

impl StandIn {
    async fn start(kind: AgentKind) -> std::io::Result<Self> {
        Ok(match kind {
            AgentKind::Codex => Self::Responses(ResponsesApi::start().await?),
            _ => Self::Anthropic(AnthropicApi::start().await?),
        })
    }

    fn base_url(&self) -> String {
        match self {
            Self::Anthropic(a) => a.base_url(),
            Self::Responses(r) => r.base_url(),
        }
    }

    /// The requests answered so far (the conversation's, not a title's or a model list's).
    fn requests(&self) -> Vec<Request> {
        // Each stand-in's record, as (scenario, last user text, status, asked, answered).
        let seen: Vec<(String, String, u16, SystemTime, Option<SystemTime>)> = match self {
            Self::Anthropic(a) => {
                a.messages().into_iter().map(|r| (r.scenario, r.last_user, r.status, r.at, r.done_at)).collect()
            }
            Self::Responses(r) => {
                r.turns().into_iter().map(|r| (r.scenario, r.last_user, r.status, r.at, r.done_at)).collect()
            }
        };
        seen.into_iter()
            .map(|(scenario, said, status, at, done_at)| Request { scenario, said: tail(&said), status, at, done_at })
            .collect()
    }

    /// The limit it reports resets at `at`.
    fn set_reset(&self, at: DateTime<Utc>) {
        let epoch = at.timestamp().max(0) as u64;
        match self {
            Self::Anthropic(a) => {
                a.set_usage(anthropic::Usage { five_hour_reset: epoch, ..anthropic::Usage::default() })
            }
            Self::Responses(r) => r.set_reset(epoch),
        }
    }

    /// The five-hour window's use its answers report, in percent.
    fn plan_pct(&self) -> f64 {
        match self {
            Self::Anthropic(_) => anthropic::Usage::default().five_hour * 100.0,
            Self::Responses(_) => crate::standin::openai::DEFAULT_USED_PCT,
        }
    }
}

/// The last 160 characters of `text`, on one line.
fn tail(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let skip = flat.chars().count().saturating_sub(160);
    flat.chars().skip(skip).collect()
}

/// The scratch places of one client's canary, made empty.
struct Scratch {
    root: PathBuf,
    home: PathBuf,
    project: PathBuf,
    /// The client's own config directory (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`).
    config: PathBuf,
    tmp: PathBuf,
}

impl Scratch {
    fn make(state_dir: &Path, kind: AgentKind) -> std::io::Result<Self> {
        let root = state_dir.join("canary").join(format!("scratch-{kind}"));
        match std::fs::remove_dir_all(&root) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let s = Self {
            home: root.join("home"),
            project: root.join("project"),
            config: root.join("config"),
            tmp: root.join("tmp"),
            root,
        };
        for dir in [&s.home, &s.project, &s.config, &s.tmp] {
            std::fs::create_dir_all(dir)?;
        }
        Ok(s)
    }
}

/// The client's environment: the scratch home and config, the stand-in, the throwaway key. The
/// user's own credentials and endpoints are blanked, so nothing reaches them or is sent with them.
fn client_env(kind: AgentKind, s: &Scratch, base_url: &str, version: &str) -> std::io::Result<Vec<(String, String)>> {
    let mut env: Vec<(String, String)> = vec![
        ("HOME".into(), s.home.display().to_string()),
        ("TMPDIR".into(), s.tmp.display().to_string()),
        ("XDG_CONFIG_HOME".into(), s.home.join(".config").display().to_string()),
        ("XDG_DATA_HOME".into(), s.home.join(".local/share").display().to_string()),
        ("XDG_STATE_HOME".into(), s.home.join(".local/state").display().to_string()),
        ("XDG_CACHE_HOME".into(), s.home.join(".cache").display().to_string()),
        ("HTTP_PROXY".into(), String::new()),
        ("HTTPS_PROXY".into(), String::new()),
        ("http_proxy".into(), String::new()),
        ("https_proxy".into(), String::new()),
        ("NO_PROXY".into(), "127.0.0.1,localhost".into()),
    ];
    match kind {
        AgentKind::Codex => {
            std::fs::write(s.config.join("config.toml"), codex_config(base_url, &s.project))?;
            env.extend(
                [
                    ("CODEX_HOME", s.config.display().to_string()),
                    (CODEX_KEY_VAR, THROWAWAY_KEY.to_string()),
                    ("OPENAI_API_KEY", String::new()),
                    ("OPENAI_BASE_URL", String::new()),
                ]
                .map(|(k, v)| (k.to_string(), v)),
            );
        }
        _ => {
            std::fs::write(s.config.join(".claude.json"), claude_state(&s.project, version).to_string())?;
            env.extend(
                [
                    ("CLAUDE_CONFIG_DIR", s.config.display().to_string()),
                    ("ANTHROPIC_BASE_URL", base_url.to_string()),
                    ("CLAUDE_CODE_OAUTH_TOKEN", THROWAWAY_KEY.to_string()),
                    ("ANTHROPIC_API_KEY", String::new()),
                    ("ANTHROPIC_AUTH_TOKEN", String::new()),
                    ("CLAUDE_CODE_USE_BEDROCK", String::new()),
                    ("CLAUDE_CODE_USE_VERTEX", String::new()),
                    ("ANTHROPIC_MODEL", String::new()),
                    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
                    ("DISABLE_TELEMETRY", "1".into()),
                    ("DISABLE_ERROR_REPORTING", "1".into()),
                    ("CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY", "1".into()),
                ]
                .map(|(k, v)| (k.to_string(), v)),
            );
        }
    }
    Ok(env)
}

/// Claude Code's state file for the scratch config directory: onboarding done, the scratch folder
/// trusted, so the first screen is the prompt.
fn claude_state(project: &Path, version: &str) -> serde_json::Value {
    let mut projects = serde_json::Map::new();
    projects.insert(
        project.display().to_string(),
        serde_json::json!({"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true,
            "projectOnboardingSeenCount": 1, "allowedTools": []}),
    );
    serde_json::json!({
        "hasCompletedOnboarding": true, "lastOnboardingVersion": version, "lastReleaseNotesSeen": version,
        "theme": "dark",
        "projects": projects
    })
}

/// Codex's config.toml for the scratch home: the stand-in as its model provider, the scratch
/// folder trusted, no update check, no analytics.
fn codex_config(base_url: &str, project: &Path) -> String {
    format!(
        r#"model = "gpt-5-codex"
model_provider = "nightshift-canary"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.nightshift-canary]
name = "Nightshift canary"
base_url = "{base_url}"
env_key = "{CODEX_KEY_VAR}"
wire_api = "responses"

[projects."{}"]
trust_level = "trusted"

[tui]
screen_reader_detection_done = true
"#,
        project.display()
    )
}

/// One installed client to run the canary on.
#[derive(Debug, Clone)]
pub struct Client {
    pub kind: AgentKind,
    /// Its signals, the user's file laid over the built-in ones.
    pub adapter: Adapter,
    pub script: Script,
    pub bin: PathBuf,
    pub version: String,
}

/// Runs the client's script, read with its adapter. Blocking: its own runtime on its own thread.
pub fn run(paths: &Paths, setup: &Setup, client: &Client) -> Outcome {
    let (paths, setup, owned) = (paths.clone(), setup.clone(), client.clone());
    let joined = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| format!("no runtime for the canary: {e}"))?;
        rt.block_on(canary(&paths, &setup, &owned))
    })
    .join();
    let why = match joined {
        Ok(Ok(outcome)) => return outcome,
        Ok(Err(why)) => why,
        Err(_) => "the canary failed".into(),
    };
    Outcome {
        agent: client.kind,
        version: Some(client.version.clone()),
        skipped: None,
        broken: Some(why),
        steps: 0,
        secs: 0.0,
        signals: Vec::new(),
        kept: None,
    }
}

async fn canary(paths: &Paths, setup: &Setup, client: &Client) -> Result<Outcome, String> {
    let Client { kind, adapter, script, bin, version } = client;
    let (kind, version) = (*kind, version.as_str());
    let began = std::time::Instant::now();
    let scratch = Scratch::make(&paths.state_dir, kind)
        .map_err(|e| format!("cannot make its scratch folder under {}: {e}", paths.state_dir.display()))?;
    let standin = StandIn::start(kind).await.map_err(|e| format!("cannot start the stand-in API on 127.0.0.1: {e}"))?;
    let env = client_env(kind, &scratch, &standin.base_url(), version)
        .map_err(|e| format!("cannot write the scratch config in {}: {e}", scratch.root.display()))?;

    let store = Store::open(&scratch.root.join("journal.db")).map_err(|e| format!("no scratch journal: {e}"))?;
    let mut supervisor = Supervisor::new(store, Arc::new(SystemClock));
    crate::paths::ensure_private_dir(&paths.runtime_dir).map_err(|e| e.to_string())?;
    let socket = paths.runtime_dir.join(format!("canary-{}-{kind}.sock", std::process::id()));
    let control = ControlServer::bind(&socket, supervisor.clone())
        .map_err(|e| format!("no control socket for the hooks at {}: {e}", socket.display()))?;
    supervisor.set_control_socket(socket);
    supervisor.set_cli(&setup.cli);

    let mut args: Vec<String> = adapter.launch().map(|(_, a)| a.to_vec()).unwrap_or_default();
    // The permission step needs the dialog: Claude's default mode asks before a command; Codex
    // asks, on request, before a command that asks to leave its sandbox.
    let asking: &[&str] = match kind {
        AgentKind::Codex => &["--ask-for-approval", "on-request"],
        _ => &["--permission-mode", "default"],
    };
    args.extend(asking.iter().map(|a| a.to_string()));
    let (tap, mut output) = mpsc::unbounded_channel();
    let mut spec = SessionSpec::of(
        kind,
        CommandSpec { program: bin.display().to_string(), args, cwd: scratch.project.clone(), env, size: SIZE },
    );
    spec.terminal_mut().adapter = adapter.overrides().cloned();
    spec.output_tap = Some(tap);
    let mut events = supervisor.subscribe();
    let handle = supervisor.start(spec).map_err(|e| format!("the client did not start: {e}"))?;

    let mut reader = Reader { screen: Screen::new(SIZE), pty: Vec::new(), adapter: adapter.clone() };
    let mut readings = Vec::new();
    let mut screens: Vec<(usize, &Step, String)> = Vec::new();
    let mut ran = 0;
    let mut requests = Vec::new();
    for (i, step) in script.step.iter().enumerate() {
        let seen = run_step(step, &handle, &standin, adapter, &mut reader, &mut output, &mut events).await;
        ran += 1;
        requests.extend(seen.requests.iter().cloned());
        let mut failed = false;
        for signal in &step.expect {
            let result = judge(kind, signal, step, &seen);
            failed |= result.is_err();
            readings.push((step.name.clone(), signal.clone(), result));
        }
        if failed {
            screens.push((i + 1, step, step_screens(&seen)));
        }
        let gone = handle.status().exit.is_some();
        if seen.timed_out || gone {
            // The session is somewhere the script did not lead, or over: what follows would read
            // nothing.
            for later in &script.step[i + 1..] {
                for signal in &later.expect {
                    let why = if gone {
                        format!("not checked: the client ended during the step before, {}", step.name)
                    } else {
                        format!("not checked: the step before, {}, did not end in {} s", step.name, step.within)
                    };
                    readings.push((later.name.clone(), signal.clone(), Err(why)));
                }
            }
            break;
        }
    }
    let _ = handle.stop("the canary").await;
    let _ = tokio::time::timeout(Duration::from_secs(5), handle.wait()).await;
    drop(control);
    drop(supervisor);
    // What a failure needs is kept apart (below); the scratch home goes.
    let _ = std::fs::remove_dir_all(&scratch.root);

    let signals = fold(&readings);
    let kept = if screens.is_empty() { None } else { keep(paths, kind, version, &screens, &reader.pty, &requests) };
    let outcome = Outcome {
        agent: kind,
        version: Some(version.to_string()),
        skipped: None,
        broken: None,
        steps: ran,
        secs: began.elapsed().as_secs_f64(),
        signals,
        kept,
    };
    Ok(outcome)
}

/// The client's screen as the canary reads it, from the session's output.
struct Reader {
    screen: Screen,
    pty: Vec<u8>,
    adapter: Adapter,
}

impl Reader {
    fn feed(&mut self, bytes: &[u8], frames: &mut Vec<Frame>) {
        self.screen.feed(bytes);
        if self.pty.len() + bytes.len() <= PTY_KEEP {
            self.pty.extend_from_slice(bytes);
        }
        let snap = self.screen.snapshot();
        let readings = self.adapter.readings(&snap);
        let changed = frames.last().is_none_or(|f| f.readings != readings || f.title != snap.title);
        if changed {
            let mut tail: Vec<String> =
                snap.rows.iter().rev().filter(|r| !r.trim().is_empty()).take(8).cloned().collect();
            tail.reverse();
            frames.push(Frame { at: SystemTime::now(), title: snap.title.clone(), tail, readings });
        }
    }

    fn text(&self) -> String {
        let snap = self.screen.snapshot();
        format!("{}\n{}\n", snap.title, snap.text())
    }
}

async fn run_step(
    step: &Step,
    handle: &SessionHandle,
    standin: &StandIn,
    adapter: &Adapter,
    reader: &mut Reader,
    output: &mut mpsc::UnboundedReceiver<Vec<u8>>,
    events: &mut broadcast::Receiver<Event>,
) -> Observed {
    let mut seen = Observed { plan_pct: standin.plan_pct(), ..Observed::default() };
    let before = standin.requests().len();
    if let Some(secs) = step.reset_in {
        let at = Utc::now() + chrono::Duration::seconds(secs as i64);
        let at = chrono::SubsecRound::trunc_subsecs(at, 0);
        standin.set_reset(at);
        seen.reset = Some(at);
    }
    if let Some(say) = &step.say {
        let _ = handle.send_text(say.clone(), true, Answerer::Nightshift).await;
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(step.within);
    let mut answered = false;
    let mut ended: Option<tokio::time::Instant> = None;
    loop {
        let wait = ended.map_or(deadline, |at| (at + SETTLE).min(deadline));
        tokio::select! {
            chunk = output.recv() => match chunk {
                Some(bytes) => reader.feed(&bytes, &mut seen.frames),
                None => break,
            },
            event = events.recv() => match event {
                Ok(event) if &event.session == handle.id() => {
                    match &event.kind {
                        EventKind::State { state: SessionState::WaitingInput, .. } if !answered => {
                            if let Some(keys) = step.reply().and_then(|r| adapter.keys(r)) {
                                answered = true;
                                let _ = handle.send_keys(keys).await;
                            }
                        }
                        EventKind::State { state: SessionState::Idle, .. } if step.ends == Ends::Idle => {
                            ended = Some(tokio::time::Instant::now());
                        }
                        EventKind::State { state: SessionState::Exited | SessionState::Failed, .. } => {
                            ended = Some(tokio::time::Instant::now() - SETTLE);
                        }
                        EventKind::LimitDetected { .. } if step.ends == Ends::Limit => {
                            ended = Some(tokio::time::Instant::now());
                        }
                        _ => {}
                    }
                    seen.events.push(event);
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => break,
            },
            _ = tokio::time::sleep_until(wait) => {
                if ended.is_none() {
                    seen.timed_out = true;
                }
                break;
            }
            _ = tokio::time::sleep(Duration::from_millis(200)), if step.ends == Ends::Answered && ended.is_none() => {
                let answered = standin.requests().iter().skip(before).any(|r| r.status == 200 && r.done_at.is_some());
                let resting = seen.frames.last().is_some_and(|f| {
                    let r = &f.readings;
                    r.prompt && !r.title_working && r.spinner.is_none() && r.footer.is_none()
                });
                if answered && resting {
                    ended = Some(tokio::time::Instant::now());
                }
            }
        }
        // The whole screen, for the fixture: the first that showed work, and the last.
        if seen.screens.is_empty()
            && seen.frames.last().is_some_and(|f| f.readings.title_working || f.readings.footer.is_some())
        {
            seen.screens.push(reader.text());
        }
    }
    seen.screens.push(reader.text());
    seen.requests = standin.requests().into_iter().skip(before).collect();
    seen
}

/// The step's screen as text, for the fixture.
fn step_screens(seen: &Observed) -> String {
    let mut out = String::new();
    for (i, screen) in seen.screens.iter().enumerate() {
        let which =
            if i + 1 == seen.screens.len() { "the screen at the step's end" } else { "the screen while it worked" };
        out.push_str(&format!("=== {which} (title, then rows)\n{screen}\n"));
    }
    out.push_str("=== every change of a signal, with the last rows then\n");
    for f in &seen.frames {
        out.push_str(&format!("--- {} · title: {}\n", DateTime::<Utc>::from(f.at).format("%H:%M:%S%.3f"), f.title));
        for row in &f.tail {
            out.push_str(row);
            out.push('\n');
        }
    }
    out
}

/// Keeps the screens of the failed steps, the client's whole output and what the stand-in was
/// asked, ready to attach to a report: `<state>/canary/<agent>-<version>-<time>/`.
fn keep(
    paths: &Paths,
    kind: AgentKind,
    version: &str,
    screens: &[(usize, &Step, String)],
    pty: &[u8],
    requests: &[Request],
) -> Option<PathBuf> {
    let stamp = Utc::now().format("%Y%m%dT%H%M%S");
    let dir = paths.state_dir.join("canary").join(format!("{kind}-{version}-{stamp}"));
    crate::paths::private_dirs(&dir).ok()?;
    for (n, step, text) in screens {
        let slug: String =
            step.name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
        crate::paths::write_private(&dir.join(format!("{n:02}-{slug}.txt")), text).ok()?;
    }
    crate::paths::write_private(&dir.join("pty.bin"), pty).ok()?;
    let lines: Vec<String> = requests
        .iter()
        .map(|r| {
            serde_json::json!({"at": DateTime::<Utc>::from(r.at).to_rfc3339(), "scenario": r.scenario,
                "status": r.status, "said": r.said})
            .to_string()
        })
        .collect();
    crate::paths::write_private(&dir.join("requests.jsonl"), lines.join("\n") + "\n").ok()?;
    Some(dir)
}
