//! `nightshift attach SESSION`: the session's terminal in this one — the screen drawn at once, then
//! the live output; keys go to the agent; this terminal's size becomes the session's (the latest
//! viewer's size wins: the one attaching is the one about to type). The detach key (Ctrl-] unless
//! `--detach-key` says otherwise; agents do not use it) leaves the session running.

use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use nightshift::control;
use nightshift::control::attach::{Heard, Viewer};
use nightshift::pty::PtySize;
use tokio::sync::mpsc;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (an id or a unique prefix)
    session: String,
    /// The key that detaches: ctrl- and a letter, or one of ] \ ^ _
    #[arg(long, value_name = "KEY", default_value = "ctrl-]", env = "NIGHTSHIFT_DETACH_KEY", value_parser = parse_key)]
    detach_key: u8,
}

/// `ctrl-]` → 0x1d; `ctrl-a` → 0x01.
fn parse_key(text: &str) -> Result<u8, String> {
    let bad = || format!("`{text}` is not a detach key; write ctrl- and a letter or one of ] \\ ^ _, e.g. ctrl-]");
    let rest = text.strip_prefix("ctrl-").or_else(|| text.strip_prefix("C-")).ok_or_else(bad)?;
    let mut chars = rest.chars();
    let (Some(c), None) = (chars.next(), chars.next()) else { return Err(bad()) };
    match c.to_ascii_lowercase() {
        c @ 'a'..='z' => Ok(c as u8 - b'a' + 1),
        ']' => Ok(0x1d),
        '\\' => Ok(0x1c),
        '^' => Ok(0x1e),
        '_' => Ok(0x1f),
        _ => Err(bad()),
    }
}

fn key_name(key: u8) -> String {
    match key {
        1..=26 => format!("Ctrl-{}", (b'A' + key - 1) as char),
        0x1c => "Ctrl-\\".into(),
        0x1d => "Ctrl-]".into(),
        0x1e => "Ctrl-^".into(),
        _ => "Ctrl-_".into(),
    }
}

pub fn run(state_dir: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let (_, store) = super::open_store(state_dir)?;
    let row = store.find_session(&args.session)?;
    if row.kind == nightshift::store::SessionKind::Loop {
        anyhow::bail!(
            "session {} is a loop: it has no terminal (`nightshift log {}` shows what it did)",
            row.id,
            row.id
        );
    }
    let socket = control::owner_socket(&row)?.to_path_buf();
    if !std::io::IsTerminal::is_terminal(&std::io::stdin()) || !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        anyhow::bail!("attach needs a terminal; `nightshift screen {}` prints the screen instead", row.id);
    }
    super::runtime()?.block_on(attach(&socket, &row.id, args.detach_key))
}

/// What the terminal sends the session.
enum Typed {
    Keys(Vec<u8>),
    Resize(PtySize),
    Detach,
}

async fn attach(socket: &std::path::Path, id: &str, key: u8) -> anyhow::Result<ExitCode> {
    let (cols, rows) = crossterm::terminal::size().unwrap_or((80, 24));
    let mut viewer = Viewer::attach(socket, id, Some(PtySize::new(cols, rows))).await?;
    let mut keyboard = viewer.keyboard().context("the attachment has no keyboard")?;

    crossterm::terminal::enable_raw_mode().context("cannot put the terminal in raw mode")?;
    let (to_session, mut typed) = mpsc::unbounded_channel::<Typed>();
    // Keys, until the detach key.
    let keys = to_session.clone();
    std::thread::Builder::new().name("stdin".into()).spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = stdin.read(&mut buf) {
            let typed = &buf[..n];
            if let Some(at) = typed.iter().position(|b| *b == key) {
                if at > 0 {
                    let _ = keys.send(Typed::Keys(typed[..at].to_vec()));
                }
                let _ = keys.send(Typed::Detach);
                break;
            }
            if keys.send(Typed::Keys(typed.to_vec())).is_err() {
                break;
            }
        }
    })?;
    // This terminal's size, as it changes.
    let resizes = to_session.clone();
    let mut winch = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::window_change())?;
    tokio::spawn(async move {
        while winch.recv().await.is_some() {
            if let Ok((c, r)) = crossterm::terminal::size() {
                if resizes.send(Typed::Resize(PtySize::new(c, r))).is_err() {
                    break;
                }
            }
        }
    });
    drop(to_session);
    let writer = tokio::spawn(async move {
        while let Some(t) = typed.recv().await {
            let sent = match t {
                Typed::Keys(bytes) => keyboard.keys(&bytes).await,
                Typed::Resize(size) => keyboard.resize(size).await,
                Typed::Detach => {
                    let _ = keyboard.detach().await;
                    return;
                }
            };
            if sent.is_err() {
                return;
            }
        }
    });

    let mut ended = None;
    let mut stdout = std::io::stdout();
    loop {
        match viewer.next().await {
            Ok(Some(Heard::Output(bytes))) => {
                if stdout.write_all(&bytes).and_then(|()| stdout.flush()).is_err() {
                    break;
                }
            }
            Ok(Some(Heard::Ended(how))) => {
                ended = Some(how);
                break;
            }
            // The screen that follows is drawn for this terminal's size (or the latest viewer's).
            Ok(Some(Heard::Size(_))) => {}
            Ok(None) | Err(_) => break,
        }
    }
    writer.abort();
    let _ = crossterm::terminal::disable_raw_mode();
    // Whatever modes the agent left on this terminal go with the detach.
    let _ = stdout.write_all(b"\x1b[?1049l\x1b[?25h\x1b[0m\x1b[?1000l\x1b[?2004l\r\n");
    match ended {
        Some(how) => println!("nightshift: session {id}: {how}"),
        None => println!(
            "nightshift: detached from session {id}; it goes on (`nightshift attach {id}` to come back, {} to leave)",
            key_name(key)
        ),
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detach_keys_parse_and_bad_ones_say_how_to_write_them() {
        assert_eq!(parse_key("ctrl-]"), Ok(0x1d));
        assert_eq!(parse_key("ctrl-a"), Ok(1));
        assert_eq!(parse_key("C-q"), Ok(17));
        assert!(parse_key("alt-x").unwrap_err().contains("e.g. ctrl-]"));
        assert!(parse_key("ctrl-ab").is_err());
        assert_eq!(key_name(0x1d), "Ctrl-]");
    }
}
