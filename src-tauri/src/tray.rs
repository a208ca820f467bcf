//! The tray icon and its menu.

use tauri::image::Image;
use tauri::menu::{Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager};

use crate::AppState;

const ICON_IDLE: &[u8] = include_bytes!("../../icons/tray-idle.png");

pub fn create(app: &AppHandle) -> tauri::Result<()> {
    let open = MenuItem::with_id(app, "open", "Open Nightshift", true, None::<&str>)?;
    let quit = MenuItem::with_id(app, "quit", "Quit", true, None::<&str>)?;
    let menu = Menu::with_items(app, &[&open, &PredefinedMenuItem::separator(app)?, &quit])?;
    TrayIconBuilder::with_id("nightshift")
        .icon(Image::from_bytes(ICON_IDLE)?)
        .tooltip("Nightshift")
        .menu(&menu)
        .on_menu_event(|app, event| match event.id().as_ref() {
            "open" => crate::show_main(app),
            "quit" => quit_app(app),
            other => tracing::debug!("unknown tray menu item {other}"),
        })
        .build(app)?;
    Ok(())
}

/// Stops this app's sessions (gracefully, as `nightshift stop` would) and exits.
fn quit_app(app: &AppHandle) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let supervisor = app.state::<AppState>().supervisor.clone();
        supervisor.stop_all("quit from the tray").await;
        app.exit(0);
    });
}
