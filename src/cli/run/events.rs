//! The `--events` stream of `run` (and of `loop` and `restore`): every event as a JSON line, from a
//! queue of its own so a reader that stops reading never holds up a session.

use std::fs::OpenOptions;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;

/// The `--events` stream: each event a JSON line, flushed per line, written by a thread of its own
/// from a bounded queue, so a reader that stops reading (a stalled pipe) never holds up the journal
/// or a session. What the queue cannot take is dropped and counted, and the stream says so where it
/// happened: `{"event":"events_dropped","count":N}`. The journal keeps every event all the same.
#[derive(Clone)]
pub(crate) struct EventWriter {
    queue: std::sync::mpsc::SyncSender<Line>,
    dropped: Arc<std::sync::atomic::AtomicU64>,
    done: Arc<(Mutex<bool>, std::sync::Condvar)>,
}

enum Line {
    Event(String),
    Dropped { ts: String, count: u64 },
    End,
}

/// Lines the stream holds for a slow reader before it drops them.
const EVENTS_QUEUED: usize = 10_000;

impl EventWriter {
    fn new(out: Box<dyn Write + Send>) -> anyhow::Result<Self> {
        Self::queued(out, EVENTS_QUEUED)
    }

    /// A stream that holds `queued` lines for its reader.
    fn queued(mut out: Box<dyn Write + Send>, queued: usize) -> anyhow::Result<Self> {
        let (queue, lines) = std::sync::mpsc::sync_channel::<Line>(queued);
        let done = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
        let finished = Arc::clone(&done);
        std::thread::Builder::new()
            .name("events".into())
            .spawn(move || {
                for line in lines {
                    let text = match line {
                        Line::Event(text) => text,
                        Line::Dropped { ts, count } => {
                            serde_json::json!({"ts": ts, "session": "", "event": "events_dropped", "count": count})
                                .to_string()
                        }
                        Line::End => break,
                    };
                    if writeln!(out, "{text}").and_then(|()| out.flush()).is_err() {
                        break;
                    }
                }
                let (lock, ended) = &*finished;
                *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
                ended.notify_all();
            })
            .context("cannot start the thread that writes the events")?;
        Ok(Self { queue, dropped: Arc::default(), done })
    }

    /// Queues `event`'s line; never waits.
    pub(super) fn send(&self, event: &nightshift::Event) {
        use std::sync::atomic::Ordering;
        let dropped = self.dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            let ts = nightshift::clock::format_ts(event.ts);
            if self.queue.try_send(Line::Dropped { ts, count: dropped }).is_err() {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            self.dropped.fetch_sub(dropped, Ordering::Relaxed);
        }
        if self.queue.try_send(Line::Event(event.to_json())).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Writes what is queued, waiting at most `within` for a slow reader.
    pub(super) fn finish(&self, within: Duration) {
        use std::sync::atomic::Ordering;
        let dropped = self.dropped.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            let ts = nightshift::clock::format_ts(chrono::Utc::now());
            send_within(&self.queue, Line::Dropped { ts, count: dropped }, within);
        }
        send_within(&self.queue, Line::End, within);
        let (lock, ended) = &*self.done;
        let done = lock.lock().unwrap_or_else(|p| p.into_inner());
        let _ = ended.wait_timeout_while(done, within, |done| !*done);
    }
}

/// `SyncSender::send` bounded in time (std has none): tried until `within` passes.
fn send_within<T>(queue: &std::sync::mpsc::SyncSender<T>, mut value: T, within: Duration) -> bool {
    let until = std::time::Instant::now() + within;
    loop {
        match queue.try_send(value) {
            Ok(()) => return true,
            Err(std::sync::mpsc::TrySendError::Full(v)) if std::time::Instant::now() < until => {
                value = v;
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(_) => return false,
        }
    }
}

pub(crate) fn open_events(target: Option<&str>) -> anyhow::Result<Option<EventWriter>> {
    let writer: Box<dyn Write + Send> = match target {
        None => return Ok(None),
        Some("-") => Box::new(std::io::stdout()),
        Some(path) => Box::new(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open the events file {path}"))?,
        ),
    };
    EventWriter::new(writer).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that takes nothing until it is let go, then everything.
    #[derive(Clone, Default)]
    struct Stalled {
        open: Arc<(Mutex<bool>, std::sync::Condvar)>,
        got: Arc<Mutex<Vec<u8>>>,
    }

    impl Write for Stalled {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let (lock, opened) = &*self.open;
            let _open = opened.wait_while(lock.lock().unwrap(), |open| !*open).unwrap();
            self.got.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_stalled_reader_costs_lines_never_a_wait_and_the_stream_says_how_many() {
        let reader = Stalled::default();
        let stream = EventWriter::queued(Box::new(reader.clone()), 4).unwrap();
        let session = nightshift::event::SessionId::from("s1".to_string());
        let began = std::time::Instant::now();
        for i in 0..50 {
            let kind = nightshift::EventKind::Input { source: format!("key {i}"), chars: 1, enter: false };
            stream.send(&nightshift::Event { ts: chrono::Utc::now(), session: session.clone(), kind });
        }
        assert!(began.elapsed() < Duration::from_secs(1), "the sends waited for the reader");
        *reader.open.0.lock().unwrap() = true;
        reader.open.1.notify_all();
        stream.finish(Duration::from_secs(5));
        let text = String::from_utf8(reader.got.lock().unwrap().clone()).unwrap();
        let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let streamed = lines.iter().filter(|l| l["event"] == "input").count() as u64;
        let dropped: u64 =
            lines.iter().filter(|l| l["event"] == "events_dropped").map(|l| l["count"].as_u64().unwrap()).sum();
        assert!(dropped > 0 && streamed >= 4, "{text}");
        assert_eq!(streamed + dropped, 50, "{text}");
    }
}
