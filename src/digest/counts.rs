//! What a session did, counted: every kind of event the journal keeps, as typed fields (the same
//! figures in the text and in `--format json`), and the counts that are unusual enough to call out.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::event::Answerer;

/// How many times each kind of thing happened in the range: for one session (`SessionDigest::counts`)
/// or the whole night (`Digest::counts`, where commits and suspends shared by sessions count once).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Counts {
    /// Commits made in the session's repository in the range.
    pub commits: u32,
    pub respawn_cycles: u32,
    /// Times the agent was started again after it exited.
    pub restarts: u32,
    /// Times Nightshift brought the session back after its own end (a killed run, a crash, a reboot).
    pub restores: u32,
    /// Of those, the times a running Nightshift took it over, nobody asking, when its own died or
    /// hung.
    pub adoptions: u32,
    /// Times the agent's process ended.
    pub exits: u32,
    /// Usage limits met.
    pub limits: u32,
    /// Continuations typed after a limit.
    pub resumes: u32,
    /// Inputs Nightshift sent by itself (resumes, kickstarts, handoff requests, …), each marked as
    /// automated.
    #[serde(default)]
    pub automated: u32,
    /// Handoffs asked for (each time the context filled up).
    pub handoffs: u32,
    pub handoffs_written: u32,
    /// Handoffs given back to the fresh conversation.
    pub handoffs_given: u32,
    /// Handoffs the agent did not write, asked three times.
    pub handoffs_missing: u32,
    /// Fresh conversations that started past the handoff threshold already.
    pub context_high: u32,
    /// Questions the agent asked the user.
    pub questions: u32,
    pub questions_answered: u32,
    /// Permission prompts for a tool call.
    pub permissions: u32,
    pub permissions_answered: u32,
    /// Every dialog answered (questions, permission prompts, and the routine ones Nightshift
    /// answers: folder trust, confirmations, the usage-limit menu), by whom.
    pub answered_by: AnsweredBy,
    /// Dialogs that went away unanswered: nothing was typed, or the agent exited under them.
    pub dialogs_unanswered: u32,
    pub breakers_opened: u32,
    /// Breakers that closed again after they opened.
    pub breakers_closed: u32,
    /// Moves to another account.
    pub account_switches: u32,
    /// Moves of the work to the other agent, and back.
    #[serde(default)]
    pub agent_switches: u32,
    /// Commands the guard refused.
    pub guard_denials: u32,
    /// Commands that ran in the agent's sandbox, and those of them it refused.
    #[serde(default)]
    pub sandbox_commands: u32,
    #[serde(default)]
    pub sandbox_blocked: u32,
    /// Connections the network fence refused.
    #[serde(default)]
    pub net_refused: u32,
    /// Push notifications delivered (each target counts).
    pub pushes_sent: u32,
    /// Push notifications that could not be delivered, retries included.
    pub pushes_failed: u32,
    /// The phone's buttons pressed, applied and refused.
    pub phone_applied: u32,
    pub phone_refused: u32,
    /// Times the machine slept.
    pub suspends: u32,
    /// Long waits Nightshift let the machine sleep through, woken by its wake alarm.
    #[serde(default)]
    pub wake_alarms: u32,
    /// Stretches the pace parked the cycles (a morning reserve, a weekly pace), and their minutes.
    #[serde(default)]
    pub parked: u32,
    #[serde(default)]
    pub parked_minutes: u32,
    /// Distinct snapshots salvage kept.
    pub salvages: u32,
    /// Salvages that found the work as the latest snapshot held it (no new snapshot).
    pub salvages_unchanged: u32,
    /// A loop's iterations that ended (probes left out), and its tasks checked off.
    pub iterations: u32,
    pub tasks_done: u32,
    /// Events the journal could not write (a full disk): these figures may miss them.
    pub events_lost: u64,
}

/// Dialogs answered, by who answered them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AnsweredBy {
    pub terminal: u32,
    pub window: u32,
    /// `nightshift send`.
    pub cli: u32,
    pub phone: u32,
    pub nightshift: u32,
}

impl AnsweredBy {
    /// One more answer by `by` (a dialog gone with nothing typed is no answer: not counted here).
    pub fn add(&mut self, by: Answerer) {
        match by {
            Answerer::Terminal => self.terminal += 1,
            Answerer::Window => self.window += 1,
            Answerer::Cli => self.cli += 1,
            Answerer::Phone => self.phone += 1,
            Answerer::Nightshift => self.nightshift += 1,
            Answerer::Nobody => {}
        }
    }

    fn each(&self) -> [(u32, Answerer); 5] {
        [
            (self.terminal, Answerer::Terminal),
            (self.window, Answerer::Window),
            (self.cli, Answerer::Cli),
            (self.phone, Answerer::Phone),
            (self.nightshift, Answerer::Nightshift),
        ]
    }

    fn total(&self) -> u32 {
        self.each().iter().map(|(n, _)| n).sum()
    }
}

/// `1 restart`, `4 restarts`.
pub(crate) fn plural(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

impl Counts {
    /// Adds `other`'s counts to these (commits and suspends too: the caller counts shared ones once).
    pub fn add(&mut self, o: &Counts) {
        self.commits += o.commits;
        self.respawn_cycles += o.respawn_cycles;
        self.restarts += o.restarts;
        self.restores += o.restores;
        self.adoptions += o.adoptions;
        self.exits += o.exits;
        self.limits += o.limits;
        self.resumes += o.resumes;
        self.automated += o.automated;
        self.handoffs += o.handoffs;
        self.handoffs_written += o.handoffs_written;
        self.handoffs_given += o.handoffs_given;
        self.handoffs_missing += o.handoffs_missing;
        self.context_high += o.context_high;
        self.questions += o.questions;
        self.questions_answered += o.questions_answered;
        self.permissions += o.permissions;
        self.permissions_answered += o.permissions_answered;
        self.dialogs_unanswered += o.dialogs_unanswered;
        for (n, by) in o.answered_by.each() {
            for _ in 0..n {
                self.answered_by.add(by);
            }
        }
        self.breakers_opened += o.breakers_opened;
        self.breakers_closed += o.breakers_closed;
        self.account_switches += o.account_switches;
        self.agent_switches += o.agent_switches;
        self.guard_denials += o.guard_denials;
        self.sandbox_commands += o.sandbox_commands;
        self.sandbox_blocked += o.sandbox_blocked;
        self.net_refused += o.net_refused;
        self.pushes_sent += o.pushes_sent;
        self.pushes_failed += o.pushes_failed;
        self.phone_applied += o.phone_applied;
        self.phone_refused += o.phone_refused;
        self.suspends += o.suspends;
        self.wake_alarms += o.wake_alarms;
        self.parked += o.parked;
        self.parked_minutes += o.parked_minutes;
        self.salvages += o.salvages;
        self.salvages_unchanged += o.salvages_unchanged;
        self.iterations += o.iterations;
        self.tasks_done += o.tasks_done;
        self.events_lost += o.events_lost;
    }

    /// The counts as people read them, in the summary line's order, leaving out what did not
    /// happen (commits, iterations and tasks have lines of their own).
    pub fn phrases(&self) -> Vec<String> {
        let mut out = Vec::new();
        let say = |out: &mut Vec<String>, n: u32, one: &str, many: &str| {
            if n > 0 {
                out.push(plural(n, one, many));
            }
        };
        say(&mut out, self.respawn_cycles, "respawn cycle", "respawn cycles");
        say(&mut out, self.restarts, "restart", "restarts");
        say(&mut out, self.restores, "restore", "restores");
        say(&mut out, self.adoptions, "adoption", "adoptions");
        if self.limits > 0 || self.resumes > 0 {
            let (limits, resumes) =
                (plural(self.limits, "limit pause", "limit pauses"), plural(self.resumes, "resume", "resumes"));
            out.push(format!("{limits}, {resumes}"));
        }
        let parts = [
            (self.handoffs_written, "written"),
            (self.handoffs_given, "given back"),
            (self.handoffs_missing, "missing"),
        ];
        if self.handoffs > 0 || parts.iter().any(|(n, _)| *n > 0) {
            let inner: Vec<String> = parts.iter().filter(|(n, _)| *n > 0).map(|(n, w)| format!("{n} {w}")).collect();
            let mut text = plural(self.handoffs, "handoff", "handoffs");
            if !inner.is_empty() {
                text.push_str(&format!(" ({})", inner.join(", ")));
            }
            out.push(text);
        }
        say(&mut out, self.automated, "automated input", "automated inputs");
        say(
            &mut out,
            self.context_high,
            "fresh context already past the handoff threshold",
            "fresh contexts already past the handoff threshold",
        );
        for (asked, answered, one, many) in [
            (self.questions, self.questions_answered, "question", "questions"),
            (self.permissions, self.permissions_answered, "permission prompt", "permission prompts"),
        ] {
            if asked > 0 || answered > 0 {
                out.push(format!("{} ({answered} answered)", plural(asked, one, many)));
            }
        }
        say(&mut out, self.dialogs_unanswered, "dialog unanswered", "dialogs unanswered");
        if self.answered_by.total() > 0 {
            let each = self.answered_by.each();
            let by: Vec<String> =
                each.iter().filter(|(n, _)| *n > 0).map(|(n, by)| format!("{n} {}", by.as_str())).collect();
            out.push(format!("answered: {}", by.join(", ")));
        }
        if self.breakers_opened > 0 || self.breakers_closed > 0 {
            out.push(format!("breakers: {} opened, {} closed", self.breakers_opened, self.breakers_closed));
        }
        say(&mut out, self.account_switches, "account switch", "account switches");
        say(&mut out, self.agent_switches, "move to the other agent", "moves between agents");
        say(&mut out, self.guard_denials, "guard denial", "guard denials");
        if self.sandbox_commands > 0 {
            out.push(format!("sandbox: {} command(s), {} refused", self.sandbox_commands, self.sandbox_blocked));
        }
        say(&mut out, self.net_refused, "connection the fence refused", "connections the fence refused");
        if self.pushes_sent > 0 || self.pushes_failed > 0 {
            out.push(format!("pushes: {} sent, {} failed", self.pushes_sent, self.pushes_failed));
        }
        if self.phone_applied > 0 || self.phone_refused > 0 {
            out.push(format!("phone: {} applied, {} refused", self.phone_applied, self.phone_refused));
        }
        say(&mut out, self.suspends, "suspend", "suspends");
        say(&mut out, self.wake_alarms, "wait slept through to its alarm", "waits slept through to their alarm");
        if self.parked > 0 {
            out.push(format!(
                "{} by the pace ({} min)",
                plural(self.parked, "stretch parked", "stretches parked"),
                self.parked_minutes
            ));
        }
        if self.salvages > 0 || self.salvages_unchanged > 0 {
            let mut text = format!("{} kept by salvage", plural(self.salvages, "snapshot", "snapshots"));
            if self.salvages_unchanged > 0 {
                text.push_str(&format!(" (unchanged {})", plural(self.salvages_unchanged, "time", "times")));
            }
            out.push(text);
        }
        if self.events_lost > 0 {
            out.push(format!("{} not in the journal", plural(self.events_lost, "event", "events")));
        }
        out
    }
}

/// What is called out as unusual.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnusualKind {
    /// More than [`MAX_AN_HOUR`] handoffs within an hour: the agent may be looping.
    Handoffs,
    /// More than [`MAX_AN_HOUR`] restarts within an hour.
    Restarts,
    /// A breaker that opened more than once.
    BreakerReopened,
}

/// A count worth a look.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unusual {
    pub kind: UnusualKind,
    /// How many (the handoffs or restarts in the busiest hour; the breaker's openings).
    pub count: u32,
    pub text: String,
}

/// More of these within an hour is unusual.
pub const MAX_AN_HOUR: usize = 3;

/// The busiest hour of `times` (sorted): how many fall within an hour of the first of them, and
/// that first and last time.
pub fn busiest_hour(times: &[DateTime<Utc>]) -> Option<(usize, DateTime<Utc>, DateTime<Utc>)> {
    let mut best: Option<(usize, DateTime<Utc>, DateTime<Utc>)> = None;
    for (i, start) in times.iter().enumerate() {
        let within: Vec<&DateTime<Utc>> = times[i..].iter().take_while(|t| **t - *start < Duration::hours(1)).collect();
        if best.is_none_or(|(n, _, _)| within.len() > n) {
            best = Some((within.len(), *start, **within.last().unwrap_or(&start)));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(m: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap() + Duration::minutes(m)
    }

    #[test]
    fn the_busiest_hour_is_found_wherever_it_starts() {
        assert_eq!(busiest_hour(&[]), None);
        let times = [at(0), at(50), at(70), at(80), at(90), at(100), at(200)];
        assert_eq!(busiest_hour(&times), Some((5, at(50), at(100))));
        // An hour is 60 minutes, not 61.
        assert_eq!(busiest_hour(&[at(0), at(60)]), Some((1, at(0), at(0))));
    }

    #[test]
    fn phrases_leave_out_what_did_not_happen_and_say_plurals() {
        assert!(Counts::default().phrases().is_empty());
        let mut c = Counts { restarts: 1, handoffs: 2, handoffs_written: 2, questions: 1, ..Counts::default() };
        c.answered_by.add(Answerer::Phone);
        c.questions_answered = 1;
        assert_eq!(
            c.phrases(),
            ["1 restart", "2 handoffs (2 written)", "1 question (1 answered)", "answered: 1 from the phone"]
        );
        let mut night = Counts::default();
        night.add(&c);
        night.add(&c);
        assert_eq!((night.restarts, night.answered_by.phone), (2, 2));
    }
}
