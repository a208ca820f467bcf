//! The window's other views: problems, the plan, the doctor, presets, usage, the digest and the
//! morning, and the app's settings.

use super::new::expand_home;
use super::*;

/// What the window must say until it is fixed: files the app started without (their defaults
/// apply), and journal writes failing (a full disk). Each is one line naming the file and the fix.
#[tauri::command]
pub fn problems(state: State<'_, AppState>) -> Vec<String> {
    let mut out = Vec::new();
    // The core's messages mostly say the fix already; the rest get what happens meanwhile.
    let mut say = |e: String, meanwhile: &str| {
        out.push(if e.contains("fix it") { e } else { format!("{e} — {meanwhile}") });
    };
    let dir = state.paths.config_dir.as_deref();
    if let Err(e) = Config::load(dir) {
        say(e.to_string(), "until it is fixed, the defaults apply");
    }
    let agents = state.paths.agents_dir();
    for kind in AgentKind::ALL {
        if let Err(e) = nightshift::agent::load_adapter(kind, agents.as_deref()) {
            say(e.to_string(), &format!("until it is fixed, the built-in {kind} signals apply"));
        }
    }
    if let Err(e) = nightshift::hooks::guard::load_rules(dir) {
        say(e.to_string(), "until it is fixed, the guard uses its built-in rules");
    }
    if let Some(f) = state.supervisor.journal_failing() {
        out.push(format!(
            "the journal cannot be written ({}): {} event(s) since {} are missing; free disk space in {} — sessions go on",
            f.error,
            f.lost,
            nightshift::clock::format_ts(f.since),
            state.paths.state_dir.display()
        ));
    }
    out
}

/// The rest of the night's forecast (`nightshift plan`), to the next 08:00.
#[tauri::command]
pub fn plan(state: State<'_, AppState>) -> Result<Value, UiError> {
    let now = state.supervisor.clock().now();
    let morning = chrono::NaiveTime::from_hms_opt(8, 0, 0).expect("08:00");
    let until = nightshift::plan::next_local(now, morning, &chrono::Local);
    let mut plan = state.supervisor.with_store(|s| nightshift::plan::from_store(s, now, until))?;
    plan.clients = nightshift::plan::clients(&state.paths.state_dir);
    let sleep =
        nightshift::config::Config::load(state.paths.config_dir.as_deref()).map(|c| c.sleep).unwrap_or_default();
    let plan = plan.with_sleep(&sleep.settings(nightshift::supervisor::awake::can_wake().is_ok()));
    Ok(json!({ "text": plan.text(&chrono::Local), "plan": plan }))
}

/// What the "Ready for tonight?" panel and the New session page ask the doctor.
#[derive(Debug, Default, Deserialize)]
pub struct DoctorAsk {
    /// The agents; empty: Claude, and Codex when installed.
    #[serde(default)]
    pub agents: Vec<String>,
    /// The working directories; empty: the home directory.
    #[serde(default)]
    pub cwds: Vec<String>,
    /// Start each agent's CLI for the drift probe (a few seconds each).
    #[serde(default)]
    pub probe: bool,
}

/// The doctor's checks, as `nightshift doctor --json` gives them.
#[tauri::command]
pub async fn doctor(state: State<'_, AppState>, ask: DoctorAsk) -> Result<nightshift::doctor::Report, UiError> {
    let home = std::env::var("HOME").ok();
    let mut agents = Vec::new();
    for name in ask.agents.iter().filter(|a| !a.is_empty()) {
        agents.push(name.parse::<AgentKind>().map_err(|e| UiError::new(Code::BadAgent, e.to_string()))?);
    }
    let cwds: Vec<PathBuf> = ask
        .cwds
        .iter()
        .map(|c| c.trim())
        .filter(|c| !c.is_empty())
        .map(|c| PathBuf::from(expand_home(c, home.as_deref())))
        .collect();
    let here = home.map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/"));
    let opts = nightshift::doctor::Options { agents, cwds, agent_args: Vec::new(), no_probe: !ask.probe };
    let paths = state.paths.clone();
    tauri::async_runtime::spawn_blocking(move || nightshift::doctor::run(&paths, &here, &opts))
        .await
        .map_err(|e| UiError::new(Code::DoctorFailed, format!("the checks could not run: {e}")))
}

/// "Check tonight's client": the canary (`nightshift doctor --canary --json`), on each installed
/// client in turn, under a minute each; its verdicts are kept for the sessions and the plan.
#[tauri::command]
pub async fn canary(state: State<'_, AppState>) -> Result<nightshift::doctor::Report, UiError> {
    let paths = state.paths.clone();
    let setup = nightshift::doctor::canary::drive::Setup { cli: crate::cli_path() };
    tauri::async_runtime::spawn_blocking(move || nightshift::doctor::canary::run(&paths, &setup, &[]).0)
        .await
        .map_err(|e| UiError::new(Code::DoctorFailed, format!("the canary could not run: {e}")))
}

#[derive(Debug, Serialize)]
pub struct PresetView {
    pub name: String,
    pub title: String,
    pub description: String,
    pub source: nightshift::config::Source,
    pub settings: nightshift::respawn::Settings,
}

#[tauri::command]
pub fn presets(state: State<'_, AppState>) -> Result<Vec<PresetView>, UiError> {
    let config = Config::load(state.paths.config_dir.as_deref())?;
    Ok(config
        .all()
        .into_iter()
        .map(|(name, settings, source)| {
            let builtin = nightshift::respawn::BUILTIN_PRESETS.iter().find(|p| p.0 == name);
            PresetView {
                title: builtin.map_or_else(|| name.clone(), |p| p.1.to_string()),
                description: builtin.map_or_else(|| "your preset".to_string(), |p| p.4.to_string()),
                name,
                source,
                settings,
            }
        })
        .collect())
}

#[tauri::command]
pub fn save_preset(
    state: State<'_, AppState>,
    name: String,
    settings: nightshift::respawn::Settings,
) -> Result<(), UiError> {
    Config::update(state.paths.config_dir.as_deref(), |c| c.save_preset(name.trim(), settings))?;
    Ok(())
}

#[tauri::command]
pub fn delete_preset(state: State<'_, AppState>, name: String) -> Result<(), UiError> {
    Config::update(state.paths.config_dir.as_deref(), |c| c.delete_preset(&name))?;
    Ok(())
}

#[tauri::command]
pub fn usage(state: State<'_, AppState>) -> Result<Value, UiError> {
    let now = state.supervisor.clock().now();
    Ok(state.supervisor.with_store(|s| nightshift::digest::usage_report(s, now))?)
}

/// The digest reads the whole range of the journal and runs git in every session's repository: on
/// the blocking pool, never the window's thread or the async workers.
#[tauri::command]
pub async fn digest(state: State<'_, AppState>, range: String, mark_viewed: bool) -> Result<Value, UiError> {
    let supervisor = state.supervisor.clone();
    tauri::async_runtime::spawn_blocking(move || digest_of(&supervisor, &range, mark_viewed))
        .await
        .map_err(|e| UiError::new(Code::DigestFailed, format!("the digest could not be made: {e}")))?
}

fn digest_of(supervisor: &nightshift::Supervisor, range: &str, mark_viewed: bool) -> Result<Value, UiError> {
    let range = match range {
        "since_last" => Range::SinceLastViewed,
        "1h" => Range::LastHour,
        "today" => Range::Today,
        "24h" => Range::Last24h,
        other => return Err(UiError::new(Code::BadRange, format!("`{other}`: choose since_last, 1h, today or 24h"))),
    };
    let now = supervisor.clock().now();
    let d = supervisor.with_store(|s| -> Result<_, nightshift::store::StoreError> {
        let last_viewed = s
            .meta(LAST_VIEWED_KEY)?
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(&t).ok())
            .map(|t| t.with_timezone(&chrono::Utc));
        let (from, to) = range.bounds(now, last_viewed);
        Ok((digest::build(s, from, to)?, digest::timeline::build(s, from, to)?))
    })?;
    let (d, timeline) = d;
    if mark_viewed {
        supervisor.write_store(|s| s.set_meta(LAST_VIEWED_KEY, &nightshift::clock::format_ts(now)))?;
    }
    Ok(json!({ "text": digest::render(&d, Format::Text), "digest": d, "timeline": timeline }))
}

#[tauri::command]
pub fn morning(state: State<'_, AppState>) -> Result<Value, UiError> {
    let Some(summary) = state.supervisor.with_store(|s| s.latest_summary())? else { return Ok(Value::Null) };
    // The stored digest itself too: the window shows its figures (`counts`, `totals`) beside the text
    // made from it. A night when nothing ran has none.
    let mut stored = serde_json::from_str::<digest::Digest>(&summary.body).ok();
    // Written at its hour: what the user dismissed since is marked, for the window to leave out.
    if let Some(d) = &mut stored {
        digest::mark_dismissed(d, &state.supervisor.with_store(digest::Dismissed::load)?);
    }
    let text = stored.as_ref().map_or_else(|| summary.headline.clone(), |d| digest::render(d, Format::Text));
    let range = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok().map(|t| t.with_timezone(&chrono::Utc));
    let timeline = match (range(&summary.from_ts), range(&summary.to_ts)) {
        (Some(from), Some(to)) => Some(state.supervisor.with_store(|s| digest::timeline::build(s, from, to))?),
        _ => None,
    };
    Ok(json!({
        "scheduled_for": summary.scheduled_for,
        "created_at": summary.created_at,
        "headline": summary.headline,
        "text": text,
        "digest": stored,
        "timeline": timeline,
    }))
}

// Off the main thread: it asks the keyring over D-Bus.
#[tauri::command(async)]
pub fn app_settings(app: AppHandle, state: State<'_, AppState>) -> Result<Value, UiError> {
    use tauri_plugin_autostart::ManagerExt;
    let config = Config::load(state.paths.config_dir.as_deref())?;
    let launch_at_login = app.autolaunch().is_enabled().unwrap_or(false);
    Ok(json!({
        "notifications": config.notifications,
        "launch_at_login": launch_at_login,
        "keep_resumes_on_quit": config.app.keep_resumes_on_quit,
        "pace": config.pace,
        "push": config.push,
        // Where a token is kept (the keyring, the file), never the token.
        "push_token": nightshift::push::token_kept(state.paths.config_dir.as_deref()),
        "phone": phone(&config.push),
        "power": crate::awake::status(&app),
    }))
}

/// Saves the night's pace (`[pace]`): the morning reserve as written ("20% at 08:30"), the weekly
/// pace's slack in points; empty turns each off. A bad one is refused with the fix.
#[tauri::command]
pub fn set_pace(state: State<'_, AppState>, morning_reserve: String, weekly_pace: String) -> Result<Value, UiError> {
    use nightshift::limits::pace::{MorningReserve, PaceSettings};
    let morning = morning_reserve.trim();
    let morning_reserve = (!morning.is_empty())
        .then(|| morning.parse::<MorningReserve>())
        .transpose()
        .map_err(|e| UiError::new(Code::BadForm, e))?;
    let weekly = weekly_pace.trim();
    let weekly_pace = (!weekly.is_empty())
        .then(|| weekly.parse::<f64>().ok().filter(|s| s.is_finite() && (0.0..=100.0).contains(s)))
        .map(|s| {
            s.ok_or_else(|| {
                UiError::new(
                    Code::BadForm,
                    format!("`{weekly}` is not a slack: give the points above n/7, from 0 to 100"),
                )
            })
        })
        .transpose()?;
    let dir = state.paths.config_dir.as_deref();
    let mut config = Config::load(dir)?;
    config.pace = PaceSettings { morning_reserve, weekly_pace };
    config.save(dir)?;
    Ok(json!({ "pace": config.pace, "describe": config.pace.describe() }))
}

#[tauri::command]
pub fn set_keep_resumes_on_quit(state: State<'_, AppState>, keep: bool) -> Result<(), UiError> {
    let dir = state.paths.config_dir.as_deref();
    let mut config = Config::load(dir)?;
    config.app.keep_resumes_on_quit = keep;
    config.save(dir)?;
    Ok(())
}

#[tauri::command]
pub fn set_notifications(state: State<'_, AppState>, switches: Switches) -> Result<(), UiError> {
    let dir = state.paths.config_dir.as_deref();
    let mut config = Config::load(dir)?;
    config.notifications = switches;
    config.save(dir)?;
    crate::notify::set_switches(&state, switches);
    Ok(())
}

/// Saves where the phone's notifications go and applies it from the next notice on. Blank URLs
/// are none; a bad one, or a token file others may read, is refused with the fix.
#[tauri::command(async)]
pub fn set_push(state: State<'_, AppState>, mut settings: nightshift::push::Settings) -> Result<(), UiError> {
    for url in [&mut settings.ntfy, &mut settings.webhook, &mut settings.click] {
        *url = url.take().map(|u| u.trim().to_string()).filter(|u| !u.is_empty());
    }
    if let Some(problem) = settings.problem() {
        return Err(UiError::new(Code::BadPush, problem));
    }
    let dir = state.paths.config_dir.as_deref();
    let mut config = Config::load(dir)?;
    // The answers' topic is set up with its key (`push setup`), not typed in the form.
    settings.listen = config.push.listen.clone();
    let setup =
        nightshift::push::setup(dir, settings.clone()).map_err(|problem| UiError::new(Code::BadPushToken, problem))?;
    config.push = settings;
    config.save(dir)?;
    state.push.update(setup);
    Ok(())
}

/// The phone's answers as set up, for the window: the topic the phone subscribes to, as text and as
/// a QR code; `null` when they are not set up. (The answers' topic and the key are not shown.)
fn phone(push: &nightshift::push::Settings) -> Value {
    match (&push.ntfy, &push.listen) {
        (Some(publish), Some(_)) => json!({
            "publish": publish,
            "qr_svg": nightshift::push::qr_svg(publish).ok(),
        }),
        _ => Value::Null,
    }
}

/// Sets up answers from the phone (`nightshift push setup`): the topic pair and the signing key,
/// or new ones with `fresh`; the app's pushes carry buttons from the next one on.
#[tauri::command(async)]
pub fn phone_setup(state: State<'_, AppState>, fresh: bool) -> Result<Value, UiError> {
    let dir = state.paths.config_dir.as_deref().ok_or(nightshift::config::ConfigError::NoDir)?;
    let made = nightshift::push::set_up_phone(dir, None, fresh).map_err(|p| UiError::new(Code::BadPush, p))?;
    let setup = nightshift::push::load(Some(dir)).map_err(|p| UiError::new(Code::BadPush, p))?;
    let shown = phone(&setup.settings);
    state.push.update(setup);
    Ok(json!({ "made": made.made, "phone": shown }))
}

#[tauri::command]
pub fn set_launch_at_login(app: AppHandle, enabled: bool) -> Result<(), UiError> {
    use tauri_plugin_autostart::ManagerExt;
    let launcher = app.autolaunch();
    let result = if enabled { launcher.enable() } else { launcher.disable() };
    result.map_err(|e| UiError::new(Code::Autostart, format!("could not change launch at login: {e}")))
}
