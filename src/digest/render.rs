//! The digest as text (a terminal), Markdown (a note) or JSON (a program).

use std::fmt::Write;

use chrono::Local;

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

fn hm(secs: i64) -> String {
    let (h, m) = (secs / 3600, (secs % 3600) / 60);
    match (h, m) {
        (0, 0) if secs > 0 => format!("{secs}s"),
        (0, m) => format!("{m}m"),
        (h, m) => format!("{h}h {m:02}m"),
    }
}

fn local(t: chrono::DateTime<chrono::Utc>) -> String {
    t.with_timezone(&Local).format("%Y-%m-%d %H:%M").to_string()
}

/// The lines that describe one session, without the heading.
fn details(s: &SessionDigest) -> Vec<String> {
    let mut lines = Vec::new();
    for why in &s.needs_you {
        lines.push(format!("needs you: {why}"));
    }
    let mut activity =
        format!("working {} · idle {} · paused {}", hm(s.working_secs), hm(s.idle_secs), hm(s.paused_secs));
    if s.respawn_cycles > 0 {
        let _ = write!(activity, " · {} respawn cycle(s)", s.respawn_cycles);
    }
    if s.restarts > 0 {
        let _ = write!(activity, " · {} restart(s)", s.restarts);
    }
    if s.limits_hit > 0 {
        let _ = write!(activity, " · {} limit pause(s), {} resume(s)", s.limits_hit, s.resumes);
    }
    if s.breaker_trips > 0 {
        let _ = write!(activity, " · {} breaker trip(s)", s.breaker_trips);
    }
    if !s.exits.is_empty() {
        let _ = write!(activity, " · exits: {}", s.exits.join(", "));
    }
    lines.push(activity);
    if !s.iterations.is_empty() {
        // Codex reports tokens and no cost: its loops are told in tokens.
        let cost = if s.iterations.iter().any(|i| i.cost_usd.is_some()) {
            let mut cost = crate::event::usd(s.loop_cost_usd);
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
                (Some(usd), _) => crate::event::usd(usd),
                (None, Some(tokens)) => format!("{tokens} tokens"),
                (None, None) => "spend unknown".to_string(),
            };
            let attempt = if i.attempt > 1 { format!(" (try {})", i.attempt) } else { String::new() };
            let task = i.task.as_deref().map(|t| format!(": {t}")).unwrap_or_default();
            lines.push(format!("  #{}{attempt} {} {cost}{task}", i.iteration, i.outcome));
        }
    }
    for line in &s.account_switches {
        lines.push(format!("account: {line}"));
    }
    for d in &s.guard_denials {
        lines.push(format!(
            "guard: refused {} at {}: {}",
            d.what,
            d.at.with_timezone(&Local).format("%H:%M"),
            d.command
        ));
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
    if let Some(r) = &s.recording {
        lines.push(format!("recording: {r}"));
    }
    if let Some(u) = &s.usage {
        let pct = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => format!("{}% → {}%", a.round(), b.round()),
            _ => "–".into(),
        };
        lines.push(format!(
            "usage: 5h {} · 7d {} · ${:.2}",
            pct(u.five_hour_from, u.five_hour_to),
            pct(u.seven_day_from, u.seven_day_to),
            u.cost_usd
        ));
    }
    lines
}

pub fn render(d: &Digest, format: Format) -> String {
    if format == Format::Json {
        return serde_json::to_string_pretty(d).expect("digests serialise");
    }
    let md = format == Format::Markdown;
    let mut out = String::new();
    let span = d.to - d.from;
    if md {
        let _ =
            writeln!(out, "# Nightshift digest\n\n{} → {} ({})\n", local(d.from), local(d.to), hm(span.num_seconds()));
        let _ = writeln!(out, "**{}** · ${:.2}\n", d.headline(), d.totals.cost_usd);
    } else {
        let _ = writeln!(out, "Nightshift digest — {} → {} ({})", local(d.from), local(d.to), hm(span.num_seconds()));
        let _ = writeln!(out, "{} · ${:.2}", d.headline(), d.totals.cost_usd);
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
