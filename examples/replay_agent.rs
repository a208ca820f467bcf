//! A fake agent for tests: it plays back what the real Claude Code client wrote to its terminal,
//! so limit, menu and restart flows run in seconds, without npm or an API.
//!
//! ```text
//! replay_agent stream CAPTURE_DIR [--speed X] [--loop FROM:TO] [--exit CODE] [--log FILE]
//! replay_agent screens FIRST.ansi.txt [--then KEY:NEXT.ansi.txt]... [--exit CODE] [--log FILE]
//! ```
//!
//! `stream` replays a capture's `pty.bin` with the timing of its `pty.idx.jsonl`. Where the capture's
//! `marks.txt` says the user typed a line (`sent:…`), it waits for a line on its input (Enter) and
//! goes on from there, as the client did. `--loop FROM:TO` plays the part between two of its marks
//! over and over without waiting for input (a turn that never ends: `--loop work0:work1`), after
//! drawing at once what came before it (the client's screen as the turn began). `screens` draws a screen capture (and its `.title.txt`
//! title), and on each KEY typed draws the screen given for it (a menu answered). Either way the
//! terminal is raw (the client's own mode), the agent then stays at its last screen until its input
//! closes, or exits with CODE. `--log` appends the argv and every input it read (escaped), for the
//! test to check what Nightshift typed, and `streamed <unix time>` when a stream's last byte is out.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

struct Args {
    mode: String,
    path: PathBuf,
    speed: f64,
    exit: Option<i32>,
    log: Option<PathBuf>,
    then: Vec<(u8, PathBuf)>,
    repeat: Option<(String, String)>,
}

fn parse() -> Result<Args, String> {
    let mut argv = std::env::args().skip(1);
    let mode = argv.next().ok_or("give `stream DIR` or `screens FILE`")?;
    let path = PathBuf::from(argv.next().ok_or("give the capture to play")?);
    let mut args = Args { mode, path, speed: 1.0, exit: None, log: None, then: Vec::new(), repeat: None };
    while let Some(flag) = argv.next() {
        let mut value = || argv.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--speed" => args.speed = value()?.parse().map_err(|e| format!("--speed: {e}"))?,
            "--exit" => args.exit = Some(value()?.parse().map_err(|e| format!("--exit: {e}"))?),
            "--log" => args.log = Some(value()?.into()),
            "--loop" => {
                let v = value()?;
                let (from, to) = v.split_once(':').ok_or("--loop FROM:TO (two of the capture's marks)")?;
                args.repeat = Some((from.to_string(), to.to_string()));
            }
            "--then" => {
                let v = value()?;
                let (key, file) = v.split_once(':').ok_or("--then KEY:FILE")?;
                args.then.push((*key.as_bytes().first().ok_or("--then: an empty key")?, file.into()));
            }
            // Whatever Nightshift adds for the real client (`--continue`, `--settings …`) is logged.
            _ => {}
        }
    }
    Ok(args)
}

struct Agent {
    out: std::io::Stdout,
    input: std::sync::mpsc::Receiver<Vec<u8>>,
    log: Option<std::fs::File>,
}

impl Agent {
    fn write(&mut self, bytes: &[u8]) {
        let _ = self.out.write_all(bytes).and_then(|()| self.out.flush());
    }

    fn logged(&mut self, line: &str) {
        if let Some(log) = &mut self.log {
            let _ = writeln!(log, "{line}");
        }
    }

    /// The next burst of input, logged; `None` once the input is closed.
    fn read(&mut self) -> Option<Vec<u8>> {
        let bytes = self.input.recv().ok()?;
        self.logged(&format!("input {}", bytes.escape_ascii()));
        Some(bytes)
    }

    /// Waits for a line: input until Enter.
    fn line(&mut self) -> bool {
        loop {
            match self.read() {
                Some(bytes) if bytes.iter().any(|b| *b == b'\r' || *b == b'\n') => return true,
                Some(_) => continue,
                None => return false,
            }
        }
    }

    fn draw(&mut self, screen: &Path) {
        let text = std::fs::read_to_string(screen).unwrap_or_default();
        let title = std::fs::read_to_string(screen.with_extension("").with_extension("title.txt")).unwrap_or_default();
        let mut frame = format!("\x1b]0;{}\x07\x1b[H\x1b[2J", title.trim_end());
        frame.push_str(&text.trim_end_matches('\n').replace('\n', "\r\n"));
        self.write(frame.as_bytes());
    }
}

type Chunk = (f64, usize, usize);

fn stream(agent: &mut Agent, dir: &Path, speed: f64, repeat: Option<&(String, String)>) -> Result<(), String> {
    let bytes = std::fs::read(dir.join("pty.bin")).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut chunks: Vec<Chunk> = Vec::new();
    for line in std::fs::read_to_string(dir.join("pty.idx.jsonl")).map_err(|e| e.to_string())?.lines() {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        let field = |k: &str| v[k].as_f64().ok_or(format!("pty.idx.jsonl: no {k}"));
        chunks.push((field("t")?, field("off")? as usize, field("n")? as usize));
    }
    let marks: Vec<(f64, String)> = std::fs::read_to_string(dir.join("marks.txt"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(' ').and_then(|(t, m)| Some((t.parse().ok()?, m.to_string()))))
        .collect();
    if let Some((from, to)) = repeat {
        let at = |name: &str| marks.iter().find(|(_, m)| m == name).map(|(t, _)| *t).ok_or(format!("no mark {name}"));
        let (from, to) = (at(from)?, at(to)?);
        // The screen the client had drawn before the turn (its banner, its composer), at once.
        for (_, off, n) in chunks.iter().filter(|c| c.0 < from) {
            agent.write(&bytes[*off..(off + n).min(bytes.len())]);
        }
        let part: Vec<Chunk> = chunks.into_iter().filter(|c| c.0 >= from && c.0 < to).collect();
        loop {
            play(agent, &bytes, &part, from, speed);
        }
    }
    let sends: Vec<f64> = marks.iter().filter(|(_, m)| m.starts_with("sent:")).map(|(t, _)| *t).collect();
    let t0 = chunks.first().map_or(0.0, |c| c.0);
    let mut start = Instant::now();
    let mut base = t0;
    let mut pending = sends.iter().copied().peekable();
    for (t, off, n) in chunks {
        // The user typed here: wait for Nightshift (or the test) to type too, then go on from there.
        while pending.peek().is_some_and(|s| *s <= t) {
            let sent = pending.next().unwrap_or(t);
            if !agent.line() {
                return Ok(());
            }
            start = Instant::now();
            base = sent;
        }
        let due = start + Duration::from_secs_f64(((t - base) / speed).max(0.0));
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        agent.write(&bytes[off..(off + n).min(bytes.len())]);
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    agent.logged(&format!("streamed {:.3}", now.as_secs_f64()));
    Ok(())
}

/// `chunks` with their timing, from `base` (the capture's time of the first one's due).
fn play(agent: &mut Agent, bytes: &[u8], chunks: &[Chunk], base: f64, speed: f64) {
    let start = Instant::now();
    for (t, off, n) in chunks {
        let due = start + Duration::from_secs_f64(((t - base) / speed).max(0.0));
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        agent.write(&bytes[*off..(off + n).min(bytes.len())]);
    }
}

fn screens(agent: &mut Agent, first: &Path, then: &[(u8, PathBuf)]) {
    agent.draw(first);
    while let Some(bytes) = agent.read() {
        if let Some((_, next)) = then.iter().find(|(key, _)| bytes.contains(key)) {
            agent.draw(next);
        }
    }
}

fn main() {
    let args = match parse() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("replay_agent: {e}");
            std::process::exit(2);
        }
    };
    let stdin = std::io::stdin();
    // The client's own terminal mode: no echo, no line editing, every key as it comes.
    if let Ok(mut mode) = nix::sys::termios::tcgetattr(&stdin) {
        nix::sys::termios::cfmakeraw(&mut mode);
        let _ = nix::sys::termios::tcsetattr(&stdin, nix::sys::termios::SetArg::TCSANOW, &mode);
    }
    let (tx, input) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        let mut stdin = std::io::stdin().lock();
        while let Ok(n) = stdin.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let log = args.log.as_ref().and_then(|p| std::fs::OpenOptions::new().create(true).append(true).open(p).ok());
    let mut agent = Agent { out: std::io::stdout(), input, log };
    agent.logged(&format!("argv {}", std::env::args().collect::<Vec<_>>().join(" ")));
    match args.mode.as_str() {
        "stream" => {
            if let Err(e) = stream(&mut agent, &args.path, args.speed, args.repeat.as_ref()) {
                eprintln!("replay_agent: {e}");
                std::process::exit(2);
            }
        }
        "screens" => screens(&mut agent, &args.path, &args.then),
        other => {
            eprintln!("replay_agent: no mode `{other}`: give `stream DIR` or `screens FILE`");
            std::process::exit(2);
        }
    }
    if let Some(code) = args.exit {
        std::process::exit(code);
    }
    // At the last screen, as the client sits at its prompt, until the terminal goes away.
    while agent.read().is_some() {}
}
