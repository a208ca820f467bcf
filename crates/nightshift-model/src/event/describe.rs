//! Each event in words, as the journal's `text`, `nightshift journal` and the window show it.

use std::fmt;

use super::*;

impl EventKind {
    /// The event as a person reads it, in one line: the CLI's `journal` and the window's session page
    /// both show this. Times are in `local`.
    pub fn describe<Z: chrono::TimeZone>(&self, local: &Z) -> String
    where
        Z::Offset: fmt::Display,
    {
        let at = |t: &DateTime<Utc>| t.with_timezone(local).format("%a %H:%M").to_string();
        match self {
            Self::State { state, reason, dialog, last_screen, .. } => {
                let mut text = format!("{} — {reason}", state.as_str().replace('_', " "));
                if let Some(question) = dialog.as_ref().and_then(|d| d.text.as_deref()) {
                    text.push_str(&format!(": {question}"));
                }
                if let Some(last) =
                    last_screen.as_ref().and_then(|rows| rows.iter().rev().find(|r| !r.trim().is_empty()))
                {
                    text.push_str(&format!(" (last on screen: {})", last.trim()));
                }
                text
            }
            Self::Input { source, chars, enter } => {
                format!("typed {chars} characters{} ({source})", if *enter { " + Enter" } else { "" })
            }
            Self::StopRequested { source, kind: StopKind::User } => format!("stop requested ({source})"),
            Self::StopRequested { source, kind: StopKind::Shutdown } => {
                format!("stopped because Nightshift is ending ({source})")
            }
            Self::RespawnStep { cycle, step, outcome } => {
                let outcome = match outcome {
                    crate::respawn::StepOutcome::Sent => "sent",
                    crate::respawn::StepOutcome::Done => "done",
                    crate::respawn::StepOutcome::TimedOut => "timed out",
                };
                format!("cycle {cycle}: {} step {outcome}", step.as_str())
            }
            Self::Respawn { action, cycle, reason, cost_usd } => {
                let mut text = format!("respawn {}", action.as_str());
                if let Some(cycle) = cycle {
                    text.push_str(&format!(" (cycle {cycle})"));
                }
                if let Some(reason) = reason {
                    text.push_str(&format!(" — {reason}"));
                }
                if let Some(cost) = cost_usd {
                    text.push_str(&format!(" (${cost:.2})"));
                }
                text
            }
            Self::Contract { contract } => contract.describe(),
            Self::RespawnSettings { preset, settings, until } => format!(
                "respawn settings{}: idle timeout {} s, armed until {}",
                preset.as_deref().map(|p| format!(" of preset {p}")).unwrap_or_default(),
                settings.idle_timeout.as_secs_f64(),
                at(until)
            ),
            Self::LimitDetected { resets_at, source, line, .. } => {
                let when = resets_at
                    .as_ref()
                    .map_or_else(|| "no reset time given".to_string(), |t| format!("resets {}", at(t)));
                format!("usage limit ({}): {line} — {when}", source.as_str())
            }
            Self::LimitCleared { reason } => format!("usage limit over: {reason}"),
            Self::ResumeSent { attempt } => format!("resume sent (attempt {attempt})"),
            Self::LimitFailed { reason } => format!("resume failed: {reason}"),
            Self::WindowGuard { reason } => format!("fresh-window guard: {reason}"),
            Self::Paced { until: Some(until), reason, .. } => format!("parked until {} {reason}", at(until)),
            Self::Paced { until: None, reason, .. } => format!("the pace lets work go on: {reason}"),
            Self::ResumeArmed { due, .. } => format!("resume due {}", at(due)),
            Self::ResumeKept { due, reason, .. } => {
                format!("resume kept for the next start (due {}): {reason}", at(due))
            }
            Self::Automation { change, source, detail } => match detail {
                Some(detail) => format!("{}: {detail} ({source})", change.as_str()),
                None => format!("{} ({source})", change.as_str()),
            },
            Self::Conversation { id } => format!("the client's conversation is {id}"),
            Self::Compacted { trigger } => format!("the client compacted its context ({trigger})"),
            Self::DialogAnswered { dialog, text, by, waited_secs, replaced } => {
                let what = text.as_deref().map(|t| format!(" \"{t}\"")).unwrap_or_default();
                let then = if *replaced { "; another took its place" } else { "" };
                match by {
                    Answerer::Nobody => {
                        format!("the {dialog} dialog{what} went away after {waited_secs} s, nothing typed{then}")
                    }
                    by => format!("the {dialog} dialog{what} was answered {} after {waited_secs} s{then}", by.as_str()),
                }
            }
            Self::Adopted { by, down_secs, why, reason } => format!(
                "taken over by {by} after {} without its Nightshift ({why}): {reason}",
                humantime::format_duration(std::time::Duration::from_secs(*down_secs))
            ),
            Self::Restored { reason, down_secs } => {
                format!(
                    "restored after {} without Nightshift: {reason}",
                    humantime::format_duration(std::time::Duration::from_secs(*down_secs))
                )
            }
            Self::NetRefused { host, port, command } => match command {
                Some(command) => format!("the network fence refused {host}:{port}, tried by {command}"),
                None => format!("the network fence refused {host}:{port}"),
            },
            Self::NetAllowed { host, by } => format!("{host} is let through the fence from now on ({by})"),
            Self::Fence { fence, hosts, warnings } => {
                let mut text = match (fence, hosts.as_slice()) {
                    (crate::agent::Fence::Open, _) => "the network is open to every host, each connection seen".into(),
                    (_, []) => format!("the network fence ({}) lets no host through", fence.as_str()),
                    (_, hosts) => format!(
                        "the network fence ({}) lets through {}",
                        fence.as_str(),
                        hosts.iter().map(|h| format!("{} ({})", h.host, h.why)).collect::<Vec<_>>().join(", ")
                    ),
                };
                for warning in warnings {
                    text.push_str(&format!("; {warning}"));
                }
                text
            }
            Self::ExtraUsage { resets_at } => match resets_at {
                Some(at) => format!(
                    "the window is full and the client works on, on the plan's extra usage, until its reset at {}",
                    crate::clock::format_ts(*at)
                ),
                None => "the window is full and the client works on, on the plan's extra usage".into(),
            },
            Self::ContextThreshold { pct, threshold } => format!(
                "the context is {pct:.0}% in use, past the handoff threshold ({threshold:.0}%): the agent is asked for \
                 a handoff at its turn's end"
            ),
            Self::ContextHigh { pct, threshold } => format!(
                "the fresh conversation starts with its context at {}%, past the handoff threshold of {}%: \
                 no handoff again until it grows",
                pct.round(),
                threshold.round()
            ),
            Self::AutoAccepted { dialog, text } => match text {
                Some(text) => format!("answered a routine {dialog} dialog: {text}"),
                None => format!("answered a routine {dialog} dialog"),
            },
            Self::Drift { hook, screen, .. } => {
                format!("the client's hooks and its screen disagree: the hooks said {hook}, the screen showed {screen}")
            }
            Self::GuardDenied { what, command, .. } => format!("the guard refused {what}: {command}"),
            Self::GuardUnreachable { command, why } => {
                format!("the guard could not judge a command ({why}) and refused it: {command}")
            }
            Self::SandboxCommand { command, blocked: true, failed } => {
                format!("the sandbox refused a command: {command} ({})", failed.as_deref().unwrap_or("refused"))
            }
            Self::SandboxCommand { command, failed: Some(said), .. } => {
                format!("a command failed in the sandbox: {command} ({said})")
            }
            Self::SandboxCommand { command, .. } => format!("a command ran in the sandbox without a prompt: {command}"),
            Self::PushFailed { target, reason } => {
                format!("a push notification ({target}) was not delivered: {reason}; later ones are still tried")
            }
            Self::PushSent { target, kind } => {
                format!("a push notification ({}) was delivered to {target}", notice_kind(*kind))
            }
            Self::PushNotSent { target, kind } => {
                format!("a push notification ({}) was not delivered to {target}", notice_kind(*kind))
            }
            Self::RemoteAction { action, applied: true, .. } => format!("from the phone: {action}"),
            Self::RemoteAction { action, refused, .. } => format!(
                "from the phone, refused: {action}, because {}",
                refused.as_deref().unwrap_or("it could not be applied")
            ),
            Self::PhoneListen { working: false, reason } => {
                format!("the phone's answers cannot be heard: {reason}; Nightshift keeps trying")
            }
            Self::PhoneListen { working: true, reason } => format!("the phone's answers are heard again ({reason})"),
            Self::WorktreeMade { worktree, task } => format!(
                "made the worktree {} ({}){}",
                worktree.path.display(),
                worktree.branch,
                task.as_deref().map(|t| format!(" for the task: {t}")).unwrap_or_default()
            ),
            Self::Salvaged { repo, reference, files, bytes, reason, preexisting, users, too_big, .. } => {
                let mut text = format!(
                    "kept {files} uncommitted file(s) ({}) of {repo} as {reference} ({reason}); \
                     `nightshift salvage show` shows them",
                    crate::units::bytes(*bytes)
                );
                if !preexisting.is_empty() {
                    text.push_str(&format!(
                        "; there before the session began, untouched since: {}",
                        preexisting.join(", ")
                    ));
                }
                if !users.is_empty() {
                    text.push_str(&format!(
                        "; your own, there before the session began and untouched since, left as they are: {}",
                        users.join(", ")
                    ));
                }
                if !too_big.is_empty() {
                    let big: Vec<String> = too_big.iter().map(ToString::to_string).collect();
                    text.push_str(&format!("; too big to keep, left as they are: {}", big.join(", ")));
                }
                text
            }
            Self::SalvageSkipped { repo, why, reason, .. } => format!("did not salvage {repo} ({reason}): {why}"),
            Self::SalvageUnchanged { repo, reference, reason } => {
                format!("the uncommitted work of {repo} is unchanged since {reference} ({reason}): nothing new to keep")
            }
            Self::HandoffAsked { times } => {
                format!("asked the agent for a handoff (time {times}): its context is near full")
            }
            Self::Handoff { chars } => format!("the agent wrote its handoff ({chars} characters)"),
            Self::HandoffGiven { source } => format!("the handoff was given back to the client ({source})"),
            Self::HandoffMissing { times } => format!("no handoff after {times} asks: the cycle goes on without"),
            Self::AgentSwitch { action, from, to, reason, .. } => match action {
                SwitchAction::Due => format!("the work moves from {from} to {to} at the turn's end: {reason}"),
                SwitchAction::Held => format!("the work stays with {from}: {reason}"),
                SwitchAction::Switched => format!("the work moved from {from} to {to}: {reason}"),
            },
            Self::HandoffBuilt { chars, why } => {
                format!("Nightshift built the handoff ({chars} characters): {why}")
            }
            Self::HandoffChecked { received: true } => "the handoff reached the agent's first turn".to_string(),
            Self::HandoffChecked { received: false } => {
                "the handoff did not reach the agent's first turn: its prompt did not carry it".to_string()
            }
            Self::AutomatedInput { what, chars } => {
                format!("sent an automated {} ({chars} characters), marked as not the user's", what.as_str())
            }
            Self::Scheduled { due, why } => format!("scheduled to start {} ({why})", at(due)),
            Self::ScheduleSkipped { due, reason } => format!("did not start at {}: {reason}", at(due)),
            Self::AccountSwitch { action, reason, .. } => match action {
                SwitchAction::Due => format!("an account switch is due at the turn's end: {reason}"),
                SwitchAction::Held => format!("no account switch: {reason}"),
                SwitchAction::Switched => format!("switched accounts: {reason}"),
            },
            Self::Awake { hold: true, reason } => format!("keeps the machine awake: {reason}"),
            Self::Awake { hold: false, reason } => format!("lets the machine sleep: {reason}"),
            Self::Suspended { from, to } => format!("the machine slept from {} to {}", at(from), at(to)),
            Self::Sleep { action, at: when, due, reason } => {
                let due = due.map(|d| format!(" for what is due at {}", at(&d))).unwrap_or_default();
                match action {
                    SleepAction::Allowed => {
                        format!("lets the machine sleep, with a wake alarm at {}{due}: {reason}", at(when))
                    }
                    SleepAction::Cancelled => format!("took back the wake alarm at {}: {reason}", at(when)),
                    SleepAction::Woken => format!("the wake alarm went off at {}{due}", at(when)),
                    SleepAction::Refused => format!("could not set a wake alarm, so the wait is held awake: {reason}"),
                }
            }
            Self::JournalGap { since, lost, error } => {
                format!("{lost} events from {} are not in the journal ({error}); it is written again", at(since))
            }
            Self::Breaker { breaker, state, reason } => {
                format!("{} breaker {}: {reason}", breaker.as_str(), state.as_str())
            }
            Self::IterationStarted { iteration, attempt, project, task, probe } => {
                if *probe {
                    return format!("probing for an early reset of the usage limit ({project})");
                }
                let again = if *attempt > 1 { format!(" (attempt {attempt})") } else { String::new() };
                match task {
                    Some(task) => format!("iteration {iteration}{again} started in {project}: {task}"),
                    None => format!("iteration {iteration}{again} started in {project}"),
                }
            }
            Self::IterationEnded {
                iteration, probe, outcome, detail, cost_usd, tokens, duration_ms, progress, ..
            } => {
                let mut text =
                    if *probe { format!("probe: {outcome}") } else { format!("iteration {iteration} {outcome}") };
                if let Some(detail) = detail {
                    text.push_str(&format!(": {detail}"));
                }
                let cost = cost_usd.map_or_else(|| "spend unknown".to_string(), crate::units::usd);
                text.push_str(&format!(" ({cost}"));
                if let Some(tokens) = tokens {
                    text.push_str(&format!(", {tokens} tokens"));
                }
                if let Some(ms) = duration_ms {
                    text.push_str(&format!(", {:.1} s", *ms as f64 / 1000.0));
                }
                if *progress {
                    text.push_str(", the working tree changed");
                }
                text.push(')');
                text
            }
            Self::TaskDone { task, .. } => format!("task done: {task}"),
            Self::LoopWait { until: Some(until), detail, .. } => format!("waits until {}: {detail}", at(until)),
            Self::LoopWait { until: None, detail, .. } => detail.clone(),
            Self::SpendUnknown { iteration, reason } => {
                format!("SPEND UNKNOWN for iteration {iteration}: {reason}")
            }
            Self::Usage { sample } => {
                let mut text = format!("usage {}", crate::usage::chip(sample, false));
                if let Some(cost) = sample.cost_usd {
                    text.push_str(&format!(" · ${cost:.2}"));
                }
                if let Some(context) = sample.context_pct {
                    text.push_str(&format!(" · context {}%", context.round()));
                }
                text
            }
        }
    }
}

/// A notice's kind as the journal names it (`question`, `finished`).
fn notice_kind(kind: NoticeKind) -> String {
    serde_json::to_value(kind).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}
