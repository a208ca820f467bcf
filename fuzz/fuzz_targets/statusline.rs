//! The statusLine JSON a Claude client pipes to its exporter, and the chip drawn from it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nightshift::usage::{chip, Sample};

fuzz_target!(|data: &[u8]| {
    if let Ok(sample) = Sample::from_status(data) {
        let _ = chip(&sample, true);
        let _ = chip(&sample, false);
        let _ = sample.has_limits();
        let _ = nightshift::usage::sparkline(&[sample.five_hour_pct, sample.seven_day_pct, sample.context_pct]);
    }
});
