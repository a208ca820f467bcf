//! The control socket's request line, as the server reads it (bytes up to the first newline).
#![no_main]

use libfuzzer_sys::fuzz_target;
use nightshift::control::Request;

fuzz_target!(|data: &[u8]| {
    let line = data.split(|b| *b == b'\n').next().unwrap_or_default();
    if let Ok(request) = serde_json::from_slice::<Request>(line) {
        // What parses must go back out and read the same.
        let again = serde_json::to_vec(&request).expect("requests serialise");
        assert_eq!(serde_json::from_slice::<Request>(&again).expect("a request reads back"), request);
    }
});
