//! What supervising working sessions costs, side by side in one run: N sessions (1, 10, 50 by
//! default; `BENCH_SESSIONS=1,10`), each a fake agent replaying the real client's working turn with
//! its timing (`tests/fixtures/claude-code/2.1.332/working`, looped), run
//!
//! - (a) in one supervisor process (`examples/bench_host.rs`: the app's core, as the tray app hosts
//!   them),
//! - (b) as N headless `nightshift run --agent claude` processes,
//! - (c) the tmux way: one tmux server with the same replays, probed with `tmux capture-pane -p`
//!   every 1.5 s per session (the probes' processes and this process's time spawning them count).
//!
//! For each: CPU per session (% of one core, from each task's `/proc/…/schedstat` run time), RSS
//! for the whole and per session, wake-ups per second (context switches of the supervising
//! processes, the probes for tmux), and the ratio of CPU to tmux's. Then the idle-detection latency:
//! from a replayed turn's last byte to the session's `idle` (Nightshift, its 2 s quiet window) and to
//! the probe loop seeing the pane unchanged for the same 2 s (tmux). `BENCH_SECONDS` (default 20)
//! is each measurement's window. Run with `make bench-sessions` (or `make bench`).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

const PROBE_EVERY: Duration = Duration::from_millis(1500);
const QUIET: Duration = Duration::from_secs(2);

fn release_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_nightshift")).parent().unwrap().to_path_buf()
}

fn capture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code/2.1.332/working")
}

fn replay(looped: bool, log: Option<&Path>) -> Vec<String> {
    let mut argv = vec![
        release_dir().join("examples/replay_agent").display().to_string(),
        "stream".into(),
        capture().display().to_string(),
    ];
    if looped {
        argv.extend(["--loop".into(), "work0:work1".into()]);
    }
    if let Some(log) = log {
        argv.extend(["--log".into(), log.display().to_string()]);
    }
    argv
}

/// Run time (ns) and context switches of a process's live tasks.
fn usage_of(pid: u32) -> (u64, u64) {
    let (mut ns, mut switches) = (0, 0);
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return (0, 0) };
    for task in tasks.flatten() {
        let p = task.path();
        if let Some(run) = std::fs::read_to_string(p.join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()))
        {
            ns += run;
        }
        for line in std::fs::read_to_string(p.join("status")).unwrap_or_default().lines() {
            if let Some(v) =
                line.strip_prefix("voluntary_ctxt_switches:").or(line.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                switches += v.trim().parse::<u64>().unwrap_or(0);
            }
        }
    }
    (ns, switches)
}

fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
        .unwrap_or(0)
}

/// This process's own CPU and its waited children's, in ns.
fn self_and_children_ns() -> u64 {
    let t = |who| {
        let u = nix::sys::resource::getrusage(who).unwrap();
        let tv = |v: nix::sys::time::TimeVal| v.tv_sec() as u64 * 1_000_000_000 + v.tv_usec() as u64 * 1000;
        tv(u.user_time()) + tv(u.system_time())
    };
    t(nix::sys::resource::UsageWho::RUSAGE_SELF) + t(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
}

struct Row {
    mode: &'static str,
    n: usize,
    cpu_pct_per_session: f64,
    rss_total_mb: f64,
    rss_per_session_mb: f64,
    wakeups_per_s: f64,
}

impl Row {
    /// From `ns` of CPU and `wakeups` over `secs`, for `n` sessions using `rss_mb` in all.
    fn new(mode: &'static str, n: usize, ns: u64, wakeups: u64, secs: f64, rss_mb: f64) -> Self {
        Self {
            mode,
            n,
            cpu_pct_per_session: ns as f64 / 1e9 / secs / n as f64 * 100.0,
            rss_total_mb: rss_mb,
            rss_per_session_mb: rss_mb / n as f64,
            wakeups_per_s: wakeups as f64 / secs,
        }
    }
}

/// Sleeps out the measurement's window.
fn wait_out(until: Instant) {
    std::thread::sleep(until.saturating_duration_since(Instant::now()));
}

struct State {
    dir: tempfile::TempDir,
}

impl State {
    fn env(&self, cmd: &mut Command) {
        let d = self.dir.path();
        cmd.env("NIGHTSHIFT_STATE_DIR", d.join("state"))
            .env("NIGHTSHIFT_RUNTIME_DIR", d.join("run"))
            .env("NIGHTSHIFT_CONFIG_DIR", d.join("config"))
            .current_dir(d);
    }
}

/// Measures `pids` over the window after a warm-up, while `during` runs (until the window's end):
/// their CPU (ns), their context switches, and the window's length in seconds.
fn measure(pids: &[u32], window: Duration, mut during: impl FnMut(Instant)) -> (u64, u64, f64) {
    std::thread::sleep(Duration::from_secs(3));
    let before: Vec<_> = pids.iter().map(|p| usage_of(*p)).collect();
    let start = Instant::now();
    during(start + window);
    let secs = start.elapsed().as_secs_f64();
    let after: Vec<_> = pids.iter().map(|p| usage_of(*p)).collect();
    let ns = after.iter().zip(&before).map(|(a, b)| a.0.saturating_sub(b.0)).sum();
    let sw = after.iter().zip(&before).map(|(a, b)| a.1.saturating_sub(b.1)).sum();
    (ns, sw, secs)
}

fn supervisor_row(state: &State, n: usize, window: Duration) -> Row {
    let mut cmd = Command::new(release_dir().join("examples/bench_host"));
    cmd.arg(n.to_string()).arg("--").args(replay(true, None)).stdin(Stdio::piped()).stdout(Stdio::piped());
    state.env(&mut cmd);
    let mut host = cmd.spawn().expect("bench_host (make bench-sessions builds it)");
    let mut lines = BufReader::new(host.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().and_then(Result::ok).as_deref(), Some("ready"));
    let pid = host.id();
    let (ns, sw, secs) = measure(&[pid], window, wait_out);
    let rss = rss_kb(pid) as f64 / 1024.0;
    drop(host.stdin.take());
    let _ = host.wait();
    Row::new("one supervisor", n, ns, sw, secs, rss)
}

fn headless_row(state: &State, n: usize, window: Duration) -> Row {
    let mut runs: Vec<Child> = (0..n)
        .map(|_| {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_nightshift"));
            cmd.args(["run", "--agent", "claude", "--no-hooks", "--cols", "120", "--rows", "40", "--"])
                .args(replay(true, None))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            state.env(&mut cmd);
            cmd.spawn().expect("nightshift run")
        })
        .collect();
    let pids: Vec<u32> = runs.iter().map(Child::id).collect();
    let (ns, sw, secs) = measure(&pids, window, wait_out);
    let rss: f64 = pids.iter().map(|p| rss_kb(*p) as f64 / 1024.0).sum();
    for r in &mut runs {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(r.id() as i32), nix::sys::signal::Signal::SIGTERM);
    }
    for r in &mut runs {
        let _ = r.wait();
    }
    Row::new("headless runs", n, ns, sw, secs, rss)
}

fn tmux(socket: &Path, args: &[&str]) -> std::process::Output {
    Command::new("tmux").arg("-S").arg(socket).args(args).output().expect("tmux")
}

fn start_tmux(state: &State, n: usize, looped: bool, log: Option<&Path>) -> (PathBuf, u32, Vec<String>) {
    let socket = state.dir.path().join(format!("tmux-{n}-{looped}"));
    let command =
        replay(looped, log).iter().map(|a| format!("'{}'", a.replace('\'', "'\\''"))).collect::<Vec<_>>().join(" ");
    let out = tmux(&socket, &["-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "40", "-s", "s0", &command]);
    assert!(out.status.success(), "tmux: {}", String::from_utf8_lossy(&out.stderr));
    let mut targets = vec!["s0".to_string()];
    for i in 1..n {
        let name = format!("s{i}");
        let out = tmux(&socket, &["new-session", "-d", "-x", "120", "-y", "40", "-s", &name, &command]);
        assert!(out.status.success(), "tmux: {}", String::from_utf8_lossy(&out.stderr));
        targets.push(name);
    }
    let pid: u32 =
        String::from_utf8_lossy(&tmux(&socket, &["display-message", "-p", "#{pid}"]).stdout).trim().parse().unwrap();
    (socket, pid, targets)
}

/// One round of the probe loop: `capture-pane -p` of each target, spread over the interval.
fn probe_until(socket: &Path, targets: &[String], until: Instant, mut seen: impl FnMut(usize, String)) {
    let mut next = Instant::now();
    while Instant::now() < until {
        for (i, t) in targets.iter().enumerate() {
            let out = tmux(socket, &["capture-pane", "-p", "-t", t]);
            seen(i, String::from_utf8_lossy(&out.stdout).into_owned());
        }
        next += PROBE_EVERY;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
}

fn tmux_row(state: &State, n: usize, window: Duration) -> Row {
    let (socket, server, targets) = start_tmux(state, n, true, None);
    let mut probes = 0u64;
    let mut probe_ns = 0u64;
    let (ns, sw, secs) = measure(&[server], window, |until| {
        let before = self_and_children_ns();
        probe_until(&socket, &targets, until, |_, _| probes += 1);
        probe_ns = self_and_children_ns() - before;
    });
    let rss = rss_kb(server) as f64 / 1024.0;
    let _ = tmux(&socket, &["kill-server"]);
    Row::new("tmux + capture-pane", n, ns + probe_ns, sw + probes, secs, rss)
}

fn streamed_at(log: &Path) -> Option<SystemTime> {
    let text = std::fs::read_to_string(log).ok()?;
    let secs: f64 = text.lines().find_map(|l| l.strip_prefix("streamed "))?.parse().ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs_f64(secs))
}

/// From the turn's last byte to Nightshift's `idle`.
fn nightshift_latency(state: &State) -> f64 {
    let log = state.dir.path().join("latency-run.log");
    let events = state.dir.path().join("latency-events.jsonl");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nightshift"));
    cmd.args(["run", "--agent", "claude", "--no-hooks", "--events", events.to_str().unwrap(), "--"])
        .args(replay(false, Some(&log)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    state.env(&mut cmd);
    let mut run = cmd.spawn().expect("nightshift run");
    // The replay waits for the line the user typed in the capture.
    let id = loop {
        std::thread::sleep(Duration::from_millis(200));
        let text = std::fs::read_to_string(&events).unwrap_or_default();
        if let Some(id) = text.lines().next().and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok()) {
            break id["session"].as_str().unwrap().to_string();
        }
    };
    std::thread::sleep(Duration::from_secs(4));
    let mut send = Command::new(env!("CARGO_BIN_EXE_nightshift"));
    send.args(["send", "--enter", &id, "please work slowly"]);
    state.env(&mut send);
    assert!(send.status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(60);
    let done = loop {
        assert!(Instant::now() < deadline, "the replay never finished");
        if let Some(t) = streamed_at(&log) {
            break t;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let idle = loop {
        assert!(Instant::now() < deadline, "no idle after the turn");
        let text = std::fs::read_to_string(&events).unwrap_or_default();
        let found = text.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).find_map(|e| {
            let ts = chrono::DateTime::parse_from_rfc3339(e["ts"].as_str()?).ok()?;
            (e["event"] == "state" && e["state"] == "idle" && SystemTime::from(ts) > done).then(|| SystemTime::from(ts))
        });
        if let Some(t) = found {
            break t;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(run.id() as i32), nix::sys::signal::Signal::SIGTERM);
    let _ = run.wait();
    idle.duration_since(done).unwrap_or_default().as_secs_f64()
}

/// From the turn's last byte to the probe loop seeing the pane unchanged for the quiet window.
fn tmux_latency(state: &State) -> f64 {
    let log = state.dir.path().join("latency-tmux.log");
    let (socket, _, targets) = start_tmux(state, 1, false, Some(&log));
    std::thread::sleep(Duration::from_secs(4));
    let _ = tmux(&socket, &["send-keys", "-t", "s0", "please work slowly", "Enter"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last: Option<(String, Instant)> = None;
    let mut idle_at = None;
    let mut done = None;
    while idle_at.is_none() && Instant::now() < deadline {
        probe_until(&socket, &targets, Instant::now() + Duration::from_millis(1), |_, screen| {
            let now = Instant::now();
            match &last {
                Some((prev, since)) if *prev == screen => {
                    if done.is_some() && now.duration_since(*since) >= QUIET {
                        idle_at = Some(SystemTime::now());
                    }
                }
                _ => last = Some((screen, now)),
            }
        });
        if done.is_none() {
            done = streamed_at(&log);
        }
    }
    let _ = tmux(&socket, &["kill-server"]);
    let (done, idle) = (done.expect("the replay finished"), idle_at.expect("the probe saw it idle"));
    idle.duration_since(done).unwrap_or_default().as_secs_f64()
}

fn main() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("sessions benchmark skipped: no tmux (apt-get install tmux)");
        return;
    }
    let counts: Vec<usize> = std::env::var("BENCH_SESSIONS")
        .unwrap_or_else(|_| "1,10,50".into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let window = Duration::from_secs(std::env::var("BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(20));
    let state = State { dir: tempfile::tempdir().unwrap() };
    let mut rows = Vec::new();
    for &n in &counts {
        for row in [supervisor_row(&state, n, window), headless_row(&state, n, window), tmux_row(&state, n, window)] {
            eprintln!("  measured {} × {}", row.n, row.mode);
            rows.push(row);
        }
    }
    let ours = nightshift_latency(&state);
    let theirs = tmux_latency(&state);
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "supervising working sessions (the real client's working turn, replayed; {} s windows):",
        window.as_secs()
    );
    let _ = writeln!(
        out,
        "  {:>3}  {:<20} {:>10} {:>10} {:>10} {:>11} {:>9}",
        "N", "mode", "CPU/sess", "RSS", "RSS/sess", "wakeups/s", "vs tmux"
    );
    for chunk in rows.chunks(3) {
        let tmux_cpu = chunk[2].cpu_pct_per_session;
        for r in chunk {
            let _ = writeln!(
                out,
                "  {:>3}  {:<20} {:>9.3}% {:>7.1} MB {:>7.2} MB {:>11.1} {:>8.2}×",
                r.n,
                r.mode,
                r.cpu_pct_per_session,
                r.rss_total_mb,
                r.rss_per_session_mb,
                r.wakeups_per_s,
                if r.cpu_pct_per_session > 0.0 { tmux_cpu / r.cpu_pct_per_session } else { f64::INFINITY }
            );
        }
    }
    let _ = writeln!(
        out,
        "  idle latency after a turn's last byte: nightshift {ours:.2} s, tmux probe loop {theirs:.2} s \
         (quiet window 2.0 s each; probes every 1.5 s)"
    );
}
