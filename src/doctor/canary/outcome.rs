//! A client's canary run as the doctor tells it: each step's readings folded into one result per
//! signal ([`fold`]), the run's [`Outcome`], and its lines ([`checks`]) in the doctor's [`Report`].

use std::path::{Path, PathBuf};

use super::SIGNALS;
use crate::agent::AgentKind;
use crate::doctor::{Check, Report, Status};

/// One signal's result over the steps that expect it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signal {
    pub name: String,
    /// The first step that expects it.
    pub step: String,
    /// What was seen (PASS) or, for the first step that failed it, what was seen instead.
    pub result: Result<String, String>,
}

/// Folds each step's readings of each signal into one result per signal, in the script's order:
/// a signal passes when every step that expects it read it.
pub fn fold(readings: &[(String, String, Result<String, String>)]) -> Vec<Signal> {
    let mut out: Vec<Signal> = Vec::new();
    for (step, name, result) in readings {
        match out.iter_mut().find(|s| &s.name == name) {
            Some(s) if s.result.is_ok() && result.is_err() => {
                s.step.clone_from(step);
                s.result = result.clone();
            }
            Some(_) => {}
            None => out.push(Signal { name: name.clone(), step: step.clone(), result: result.clone() }),
        }
    }
    out
}

/// One client's canary run.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub agent: AgentKind,
    /// The client's version (`None`: it could not be run).
    pub version: Option<String>,
    /// Why it was not run, when it was not.
    pub skipped: Option<String>,
    /// Or why it could not finish.
    pub broken: Option<String>,
    pub steps: usize,
    pub secs: f64,
    pub signals: Vec<Signal>,
    /// Where the screens of the failed steps are kept.
    pub kept: Option<PathBuf>,
}

impl Outcome {
    pub fn ok(&self) -> bool {
        self.skipped.is_none() && self.broken.is_none() && self.signals.iter().all(|s| s.result.is_ok())
    }
}

/// The lines of one client's canary: the run, then one per signal.
pub fn checks(o: &Outcome, agents_dir: Option<&Path>) -> Vec<Check> {
    let name = o.agent.as_str();
    let subject = match &o.version {
        Some(v) => format!("{name} {v}"),
        None => name.to_string(),
    };
    let id = format!("canary.{name}");
    if let Some(why) = &o.skipped {
        return vec![Check { status: Status::Skip, remedy: None, ..Check::pass(id, subject, why.clone()) }];
    }
    if let Some(why) = &o.broken {
        return vec![Check::fail(
            id,
            subject,
            format!("the canary could not run: {why}"),
            "fix what it names and run `nightshift doctor --canary` again",
        )];
    }
    let failed = o.signals.iter().filter(|s| s.result.is_err()).count();
    let kept = o.kept.as_ref().map(|k| k.display().to_string()).unwrap_or_else(|| "no file".into());
    let mut out = vec![if failed == 0 {
        Check::pass(
            id,
            subject.clone(),
            format!("{} signals read in {} steps, in {:.0} s", o.signals.len(), o.steps, o.secs),
        )
    } else {
        Check::fail(
            id,
            subject.clone(),
            format!(
                "{failed} of {} signals not read, in {:.0} s; the screens are kept in {kept}",
                o.signals.len(),
                o.secs
            ),
            format!("attach {kept} to a bug report; until it is fixed, tonight's sessions may misread this client"),
        )
    }];
    let file = agents_dir
        .map(|d| d.join(format!("{name}.toml")).display().to_string())
        .unwrap_or_else(|| format!("agents/{name}.toml"));
    for s in &o.signals {
        let id = format!("canary.{name}.{}", s.name);
        out.push(match &s.result {
            Ok(seen) => Check::pass(id, subject.clone(), format!("{}: {seen}", s.name)),
            Err(instead) => {
                let key = SIGNALS.iter().find(|(n, _)| *n == s.name).map(|(_, k)| *k).unwrap_or("");
                let fix = if key.is_empty() {
                    format!("the screen is kept in {kept}; attach it to a bug report")
                } else {
                    format!("the screen is kept in {kept}; fix {key} in {file} to what the client draws now, or attach it to a bug report")
                };
                Check::fail(id, subject.clone(), format!("{} in {}: {instead}", s.name, s.step), fix)
            }
        });
    }
    out
}

/// The canary's report over its clients, counting signals: a client's first line sums up its
/// signals' lines and is counted only when it has none (skipped, or it could not run). Its verdict,
/// and `doctor --canary`'s exit code, follow the same count.
pub fn report(outcomes: &[Outcome], agents_dir: Option<&Path>) -> Report {
    let (mut lines, mut counted) = (Vec::new(), Vec::new());
    for o in outcomes {
        let mine = checks(o, agents_dir);
        let summed = usize::from(!o.signals.is_empty());
        counted.extend(mine.iter().skip(summed).map(|c| c.status));
        lines.extend(mine);
    }
    Report::tallied(lines, &counted)
}
