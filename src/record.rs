//! What the agent did, kept: every life's terminal output with its timing, as an asciicast (v2)
//! gzipped in `<state>/recordings/<session>/life-NNN.cast.gz`. Output only — what is typed into the
//! session is never recorded, so secrets typed there are not either. A session's recordings stop at
//! a size cap (a marker says so), and recordings older than a set number of days are removed when
//! a new one starts.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use flate2::write::GzEncoder;

/// The uncompressed size a session's recordings may reach.
pub const SESSION_CAP: u64 = 64 << 20;
/// Recordings older than this are removed.
pub const KEEP_DAYS: u64 = 14;
/// How often the compressed stream is flushed to disk while output keeps coming (a killed
/// Nightshift loses at most this); it is flushed too when the agent goes idle or asks.
/// Each flush ends a compressed block with a Huffman table of its own: once a second, that was
/// a seventh of what supervising a working session costs.
const FLUSH_EVERY: Duration = Duration::from_secs(5);
/// Pending lines past this size are compressed at once.
const PENDING_MAX: usize = 64 * 1024;

/// `<state>/recordings/<session>/`.
pub fn dir(state_dir: &Path, session: &str) -> PathBuf {
    state_dir.join("recordings").join(session)
}

/// The recording of life `n` (from 1).
pub fn life_file(state_dir: &Path, session: &str, n: u32) -> PathBuf {
    dir(state_dir, session).join(format!("life-{n:03}.cast.gz"))
}

/// The lives recorded for `session`, in order.
pub fn lives(state_dir: &Path, session: &str) -> Vec<(u32, PathBuf)> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(dir(state_dir, session))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let n = name.strip_prefix("life-")?.strip_suffix(".cast.gz")?.parse().ok()?;
            Some((n, e.path()))
        })
        .collect();
    found.sort();
    found
}

/// Removes the sessions' recordings last written more than `days` ago.
pub fn prune(state_dir: &Path, days: u64, now: SystemTime) {
    let Ok(entries) = std::fs::read_dir(state_dir.join("recordings")) else { return };
    let limit = Duration::from_secs(days * 86_400);
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age > limit);
        if old {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// One life's recording, written as the output comes.
pub struct Recorder {
    out: Option<GzEncoder<std::fs::File>>,
    /// Lines not handed to the compressor yet: it is given them once a flush is due, since each
    /// write to it costs as much as a small chunk's whole handling (it clears its output buffer).
    pending: Vec<u8>,
    started: Instant,
    last_flush: Instant,
    /// Bytes of an unfinished UTF-8 sequence, kept for the next chunk.
    carry: Vec<u8>,
    /// Uncompressed bytes written for the session so far (earlier lives included).
    written: u64,
    cap: u64,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").field("written", &self.written).finish_non_exhaustive()
    }
}

impl Recorder {
    /// Starts the recording of the session's next life in a `cols`×`rows` terminal; `None` when it
    /// cannot be written (a warning is logged and the session goes on).
    pub fn start(state_dir: &Path, session: &str, cols: u16, rows: u16, cap: u64) -> Option<Self> {
        prune(state_dir, KEEP_DAYS, SystemTime::now());
        let dir = dir(state_dir, session);
        if let Err(e) = crate::paths::private_dirs(&dir) {
            tracing::warn!("cannot record the session in {}: {e}", dir.display());
            return None;
        }
        let earlier = lives(state_dir, session);
        let written = earlier.iter().filter_map(|(_, p)| std::fs::metadata(p).ok()).map(|m| m.len()).sum::<u64>();
        let n = earlier.last().map_or(1, |(n, _)| n + 1);
        let path = life_file(state_dir, session, n);
        let file = match crate::paths::private_file(&path) {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!("cannot record the session in {}: {e}", path.display());
                return None;
            }
        };
        let mut out = GzEncoder::new(file, flate2::Compression::fast());
        let since_epoch = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
        // asciicast's timestamp is whole seconds; a replay's marks need the start to the millisecond.
        let header = serde_json::json!({
            "version": 2, "width": cols, "height": rows, "timestamp": since_epoch.as_secs(),
            "started_ms": u64::try_from(since_epoch.as_millis()).unwrap_or(u64::MAX),
            "env": {"TERM": "xterm-256color"}, "title": format!("Nightshift session {session}, life {n}"),
        });
        let line = format!("{header}\n");
        let ok = out.write_all(line.as_bytes()).is_ok();
        let now = Instant::now();
        // An earlier life's compressed size stands in for its share of the cap (it is smaller).
        let mut rec = Self {
            out: ok.then_some(out),
            pending: Vec::with_capacity(PENDING_MAX),
            started: now,
            last_flush: now,
            carry: Vec::new(),
            written,
            cap,
        };
        rec.written += line.len() as u64;
        Some(rec)
    }

    fn event(&mut self, kind: &str, data: &str) {
        if self.out.is_none() {
            return;
        }
        let t = self.started.elapsed();
        let from = self.pending.len();
        // `[seconds, "kind", "data"]`, the seconds to the microsecond.
        let _ = write!(self.pending, "[{}.{:06}, \"{kind}\", ", t.as_secs(), t.subsec_micros());
        let _ = serde_json::to_writer(&mut self.pending, data);
        self.pending.extend_from_slice(b"]\n");
        let len = (self.pending.len() - from) as u64;
        if self.written + len > self.cap {
            self.pending.truncate(from);
            let note = format!(
                "[{}.{:06}, \"m\", \"the session's recording cap ({} MB) is reached\"]\n",
                t.as_secs(),
                t.subsec_micros(),
                self.cap >> 20
            );
            self.pending.extend_from_slice(note.as_bytes());
            self.finish();
            return;
        }
        self.written += len;
        if self.pending.len() >= PENDING_MAX || self.last_flush.elapsed() >= FLUSH_EVERY {
            self.flush();
        }
    }

    /// Hands the pending lines to the compressor and its output to the file (at once; on its own,
    /// output is flushed every `FLUSH_EVERY`).
    pub fn flush(&mut self) {
        let Some(out) = &mut self.out else { return };
        if self.pending.is_empty() {
            return;
        }
        let written = out.write_all(&self.pending).and_then(|()| out.flush());
        self.pending.clear();
        self.last_flush = Instant::now();
        if written.is_err() {
            tracing::warn!("the session's recording stopped: the disk refused a write");
            self.out = None;
        }
    }

    /// Output of the agent.
    pub fn output(&mut self, bytes: &[u8]) {
        if self.carry.is_empty() {
            self.output_whole(bytes);
        } else {
            let mut chunk = std::mem::take(&mut self.carry);
            chunk.extend_from_slice(bytes);
            self.output_whole(&chunk);
        }
    }

    /// Records `chunk` but an incomplete UTF-8 sequence at its end, which waits for the rest.
    fn output_whole(&mut self, chunk: &[u8]) {
        let cut = match std::str::from_utf8(chunk) {
            // Most chunks are whole text: read once.
            Ok(text) => {
                if !text.is_empty() {
                    self.event("o", text);
                }
                return;
            }
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => chunk.len(),
        };
        self.carry = chunk[cut..].to_vec();
        if cut > 0 {
            self.event("o", &String::from_utf8_lossy(&chunk[..cut]));
        }
    }

    /// The terminal was resized.
    pub fn resize(&mut self, cols: u16, rows: u16) {
        self.event("r", &format!("{cols}x{rows}"));
    }

    /// Ends the recording (also on drop).
    pub fn finish(&mut self) {
        if let Some(mut out) = self.out.take() {
            let pending = std::mem::take(&mut self.pending);
            if let Err(e) = out.write_all(&pending).and_then(|()| out.finish().map(drop)) {
                tracing::warn!("the session's recording could not be finished: {e}");
            }
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A recording as text: what its screen showed, scrolled off lines first, then the last screen.
pub fn text(path: &Path) -> std::io::Result<String> {
    use std::io::BufRead as _;
    let file = std::fs::File::open(path)?;
    let reader = std::io::BufReader::new(flate2::read::GzDecoder::new(file));
    let mut parser: Option<vt100::Parser> = None;
    // A recording cut short (a killed Nightshift) ends where its last whole line does.
    for line in reader.split(b'\n').map_while(Result::ok) {
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&line) else { continue };
        match (&mut parser, &v) {
            (None, serde_json::Value::Object(h)) => {
                let size = |k: &str, or: u16| {
                    let n = h.get(k).and_then(|x| x.as_u64()).map_or(or, |n| n.clamp(1, 1000) as u16);
                    std::num::NonZeroU16::new(n).unwrap_or(std::num::NonZeroU16::MIN)
                };
                parser = Some(vt100::Parser::new(size("height", 24), size("width", 80), 100_000));
            }
            (Some(p), serde_json::Value::Array(e)) => {
                match (e.get(1).and_then(|k| k.as_str()), e.get(2).and_then(|d| d.as_str())) {
                    (Some("o"), Some(data)) => p.process(data.as_bytes()),
                    (Some("r"), Some(size)) => {
                        let parsed = size.split_once('x').and_then(|(c, r)| {
                            Some((c.parse::<std::num::NonZeroU16>().ok()?, r.parse::<std::num::NonZeroU16>().ok()?))
                        });
                        if let Some((c, r)) = parsed {
                            p.screen_mut().set_size(r, c);
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    let Some(mut parser) = parser else { return Ok(String::new()) };
    let (rows, cols) = parser.screen().size();
    let (rows, cols) = (rows.get(), cols.get());
    parser.screen_mut().set_scrollback(usize::MAX);
    let scrolled = parser.screen().scrollback();
    let mut out = Vec::new();
    for offset in (1..=scrolled).rev() {
        parser.screen_mut().set_scrollback(offset);
        out.extend(parser.screen().rows(0, cols).next());
    }
    parser.screen_mut().set_scrollback(0);
    out.extend(parser.screen().rows(0, cols).take(rows as usize));
    while out.last().is_some_and(|r| r.trim().is_empty()) {
        out.pop();
    }
    Ok(out.iter().map(|r| r.trim_end()).collect::<Vec<_>>().join("\n") + "\n")
}

/// How long a still stretch lasts in a replay: longer ones are cut to this.
pub const IDLE_MAX: f64 = 2.0;

/// A life's recording, to be played back: its frames on the playback's clock, where long still
/// stretches are cut to [`IDLE_MAX`], each with its time in the life too.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Cast {
    pub width: u16,
    pub height: u16,
    /// When the life began, from the recording's header (Unix milliseconds; to the second in a
    /// recording from before they were kept).
    pub started_ms: u64,
    pub frames: Vec<Frame>,
    /// Seconds of playback, to the last frame.
    pub duration: f64,
    /// The recording stops before its end (its Nightshift was killed): it plays to the last flush.
    pub cut_short: bool,
}

/// One output, or resize (`kind` `r`, `data` `COLSxROWS`), of a recording.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Frame {
    /// Seconds into the playback.
    pub t: f64,
    /// Seconds into the life.
    pub real: f64,
    pub kind: String,
    pub data: String,
}

impl Cast {
    /// Where `real` seconds into the life falls in the playback: within a cut stretch, at its end;
    /// after the last frame, at the end.
    pub fn played_at(&self, real: f64) -> f64 {
        match self.frames.iter().rposition(|f| f.real <= real) {
            None => 0.0,
            Some(i) => {
                let f = &self.frames[i];
                let next = self.frames.get(i + 1).map_or(self.duration, |n| n.t);
                (f.t + (real - f.real)).min(next)
            }
        }
    }
}

/// Reads the recording at `path` for playback; a recording cut short gives what it holds.
pub fn cast(path: &Path) -> std::io::Result<Cast> {
    use std::io::Read as _;
    let file = std::fs::File::open(path)?;
    let mut raw = Vec::new();
    let cut_short = flate2::read::GzDecoder::new(file).read_to_end(&mut raw).is_err();
    let mut lines = raw.split(|b| *b == b'\n');
    // A life that has just begun may have nothing saved yet: nothing to play, not a broken file.
    let header: serde_json::Value = match lines.next().and_then(|l| serde_json::from_slice(l).ok()) {
        Some(header) => header,
        None if cut_short || raw.is_empty() => serde_json::Value::Null,
        None => return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "no asciicast header")),
    };
    let size = |k: &str, or: u16| header[k].as_u64().map_or(or, |n| n.clamp(1, 1000) as u16);
    let mut frames = Vec::new();
    let (mut played, mut last_real) = (0.0_f64, 0.0_f64);
    // A line cut in the middle (the last one of a killed recording) does not parse, and is left out.
    for event in lines.filter_map(|l| serde_json::from_slice::<(f64, String, String)>(l).ok()) {
        let (real, kind, data) = event;
        played += (real - last_real).clamp(0.0, IDLE_MAX);
        last_real = real.max(last_real);
        if kind == "o" || kind == "r" {
            frames.push(Frame { t: played, real, kind, data });
        }
    }
    Ok(Cast {
        width: size("width", 80),
        height: size("height", 24),
        started_ms: header["started_ms"].as_u64().unwrap_or_else(|| header["timestamp"].as_u64().unwrap_or(0) * 1000),
        duration: frames.last().map_or(0.0, |f| f.t),
        frames,
        cut_short,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(state: &Path, chunks: &[&[u8]], cap: u64) -> PathBuf {
        let mut rec = Recorder::start(state, "s1", 40, 5, cap).unwrap();
        for c in chunks {
            rec.output(c);
        }
        rec.finish();
        lives(state, "s1").last().unwrap().1.clone()
    }

    #[test]
    fn a_replay_cuts_long_still_stretches_and_plays_a_cut_recording_to_its_last_flush() {
        let state = tempfile::tempdir().unwrap();
        let path = life_file(state.path(), "s1", 1);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let body = "{\"version\": 2, \"width\": 90, \"height\": 30, \"timestamp\": 1764889200}\n\
                    [0.5, \"o\", \"one\"]\n[1.0, \"o\", \"two\"]\n[61.0, \"o\", \"after a minute\"]\n\
                    [61.5, \"r\", \"100x40\"]\n[62.0, \"m\", \"a marker\"]\n";
        // Written as the recorder does: flushed now and then, finished at the end.
        let (first, rest) = body.split_at(body.find("[61.0").unwrap());
        let mut gz = GzEncoder::new(std::fs::File::create(&path).unwrap(), flate2::Compression::fast());
        gz.write_all(first.as_bytes()).unwrap();
        gz.flush().unwrap();
        let flushed = gz.get_ref().metadata().unwrap().len();
        gz.write_all(rest.as_bytes()).unwrap();
        gz.finish().unwrap();
        let c = cast(&path).unwrap();
        assert_eq!((c.width, c.height, c.started_ms, c.cut_short), (90, 30, 1_764_889_200_000, false));
        let at: Vec<(f64, f64, &str)> = c.frames.iter().map(|f| (f.t, f.real, f.data.as_str())).collect();
        assert_eq!(at, [(0.5, 0.5, "one"), (1.0, 1.0, "two"), (3.0, 61.0, "after a minute"), (3.5, 61.5, "100x40")]);
        assert_eq!(c.duration, 3.5);
        assert_eq!(c.played_at(0.75), 0.75);
        assert_eq!(c.played_at(30.0), 3.0, "within a cut stretch: at its end");
        assert!((c.played_at(61.2) - 3.2).abs() < 1e-9);
        assert_eq!(c.played_at(70.0), 3.5, "after the last frame: at the end");

        // A killed Nightshift's recording: the compressed stream stops at its last flush.
        let whole = std::fs::read(&path).unwrap();
        std::fs::write(&path, &whole[..flushed as usize]).unwrap();
        let c = cast(&path).unwrap();
        assert!(c.cut_short);
        let kept: Vec<&str> = c.frames.iter().map(|f| f.data.as_str()).collect();
        assert_eq!(kept, ["one", "two"]);

        // A life just begun, nothing saved yet: nothing to play, and no error.
        std::fs::write(&path, b"").unwrap();
        assert!(cast(&path).unwrap().frames.is_empty());
    }

    #[test]
    fn a_life_is_an_asciicast_with_its_utf8_whole_and_reads_back_as_text() {
        let state = tempfile::tempdir().unwrap();
        // "é" split across two chunks; eight lines through a five-row screen scroll three off.
        let path =
            recorded(state.path(), &[b"caf\xc3", b"\xa9\r\n", b"2\r\n3\r\n4\r\n5\r\n6\r\n7\r\nlast"], SESSION_CAP);
        let raw = flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap());
        let lines: Vec<serde_json::Value> = std::io::BufRead::lines(std::io::BufReader::new(raw))
            .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
            .collect();
        assert_eq!(
            (lines[0]["version"].as_u64(), lines[0]["width"].as_u64(), lines[0]["height"].as_u64()),
            (Some(2), Some(40), Some(5))
        );
        assert_eq!(lines[1][1], "o");
        assert_eq!(
            (lines[1][2].as_str(), lines[2][2].as_str()),
            (Some("caf"), Some("é\r\n")),
            "é is whole in one event"
        );
        assert_eq!(text(&path).unwrap(), "café\n2\n3\n4\n5\n6\n7\nlast\n");
        assert_eq!(lives(state.path(), "s1").iter().map(|(n, _)| *n).collect::<Vec<_>>(), [1]);
    }

    #[test]
    fn a_recording_still_being_written_is_on_disk_up_to_its_last_flush() {
        let state = tempfile::tempdir().unwrap();
        let mut rec = Recorder::start(state.path(), "s1", 40, 5, SESSION_CAP).unwrap();
        rec.output(b"first\r\n");
        rec.last_flush -= FLUSH_EVERY;
        rec.output(b"second \"quoted\"\r\n");
        // Killed now: what was flushed reads back, though the stream has no end.
        let path = lives(state.path(), "s1").last().unwrap().1.clone();
        assert_eq!(text(&path).unwrap(), "first\nsecond \"quoted\"\n");
        drop(rec);
        assert_eq!(text(&path).unwrap(), "first\nsecond \"quoted\"\n");
    }

    #[test]
    fn the_cap_stops_a_recording_with_a_marker_and_old_recordings_are_pruned() {
        let state = tempfile::tempdir().unwrap();
        let big = vec![b'x'; 4096];
        let chunks: Vec<&[u8]> = (0..100).map(|_| big.as_slice()).collect();
        let path = recorded(state.path(), &chunks, 64 * 1024);
        let raw = flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap());
        let lines: Vec<String> = std::io::BufRead::lines(std::io::BufReader::new(raw)).map(Result::unwrap).collect();
        let size: usize = lines.iter().map(|l| l.len() + 1).sum();
        assert!(size <= 64 * 1024 + 200, "{size}");
        assert!(lines.last().unwrap().contains("recording cap"), "{:?}", lines.last());
        assert!(lines.len() < 20);

        let old = SystemTime::now() + Duration::from_secs((KEEP_DAYS + 1) * 86_400);
        prune(state.path(), KEEP_DAYS, SystemTime::now());
        assert!(dir(state.path(), "s1").exists(), "recent ones stay");
        prune(state.path(), KEEP_DAYS, old);
        assert!(!dir(state.path(), "s1").exists(), "old ones go");
    }
}
