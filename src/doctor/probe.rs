//! The drift probe: start the agent's CLI in a terminal of Nightshift's own, in an empty scratch
//! directory (`<state>/doctor/probe`, the same every time, so a user can trust it once), wait for
//! its first screen to settle, and read that screen with the agent's adapter — the same reading
//! every session gets. No prompt is typed, so no API call is asked for; the client is ended at once.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::ProbeRead;
use crate::agent::Adapter;
use crate::pty::{CommandSpec, PtySize};
use crate::screen::Screen;

/// A screen still this long has settled.
const SETTLED: Duration = Duration::from_millis(1500);
/// The client has this long to draw a settled screen.
const LIMIT: Duration = Duration::from_secs(25);

/// Runs the probe; the reading, and the file the screen was kept in.
pub fn run(adapter: &Adapter, bin: &Path, args: &[String], dir: &Path) -> (ProbeRead, Option<PathBuf>) {
    let scratch = dir.join("probe");
    let _ = std::fs::remove_dir_all(&scratch);
    if let Err(e) = crate::paths::private_dirs(&scratch) {
        return (ProbeRead::NoScreen { why: format!("cannot make {}: {e}", scratch.display()) }, None);
    }
    let spec = CommandSpec {
        program: bin.display().to_string(),
        args: args.to_vec(),
        cwd: scratch,
        env: Vec::new(),
        size: PtySize::new(120, 40),
    };
    // Its own thread and runtime: callable from a blocking thread of the window's runtime too.
    let kind = adapter.kind;
    let adapter = adapter.clone();
    let joined = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
        Ok::<_, String>(rt.block_on(settle(&adapter, &spec)))
    })
    .join();
    let (read, text) = match joined {
        Ok(Ok(found)) => found,
        Ok(Err(e)) => (ProbeRead::NoScreen { why: format!("no runtime for the probe: {e}") }, String::new()),
        Err(_) => (ProbeRead::NoScreen { why: "the probe failed".into() }, String::new()),
    };
    let kept = (!text.is_empty())
        .then(|| dir.join(format!("probe-{kind}.txt")))
        .filter(|f| crate::paths::write_private(f, &text).is_ok());
    (read, kept)
}

async fn settle(adapter: &Adapter, spec: &CommandSpec) -> (ProbeRead, String) {
    let mut spawned = match crate::pty::spawn(spec) {
        Ok(s) => s,
        Err(e) => return (ProbeRead::NoScreen { why: e.to_string() }, String::new()),
    };
    let mut screen = Screen::new(spec.size);
    let started = tokio::time::Instant::now();
    let mut last_output = started;
    let mut drew = false;
    let exited = loop {
        let quiet = last_output.elapsed();
        if drew && quiet >= SETTLED && !screen.in_sync() {
            break None;
        }
        if started.elapsed() >= LIMIT {
            break None;
        }
        let wait = if drew {
            SETTLED.saturating_sub(quiet).max(Duration::from_millis(50))
        } else {
            Duration::from_millis(250)
        };
        tokio::select! {
            chunk = spawned.output.recv() => match chunk {
                Some(bytes) => {
                    screen.feed(&bytes);
                    last_output = tokio::time::Instant::now();
                    drew |= bytes.iter().any(|b| !b.is_ascii_whitespace());
                }
                None => break Some(None),
            },
            exit = &mut spawned.exit => break Some(exit.ok()),
            _ = tokio::time::sleep(wait) => {}
        }
    };
    let snap = screen.snapshot();
    let text = format!("{}\n{}\n", snap.title, snap.text());
    let read = match exited {
        Some(exit) => {
            let how = exit
                .map(|e| format!("exited with code {}", e.shell_code()))
                .unwrap_or_else(|| "closed its terminal".into());
            ProbeRead::NoScreen { why: format!("the client {how} before its screen settled") }
        }
        None if !drew => ProbeRead::NoScreen { why: format!("the client drew nothing in {} s", LIMIT.as_secs()) },
        None => {
            let verdict = adapter.classify(&snap);
            if let Some(dialog) = verdict.dialog {
                ProbeRead::Dialog { kind: dialog.kind.to_string(), text: dialog.text }
            } else if let Some(signal) = verdict.working {
                ProbeRead::Working { signal, quiet_ms: last_output.elapsed().as_millis() as u64 }
            } else if verdict.prompt {
                ProbeRead::Idle
            } else {
                ProbeRead::Unknown
            }
        }
    };
    spawned.pty.signal_group(nix::sys::signal::Signal::SIGTERM);
    if tokio::time::timeout(Duration::from_secs(2), &mut spawned.exit).await.is_err() {
        spawned.pty.signal_group(nix::sys::signal::Signal::SIGKILL);
        let _ = tokio::time::timeout(Duration::from_secs(2), &mut spawned.exit).await;
    }
    (read, text)
}
