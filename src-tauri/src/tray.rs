//! The tray icon: its variant shows the worst state across live sessions, its menu lists them
//! with Pause all / Resume all, New session…, Open Nightshift and Quit.
//!
//! Linux tray hosts show no tooltip for app indicators, so the tooltip's text (counts and usage
//! chip) is also the menu's first, disabled rows.

use std::path::Path;

use nightshift::agent::canary::Standing;
use nightshift::event::StopKind;
use nightshift::overview::{self, Glance, Overview};
use tauri::image::Image;
use tauri::menu::{Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Manager};

use crate::AppState;

const TRAY_ID: &str = "nightshift";

fn icon(glance: Glance) -> &'static [u8] {
    match glance {
        Glance::Idle => include_bytes!("../../icons/tray-idle.png"),
        Glance::Working => include_bytes!("../../icons/tray-working.png"),
        Glance::Paused => include_bytes!("../../icons/tray-paused.png"),
        Glance::Attention => include_bytes!("../../icons/tray-attention.png"),
    }
}

/// What the tray shows: the sessions at a glance, and what Quit would do with pending resumes
/// (which can change while the overview does not: a restored session's resume is armed after it
/// is listed).
pub type Shown = (Overview, String);

fn menu(app: &AppHandle, (o, quit): &Shown) -> tauri::Result<Menu<tauri::Wry>> {
    let menu = Menu::new(app)?;
    for (i, line) in o.tooltip.lines().enumerate() {
        menu.append(&MenuItem::with_id(app, format!("status:{i}"), line, false, None::<&str>)?)?;
    }
    menu.append(&PredefinedMenuItem::separator(app)?)?;
    for entry in &o.entries {
        menu.append(&MenuItem::with_id(app, format!("session:{}", entry.id), &entry.label, true, None::<&str>)?)?;
    }
    if !o.entries.is_empty() {
        menu.append(&PredefinedMenuItem::separator(app)?)?;
    }
    menu.append(&MenuItem::with_id(app, "new", "New session…", true, None::<&str>)?)?;
    menu.append(&MenuItem::with_id(app, "ready", "Ready for tonight?", true, None::<&str>)?)?;
    menu.append(&MenuItem::with_id(app, "pause", "Pause all", !o.entries.is_empty(), None::<&str>)?)?;
    menu.append(&MenuItem::with_id(app, "resume", "Resume all", !o.entries.is_empty(), None::<&str>)?)?;
    menu.append(&PredefinedMenuItem::separator(app)?)?;
    menu.append(&MenuItem::with_id(app, "open", "Open Nightshift", true, None::<&str>)?)?;
    menu.append(&MenuItem::with_id(app, "quit", quit, true, None::<&str>)?)?;
    Ok(menu)
}

fn current(app: &AppHandle) -> Shown {
    let state = app.state::<AppState>();
    let (rows, usage) = state.supervisor.with_store(|s| {
        let plans: Vec<_> = [nightshift::AgentKind::Claude, nightshift::AgentKind::Codex]
            .into_iter()
            .filter_map(|agent| Some((agent, s.latest_limits(agent).ok().flatten()?.sample)))
            .collect();
        (s.sessions().unwrap_or_default(), plans)
    });
    let plans: Vec<_> = usage.iter().map(|(agent, sample)| (*agent, sample)).collect();
    let shown = overview::overview(&rows, &plans);
    // The clients the live sessions run, as the canary last judged them.
    let failed: Vec<(String, String)> = rows
        .iter()
        .filter(|r| shown.entries.iter().any(|e| e.id == r.id))
        .filter_map(|r| {
            let agent: nightshift::AgentKind = r.agent.parse().ok()?;
            let standing = Standing::of(agent, r.command.first()?, Path::new(&r.cwd), &state.paths.state_dir)?;
            match standing {
                Standing::Failed { version, .. } => Some((r.id.clone(), format!("{agent} {version}"))),
                _ => None,
            }
        })
        .collect();
    (overview::with_canary(shown, &failed), quit_label(app))
}

fn apply(app: &AppHandle, tray: &TrayIcon, shown: &Shown) -> tauri::Result<()> {
    let o = &shown.0;
    tray.set_menu(Some(menu(app, shown)?))?;
    tray.set_icon(Some(Image::from_bytes(icon(o.glance))?))?;
    tray.set_tooltip(Some(&o.tooltip))?;
    Ok(())
}

pub fn create(app: &AppHandle) -> tauri::Result<()> {
    let shown = current(app);
    let tray = TrayIconBuilder::with_id(TRAY_ID)
        .icon(Image::from_bytes(icon(shown.0.glance))?)
        .tooltip(&shown.0.tooltip)
        .menu(&menu(app, &shown)?)
        .on_menu_event(|app, event| on_menu(app, event.id().as_ref()))
        .build(app)?;
    drop(tray);
    *app.state::<AppState>().shown.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(shown);
    Ok(())
}

/// Brings the tray up to date with the journal, when anything it shows changed.
pub fn refresh(app: &AppHandle) {
    let o = current(app);
    let state = app.state::<AppState>();
    let mut shown = state.shown.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if shown.as_ref() == Some(&o) {
        return;
    }
    let Some(tray) = app.tray_by_id(TRAY_ID) else { return };
    match apply(app, &tray, &o) {
        Ok(()) => *shown = Some(o),
        Err(e) => tracing::warn!("could not update the tray: {e}"),
    }
}

fn on_menu(app: &AppHandle, id: &str) {
    match id {
        "open" => crate::show_main(app),
        "new" => crate::show_view(app, "new-session"),
        "ready" => crate::show_view(app, "ready"),
        "pause" | "resume" => {
            let app = app.clone();
            let held = id == "pause";
            tauri::async_runtime::spawn(async move {
                match crate::commands::hold_all(&app, held).await {
                    Ok(n) => tracing::info!("{} {n} session(s) from the tray", if held { "held" } else { "released" }),
                    Err(e) => tracing::warn!("{e}"),
                }
            });
        }
        "quit" => quit_app(app),
        other => match other.strip_prefix("session:") {
            Some(session) => crate::open_session(app, session),
            None => tracing::debug!("unknown tray menu item {other}"),
        },
    }
}

/// Stops this app's sessions (gracefully, as `nightshift stop` would) and exits. A session waiting
/// for a usage limit's reset keeps its resume for the next start, and a notification says so —
/// unless the settings say Quit cancels them.
fn quit_app(app: &AppHandle) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let state = app.state::<AppState>();
        let keep = nightshift::config::Config::load(state.paths.config_dir.as_deref())
            .map(|c| c.app.keep_resumes_on_quit)
            .unwrap_or(true);
        let pending = state.supervisor.pending_resumes();
        let kind = if keep { StopKind::Shutdown } else { StopKind::User };
        if !pending.is_empty() {
            tracing::info!(
                sessions = pending.len(),
                "quitting: pending resumes are {}",
                if keep { "kept for the next start" } else { "cancelled" }
            );
            if keep {
                crate::notify::resumes_kept(&app, &pending).await;
            }
        }
        state.supervisor.stop_all("quit from the tray", kind).await;
        app.exit(0);
    });
}

/// The Quit item's words: it says what happens to resumes that sessions wait for.
fn quit_label(app: &AppHandle) -> String {
    let state = app.state::<AppState>();
    let n = state.supervisor.pending_resumes().len();
    let keep = nightshift::config::Config::load(state.paths.config_dir.as_deref())
        .map(|c| c.app.keep_resumes_on_quit)
        .unwrap_or(true);
    match n {
        0 => "Quit".to_string(),
        n if !keep => format!("Quit (cancels {n} pending resume{})", if n == 1 { "" } else { "s" }),
        1 => "Quit (keeps 1 pending resume for the next start)".to_string(),
        n => format!("Quit (keeps {n} pending resumes for the next start)"),
    }
}
