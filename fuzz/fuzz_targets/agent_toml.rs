//! A user's agent file (`agents/claude.toml` and the like) laid over the built-in signals, then the
//! adapter it makes judging a screen.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nightshift::agent::Adapter;
use nightshift::pty::PtySize;
use nightshift::screen::Screen;
use nightshift::AgentKind;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let kind = AgentKind::ALL[usize::from(pick) % AgentKind::ALL.len()];
    match Adapter::with_overrides(kind, "agents/fuzz.toml", text) {
        Ok(adapter) => {
            let mut screen = Screen::new(PtySize::new(80, 24));
            screen
                .feed(b"\x1b]0;\xe2\x9c\xb3 Claude Code\x07 working (esc to interrupt)\r\n> hello\r\n? for shortcuts");
            let snap = screen.snapshot();
            let _ = adapter.classify(&snap);
            let _ = adapter.limit_region(&snap);
            let _ = adapter.title_idle(screen.title());
            let _ = adapter.auto_accepted();
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "one line: {e}"),
    }
});
