//! The user's config.toml: any text parses or is refused with a one-line error; what parses saves
//! and loads back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nightshift::config::Config;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match Config::parse(Path::new("config.toml"), text) {
        Ok(config) => {
            let _ = config.all();
            if let Ok(saved) = config.to_text() {
                let back = Config::parse(Path::new("config.toml"), &saved).expect("a saved config loads");
                assert_eq!(back, config, "a saved config loads back the same");
            }
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "one line: {e}"),
    }
});
