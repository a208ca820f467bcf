//! cargo's part of the fence: the registries and sources its configuration names for the folder,
//! what its default registry is (its index and download hosts, from cargo's own index cache), and
//! the sources `Cargo.lock` and `Cargo.toml` name.
//!
//! cargo cannot be asked (`cargo config get` is unstable), so its files are read as it reads them:
//! `.cargo/config.toml` (or `.cargo/config`, which cargo prefers when both exist) in the folder and
//! every folder up to the root, then `$CARGO_HOME/config.toml`; a nearer file wins, key by key;
//! `CARGO_REGISTRIES_<NAME>_INDEX` and `CARGO_REGISTRY_DEFAULT` over them all. A source replaced
//! (`replace-with`) is not reached: what replaces it is, and a `directory` or `local-registry` one
//! is on this machine. The default registry, unless replaced, is whichever cargo has fetched:
//! `$CARGO_HOME/registry/index/<host>-<hash>/` names its host, and its `config.json` the hosts of
//! its downloads (`dl`) and API (`api`). Nothing here names it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::hosts::{self, Place};
use super::{read_text, shown_path, Env, Fence, Why};

/// cargo's settings that name where it fetches from, merged from its files and variables.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Config {
    /// `[registries.NAME] index`, with where it was set.
    pub registries: BTreeMap<String, (String, String)>,
    /// `[source.NAME]`: what replaces it, or where it is.
    pub sources: BTreeMap<String, (SourceDef, String)>,
    /// `[registry] default`.
    pub default: Option<(String, String)>,
}

/// One `[source.NAME]` table.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct SourceDef {
    pub replace_with: Option<String>,
    /// `registry = "…"` or `git = "…"`.
    pub url: Option<String>,
    /// `directory` or `local-registry`: on this machine.
    pub local: bool,
}

/// The name cargo gives crates.io's source in its configuration (not a host).
const CRATES_IO: &str = "crates-io";

pub(super) fn read(folder: &Path, project: &Path, env: &Env, fence: &mut Fence) {
    let cargo_home = env.get("CARGO_HOME").map(PathBuf::from).or_else(|| env.home().map(|h| h.join(".cargo")));
    let mut tables = Vec::new();
    for path in config_files(folder, cargo_home.as_deref()) {
        let Some(text) = read_text(&path, project, fence) else { continue };
        let shown = shown_path(&path, project);
        match text.parse::<toml::Table>() {
            Ok(table) => tables.push((shown, table)),
            Err(e) => fence
                .warn(format!("{shown} is not TOML ({}); the registries it names are not in the fence", e.message())),
        }
    }
    let config = merge(&tables, env);
    let state = cargo_home.as_deref().map(index_cache).unwrap_or_default();

    // Where each configured registry and source leads, unless replaced.
    let mut configured: Vec<String> = Vec::new();
    for (name, (index, from)) in &config.registries {
        allow_index(fence, index, &format!("registry {name}"), from, &state, &mut configured);
    }
    for (name, (def, from)) in &config.sources {
        if let (None, Some(url)) = (&def.replace_with, &def.url) {
            allow_index(fence, url, &format!("source {name}"), from, &state, &mut configured);
        }
    }
    if let Some((name, from)) = &config.default {
        if !config.registries.contains_key(name) {
            fence.warn(format!("cargo's default registry {name} (from {from}) has no index configured"));
        }
    }
    // Whether cargo reaches its default registry: the indexes in its cache no configured one
    // accounts for stand for it only then.
    let default_reached = match replaced(&config, CRATES_IO) {
        Ok(Some(_)) => false,
        Ok(None) => {
            default_registry(&state, &configured, cargo_home.as_deref(), fence);
            true
        }
        Err(why) => {
            fence.warn(format!("cargo's source replacement cannot be followed: {why}"));
            false
        }
    };
    let reached =
        |host: &str| configured.iter().any(|c| c == host) || (default_reached && state.iter().any(|s| s.host == host));
    for name in ["Cargo.lock", "Cargo.toml"] {
        let path = folder.join(name);
        let Some(text) = read_text(&path, project, fence) else { continue };
        let shown = shown_path(&path, project);
        let urls = if name == "Cargo.lock" { lock_sources(&text) } else { manifest_git(&text) };
        let urls = match urls {
            Ok(urls) => urls,
            Err(why) => {
                fence.warn(format!("{shown} cannot be read ({why}); the sources it names are not in the fence"));
                continue;
            }
        };
        for url in urls {
            let Some(place) = hosts::web(&url) else { continue };
            // `registry+…` is a registry's name as much as its address (crates.io's is a git URL
            // even where cargo fetches its sparse index): allowed only where cargo reaches it, so
            // not where its source is replaced.
            if url.starts_with("registry+") && !reached(&place.host) {
                continue;
            }
            // Cargo.toml names git dependencies only; Cargo.lock marks them `git+`.
            let git = name == "Cargo.toml" || url.starts_with("git+");
            let what = if git { "git dependency" } else { "locked registry" };
            fence.allow(&place, Why::tool("cargo", what, shown.clone()));
        }
    }
}

/// The config files cargo reads for `folder`, nearest first.
fn config_files(folder: &Path, cargo_home: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = folder.ancestors().map(|a| a.join(".cargo")).collect();
    if let Some(home) = cargo_home {
        if !dirs.iter().any(|d| d == home) {
            dirs.push(home.to_path_buf());
        }
    }
    dirs.into_iter()
        .filter_map(|dir| [dir.join("config"), dir.join("config.toml")].into_iter().find(|p| p.is_file()))
        .collect()
}

/// The settings of `tables` (nearest first), under `CARGO_*` variables.
pub(super) fn merge(tables: &[(String, toml::Table)], env: &Env) -> Config {
    let mut config = Config::default();
    // Farthest first, so that a nearer file's key replaces it.
    for (from, table) in tables.iter().rev() {
        let get = |t: &toml::Value, key: &str| t.get(key).and_then(toml::Value::as_str).map(str::to_string);
        for (name, reg) in table.get("registries").and_then(toml::Value::as_table).into_iter().flatten() {
            if let Some(index) = get(reg, "index") {
                config.registries.insert(name.clone(), (index, from.clone()));
            }
        }
        for (name, src) in table.get("source").and_then(toml::Value::as_table).into_iter().flatten() {
            let entry = config.sources.entry(name.clone()).or_insert_with(|| (SourceDef::default(), from.clone()));
            if let Some(with) = get(src, "replace-with") {
                entry.0.replace_with = Some(with);
                entry.1 = from.clone();
            }
            if let Some(url) = get(src, "registry").or_else(|| get(src, "git")) {
                entry.0.url = Some(url);
                entry.1 = from.clone();
            }
            if src.get("directory").or_else(|| src.get("local-registry")).is_some() {
                entry.0.local = true;
            }
        }
        if let Some(default) = table.get("registry").and_then(|r| get(r, "default")) {
            config.default = Some((default, from.clone()));
        }
    }
    for (name, value) in env.with_prefix("CARGO_REGISTRIES_") {
        let Some(registry) = name["CARGO_REGISTRIES_".len()..].strip_suffix("_INDEX") else { continue };
        // The variable's spelling of a name: upper case, `-` as `_`.
        let spelt = |n: &String| n.to_uppercase().replace('-', "_") == registry;
        let key = config
            .registries
            .keys()
            .find(|n| spelt(n))
            .cloned()
            .unwrap_or_else(|| registry.to_lowercase().replace('_', "-"));
        config.registries.insert(key, (value.to_string(), format!("the environment ({name})")));
    }
    if let Some(default) = env.get("CARGO_REGISTRY_DEFAULT") {
        config.default = Some((default.to_string(), "the environment (CARGO_REGISTRY_DEFAULT)".into()));
    }
    config
}

/// What finally stands in for the source `name`: `Ok(None)` when nothing replaces it,
/// `Ok(Some(name))` for the last of the chain; a chain that loops or ends nowhere is an error.
pub(super) fn replaced(config: &Config, name: &str) -> Result<Option<String>, String> {
    let mut at = name.to_string();
    let mut seen = vec![at.clone()];
    while let Some(next) = config.sources.get(&at).and_then(|(def, _)| def.replace_with.clone()) {
        if seen.contains(&next) {
            return Err(format!("`replace-with` goes round through {}", seen.join(", ")));
        }
        if !config.sources.contains_key(&next) && !config.registries.contains_key(&next) {
            return Err(format!("source {at} is replaced with {next}, which is defined nowhere"));
        }
        seen.push(next.clone());
        at = next;
    }
    Ok((at != name).then_some(at))
}

/// An index cargo has fetched: its host (from its folder's name) and the `dl` and `api` URLs of
/// its `config.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Cached {
    pub folder: PathBuf,
    pub host: String,
    pub dl: Option<String>,
    pub api: Option<String>,
}

/// The indexes in `$CARGO_HOME/registry/index/`, by folder name.
pub(super) fn index_cache(cargo_home: &Path) -> Vec<Cached> {
    let Ok(entries) = std::fs::read_dir(cargo_home.join("registry/index")) else { return Vec::new() };
    let mut found: Vec<Cached> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            // `<host>-<16 hex digits>`, cargo's short name of a source.
            let (host, hash) = name.rsplit_once('-')?;
            if hash.len() != 16 || !hash.chars().all(|c| c.is_ascii_hexdigit()) {
                return None;
            }
            let host = hosts::web(&format!("https://{host}/"))?.host;
            let json = std::fs::read_to_string(entry.path().join("config.json")).ok();
            let json: Option<serde_json::Value> = json.and_then(|j| serde_json::from_str(&j).ok());
            let field = |k: &str| json.as_ref().and_then(|j| j.get(k)?.as_str().map(str::to_string));
            Some(Cached { folder: entry.path(), host, dl: field("dl"), api: field("api") })
        })
        .collect();
    found.sort_by(|a, b| a.folder.cmp(&b.folder));
    found
}

/// Allows a registry's index, and its downloads and API where cargo's cache of it names them.
fn allow_index(fence: &mut Fence, url: &str, what: &str, from: &str, state: &[Cached], configured: &mut Vec<String>) {
    let Some(place) = hosts::web(url) else {
        if url.contains("://") {
            fence.warn(format!("cargo's {what} from {from} is not a URL with a host; it is left out"));
        }
        return;
    };
    configured.push(place.host.clone());
    fence.allow(&place, Why::tool("cargo", format!("{what}'s index"), from.to_string()));
    for cached in state.iter().filter(|c| c.host == place.host) {
        allow_cached(fence, cached, what);
    }
}

fn allow_cached(fence: &mut Fence, cached: &Cached, what: &str) {
    let from = cached.folder.join("config.json").display().to_string();
    for (url, role) in [(&cached.dl, "downloads"), (&cached.api, "API")] {
        if let Some(place) = url.as_deref().and_then(hosts::web) {
            fence.allow(&place, Why::tool("cargo", format!("{what}'s {role}"), from.clone()));
        }
    }
}

/// crates.io, unreplaced: the indexes in cargo's cache that no configured registry accounts for.
fn default_registry(state: &[Cached], configured: &[String], cargo_home: Option<&Path>, fence: &mut Fence) {
    let theirs: Vec<&Cached> = state.iter().filter(|c| !configured.contains(&c.host)).collect();
    if theirs.is_empty() {
        let at = cargo_home.map_or("$CARGO_HOME".into(), |h| h.join("registry/index").display().to_string());
        fence.warn(format!(
            "cargo's default registry is not known yet: {at} holds no index of it (cargo fetches it on its first \
             build; run `cargo fetch` in the folder once, outside the sandbox)"
        ));
    }
    for cached in theirs {
        let place = Place { host: cached.host.clone(), port: None, scheme: "https".into() };
        fence.allow(&place, Why::tool("cargo", "default registry's index", cached.folder.display().to_string()));
        allow_cached(fence, cached, "default registry");
    }
}

/// `Cargo.lock`'s `source = "…"` URLs, each once.
pub(super) fn lock_sources(text: &str) -> Result<Vec<String>, String> {
    let lock: toml::Table = text.parse().map_err(|e: toml::de::Error| e.message().to_string())?;
    let mut urls: Vec<String> = lock
        .get("package")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("source")?.as_str().map(str::to_string))
        .collect();
    urls.sort();
    urls.dedup();
    Ok(urls)
}

/// `Cargo.toml`'s git dependencies and patches: every `git = "…"` under a table whose name has
/// `dependencies` in it, or under `[patch]`.
pub(super) fn manifest_git(text: &str) -> Result<Vec<String>, String> {
    let manifest: toml::Table = text.parse().map_err(|e: toml::de::Error| e.message().to_string())?;
    let mut urls = Vec::new();
    fn walk(value: &toml::Value, wanted: bool, urls: &mut Vec<String>) {
        let Some(table) = value.as_table() else { return };
        for (key, value) in table {
            match value {
                toml::Value::String(url) if wanted && key == "git" => urls.push(url.clone()),
                _ => walk(value, wanted || key.contains("dependencies") || key == "patch", urls),
            }
        }
    }
    walk(&toml::Value::Table(manifest), false, &mut urls);
    urls.sort();
    urls.dedup();
    Ok(urls)
}

#[cfg(test)]
mod tests;
