//! `nightshift statusline`: the statusLine exporter Claude Code runs for sessions Nightshift
//! supervises (given with `claude --settings`, never written to a settings file).
//!
//! It forwards the status JSON to the supervising process (a few hundred milliseconds at most, and
//! nothing at all when there is none) and prints the user's own statusLine — the command the
//! supervisor read from the user's settings when the session started, handed over in the
//! environment, run with the same input in the folder the session started in — or a compact line of
//! its own. It reads no settings file itself: the folder the client reports is the agent's choice,
//! and a command found there would run outside the agent's sandbox. It never fails: whatever goes
//! wrong, Claude Code still gets a status line.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use nightshift::control::Request;
use nightshift::session::SESSION_ENV;
use nightshift::usage::{self, Sample, CONTROL_ENV, TOKEN_ENV};
use serde_json::Value;

/// The longest a missing or slow supervisor may cost.
const FORWARD_TIMEOUT: Duration = Duration::from_millis(300);
/// The longest the user's own statusLine command may take.
const USER_COMMAND_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_INPUT: u64 = 1 << 20;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    let mut input = Vec::new();
    let _ = std::io::stdin().take(MAX_INPUT).read_to_end(&mut input);
    let status: Option<Value> = serde_json::from_slice(&input).ok().filter(Value::is_object);

    let forward = status.clone().map(|status| std::thread::spawn(move || forward(status)));
    // Where the session started (the client's project folder), not where the agent went since.
    let dir = status
        .as_ref()
        .and_then(|s| s["workspace"]["project_dir"].as_str().map(PathBuf::from))
        .filter(|d| d.is_absolute() && d.is_dir())
        .unwrap_or_else(|| PathBuf::from("/"));
    let user = std::env::var(usage::USER_STATUSLINE_ENV).ok().filter(|c| !c.trim().is_empty() && !usage::is_ours(c));
    let line = match user {
        Some(command) => run_user_command(&command, &input, &dir),
        None => own_line(&input),
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(line.as_bytes()).and_then(|()| out.flush());
    if let Some(forward) = forward {
        let _ = forward.join();
    }
    Ok(ExitCode::SUCCESS)
}

/// Hands the status to the supervisor of this session, if it is there.
fn forward(status: Value) {
    let (Some(socket), Some(token), Some(session)) =
        (std::env::var_os(CONTROL_ENV), std::env::var(TOKEN_ENV).ok(), std::env::var(SESSION_ENV).ok())
    else {
        return;
    };
    let request = Request::Usage { session, token: token.into(), status };
    let attempt = || -> std::io::Result<()> {
        let mut stream = UnixStream::connect(&socket)?;
        stream.set_write_timeout(Some(FORWARD_TIMEOUT))?;
        stream.set_read_timeout(Some(FORWARD_TIMEOUT))?;
        let mut line = serde_json::to_vec(&request).expect("requests serialise");
        line.push(b'\n');
        stream.write_all(&line)?;
        let mut answer = String::new();
        BufReader::new(stream).read_line(&mut answer)?;
        Ok(())
    };
    if let Err(e) = attempt() {
        // Nobody to tell; the status line must not suffer for it.
        let _ = e;
    }
}

fn run_user_command(command: &str, input: &[u8], dir: &std::path::Path) -> String {
    let child = Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else { return own_line(input) };
    if let Some(mut stdin) = child.stdin.take() {
        let input = input.to_vec();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = stdout.read_to_end(&mut out);
        out
    });
    let deadline = Instant::now() + USER_COMMAND_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
        }
    }
    String::from_utf8_lossy(&reader.join().unwrap_or_default()).into_owned()
}

/// Nightshift's own line when the user has none: the plan chip and the context in use.
fn own_line(input: &[u8]) -> String {
    let Ok(sample) = Sample::from_status(input) else { return "nightshift".to_string() };
    // Its stdout is Claude Code's status bar, which shows colours: only NO_COLOR turns them off.
    let mut parts = vec![usage::chip(&sample, !nightshift::logging::no_color())];
    if let Some(ctx) = sample.context_pct {
        parts.push(format!("ctx {}%", ctx.round() as i64));
    }
    parts.join(" · ")
}
