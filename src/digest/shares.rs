//! Who did what in a session whose work moved (to another account, or to the other agent, at a
//! limit): each worker's stretch with the commits made in it, what it spent, and how far it
//! filled its own account's windows. Pure: the caller brings the stretches, the commits with
//! their times and the usage samples.
//!
//! Spend is read from running totals, and each client keeps its own: Claude's cost and tokens
//! belong to one account's conversation, Codex's tokens to its thread. So the totals are followed
//! per agent and account, and a rise is the work of whoever held the stretch the later reading
//! fell in (Claude's conversation resumed after a move goes on from its own last total).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::timeline::Worker;
use super::UsageDelta;
use crate::event::{Event, EventKind};
use crate::git::Commit;
use crate::store::UsageRow;

/// One worker's part of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Share {
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    #[serde(with = "crate::clock::ts")]
    pub from: DateTime<Utc>,
    #[serde(with = "crate::clock::ts")]
    pub to: DateTime<Utc>,
    /// The commits made in the stretch, newest first.
    pub commits: Vec<Commit>,
    /// What it spent in the stretch, and its own windows at the stretch's first and last reading.
    pub usage: Option<UsageDelta>,
    /// How it took the work over (after the first): from which handoff, and whether its first
    /// prompt carried it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub took_over: Option<String>,
}

/// How the worker starting at `w` took the work over from the one before (`before`), by the
/// session's events: the handoff written or built last before the move, and the check of the
/// first turn after it.
fn took_over(events: &[Event], before: &Worker, w: &Worker) -> Option<String> {
    let handoff =
        events.iter().filter(|e| e.ts >= before.from && e.ts <= w.from).rev().find_map(|e| match &e.kind {
            EventKind::HandoffBuilt { chars, .. } => Some(format!("a handoff Nightshift built ({chars} chars)")),
            EventKind::Handoff { chars } => Some(format!("{}'s own handoff ({chars} chars)", before.agent)),
            _ => None,
        })?;
    let checked = events.iter().filter(|e| e.ts >= w.from && e.ts < w.to).find_map(|e| match e.kind {
        EventKind::HandoffChecked { received } => Some(received),
        _ => None,
    });
    Some(match checked {
        Some(true) => format!("took over from {handoff}, and its first prompt carried it"),
        Some(false) => format!("took over from {handoff}, but its first prompt did not carry it"),
        None => format!("took over from {handoff}"),
    })
}

/// The running totals a reading belongs to: its agent's, on its account.
type Totals<'a> = (&'a str, Option<&'a str>);

fn key(row: &UsageRow) -> Totals<'_> {
    (row.agent.as_str(), row.account.as_deref())
}

/// What each reading added to its own running totals (cost, tokens), in the rows' order. A total
/// that went down started again (a `/clear`, a fresh Codex thread): all of it is new. The first
/// reading of each is where the range picks the totals up, and adds nothing, unless the session
/// began in the range (`from_zero`): then all of it was spent in it.
pub(super) fn rises(rows: &[UsageRow], from_zero: bool) -> Vec<(f64, u64)> {
    let start = if from_zero { (Some(0.0), Some(0)) } else { (None, None) };
    // Each one's last cost and tokens.
    let mut last: Vec<(Totals, Option<f64>, Option<u64>)> = Vec::new();
    rows.iter()
        .map(|row| {
            let at = match last.iter().position(|(k, ..)| *k == key(row)) {
                Some(i) => i,
                None => {
                    last.push((key(row), start.0, start.1));
                    last.len() - 1
                }
            };
            let (_, cost, tokens) = &mut last[at];
            let mut rise = (0.0, 0);
            if let Some(c) = row.sample.cost_usd {
                rise.0 = match *cost {
                    Some(b) if c >= b => c - b,
                    Some(_) => c,
                    None => 0.0,
                };
                *cost = Some(c);
            }
            if let Some(t) = row.sample.tokens {
                rise.1 = match *tokens {
                    Some(b) if t >= b => t - b,
                    Some(_) => t,
                    None => 0,
                };
                *tokens = Some(t);
            }
            rise
        })
        .collect()
}

/// The spend and windows of `rows` (oldest first), with each reading's rise from [`rises`].
/// Windows are told only when every reading is of one agent's account: one account's 5-hour
/// window and another's are not one window.
pub(super) fn delta<'a>(rows: impl IntoIterator<Item = (&'a UsageRow, (f64, u64))>) -> Option<UsageDelta> {
    let rows: Vec<(&UsageRow, (f64, u64))> = rows.into_iter().collect();
    let first = rows.first()?.0;
    let one = rows.iter().all(|(r, _)| key(r) == key(first));
    let window = |f: fn(&crate::usage::Sample) -> Option<f64>| {
        let from = rows.iter().find_map(|(r, _)| f(&r.sample));
        let to = rows.iter().rev().find_map(|(r, _)| f(&r.sample));
        if one {
            (from, to)
        } else {
            (None, None)
        }
    };
    let (five_hour_from, five_hour_to) = window(|s| s.five_hour_pct);
    let (seven_day_from, seven_day_to) = window(|s| s.seven_day_pct);
    Some(UsageDelta {
        five_hour_from,
        five_hour_to,
        seven_day_from,
        seven_day_to,
        // A float sum starts from -0.0.
        cost_usd: rows.iter().map(|(_, (c, _))| c).sum::<f64>() + 0.0,
        cost_reported: rows.iter().any(|(r, _)| r.sample.cost_usd.is_some()),
        tokens: rows.iter().map(|(_, (_, t))| t).sum(),
    })
}

/// Each worker's share of the session: `commits` with their times, `rows` oldest first (each
/// row's time is read from its `ts`), `from_zero` as for [`rises`], and the session's `events`
/// (oldest first) for how each took the work over. A commit or a reading outside every stretch is nobody's.
pub fn shares(
    workers: &[Worker],
    commits: &[(DateTime<Utc>, Commit)],
    rows: &[UsageRow],
    from_zero: bool,
    events: &[Event],
) -> Vec<Share> {
    let rise = rises(rows, from_zero);
    let within = |w: &Worker, at: DateTime<Utc>| at >= w.from && at < w.to;
    workers
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let theirs = rows.iter().zip(rise.iter().copied()).filter(|(r, _)| {
                r.agent == w.agent
                    && (w.account.is_none() || r.account == w.account)
                    && super::parse_ts(&r.ts).is_some_and(|at| within(w, at))
            });
            Share {
                agent: w.agent.clone(),
                account: w.account.clone(),
                from: w.from,
                to: w.to,
                commits: commits.iter().filter(|(at, _)| within(w, *at)).map(|(_, c)| c.clone()).collect(),
                usage: delta(theirs),
                took_over: i.checked_sub(1).and_then(|b| took_over(events, &workers[b], w)),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::Sample;

    fn at(hm: &str) -> DateTime<Utc> {
        let day = if hm < "12:00" { "2026-12-02" } else { "2026-12-01" };
        format!("{day}T{hm}:00Z").parse().unwrap()
    }

    fn row(hm: &str, agent: &str, account: Option<&str>, five: f64, cost: Option<f64>, tokens: u64) -> UsageRow {
        UsageRow {
            session: "s1".into(),
            ts: crate::clock::format_ts(at(hm)),
            account: account.map(Into::into),
            agent: agent.into(),
            sample: Sample { five_hour_pct: Some(five), cost_usd: cost, tokens: Some(tokens), ..Default::default() },
        }
    }

    fn worker(agent: &str, account: Option<&str>, from: &str, to: &str) -> Worker {
        Worker { agent: agent.into(), account: account.map(Into::into), from: at(from), to: at(to) }
    }

    fn commit(subject: &str) -> Commit {
        Commit { hash: format!("{subject:0>40}"), subject: subject.into() }
    }

    #[test]
    fn each_worker_has_the_commits_spend_and_windows_of_its_own_stretch() {
        let workers = [
            worker("claude", Some("a"), "22:00", "01:00"),
            worker("codex", None, "01:00", "03:00"),
            worker("claude", Some("a"), "03:00", "06:00"),
        ];
        let commits = [(at("04:00"), commit("c3")), (at("02:00"), commit("c2")), (at("23:00"), commit("c1"))];
        let rows = [
            row("22:10", "claude", Some("a"), 20.0, Some(0.5), 10_000),
            row("00:50", "claude", Some("a"), 100.0, Some(1.5), 50_000),
            row("01:10", "codex", None, 3.0, None, 2_000),
            row("02:50", "codex", None, 20.0, None, 20_000),
            row("03:10", "claude", Some("a"), 5.0, Some(1.6), 52_000),
            row("05:50", "claude", Some("a"), 30.0, Some(2.0), 60_000),
        ];
        let ev = |hm: &str, kind: EventKind| Event { ts: at(hm), session: String::from("s1").into(), kind };
        let events = [
            ev("01:00", EventKind::HandoffBuilt { chars: 1800, why: "claude met its limit".into() }),
            ev("01:01", EventKind::HandoffChecked { received: true }),
            ev("02:55", EventKind::Handoff { chars: 640 }),
            ev("03:01", EventKind::HandoffChecked { received: false }),
        ];
        let s = shares(&workers, &commits, &rows, false, &events);
        let took: Vec<Option<&str>> = s.iter().map(|w| w.took_over.as_deref()).collect();
        assert_eq!(
            took,
            [
                None,
                Some("took over from a handoff Nightshift built (1800 chars), and its first prompt carried it"),
                Some("took over from codex's own handoff (640 chars), but its first prompt did not carry it"),
            ]
        );
        let subjects = |i: usize| s[i].commits.iter().map(|c| c.subject.as_str()).collect::<Vec<_>>();
        assert_eq!((subjects(0), subjects(1), subjects(2)), (vec!["c1"], vec!["c2"], vec!["c3"]));
        let u = |i: usize| s[i].usage.clone().unwrap();
        assert_eq!((u(0).tokens, u(1).tokens, u(2).tokens), (40_000, 18_000, 10_000));
        assert!((u(0).cost_usd - 1.0).abs() < 1e-9 && (u(2).cost_usd - 0.5).abs() < 1e-9);
        assert_eq!((u(1).cost_usd, u(1).cost_reported), (0.0, false), "Codex reports no cost");
        // Its own account's windows: Claude's full window, then Codex's, then Claude's new one.
        assert_eq!((u(0).five_hour_from, u(0).five_hour_to), (Some(20.0), Some(100.0)));
        assert_eq!((u(1).five_hour_from, u(1).five_hour_to), (Some(3.0), Some(20.0)));
        assert_eq!((u(2).five_hour_from, u(2).five_hour_to), (Some(5.0), Some(30.0)));
    }

    #[test]
    fn readings_of_two_accounts_add_up_but_tell_no_window() {
        let rows = [
            row("22:10", "claude", Some("a"), 90.0, Some(1.0), 0),
            row("23:10", "claude", Some("b"), 10.0, Some(0.2), 0),
            row("23:50", "claude", Some("a"), 95.0, Some(1.5), 0),
            row("00:10", "claude", Some("b"), 30.0, Some(0.1), 0),
        ];
        let d = delta(rows.iter().zip(rises(&rows, false))).unwrap();
        // a: 1.0 → 1.5; b: 0.2, then a fresh conversation's 0.1.
        assert!((d.cost_usd - 0.6).abs() < 1e-9, "{}", d.cost_usd);
        assert_eq!((d.five_hour_from, d.five_hour_to), (None, None), "two accounts' windows are not one");
        let one =
            delta(rows.iter().zip(rises(&rows, false)).filter(|(r, _)| r.account.as_deref() == Some("a"))).unwrap();
        assert_eq!((one.five_hour_from, one.five_hour_to), (Some(90.0), Some(95.0)));
    }

    #[test]
    fn what_falls_outside_every_stretch_is_nobodys() {
        let workers = [worker("claude", None, "22:00", "23:00")];
        let rows = [row("22:10", "claude", None, 5.0, Some(0.1), 0), row("23:30", "claude", None, 9.0, Some(0.9), 0)];
        let s = shares(&workers, &[(at("23:30"), commit("later"))], &rows, false, &[]);
        assert!(s[0].commits.is_empty(), "a commit after the stretch");
        assert_eq!(s[0].usage.as_ref().map(|u| u.cost_usd), Some(0.0), "the rise at 23:30 is after it");
        assert!(shares(&[], &[], &rows, false, &[]).is_empty());
        let begun = shares(&workers, &[], &rows, true, &[]);
        assert_eq!(
            begun[0].usage.as_ref().map(|u| u.cost_usd),
            Some(0.1),
            "begun in the range: its first reading is spend"
        );
    }
}
