//! A phone button's token, as it arrives on the listen topic: whatever its bytes, verifying it
//! refuses it or gives an action, and never panics; nor does reading them as a line of ntfy's
//! stream.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nightshift::phone::{self, Action, Choice, Key};
use std::sync::OnceLock;

fn key() -> &'static Key {
    static KEY: OnceLock<Key> = OnceLock::new();
    KEY.get_or_init(|| Key::from_hex(&"5a".repeat(32)).expect("a key"))
}

fuzz_target!(|data: &[u8]| {
    let now = chrono::DateTime::from_timestamp(1_796_450_000, 0).expect("a time");
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let phone::Line::Message(m) = phone::read_line(text) {
        let _ = phone::signed(key(), &m.message);
    }
    if let Ok(action) = phone::verify(key(), text, now) {
        // What verifies signs back to a token that verifies to the same action.
        let again = Action { ..action.clone() }.sign(key());
        assert_eq!(phone::verify(key(), &again, now).ok(), Some(action));
    }
    // A token made of the input's bytes as its fields is refused or verified, never a panic.
    let field = text.chars().take(40).collect::<String>();
    let signed = Action { session: field.clone(), dialog: field.clone(), choice: Choice::Allow, expires: 1_796_450_100, nonce: field }
        .sign(key());
    let _ = phone::verify(key(), &signed, now);
});
