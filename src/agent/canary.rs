//! What the canary (`nightshift doctor --canary`) said of each client version, kept in
//! `<state>/canary/results.json`, and what it means for a session about to start on a client: its
//! options say it, and with `[canary] required = true` a start on a client that has not passed is
//! refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::AgentKind;

/// A canary's verdict on one client version, as kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    #[serde(with = "crate::clock::ts")]
    pub at: DateTime<Utc>,
    pub ok: bool,
    /// The signals that were not read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<PathBuf>,
    /// The binary it ran, and its size and modification time then: the same file is the same
    /// version, without running it to ask.
    pub bin: PathBuf,
    pub size: u64,
    pub modified: i64,
}

/// The canary's verdicts, per agent and client version (`<state>/canary/results.json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Results {
    #[serde(flatten)]
    pub agents: BTreeMap<String, BTreeMap<String, Verdict>>,
}

/// A file's size and modification time (seconds), which say it is the same file.
pub fn fingerprint(bin: &Path) -> Option<(u64, i64)> {
    let meta = std::fs::metadata(bin).ok()?;
    let modified = meta.modified().ok()?.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs() as i64;
    Some((meta.len(), modified))
}

impl Results {
    pub fn path(state_dir: &Path) -> PathBuf {
        state_dir.join("canary").join("results.json")
    }

    /// The kept verdicts; none when there are none yet, or the file cannot be read.
    pub fn load(state_dir: &Path) -> Self {
        std::fs::read_to_string(Self::path(state_dir))
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }

    /// Keeps them (written whole, then moved into place).
    pub fn save(&self, state_dir: &Path) -> std::io::Result<()> {
        let path = Self::path(state_dir);
        if let Some(dir) = path.parent() {
            crate::paths::private_dirs(dir)?;
        }
        let tmp = path.with_extension("json.tmp");
        crate::paths::write_private(&tmp, serde_json::to_string_pretty(self).map_err(std::io::Error::other)?)?;
        std::fs::rename(tmp, path)
    }

    pub fn record(&mut self, agent: AgentKind, version: &str, verdict: Verdict) {
        self.agents.entry(agent.as_str().to_string()).or_default().insert(version.to_string(), verdict);
    }

    pub fn of_version(&self, agent: AgentKind, version: &str) -> Option<&Verdict> {
        self.agents.get(agent.as_str())?.get(version)
    }

    /// The verdict on the file `bin` as it is now, and its version, when the canary ran that
    /// very file.
    pub fn of_binary(&self, agent: AgentKind, bin: &Path) -> Option<(&str, &Verdict)> {
        let (size, modified) = fingerprint(bin)?;
        self.agents.get(agent.as_str())?.iter().find_map(|(version, v)| {
            (v.bin == bin && v.size == size && v.modified == modified).then_some((version.as_str(), v))
        })
    }

    /// The newest verdict of `agent`, with its version.
    pub fn latest(&self, agent: AgentKind) -> Option<(&str, &Verdict)> {
        self.agents.get(agent.as_str())?.iter().max_by_key(|(_, v)| v.at).map(|(k, v)| (k.as_str(), v))
    }
}

/// The first `N.N.N` the program prints for `--version`.
pub fn version_of(bin: &Path) -> Result<String, String> {
    let text = crate::platform::run_bounded(
        std::process::Command::new(bin).arg("--version"),
        std::time::Duration::from_secs(15),
    )?;
    text.split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .find(|w| {
            w.split('.').count() >= 3
                && w.split('.').take(3).all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        })
        .map(str::to_string)
        .ok_or_else(|| {
            // Its first line, shortened: enough to see what answered instead.
            let first: String = text.trim().lines().next().unwrap_or("nothing").chars().take(80).collect();
            format!("printed no version: `{first}`")
        })
}

/// Whether `a` is a later version than `b` (`2.1.333` over `2.1.332`), numbers compared as numbers.
fn newer(a: &str, b: &str) -> bool {
    let parts = |v: &str| v.split('.').map(|p| p.parse::<u64>().unwrap_or(0)).collect::<Vec<_>>();
    parts(a) > parts(b)
}

/// What the morning summary says of `agent`'s client (`program`, as the night's sessions start
/// it): when the installed one is newer than the canary last checked, or never checked, or failed,
/// and so whether tonight can trust it. `None` when the canary passed on the very file installed.
pub fn morning_note(agent: AgentKind, standing: Standing, state_dir: &Path) -> Option<String> {
    let results = Results::load(state_dir);
    match standing {
        Standing::Passed { .. } => None,
        Standing::Failed { version, failed, .. } => Some(format!(
            "The canary failed on the installed {agent} {version} ({}): fix the signals it names, or tonight's sessions \
             may be misread",
            failed.join(", ")
        )),
        Standing::Unchecked { bin } => {
            let installed = version_of(&bin).ok();
            let checked = results.latest(agent).map(|(v, verdict)| (v.to_string(), verdict.ok));
            Some(match (installed, checked) {
                (Some(now), Some((then, ok))) if newer(&now, &then) => format!(
                    "A newer {agent} is installed: {now}, after {then} the canary {} — its canary has not run on it: \
                     `nightshift doctor --canary` before tonight",
                    if ok { "passed" } else { "failed" }
                ),
                (Some(now), _) => format!(
                    "The canary has not run on the installed {agent} {now}: `nightshift doctor --canary` says whether \
                     tonight can trust it"
                ),
                (None, _) => format!(
                    "The canary has not run on {}: `nightshift doctor --canary` says whether tonight can trust it",
                    bin.display()
                ),
            })
        }
    }
}

/// What the canary said of the client a session starts.
#[derive(Debug, Clone, PartialEq)]
pub enum Standing {
    Passed {
        version: String,
        at: DateTime<Utc>,
    },
    Failed {
        version: String,
        at: DateTime<Utc>,
        failed: Vec<String>,
    },
    /// The canary has not run this very file.
    Unchecked {
        bin: PathBuf,
    },
}

impl Standing {
    /// The standing of `program` as a session in `cwd` would run it; `None` for a client the
    /// canary does not run (a generic agent, a program not found).
    pub fn of(agent: AgentKind, program: &str, cwd: &Path, state_dir: &Path) -> Option<Self> {
        if agent == AgentKind::Generic {
            return None;
        }
        let bin = crate::pty::resolve_program(program, cwd, std::env::var_os("PATH").as_deref()).ok()?;
        let results = Results::load(state_dir);
        Some(match results.of_binary(agent, &bin) {
            Some((version, v)) if v.ok => Self::Passed { version: version.to_string(), at: v.at },
            Some((version, v)) => Self::Failed { version: version.to_string(), at: v.at, failed: v.failed.clone() },
            None => Self::Unchecked { bin },
        })
    }

    /// The standing of `agent`'s own CLI as installed on this PATH (its built-in launch program):
    /// what the plan and the morning speak of.
    pub fn installed(agent: AgentKind, state_dir: &Path) -> Option<Self> {
        let adapter = super::Adapter::builtin(agent);
        let program = adapter.launch().map_or(agent.as_str(), |(p, _)| p);
        Self::of(agent, program, Path::new("/"), state_dir)
    }

    /// In words, for the session's options.
    pub fn describe(&self) -> String {
        match self {
            Self::Passed { version, at } => {
                format!("passed on {version}, {}", at.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M"))
            }
            Self::Failed { version, at, failed } => format!(
                "FAILED on {version} ({}), {}: Nightshift may misread this client tonight",
                failed.join(", "),
                at.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M")
            ),
            Self::Unchecked { bin } => {
                format!("not run on {} yet: `nightshift doctor --canary` checks it", bin.display())
            }
        }
    }

    /// Why a start that requires a passed canary is refused, if it is.
    pub fn refusal(&self, agent: AgentKind) -> Option<String> {
        match self {
            Self::Passed { .. } => None,
            Self::Failed { version, failed, .. } => Some(format!(
                "the canary failed on {agent} {version} ({}) and [canary] required is set: fix the signals it names and run `nightshift doctor --canary` again, or set required = false",
                failed.join(", ")
            )),
            Self::Unchecked { bin } => Some(format!(
                "the canary has not run on {} and [canary] required is set: run `nightshift doctor --canary` first, or set required = false",
                bin.display()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client at `dir/claude` that says it is `version`.
    fn client(dir: &Path, version: &str) -> PathBuf {
        let bin = dir.join("claude");
        std::fs::write(&bin, format!("#!/bin/sh\necho '{version} (Claude Code)'\n")).unwrap();
        std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        bin
    }

    fn keep(state: &Path, version: &str, bin: &Path, ok: bool) {
        let (size, modified) = fingerprint(bin).unwrap();
        let mut results = Results::load(state);
        let failed = if ok { vec![] } else { vec!["working.spinner".to_string()] };
        results.record(
            AgentKind::Claude,
            version,
            Verdict { at: Utc::now(), ok, failed, kept: None, bin: bin.into(), size, modified },
        );
        results.save(state).unwrap();
    }

    fn note(program: &str, state: &Path) -> Option<String> {
        morning_note(AgentKind::Claude, Standing::of(AgentKind::Claude, program, Path::new("/"), state)?, state)
    }

    #[test]
    fn the_morning_says_when_a_newer_client_is_installed_and_whether_its_canary_ran() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let bin = client(dir.path(), "2.1.332");
        let program = bin.display().to_string();
        let never = note(&program, &state).unwrap();
        assert!(never.starts_with("The canary has not run on the installed claude 2.1.332"), "{never}");
        keep(&state, "2.1.332", &bin, true);
        assert_eq!(note(&program, &state), None, "passed on this very file: nothing to say");
        // The client updated itself during the day.
        std::fs::write(&bin, "#!/bin/sh\necho '2.1.333 (Claude Code)' # a newer build\n").unwrap();
        let newer = note(&program, &state).unwrap();
        assert!(newer.starts_with("A newer claude is installed: 2.1.333, after 2.1.332 the canary passed"), "{newer}");
        assert!(newer.contains("`nightshift doctor --canary` before tonight"), "{newer}");
        keep(&state, "2.1.333", &bin, false);
        let failed = note(&program, &state).unwrap();
        assert!(failed.starts_with("The canary failed on the installed claude 2.1.333 (working.spinner)"), "{failed}");
        assert_eq!(Standing::of(AgentKind::Generic, &program, Path::new("/"), &state), None, "no canary for it");
        assert!(!super::newer("2.1.40", "2.1.332") && super::newer("2.10.0", "2.9.9"), "numbers compared as numbers");
    }
}
