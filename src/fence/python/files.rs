//! The Python tools' files read as text: pip's config (`pip config list`'s answer and `pip.conf`),
//! requirements files, `uv.toml` and `pyproject.toml` (`[tool.uv]`, `[[tool.poetry.source]]`),
//! `Pipfile`, and the lockfiles `uv.lock`, `poetry.lock`, `Pipfile.lock`. Pure: text in, URLs out.

use super::super::Env;

/// A URL a Python tool is configured to fetch from, and what it is to that tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Source {
    pub url: String,
    pub kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The index that takes the place of the tool's default.
    Index,
    /// An index beside it (`extra-index-url`, a named uv index, a poetry source).
    Extra,
    /// A page or folder of links (`find-links`).
    Links,
    /// A package's own URL (a direct reference, a git source, a locked download).
    Package,
}

impl Kind {
    pub fn words(self) -> &'static str {
        match self {
            Kind::Index => "index",
            Kind::Extra => "extra index",
            Kind::Links => "find-links",
            Kind::Package => "packages",
        }
    }
}

fn source(url: &str, kind: Kind) -> Source {
    Source { url: url.trim().to_string(), kind }
}

/// pip's settings that name where it fetches from, as `pip config list` and `pip.conf` spell them.
const PIP_KEYS: [(&str, Kind); 3] =
    [("index-url", Kind::Index), ("extra-index-url", Kind::Extra), ("find-links", Kind::Links)];

/// One of pip's settings: its section (`global`, `install`, `:env:` for a `PIP_*` variable), key,
/// value, and where it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PipSetting {
    pub section: String,
    pub key: String,
    pub value: String,
    pub origin: String,
}

fn setting(section: &str, key: &str, value: String, origin: &str) -> PipSetting {
    let key = key.trim().to_lowercase().replace('_', "-");
    PipSetting { section: section.trim().to_string(), key, value, origin: origin.to_string() }
}

/// `pip config list`'s lines (`global.index-url='https://…'`, `:env:.extra-index-url='…'`).
pub(crate) fn pip_config_list(text: &str) -> Vec<PipSetting> {
    text.lines()
        .filter_map(|line| {
            let (name, value) = line.split_once('=')?;
            let (section, key) = name.trim().rsplit_once('.')?;
            Some(setting(section, key, python_str(value.trim()), "pip config"))
        })
        .collect()
}

/// A Python `repr` of a string, unquoted.
fn python_str(text: &str) -> String {
    for quote in ['\'', '"'] {
        if let Some(inner) = text.strip_prefix(quote).and_then(|t| t.strip_suffix(quote)) {
            return inner.replace("\\'", "'").replace("\\\\", "\\");
        }
    }
    text.to_string()
}

/// A `pip.conf` read as Python's `configparser` reads it: `[section]`, `key = value` or
/// `key: value`, indented lines continuing a value, `#` and `;` comment lines; keys lowercase.
pub(crate) fn pip_conf(text: &str, origin: &str) -> Vec<PipSetting> {
    let mut entries: Vec<PipSetting> = Vec::new();
    let mut section = String::new();
    let mut continues = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continues = continues && trimmed.is_empty();
            continue;
        }
        if continues && line.starts_with([' ', '\t']) {
            if let Some(last) = entries.last_mut() {
                last.value.push('\n');
                last.value.push_str(trimmed);
            }
            continue;
        }
        continues = false;
        if let Some(name) = trimmed.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            section = name.trim().to_string();
            continue;
        }
        if let Some(at) = trimmed.find(['=', ':']) {
            entries.push(setting(&section, &trimmed[..at], trimmed[at + 1..].trim().to_string(), origin));
            continues = true;
        }
    }
    entries
}

/// What pip uses from its settings, merged in its order (a later one wins): per key, the
/// environment's (`:env:`), else `[install]`'s, else `[global]`'s. Each URL with where it was
/// set: the `PIP_*` variable, or the setting's origin.
pub(crate) fn pip_effective(settings: &[PipSetting]) -> Vec<(Source, String)> {
    let mut found = Vec::new();
    for (key, kind) in PIP_KEYS {
        let chosen = [":env:", "install", "global"]
            .iter()
            .find_map(|section| settings.iter().rev().find(|s| s.section == *section && s.key == key));
        let Some(chosen) = chosen else { continue };
        let from = if chosen.section == ":env:" {
            format!("PIP_{}", key.to_uppercase().replace('-', "_"))
        } else {
            chosen.origin.clone()
        };
        // Several URLs in one value: whitespace-separated, as pip splits them.
        found.extend(chosen.value.split_whitespace().map(|url| (source(url, kind), from.clone())));
    }
    found
}

/// What a requirements file names: its index options, find-links and direct URLs, and the
/// other requirements files it takes in (`-r`, `-c`). `${VAR}` comes from the session as pip
/// takes it.
pub(crate) fn requirements(text: &str, env: &Env) -> (Vec<Source>, Vec<String>) {
    let mut sources = Vec::new();
    let mut includes = Vec::new();
    let mut joined = String::new();
    for raw in text.lines() {
        // A trailing backslash continues the line.
        if let Some(part) = raw.strip_suffix('\\') {
            joined.push_str(part);
            continue;
        }
        joined.push_str(raw);
        let line = std::mem::take(&mut joined);
        let line = line.split(" #").next().unwrap_or_default().trim().to_string();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = expand_pip_vars(&line, env);
        let mut words = line.split_whitespace();
        while let Some(word) = words.next() {
            let (option, inline) = match word.split_once('=') {
                Some((o, v)) if o.starts_with('-') => (o, Some(v.to_string())),
                _ => (word, None),
            };
            // `Some(Some(kind))`: an option naming a URL; `Some(None)`: one naming another file.
            let takes = match option {
                "-i" | "--index-url" => Some(Some(Kind::Index)),
                "--extra-index-url" => Some(Some(Kind::Extra)),
                "-f" | "--find-links" => Some(Some(Kind::Links)),
                "-r" | "--requirement" | "-c" | "--constraint" => Some(None),
                _ => None,
            };
            match takes {
                Some(kind) => match (kind, inline.or_else(|| words.next().map(str::to_string))) {
                    (Some(kind), Some(url)) => sources.push(source(&url, kind)),
                    (None, Some(file)) => includes.push(file),
                    (_, None) => {}
                },
                // A direct reference: `name @ URL`, or a bare URL (`git+https://…#egg=x`).
                None if word.contains("://") => sources.push(source(word, Kind::Package)),
                None => {}
            }
        }
    }
    (sources, includes)
}

/// `${NAME}` from the session, for names pip expands (capitals, digits, `_`); others are left.
fn expand_pip_vars(line: &str, env: &Env) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start + 2..].find('}') else { break };
        let name = &rest[start + 2..start + 2 + len];
        out.push_str(&rest[..start]);
        if !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_') {
            out.push_str(env.get(name).unwrap_or_default());
        } else {
            out.push_str(&rest[start..start + 3 + len]);
        }
        rest = &rest[start + 3 + len..];
    }
    out.push_str(rest);
    out
}

/// uv's settings in a table: `uv.toml`'s top level or `pyproject.toml`'s `[tool.uv]`.
/// `index-url` and an index marked `default` take the place of uv's default index.
pub(crate) fn uv_settings(table: &toml::Table) -> Vec<Source> {
    let mut found = Vec::new();
    let text = |v: &toml::Value| v.as_str().map(str::to_string);
    let list = |key: &str| -> Vec<String> {
        match table.get(key) {
            Some(toml::Value::Array(items)) => items.iter().filter_map(text).collect(),
            Some(v) => text(v).into_iter().collect(),
            None => Vec::new(),
        }
    };
    found.extend(list("index-url").iter().map(|u| source(u, Kind::Index)));
    found.extend(list("extra-index-url").iter().map(|u| source(u, Kind::Extra)));
    found.extend(list("find-links").iter().map(|u| source(u, Kind::Links)));
    for index in table.get("index").and_then(toml::Value::as_array).into_iter().flatten() {
        let Some(url) = index.get("url").and_then(toml::Value::as_str) else { continue };
        let default = index.get("default").and_then(toml::Value::as_bool).unwrap_or(false);
        let links = index.get("format").and_then(toml::Value::as_str) == Some("flat");
        let kind = if default {
            Kind::Index
        } else if links {
            Kind::Links
        } else {
            Kind::Extra
        };
        found.push(source(url, kind));
    }
    // `[tool.uv.sources]`: `pkg = { git = "…" }` or `{ url = "…" }`.
    for spec in table.get("sources").and_then(toml::Value::as_table).into_iter().flat_map(|t| t.values()) {
        let specs = spec.as_array().cloned().unwrap_or_else(|| vec![spec.clone()]);
        for spec in &specs {
            for key in ["git", "url"] {
                if let Some(url) = spec.get(key).and_then(toml::Value::as_str) {
                    found.push(source(url, Kind::Package));
                }
            }
        }
    }
    found
}

/// poetry's `[[tool.poetry.source]]`s; a `primary` one (or, before poetry 1.8, `default = true`)
/// takes the place of poetry's default index.
pub(crate) fn poetry_sources(pyproject: &toml::Table) -> Vec<Source> {
    let sources = pyproject.get("tool").and_then(|t| t.get("poetry")).and_then(|p| p.get("source"));
    let mut found = Vec::new();
    for item in sources.and_then(toml::Value::as_array).into_iter().flatten() {
        let Some(url) = item.get("url").and_then(toml::Value::as_str) else { continue };
        let priority = item.get("priority").and_then(toml::Value::as_str).unwrap_or("");
        let default = item.get("default").and_then(toml::Value::as_bool).unwrap_or(false);
        let kind = if priority == "primary" || priority == "default" || default { Kind::Index } else { Kind::Extra };
        found.push(source(url, kind));
    }
    found
}

/// A `Pipfile`'s `[[source]]`s: pipenv's first source is its index, the rest beside it.
pub(crate) fn pipfile_sources(pipfile: &toml::Table) -> Vec<Source> {
    let sources = pipfile.get("source").and_then(toml::Value::as_array);
    sources
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("url").and_then(toml::Value::as_str))
        .enumerate()
        .map(|(at, url)| source(url, if at == 0 { Kind::Index } else { Kind::Extra }))
        .collect()
}

/// `Pipfile.lock`'s `_meta.sources`, and each locked package's own `file` or `git` URL.
pub(crate) fn pipfile_lock(text: &str) -> Result<Vec<Source>, String> {
    let lock: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let mut found: Vec<Source> = lock
        .pointer("/_meta/sources")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("url")?.as_str())
        .map(|url| source(url, Kind::Extra))
        .collect();
    for group in ["default", "develop"] {
        for package in lock.get(group).and_then(serde_json::Value::as_object).into_iter().flat_map(|m| m.values()) {
            for key in ["git", "file"] {
                if let Some(url) = package.get(key).and_then(serde_json::Value::as_str) {
                    found.push(source(url, Kind::Package));
                }
            }
        }
    }
    Ok(found)
}

/// `uv.lock`'s packages: each one's `source` (`registry`, `git`, `url`) and its `sdist` and
/// `wheels` URLs (an index's downloads are often on a host of their own).
pub(crate) fn uv_lock(text: &str) -> Result<Vec<Source>, String> {
    let lock: toml::Table = text.parse().map_err(|e: toml::de::Error| e.message().to_string())?;
    let mut found = Vec::new();
    for package in lock.get("package").and_then(toml::Value::as_array).into_iter().flatten() {
        if let Some(src) = package.get("source") {
            if let Some(url) = src.get("registry").and_then(toml::Value::as_str) {
                found.push(source(url, Kind::Extra));
            }
            for key in ["git", "url"] {
                if let Some(url) = src.get(key).and_then(toml::Value::as_str) {
                    found.push(source(url, Kind::Package));
                }
            }
        }
        let sdist = package.get("sdist").into_iter();
        let wheels = package.get("wheels").and_then(toml::Value::as_array).into_iter().flatten();
        for file in sdist.chain(wheels) {
            if let Some(url) = file.get("url").and_then(toml::Value::as_str) {
                found.push(source(url, Kind::Package));
            }
        }
    }
    Ok(found)
}

/// `poetry.lock`'s `[package.source]`s: a `legacy` index, a `git` or `url` package.
pub(crate) fn poetry_lock(text: &str) -> Result<Vec<Source>, String> {
    let lock: toml::Table = text.parse().map_err(|e: toml::de::Error| e.message().to_string())?;
    let mut found = Vec::new();
    for package in lock.get("package").and_then(toml::Value::as_array).into_iter().flatten() {
        let Some(src) = package.get("source") else { continue };
        let Some(url) = src.get("url").and_then(toml::Value::as_str) else { continue };
        let kind = match src.get("type").and_then(toml::Value::as_str) {
            Some("legacy") => Kind::Extra,
            Some("git") | Some("url") => Kind::Package,
            // `file` and `directory` are paths on this machine.
            _ => continue,
        };
        found.push(source(url, kind));
    }
    Ok(found)
}

/// The default index pip names in its own help (`pip install --help`: "Base URL of the Python
/// Package Index (default https://…)").
pub(crate) fn default_in_help(help: &str) -> Option<String> {
    let option = help.find("--index-url")?;
    let after = &help[option..];
    let start = after.find("(default")? + "(default".len();
    let url: String = after[start..].trim_start().chars().take_while(|c| !c.is_whitespace() && *c != ')').collect();
    (!url.is_empty()).then_some(url)
}
