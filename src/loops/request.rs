//! A loop as a person asks for one (`nightshift loop`'s flags, the window's New session form), checked
//! and turned into a [`LoopSpec`]: every error is one line naming the problem and the fix.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::actor::{global_marker, marker_name, LoopSpec, ProjectSpec};
use super::machine::{Marker, Settings};
use super::tasks::{self, Source};
use crate::agent::AgentKind;
use crate::breaker::Budget;

/// What is asked for; everything but the task optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LoopRequest {
    /// `claude` (default) or `codex`.
    pub agent: Option<AgentKind>,
    /// The harness's program, when not the agent's usual one.
    pub program: Option<String>,
    /// The task of every iteration…
    pub prompt: Option<String>,
    /// …or a tasks file (relative: in each project's directory, or here for a single project).
    pub tasks: Option<PathBuf>,
    /// The projects' directories (here when empty).
    pub cwd: Vec<PathBuf>,
    pub max_iterations: Option<u32>,
    pub max_cost_usd: Option<f64>,
    pub max_tokens: Option<u64>,
    /// Seconds.
    pub max_wall_clock_secs: Option<f64>,
    /// The harness's own flags.
    pub harness_args: Vec<String>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum LoopError {
    #[error("say what each iteration does: a prompt (--prompt TEXT) or a tasks file (--tasks FILE), not both")]
    NoTask,
    #[error("a loop runs claude or codex headless; {0} has no event stream to read")]
    Agent(String),
    #[error("codex exec reports tokens but no cost, so --max-cost-usd cannot be kept; cap the loop with --max-tokens")]
    CodexCost,
    #[error("the project directory {0} does not exist")]
    NoProject(PathBuf),
    #[error("{0} is inside Nightshift's state directory, not a project")]
    InState(PathBuf),
    #[error("{0}")]
    Tasks(String),
    #[error("{what} must be a positive number, not {value}")]
    Number { what: &'static str, value: String },
    #[error("a {marker} marker is left over from an earlier `nightshift loop {verb}`; remove it to start: rm {path}")]
    Leftover { marker: &'static str, verb: String, path: PathBuf },
}

/// A marker for every loop left in `state_dir`: reported at a start, never obeyed silently.
pub fn leftover_marker(state_dir: &Path) -> Result<(), LoopError> {
    for marker in [Marker::Stop, Marker::Halt] {
        let path = global_marker(state_dir, marker);
        if path.exists() {
            let name = marker_name(marker);
            return Err(LoopError::Leftover { marker: name, verb: name.to_lowercase(), path });
        }
    }
    Ok(())
}

impl LoopRequest {
    /// The loop to run, from `here`; and warnings to show (the run goes on).
    pub fn plan(&self, here: &Path, state_dir: &Path) -> Result<(LoopSpec, Vec<String>), LoopError> {
        let agent = self.agent.unwrap_or(AgentKind::Claude);
        if agent == AgentKind::Generic {
            return Err(LoopError::Agent("--agent generic".into()));
        }
        if agent == AgentKind::Codex && self.max_cost_usd.is_some() {
            return Err(LoopError::CodexCost);
        }
        leftover_marker(state_dir)?;
        let positive = |what: &'static str, value: Option<f64>| match value {
            Some(v) if !(v.is_finite() && v > 0.0) => Err(LoopError::Number { what, value: v.to_string() }),
            _ => Ok(()),
        };
        positive("--max-cost-usd", self.max_cost_usd)?;
        positive("--max-wall-clock", self.max_wall_clock_secs)?;
        if self.max_iterations == Some(0) {
            return Err(LoopError::Number { what: "--max-iterations", value: "0".into() });
        }
        let task = match (&self.prompt, &self.tasks) {
            (Some(p), None) if !p.trim().is_empty() => Err(p.clone()),
            (None, Some(f)) => Ok(f.clone()),
            _ => return Err(LoopError::NoTask),
        };
        let dirs: Vec<PathBuf> = if self.cwd.is_empty() { vec![here.to_path_buf()] } else { self.cwd.clone() };
        let mut warnings = Vec::new();
        let mut projects = Vec::new();
        for dir in dirs {
            let dir = std::fs::canonicalize(here.join(&dir)).map_err(|_| LoopError::NoProject(here.join(&dir)))?;
            if !dir.is_dir() {
                return Err(LoopError::NoProject(dir));
            }
            if dir.starts_with(state_dir) {
                return Err(LoopError::InState(dir));
            }
            if state_dir.starts_with(&dir) {
                warnings.push(format!(
                    "the state directory {} is inside the project {}: its sessions could write the loop's STOP and HALT markers",
                    state_dir.display(),
                    dir.display()
                ));
            }
            let tasks = match &task {
                Err(prompt) => Source::Prompt(prompt.clone()),
                Ok(file) => {
                    let file = if file.is_absolute() || self.cwd.is_empty() { here.join(file) } else { dir.join(file) };
                    tasks::read(&Source::File(file.clone())).map_err(|e| LoopError::Tasks(e.to_string()))?;
                    Source::File(file)
                }
            };
            projects.push(ProjectSpec::new(dir, tasks));
        }
        let settings = Settings {
            max_iterations: self.max_iterations,
            budget: Budget {
                max_cost_usd: self.max_cost_usd,
                max_tokens: self.max_tokens,
                max_wall_clock: self.max_wall_clock_secs.map(Duration::from_secs_f64),
            },
            ..Settings::default()
        };
        let program =
            self.program.clone().filter(|p| !p.trim().is_empty()).unwrap_or_else(|| agent.as_str().to_string());
        let spec = LoopSpec {
            agent,
            program,
            args: self.harness_args.clone(),
            projects,
            settings,
            env: Vec::new(),
            account: None,
            sandbox: None,
        };
        Ok((spec, warnings))
    }
}

/// What a loop's spec is given before it starts, from the settings, the canary and git (the spec is
/// the model's; these read the world).
pub trait Prepare {
    /// Runs the loop's iterations in the agent's own sandbox, as `asked` or else `settings` say.
    fn sandboxed(
        &mut self,
        settings: &crate::config::SandboxSettings,
        asked: Option<bool>,
    ) -> Result<Option<String>, String>;

    /// Refuses the loop when `[canary] required` is set and the canary has not passed.
    fn canary_checked(&self, settings: &crate::config::CanarySettings, state_dir: &Path) -> Result<(), String>;

    /// Makes the loop's iterations work apart from the user's checkouts, under `root`.
    fn isolate(&mut self, root: &Path, name: &str, per_task: bool) -> Result<(), String>;
}

impl Prepare for LoopSpec {
    /// Runs the loop's iterations in the agent's own sandbox, as `asked` (`--sandbox`,
    /// `--no-sandbox`) or else `settings` say: a loop is unattended work. Returns what to tell when
    /// it goes on without the sandbox it would have had; an error (one line, with the fix) when it
    /// must not start.
    fn sandboxed(
        &mut self,
        settings: &crate::config::SandboxSettings,
        asked: Option<bool>,
    ) -> Result<Option<String>, String> {
        let (sandbox, note) = settings.sandbox_for_command(self.agent, &self.program, &self.args, asked, true)?;
        self.sandbox = sandbox;
        Ok(note)
    }

    /// Refuses the loop, in one line with the fix, when `[canary] required` is set and the
    /// canary has not passed on the client its iterations would run.
    fn canary_checked(&self, settings: &crate::config::CanarySettings, state_dir: &Path) -> Result<(), String> {
        if !settings.required {
            return Ok(());
        }
        let cwd = self.projects.first().map_or_else(|| PathBuf::from("/"), |p| p.cwd.clone());
        let standing = crate::agent::canary::Standing::of(self.agent, &self.program, &cwd, state_dir);
        standing.and_then(|s| s.refusal(self.agent)).map_or(Ok(()), Err)
    }

    /// Makes the loop's iterations work apart from the user's checkouts, under `root`: in one new
    /// worktree per repository for the whole loop (`name`: its branch `nightshift/<name>`), or, with
    /// `per_task`, in a new one for each task, made when the task starts (`nightshift/<name>-<n>-<task
    /// words>`). Done last before the start, once nothing else can refuse it; a refusal leaves
    /// nothing behind. An empty `name` is a random one.
    fn isolate(&mut self, root: &Path, name: &str, per_task: bool) -> Result<(), String> {
        use crate::contract::Isolation;
        use crate::git::worktree;
        let name = if name.is_empty() { format!("{:08x}", rand::random::<u32>()) } else { name.to_string() };
        if per_task && name.len() > 40 {
            // Each task's branch adds its number and its words to it.
            return Err(format!(
                "`{name}` is too long for --worktree-per-task: give --worktree a NAME of at most 40 characters"
            ));
        }
        if per_task {
            for project in &mut self.projects {
                // What would refuse the first task's worktree refuses the loop now.
                worktree::check(&project.cwd, &format!("{name}-1"), root).map_err(|e| e.to_string())?;
                project.isolation = Isolation::PerTask { root: root.to_path_buf(), name: name.clone() };
            }
            return Ok(());
        }
        let mut made: Vec<worktree::Worktree> = Vec::new();
        for i in 0..self.projects.len() {
            let cwd = self.projects[i].cwd.clone();
            // Projects of one repository share its worktree.
            let top = worktree::top(&cwd);
            let shared = made.iter().find(|w| top.as_ref() == Some(&w.repo));
            let tree = match shared {
                Some(w) => w.clone(),
                None => match worktree::make(&cwd, &name, root) {
                    Ok(w) => {
                        made.push(w.clone());
                        w
                    }
                    Err(e) => {
                        for w in &made {
                            let _ = worktree::remove(w, false, "none");
                        }
                        return Err(e.to_string());
                    }
                },
            };
            self.projects[i].isolation = Isolation::Worktree(tree);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_becomes_a_loop_or_a_one_line_error() {
        let state = tempfile::tempdir().unwrap();
        let here = tempfile::tempdir().unwrap();
        std::fs::write(here.path().join("TASKS.md"), "- [ ] one\n").unwrap();
        let ask = LoopRequest { tasks: Some("TASKS.md".into()), max_cost_usd: Some(5.0), ..LoopRequest::default() };
        let (spec, warnings) = ask.plan(here.path(), state.path()).unwrap();
        assert!(warnings.is_empty());
        assert_eq!(spec.program, "claude");
        assert_eq!(spec.projects[0].tasks, Source::File(here.path().join("TASKS.md")));
        assert_eq!(spec.settings.budget.max_cost_usd, Some(5.0));

        let both = LoopRequest { prompt: Some("x".into()), tasks: Some("TASKS.md".into()), ..LoopRequest::default() };
        assert_eq!(both.plan(here.path(), state.path()).unwrap_err(), LoopError::NoTask);
        let missing = LoopRequest { tasks: Some("NOPE.md".into()), ..LoopRequest::default() };
        assert!(missing.plan(here.path(), state.path()).unwrap_err().to_string().contains("NOPE.md"));
        let nowhere =
            LoopRequest { prompt: Some("x".into()), cwd: vec!["/no/such/dir".into()], ..LoopRequest::default() };
        assert_eq!(nowhere.plan(here.path(), state.path()).unwrap_err(), LoopError::NoProject("/no/such/dir".into()));
        let codex = LoopRequest {
            prompt: Some("x".into()),
            agent: Some(AgentKind::Codex),
            max_cost_usd: Some(1.0),
            ..LoopRequest::default()
        };
        assert_eq!(codex.plan(here.path(), state.path()).unwrap_err(), LoopError::CodexCost);
        let free = LoopRequest { prompt: Some("x".into()), max_cost_usd: Some(-1.0), ..LoopRequest::default() };
        assert!(free.plan(here.path(), state.path()).unwrap_err().to_string().starts_with("--max-cost-usd must be"));

        std::fs::create_dir_all(state.path().join("loops")).unwrap();
        std::fs::write(state.path().join("loops/HALT"), "").unwrap();
        let err = ask.plan(here.path(), state.path()).unwrap_err().to_string();
        assert!(
            err.starts_with("a HALT marker is left over from an earlier `nightshift loop halt`; remove it"),
            "{err}"
        );
    }

    #[test]
    fn a_per_task_name_leaves_room_for_each_tasks_number_and_words() {
        let (spec, _) = LoopRequest { prompt: Some("x".into()), ..LoopRequest::default() }
            .plan(tempfile::tempdir().unwrap().path(), tempfile::tempdir().unwrap().path())
            .unwrap();
        let root = tempfile::tempdir().unwrap();
        let e = spec.clone().isolate(root.path(), &"n".repeat(41), true).unwrap_err();
        assert!(e.contains("at most 40 characters"), "{e}");
    }
}
