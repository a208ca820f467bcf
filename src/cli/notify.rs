//! `nightshift notify`: the program Codex runs at the end of each turn of a session Nightshift
//! supervises (given with `codex -c notify=[…]`, never written to a config file).
//!
//! Codex gives the notification as the last argument. Anything before it (after `--`) is the
//! user's own notify program, which is started first with the same argument and left to run. The
//! notification then goes to the supervising process over its control socket with the session's
//! token, with whether Codex keeps a rollout file of its thread (the conversation's thread has
//! one; the thread that names a new thread has none), and with the latest usage figures that file
//! holds (Codex's own data: its plan's windows, tokens, context). It fails open like `nightshift hook`:
//! without a supervisor to reach it exits 0 at once, and one that does not answer gets
//! [`nightshift::hooks::HOOK_TIMEOUT`]; it prints nothing. (Codex does not wait for it anyway.)

use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};

use nightshift::control::Request;
use nightshift::hooks::codex;
use serde_json::Value;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The user's own notify program and its arguments (after `--`), then Codex's JSON.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
    argv: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut argv = args.argv;
    let Some(payload) = argv.pop() else { return Ok(ExitCode::SUCCESS) };
    if argv.first().is_some_and(|a| a == "--") {
        argv.remove(0);
    }
    // Theirs first, and not waited for: nothing of ours may hold it up.
    if let Some((program, rest)) = argv.split_first() {
        let started = Command::new(program)
            .args(rest)
            .arg(&payload)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        if let Err(e) = started {
            tracing::debug!("could not start the user's own notify program {program}: {e}");
        }
    }
    if let Ok(payload) = serde_json::from_str::<Value>(&payload) {
        let file = rollout_of(&payload);
        let (rollout, usage) = (file.is_some(), file.as_deref().and_then(nightshift::usage::codex::read_latest));
        super::hook::forward(|session, token| Request::Notify {
            session,
            token: token.into(),
            payload,
            rollout,
            usage,
        });
    }
    Ok(ExitCode::SUCCESS)
}

/// The rollout file Codex keeps of the notification's thread, in its home as this process (Codex's
/// child) sees it.
fn rollout_of(payload: &Value) -> Option<PathBuf> {
    let thread = payload["thread-id"].as_str()?;
    let home = codex::home(std::env::var_os("CODEX_HOME"), std::env::var_os("HOME").map(PathBuf::from))?;
    codex::rollout(&home, thread)
}
