//! Logging: tracing to a daily-rotated file in the state directory (a week kept) and to stderr.
//!
//! `NIGHTSHIFT_LOG` sets the level (`debug`, `nightshift=trace`, …; default `info` in the file and
//! `warn` on stderr). Environment values never reach a log: the types that carry them print their
//! names only. Colour on stderr only for a terminal, and never with `NO_COLOR`.

use std::io::IsTerminal;
use std::path::Path;

use tracing_appender::non_blocking::WorkerGuard;
use tracing_appender::rolling::{Builder, Rotation};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

pub const LOG_ENV: &str = "NIGHTSHIFT_LOG";

/// `NO_COLOR` set to anything but the empty string turns colour off (<https://no-color.org>).
pub fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// Whether what goes to `stream` may be coloured: it is a terminal and `NO_COLOR` is not set.
pub fn colour(stream: &impl IsTerminal) -> bool {
    stream.is_terminal() && !no_color()
}

/// Where stderr logging goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stderr {
    /// At `NIGHTSHIFT_LOG` or `warn`.
    On,
    /// Only when `NIGHTSHIFT_LOG` is set: the terminal shows an agent's screen.
    OnlyWhenAsked,
}

/// Keeps the file writer flushing; hold it for the life of the process.
#[derive(Debug)]
pub struct LogGuard(#[allow(dead_code)] Option<WorkerGuard>);

/// Log lines waiting for the file writer, at most.
const LOG_QUEUE_LINES: usize = 4096;

fn filter(default: &str) -> EnvFilter {
    EnvFilter::try_from_env(LOG_ENV).unwrap_or_else(|_| EnvFilter::new(default))
}

/// Installs the global subscriber. A log directory that cannot be created costs the file log only.
pub fn init(log_dir: &Path, stderr: Stderr) -> LogGuard {
    let asked = std::env::var_os(LOG_ENV).is_some();
    let stderr_layer = (stderr == Stderr::On || asked).then(|| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(colour(&std::io::stderr()))
            .with_target(false)
            .with_filter(filter("warn"))
    });
    let (file_layer, guard, file_error) =
        match crate::paths::ensure_dir(log_dir).map_err(|e| e.to_string()).and_then(|()| {
            Builder::new()
                .rotation(Rotation::DAILY)
                .filename_prefix("nightshift")
                .filename_suffix("log")
                .max_log_files(7)
                .build(log_dir)
                .map_err(|e| e.to_string())
        }) {
            Ok(appender) => {
                // The writer's queue is allocated (and touched) whole up front: 128,000 lines by
                // default, 4 MB in every process. A few thousand lines is plenty for an info log;
                // past them lines are dropped, never waited for.
                let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
                    .buffered_lines_limit(LOG_QUEUE_LINES)
                    .lossy(true)
                    .finish(appender);
                let layer =
                    tracing_subscriber::fmt::layer().with_writer(writer).with_ansi(false).with_filter(filter("info"));
                (Some(layer), Some(guard), None)
            }
            Err(e) => (None, None, Some(e)),
        };
    let _ = tracing_subscriber::registry().with(stderr_layer).with(file_layer).try_init();
    if let Some(e) = file_error {
        tracing::warn!("no log file in {}: {e}", log_dir.display());
    }
    LogGuard(guard)
}
