//! The real clients' byte streams replayed with their real timing (each capture's `*.idx.jsonl`
//! says when every chunk arrived) through the screen, the adapter and the detector, in virtual
//! time. The driver's marks (`marks.*`) say when the user acted; the activity must follow.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nightshift::agent::Adapter;
use nightshift::detect::{Activity, DetectConfig, Watcher};
use nightshift::pty::PtySize;
use nightshift::screen::Screen;
use nightshift::AgentKind;
use std::time::Instant;

struct Replay {
    /// (seconds since the first chunk, activity, reason)
    timeline: Vec<(f64, Activity, String)>,
    /// Mark name → seconds since the first chunk.
    marks: Vec<(String, f64)>,
    /// When each chunk arrived, in seconds since the first.
    chunks: Vec<f64>,
}

impl Replay {
    fn mark(&self, prefix: &str) -> f64 {
        self.marks.iter().find(|(m, _)| m.starts_with(prefix)).unwrap_or_else(|| panic!("no mark {prefix}")).1
    }

    /// The activity in force at `t`.
    fn at(&self, t: f64) -> Option<Activity> {
        self.timeline.iter().take_while(|(at, ..)| *at <= t).last().map(|(_, a, _)| *a)
    }

    fn between(&self, from: f64, to: f64) -> Vec<Activity> {
        self.timeline.iter().filter(|(t, ..)| *t > from && *t < to).map(|(_, a, _)| *a).collect()
    }

    fn last_chunk_before(&self, t: f64) -> f64 {
        self.chunks.iter().copied().rfind(|c| *c <= t).unwrap()
    }

    fn show(&self) -> String {
        let mut out: Vec<String> = self.marks.iter().map(|(m, t)| format!("{t:8.3}  mark {m}")).collect();
        out.extend(self.timeline.iter().map(|(t, a, r)| format!("{t:8.3}  {a:?}: {r}")));
        out.sort();
        out.join("\n")
    }
}

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(path)
}

fn replay(agent: AgentKind, dir: &str) -> Replay {
    let dir = fixture(dir);
    let (bin, idx) =
        if dir.join("pty.bin").exists() { ("pty.bin", "pty.idx.jsonl") } else { ("raw.bin", "raw.idx.jsonl") };
    let bytes = std::fs::read(dir.join(bin)).unwrap();
    let chunks: Vec<(f64, usize, usize)> = std::fs::read_to_string(dir.join(idx))
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["t"].as_f64().unwrap(), v["off"].as_u64().unwrap() as usize, v["n"].as_u64().unwrap() as usize)
        })
        .collect();
    let t0 = chunks[0].0;
    let marks = read_marks(&dir).into_iter().map(|(m, t)| (m, t - t0)).collect();

    let base = Instant::now();
    let at = |secs: f64| base + Duration::from_secs_f64(secs.max(0.0));
    let mut screen = Screen::new(PtySize::new(120, 40));
    let mut watcher = Watcher::new(Adapter::builtin(agent), DetectConfig::default(), base);
    let mut timeline = Vec::new();
    let mut record = |now: Instant, t: Option<nightshift::detect::Transition>| {
        if let Some(t) = t {
            timeline.push(((now - base).as_secs_f64(), t.to, t.reason));
        }
    };
    let end = chunks.last().unwrap().0 - t0 + 30.0;
    let mut arrivals = chunks.iter().map(|(t, off, n)| (t - t0, *off, *n)).peekable();
    loop {
        let next_chunk = arrivals.peek().map(|c| at(c.0));
        match (watcher.next_wakeup(), next_chunk) {
            (Some(wake), chunk) if chunk.is_none_or(|c| wake < c) => {
                if wake > at(end) {
                    break;
                }
                record(wake, watcher.wake(wake, &screen));
            }
            (_, Some(when)) => {
                let (_, off, n) = arrivals.next().unwrap();
                screen.feed(&bytes[off..off + n]);
                record(when, watcher.output(when));
            }
            (_, None) => break,
        }
    }
    Replay { timeline, marks, chunks: chunks.iter().map(|c| c.0 - t0).collect() }
}

fn read_marks(dir: &Path) -> Vec<(String, f64)> {
    if let Ok(text) = std::fs::read_to_string(dir.join("marks.txt")) {
        return text
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(t, m)| (m.to_string(), t.parse::<f64>().unwrap()))
            .collect();
    }
    let text = std::fs::read_to_string(dir.join("marks.jsonl")).unwrap();
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["mark"].as_str().unwrap().to_string(), v["t"].as_f64().unwrap())
        })
        .collect()
}

const QUIET: f64 = 2.0;

#[test]
fn claude_slow_answer_is_working_throughout_and_idle_quickly_after() {
    let r = replay(AgentKind::Claude, "claude-code/2.1.332/working");
    let sent = r.mark("sent:");
    let done = r.mark("work1");
    assert_eq!(r.at(sent), Some(Activity::Idle), "idle at the prompt before the turn\n{}", r.show());
    let started = r.timeline.iter().find(|(t, a, _)| *t > sent && *a == Activity::Working).expect("a turn").0;
    assert!(started - sent < 1.5, "the turn is seen within 1.5 s, took {:.2}\n{}", started - sent, r.show());
    let ended = r.timeline.iter().find(|(t, a, _)| *t > started && *a == Activity::Idle).expect("idle after").0;
    assert!(ended > done - 1.0, "no idle in the middle of the 20 s answer\n{}", r.show());
    let last_output = r.last_chunk_before(ended);
    assert!(
        ended - last_output <= QUIET + 0.5,
        "idle {:.2} s after the last output\n{}",
        ended - last_output,
        r.show()
    );
}

#[test]
fn claude_idle_session_stays_idle() {
    let r = replay(AgentKind::Claude, "claude-code/2.1.332/idle");
    let kinds: Vec<Activity> = r.timeline.iter().map(|(_, a, _)| *a).collect();
    assert_eq!(kinds, [Activity::Idle], "{}", r.show());
}

#[test]
fn claude_fast_answer_ends_idle() {
    let r = replay(AgentKind::Claude, "claude-code/2.1.332/fast");
    assert_eq!(r.timeline.last().unwrap().1, Activity::Idle, "{}", r.show());
    assert!(!r.timeline.iter().any(|(_, a, _)| *a == Activity::WaitingInput), "{}", r.show());
}

#[test]
fn claude_clear_init_and_kickstart_settle_idle_after_each() {
    let r = replay(AgentKind::Claude, "claude-code/2.1.332/clear");
    assert_eq!(r.timeline.last().unwrap().1, Activity::Idle, "{}", r.show());
    assert!(!r.timeline.iter().any(|(_, a, _)| *a == Activity::WaitingInput), "{}", r.show());
}

#[test]
fn claude_statusline_session_works_and_idles() {
    let r = replay(AgentKind::Claude, "claude-code/2.1.332/statusline");
    assert!(r.timeline.iter().any(|(_, a, _)| *a == Activity::Working), "{}", r.show());
    assert_eq!(r.timeline.last().unwrap().1, Activity::Idle, "{}", r.show());
}

#[test]
fn codex_streaming_without_a_status_line_is_still_working() {
    let r = replay(AgentKind::Codex, "codex/0.171.0/slow");
    let enter = r.mark("enter");
    let finished = r.mark("finished_seen");
    assert_eq!(r.at(enter), Some(Activity::Idle), "{}", r.show());
    let started = r.timeline.iter().find(|(t, a, _)| *t > enter && *a == Activity::Working).expect("a turn").0;
    assert!(started - enter < 1.5, "{}", r.show());
    // The harness saw the finished line some seconds late; the stream's end is its last output.
    let last_output = r.last_chunk_before(finished);
    assert!(last_output - started > 15.0, "a 20 s stream\n{}", r.show());
    assert!(r.between(started, last_output).is_empty(), "working for the whole stream\n{}", r.show());
    let (ended, activity, _) = r.timeline.last().unwrap();
    assert_eq!(*activity, Activity::Idle, "{}", r.show());
    assert!(ended - last_output <= QUIET + 0.5, "{}", r.show());
}

#[test]
fn codex_reasoning_turn_is_working_until_done() {
    let r = replay(AgentKind::Codex, "codex/0.171.0/think");
    assert!(r.timeline.iter().any(|(_, a, _)| *a == Activity::Working), "{}", r.show());
    assert_eq!(r.timeline.last().unwrap().1, Activity::Idle, "{}", r.show());
}

#[test]
fn generic_reading_of_a_working_claude_stream_follows_output_alone() {
    // What an unknown CLI gets: working while output flows, idle once it has been quiet.
    let r = replay(AgentKind::Generic, "claude-code/2.1.332/working");
    let sent = r.mark("sent:");
    let started = r.timeline.iter().find(|(t, a, _)| *t > sent && *a == Activity::Working).expect("a turn").0;
    assert!(started - sent < 1.5, "{}", r.show());
    assert_eq!(r.timeline.last().unwrap().1, Activity::Idle, "{}", r.show());
}
