//! Agent output at its worst, through the real binary and a real PTY: random bytes as fast as the
//! PTY takes them, 10,000-column lines, invalid UTF-8, a megabyte title, alternate-screen storms.
//! Nightshift does not panic, its memory stays bounded, and its control socket answers meanwhile.
//! 8 MB of random bytes by default; NIGHTSHIFT_STORM_MB=100 for the full figure.

use crate::common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{read_events, wait_for, Env};

#[test]
fn a_storm_of_the_worst_output_is_survived_in_bounded_memory_with_the_socket_answering() {
    let env = Env::new();
    let mb: u64 = std::env::var("NIGHTSHIFT_STORM_MB").ok().and_then(|v| v.parse().ok()).unwrap_or(8);
    let done = env.path("storm-done");
    let script = format!(
        r#"
printf '%*s\n' 10000 '' | tr ' ' x
for i in $(seq 200); do printf '\xff\xfe\xc3\x28\xed\xa0\x80 not utf-8 \xf0\x28\x8c\xbc\n'; done
printf '\033]0;'; head -c 1048576 /dev/zero | tr '\0' T; printf '\007'
for i in $(seq 2000); do printf '\033[?1049h\033[2J\033[1;1Hstorm %d\033[?1049l' $i; done
head -c {bytes} /dev/urandom
printf '\033[?1049l\033c'
touch {done}
exec sleep 60
"#,
        bytes = mb << 20,
        done = done.display()
    );
    let events = env.path("events.jsonl");
    let mut run = env
        .cmd(&["run", "--events", events.to_str().unwrap(), "--", "bash", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let session = wait_for("the session to start", Duration::from_secs(10), || {
        read_events(&events)
            .iter()
            .find(|e| e["state"] == "running")
            .map(|e| e["session"].as_str().unwrap().to_string())
    });
    // The socket answers while the storm goes on.
    let mut slowest = Duration::ZERO;
    let mut asked = 0;
    let started = Instant::now();
    while !done.exists() {
        assert!(started.elapsed() < Duration::from_secs(300), "the storm never ended");
        let t = Instant::now();
        let out = env.output(&["screen", &session]);
        assert!(out.status.success(), "screen during the storm: {}", String::from_utf8_lossy(&out.stderr));
        slowest = slowest.max(t.elapsed());
        asked += 1;
        std::thread::sleep(Duration::from_millis(200));
    }
    let storm = started.elapsed();
    // Let Nightshift take the rest of what the PTY holds, then read its peak.
    std::thread::sleep(Duration::from_secs(1));
    let out = env.output(&["screen", &session]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let peak = common::peak_rss_kb(run.id()).unwrap();
    println!(
        "output storm: {mb} MB of random bytes and the rest in {:.1} s; peak RSS {} MB; {asked} screen requests \
         meanwhile, the slowest {} ms",
        storm.as_secs_f64(),
        peak / 1024,
        slowest.as_millis()
    );
    assert!(run.try_wait().unwrap().is_none(), "nightshift runs on");
    assert!(peak < 96 * 1024, "peak RSS {peak} kB");
    assert!(slowest < Duration::from_secs(3), "the slowest screen request took {slowest:?}");

    let stopped = env.output(&["stop", &session]);
    assert!(stopped.status.success(), "{}", String::from_utf8_lossy(&stopped.stderr));
    let out = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}
