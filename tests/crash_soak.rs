//! The crash soak: headless Nightshift processes (`nightshift run`, `nightshift restore`) killed with
//! SIGKILL at random moments — while the agent starts and works, while it is paused on a usage limit
//! with a resume pending, and while a restore has taken such sessions up again. After every kill the
//! journal passes `PRAGMA integrity_check`, no session is missing, the killed process's agent does
//! not live on, and at the end one restore takes up every session still waiting, each once.
//! The agent is the replay of the real Claude client's limit screens (`examples/replay_agent.rs`).
//! 3 kills by default (one of each); NIGHTSHIFT_SOAK_ROUNDS=20 (`make soak`) for the full soak.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use common::{read_events, replay_agent, wait_for, Env};
use rand::Rng;

fn alive(pid: i64) -> bool {
    !matches!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None), Err(nix::errno::Errno::ESRCH))
}

fn sigkill(child: &mut Child) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    child.wait().unwrap();
}

/// The pids of the agents an events file says were started.
fn agent_pids(events: &Path) -> Vec<i64> {
    read_events(events).iter().filter(|e| e["state"] == "running").filter_map(|e| e["pid"].as_i64()).collect()
}

struct Soak {
    env: Env,
    agent: String,
    limit_capture: String,
    /// Every session started, by id.
    started: Vec<String>,
    /// Sessions left waiting for their limit's reset when their Nightshift was killed.
    waiting: Vec<String>,
    n: usize,
}

impl Soak {
    fn events(&mut self, what: &str) -> PathBuf {
        self.n += 1;
        self.env.path(&format!("{:02}-{what}.jsonl", self.n))
    }

    fn run(&mut self) -> (Child, PathBuf) {
        let events = self.events("run");
        let child = self
            .env
            .cmd(&["run", "--agent", "claude", "--auto-resume", "--events"])
            .arg(&events)
            .args(["--", &self.agent, "stream", &self.limit_capture, "--speed", "4"])
            .env("TZ", "UTC")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        (child, events)
    }

    fn restore(&mut self) -> (Child, PathBuf) {
        let events = self.events("restore");
        let child = self
            .env
            .cmd(&["restore", "--events"])
            .arg(&events)
            .env("TZ", "UTC")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        (child, events)
    }

    /// After a kill: a sound journal with every session in it, and no agent of `events` alive.
    fn check(&self, events: &Path, round: usize) {
        let journal = self.env.state_dir().join("journal.sqlite3");
        let conn = rusqlite::Connection::open(&journal).unwrap();
        let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
        assert_eq!(ok, "ok", "round {round}: integrity_check");
        drop(conn);
        let rows: Vec<serde_json::Value> = serde_json::from_str(&self.env.stdout(&["sessions", "--json"])).unwrap();
        for id in &self.started {
            assert!(rows.iter().any(|r| r["id"] == id.as_str()), "round {round}: session {id} is missing");
        }
        for pid in agent_pids(events) {
            wait_for(
                &format!("round {round}: agent {pid} to end with its Nightshift"),
                Duration::from_secs(10),
                || (!alive(pid)).then_some(()),
            );
        }
    }
}

#[test]
fn nightshift_killed_at_random_moments_loses_nothing_and_runs_no_agent_twice() {
    let rounds: usize = std::env::var("NIGHTSHIFT_SOAK_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let mut soak = Soak {
        env: Env::new(),
        agent: replay_agent().display().to_string(),
        limit_capture: Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/claude-code/2.1.332/limit")
            .display()
            .to_string(),
        started: Vec::new(),
        waiting: Vec::new(),
        n: 0,
    };
    let mut rng = rand::rng();
    let mut kinds = [0usize; 3];
    for round in 0..rounds {
        // A restore only when there is something for it to take up.
        let kind = if round % 3 == 2 && !soak.waiting.is_empty() { 2 } else { round % 3 % 2 };
        kinds[kind] += 1;
        let events = match kind {
            0 => {
                // While the agent starts and draws its first screens.
                let (mut child, events) = soak.run();
                let id = wait_for("a session", Duration::from_secs(10), || {
                    read_events(&events).first().and_then(|e| e["session"].as_str()).map(str::to_string)
                });
                soak.started.push(id);
                std::thread::sleep(Duration::from_millis(rng.random_range(0..800)));
                sigkill(&mut child);
                events
            }
            1 => {
                // Paused on the limit, the resume pending.
                let (mut child, events) = soak.run();
                wait_for("idle", Duration::from_secs(15), || {
                    read_events(&events).iter().any(|e| e["state"] == "idle").then_some(())
                });
                let id = read_events(&events)[0]["session"].as_str().unwrap().to_string();
                soak.started.push(id.clone());
                soak.env.stdout(&["send", &id, "hit the limit mock:limit", "--enter"]);
                wait_for("the resume armed", Duration::from_secs(15), || {
                    read_events(&events).iter().any(|e| e["event"] == "resume_armed").then_some(())
                });
                std::thread::sleep(Duration::from_millis(rng.random_range(0..400)));
                sigkill(&mut child);
                soak.waiting.push(id);
                events
            }
            _ => {
                // A restore that has taken the waiting sessions up again.
                let (mut child, events) = soak.restore();
                let want = soak.waiting.len();
                wait_for("every waiting session re-armed", Duration::from_secs(20), || {
                    let armed = read_events(&events).iter().filter(|e| e["event"] == "resume_armed").count();
                    (armed >= want).then_some(())
                });
                std::thread::sleep(Duration::from_millis(rng.random_range(0..400)));
                sigkill(&mut child);
                events
            }
        };
        soak.check(&events, round);
    }

    // The last restore takes up every session still waiting, each once, each with one agent.
    let (mut child, events) = soak.restore();
    let want = soak.waiting.len();
    let armed = wait_for("every waiting session re-armed", Duration::from_secs(30), || {
        let armed: Vec<String> = read_events(&events)
            .iter()
            .filter(|e| e["event"] == "resume_armed")
            .map(|e| e["session"].as_str().unwrap().to_string())
            .collect();
        (armed.len() >= want).then_some(armed)
    });
    let mut restored = armed.clone();
    restored.sort();
    restored.dedup();
    assert_eq!(restored.len(), armed.len(), "a session armed twice: {armed:?}");
    let mut waiting = soak.waiting.clone();
    waiting.sort();
    assert_eq!(restored, waiting, "the sessions left waiting are the ones restored");
    let agents: Vec<i64> = agent_pids(&events).into_iter().filter(|p| alive(*p)).collect();
    assert_eq!(agents.len(), want, "one live agent per restored session: {agents:?}");
    for id in &soak.waiting {
        soak.env.stdout(&["stop", id]);
    }
    let status = wait_for("the restore to end", Duration::from_secs(20), || child.try_wait().unwrap());
    assert!(status.success(), "{status:?}");
    println!(
        "crash soak: {rounds} SIGKILLs survived ({} while starting or working, {} limit-paused with a resume \
         pending, {} of a restore); {} sessions, {} restored at the end, each once",
        kinds[0],
        kinds[1],
        kinds[2],
        soak.started.len(),
        want
    );
}
