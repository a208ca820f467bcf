//! The digest as text (a terminal), Markdown (a note) or JSON (a program).

use std::fmt::Write;

use chrono::Local;

use super::ledger::hm;
use super::{Digest, Section, SessionDigest};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Markdown,
    Json,
}

const SECTIONS: [(Section, &str); 4] = [
    (Section::NeedsYou, "Needs you"),
    (Section::Done, "Done"),
    (Section::StillRunning, "Still running"),
    (Section::Idle, "Idle"),
];

fn clock(t: chrono::DateTime<chrono::Utc>) -> String {
    super::ledger::hhmm(t)
}

fn local(t: chrono::DateTime<chrono::Utc>) -> String {
    t.with_timezone(&Local).format("%Y-%m-%d %H:%M").to_string()
}

/// `code 1 ×5, SIGKILL`: each value once, in the order first seen, with how many times.
fn collapsed(values: &[String]) -> String {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for v in values {
        match seen.iter_mut().find(|(s, _)| *s == v.as_str()) {
            Some((_, n)) => *n += 1,
            None => seen.push((v, 1)),
        }
    }
    let parts: Vec<String> =
        seen.iter().map(|(v, n)| if *n == 1 { (*v).to_string() } else { format!("{v} ×{n}") }).collect();
    parts.join(", ")
}

/// The lines that describe one session, without the heading: what needs the user first, then
/// what is unusual, the summary line with every count, what happened, and the rest.
fn details(s: &SessionDigest) -> Vec<String> {
    let mut lines = Vec::new();
    for why in &s.needs_you {
        lines.push(format!("needs you: {why}"));
    }
    for u in &s.unusual {
        lines.push(format!("UNUSUAL: {}", u.text));
    }
    let mut activity =
        format!("working {} · idle {} · paused {}", hm(s.working_secs), hm(s.idle_secs), hm(s.paused_secs));
    for phrase in s.counts.phrases() {
        let _ = write!(activity, " · {phrase}");
    }
    if !s.exits.is_empty() {
        let _ = write!(activity, " · exits: {}", collapsed(&s.exits));
    }
    lines.push(activity);
    if !s.iterations.is_empty() {
        // Codex reports tokens and no cost: its loops are told in tokens.
        let cost = if s.iterations.iter().any(|i| i.cost_usd.is_some()) {
            let mut cost = crate::units::usd(s.loop_cost_usd);
            if s.iterations.iter().any(|i| i.cost_usd.is_none()) {
                cost.push_str(" and some not measured");
            }
            cost
        } else {
            let tokens: u64 = s.iterations.iter().filter_map(|i| i.tokens).sum();
            let unknown = if s.iterations.iter().any(|i| i.tokens.is_none()) { " and some not measured" } else { "" };
            format!("{tokens} tokens{unknown}, no cost reported")
        };
        lines.push(format!("loop: {} iteration(s), {} task(s) done, {cost}", s.iterations.len(), s.tasks_done.len()));
        let shown = s.iterations.len().saturating_sub(10);
        if shown > 0 {
            lines.push(format!("  … {shown} earlier iteration(s)"));
        }
        for i in &s.iterations[shown..] {
            let cost = match (i.cost_usd, i.tokens) {
                (Some(usd), _) => crate::units::usd(usd),
                (None, Some(tokens)) => format!("{tokens} tokens"),
                (None, None) => "spend unknown".to_string(),
            };
            let attempt = if i.attempt > 1 { format!(" (try {})", i.attempt) } else { String::new() };
            let task = i.task.as_deref().map(|t| format!(": {t}")).unwrap_or_default();
            lines.push(format!("  #{}{attempt} {} {cost}{task}", i.iteration, i.outcome));
        }
    }
    if !s.happened.is_empty() {
        lines.push("what happened:".to_string());
        for h in &s.happened {
            lines.push(format!("  {}", h.text));
        }
    }
    // The same command refused again is one line.
    let mut refused: Vec<(&super::GuardDenial, usize, chrono::DateTime<chrono::Utc>)> = Vec::new();
    for d in &s.guard_denials {
        match refused.iter_mut().find(|(r, _, _)| r.what == d.what && r.command == d.command) {
            Some((_, n, last)) => {
                *n += 1;
                *last = d.at;
            }
            None => refused.push((d, 1, d.at)),
        }
    }
    for (d, n, last) in refused {
        let when = if n == 1 {
            format!("at {}", clock(d.at))
        } else {
            format!("{n} times, {} to {}", clock(d.at), clock(last))
        };
        lines.push(format!("guard: refused {} {when}: {}", d.what, d.command));
    }
    if let Some(git) = &s.git {
        let mut line = format!(
            "git: {} commit(s), {} file(s) +{} −{}",
            git.commits.len(),
            git.committed.files,
            git.committed.insertions,
            git.committed.deletions
        );
        if git.at_risk {
            let _ = write!(
                line,
                "; UNCOMMITTED changes at risk: {} file(s) +{} −{}, {} untracked",
                git.uncommitted.files, git.uncommitted.insertions, git.uncommitted.deletions, git.untracked
            );
        }
        lines.push(line);
        for c in git.commits.iter().take(10) {
            lines.push(format!("  {} {}", &c.hash[..c.hash.len().min(8)], c.subject));
        }
        if git.commits.len() > 10 {
            lines.push(format!("  … and {} more", git.commits.len() - 10));
        }
    }
    for w in &s.worktrees {
        let task = w.task.as_deref().map(|t| format!(" (task: {t})")).unwrap_or_default();
        lines.push(format!("worktree: {} at {}{task}: {}", w.branch, w.path, w.work));
        for reference in &w.salvage {
            lines.push(format!("worktree salvage: {reference}"));
        }
        lines.push(format!("look: {}; merge: {}", w.look, w.merge));
    }
    if let Some(r) = &s.recording {
        lines.push(format!("recording: {r}"));
    }
    if !s.workers.is_empty() {
        lines.push("who worked:".to_string());
        for w in &s.workers {
            lines.push(format!("  {}", share_line(w)));
        }
    }
    if let Some(u) = &s.usage {
        let windows = if s.workers.is_empty() {
            format!("5h {} · 7d {} · ", pct(u.five_hour_from, u.five_hour_to), pct(u.seven_day_from, u.seven_day_to))
        } else {
            // Each worker's windows are its own account's: told on its line.
            String::new()
        };
        let spent = if s.workers.is_empty() { spend(u) } else { spend_and_tokens(u) };
        let all = if s.workers.is_empty() { "" } else { " in all" };
        lines.push(format!("usage: {windows}{spent}{all}"));
    }
    lines
}

/// A window's fill over a stretch: `20% → 100%`.
fn pct(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) => format!("{}% → {}%", a.round(), b.round()),
        _ => "–".into(),
    }
}

/// What a stretch cost. Codex reports tokens and no cost: its spend is told in tokens, not as
/// $0.00.
fn spend(u: &super::UsageDelta) -> String {
    if u.cost_reported || u.tokens == 0 {
        format!("${:.2}", u.cost_usd)
    } else {
        format!("{} tokens, no cost reported", u.tokens)
    }
}

/// [`spend`], with the tokens too when a cost was reported beside them.
fn spend_and_tokens(u: &super::UsageDelta) -> String {
    if u.cost_reported && u.tokens > 0 {
        format!("${:.2}, {} tokens", u.cost_usd, u.tokens)
    } else {
        spend(u)
    }
}

/// One worker's part: `codex, 01:00–03:00: 1 commit, 18000 tokens, no cost reported; its
/// windows: 5h 3% → 20%`.
fn share_line(w: &super::Share) -> String {
    let who = match &w.account {
        Some(account) => format!("{} on account {account}", w.agent),
        None => w.agent.clone(),
    };
    let commits = match w.commits.len() {
        1 => "1 commit".to_string(),
        n => format!("{n} commits"),
    };
    let mut line = format!("{who}, {}–{}: {commits}", clock(w.from), clock(w.to));
    match &w.usage {
        None => line.push_str(", no usage reported"),
        Some(u) => {
            let _ = write!(line, ", {}", spend_and_tokens(u));
            // The windows its readings knew, of its own account.
            let windows: Vec<String> =
                [("5h", u.five_hour_from, u.five_hour_to), ("7d", u.seven_day_from, u.seven_day_to)]
                    .into_iter()
                    .filter(|(_, a, b)| a.is_some() && b.is_some())
                    .map(|(name, a, b)| format!("{name} {}", pct(a, b)))
                    .collect();
            if !windows.is_empty() {
                let _ = write!(line, "; its windows: {}", windows.join(", "));
            }
        }
    }
    if let Some(how) = &w.took_over {
        let _ = write!(line, "; {how}");
    }
    line
}

pub fn render(d: &Digest, format: Format) -> String {
    if format == Format::Json {
        return serde_json::to_string_pretty(d).expect("digests serialise");
    }
    let md = format == Format::Markdown;
    let mut out = String::new();
    let span = d.to - d.from;
    let all = d.counts.phrases().join(" · ");
    if md {
        let _ =
            writeln!(out, "# Nightshift digest\n\n{} → {} ({})\n", local(d.from), local(d.to), hm(span.num_seconds()));
        let _ = writeln!(out, "**{}** · ${:.2}\n", d.headline(), d.totals.cost_usd);
        if !all.is_empty() {
            let _ = writeln!(out, "In all: {all}\n");
        }
    } else {
        let _ = writeln!(out, "Nightshift digest — {} → {} ({})", local(d.from), local(d.to), hm(span.num_seconds()));
        let _ = writeln!(out, "{} · ${:.2}", d.headline(), d.totals.cost_usd);
        if !all.is_empty() {
            let _ = writeln!(out, "In all: {all}");
        }
    }
    if d.sessions.is_empty() {
        let _ = writeln!(out, "\nNothing ran in this range.");
    }
    for (section, title) in SECTIONS {
        let sessions: Vec<&SessionDigest> = d.section(section).collect();
        if sessions.is_empty() {
            continue;
        }
        if md {
            let _ = writeln!(out, "## {title}\n");
        } else {
            let _ = writeln!(out, "\n{}", title.to_uppercase());
        }
        for s in sessions {
            if md {
                let _ = writeln!(out, "- **{}** `{}` ({}) in `{}` — {}", s.id, s.command_line, s.agent, s.cwd, s.state);
                for line in details(s) {
                    let _ = writeln!(out, "  - {}", line.trim_start());
                }
            } else {
                let _ = writeln!(out, "  {}  {:<8} {:<14} {}  {}", s.id, s.agent, s.state, s.cwd, s.command_line);
                for line in details(s) {
                    let _ = writeln!(out, "      {line}");
                }
            }
        }
        if md {
            out.push('\n');
        }
    }
    if !d.informational.is_empty() {
        let _ = writeln!(out, "{}", if md { "## Informational\n" } else { "\nINFORMATIONAL" });
        for note in &d.informational {
            let _ = writeln!(out, "{}{note}", if md { "- " } else { "  - " });
        }
    }
    out
}
