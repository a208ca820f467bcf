//! Detection latency against the real Claude Code client: how long after the mock API sent the last
//! byte of a turn does the session's `idle` event arrive — with the client's hooks (the default) and
//! with the screen alone (`--no-hooks`)? Then the price of a hook on the agent's path: the time
//! `nightshift hook` takes to hand a `PreToolUse` payload to the live session and bring its answer
//! back, which the client waits out on every tool call. Prints each figure and the medians. Needs
//! the client (`make claude-client`); run with `make bench`.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/mock_api/mod.rs"]
mod mock_api;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use common::claude::{client, ClaudeRun, Options};

const TURNS: usize = 7;
const HOOK_CALLS: usize = 40;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let Some(claude) = client() else {
        eprintln!("detection benchmark skipped: no client");
        return;
    };
    let mock = mock_api::MockApi::start().await.expect("the stand-in API starts");
    let mut summary = Vec::new();
    for (label, run_args) in [("with hooks", &[][..]), ("screen only", &["--no-hooks"][..])] {
        let run = ClaudeRun::start(&claude, &mock.base_url(), Options { run_args, ..Default::default() });
        let (idle, working) = turns(&run, &mock, label).await;
        summary
            .push(format!("{label}: idle {idle:.2} s after the turn's last byte, working {working:.2} s after Enter"));
        if label == "with hooks" {
            summary.push(hook_round_trips(&run));
        }
    }
    println!("detection latency, median of {TURNS} real turns each (quiet window 2.0 s):");
    for line in summary {
        println!("  {line}");
    }
}

/// Medians of the idle latency after the stream and the working latency after Enter.
async fn turns(run: &ClaudeRun, mock: &mock_api::MockApi, label: &str) -> (f64, f64) {
    let (mut seen, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    let mut latencies = Vec::new();
    let mut starts = Vec::new();
    for turn in 0..TURNS {
        let marker = format!("{label} turn {turn} ");
        let sent = SystemTime::now();
        run.send(&format!("{marker}mock:slow:3"), true);
        let (w, working_at, _) = run.wait_state("working", seen + 1, Duration::from_secs(20));
        let (i, idle_at, _) = run.wait_state("idle", w + 1, Duration::from_secs(30));
        seen = i;
        let request = mock.messages().into_iter().rev().find(|r| r.last_user.contains(&marker)).unwrap();
        let done = request.done_at.expect("the stream finished");
        let latency = idle_at.duration_since(done).unwrap_or_default().as_secs_f64();
        let start = working_at.duration_since(sent).unwrap_or_default().as_secs_f64();
        println!("{label}, turn {turn}: working {start:.2} s after Enter; idle {latency:.2} s after the last byte");
        latencies.push(latency);
        starts.push(start);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    (median(&mut latencies), median(&mut starts))
}

/// Runs `nightshift hook` the way the client does — its environment, a `PreToolUse` payload on
/// stdin — against the live session, and times each call to its answer.
fn hook_round_trips(run: &ClaudeRun) -> String {
    let pid = run
        .events()
        .into_iter()
        .find_map(|e| (e["event"] == "state" && e["state"] == "running").then(|| e["pid"].as_u64()).flatten())
        .expect("the client's pid");
    let environ = std::fs::read(format!("/proc/{pid}/environ")).expect("the client's environment");
    let env: Vec<(String, String)> = environ
        .split(|b| *b == 0)
        .filter_map(|kv| std::str::from_utf8(kv).ok()?.split_once('='))
        .filter(|(k, _)| k.starts_with("NIGHTSHIFT_"))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert!(env.iter().any(|(k, _)| k == "NIGHTSHIFT_TOKEN"), "the client was given the session's token");
    let payload = format!(
        r#"{{"session_id":"bench","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{{"command":"ls"}},"cwd":"{}"}}"#,
        run.workdir.display()
    );
    let mut took = Vec::new();
    for _ in 0..HOOK_CALLS {
        let mut cmd = Command::new(common::bin());
        cmd.arg("hook").envs(env.iter().cloned()).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        let started = Instant::now();
        let mut child = cmd.spawn().unwrap();
        child.stdin.take().unwrap().write_all(payload.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        took.push(started.elapsed().as_secs_f64() * 1000.0);
        assert!(out.status.success(), "{out:?}");
    }
    let p50 = median(&mut took);
    let p95 = took[took.len() * 95 / 100];
    let max = took[took.len() - 1];
    format!(
        "hook round trip (PreToolUse, process start to answer), {HOOK_CALLS} calls: median {p50:.1} ms, \
         p95 {p95:.1} ms, max {max:.1} ms"
    )
}

/// Sorts `v` and returns its median.
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
