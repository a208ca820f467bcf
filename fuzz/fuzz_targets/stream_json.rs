//! A loop iteration's event stream, line by line: Claude Code's `stream-json` or Codex's
//! `exec --json` (the first byte picks), then the report of how the iteration ended.
#![no_main]

use chrono::{TimeZone, Utc};
use libfuzzer_sys::fuzz_target;
use nightshift::loops::stream::{readable, Reader, MAX_LINE};
use nightshift::AgentKind;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let agent = if pick & 1 == 0 { AgentKind::Claude } else { AgentKind::Codex };
    let text = String::from_utf8_lossy(rest);
    let (stream, stderr) = text.split_once("\u{0}STDERR\u{0}").unwrap_or((&text, ""));
    let mut reader = Reader::new(agent);
    for line in stream.split('\n') {
        if line.len() > MAX_LINE {
            reader.dropped_line();
            continue;
        }
        reader.line(line);
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
            let _ = readable(&v);
        }
    }
    let _ = reader.tokens_so_far();
    let _ = reader.conversation();
    let now = Utc.with_ymd_and_hms(2026, 11, 30, 22, 0, 0).unwrap();
    let code = if pick & 2 == 0 { Some(i32::from(pick >> 2)) } else { None };
    let _ = reader.finish(code, stderr, now, &chrono_tz::Europe::Berlin);
});
