//! The window's live terminal. The page attaches to a session through its control socket (the
//! app's own sessions are reached through the app's socket, like everyone else's), watching without
//! resizing it; "Take over" gives it the keyboard and its size. Output reaches the page on a
//! channel as it comes, with flow control: the page says what it has drawn, and while more than
//! [`UNDRAWN`] bytes are not drawn the app stops taking output, so a page that falls behind is let
//! go by the session and drawn afresh — the session never waits for the window.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use nightshift::control;
use nightshift::control::attach::{Heard, Keyboard, Viewer};
use nightshift::pty::PtySize;
use serde_json::json;
use tauri::ipc::{Channel, InvokeResponseBody};
use tauri::{AppHandle, Manager, State};
use tokio::sync::mpsc;

use crate::error::{Code, UiError};
use crate::AppState;

/// Output sent to the page and not yet drawn, at most (then the app stops taking more).
const UNDRAWN: usize = 1 << 20;
/// Output put together into one message to the page, at most (a burst goes as few large messages,
/// the trickle of a working agent as it comes).
const BATCH: usize = 256 * 1024;

/// The page's terminals that are open, by viewer number.
#[derive(Debug, Default)]
pub struct Terminals {
    next: AtomicU32,
    open: Mutex<HashMap<u32, mpsc::UnboundedSender<FromPage>>>,
}

#[derive(Debug)]
enum FromPage {
    Keys(Vec<u8>),
    Resize(PtySize),
    Drawn(usize),
}

impl Terminals {
    fn send(&self, viewer: u32, what: FromPage) -> Result<(), UiError> {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let tx = open.get(&viewer).ok_or_else(|| {
            UiError::new(Code::TerminalClosed, "this terminal is no longer attached; open the session again")
        })?;
        tx.send(what).map_err(|_| UiError::new(Code::TerminalClosed, "the session's terminal has closed"))
    }

    fn close(&self, viewer: u32) {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).remove(&viewer);
    }
}

/// Attaches the page to session `id`'s terminal: on `output` come `{"size":[cols,rows]}` (a whole
/// screen drawn at that size follows), the output as binary, and `{"ended":"…"}` at the end.
/// Returns the viewer's number for the other terminal commands.
#[tauri::command]
pub async fn terminal_open(
    app: AppHandle,
    state: State<'_, AppState>,
    id: String,
    output: Channel<InvokeResponseBody>,
) -> Result<u32, UiError> {
    let row = state.supervisor.with_store(|s| s.find_session(&id))?;
    if row.kind == nightshift::store::SessionKind::Loop {
        return Err(UiError::new(Code::NotATerminal, format!("session {} is a loop: it has no terminal", row.id)));
    }
    let socket = control::owner_socket(&row)?.to_path_buf();
    let mut viewer = Viewer::attach(&socket, &row.id, None).await?;
    let keyboard =
        viewer.keyboard().ok_or_else(|| UiError::new(Code::TerminalClosed, "the attachment has no keyboard"))?;
    let number = state.terminals.next.fetch_add(1, Ordering::Relaxed) + 1;
    let (tx, from_page) = mpsc::unbounded_channel();
    state.terminals.open.lock().unwrap_or_else(|e| e.into_inner()).insert(number, tx);
    tracing::info!(session = %row.id, viewer = number, "the window attached");
    let session = row.id.clone();
    tauri::async_runtime::spawn(async move {
        pump(viewer, keyboard, from_page, |message| output.send(message).is_ok()).await;
        app.state::<AppState>().terminals.close(number);
        tracing::info!(session = %session, viewer = number, "the window detached");
    });
    Ok(number)
}

/// Keys typed in the page's terminal once it has taken over (they count as the user typing).
#[tauri::command]
pub fn terminal_keys(state: State<'_, AppState>, viewer: u32, data: String) -> Result<(), UiError> {
    state.terminals.send(viewer, FromPage::Keys(data.into_bytes()))
}

/// The page's terminal size, once it has taken over: it becomes the session's.
#[tauri::command]
pub fn terminal_resize(state: State<'_, AppState>, viewer: u32, cols: u16, rows: u16) -> Result<(), UiError> {
    if cols == 0 || rows == 0 {
        return Err(UiError::new(Code::BadSize, format!("{cols}x{rows} is no terminal size")));
    }
    state.terminals.send(viewer, FromPage::Resize(PtySize::new(cols, rows)))
}

/// How many bytes of output the page has drawn since it last said.
#[tauri::command]
pub fn terminal_drawn(state: State<'_, AppState>, viewer: u32, bytes: usize) -> Result<(), UiError> {
    state.terminals.send(viewer, FromPage::Drawn(bytes))
}

/// Detaches the page's terminal; the session goes on.
#[tauri::command]
pub fn terminal_close(state: State<'_, AppState>, viewer: u32) {
    state.terminals.close(viewer);
}

/// Passes the session's output to the page (`deliver` is false once the page is gone) and the
/// page's keys and size to the session, until either side ends.
async fn pump(
    mut viewer: Viewer,
    mut keyboard: Keyboard,
    mut from_page: mpsc::UnboundedReceiver<FromPage>,
    mut deliver: impl FnMut(InvokeResponseBody) -> bool,
) {
    // Frames are read on their own: a read cut off mid-frame would lose it. The queue is short, so
    // a page that stops taking output soon stops the reading, and the session lets it go.
    let (heard_tx, mut heard) = mpsc::channel::<Heard>(16);
    let reading = tauri::async_runtime::spawn(async move {
        while let Ok(Some(h)) = viewer.next().await {
            if heard_tx.send(h).await.is_err() {
                break;
            }
        }
    });
    let json = |value: serde_json::Value| InvokeResponseBody::Json(value.to_string());
    let mut undrawn = 0usize;
    let mut held: Option<Heard> = None;
    loop {
        tokio::select! {
            got = async { match held.take() { Some(h) => Some(h), None => heard.recv().await } }, if undrawn < UNDRAWN => {
                let delivered = match got {
                    Some(Heard::Output(mut bytes)) => {
                        // Whatever else has come is sent with it, up to a batch.
                        while bytes.len() < BATCH {
                            match heard.try_recv() {
                                Ok(Heard::Output(more)) => bytes.extend_from_slice(&more),
                                Ok(other) => { held = Some(other); break; }
                                Err(_) => break,
                            }
                        }
                        undrawn += bytes.len();
                        deliver(InvokeResponseBody::Raw(bytes))
                    }
                    Some(Heard::Size(size)) => deliver(json(json!({ "size": [size.cols, size.rows] }))),
                    Some(Heard::Ended(how)) => {
                        deliver(json(json!({ "ended": how })));
                        break;
                    }
                    None => {
                        deliver(json(json!({ "ended": "the connection to the session's Nightshift process closed" })));
                        break;
                    }
                };
                if !delivered {
                    break;
                }
            }
            got = from_page.recv() => {
                let sent = match got {
                    Some(FromPage::Keys(bytes)) => keyboard.keys(&bytes).await,
                    Some(FromPage::Resize(size)) => keyboard.resize(size).await,
                    Some(FromPage::Drawn(n)) => {
                        undrawn = undrawn.saturating_sub(n);
                        Ok(())
                    }
                    // The page closed its terminal.
                    None => {
                        let _ = keyboard.detach().await;
                        break;
                    }
                };
                if sent.is_err() {
                    break;
                }
            }
        }
    }
    reading.abort();
}
