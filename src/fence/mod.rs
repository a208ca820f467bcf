//! Tonight's fence for a folder, read from the project: the hosts its repositories' remotes and
//! submodules lead to, and the package indexes its own tools are configured to use, each with the
//! reason it is there.
//!
//! Nothing here names a registry: every index host comes from the ecosystem's own tool, asked in
//! the folder with the session's environment (`npm config list`, `pip config list`, `go env`), or
//! from the files that tool reads (`.npmrc`, `pip.conf`, `uv.toml`, `.cargo/config.toml`, the
//! lockfiles' resolved URLs, cargo's own index cache), so a mirror or a company registry is
//! followed. Where neither says, a warning says so instead of a guess.
//!
//! A reader is a pure parser over text (tested on texts the tests write) under a thin gather layer
//! whose only I/O is reading files and running a tool through [`Env::run`] (the session's variables
//! only, a time limit). Git is asked through [`crate::git`], the only place that runs it. What a
//! reader finds is a [`Place`](hosts::Place) with a [`Why`]; [`Found`] keeps one entry per host and
//! port, the first reason first. No user name, password or token reaches a host, a reason or a
//! warning.

mod cargo;
mod env;
mod go;
mod hosts;
mod npm;
mod python;
mod remotes;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub use env::{Env, Ran, TOOL_LIMIT};

/// One host the project is set up to reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowed {
    /// Lowercase; an IPv6 literal without brackets; never a user or a password.
    pub host: String,
    /// `None` for HTTP(S) on its default port; the port for anything else (ssh's 22 included).
    pub port: Option<u16>,
    /// Why it is allowed: the first reader that found it.
    pub why: Why,
    /// The other reasons it was found for, if any (at most [`MOST_ALSO`]).
    pub also: Vec<Why>,
}

/// How many further reasons a host keeps: enough to explain it, bounded for a lockfile's thousands.
pub const MOST_ALSO: usize = 8;

/// Why a host is in the fence.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Why {
    /// A remote of the repository; `push` when it is the push URL.
    Remote { name: String, push: bool },
    /// A submodule, by its path in the working tree.
    Submodule { path: String },
    /// A tool's configuration: `tool` ("npm"), what the host is to it ("registry", "scoped
    /// registry @acme", "extra index"), and where that was read ("npm config", "/home/u/.npmrc",
    /// "package-lock.json", "pip's default").
    Tool { tool: String, what: String, from: String },
}

impl Why {
    /// The reason in words: "the remote origin (push)", "npm's registry, from .npmrc".
    pub fn words(&self) -> String {
        match self {
            Why::Remote { name, push: false } => format!("the remote {name}"),
            Why::Remote { name, push: true } => format!("the remote {name} (push)"),
            Why::Submodule { path } => format!("the submodule {path}"),
            Why::Tool { tool, what, from } => format!("{tool}'s {what}, from {from}"),
        }
    }

    pub(crate) fn tool(tool: &str, what: impl Into<String>, from: impl Into<String>) -> Why {
        Why::Tool { tool: tool.into(), what: what.into(), from: from.into() }
    }
}

/// What a folder's project is set up to reach, and what it looks like it needs that the fence
/// cannot give it or that could not be told (one line each, where the user may have to act).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    pub hosts: Vec<Allowed>,
    pub warnings: Vec<String>,
}

/// Everything the project in `dir` is set up to reach: its repositories' remotes and the package
/// indexes of the ecosystems the folder shows. `env` is the session's environment (HOME,
/// CARGO_HOME, GOPROXY, PIP_INDEX_URL, npm_config_*, …): the readers read no other, and run every
/// tool with it, never one found inside `dir` (see [`Env::distrusting`]).
///
/// Blocking (it runs git and the ecosystems' tools, each for at most the env's limit): callers on
/// the async runtime run it with `spawn_blocking`.
pub fn project(dir: &Path, env: &Env) -> Found {
    let env = &env.clone().distrusting(dir);
    let mut fence = Fence::default();
    remotes::read(dir, env, &mut fence);
    let shows = Shows::of(dir);
    for folder in &shows.npm {
        npm::read(folder, dir, env, &mut fence);
    }
    for folder in &shows.python {
        python::read(folder, dir, env, &mut fence);
    }
    for folder in &shows.cargo {
        cargo::read(folder, dir, env, &mut fence);
    }
    if !shows.go.is_empty() {
        go::read(&shows.go, dir, env, &mut fence);
    }
    if shows.cut_short {
        fence.warn(format!(
            "{} has more than {MOST_PROJECTS} projects of one kind in its first two levels; only the first were read",
            dir.display()
        ));
    }
    fence.found
}

/// The hosts found so far, one per host and port, and the warnings, each once.
#[derive(Debug, Default)]
pub(crate) struct Fence {
    found: Found,
    index: HashMap<(String, Option<u16>), usize>,
}

impl Fence {
    pub(crate) fn allow(&mut self, place: &hosts::Place, why: Why) {
        let key = (place.host.clone(), place.port);
        match self.index.get(&key) {
            Some(&at) => {
                let allowed = &mut self.found.hosts[at];
                if allowed.why != why && allowed.also.len() < MOST_ALSO && !allowed.also.contains(&why) {
                    allowed.also.push(why);
                }
            }
            None => {
                self.index.insert(key, self.found.hosts.len());
                self.found.hosts.push(Allowed { host: place.host.clone(), port: place.port, why, also: Vec::new() });
            }
        }
    }

    pub(crate) fn warn(&mut self, warning: impl Into<String>) {
        let warning = hosts::redact(&warning.into());
        if !self.found.warnings.contains(&warning) {
            self.found.warnings.push(warning);
        }
    }
}

/// The most folders of one ecosystem read under a project (its top and two levels down).
pub const MOST_PROJECTS: usize = 16;

/// The folders under `dir` (itself and two levels down) whose manifests or lockfiles show each
/// ecosystem. Hidden folders and the ecosystems' own vendored trees are not looked into.
#[derive(Debug, Default)]
struct Shows {
    npm: Vec<PathBuf>,
    python: Vec<PathBuf>,
    cargo: Vec<PathBuf>,
    go: Vec<PathBuf>,
    cut_short: bool,
}

const NPM_FILES: [&str; 6] =
    ["package.json", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", ".npmrc"];
const PYTHON_FILES: [&str; 8] =
    ["pyproject.toml", "setup.py", "setup.cfg", "uv.lock", "poetry.lock", "Pipfile", "Pipfile.lock", "uv.toml"];
const CARGO_FILES: [&str; 2] = ["Cargo.toml", "Cargo.lock"];
const GO_FILES: [&str; 3] = ["go.mod", "go.sum", "go.work"];
/// Trees that are a tool's own copies of other projects, not the project's.
const NOT_THE_PROJECT: [&str; 6] = ["node_modules", "target", "vendor", "venv", "site-packages", "__pycache__"];

impl Shows {
    fn of(dir: &Path) -> Shows {
        let mut shows = Shows::default();
        let mut folders = vec![(dir.to_path_buf(), 0)];
        while let Some((folder, depth)) = folders.pop() {
            let Ok(entries) = std::fs::read_dir(&folder) else { continue };
            let mut names: Vec<(String, bool)> = entries
                .flatten()
                .filter_map(|e| Some((e.file_name().into_string().ok()?, e.file_type().ok()?.is_dir())))
                .collect();
            names.sort();
            let has = |set: &[&str]| names.iter().any(|(n, is_dir)| !is_dir && set.contains(&n.as_str()));
            let requirements = names.iter().any(|(n, d)| !d && n.starts_with("requirements") && n.ends_with(".txt"));
            for (list, shown) in [
                (&mut shows.npm, has(&NPM_FILES)),
                (&mut shows.python, has(&PYTHON_FILES) || requirements),
                (&mut shows.cargo, has(&CARGO_FILES)),
                (&mut shows.go, has(&GO_FILES)),
            ] {
                if shown && list.len() < MOST_PROJECTS {
                    list.push(folder.clone());
                } else if shown {
                    shows.cut_short = true;
                }
            }
            if depth < 2 {
                let below = names
                    .iter()
                    .rev()
                    .filter(|(n, d)| *d && !n.starts_with('.') && !NOT_THE_PROJECT.contains(&n.as_str()));
                folders.extend(below.map(|(n, _)| (folder.join(n), depth + 1)));
            }
        }
        shows
    }
}

/// The largest file a reader reads: a lockfile of tens of thousands of packages is a few tens of
/// megabytes; anything past this is not a project's configuration.
pub const MOST_FILE: u64 = 64 << 20;

/// The text of `path`, if it is a file; one past [`MOST_FILE`] is left unread, with a warning.
pub(crate) fn read_text(path: &Path, project: &Path, fence: &mut Fence) -> Option<String> {
    let meta = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
    if meta.len() > MOST_FILE {
        fence.warn(format!("{} is larger than {} MB and was not read", shown_path(path, project), MOST_FILE >> 20));
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// `path` as the user would recognise it in a reason: relative to the project when it is inside.
pub(crate) fn shown_path(path: &Path, project: &Path) -> String {
    match path.strip_prefix(project) {
        Ok(inside) if !inside.as_os_str().is_empty() => inside.display().to_string(),
        _ => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests;
