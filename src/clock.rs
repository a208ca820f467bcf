//! The only place that reads the system's wall clock: [`SystemClock`], the [`Clock`] every process
//! runs on. The trait, the test clock and the timestamp formats are the model's.

pub use nightshift_model::clock::*;

use chrono::{DateTime, Utc};

/// The real clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// The monotonic now the machines are given: tokio's clock, so a test that pauses time moves it,
/// as a `std` instant (the model knows no runtime). Sleep until one with
/// `tokio::time::sleep_until(at.into())`.
pub fn mono_now() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}

/// The system's time zone, as the decisions take it (`chrono::Local`: `TZ`, else /etc/localtime).
pub fn local_zone() -> Zone {
    Zone::new(chrono::Local)
}
