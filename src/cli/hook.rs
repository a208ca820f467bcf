//! `nightshift hook`: the command Claude Code runs for each hook of a session Nightshift supervises
//! (given with `claude --settings`, never written to a settings file).
//!
//! It forwards the payload on stdin to the supervising process and prints its answer for the client.
//! It fails open: without a supervisor to reach it exits 0 at once; one that does not answer gets
//! [`HOOK_TIMEOUT`]; either way it prints nothing and the client carries on.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use nightshift::control::{read_answer, Request, Response};
use nightshift::hooks::HOOK_TIMEOUT;
use nightshift::session::SESSION_ENV;
use nightshift::usage::{CONTROL_ENV, TOKEN_ENV};
use serde_json::Value;

const MAX_INPUT: u64 = 4 << 20;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    let mut input = Vec::new();
    let _ = std::io::stdin().take(MAX_INPUT).read_to_end(&mut input);
    let answer = serde_json::from_slice::<Value>(&input)
        .ok()
        .and_then(|payload| forward(|session, token| Request::Hook { session, token: token.into(), payload }))
        .and_then(|answer| match answer {
            Response::Hook(out) => out,
            _ => None,
        });
    if let Some(out) = answer {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(out.as_bytes()).and_then(|()| stdout.flush());
    }
    Ok(ExitCode::SUCCESS)
}

/// Sends the request `make` builds from the session's id and token to the supervising process
/// named in the environment, and returns its answer; `None` when there is nobody to ask or no
/// answer within [`HOOK_TIMEOUT`].
pub(super) fn forward(make: impl FnOnce(String, String) -> Request) -> Option<Response> {
    let socket = std::env::var_os(CONTROL_ENV)?;
    let token = std::env::var(TOKEN_ENV).ok()?;
    let session = std::env::var(SESSION_ENV).ok()?;
    let started = Instant::now();
    let left = || HOOK_TIMEOUT.checked_sub(started.elapsed()).filter(|d| !d.is_zero());
    let mut stream = UnixStream::connect(&socket).ok()?;
    stream.set_write_timeout(left()).ok()?;
    let request = make(session, token);
    let mut line = serde_json::to_vec(&request).ok()?;
    line.push(b'\n');
    stream.write_all(&line).ok()?;
    stream.set_read_timeout(left()).ok()?;
    let mut answer = String::new();
    BufReader::new(stream).read_line(&mut answer).ok()?;
    read_answer(&request, &answer, Path::new(&socket)).ok()
}
