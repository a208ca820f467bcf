//! The screen pipeline: arbitrary PTY bytes, in chunks and with resizes, through vt100, the
//! snapshot, and the Claude, Codex and generic adapters (verdict, limit region, the limit parser on
//! it, the title, the usage-limit menu); a frame, which reads rows only when asked, must judge as
//! the snapshot does.
#![no_main]

use chrono::{TimeZone, Utc};
use libfuzzer_sys::fuzz_target;
use nightshift::agent::Adapter;
use nightshift::pty::PtySize;
use nightshift::screen::Screen;
use nightshift::AgentKind;
use std::sync::OnceLock;

fn adapters() -> &'static [Adapter] {
    static ADAPTERS: OnceLock<Vec<Adapter>> = OnceLock::new();
    ADAPTERS.get_or_init(|| AgentKind::ALL.iter().map(|k| Adapter::builtin(*k)).collect())
}

fn judge(screen: &Screen) {
    let now = Utc.with_ymd_and_hms(2026, 11, 30, 22, 0, 0).unwrap();
    let snap = screen.snapshot();
    for adapter in adapters() {
        let verdict = adapter.classify(&snap);
        let region = adapter.limit_region(&snap);
        let frame = screen.frame();
        assert_eq!(adapter.classify_frame(&frame), verdict);
        assert_eq!(adapter.limit_region_of_frame(&frame), region);
        let _ = nightshift::limits::find_limit(&region, now, &chrono_tz::Europe::London);
        let _ = adapter.title_idle(screen.title());
    }
    let _ = nightshift::limits::menu::read(&snap.rows);
}

fuzz_target!(|data: &[u8]| {
    // Two bytes of size (a PTY may be 1x1), then chunks split at 0xFF 0xFE marks; a chunk that starts
    // with 0xFD is a resize to its next two bytes.
    let Some(([cols, rows], rest)) = data.split_first_chunk::<2>() else { return };
    let size = |c: u8, r: u8| PtySize::new(u16::from(c).max(1) * 2, u16::from(r % 100).max(1));
    let mut screen = Screen::new(size(*cols, *rows));
    for chunk in rest.split(|b| *b == 0xFE) {
        match chunk {
            [0xFD, c, r, ..] => screen.resize(size(*c, *r)),
            bytes => screen.feed(bytes),
        }
        if !screen.in_sync() {
            judge(&screen);
        }
    }
    judge(&screen);
    let _ = screen.styled_snapshot();
    let _ = screen.restore_sequence();
});
