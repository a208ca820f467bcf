//! Logging: tracing to a daily-rotated file in the state directory (a week kept) and to stderr.
//!
//! `NIGHTSHIFT_LOG` sets the level (`debug`, `nightshift=trace`, …; default `info` in the file and
//! `warn` on stderr). Environment values never reach a log: the types that carry them print their
//! names only. Colour on stderr only for a terminal, and never with `NO_COLOR`.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use tracing_appender::non_blocking::WorkerGuard;
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

/// Log files kept, one a day.
const LOG_DAYS: usize = 7;

/// The log file of the day (UTC), `nightshift.YYYY-MM-DD.log`, readable by this user alone: the
/// log says what the agents did. A new day opens a new file and drops the oldest past
/// [`LOG_DAYS`].
#[derive(Debug)]
struct DailyFile {
    dir: PathBuf,
    day: String,
    file: std::fs::File,
}

impl DailyFile {
    fn open(dir: &Path) -> Result<Self, String> {
        let day = chrono::Utc::now().format("%Y-%m-%d").to_string();
        let file = Self::file(dir, &day).map_err(|e| e.to_string())?;
        Ok(Self { dir: dir.to_path_buf(), day, file })
    }

    fn file(dir: &Path, day: &str) -> std::io::Result<std::fs::File> {
        crate::paths::private_append(&dir.join(format!("nightshift.{day}.log")))
    }

    fn prune(&self) {
        let mut logs: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("nightshift.") && n.ends_with(".log"))
            })
            .collect();
        logs.sort();
        let excess = logs.len().saturating_sub(LOG_DAYS);
        for old in &logs[..excess] {
            let _ = std::fs::remove_file(old);
        }
    }
}

impl std::io::Write for DailyFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let day = chrono::Utc::now().format("%Y-%m-%d").to_string();
        if day != self.day {
            if let Ok(file) = Self::file(&self.dir, &day) {
                (self.file, self.day) = (file, day);
                self.prune();
            }
        }
        self.file.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
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
        match crate::paths::ensure_dir(log_dir).map_err(|e| e.to_string()).and_then(|()| DailyFile::open(log_dir)) {
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
