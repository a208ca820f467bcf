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
            std::fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_string_pretty(self).map_err(std::io::Error::other)?)?;
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
