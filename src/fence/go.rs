//! Go's part of the fence: the module proxies of `GOPROXY`, the checksum database of `GOSUMDB`,
//! and the hosts Go fetches from directly (`GOPRIVATE`/`GONOPROXY` patterns, and every module's
//! host when `GOPROXY` starts with `direct`).
//!
//! Go is asked when installed (`go env -json GOPROXY GOSUMDB GOPRIVATE GONOPROXY GONOSUMDB`: the
//! session's variables over `go env -w`'s file over the toolchain's own `go.env`), in the root
//! folder and with `GOTOOLCHAIN=local`, so a `go.mod` cannot make it fetch and run another
//! toolchain. Without go, the same three levels are read: the variables, `$GOENV` (else
//! `~/.config/go/env`), then `$GOROOT/go.env` where `GOROOT` is set. The defaults live in the
//! toolchain; without it and with nothing set, a warning says they are not known.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::hosts::{self, Place};
use super::{read_text, shown_path, Env, Fence, Ran, Why};

/// The settings asked for, in `go env`'s names.
const SETTINGS: [&str; 5] = ["GOPROXY", "GOSUMDB", "GOPRIVATE", "GONOPROXY", "GONOSUMDB"];

pub(super) fn read(folders: &[PathBuf], project: &Path, env: &Env, fence: &mut Fence) {
    let (values, go_said) = match asked(env) {
        Ok(Some(values)) => (values.into_iter().map(|(k, v)| (k, (v, "go env".to_string()))).collect(), true),
        Ok(None) => (files(env, project, fence), false),
        Err(said) => {
            fence.warn(format!("go could not say its settings ({said}); read from its files instead"));
            (files(env, project, fence), false)
        }
    };
    let get = |key: &str| values.get(key).map(|(v, _)| v.as_str()).filter(|v| !v.is_empty());
    // Where a setting was read, for its reasons.
    let from = |key: &str| values.get(key).map_or("nowhere", |(_, from)| from.as_str()).to_string();
    let proxy = get("GOPROXY");
    let sumdb = get("GOSUMDB");
    if proxy.is_none() || sumdb.is_none() {
        let unknown: Vec<&str> =
            [("GOPROXY", proxy), ("GOSUMDB", sumdb)].iter().filter(|(_, v)| v.is_none()).map(|(k, _)| *k).collect();
        let unknown = unknown.join(" and ");
        fence.warn(if go_said {
            format!("go env names no {unknown}; nothing of it is in the fence")
        } else {
            format!("go did not answer and {unknown} is not set: Go's default is not known, so it is not in the fence")
        });
    }
    let plan = proxy.map(proxies).unwrap_or_default();
    for (url, place) in &plan.proxies {
        match place {
            Some(place) => {
                fence.allow(place, Why::tool("go", "module proxy", format!("GOPROXY ({})", from("GOPROXY"))))
            }
            None => fence.warn(format!("GOPROXY's entry {url} is not a URL with a host; it is left out")),
        }
    }
    if let Some(place) = sumdb.and_then(checksum_db) {
        fence.allow(&place, Why::tool("go", "checksum database", format!("GOSUMDB ({})", from("GOSUMDB"))));
    }
    // Modules Go fetches from their own hosts: GONOPROXY's (GOPRIVATE's where it is not set, as go
    // defaults it; `go env` reports it so), and all of them behind `direct`.
    let around = match get("GONOPROXY") {
        Some(patterns) if get("GOPRIVATE") != Some(patterns) => Some(("GONOPROXY", patterns)),
        _ => get("GOPRIVATE").map(|patterns| ("GOPRIVATE", patterns)),
    };
    if let Some((key, patterns)) = around {
        for pattern in patterns.split(',') {
            match pattern_host(pattern) {
                Some(Ok(place)) => fence.allow(&place, Why::tool("go", format!("direct fetches ({key})"), from(key))),
                Some(Err(())) => fence.warn(format!(
                    "{key}'s pattern {pattern} names no host the fence can hold (only `host` and `*.domain` can be); allow its hosts by hand"
                )),
                None => {}
            }
        }
    }
    if plan.direct_first {
        for folder in folders {
            let path = folder.join("go.mod");
            let Some(text) = read_text(&path, project, fence) else { continue };
            for host in module_hosts(&text) {
                if let Some(place) = hosts::web(&format!("https://{host}/")) {
                    fence.allow(&place, Why::tool("go", "direct fetches (GOPROXY=direct)", shown_path(&path, project)));
                }
            }
        }
    }
}

/// go's own answer, `Ok(None)` when go is not installed.
fn asked(env: &Env) -> Result<Option<BTreeMap<String, String>>, String> {
    let args: Vec<&str> = ["env", "-json"].into_iter().chain(SETTINGS).collect();
    match env.run_with(&env.system("/"), "go", &args, &[("GOTOOLCHAIN", "local")]) {
        Ran::Said(json) => {
            serde_json::from_str(&json).map(Some).map_err(|e| format!("go env's answer is not JSON: {e}"))
        }
        Ran::Missing => Ok(None),
        Ran::Failed(said) => Err(said),
        Ran::TimedOut => Err(format!("go env did not answer within {:?}", env.limit())),
    }
}

/// The settings without go: the session's variables over `go env -w`'s file over `$GOROOT/go.env`;
/// each with where it was read, for the reasons.
fn files(env: &Env, project: &Path, fence: &mut Fence) -> BTreeMap<String, (String, String)> {
    let mut values = BTreeMap::new();
    let user = match env.get("GOENV") {
        Some("off") => None,
        Some(file) => Some(PathBuf::from(file)),
        None => {
            let config =
                env.get("XDG_CONFIG_HOME").map(PathBuf::from).or_else(|| env.home().map(|h| h.join(".config")));
            config.map(|c| c.join("go/env"))
        }
    };
    let root = env.get("GOROOT").map(|r| Path::new(r).join("go.env"));
    // Lowest first: each level replaces what the one before set.
    for path in [root, user].into_iter().flatten() {
        let Some(text) = read_text(&path, project, fence) else { continue };
        let shown = shown_path(&path, project);
        values.extend(env_file(&text).into_iter().map(|(k, v)| (k, (v, shown.clone()))));
    }
    for key in SETTINGS {
        if let Some(value) = env.get(key) {
            values.insert(key.to_string(), (value.to_string(), "the environment".to_string()));
        }
    }
    values
}

/// A `go.env` or `go env -w` file: `KEY=VALUE` lines, `#` comments; only the settings wanted.
pub(super) fn env_file(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| {
            let (key, value) = line.trim().split_once('=')?;
            SETTINGS.contains(&key.trim()).then(|| (key.trim().to_string(), value.trim().to_string()))
        })
        .collect()
}

/// What a `GOPROXY` list comes to.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Proxies {
    /// Each proxy Go may ask, in order (without its credentials), and where it leads (`None`: no
    /// host in it).
    pub proxies: Vec<(String, Option<Place>)>,
    /// `direct` comes before any proxy: every module is fetched from its own host.
    pub direct_first: bool,
}

/// `GOPROXY`: proxies separated by `,` (on to the next after a 404 or 410) or `|` (after any
/// error), `direct` (the module's own host), `off` (nothing further is fetched).
pub(super) fn proxies(list: &str) -> Proxies {
    let mut plan = Proxies::default();
    for (at, entry) in list.split([',', '|']).map(str::trim).filter(|e| !e.is_empty()).enumerate() {
        match entry {
            "off" => break,
            "direct" => plan.direct_first |= at == 0,
            url => {
                // Go takes a proxy without a scheme for HTTPS.
                let full = if url.contains("://") { url.to_string() } else { format!("https://{url}") };
                plan.proxies.push((without_user(url), hosts::web(&full).filter(|p| p.scheme != "file")));
            }
        }
    }
    plan
}

/// A `GOPROXY` entry as a message may quote it: without a user or password, whether it has a
/// scheme or not (a text without one is beyond [`hosts::redact`]).
fn without_user(entry: &str) -> String {
    let (scheme, rest) = entry.split_once("://").unwrap_or(("", entry));
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    let rest = authority.rfind('@').map_or(rest, |at| &rest[at + 1..]);
    if scheme.is_empty() {
        rest.to_string()
    } else {
        format!("{scheme}://{rest}")
    }
}

/// `GOSUMDB`: `off`, `name`, `name+key`, or `name+key URL`; the database is at its URL, else at
/// `https://name`.
pub(super) fn checksum_db(value: &str) -> Option<Place> {
    let mut words = value.split_whitespace();
    let name = words.next()?;
    if name == "off" {
        return None;
    }
    match words.next() {
        Some(url) => hosts::web(if url.contains("://") { url.to_string() } else { format!("https://{url}") }.as_str()),
        None => hosts::web(&format!("https://{}/", name.split('+').next()?)),
    }
}

/// The host of a module path pattern (`git.corp.example/team/*`, `*.corp.example`): `None` for an
/// empty one or one whose first element has no dot and no wildcard (`none`, as `GONOPROXY=none`
/// is spelt: go fetches no module whose path starts so), `Err` for one whose host part is a
/// pattern no fence can hold.
pub(super) fn pattern_host(pattern: &str) -> Option<Result<Place, ()>> {
    let host = pattern.trim().split('/').next()?.trim();
    let wildcard = |s: &str| s.contains(['*', '?', '[', ']', '\\']);
    if host.is_empty() || (!host.contains('.') && !wildcard(host)) {
        return None;
    }
    let (wild, name) = match host.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, host),
    };
    if wildcard(name) || !name.contains('.') {
        return Some(Err(()));
    }
    let mut place = hosts::web(&format!("https://{name}/")).map(Ok).unwrap_or(Err(()));
    if let (true, Ok(place)) = (wild, &mut place) {
        place.host = format!("*.{}", place.host);
    }
    Some(place)
}

/// The hosts of the modules a `go.mod` requires (`require x v1` and `require ( … )`): a path's
/// first element, where it has a dot.
pub(super) fn module_hosts(text: &str) -> Vec<String> {
    let mut hosts = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        let line = line.split("//").next().unwrap_or_default().trim();
        let path = if in_block {
            if line == ")" {
                in_block = false;
                continue;
            }
            line.split_whitespace().next()
        } else if let Some(rest) = line.strip_prefix("require") {
            let rest = rest.trim();
            if rest == "(" {
                in_block = true;
                continue;
            }
            rest.split_whitespace().next()
        } else {
            None
        };
        let Some(host) = path.and_then(|p| p.trim_matches('"').split('/').next()) else { continue };
        if host.contains('.') && !hosts.iter().any(|h| h == host) {
            hosts.push(host.to_string());
        }
    }
    hosts
}

#[cfg(test)]
mod tests;
