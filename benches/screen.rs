//! The screen pipeline's throughput on real client output: every captured byte stream in
//! `tests/fixtures` fed through the vt100 model in the chunks the client really wrote, with a
//! snapshot taken after each chunk (what a session does when it judges a frame). Prints MB/s on one
//! core. Run with `make bench`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nightshift::agent::Adapter;
use nightshift::pty::PtySize;
use nightshift::screen::Screen;
use nightshift::AgentKind;

struct Capture {
    name: String,
    chunks: Vec<Vec<u8>>,
}

fn captures(root: &Path) -> Vec<Capture> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if matches!(path.file_name().and_then(|n| n.to_str()), Some("pty.bin" | "raw.bin")) {
                found.push(load(&path));
            }
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// The stream split where the client's writes were read (`*.idx.jsonl`), or in 4 KiB pieces.
fn load(bin: &Path) -> Capture {
    let bytes = std::fs::read(bin).expect("read capture");
    let idx: PathBuf = bin.with_extension("idx.jsonl");
    let mut chunks = Vec::new();
    if let Ok(text) = std::fs::read_to_string(&idx) {
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("index line");
            let (off, n) = (v["off"].as_u64().unwrap() as usize, v["n"].as_u64().unwrap() as usize);
            chunks.push(bytes[off..off + n].to_vec());
        }
    } else {
        chunks = bytes.chunks(4096).map(<[u8]>::to_vec).collect();
    }
    let name = bin.parent().unwrap().strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap_or(bin).display().to_string();
    Capture { name, chunks }
}

/// MB/s of output through the screen, calling `per_chunk` after every chunk, over about 2 s.
fn throughput(captures: &[Capture], per_chunk: impl Fn(&Screen)) -> f64 {
    let mut elapsed = Duration::ZERO;
    let mut bytes = 0usize;
    while elapsed < Duration::from_secs(2) {
        for capture in captures {
            let start = Instant::now();
            let mut screen = Screen::new(PtySize::new(120, 40));
            for chunk in &capture.chunks {
                screen.feed(chunk);
                per_chunk(&screen);
            }
            elapsed += start.elapsed();
            bytes += capture.chunks.iter().map(Vec::len).sum::<usize>();
        }
    }
    bytes as f64 / 1e6 / elapsed.as_secs_f64()
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let captures = captures(&root);
    assert!(!captures.is_empty(), "no captures under {}", root.display());
    let total: usize = captures.iter().flat_map(|c| &c.chunks).map(Vec::len).sum();
    println!("screen pipeline: {} captures, {:.2} MB of real client output", captures.len(), total as f64 / 1e6);

    let feed_only = throughput(&captures, |_| {});
    println!("vt100 only:                    {feed_only:>7.1} MB/s per core");
    let text = throughput(&captures, |s| {
        std::hint::black_box(s.snapshot());
    });
    println!("vt100 + text snapshot/chunk:   {text:>7.1} MB/s per core");
    let styled = throughput(&captures, |s| {
        std::hint::black_box(s.styled_snapshot());
    });
    println!("vt100 + styled snapshot/chunk: {styled:>7.1} MB/s per core");
    // What a session does: every chunk through vt100, and each frame (here: every chunk, the worst
    // case) snapshotted and judged by the Claude adapter.
    let adapter = Adapter::builtin(AgentKind::Claude);
    let classify = throughput(&captures, |s| {
        std::hint::black_box(adapter.classify(&s.snapshot()));
    });
    println!("vt100 + classify per chunk:    {classify:>7.1} MB/s per core");
    for capture in &captures {
        let start = Instant::now();
        let mut screen = Screen::new(PtySize::new(120, 40));
        for chunk in &capture.chunks {
            screen.feed(chunk);
            std::hint::black_box(screen.snapshot());
        }
        let n: usize = capture.chunks.iter().map(Vec::len).sum();
        println!(
            "  {:<45} {:>8} bytes {:>6} chunks {:>8.1} µs/chunk",
            capture.name,
            n,
            capture.chunks.len(),
            start.elapsed().as_secs_f64() * 1e6 / capture.chunks.len() as f64
        );
    }
}
