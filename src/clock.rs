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
