//! `nightshift hook`: the command Claude Code runs for each hook of a session Nightshift supervises
//! (given with `claude --settings`, never written to a settings file).
//!
//! It forwards the payload on stdin to the supervising process and prints its answer for the client.
//! It fails open: without a supervisor to reach it exits 0 at once; one that does not answer gets
//! [`HOOK_TIMEOUT`]; either way it prints nothing and the client carries on.
//!
//! `--guarded` (a guarded session's `PreToolUse`) fails closed for a Bash command instead: no
//! supervisor to reach, no answer within [`GUARD_TIMEOUT`], an answer it does not understand, a
//! payload too long to send or to read, and it prints the client's refusal with the reason, then
//! journals `guard_unreachable` itself, into the supervisor's journal (`--journal`), within
//! [`GUARD_JOURNAL_WAIT`]. Asking the supervisor again would most likely fail as the first request
//! did (it is stopped, gone or stuck), while the journal is a file any Nightshift process writes.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use nightshift::control::{read_answer, Request, Response, MAX_REQUEST};
use nightshift::event::{EventKind, SessionId};
use nightshift::hooks::{guard, Answer, GUARD_JOURNAL_WAIT, GUARD_TIMEOUT, HOOK_TIMEOUT};
use nightshift::session::SESSION_ENV;
use nightshift::usage::{CONTROL_ENV, TOKEN_ENV};
use serde_json::Value;

const MAX_INPUT: u64 = 4 << 20;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session's guard is armed: a Bash command it cannot have judged is refused.
    #[arg(long)]
    guarded: bool,
    /// Where to journal such a refusal when the supervisor cannot be reached (its journal).
    #[arg(long, value_name = "FILE", requires = "guarded")]
    journal: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut input = Vec::new();
    let _ = std::io::stdin().take(MAX_INPUT + 1).read_to_end(&mut input);
    let payload = serde_json::from_slice::<Value>(&input).ok().filter(|_| input.len() as u64 <= MAX_INPUT);
    // A Bash command the guard must judge (or, unread, what may be one).
    let judged = args.guarded
        && payload.as_ref().is_none_or(|v| v["hook_event_name"] == "PreToolUse" && v["tool_name"] == "Bash");
    let command = payload.as_ref().and_then(|v| v["tool_input"]["command"].as_str()).unwrap_or("(unread)");
    let command: String = command.chars().take(500).collect();
    let answer = match payload {
        Some(payload) => {
            let within = if judged { GUARD_TIMEOUT } else { HOOK_TIMEOUT };
            forward_within(within, |session, token| Request::Hook { session, token: token.into(), payload }).and_then(
                |answer| match answer {
                    Response::Hook(Some(out)) if judged && serde_json::from_str::<Value>(&out).is_err() => {
                        Err(format!("Nightshift's answer is not one the client reads: {out:.80}"))
                    }
                    Response::Hook(out) => Ok(out),
                    other => Err(other.unexpected("a hook's answer").to_string()),
                },
            )
        }
        None if input.len() as u64 > MAX_INPUT => Err(format!("the hook's payload is over {} MiB", MAX_INPUT >> 20)),
        None => Err("the hook's payload is not JSON".into()),
    };
    let out = match answer {
        Ok(out) => out,
        Err(why) if judged => {
            say(&Answer::Deny { reason: guard::unreachable_reason(&why) }.stdout());
            journal_unreachable(args.journal.as_deref(), command, why);
            return Ok(ExitCode::SUCCESS);
        }
        Err(_) => None,
    };
    say(&out);
    Ok(ExitCode::SUCCESS)
}

fn say(out: &Option<String>) {
    if let Some(out) = out {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(out.as_bytes()).and_then(|()| stdout.flush());
    }
}

/// Sends the request `make` builds from the session's id and token to the supervising process
/// named in the environment, and returns its answer; `None` when there is nobody to ask or no
/// answer within [`HOOK_TIMEOUT`].
pub(super) fn forward(make: impl FnOnce(String, String) -> Request) -> Option<Response> {
    forward_within(HOOK_TIMEOUT, make).ok()
}

/// [`forward`] within `within`, saying why there is no answer.
fn forward_within(within: Duration, make: impl FnOnce(String, String) -> Request) -> Result<Response, String> {
    let var = |name: &str| std::env::var(name).map_err(|_| format!("no Nightshift to ask: {name} is not set"));
    let (socket, token, session) = (var(CONTROL_ENV)?, var(TOKEN_ENV)?, var(SESSION_ENV)?);
    let started = Instant::now();
    let late = || format!("no answer from Nightshift within {} s", within.as_secs());
    let left = || within.checked_sub(started.elapsed()).filter(|d| !d.is_zero()).ok_or_else(late);
    let request = make(session, token);
    let mut line = serde_json::to_vec(&request).map_err(|e| e.to_string())?;
    line.push(b'\n');
    if line.len() > MAX_REQUEST {
        return Err(format!("the command is too long to send to Nightshift (over {} MiB)", MAX_REQUEST >> 20));
    }
    let mut stream = UnixStream::connect(&socket).map_err(|e| format!("cannot reach Nightshift at {socket}: {e}"))?;
    let timed_out = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => late(),
        _ => format!("the connection to Nightshift failed: {e}"),
    };
    stream.set_write_timeout(Some(left()?)).map_err(timed_out)?;
    stream.write_all(&line).map_err(timed_out)?;
    stream.set_read_timeout(Some(left()?)).map_err(timed_out)?;
    let mut answer = String::new();
    BufReader::new(stream).read_line(&mut answer).map_err(timed_out)?;
    if answer.is_empty() {
        return Err("Nightshift closed the connection without an answer".into());
    }
    read_answer(&request, &answer, Path::new(&socket)).map_err(|e| format!("Nightshift did not answer it: {e}"))
}

/// Journals `guard_unreachable` of the session in the environment into `journal` (when given and
/// there), waiting at most [`GUARD_JOURNAL_WAIT`]; says on stderr when it could not.
fn journal_unreachable(journal: Option<&Path>, command: String, why: String) {
    let (Some(path), Ok(session)) = (journal, std::env::var(SESSION_ENV)) else { return };
    if !path.is_file() {
        eprintln!("nightshift hook: no journal at {} to note the refusal in", path.display());
        return;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let file = path.to_path_buf();
    // A thread: a journal another process holds may keep it waiting; it is left behind, and ends
    // with the process, past the wait (SQLite's journal survives a writer that ends mid-write).
    std::thread::spawn(move || {
        let written = nightshift::store::Store::open(&file).map(|store| {
            let journal = nightshift::journal::Journal::new(store, std::sync::Arc::new(nightshift::clock::SystemClock));
            journal.emit(&SessionId::from(session), EventKind::GuardUnreachable { command, why });
            journal.failing().is_none()
        });
        let _ = tx.send(written.unwrap_or(false));
    });
    if !matches!(rx.recv_timeout(GUARD_JOURNAL_WAIT), Ok(true)) {
        eprintln!("nightshift hook: could not note the refusal in {}", path.display());
    }
}
