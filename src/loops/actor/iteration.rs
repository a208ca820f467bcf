//! An iteration's process: started in its project's folder (or its worktree) with the harness's
//! command, its stdout read into the gzipped log and a [`Reader`], its stderr's tail kept, its end
//! told to the machine, and killed when the machine says.

use std::io::Write;
use std::process::Stdio;

use tokio::io::AsyncReadExt;

use super::*;
use crate::loops::stream::{self, Reader, Report};

/// How long a killed iteration has between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(3);

/// The stderr kept of an iteration (its end; the start is the least telling).
const STDERR_KEPT: usize = 64 << 10;

/// Readable lines of the running iteration the window's "screen" shows.
const SHOWN_LINES: usize = 200;

/// What an iteration's reader task tells the actor.
pub(super) enum ChildMsg {
    Tokens(u64),
    Said(Vec<String>),
    Ended(Box<Report>),
}

pub(super) struct Child {
    pid: i32,
    msgs: mpsc::UnboundedReceiver<ChildMsg>,
    project: usize,
    /// Where it works: the project's folder, or its place in the project's worktree.
    dir: PathBuf,
    probe: bool,
    before: Option<crate::git::Fingerprint>,
}

pub(super) async fn child_msg(child: &mut Option<Child>) -> Option<ChildMsg> {
    match child {
        Some(c) => c.msgs.recv().await,
        None => std::future::pending().await,
    }
}

impl Exec {
    pub(super) fn spawn(&mut self, run: &Run) -> Result<Child, String> {
        let dir = self.workdir(run)?;
        let project = &self.spec.projects[run.project];
        let own = self.spec.account.as_ref().map(|a| a.dir.clone());
        let hidden = crate::config::hidden_from_agents(self.state_dir.as_deref(), own.as_deref());
        let proxied = self.fence.as_ref().map(|(_, p, allowed)| (p, allowed.as_slice()));
        let argv = self.spec.argv_hiding(run, &hidden, proxied);
        let exclude: Vec<String> = match &project.tasks {
            Source::File(path) => {
                path.strip_prefix(&project.cwd).ok().map(|p| p.display().to_string()).into_iter().collect()
            }
            Source::Prompt(_) => Vec::new(),
        };
        let before = if run.probe { None } else { crate::git::fingerprint(&dir, &exclude) };
        let mut cmd = tokio::process::Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .current_dir(&dir)
            .envs(self.spec.env.iter().cloned())
            .env(crate::session::SESSION_ENV, self.id.as_str())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| format!("{}: {e}", argv[0]))?;
        let pid = child.id().map_or(0, |p| p as i32);
        let (tx, msgs) = mpsc::unbounded_channel();
        let log = self.dir.as_deref().map(|d| stream_file(d, run.iteration, run.attempt, run.probe));
        let (clock, zone) = (self.journal.clock().clone(), self.zone.clone());
        let agent = self.spec.agent;
        self.shown.clear();
        tokio::spawn(async move {
            let stdout = child.stdout.take().expect("piped");
            let stderr = child.stderr.take().expect("piped");
            let errors = tokio::spawn(read_tail(stderr, STDERR_KEPT));
            let reader = read_stream(agent, stdout, log.as_deref(), &tx).await;
            let status = child.wait().await;
            let stderr = errors.await.unwrap_or_default();
            if let Some(log) = &log {
                if !stderr.is_empty() {
                    let _ = crate::paths::write_private(&log.with_extension("").with_extension("stderr"), &stderr);
                }
            }
            let code = match &status {
                Ok(s) => s.code(),
                Err(_) => None,
            };
            let report = reader.finish(code, &stderr, clock.now(), &zone);
            let _ = tx.send(ChildMsg::Ended(Box::new(report)));
        });
        tracing::info!(session = %self.id, iteration = run.iteration, attempt = run.attempt, probe = run.probe, pid, "iteration started");
        Ok(Child { pid, msgs, project: run.project, dir, probe: run.probe, before })
    }

    /// The plan windows a Codex iteration's rollout last recorded.
    fn codex_windows(&self, thread: &str) -> Option<crate::usage::Sample> {
        let home = crate::hooks::codex::home_for(&self.spec.env)?;
        let sample = crate::usage::codex::read_latest(&crate::hooks::codex::rollout(&home, thread)?)?;
        let windows = sample.windows();
        windows.has_limits().then_some(windows)
    }

    pub(super) fn child_said(&mut self, msg: Option<ChildMsg>) {
        match msg {
            Some(ChildMsg::Tokens(so_far)) => self.step(Input::Tokens { so_far }),
            Some(ChildMsg::Said(lines)) => {
                for line in lines {
                    if self.shown.len() == SHOWN_LINES {
                        self.shown.pop_front();
                    }
                    self.shown.push_back(line);
                }
            }
            Some(ChildMsg::Ended(report)) => {
                let child = self.child.take().expect("a running child");
                let project = &self.spec.projects[child.project];
                let progress = match &child.before {
                    Some(before) => {
                        let exclude: Vec<String> = match &project.tasks {
                            Source::File(path) => path
                                .strip_prefix(&project.cwd)
                                .ok()
                                .map(|p| p.display().to_string())
                                .into_iter()
                                .collect(),
                            Source::Prompt(_) => Vec::new(),
                        };
                        crate::git::fingerprint(&child.dir, &exclude).is_some_and(|after| after != *before)
                    }
                    None => false,
                };
                if matches!(project.isolation, Isolation::PerTask { .. }) && !child.probe {
                    // Its worktree is not worked in again once its task moves on: keep what it left.
                    crate::session::salvage(&child.dir, &self.id, "the task's iteration ended", &self.journal);
                }
                let mut report = report;
                if report.windows.is_none() && self.spec.agent == AgentKind::Codex {
                    // Codex keeps its windows in the thread's rollout, not in its exec stream.
                    report.windows = report.conversation.as_deref().and_then(|thread| self.codex_windows(thread));
                }
                self.step(Input::Ended { report, progress });
            }
            None => {
                // The reader task went away without a word (it panicked): the iteration is lost.
                if self.child.take().is_some() {
                    let report = Reader::new(self.spec.agent).finish(None, "", self.journal.now(), &self.zone);
                    self.step(Input::Ended { report: Box::new(report), progress: false });
                }
            }
        }
    }

    pub(super) fn kill(&mut self, reason: &str) {
        let Some(child) = &self.child else { return };
        let pid = child.pid;
        tracing::info!(session = %self.id, pid, reason, "stopping the running iteration");
        if pid <= 0 {
            return;
        }
        let group = nix::unistd::Pid::from_raw(pid);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGTERM);
        tokio::spawn(async move {
            tokio::time::sleep(KILL_GRACE).await;
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        });
        if self.machine.is_ended() {
            // Nothing waits for its end any more.
            self.child = None;
        }
    }
}

/// Reads an iteration's stdout: every byte into the gzipped log, each line into a [`Reader`];
/// lines longer than [`stream::MAX_LINE`] are dropped (and counted).
async fn read_stream(
    agent: AgentKind,
    mut stdout: tokio::process::ChildStdout,
    log: Option<&Path>,
    tx: &mpsc::UnboundedSender<ChildMsg>,
) -> Reader {
    let mut reader = Reader::new(agent);
    let mut gz = log.and_then(|path| {
        crate::paths::private_file(path)
            .map(|f| flate2::write::GzEncoder::new(f, flate2::Compression::fast()))
            .map_err(|e| tracing::warn!("cannot keep the iteration's stream in {}: {e}", path.display()))
            .ok()
    });
    let mut buf = vec![0u8; 64 << 10];
    let mut line: Vec<u8> = Vec::new();
    let mut skipping = false;
    let mut tokens = 0;
    loop {
        let n = match stdout.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Some(gz) = &mut gz {
            if gz.write_all(&buf[..n]).is_err() {
                tracing::warn!("the iteration's stream log stopped: the disk refused a write");
            }
        }
        let mut rest = &buf[..n];
        while let Some(nl) = rest.iter().position(|b| *b == b'\n') {
            if skipping {
                skipping = false;
                reader.dropped_line();
            } else {
                line.extend_from_slice(&rest[..nl]);
                let text = String::from_utf8_lossy(&line);
                reader.line(&text);
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
                    let said = stream::readable(&v);
                    if !said.is_empty() {
                        let _ = tx.send(ChildMsg::Said(said));
                    }
                }
                line.clear();
            }
            rest = &rest[nl + 1..];
            if reader.tokens_so_far() != tokens {
                tokens = reader.tokens_so_far();
                let _ = tx.send(ChildMsg::Tokens(tokens));
            }
        }
        if !skipping {
            line.extend_from_slice(rest);
            if line.len() > stream::MAX_LINE {
                line.clear();
                skipping = true;
            }
        }
    }
    if skipping {
        reader.dropped_line();
    } else if !line.is_empty() {
        reader.line(&String::from_utf8_lossy(&line));
    }
    if let Some(gz) = gz {
        let _ = gz.finish();
    }
    reader
}

/// The last `keep` bytes of a stream, as text.
async fn read_tail(mut from: tokio::process::ChildStderr, keep: usize) -> String {
    let mut kept: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 16 << 10];
    while let Ok(n) = from.read(&mut buf).await {
        if n == 0 {
            break;
        }
        kept.extend_from_slice(&buf[..n]);
        if kept.len() > 2 * keep {
            kept.drain(..kept.len() - keep);
        }
    }
    if kept.len() > keep {
        kept.drain(..kept.len() - keep);
    }
    String::from_utf8_lossy(&kept).into_owned()
}
