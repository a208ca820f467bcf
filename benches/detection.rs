//! Detection latency against the real Claude Code client: how long after the mock API sent the last
//! byte of a turn does the session's `idle` event arrive? Runs several turns through
//! `nightshift run --agent claude` and prints each figure and the median. Needs the client
//! (`make claude-client`); run with `make bench`.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/mock_api/mod.rs"]
mod mock_api;

use std::time::{Duration, SystemTime};

use common::claude::{client, ClaudeRun, Options};

const TURNS: usize = 7;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let Some(claude) = client() else {
        eprintln!("detection benchmark skipped: no client");
        return;
    };
    let mock = mock_api::MockApi::start().await;
    let run = ClaudeRun::start(&claude, &mock.base_url(), Options::default());
    let (mut seen, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    let mut latencies = Vec::new();
    let mut starts = Vec::new();
    for turn in 0..TURNS {
        let sent = SystemTime::now();
        run.send(&format!("turn {turn} mock:slow:3"), true);
        let (w, working_at, _) = run.wait_state("working", seen + 1, Duration::from_secs(20));
        let (i, idle_at, _) = run.wait_state("idle", w + 1, Duration::from_secs(30));
        seen = i;
        let request =
            mock.messages().into_iter().rev().find(|r| r.last_user.contains(&format!("turn {turn} "))).unwrap();
        let done = request.done_at.expect("the stream finished");
        let latency = idle_at.duration_since(done).unwrap_or_default().as_secs_f64();
        let start = working_at.duration_since(sent).unwrap_or_default().as_secs_f64();
        println!("turn {turn}: working {start:.2} s after Enter; idle {latency:.2} s after the last byte");
        latencies.push(latency);
        starts.push(start);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "detection latency, median of {TURNS} real turns: idle {:.2} s after the turn's last byte (quiet window 2.0 s); \
         working {:.2} s after Enter",
        median(&mut latencies),
        median(&mut starts)
    );
}
