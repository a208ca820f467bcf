//! Running a command in a pseudo-terminal that Nightshift owns.
//!
//! Following portable-pty's own rules: the slave is dropped right after spawning (or the reader never
//! sees end-of-file); output is read by a task on the runtime's reactor and forwarded over a channel
//! (EIO on read is end-of-file on Linux); the writer is taken once and fed by its own thread, so a
//! child that stops reading its input can never block the session; the exit status is collected by a
//! thread blocked in `waitpid`.
//!
//! The reader used to be a thread blocked in `read`: every chunk woke that thread and then a runtime
//! worker, two context switches where the reactor needs none, and with tens of sessions those
//! switches were most of the supervisor's CPU (`make bench-sessions`). The master is non-blocking
//! now, for every descriptor that shares it, so the writer waits out a full input queue itself. The child leads its own session and process group, so a stop signals
//! the whole group: SIGHUP first, then SIGKILL after a grace period (driven by the session actor).

use std::ffi::OsString;
use std::fmt;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use filedescriptor::FileDescriptor;
use nix::sys::signal::{killpg, Signal};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::Pid;
use portable_pty::{CommandBuilder, MasterPty};
use tokio::net::unix::pipe;
use tokio::sync::{mpsc, oneshot};

pub use nightshift_model::child::{Exit, SpawnError};
pub use nightshift_model::screen::PtySize;

/// portable-pty's size for ours (a zero side is one cell).
fn to_portable(size: PtySize) -> portable_pty::PtySize {
    portable_pty::PtySize { rows: size.rows.max(1), cols: size.cols.max(1), pixel_width: 0, pixel_height: 0 }
}

/// What to run. The child inherits this process's environment plus `env`.
#[derive(Clone)]
pub struct CommandSpec {
    pub program: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub size: PtySize,
}

// Environment values can hold tokens and keys: they never reach a log.
impl fmt::Debug for CommandSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env: Vec<String> = self.env.iter().map(|(k, _)| format!("{k}=<hidden>")).collect();
        f.debug_struct("CommandSpec")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("cwd", &self.cwd)
            .field("env", &env)
            .field("size", &self.size)
            .finish()
    }
}

impl CommandSpec {
    /// The command line as the user would type it (for display and the journal).
    pub fn argv(&self) -> Vec<String> {
        std::iter::once(self.program.clone()).chain(self.args.iter().cloned()).collect()
    }
}

/// The argv as a shell line, quoting what needs it (for reasons and display).
pub fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c)) {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A running child in a PTY. Dropping it closes the terminal.
pub struct Pty {
    pid: u32,
    writer: std_mpsc::Sender<(Duration, Vec<u8>)>,
    // Declared last so it is dropped last.
    master: Box<dyn MasterPty + Send>,
}

impl fmt::Debug for Pty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pty").field("pid", &self.pid).finish_non_exhaustive()
    }
}

/// A freshly spawned child: the PTY, its output and its exit.
#[derive(Debug)]
pub struct Spawned {
    pub pty: Pty,
    /// Chunks of output in the order read; closed at end-of-file.
    pub output: mpsc::Receiver<Vec<u8>>,
    /// Fires once, when the child has exited.
    pub exit: oneshot::Receiver<Exit>,
}

/// Starts `spec` in a new PTY of `spec.size`. Must be called within a Tokio runtime with I/O
/// enabled: the output is read on its reactor.
pub fn spawn(spec: &CommandSpec) -> Result<Spawned, SpawnError> {
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(SpawnError::Pty("pty::spawn was called outside the Tokio runtime".into()));
    }
    if !spec.cwd.is_dir() {
        return Err(SpawnError::BadCwd { cwd: spec.cwd.clone() });
    }
    let path_var = spec
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| OsString::from(v))
        .or_else(|| std::env::var_os("PATH"));
    let program = resolve_program(&spec.program, &spec.cwd, path_var.as_deref())?;

    let pair = portable_pty::native_pty_system()
        .openpty(to_portable(spec.size))
        .map_err(|e| SpawnError::Pty(format!("{e:#}")))?;

    let mut cmd = CommandBuilder::new(&program);
    cmd.args(&spec.args);
    cmd.cwd(&spec.cwd);
    // The screen model behind every session emulates xterm.
    cmd.env("TERM", "xterm-256color");
    for (key, value) in &spec.env {
        cmd.env(key, value);
    }
    let child = pair
        .slave
        .spawn_command(cmd)
        .map_err(|e| SpawnError::Spawn { program: spec.program.clone(), message: format!("{e:#}") })?;
    drop(pair.slave);
    let pid = child
        .process_id()
        .ok_or_else(|| SpawnError::Spawn { program: spec.program.clone(), message: "no process id".into() })?;
    // Collected by `waitpid` below, not through the handle.
    drop(child);

    let master = pair.master;
    let reader = master
        .as_raw_fd()
        .ok_or_else(|| SpawnError::Pty("the terminal has no file descriptor".into()))
        .and_then(|fd| master_reader(fd).map_err(|e| SpawnError::Pty(format!("{e}"))))?;
    let writer = master.take_writer().map_err(|e| SpawnError::Pty(format!("{e:#}")))?;

    let (in_tx, in_rx) = std_mpsc::channel();
    let (exit_tx, exit) = oneshot::channel();
    // An agent whose processes used up the user's limit leaves none for these threads: the start
    // fails (and the child goes) rather than Nightshift.
    let threads = spawn_thread("pty-writer", move || write_loop(writer, in_rx)).and_then(|()| {
        spawn_thread("pty-wait", move || {
            let _ = exit_tx.send(wait_for(pid));
        })
    });
    if let Err(e) = threads {
        let _ = killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
        let _ = nix::sys::wait::waitpid(Pid::from_raw(pid as i32), None);
        return Err(SpawnError::Spawn {
            program: spec.program.clone(),
            message: format!("the system refused a thread to watch it ({e}); the user's process limit may be used up"),
        });
    }
    let (out_tx, output) = mpsc::channel(256);
    tokio::spawn(read_loop(reader, out_tx));

    Ok(Spawned { pty: Pty { pid, writer: in_tx, master }, output, exit })
}

impl Pty {
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Queues bytes for the child's input. Never blocks.
    pub fn write(&self, bytes: Vec<u8>) {
        self.write_after(Duration::ZERO, bytes);
    }

    /// Queues bytes to be written `delay` after everything queued before them. TUI clients read a
    /// burst of input as a paste, so a key that must arrive on its own (Enter after text) is spaced.
    pub fn write_after(&self, delay: Duration, bytes: Vec<u8>) {
        if self.writer.send((delay, bytes)).is_err() {
            tracing::debug!(pid = self.pid, "input dropped: the terminal is closed");
        }
    }

    /// Resizes the terminal; the kernel tells the child with SIGWINCH.
    pub fn resize(&self, size: PtySize) -> io::Result<()> {
        self.master.resize(to_portable(size)).map_err(io::Error::other)
    }

    /// Sends a signal to the child's whole process group.
    pub fn signal_group(&self, signal: Signal) {
        match killpg(Pid::from_raw(self.pid as i32), signal) {
            Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
            Err(e) => tracing::warn!(pid = self.pid, ?signal, "could not signal the process group: {e}"),
        }
    }
}

/// Ends what is left of an agent whose Nightshift died (a killed run's client may outlive it for
/// a moment, or hang on): the process group of `pid`, if `pid` is still the process `variable` =
/// `value` was started as (after a reboot a pid is another program's, never signalled). SIGHUP
/// first, SIGKILL after `grace`; blocking. True when there was one to end.
pub fn end_leftover(pid: u32, variable: &str, value: &str, grace: Duration) -> bool {
    use crate::platform::{Os, Processes};
    if !Os::started_with(pid, variable, value) {
        return false;
    }
    let group = Pid::from_raw(pid as i32);
    let _ = killpg(group, Signal::SIGHUP);
    let deadline = std::time::Instant::now() + grace;
    while std::time::Instant::now() < deadline {
        if killpg(group, None).is_err() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = killpg(group, Signal::SIGKILL);
    true
}

fn spawn_thread(name: &str, f: impl FnOnce() + Send + 'static) -> io::Result<()> {
    std::thread::Builder::new().name(name.to_string()).spawn(f).map(drop)
}

/// The master's number, borrowed while the master is alive, for `FileDescriptor::dup`.
struct Borrowed(RawFd);

impl AsRawFd for Borrowed {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// A duplicate of the master, non-blocking and registered with the current runtime's reactor. The
/// non-blocking flag belongs to the open file, which every duplicate of the master shares.
fn master_reader(master: RawFd) -> io::Result<pipe::Receiver> {
    let mut fd = FileDescriptor::dup(&Borrowed(master)).map_err(io::Error::other)?;
    fd.set_non_blocking(true).map_err(io::Error::other)?;
    // A PTY is not a pipe, but the receiver asks only for a readable, non-blocking descriptor.
    pipe::Receiver::from_file_unchecked(fd.as_file().map_err(io::Error::other)?)
}

async fn read_loop(reader: pipe::Receiver, tx: mpsc::Sender<Vec<u8>>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if let Err(e) = reader.readable().await {
            tracing::warn!("watching the terminal failed: {e}");
            break;
        }
        match reader.try_read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if tx.send(buf[..n].to_vec()).await.is_err() {
                    break;
                }
            }
            // Not ready after all: the readiness is cleared and the reactor asked again.
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => continue,
            // EIO: every slave descriptor is closed, which on Linux is how a PTY says end-of-file.
            Err(e) if e.raw_os_error() == Some(nix::libc::EIO) => break,
            Err(e) => {
                tracing::warn!("reading the terminal failed: {e}");
                break;
            }
        }
    }
}

/// How long the writer waits when the child's input queue is full (the master is non-blocking).
const INPUT_FULL_RETRY: Duration = Duration::from_millis(10);

fn write_loop(mut writer: Box<dyn Write + Send>, rx: std_mpsc::Receiver<(Duration, Vec<u8>)>) {
    for (delay, bytes) in rx {
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        if let Err(e) = write_all(&mut writer, &bytes) {
            tracing::debug!("writing to the terminal failed: {e}");
            break;
        }
    }
}

/// `write_all` for a non-blocking descriptor: a full queue is waited out, never an error.
fn write_all(writer: &mut dyn Write, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        match writer.write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(INPUT_FULL_RETRY),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    writer.flush()
}

fn wait_for(pid: u32) -> Exit {
    loop {
        match waitpid(Pid::from_raw(pid as i32), None) {
            Ok(WaitStatus::Exited(_, code)) => return Exit::Code(code),
            Ok(WaitStatus::Signaled(_, signal, _)) => {
                return Exit::Signal { number: signal as i32, name: signal.as_str().to_string() }
            }
            Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => {
                tracing::warn!(pid, "waiting for the child failed: {e}");
                return Exit::Code(-1);
            }
        }
    }
}

/// Finds the file that `program` names: a path (relative to `cwd`) when it contains a slash,
/// otherwise the first match in `PATH`.
pub fn resolve_program(program: &str, cwd: &Path, path_var: Option<&std::ffi::OsStr>) -> Result<PathBuf, SpawnError> {
    if program.is_empty() {
        return Err(SpawnError::NotFound { program: program.into() });
    }
    let check = |path: PathBuf| -> Result<PathBuf, SpawnError> {
        let meta = std::fs::metadata(&path).map_err(|_| SpawnError::NotFound { program: program.into() })?;
        if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
            Ok(path)
        } else {
            Err(SpawnError::NotExecutable { program: program.into(), path })
        }
    };
    if program.contains('/') {
        return check(cwd.join(program));
    }
    let mut not_executable = None;
    for dir in std::env::split_paths(path_var.unwrap_or_default()) {
        let candidate = if dir.as_os_str().is_empty() { cwd.join(program) } else { cwd.join(dir).join(program) };
        if !candidate.exists() {
            continue;
        }
        match check(candidate) {
            Ok(found) => return Ok(found),
            Err(e) => not_executable = not_executable.or(Some(e)),
        }
    }
    Err(not_executable.unwrap_or(SpawnError::NotFound { program: program.into() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_through_path_and_names_missing_commands() {
        let cwd = std::env::current_dir().unwrap();
        let found = resolve_program("sh", &cwd, Some("/usr/bin:/bin".as_ref())).unwrap();
        assert!(found.ends_with("sh"));
        let err = resolve_program("/no/such/cmd", &cwd, None).unwrap_err();
        assert!(err.to_string().contains("/no/such/cmd"), "{err}");
        assert_eq!(err.exit_code(), 127);
        let err = resolve_program("/etc", &cwd, None).unwrap_err();
        assert_eq!(err.exit_code(), 126, "{err}");
    }

    #[test]
    fn shell_words_quote_what_needs_it() {
        let argv: Vec<String> = ["bash", "-c", "printf 'hi'; exit 3"].iter().map(|s| s.to_string()).collect();
        assert_eq!(shell_words(&argv), r"bash -c 'printf '\''hi'\''; exit 3'");
    }

    /// The master is non-blocking for the reactor, so a child that takes its input slowly fills the
    /// queue and the writer must wait, not drop the rest.
    #[tokio::test]
    async fn input_larger_than_the_terminal_queue_arrives_whole() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("got");
        let script = format!("stty raw -echo; echo ready; head -c 300000 | (sleep 0.5; cat) > {}", out.display());
        let spec = CommandSpec {
            program: "bash".into(),
            args: vec!["--norc".into(), "-c".into(), script],
            cwd: dir.path().to_path_buf(),
            env: vec![],
            size: PtySize::default(),
        };
        let mut spawned = spawn(&spec).unwrap();
        let mut seen = Vec::new();
        while !String::from_utf8_lossy(&seen).contains("ready") {
            seen.extend(spawned.output.recv().await.expect("the child said nothing"));
        }
        let input: Vec<u8> = (0..300_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        spawned.pty.write(input.clone());
        let exit = tokio::time::timeout(Duration::from_secs(30), spawned.exit).await.unwrap().unwrap();
        assert_eq!(exit, Exit::Code(0));
        assert_eq!(std::fs::read(&out).unwrap(), input);
    }

    #[test]
    fn spawning_outside_a_runtime_is_an_error_not_a_panic() {
        let spec = CommandSpec {
            program: "true".into(),
            args: vec![],
            cwd: "/".into(),
            env: vec![],
            size: PtySize::default(),
        };
        let err = spawn(&spec).unwrap_err();
        assert!(err.to_string().contains("outside the Tokio runtime"), "{err}");
    }

    #[test]
    fn exit_codes_follow_the_shell() {
        assert_eq!(Exit::Code(3).shell_code(), 3);
        assert_eq!(Exit::Signal { number: 9, name: "SIGKILL".into() }.shell_code(), 137);
    }

    #[test]
    fn debug_hides_environment_values() {
        let spec = CommandSpec {
            program: "claude".into(),
            args: vec![],
            cwd: "/".into(),
            env: vec![("ANTHROPIC_API_KEY".into(), "sk-ant-secret".into())],
            size: PtySize::default(),
        };
        let text = format!("{spec:?}");
        assert!(text.contains("ANTHROPIC_API_KEY"));
        assert!(!text.contains("sk-ant-secret"));
    }
}
