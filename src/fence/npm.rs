//! npm's part of the fence: the registry and every scoped registry as npm reads them for the
//! folder, and the hosts its lockfiles (and yarn's and pnpm's) resolve packages from.
//!
//! npm is asked first (`npm config list --json` in the folder, with the session's variables: it
//! reads the builtin, global, user and project `.npmrc` and `npm_config_*` as it will when the
//! agent runs it; `npm config list` says which file each value came from). Without npm, the files
//! are read in npm's order: the global file the environment names, the user's
//! (`$NPM_CONFIG_USERCONFIG`, else `~/.npmrc`), the project's (at the nearest folder up with a
//! `package.json` or `node_modules`), then `npm_config_*`; a later one wins, key by key. npm's own
//! default registry is then unknown: a warning says so unless a lockfile names the hosts.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::hosts::{self, Place};
use super::{read_text, shown_path, Env, Fence, Ran, Why};

/// A registry npm is configured with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Registry {
    /// `@acme` for a scoped one.
    pub scope: Option<String>,
    pub url: String,
    /// Where it was set, as the reason will say it.
    pub from: String,
    /// npm's own default: no file and no variable set it.
    pub default: bool,
}

impl Registry {
    fn what(&self) -> String {
        match &self.scope {
            Some(scope) => format!("registry for {scope}"),
            None if self.default => "default registry".into(),
            None => "registry".into(),
        }
    }
}

/// One setting of a `.npmrc`: its line number, key and value.
pub(super) type Setting = (usize, String, String);

/// A `.npmrc`'s top-level settings by line, and the lines that are not settings.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Npmrc {
    pub entries: Vec<Setting>,
    pub problems: Vec<(usize, String)>,
}

pub(super) fn read(folder: &Path, project: &Path, env: &Env, fence: &mut Fence) {
    let root = project_root(folder);
    // Every file is read, whether npm answers or not: a line npm skips without a word is told.
    let mut layers = Vec::new();
    for path in config_files(&root, env) {
        let Some(text) = read_text(&path, project, fence) else { continue };
        let shown = shown_path(&path, project);
        let npmrc = parse_npmrc(&text, env);
        for (line, problem) in &npmrc.problems {
            fence.warn(format!("{shown}: line {line}: {problem}; npm's setting there is skipped"));
        }
        layers.push((shown, npmrc.entries));
    }
    let registries = match asked(folder, project, env) {
        Ok(Some(registries)) => registries,
        Ok(None) => from_files(&layers, env),
        Err(said) => {
            fence.warn(format!(
                "npm could not say its registries in {}: {said}; read from its files",
                shown_path(folder, project)
            ));
            from_files(&layers, env)
        }
    };
    let mut named = BTreeSet::new();
    for registry in &registries {
        match hosts::web(&registry.url) {
            Some(place) => {
                named.insert(place.host.clone());
                fence.allow(&place, Why::tool("npm", registry.what(), registry.from.clone()));
            }
            None => fence.warn(format!(
                "npm's {} from {} is not a URL with a host; it is left out of the fence",
                registry.what(),
                registry.from
            )),
        }
    }
    let default_known = registries.iter().any(|r| r.scope.is_none());
    let mut locked = false;
    for (name, tool) in LOCKFILES {
        let path = folder.join(name);
        let Some(text) = read_text(&path, project, fence) else { continue };
        let shown = shown_path(&path, project);
        let places = match lockfile_places(name, &text) {
            Ok(places) => places,
            Err(why) => {
                fence.warn(format!("{shown} cannot be read ({why}); the hosts it resolves from are not in the fence"));
                continue;
            }
        };
        for place in places {
            locked = true;
            if !place.is_web() {
                fence.warn(format!(
                    "{shown} fetches packages over {} from {}, which the fence's HTTP proxy does not carry",
                    place.scheme,
                    place.shown()
                ));
            } else if default_known && !named.contains(&place.host) {
                fence.warn(format!(
                    "{shown} resolves packages from {}, which npm's configuration does not name: it is allowed \
                     for the lockfile's sake; lock again against the configured registry if that host is a mistake",
                    place.host
                ));
            }
            fence.allow(&place, Why::tool(tool, "locked packages", shown.clone()));
        }
    }
    if folder.join("yarn.lock").is_file() {
        for path in [Some(root.clone()), env.home()].into_iter().flatten().flat_map(|f| YARNRC.map(|(n, _)| f.join(n)))
        {
            let Some(text) = read_text(&path, project, fence) else { continue };
            let key = YARNRC.iter().find(|(n, _)| path.ends_with(n)).map_or("", |(_, key)| key);
            for url in yarn_registries(&text, key) {
                let Some(place) = hosts::web(&url) else { continue };
                fence.allow(&place, Why::tool("yarn", "registry", shown_path(&path, project)));
            }
        }
    }
    if !default_known && !locked {
        fence.warn(format!(
            "npm is not installed and no .npmrc names a registry for {}: npm's default registry is not known, \
             so it is not in the fence",
            shown_path(folder, project)
        ));
    }
}

/// The lockfiles, and whose they are.
const LOCKFILES: [(&str, &str); 4] =
    [("package-lock.json", "npm"), ("npm-shrinkwrap.json", "npm"), ("yarn.lock", "yarn"), ("pnpm-lock.yaml", "pnpm")];

/// The folder npm takes for the project's: the nearest one up with a `package.json` or a
/// `node_modules` (npm's `localPrefix`), else the folder itself.
fn project_root(folder: &Path) -> PathBuf {
    folder
        .ancestors()
        .find(|at| at.join("package.json").is_file() || at.join("node_modules").is_dir())
        .unwrap_or(folder)
        .to_path_buf()
}

/// The `.npmrc` files npm reads, lowest first (a later one wins).
fn config_files(root: &Path, env: &Env) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(global) = env.get_any_case("npm_config_globalconfig") {
        files.push(PathBuf::from(global));
    } else if let Some(prefix) = env.get_any_case("npm_config_prefix") {
        files.push(Path::new(prefix).join("etc/npmrc"));
    }
    match env.get_any_case("npm_config_userconfig") {
        Some(user) => files.push(PathBuf::from(user)),
        None => files.extend(env.home().map(|home| home.join(".npmrc"))),
    }
    let project = root.join(".npmrc");
    if !files.contains(&project) {
        files.push(project);
    }
    files
}

/// npm's own answer for `folder`: `Ok(None)` when npm is not installed.
///
/// npm is only asked, so it is told to write nothing of the user's: no debug log of the run
/// (`~/.npm/_logs`), no look for a newer npm (a file of the day it looked), and a cache of its own
/// for the question (npm makes `~/.npm` at start otherwise), removed after. Given on the command
/// line: the registries' sources stay what the user set.
fn asked(folder: &Path, project: &Path, env: &Env) -> Result<Option<Vec<Registry>>, String> {
    let scratch = tempfile::Builder::new().prefix("nightshift-npm-").tempdir().ok();
    let cache = scratch.as_ref().map(|d| format!("--cache={}", d.path().display()));
    let quiet: Vec<&str> = ["--logs-max=0", "--update-notifier=false"].into_iter().chain(cache.as_deref()).collect();
    let ask = |args: &[&str]| env.run(folder, "npm", &[args, &quiet].concat());
    let json = match ask(&["config", "list", "--json"]) {
        Ran::Said(json) => json,
        Ran::Missing => return Ok(None),
        Ran::Failed(said) => return Err(said),
        Ran::TimedOut => return Err(format!("npm config did not answer within {:?}", env.limit())),
    };
    // Which file each value came from: best told, never needed. `None` when it could not be read.
    let sources = match ask(&["config", "list"]) {
        Ran::Said(text) => Some(sources(&text)),
        _ => None,
    };
    let mut registries = registries_in_json(&json)?;
    for registry in &mut registries {
        let key = registry.scope.as_ref().map_or("registry".to_string(), |s| format!("{s}:registry"));
        let source = sources.as_ref().and_then(|s| s.get(&key));
        registry.from = match source.map(String::as_str) {
            Some("environment") => "the environment (npm_config_*)".into(),
            Some("command line") | None => "npm config".into(),
            Some(path) => shown_path(Path::new(path), project),
        };
        // Set nowhere npm lists (an empty listing included): its builtin default.
        registry.default = sources.is_some() && source.is_none();
    }
    Ok(Some(registries))
}

/// The registries in `npm config list --json`'s answer.
pub(super) fn registries_in_json(json: &str) -> Result<Vec<Registry>, String> {
    let config: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(json).map_err(|e| format!("npm config's answer is not JSON: {e}"))?;
    let mut registries: Vec<Registry> = config
        .iter()
        .filter_map(|(key, value)| {
            let scope = registry_scope(key)?;
            Some(Registry { scope, url: value.as_str()?.to_string(), from: "npm config".into(), default: false })
        })
        .collect();
    registries.sort_by_key(|r| r.scope.clone());
    Ok(registries)
}

/// `Some(None)` for `registry`, `Some(Some("@acme"))` for `@acme:registry`, `None` for the rest.
fn registry_scope(key: &str) -> Option<Option<String>> {
    if key == "registry" {
        return Some(None);
    }
    let scope = key.strip_suffix(":registry")?;
    (scope.starts_with('@') && scope.len() > 1).then(|| Some(scope.to_string()))
}

/// Which source each setting in `npm config list`'s text came from: a file's path,
/// "environment" or "command line". Overridden settings (commented out there) are not counted.
pub(super) fn sources(text: &str) -> BTreeMap<String, String> {
    let mut sources = BTreeMap::new();
    let mut source = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("; \"") {
            source = rest.split_once("\" config from ").map(|(_, from)| from.trim().to_string());
        } else if !line.starts_with(';') {
            if let (Some((key, _)), Some(source)) = (line.split_once(" = "), &source) {
                sources.insert(key.trim().to_string(), source.clone());
            }
        }
    }
    sources
}

/// The registries the files and `npm_config_*` set, the later file winning key by key.
pub(super) fn from_files(layers: &[(String, Vec<Setting>)], env: &Env) -> Vec<Registry> {
    let mut by_key: BTreeMap<String, Registry> = BTreeMap::new();
    for (shown, entries) in layers {
        for (_, key, value) in entries {
            if let Some(scope) = registry_scope(key) {
                by_key.insert(key.clone(), Registry { scope, url: value.clone(), from: shown.clone(), default: false });
            }
        }
    }
    for (name, value) in env.with_prefix("npm_config_") {
        // npm's own reading of a variable's name: `npm_config_@acme:registry`, `NPM_CONFIG_REGISTRY`.
        let key: String = name["npm_config_".len()..].to_lowercase();
        if let Some(scope) = registry_scope(&key) {
            let from = format!("the environment ({name})");
            by_key.insert(key, Registry { scope, url: value.to_string(), from, default: false });
        }
    }
    let mut registries: Vec<Registry> = by_key.into_values().collect();
    registries.sort_by_key(|r| r.scope.clone());
    registries
}

/// A `.npmrc` read as npm's `ini` reads it: `key = value`, `;` and `#` comments (also after an
/// unquoted value), quoted values, `${VAR}` from the session, `[section]`s (whose keys are not
/// npm's). A line that is none of these is a problem: npm would take it for a flag, not a setting.
pub(super) fn parse_npmrc(text: &str, env: &Env) -> Npmrc {
    let mut npmrc = Npmrc::default();
    let mut in_section = false;
    for (at, line) in text.lines().enumerate() {
        let number = at + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            match rest.strip_suffix(']') {
                Some(_) => in_section = true,
                None => npmrc.problems.push((number, "a section header with no closing `]`".into())),
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            npmrc.problems.push((number, "no `=` in it".into()));
            continue;
        };
        let (key, value) = (unquote(key.trim()), unquote(value.trim()));
        if key.is_empty() {
            npmrc.problems.push((number, "no name before `=`".into()));
            continue;
        }
        let (key, value) = match (expand(&key, env), expand(&value, env)) {
            (Ok(key), Ok(value)) => (key, value),
            (Err(var), _) | (_, Err(var)) => {
                npmrc.problems.push((number, format!("`${{{var}}}` is not set in the session")));
                continue;
            }
        };
        if in_section {
            continue;
        }
        if registry_scope(&key).is_some() && hosts::web(&value).is_none() {
            npmrc.problems.push((number, format!("`{key}` is not a URL with a host")));
            continue;
        }
        npmrc.entries.push((number, key, value));
    }
    npmrc
}

/// A value as `ini` unquotes it: `"…"` and `'…'` whole; otherwise up to an unescaped `;` or `#`.
fn unquote(value: &str) -> String {
    for quote in ['"', '\''] {
        if value.len() >= 2 && value.starts_with(quote) && value.ends_with(quote) {
            return value[1..value.len() - 1].to_string();
        }
    }
    let mut out = String::new();
    let mut escaped = false;
    for c in value.chars() {
        match c {
            _ if escaped => {
                out.push(c);
                escaped = false;
            }
            '\\' => escaped = true,
            ';' | '#' => break,
            _ => out.push(c),
        }
    }
    out.trim().to_string()
}

/// `${VAR}` replaced from the session, as npm does in keys and values; `Err(VAR)` when unset.
fn expand(text: &str, env: &Env) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start + 2..].find('}') else { break };
        let name = &rest[start + 2..start + 2 + len];
        out.push_str(&rest[..start]);
        out.push_str(env.get(name).ok_or_else(|| name.to_string())?);
        rest = &rest[start + 3 + len..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The distinct places a lockfile resolves packages from.
pub(super) fn lockfile_places(name: &str, text: &str) -> Result<BTreeSet<Place>, String> {
    let mut urls: Vec<String> = Vec::new();
    match name {
        "package-lock.json" | "npm-shrinkwrap.json" => {
            let lock: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
            resolved_in(&lock, &mut urls);
        }
        // `resolved "https://…"` (yarn 1); yarn 2+ locks by name, not URL.
        "yarn.lock" => urls.extend(text.lines().filter_map(|l| {
            let value = l.trim().strip_prefix("resolved")?.trim();
            Some(value.trim_matches('"').to_string())
        })),
        // `tarball: https://…`, inline (`{integrity: …, tarball: …}`) or on a line of its own.
        _ => urls.extend(text.split("tarball:").skip(1).filter_map(|rest| {
            let url = rest.trim_start().split([',', '}', '\n', ' ']).next()?;
            Some(url.trim_matches(['"', '\'']).to_string())
        })),
    }
    Ok(urls.iter().filter_map(|u| hosts::web(u)).collect())
}

/// Every `resolved` string in a `package-lock.json` (v1's nested `dependencies`, v2/v3's `packages`).
fn resolved_in(value: &serde_json::Value, urls: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                match value {
                    serde_json::Value::String(url) if key == "resolved" => urls.push(url.clone()),
                    _ => resolved_in(value, urls),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| resolved_in(v, urls)),
        _ => {}
    }
}

/// yarn's own registry settings: `npmRegistryServer:` in `.yarnrc.yml` (yarn 2+, scoped ones
/// too) and `registry "…"` in `.yarnrc` (yarn 1), in the project and the home folder.
const YARNRC: [(&str, &str); 2] = [(".yarnrc.yml", "npmRegistryServer:"), (".yarnrc", "registry ")];

/// The URLs a yarn file sets with `key`.
pub(super) fn yarn_registries(text: &str, key: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| Some(line.trim().strip_prefix(key)?.trim().trim_matches(['"', '\'']).to_string()))
        .collect()
}

#[cfg(test)]
mod tests;
