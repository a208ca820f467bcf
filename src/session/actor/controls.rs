//! What reaches the session from outside its terminal, carried out: the controls of its handles
//! (keys, attach, resize, answers, configuration, stop, a host let through the fence) and the
//! client's hooks, which the detector hears of before the machine decides.

use super::Executor;
use crate::agent::DialogKind;
use crate::detect::TurnEnd;
use crate::limits;
use crate::session::machine::Input;
use crate::session::Control;

impl Executor {
    pub(super) fn control(&mut self, control: Control) {
        match control {
            Control::Send { text, enter, by } => self.step(Input::Typed { text, enter, by }),
            Control::Keys(bytes) => self.step(Input::Keys(bytes)),
            Control::Attach(reply) => {
                let (tx, output) = crate::session::Backlog::new();
                let attached =
                    crate::session::Attached { size: self.command.size, screen: self.screen.formatted(), output };
                if reply.send(attached).is_ok() {
                    self.viewers.push(tx);
                }
            }
            Control::Resize(size) => {
                if size == self.command.size {
                    return;
                }
                // What viewers were sent was drawn for the old size: each attaches again and is
                // drawn afresh at the new one.
                self.viewers.clear();
                self.screen.resize(size);
                if let Some(recorder) = &mut self.recorder {
                    recorder.resize(size.cols, size.rows);
                }
                self.command.size = size;
                if let Some(Err(e)) = self.process.as_ref().map(|p| p.pty.resize(size)) {
                    tracing::warn!(session = %self.id, "resize failed: {e}");
                }
            }
            Control::Snapshot(reply) => {
                let _ = reply.send(self.screen.styled_snapshot());
            }
            Control::Answer { dialog, reply, by, nonce, respond } => {
                let _ = respond.send(self.answer_from_afar(dialog, reply, by, nonce));
            }
            Control::ResetBreaker(reply) => {
                self.step(Input::ResetBreakers);
                let _ = reply.send(self.reply.take().unwrap_or_default());
            }
            Control::Usage(sample) => self.step(Input::Sample(sample)),
            Control::Woke(from) => self.step(Input::Woke { from }),
            Control::Configure(change, reply) => {
                self.step(Input::Configure(*change));
                let _ = reply.send(self.machine.options(self.now()));
            }
            Control::Stop { source, kind } => self.step(Input::Stop { source, kind }),
            Control::StandDown => self.stand_down(),
            Control::AllowHost { host, by, respond } => {
                let answer = match (crate::proxy::Pattern::parse(&host), &self.proxy) {
                    (None, _) => Err(format!("`{host}` is not a host: give a name, an address, host:port or *.domain")),
                    (Some(_), None) => Err("this session's network is not fenced by Nightshift's proxy".to_string()),
                    (Some(pattern), Some(proxy)) => {
                        proxy.allow(pattern.clone());
                        self.step(Input::HostAllowed { host: pattern.to_string(), by });
                        Ok(self.machine.options(self.now()))
                    }
                };
                let _ = respond.send(answer);
            }
            Control::Hook(hook, reply) => {
                let name = hook.name().to_string();
                self.answer_to = Some(reply);
                self.hook(hook);
                // The machine answers every hook; one it left unanswered is a fault to see, and the
                // client is let go rather than kept waiting for its own time limit.
                if let Some(reply) = self.answer_to.take() {
                    tracing::error!(session = %self.id, hook = %name, "the machine gave the hook no answer; it passes");
                    let _ = reply.send(Default::default());
                }
            }
        }
    }

    /// A hook of the client: the detector hears of the turn first, then the machine decides.
    fn hook(&mut self, hook: crate::hooks::Hook) {
        use crate::hooks::Event;
        let kind = match &hook.event {
            Event::Notification { kind, .. } => kind.as_str(),
            Event::SessionStart { source } => source.as_str(),
            _ => "",
        };
        tracing::debug!(session = %self.id, hook = hook.name(), kind, "the client's hook");
        let now = crate::clock::mono_now();
        let transition = match &hook.event {
            Event::UserPromptSubmit { .. } => self.watcher.turn_started(now),
            Event::Stop { .. } | Event::StopFailure { .. } => self.watcher.turn_ended(now, TurnEnd::Stop),
            Event::TurnComplete { .. } => self.watcher.turn_ended(now, TurnEnd::Notify),
            Event::Notification { kind: crate::hooks::NotificationKind::PermissionPrompt, message } => {
                let text = match &self.last_tool {
                    Some(tool) => format!("{message}: {tool}").chars().take(300).collect(),
                    None => message.clone(),
                };
                let mut dialog = crate::agent::Dialog::new(DialogKind::Permission, Some(text));
                dialog.subject = self.last_tool.clone().map(Box::new);
                self.watcher.asked(now, dialog)
            }
            Event::PreToolUse { tool, input, .. } => {
                let subject = crate::agent::Subject::of(tool, input);
                self.watcher.tool(subject.clone());
                self.last_tool = Some(subject);
                None
            }
            _ => None,
        };
        // The hook carries the activity change it made: one input, the machine's own order.
        let seen = self.seen(transition).map(Box::new);
        let limit = match &hook.event {
            Event::StopFailure { last_message: Some(message), .. } => {
                limits::find_limit(message, self.journal.now(), &self.zone)
            }
            _ => None,
        };
        let facts = match (&hook.event, &self.guard) {
            (Event::PreToolUse { input, cwd, .. }, Some(rules)) => input["command"]
                .as_str()
                .map(|command| crate::session::guard::facts(rules, command, cwd.as_deref(), &self.command.cwd)),
            _ => None,
        };
        self.answer_first = matches!(hook.event, Event::PreToolUse { .. });
        self.step(Input::Hook { hook, limit, facts, seen });
        self.answer_first = false;
        // Journalled after the hook's answer (a command waits on the guard's).
        self.drift();
    }
}
