//! The loop's executor: runs each iteration as a headless child, reads its stream, keeps it
//! (gzipped) in the state directory, watches the STOP and HALT markers and the tasks files, and
//! carries out what the [`Machine`] decides.
//!
//! An iteration's own process (its start, its output, its end) is in `actor/iteration.rs`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use super::machine::{Effect, Input, Machine, Marker, Project, Run};
use super::tasks::{self, Source};
use crate::agent::AgentKind;
use crate::contract::Isolation;
use crate::event::{EventKind, SessionId, SessionState};
use crate::git::worktree;
use crate::journal::Journal;
use crate::pty::Exit;
use crate::screen::Snapshot;
use crate::session::machine::Now;
use crate::session::{Control, Status};

mod iteration;

use iteration::{child_msg, Child};

/// How often the markers, the tasks files and the deadlines are looked at.
const POLL: Duration = Duration::from_millis(250);

pub use crate::contract::{LoopSpec, ProjectSpec};

/// The harness's command for each iteration (the spec is the contract's, the model's; running it
/// is the loop's).
pub trait Harness {
    /// The harness's arguments for `run`: a fresh headless session that streams its events.
    fn argv(&self, run: &Run) -> Vec<String>;

    /// [`Harness::argv`], its sandbox (Claude's) kept from reading `hidden`, and its network
    /// through Nightshift's proxy (`proxied`, with the hosts the client is told) when it is fenced.
    fn argv_hiding(
        &self,
        run: &Run,
        hidden: &[std::path::PathBuf],
        proxied: Option<(&crate::agent::Proxied, &[String])>,
    ) -> Vec<String>;

    /// The command as the journal shows it (the task's place marked).
    fn command_line(&self) -> Vec<String>;
}

impl Harness for LoopSpec {
    fn argv(&self, run: &Run) -> Vec<String> {
        self.argv_hiding(run, &[], None)
    }

    fn argv_hiding(
        &self,
        run: &Run,
        hidden: &[std::path::PathBuf],
        proxied: Option<(&crate::agent::Proxied, &[String])>,
    ) -> Vec<String> {
        let mut argv = vec![self.program.clone()];
        match self.agent {
            AgentKind::Codex => {
                argv.extend(["exec", "--json", "--skip-git-repo-check"].map(String::from));
                // `exec` is read-only unless told otherwise, which would leave every task undone;
                // a probe touches nothing. The user's own sandbox choice wins (the client refuses
                // the flag twice).
                let theirs = self.args.iter().any(|a| {
                    matches!(
                        a.as_str(),
                        "-s" | "--sandbox" | "--full-auto" | "--dangerously-bypass-approvals-and-sandbox"
                    ) || a.starts_with("--sandbox=")
                });
                match &self.sandbox {
                    Some(sandbox) if !run.probe => {
                        argv.extend(sandbox.codex_args(&self.args, true, proxied.map(|(p, _)| p)))
                    }
                    _ if theirs => {}
                    _ => {
                        let mode = if run.probe { "read-only" } else { "workspace-write" };
                        argv.extend(["--sandbox", mode].map(String::from));
                    }
                }
                argv.extend(self.args.iter().cloned());
                argv.push(run.prompt.clone());
            }
            AgentKind::Claude | AgentKind::Generic => {
                argv.extend(["-p", &run.prompt, "--output-format", "stream-json", "--verbose"].map(String::from));
                let mut args = self.args.clone();
                if let Some(sandbox) = self.sandbox.as_ref().filter(|_| self.agent == AgentKind::Claude) {
                    let cwd = self.projects.get(run.project).map_or(Path::new("."), |p| p.cwd.as_path());
                    let settings = match proxied {
                        Some((proxy, allowed)) => sandbox.claude_settings_fenced(hidden, proxy, allowed),
                        None => sandbox.claude_settings_hiding(hidden),
                    };
                    crate::hooks::lay_settings(&mut args, cwd, &settings);
                }
                argv.extend(args);
                if run.probe {
                    // A probe asks nothing of the tools and keeps nothing.
                    argv.extend(["--tools", "", "--max-turns", "1", "--no-session-persistence"].map(String::from));
                }
            }
        }
        argv
    }

    fn command_line(&self) -> Vec<String> {
        let run = Run { project: 0, prompt: "<task>".into(), task: None, probe: false, iteration: 0, attempt: 0 };
        self.argv(&run)
    }
}

/// Where a loop keeps its files: `<state>/loops/<id>/`.
pub fn loop_dir(state_dir: &Path, id: &str) -> PathBuf {
    state_dir.join("loops").join(id)
}

/// The markers every loop obeys: `<state>/loops/STOP` and `HALT`.
pub fn global_marker(state_dir: &Path, marker: Marker) -> PathBuf {
    state_dir.join("loops").join(marker_name(marker))
}

pub fn marker_name(marker: Marker) -> &'static str {
    match marker {
        Marker::Stop => "STOP",
        Marker::Halt => "HALT",
    }
}

/// The stream file of an iteration's attempt.
pub fn stream_file(dir: &Path, iteration: u32, attempt: u32, probe: bool) -> PathBuf {
    let kind = if probe { "probe" } else { "iteration" };
    dir.join(format!("{kind}-{iteration:04}-{attempt}.jsonl.gz"))
}

pub(crate) struct LoopActor {
    pub id: SessionId,
    pub spec: LoopSpec,
    pub journal: Journal,
    pub state_dir: Option<PathBuf>,
    pub status: watch::Sender<Status>,
    /// The network fence its iterations go through: the proxy, what it reports, and what the
    /// client is told of it.
    pub fence: Option<LoopFence>,
}

/// A loop's network fence, up for all its iterations.
pub(crate) struct LoopFence {
    pub proxy: crate::proxy::Proxy,
    pub reports: mpsc::UnboundedReceiver<crate::proxy::Report>,
    pub proxied: crate::agent::Proxied,
    pub allowed: Vec<String>,
}

struct Exec {
    /// The fence's proxy (it stops with the loop), and what its iterations are told of it.
    fence: Option<(crate::proxy::Proxy, crate::agent::Proxied, Vec<String>)>,
    id: SessionId,
    spec: Arc<LoopSpec>,
    journal: Journal,
    /// The user's time zone, the machine's too: limit texts and the day a task is done are read in it.
    zone: crate::clock::Zone,
    dir: Option<PathBuf>,
    state_dir: Option<PathBuf>,
    status: watch::Sender<Status>,
    machine: Machine,
    child: Option<Child>,
    pending: Vec<Input>,
    /// Each file project's tasks file as last read (to send only changes).
    tasks_seen: Vec<Option<String>>,
    /// Tasks files that could not be read last time (said once).
    unreadable: Vec<bool>,
    /// What the running iteration said lately, as people read it.
    shown: std::collections::VecDeque<String>,
    markers_seen: Vec<Marker>,
    /// Of each project working in worktrees, the tasks done (its tasks file is the user's and is
    /// not written: the journal's `task_done` keeps them, across a restore too).
    done: Vec<Vec<String>>,
    /// Of each project with a worktree per task, the latest one: the iteration it is for, and the
    /// project's folder in it.
    trees: Vec<Option<(u32, PathBuf)>>,
    /// Until when, and why, the whole loop waits (a limit, a retry's back-off): the machine may
    /// sleep through it and be woken for its end.
    parked: Option<(chrono::DateTime<chrono::Utc>, String)>,
    ended: bool,
}

impl LoopActor {
    /// Runs the loop until it ends; `controls` are its handle's requests.
    pub async fn run(self, mut controls: mpsc::Receiver<Control>) {
        let LoopActor { id, spec, journal, state_dir, status, fence } = self;
        let fence = fence.map(|LoopFence { proxy, mut reports, proxied, allowed }| {
            // What the fence refused, journalled as it comes (the running iteration tried it).
            let (journal, id) = (journal.clone(), id.clone());
            tokio::spawn(async move {
                while let Some(report) = reports.recv().await {
                    if let crate::proxy::Report::Refused(r) = report {
                        journal.emit(&id, EventKind::NetRefused { host: r.host, port: r.port, command: None });
                    }
                }
            });
            (proxy, proxied, allowed)
        });
        let projects = spec
            .projects
            .iter()
            .map(|p| Project { label: p.cwd.display().to_string(), tasks_file: matches!(p.tasks, Source::File(_)) })
            .collect();
        let zone = crate::clock::local_zone();
        let machine = Machine::new(spec.settings.clone(), projects, zone.clone());
        let dir = state_dir.as_deref().map(|s| loop_dir(s, id.as_str()));
        if let Some(dir) = &dir {
            if let Err(e) = crate::paths::private_dirs(dir) {
                tracing::warn!(session = %id, "cannot keep the loop's streams in {}: {e}", dir.display());
            }
        }
        let n = spec.projects.len();
        let done = done_before(&journal, &id, &spec);
        let sandbox = spec.sandbox.as_ref().map(|s| s.describe(spec.agent));
        status.send_modify(|s| s.options.sandbox = sandbox);
        let mut exec = Exec {
            zone,
            fence,
            id,
            spec: Arc::new(spec),
            journal,
            dir,
            state_dir,
            status,
            machine,
            child: None,
            pending: Vec::new(),
            tasks_seen: vec![None; n],
            unreadable: vec![false; n],
            shown: Default::default(),
            markers_seen: Vec::new(),
            done,
            trees: vec![None; n],
            parked: None,
            ended: false,
        };
        exec.step(Input::Start);
        exec.refresh_tasks();
        let mut poll = tokio::time::interval(POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while !exec.ended {
            tokio::select! {
                control = controls.recv() => match control {
                    Some(c) => exec.control(c),
                    None => exec.step(Input::Marker(Marker::Halt)),
                },
                msg = child_msg(&mut exec.child) => exec.child_said(msg),
                _ = poll.tick() => exec.poll(),
            }
        }
        // A killed child's reader ends on its own; nothing waits on it any more.
        tracing::info!(session = %exec.id, "loop ended");
    }
}

/// What a loop in `state` needs of the machine, `parked` until a time with why.
fn loop_want(state: SessionState, parked: Option<(chrono::DateTime<chrono::Utc>, String)>) -> crate::awake::Want {
    use crate::awake::Want;
    match parked {
        _ if state.is_final() => Want { hold: false, reason: "the loop has ended".into(), ..Want::default() },
        Some((until, why)) => Want {
            hold: true,
            reason: format!("the loop waits until {}: {why}", crate::clock::format_ts(until)),
            next_action: None,
            parked_until: Some(until),
        },
        None if state == SessionState::LimitPaused => {
            Want { hold: false, reason: "the loop waits for a reset it does not know".into(), ..Want::default() }
        }
        None => Want { hold: true, reason: "a loop runs".into(), ..Want::default() },
    }
}

impl Exec {
    fn now(&self) -> Now {
        Now { mono: crate::clock::mono_now(), wall: self.journal.now() }
    }

    fn step(&mut self, input: Input) {
        self.pending.push(input);
        while !self.pending.is_empty() {
            let input = self.pending.remove(0);
            let now = self.now();
            let fx = self.machine.step(input, now);
            self.apply(fx);
        }
    }

    fn apply(&mut self, fx: Vec<Effect>) {
        for effect in fx {
            match effect {
                Effect::Emit(kind) => {
                    match &kind {
                        EventKind::LoopWait { until, project, detail, .. }
                            if project.is_none() || self.spec.projects.len() == 1 =>
                        {
                            self.parked = until.map(|u| (u, detail.clone()));
                        }
                        EventKind::Paced { until, reason, .. } => self.parked = until.map(|u| (u, reason.clone())),
                        EventKind::IterationStarted { .. } => self.parked = None,
                        _ => {}
                    }
                    let parked = self.parked.clone();
                    self.status.send_modify(|s| {
                        if let Some(state) = kind.new_state() {
                            s.state = state;
                        }
                        s.options.awake = loop_want(s.state, parked);
                    });
                    self.journal.emit(&self.id, kind);
                }
                Effect::Spawn(run) => match self.spawn(&run) {
                    Ok(child) => self.child = Some(child),
                    Err(error) => self.pending.push(Input::SpawnFailed { error }),
                },
                Effect::Kill { reason } => self.kill(&reason),
                Effect::CheckOff { project, task } => self.check_off(project, &task),
                Effect::End => {
                    // Work the iterations left uncommitted is kept before the loop says it ended.
                    let mut dirs: Vec<PathBuf> = Vec::new();
                    for (i, project) in self.spec.projects.iter().enumerate() {
                        let dir = match &project.isolation {
                            Isolation::None => Some(project.cwd.clone()),
                            Isolation::Worktree(w) => Some(w.path.clone()),
                            Isolation::PerTask { .. } => self.trees[i].as_ref().map(|(_, d)| d.clone()),
                        };
                        dirs.extend(dir.filter(|d| !dirs.contains(d)));
                    }
                    for dir in dirs {
                        crate::session::salvage(&dir, &self.id, "the loop ended", &self.journal);
                    }
                    self.ended = true;
                    let code = if self.machine.failed() { 1 } else { 0 };
                    self.status.send_modify(|s| s.exit = Some(Exit::Code(code)));
                }
            }
        }
    }

    fn control(&mut self, control: Control) {
        match control {
            Control::Stop { source, .. } => {
                tracing::info!(session = %self.id, %source, "loop stopped");
                self.step(Input::Marker(Marker::Halt));
            }
            // Another process runs the loop now (its journal takes nothing more of it from here):
            // its iteration here ends, so two never work one tree.
            Control::StandDown => {
                tracing::warn!(session = %self.id, "another Nightshift took the loop over; ending it here");
                self.journal.disown(&self.id);
                self.step(Input::Marker(Marker::Halt));
            }
            Control::Snapshot(reply) => {
                let _ = reply.send(self.snapshot());
            }
            Control::ResetBreaker(reply) => {
                let _ = reply.send("a loop has no breaker to reset: start it again".into());
            }
            Control::AllowHost { respond, .. } => {
                let _ = respond.send(Err("a loop's fence is set as each iteration starts: allow the host in \
                                          [sandbox] network for the next one"
                    .into()));
            }
            Control::Configure(change, reply) => {
                // Of what a session does by itself, a loop takes the hold ("Pause all").
                if let Some(held) = change.held {
                    let source = if change.source.is_empty() { "a control request".into() } else { change.source };
                    self.step(Input::Held { held, source });
                }
                let held = self.machine.held();
                self.status.send_modify(|s| s.options.held = held);
                let _ = reply.send(self.status.borrow().options.clone());
            }
            Control::Hook(_, reply) => {
                let _ = reply.send(crate::hooks::Answer::Pass);
            }
            // A loop's iterations run headless: no dialog waits on anyone.
            Control::Answer { respond, .. } => {
                let _ = respond.send(Err(crate::phone::Refusal::DialogChanged));
            }
            // A loop has no terminal to attach to (the control socket refuses it first).
            Control::Send { .. }
            | Control::Keys(_)
            | Control::Resize(_)
            | Control::Usage(_)
            | Control::Woke(_)
            | Control::Attach(_) => {}
        }
    }

    /// What the window shows for a loop: its latest iteration as people read it.
    fn snapshot(&self) -> Snapshot {
        let rows: Vec<String> = if self.shown.is_empty() {
            vec!["(no iteration has said anything yet)".to_string()]
        } else {
            self.shown.iter().cloned().collect()
        };
        let n = rows.len().min(u16::MAX as usize) as u16;
        Snapshot {
            rows,
            cursor: (0, 0),
            cursor_visible: false,
            title: format!("loop {}", self.id),
            size: (120, n.max(1)),
            alternate_screen: false,
            program_state: None,
            styled: Vec::new(),
        }
    }

    fn poll(&mut self) {
        for marker in [Marker::Halt, Marker::Stop] {
            if !self.markers_seen.contains(&marker) && self.marker_present(marker) {
                self.markers_seen.push(marker);
                self.step(Input::Marker(marker));
            }
        }
        self.refresh_tasks();
        if self.machine.next_deadline().is_some_and(|d| d <= self.journal.now()) {
            self.step(Input::Tick);
        }
    }

    fn marker_present(&self, marker: Marker) -> bool {
        let Some(state) = &self.state_dir else { return false };
        let own = loop_dir(state, self.id.as_str()).join(marker_name(marker));
        own.exists() || global_marker(state, marker).exists()
    }

    fn refresh_tasks(&mut self) {
        for (i, p) in self.spec.clone().projects.iter().enumerate() {
            let text = match &p.tasks {
                Source::Prompt(prompt) => prompt.clone(),
                Source::File(path) => match std::fs::read_to_string(path) {
                    Ok(text) => text,
                    Err(e) => {
                        // The last tasks read stand (an editor may be replacing the file).
                        if !self.unreadable[i] {
                            self.unreadable[i] = true;
                            tracing::warn!(session = %self.id, "cannot read the tasks file {}: {e}", path.display());
                        }
                        continue;
                    }
                },
            };
            self.unreadable[i] = false;
            if self.tasks_seen[i].as_deref() == Some(text.as_str()) {
                continue;
            }
            let open = match &p.tasks {
                Source::Prompt(prompt) => vec![prompt.clone()],
                Source::File(_) => tasks::open_tasks(&text).into_iter().filter(|t| !self.done[i].contains(t)).collect(),
            };
            self.tasks_seen[i] = Some(text);
            self.step(Input::Tasks { project: i, open });
        }
    }

    fn check_off(&mut self, project: usize, task: &str) {
        let Source::File(path) = &self.spec.projects[project].tasks else { return };
        if !self.spec.projects[project].isolation.is_none() {
            // The tasks file is in the user's checkout, which a loop in worktrees leaves as it is.
            self.done[project].push(task.to_string());
            self.tasks_seen[project] = None;
            self.refresh_tasks();
            return;
        }
        let today = self.journal.now().with_timezone(&self.zone).date_naive();
        match tasks::check_off(path, task, today) {
            Ok(true) => {}
            Ok(false) => {
                tracing::info!(session = %self.id, task, "the task is no longer open in its file: not checked off")
            }
            Err(e) => tracing::warn!(session = %self.id, "{e}"),
        }
        // Read again at once: the machine must not hand the same task out twice.
        self.tasks_seen[project] = None;
        self.refresh_tasks();
    }

    /// Where `run` works: the project's folder, or the same folder of its worktree (a new one for a
    /// new task with `--worktree-per-task`; a probe touches nothing and stays in the project).
    fn workdir(&mut self, run: &Run) -> Result<PathBuf, String> {
        let project = &self.spec.projects[run.project];
        let (root, name) = match &project.isolation {
            Isolation::None => return Ok(project.cwd.clone()),
            Isolation::Worktree(w) => return Ok(worktree::inside(w, &project.cwd)),
            Isolation::PerTask { .. } if run.probe => return Ok(project.cwd.clone()),
            Isolation::PerTask { root, name } => (root, name),
        };
        if let Some((iteration, dir)) = &self.trees[run.project] {
            if *iteration == run.iteration {
                return Ok(dir.clone());
            }
        }
        // A branch name git and `make` take: at most 64, with room for a `-N` below.
        let numbered = format!("{name}-{}", run.iteration);
        let room = 61usize.saturating_sub(numbered.len()).min(32);
        let words = run.task.as_deref().map(|t| worktree::slug(t, room)).unwrap_or_default();
        let base = if words.is_empty() { numbered } else { format!("{numbered}-{words}") };
        // A name an earlier loop (or this one, before a restore) took gets a number.
        let mut made = worktree::make(&project.cwd, &base, root);
        for n in 2..10 {
            match made {
                Err(worktree::WorktreeError::BranchExists(_) | worktree::WorktreeError::PathExists(_)) => {
                    made = worktree::make(&project.cwd, &format!("{base}-{n}"), root);
                }
                _ => break,
            }
        }
        let made = made.map_err(|e| format!("no worktree for the task: {e}"))?;
        let dir = worktree::inside(&made, &project.cwd);
        self.journal.emit(&self.id, EventKind::WorktreeMade { worktree: made, task: run.task.clone() });
        self.trees[run.project] = Some((run.iteration, dir.clone()));
        Ok(dir)
    }
}

/// The tasks of `spec`'s projects in worktrees that the journal says the loop `id` did already (a
/// restored loop goes on from them); empty lists for the others.
fn done_before(journal: &Journal, id: &SessionId, spec: &LoopSpec) -> Vec<Vec<String>> {
    let mut done = vec![Vec::new(); spec.projects.len()];
    if spec.projects.iter().all(|p| p.isolation.is_none()) {
        return done;
    }
    let events = journal.read(|s| s.events_named(id.as_str(), &["task_done"])).unwrap_or_default();
    for e in events {
        let Ok(crate::event::Event { kind: EventKind::TaskDone { project, task }, .. }) = serde_json::from_str(&e.body)
        else {
            continue;
        };
        if let Some(i) = spec.projects.iter().position(|p| p.cwd.display().to_string() == project) {
            done[i].push(task);
        }
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(agent: AgentKind, args: &[&str]) -> LoopSpec {
        LoopSpec {
            agent,
            program: agent.as_str().into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            projects: Vec::new(),
            settings: crate::contract::LoopSettings::default(),
            env: Vec::new(),
            account: None,
            sandbox: None,
        }
    }

    fn run(probe: bool) -> Run {
        Run { project: 0, prompt: "do it".into(), task: None, probe, iteration: 1, attempt: 0 }
    }

    #[test]
    fn codex_may_write_its_workspace_unless_the_user_chose_a_sandbox_and_a_probe_never() {
        let plain = spec(AgentKind::Codex, &["-m", "gpt-5"]);
        assert_eq!(
            plain.argv(&run(false)).join(" "),
            "codex exec --json --skip-git-repo-check --sandbox workspace-write -m gpt-5 do it"
        );
        assert!(plain.argv(&run(true)).join(" ").contains("--sandbox read-only -m gpt-5"));
        let theirs = spec(AgentKind::Codex, &["--sandbox", "danger-full-access"]);
        assert_eq!(theirs.argv(&run(false)).iter().filter(|a| *a == "--sandbox").count(), 1);
    }

    #[test]
    fn a_sandboxed_loop_runs_each_iteration_in_the_agents_sandbox() {
        let sandbox = crate::agent::Sandbox { network: vec!["crates.io".into()], ..crate::agent::Sandbox::default() };
        let mut claude = spec(AgentKind::Claude, &["--model", "opus"]);
        claude.sandbox = Some(sandbox.clone());
        let argv = claude.argv(&run(false));
        let i = argv.iter().position(|a| a == "--settings").expect("its settings");
        let settings: serde_json::Value = serde_json::from_str(&argv[i + 1]).unwrap();
        assert_eq!(settings["sandbox"]["autoAllowBashIfSandboxed"], true);
        let mut codex = spec(AgentKind::Codex, &[]);
        codex.sandbox = Some(sandbox);
        assert_eq!(
            codex.argv(&run(false)).join(" "),
            "codex exec --json --skip-git-repo-check --sandbox workspace-write do it"
        );
        assert!(codex.argv(&run(true)).join(" ").contains("--sandbox read-only"), "a probe touches nothing");
    }

    #[test]
    fn claude_gets_its_stream_and_a_probe_gets_no_tools() {
        let claude = spec(AgentKind::Claude, &["--model", "opus"]);
        assert_eq!(
            claude.argv(&run(false)).join(" "),
            "claude -p do it --output-format stream-json --verbose --model opus"
        );
        assert!(claude.argv(&run(true)).join(" ").ends_with("--tools  --max-turns 1 --no-session-persistence"));
    }
}
