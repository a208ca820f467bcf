//! The session's environment as the readers see it, and the one way they run a tool: found on that
//! environment's `PATH`, with that environment only, in a process group of its own that is killed
//! when its time is up.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a tool may take to say what it is configured to use.
pub const TOOL_LIMIT: Duration = Duration::from_secs(5);

/// The most of a tool's output that is kept: a configuration listing is a few kilobytes.
const MOST_OUTPUT: u64 = 4 << 20;

/// The variables of the session a fence is read for, and where system-wide files are looked for.
#[derive(Clone)]
pub struct Env {
    vars: Vec<(String, String)>,
    root: PathBuf,
    limit: Duration,
    /// Folders no tool is run from, whatever `PATH` says: the project's (the agent writes there,
    /// and these tools run outside its sandbox).
    untrusted: Vec<PathBuf>,
}

/// What running a tool came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ran {
    /// It exited 0; its standard output.
    Said(String),
    /// It is not on the session's `PATH`.
    Missing,
    /// It ran and failed: the first line it said.
    Failed(String),
    /// It did not finish in time and was stopped.
    TimedOut,
}

impl Env {
    /// The session's variables; a name set twice keeps its last value, as a process would see it.
    pub fn new<K: Into<String>, V: Into<String>>(vars: impl IntoIterator<Item = (K, V)>) -> Self {
        Env {
            vars: vars.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
            root: "/".into(),
            limit: TOOL_LIMIT,
            untrusted: Vec::new(),
        }
    }

    /// This process's own environment (for a fence read on the user's behalf, as the doctor does).
    pub fn of_this_process() -> Self {
        Env::new(std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))))
    }

    /// Where system-wide files (`/etc/pip.conf`, …) are looked for: `/`, or a test's own folder.
    pub fn with_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.root = root.into();
        self
    }

    /// How long each tool may take ([`TOOL_LIMIT`] unless told).
    pub fn with_limit(mut self, limit: Duration) -> Self {
        self.limit = limit;
        self
    }

    /// Never runs a tool found under `folder` (a `node_modules/.bin` or a `.venv/bin` of the
    /// project on the session's `PATH`: what the agent can write must not run outside its sandbox).
    pub fn distrusting(mut self, folder: &Path) -> Self {
        self.untrusted.push(folder.canonicalize().unwrap_or_else(|_| folder.to_path_buf()));
        self
    }

    /// How long each tool may take.
    pub fn limit(&self) -> Duration {
        self.limit
    }

    /// The value of `name`, exactly as spelt; an empty value is no value.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).filter(|v| !v.is_empty())
    }

    /// The value of `name` whatever its case (npm reads `npm_config_registry` and `NPM_CONFIG_REGISTRY`).
    pub fn get_any_case(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .rev()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }

    /// Every variable whose name starts with `prefix`, in any case.
    pub fn with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        self.vars
            .iter()
            .filter(move |(k, _)| k.len() >= prefix.len() && k[..prefix.len()].eq_ignore_ascii_case(prefix))
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The session's home folder.
    pub fn home(&self) -> Option<PathBuf> {
        self.get("HOME").map(PathBuf::from)
    }

    /// A system-wide path (`/etc/pip.conf`) under this environment's root.
    pub fn system(&self, absolute: &str) -> PathBuf {
        self.root.join(absolute.trim_start_matches('/'))
    }

    /// The first `program` on the session's `PATH` that is an executable file, in no folder this
    /// environment distrusts.
    pub fn which(&self, program: &str) -> Option<PathBuf> {
        use std::os::unix::fs::PermissionsExt as _;
        let path = self.get("PATH")?;
        let trusted = |p: &Path| {
            let real = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
            !self.untrusted.iter().any(|u| real.starts_with(u))
        };
        std::env::split_paths(&OsString::from(path))
            .filter(|dir| dir.is_absolute() && trusted(dir))
            .map(|dir| dir.join(program))
            .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
            .find(|p| trusted(p))
    }

    /// Runs `program ARGS` in `dir` with the session's variables and nothing else, for at most this
    /// environment's limit.
    pub fn run(&self, dir: &Path, program: &str, args: &[&str]) -> Ran {
        self.run_with(dir, program, args, &[])
    }

    /// [`Env::run`] with `extra` variables over the session's (`GOTOOLCHAIN=local`: asking a tool
    /// must not make it fetch another one).
    pub fn run_with(&self, dir: &Path, program: &str, args: &[&str], extra: &[(&str, &str)]) -> Ran {
        use std::os::unix::process::CommandExt as _;
        let Some(program) = self.which(program) else { return Ran::Missing };
        let mut cmd = Command::new(program);
        cmd.args(args).current_dir(dir).env_clear().envs(self.vars.iter().map(|(k, v)| (k, v))).process_group(0);
        cmd.envs(extra.iter().copied());
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ran::Missing,
            Err(e) => return Ran::Failed(format!("cannot be run: {e}")),
        };
        let drain = |pipe: Option<Box<dyn Read + Send>>| {
            std::thread::Builder::new().name("fence-tool".into()).spawn(move || {
                let mut out = Vec::new();
                if let Some(pipe) = pipe {
                    let _ = pipe.take(MOST_OUTPUT).read_to_end(&mut out);
                }
                out
            })
        };
        let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
        let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
        let (Ok(stdout), Ok(stderr)) = (stdout, stderr) else {
            kill(&mut child);
            return Ran::Failed("no thread to run it with".into());
        };
        let Some(status) = crate::git::wait_or_stop(&mut child, Instant::now() + self.limit) else {
            // Not joined: a grandchild that kept a pipe open must not hold the reader too.
            drop((stdout, stderr));
            return Ran::TimedOut;
        };
        let out = String::from_utf8_lossy(&stdout.join().unwrap_or_default()).into_owned();
        let err = String::from_utf8_lossy(&stderr.join().unwrap_or_default()).into_owned();
        if status.success() {
            Ran::Said(out)
        } else {
            let said = err.lines().chain(out.lines()).find(|l| !l.trim().is_empty()).unwrap_or("it failed");
            Ran::Failed(format!("{} ({status})", said.trim()))
        }
    }
}

fn kill(child: &mut std::process::Child) {
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
    let _ = child.wait();
}

/// The names only: a session's variables hold tokens.
impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("vars", &self.vars.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>())
            .field("root", &self.root)
            .field("limit", &self.limit)
            .field("untrusted", &self.untrusted)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(dir: &Path, name: &str, body: &str) {
        use std::os::unix::fs::PermissionsExt as _;
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn a_tool_runs_with_the_sessions_variables_only() {
        let tmp = tempfile::tempdir().unwrap();
        script(tmp.path(), "tool", "echo \"$GREETING ${HOME:-no home}\"; pwd");
        let env = Env::new([("PATH", tmp.path().to_str().unwrap()), ("GREETING", "hello")]);
        let Ran::Said(out) = env.run(tmp.path(), "tool", &[]) else { panic!("the tool did not run") };
        let mut lines = out.lines();
        assert_eq!(lines.next(), Some("hello no home"), "HOME of this process must not leak in");
        assert_eq!(Path::new(lines.next().unwrap()).canonicalize().unwrap(), tmp.path().canonicalize().unwrap());
    }

    #[test]
    fn a_missing_a_failing_and_a_hanging_tool() {
        let tmp = tempfile::tempdir().unwrap();
        script(tmp.path(), "fails", "echo 'no such thing' >&2; exit 3");
        script(tmp.path(), "hangs", "/bin/sleep 30 & /bin/sleep 30");
        std::fs::write(tmp.path().join("plain"), "not a program").unwrap();
        let env = Env::new([("PATH", tmp.path().to_str().unwrap())]).with_limit(Duration::from_millis(300));
        assert_eq!(env.run(tmp.path(), "absent", &[]), Ran::Missing);
        assert_eq!(env.run(tmp.path(), "plain", &[]), Ran::Missing, "a file that is not executable is no tool");
        let Ran::Failed(why) = env.run(tmp.path(), "fails", &[]) else { panic!() };
        assert!(why.starts_with("no such thing"), "{why}");
        let started = Instant::now();
        assert_eq!(env.run(tmp.path(), "hangs", &[]), Ran::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(5), "the whole group is stopped, not waited for");
        assert_eq!(Env::new::<&str, &str>([]).run(tmp.path(), "fails", &[]), Ran::Missing, "no PATH, no tools");
    }

    #[test]
    fn no_tool_is_run_from_the_project() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = tmp.path().join("project/node_modules/.bin");
        std::fs::create_dir_all(&bin).unwrap();
        script(&bin, "npm", "echo planted");
        let env = Env::new([("PATH", bin.to_str().unwrap())]);
        assert_eq!(env.run(tmp.path(), "npm", &[]), Ran::Said("planted\n".into()), "trusted until told");
        let env = env.distrusting(&tmp.path().join("project"));
        assert_eq!(env.run(tmp.path(), "npm", &[]), Ran::Missing);
        // Nor through a link from a folder outside it.
        let outside = tmp.path().join("bin");
        std::fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(bin.join("npm"), outside.join("npm")).unwrap();
        let env = Env::new([("PATH", outside.to_str().unwrap())]).distrusting(&tmp.path().join("project"));
        assert_eq!(env.run(tmp.path(), "npm", &[]), Ran::Missing);
    }

    #[test]
    fn variables_read_as_a_process_reads_them_and_print_without_values() {
        let env = Env::new([("A", "1"), ("npm_config_Registry", "x"), ("A", "2"), ("EMPTY", "")]);
        assert_eq!(env.get("A"), Some("2"));
        assert_eq!(env.get("EMPTY"), None);
        assert_eq!(env.get_any_case("NPM_CONFIG_REGISTRY"), Some("x"));
        assert_eq!(env.with_prefix("NPM_CONFIG_").count(), 1);
        let shown = format!("{env:?}");
        assert!(shown.contains("npm_config_Registry") && !shown.contains("\"x\""), "{shown}");
    }
}
