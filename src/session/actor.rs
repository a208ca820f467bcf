//! The session actor: the executor of one session's [`Machine`].
//!
//! One task owns the agent's process (its PTY, output and exit), the screen model and the detector
//! that reads it. It `select!`s over the output, the detector's and the machine's deadlines, the
//! exit, the user's controls and the progress measurements it started, turns each into an
//! [`Input`], and carries out the [`Effect`]s the machine returns. All the deciding is the
//! machine's; all the I/O is here.
//!
//! Its parts: `controls` (the handles' controls and the client's hooks), `afar` (an answer from
//! afar), `salvage` (the uncommitted work kept as a life ends).

use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};
use tokio::time::sleep_until;

use super::machine::{Effect, Input, Machine, Now, Start};
use super::{Control, Options, SessionHandle, Status};
use crate::agent::{Adapter, AgentKind, DialogKind};
use crate::detect::{DetectConfig, Transition, Watcher};
use crate::event::{SessionId, SessionState, StopKind};
use crate::journal::Journal;
use crate::limits;
use crate::pty::{self, CommandSpec, Exit, Pty, Spawned};
use crate::screen::Screen;

/// How long output that was already written is still read after the child exits.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);
/// Rows of the final screen kept with a failed exit.
const LAST_SCREEN_ROWS: usize = 6;

/// Everything an actor needs to run one session.
pub(crate) struct Actor {
    pub id: SessionId,
    /// What the session was armed with (its arguments carrying Nightshift's statusLine and hooks):
    /// every later start of the agent builds its command from it.
    pub terminal: crate::contract::Terminal,
    /// The command the agent runs as now.
    pub command: CommandSpec,
    pub spawned: Spawned,
    pub journal: Journal,
    pub output_tap: Option<mpsc::UnboundedSender<Vec<u8>>>,
    pub adapter: Adapter,
    pub detect: DetectConfig,
    pub start: Start,
    /// Where handoffs and drift captures are kept (the state directory; `None`: nowhere).
    pub state_dir: Option<std::path::PathBuf>,
    /// The network fence's proxy the client's sandbox goes through, and what it reports.
    pub fence: Option<(crate::proxy::Proxy, mpsc::UnboundedReceiver<crate::proxy::Report>)>,
    /// The channels of the agent before, when the session's work moved from it to this one: every
    /// handle (a run's, the window's) follows without a seam.
    pub carried: Option<Carried>,
}

/// The agent's process as the actor holds it (its output and exit are the run loop's).
struct Process {
    pty: Pty,
    output_open: bool,
    /// How it exited, and until when its last output is still read.
    exited: Option<(Exit, Instant)>,
}

/// A new process's output and exit, for the run loop to take.
struct Streams {
    output: mpsc::Receiver<Vec<u8>>,
    exit: tokio::sync::oneshot::Receiver<Exit>,
}

impl Actor {
    /// Starts the actor task; returns the handle and the task. The machine's first decisions (the
    /// journal's first words of the session, its options) are made before this returns.
    pub fn start(self) -> (SessionHandle, tokio::task::JoinHandle<Option<Handover>>) {
        let Actor {
            id,
            terminal,
            command,
            spawned,
            journal,
            output_tap,
            adapter,
            detect,
            start,
            state_dir,
            fence,
            carried,
        } = self;
        let (proxy, reports) = fence.unzip();
        let guard = start.guard.clone();
        let Carried { control_tx, controls, status, status_rx } = carried.unwrap_or_else(|| {
            let (control_tx, controls) = mpsc::channel(64);
            let (status, status_rx) =
                watch::channel(Status { state: SessionState::Running, exit: None, options: Options::default() });
            Carried { control_tx, controls, status, status_rx }
        });
        let handle =
            SessionHandle::new(id.clone(), control_tx.clone(), status_rx.clone(), crate::store::SessionKind::Terminal);
        let (agent, zone) = (start.armed.contract().agent, start.zone.clone());
        let now = Now { mono: crate::clock::mono_now(), wall: journal.now() };
        let (machine, fx) = Machine::new(start, now);
        let (later_tx, later) = mpsc::unbounded_channel();
        let mut exec = Executor {
            id,
            agent,
            zone,
            screen: Screen::new(command.size),
            watcher: Watcher::new(adapter.clone(), detect, now.mono),
            terminal,
            command,
            journal,
            status,
            output_tap,
            adapter,
            detect,
            machine,
            process: Some(Process { pty: spawned.pty, output_open: true, exited: None }),
            streams: Some(Streams { output: spawned.output, exit: spawned.exit }),
            last_exit: Exit::Code(-1),
            later_tx,
            // Weak: when every handle is gone the session stops (the controls close), as before.
            control_tx: control_tx.downgrade(),
            status_rx,
            reply: None,
            answered: None,
            answer_to: None,
            answer_first: false,
            state_dir,
            guard,
            last_tool: None,
            salvages: Vec::new(),
            replies: std::collections::VecDeque::new(),
            applying: false,
            recorder: None,
            no_limit_in: None,
            viewers: Vec::new(),
            proxy,
            // A moment before: the client's files of this life are written after it.
            started: std::time::SystemTime::now() - Duration::from_secs(5),
            stood_down: false,
        };
        exec.record_life();
        exec.apply(fx);
        exec.take_replies();
        let task = tokio::spawn(async move {
            let controls = exec.run(controls, later, reports).await?;
            let Some(super::machine::End::Relayed(relayed)) = exec.machine.ended().cloned() else { return None };
            let Executor { control_tx, status, status_rx, output_tap, .. } = exec;
            // Nobody holds the session any more: nothing to hand over to.
            let control_tx = control_tx.upgrade()?;
            Some(Handover {
                relayed: *relayed,
                carried: Carried { control_tx, controls, status, status_rx },
                output_tap,
            })
        });
        (handle, task)
    }
}

struct Executor {
    /// The network fence's proxy (it stops when the session ends).
    proxy: Option<crate::proxy::Proxy>,
    /// When this process started the session (a restored one's files may be older: its
    /// conversation names them).
    started: std::time::SystemTime,
    id: SessionId,
    agent: AgentKind,
    /// The user's time zone, as the machine was started with: limit texts are read in it.
    zone: crate::clock::Zone,
    terminal: crate::contract::Terminal,
    command: CommandSpec,
    screen: Screen,
    watcher: Watcher,
    journal: Journal,
    status: watch::Sender<Status>,
    output_tap: Option<mpsc::UnboundedSender<Vec<u8>>>,
    adapter: Adapter,
    detect: DetectConfig,
    machine: Machine,
    process: Option<Process>,
    /// The streams of a process just started, until the run loop takes them.
    streams: Option<Streams>,
    last_exit: Exit,
    /// What work done off the runtime (a fingerprint, a handoff's reading) answers with.
    later_tx: mpsc::UnboundedSender<Input>,
    /// The session's own channel ends, carried to the next agent's actor when the work moves (the
    /// control sender weak, so it never keeps the session's controls open by itself).
    control_tx: mpsc::WeakSender<Control>,
    status_rx: watch::Receiver<Status>,
    /// What the last [`Effect::Reply`] said.
    reply: Option<String>,
    /// The client's hook waiting for the next [`Effect::Answer`].
    answer_to: Option<tokio::sync::oneshot::Sender<crate::hooks::Answer>>,
    /// Whether that answer goes before the step's other effects (a tool call the guard judges).
    answer_first: bool,
    /// What the last [`Effect::Answered`] said, for an answer from afar.
    answered: Option<Result<(), crate::phone::Refusal>>,
    state_dir: Option<std::path::PathBuf>,
    guard: Option<std::sync::Arc<crate::hooks::guard::Rules>>,
    /// The tool the client last asked to run (its permission prompt names it).
    last_tool: Option<crate::agent::Subject>,
    /// Salvages under way: waited for before the session's end is reported.
    salvages: Vec<tokio::task::JoinHandle<()>>,
    /// What carrying out effects learned for the machine (a start's pid, the accounts' meters):
    /// its next inputs, taken in order once the step that asked has had all its effects. The
    /// machine never steps while its effects are being carried out.
    replies: std::collections::VecDeque<Input>,
    /// Effects are being carried out: an input now waits in `replies`.
    applying: bool,
    /// The running life's recording (its output only), when there is a state directory.
    recorder: Option<crate::record::Recorder>,
    /// Attached viewers' output queues.
    viewers: Vec<super::ViewerQueue>,
    /// The limit region of the last judged frame when it held no limit notice: the same text on
    /// the next frame (a working turn's footer, every second) holds none either.
    no_limit_in: Option<String>,
    /// Another process took the session over: it ends here, quietly.
    stood_down: bool,
}

impl Executor {
    fn now(&self) -> Now {
        Now { mono: crate::clock::mono_now(), wall: self.journal.now() }
    }

    /// One input through the machine, its effects carried out, then any replies they made.
    fn step(&mut self, input: Input) {
        self.replies.push_back(input);
        if !self.applying {
            self.take_replies();
        }
    }

    /// Steps the machine through the waiting replies, in order, each one's effects carried out
    /// before the next.
    fn take_replies(&mut self) {
        while let Some(input) = self.replies.pop_front() {
            if !self.journal.owns(&self.id) {
                // Taken over while this process stalled: nothing of this input is carried out.
                self.stand_down();
                return;
            }
            let now = self.now();
            let fx = self.machine.step(input, now);
            self.apply(fx);
        }
    }

    fn apply(&mut self, effects: Vec<Effect>) {
        self.applying = true;
        // The guard's answer to a tool call goes first, never waiting on the journal; sent off this
        // worker, as a task it wakes would wait in its (unstealable) LIFO slot while the step's
        // writes block it. Any other hook is answered once its step is carried out: a turn's end
        // answered first lets the client go on before the step has settled what comes next, and
        // the night rehearsal's cycles then found the agent busy at every next step.
        let mut answer = effects.iter().find_map(|e| if let Effect::Answer(a) = e { Some(a.clone()) } else { None });
        if self.answer_first {
            if let Some((answer, to)) = answer.take().and_then(|a| self.answer_to.take().map(|to| (a, to))) {
                tokio::task::spawn_blocking(move || to.send(answer));
            }
        }
        for effect in effects {
            match effect {
                Effect::Emit(kind) => {
                    self.journal.emit(&self.id, kind);
                }
                Effect::Write { after, bytes } => match &self.process {
                    Some(p) if p.exited.is_none() => {
                        self.watcher.typed(crate::clock::mono_now() + after);
                        p.pty.write_after(after, bytes);
                    }
                    _ => tracing::debug!(session = %self.id, "input dropped: the agent is not running"),
                },
                Effect::Signal(signal) => {
                    if let Some(p) = &self.process {
                        p.pty.signal_group(match signal {
                            crate::child::Signal::Hangup => nix::sys::signal::Signal::SIGHUP,
                            crate::child::Signal::Kill => nix::sys::signal::Signal::SIGKILL,
                        });
                    }
                }
                Effect::Spawn { conversation, prompt } => self.respawn(conversation, prompt),
                Effect::SwitchAccount { account, prompt } => self.switch_account(&account, prompt),
                Effect::CheckOther { contract } => {
                    let other = crate::session::login::other_agent(&contract, &self.journal);
                    self.replies.push_back(Input::OtherChecked(other));
                }
                Effect::Meters { accounts } => {
                    let meters = crate::session::login::meters(self.agent, &accounts, &self.command.env, &self.journal);
                    self.replies.push_back(Input::Meters(meters));
                }
                Effect::ReadUsage => {
                    let read = self.reread_usage();
                    self.replies.push_back(Input::Reread(read));
                }
                Effect::SaveHandoff { text } => self.save_handoff(&text),
                Effect::Answer(_) => {}
                Effect::Measure { purpose, exclude } => {
                    let (dir, tx) = (self.command.cwd.clone(), self.later_tx.clone());
                    // git on a big repository takes its time: never on the async workers.
                    tokio::task::spawn_blocking(move || {
                        let fingerprint = crate::git::fingerprint(&dir, &exclude);
                        let _ = tx.send(Input::Measured { purpose, fingerprint });
                    });
                }
                Effect::Gather { since, files } => {
                    let (dir, tx) = (self.command.cwd.clone(), self.later_tx.clone());
                    tokio::task::spawn_blocking(move || {
                        let _ = tx.send(Input::Gathered(crate::git::gather(&dir, since, &files)));
                    });
                }
                Effect::Reply(text) => self.reply = Some(text),
                Effect::Answered(result) => self.answered = Some(result),
                Effect::Salvage { reason } => {
                    let (dir, journal, id) = (self.command.cwd.clone(), self.journal.clone(), self.id.clone());
                    self.salvages.push(tokio::task::spawn_blocking(move || salvage(&dir, &id, &reason, &journal)));
                }
            }
        }
        if let Some((answer, to)) = answer.and_then(|a| self.answer_to.take().map(|to| (a, to))) {
            let _ = to.send(answer);
        }
        self.applying = false;
        self.publish();
    }

    /// Ends the session here without a word or a signal to the agent: another process runs it now
    /// (it ended what was left of this one's agent before it started its own).
    fn stand_down(&mut self) {
        tracing::warn!(session = %self.id, "another Nightshift took the session over; standing down");
        self.journal.disown(&self.id);
        self.replies.clear();
        self.stood_down = true;
        // Its terminal closes with it; the streams go unread.
        self.process = None;
        self.streams = None;
    }

    /// Lets the handles see where the session is.
    fn publish(&self) {
        let options = self.machine.options(self.now());
        let state = self.machine.state();
        self.status.send_if_modified(|s| {
            let changed = s.options != options || s.state != state;
            if changed {
                s.options = options;
                s.state = state;
            }
            changed
        });
    }

    /// Starts the agent again on its conversation (Claude: `--resume <id>`, or `--continue`), with
    /// `prompt` to go on from (the kickstart, a fresh handoff), never the opening prompt.
    fn respawn(&mut self, conversation: Option<String>, prompt: Option<String>) {
        let conversation = crate::contract::Conversation::Resume { id: conversation, prompt };
        self.command.args = self.terminal.command(self.agent, &conversation);
        self.spawn_again();
    }

    /// Starts the agent again under `account` (its config directory in the child's environment),
    /// on a fresh conversation, and journals the session's new account.
    fn switch_account(&mut self, account: &crate::agent::Account, prompt: Option<String>) {
        if let Some(var) = crate::agent::Account::variable(self.agent) {
            self.command.env.retain(|(k, _)| k != var);
            self.command.env.push((var.to_string(), account.dir.display().to_string()));
        }
        self.command.args = self.terminal.command(self.agent, &crate::contract::Conversation::Fresh { prompt });
        let (id, dir) = (self.id.to_string(), account.dir.display().to_string());
        if let Err(e) = self.journal.write(|s| s.set_account(&id, &account.name, &dir)) {
            tracing::error!(session = %self.id, "could not journal the session's new account: {e}");
        }
        self.spawn_again();
    }

    /// Starts the agent's command as it stands now.
    fn spawn_again(&mut self) {
        match pty::spawn(&self.command) {
            Ok(spawned) => {
                let pid = spawned.pty.pid();
                self.screen = Screen::new(self.command.size);
                self.watcher = Watcher::new(self.adapter.clone(), self.detect, crate::clock::mono_now());
                self.process = Some(Process { pty: spawned.pty, output_open: true, exited: None });
                self.streams = Some(Streams { output: spawned.output, exit: spawned.exit });
                self.record_life();
                self.replies.push_back(Input::Started { pid });
            }
            Err(error) => {
                let exit_code = error.exit_code();
                self.replies.push_back(Input::SpawnFailed { error: error.to_string(), exit_code });
            }
        }
    }

    async fn run(
        &mut self,
        mut controls: mpsc::Receiver<Control>,
        mut later: mpsc::UnboundedReceiver<Input>,
        mut reports: Option<mpsc::UnboundedReceiver<crate::proxy::Report>>,
    ) -> Option<mpsc::Receiver<Control>> {
        let mut controls_open = true;
        let mut output: Option<mpsc::Receiver<Vec<u8>>> = None;
        let mut exit_rx: Option<tokio::sync::oneshot::Receiver<Exit>> = None;
        // The three timers live across turns of the loop and are moved only when their time
        // changes: a chunk of output usually leaves them where they were.
        let far = || crate::clock::mono_now() + Duration::from_secs(86_400 * 365);
        let (wake_at, tick_at, drain_at) =
            (sleep_until(far().into()), sleep_until(far().into()), sleep_until(far().into()));
        tokio::pin!(wake_at, tick_at, drain_at);
        while self.machine.ended().is_none() && !self.stood_down {
            if let Some(streams) = self.streams.take() {
                output = Some(streams.output);
                exit_rx = Some(streams.exit);
            }
            let judging = self.process.as_ref().is_some_and(|p| p.exited.is_none());
            let wakeup = self.watcher.next_wakeup().filter(|_| judging);
            let deadline = self.machine.next_deadline().filter(|_| judging || self.process.is_none());
            let drain_until = self.process.as_ref().and_then(|p| p.exited.as_ref().map(|(_, t)| *t));
            let reading = self.process.as_ref().is_some_and(|p| p.output_open);
            for (timer, at) in
                [(wake_at.as_mut(), wakeup), (tick_at.as_mut(), deadline), (drain_at.as_mut(), drain_until)]
            {
                if let Some(at) = at.filter(|at| *at != timer.deadline().into_std()) {
                    timer.reset(at.into());
                }
            }
            tokio::select! {
                chunk = recv(&mut output), if reading => match chunk {
                    Some(bytes) => self.output(bytes),
                    None => {
                        if let Some(p) = &mut self.process {
                            p.output_open = false;
                        }
                        self.finish_life_if_drained();
                    }
                },
                () = &mut wake_at, if wakeup.is_some() => self.wake(),
                () = &mut tick_at, if deadline.is_some() => self.step(Input::Tick),
                exit = exited(&mut exit_rx), if judging => {
                    if let Some(p) = &mut self.process {
                        p.exited = Some((exit, crate::clock::mono_now() + DRAIN_AFTER_EXIT));
                    }
                    self.finish_life_if_drained();
                }
                () = &mut drain_at, if drain_until.is_some() => {
                    if let Some(p) = &mut self.process {
                        p.output_open = false;
                    }
                    self.finish_life_if_drained();
                }
                Some(input) = later.recv() => self.step(input),
                Some(report) = fence_report(&mut reports) => {
                    if let crate::proxy::Report::Refused(r) = report {
                        // The Bash command running now, as the client's hook named it.
                        let command = self.last_tool.as_ref().filter(|t| t.tool == "Bash").map(|t| t.input.clone());
                        self.step(Input::NetRefused { host: r.host, port: r.port, command });
                    }
                }
                control = controls.recv(), if controls_open => match control {
                    // Every handle is gone: the supervisor dropped the session.
                    None => {
                        controls_open = false;
                        self.step(Input::Stop { source: "the supervisor".into(), kind: StopKind::Shutdown });
                    }
                    Some(control) => self.control(control),
                },
            }
        }
        // The last life's work is kept before anyone hears the session ended (a `run` exits then).
        for salvage in std::mem::take(&mut self.salvages) {
            let _ = salvage.await;
        }
        if matches!(self.machine.ended(), Some(super::machine::End::Relayed(_))) {
            // Not an end: the next agent's actor takes the channels on.
            return Some(controls);
        }
        let mut options = self.machine.options(self.now());
        options.respawn_active = false;
        options.auto_resume = None;
        let exit = self.last_exit.clone();
        let state = self.machine.state();
        self.status.send_modify(|st| {
            st.exit = Some(exit);
            st.options = options;
            st.state = state;
        });
        None
    }

    /// Starts recording the life that just started.
    fn record_life(&mut self) {
        let size = self.command.size;
        self.recorder = self.state_dir.as_deref().and_then(|dir| {
            crate::record::Recorder::start(dir, self.id.as_str(), size.cols, size.rows, crate::record::SESSION_CAP)
        });
    }

    fn output(&mut self, bytes: Vec<u8>) {
        self.screen.feed(&bytes);
        if let Some(recorder) = &mut self.recorder {
            recorder.output(&bytes);
        }
        // A viewer that falls behind is let go (it attaches again for a fresh screen): the session
        // never waits for one.
        self.viewers.retain(|v| v.offer(&bytes));
        if let Some(tap) = &self.output_tap {
            let _ = tap.send(bytes);
        }
        if self.process.as_ref().is_some_and(|p| p.exited.is_none()) {
            let t = self.watcher.output(crate::clock::mono_now());
            self.activity(t);
        }
    }

    /// The latest figures of a Codex session's rollout file: its conversation's, or else the newest
    /// thread started in its folder during its life. Read, never written.
    fn codex_usage(&self) -> Option<crate::usage::Sample> {
        let home = crate::hooks::codex::home_for(&self.command.env)?;
        let file = match self.machine.conversation() {
            Some(thread) => crate::hooks::codex::rollout(&home, &thread),
            None => crate::hooks::codex::rollout_in(&home, &self.command.cwd, self.started),
        }?;
        crate::usage::codex::read_latest(&file)
    }

    /// The plan windows of the session's account as read again: Codex's own rollout, else the
    /// journal's newest sample of the account from any session.
    fn reread_usage(&self) -> Option<crate::usage::Sample> {
        if self.agent == AgentKind::Codex {
            if let Some(sample) = self.codex_usage() {
                self.journal.usage(&self.id, &sample);
                return Some(sample);
            }
        }
        let read = self.journal.read(|s| {
            let account = s.session(self.id.as_str())?.and_then(|row| row.account);
            let rows = s.latest_limits_by_account(self.agent)?;
            Ok::<_, crate::store::StoreError>(rows.into_iter().find(|r| r.account == account).map(|r| r.sample))
        });
        read.unwrap_or_else(|e| {
            tracing::warn!(session = %self.id, "cannot read the usage again: {e}");
            None
        })
    }

    fn wake(&mut self) {
        let t = self.watcher.wake(crate::clock::mono_now(), &self.screen);
        self.drift();
        if let Some(region) = self.watcher.take_limit_region() {
            // The client's word that it works on past a full window, on the plan's extra usage.
            if limits::extra_usage_notice(&region) {
                self.step(Input::ExtraUsage);
            }
            let found = if self.no_limit_in.as_ref() == Some(&region) {
                None
            } else {
                limits::find_limit(&region, self.journal.now(), &self.zone)
            };
            self.no_limit_in = found.is_none().then_some(region);
            if found.is_some() && self.agent == AgentKind::Codex {
                // Codex's own data first: its rollout keeps the refused request's windows and the
                // exact reset; the screen's notice (a local time, no zone) is the cross-check.
                if let Some(sample) = self.codex_usage() {
                    self.journal.usage(&self.id, &sample);
                    self.step(Input::Sample(sample));
                }
            }
            self.step(Input::LimitNotice(found));
        }
        if self.watcher.take_working_seen() {
            self.step(Input::TurnSeen);
        }
        self.activity(t);
    }

    fn activity(&mut self, transition: Option<Transition>) {
        if let Some(seen) = self.seen(transition) {
            self.step(Input::Activity { transition: seen.transition, menu: seen.menu, menu_limit: seen.menu_limit });
        }
    }

    /// What the machine is told of an activity change: the transition, and the usage-limit menu
    /// on screen when its dialog is one. What the agent wrote up to a rest goes to disk first.
    fn seen(&mut self, transition: Option<Transition>) -> Option<super::machine::Seen> {
        let transition = transition?;
        tracing::debug!(session = %self.id, to = ?transition.to, reason = %transition.reason, "activity changed");
        // The agent stopped to rest or to ask: what it wrote up to now goes to disk, not only after
        // its next output.
        if transition.to != crate::detect::Activity::Working {
            if let Some(recorder) = &mut self.recorder {
                recorder.flush();
            }
        }
        let (menu, menu_limit) = if transition.verdict.dialog.as_ref().is_some_and(|d| d.kind == DialogKind::Menu) {
            let menu = limits::menu::read(&self.screen.snapshot().rows);
            let notice = menu.as_ref().and_then(|m| m.notice.clone());
            let limit = notice.and_then(|n| limits::find_limit(&n, self.journal.now(), &self.zone));
            (menu, limit)
        } else {
            (None, None)
        };
        Some(super::machine::Seen { transition, menu, menu_limit })
    }

    /// The process exited and its last output has been read (or the time for it is up): the life
    /// is over.
    fn finish_life_if_drained(&mut self) {
        let Some(p) = &self.process else { return };
        let Some((exit, drain_until)) = &p.exited else { return };
        if p.output_open && crate::clock::mono_now() < *drain_until {
            return;
        }
        let exit = exit.clone();
        let last_screen =
            self.screen.snapshot().last_rows(LAST_SCREEN_ROWS).iter().map(|r| r.trim_end().to_string()).collect();
        self.last_exit = exit.clone();
        // The life's recording ends with it.
        self.recorder = None;
        self.step(Input::Exited { exit, last_screen });
        // The machine's last word to the process group (SIGKILL after a stop) is said: let it go.
        self.process = None;
    }

    /// Drift between the hooks and the screen: the screen is kept for a fixture, and journalled.
    fn drift(&mut self) {
        let Some(drift) = self.watcher.take_drift() else { return };
        let capture = self.state_dir.as_ref().and_then(|dir| {
            let dir = dir.join("drift");
            crate::paths::private_dirs(&dir).ok()?;
            let stamp = self.journal.now().format("%Y%m%dT%H%M%S%.3fZ");
            let base = dir.join(format!("{}-{stamp}", self.id));
            let snap = self.screen.styled_snapshot();
            crate::paths::write_private(&base.with_extension("txt"), snap.text()).ok()?;
            Some(base.with_extension("txt").display().to_string())
        });
        tracing::warn!(session = %self.id, hook = %drift.hook, screen = %drift.screen, "the client's hooks and its screen disagree");
        self.step(Input::Drift { drift, capture });
    }

    /// Keeps the agent's handoff in the state directory: the latest, and one per handoff.
    fn save_handoff(&self, text: &str) {
        let Some(dir) = &self.state_dir else { return };
        if let Err(e) = crate::hooks::handoff::keep(dir, self.id.as_str(), self.journal.now(), text) {
            tracing::warn!(session = %self.id, "could not keep the handoff in {}: {e}", dir.display());
        }
    }
}

async fn fence_report(
    reports: &mut Option<mpsc::UnboundedReceiver<crate::proxy::Report>>,
) -> Option<crate::proxy::Report> {
    match reports {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

async fn recv(output: &mut Option<mpsc::Receiver<Vec<u8>>>) -> Option<Vec<u8>> {
    match output {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

async fn exited(exit: &mut Option<tokio::sync::oneshot::Receiver<Exit>>) -> Exit {
    match exit {
        Some(rx) => rx.await.unwrap_or(Exit::Code(-1)),
        None => std::future::pending().await,
    }
}

mod afar;
mod controls;
mod handover;
mod salvage;

pub(crate) use handover::{Carried, Handover};

pub(crate) use salvage::salvage;
