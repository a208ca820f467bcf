//! Python's part of the fence: the indexes pip, uv, poetry and pipenv are configured to use for
//! the folder, the hosts its requirements and lockfiles name, and the default index when nothing
//! takes its place.
//!
//! In order: uv's variables (`UV_DEFAULT_INDEX`, `UV_INDEX_URL`, `UV_INDEX`,
//! `UV_EXTRA_INDEX_URL`, `UV_FIND_LINKS`); pip's settings, asked from pip (`pip config list`: its
//! `pip.conf` files at every level and `PIP_*`) or, without pip, read from the same files in
//! pip's order (`/etc/xdg/pip/pip.conf`, `/etc/pip.conf`, `~/.pip/pip.conf` and
//! `~/.config/pip/pip.conf` unless `$PIP_CONFIG_FILE` names a file that exists,
//! `$VIRTUAL_ENV/pip.conf`, `$PIP_CONFIG_FILE`) and `PIP_*`; the
//! requirements files (`--index-url`, `--extra-index-url`, `--find-links`, direct URLs, `-r`
//! includes); uv's files (`UV_CONFIG_FILE`, else the nearest `uv.toml` or `pyproject.toml` with
//! `[tool.uv]` up from the folder, the user's and the system's `uv.toml`); poetry's sources;
//! the `Pipfile`; the lockfiles (`uv.lock`, `poetry.lock`, `Pipfile.lock`).
//!
//! The default index (and the host its files are served from) is pip's: pip names it in its own
//! help (`pip install --help`) and in its model of it (`PyPI.file_storage_domain`), asked through
//! the same Python. uv and poetry use the same default. Without pip, a warning says it is not
//! known, unless a lockfile names the hosts.

mod files;

use std::path::{Path, PathBuf};

use files::{Kind, Source};

use super::hosts;
use super::{read_text, shown_path, Env, Fence, Ran, Why};

/// Where a source came from, and whose it is.
struct Named {
    source: Source,
    tool: &'static str,
    from: String,
}

pub(super) fn read(folder: &Path, project: &Path, env: &Env, fence: &mut Fence) {
    let pyproject = toml_file(&folder.join("pyproject.toml"), project, fence);
    let has = |name: &str| folder.join(name).is_file();
    let tool_table = |name: &str| pyproject.as_ref().and_then(|p| p.get("tool")).and_then(|t| t.get(name)).is_some();
    let uses_uv = has("uv.lock") || has("uv.toml") || tool_table("uv");
    let uses_poetry = has("poetry.lock") || tool_table("poetry");
    let uses_pipenv = has("Pipfile") || has("Pipfile.lock");
    let uses_pip = !uses_uv && !uses_poetry && !uses_pipenv
        || has("setup.py")
        || has("setup.cfg")
        || requirements_files(folder).next().is_some();

    let mut named: Vec<Named> = Vec::new();
    let mut add = |sources: Vec<Source>, tool: &'static str, from: &str| {
        named.extend(sources.into_iter().map(|source| Named { source, tool, from: from.to_string() }));
    };
    add(uv_env(env), "uv", "the environment (UV_*)");
    let pip = Pip::find(env);
    let asked = pip.as_ref().map(|pip| pip.run(env, &["config", "list"]));
    let settings = match asked {
        Some(Ran::Said(text)) => files::pip_config_list(&text),
        asked => {
            let why = match asked {
                Some(Ran::Failed(why)) => Some(why),
                Some(Ran::TimedOut) => Some(format!("it did not answer within {:?}", env.limit())),
                _ => None,
            };
            if let Some(why) = why {
                fence.warn(format!("pip could not say its settings ({why}); read from pip.conf instead"));
            }
            pip_files(env, project, fence)
        }
    };
    for (source, from) in files::pip_effective(&settings) {
        add(vec![source], "pip", &from);
    }
    let mut seen = Vec::new();
    for path in requirements_files(folder).collect::<Vec<_>>() {
        read_requirements(&path, project, env, fence, &mut seen, &mut add, 0);
    }
    for (path, table) in uv_files(folder, env, project, fence) {
        add(files::uv_settings(&table), "uv", &shown_path(&path, project));
    }
    if let Some(pyproject) = &pyproject {
        add(files::poetry_sources(pyproject), "poetry", &shown_path(&folder.join("pyproject.toml"), project));
    }
    if let Some(pipfile) = toml_file(&folder.join("Pipfile"), project, fence) {
        add(files::pipfile_sources(&pipfile), "pipenv", &shown_path(&folder.join("Pipfile"), project));
    }
    let mut locked = false;
    for (name, tool, parse) in LOCKFILES {
        let path = folder.join(name);
        let Some(text) = read_text(&path, project, fence) else { continue };
        match parse(&text) {
            Ok(sources) => {
                locked |= !sources.is_empty();
                add(sources, tool, &shown_path(&path, project));
            }
            Err(why) => fence
                .warn(format!("{} cannot be read ({why}); its hosts are not in the fence", shown_path(&path, project))),
        }
    }

    // Whether some tool the folder shows still goes to its default index.
    let replaced = |tool: &str| named.iter().any(|n| n.tool == tool && n.source.kind == Kind::Index);
    let pip_replaced = named.iter().any(|n| matches!(n.tool, "pip" | "requirements") && n.source.kind == Kind::Index);
    let needs_default =
        (uses_pip && !pip_replaced) || (uses_uv && !replaced("uv")) || (uses_poetry && !replaced("poetry"));

    let mut urls = std::collections::BTreeSet::new();
    for Named { source, tool, from } in &named {
        let tool: &str = if *tool == "requirements" { "pip" } else { tool };
        match hosts::web(&source.url) {
            Some(place) => {
                if urls.insert((place.clone(), tool, from.clone())) {
                    fence.allow(&place, Why::tool(tool, source.kind.words(), from.clone()));
                }
            }
            // A path on this machine (`find-links = /opt/wheels`, `file://…`): nothing to allow.
            None if !source.url.contains("://") || source.url.starts_with("file:") => {}
            None => fence
                .warn(format!("{tool}'s {} from {from} is not a URL with a host; it is left out", source.kind.words())),
        }
    }
    if needs_default {
        default_index(pip.as_ref(), env, locked, folder, project, fence);
    }
}

type Parse = fn(&str) -> Result<Vec<Source>, String>;

const LOCKFILES: [(&str, &str, Parse); 3] = [
    ("uv.lock", "uv", files::uv_lock),
    ("poetry.lock", "poetry", files::poetry_lock),
    ("Pipfile.lock", "pipenv", files::pipfile_lock),
];

/// How pip is run: `python3 -m pip` (so its Python can be asked about its default index too),
/// else a `pip3` or `pip` program. Always in the root folder, never the project's: Python puts
/// the current folder first on its import path, and the project's files must not run as pip.
enum Pip {
    Module,
    Program(&'static str),
}

impl Pip {
    fn find(env: &Env) -> Option<Pip> {
        let root = env.system("/");
        if env.which("python3").is_some()
            && matches!(env.run(&root, "python3", &["-m", "pip", "--version"]), Ran::Said(_))
        {
            return Some(Pip::Module);
        }
        ["pip3", "pip"].into_iter().find(|p| env.which(p).is_some()).map(Pip::Program)
    }

    fn run(&self, env: &Env, args: &[&str]) -> Ran {
        let root = env.system("/");
        match self {
            Pip::Module => env.run(&root, "python3", &[&["-m", "pip"], args].concat()),
            Pip::Program(program) => env.run(&root, program, args),
        }
    }
}

/// The default index, as pip names it, and the host its files come from.
fn default_index(pip: Option<&Pip>, env: &Env, locked: bool, folder: &Path, project: &Path, fence: &mut Fence) {
    let Some(pip) = pip else {
        if !locked {
            fence.warn(format!(
                "pip is not installed and nothing names a Python index for {}: the default index is not known, \
                 so it is not in the fence",
                shown_path(folder, project)
            ));
        }
        return;
    };
    let help = match pip.run(env, &["install", "--help"]) {
        Ran::Said(help) => files::default_in_help(&help),
        _ => None,
    };
    match help.as_deref().and_then(hosts::web) {
        Some(place) => fence.allow(&place, Why::tool("pip", "default index", "pip install --help")),
        None => fence.warn("pip did not name its default index (pip install --help); it is not in the fence"),
    }
    // The index serves its files from another host, which only pip's model of it names.
    let storage = match pip {
        Pip::Module => env.run(&env.system("/"), "python3", &["-c", STORAGE]),
        Pip::Program(_) => Ran::Missing,
    };
    match storage {
        Ran::Said(host) if hosts::web(&format!("https://{}/", host.trim())).is_some() => {
            let place = hosts::web(&format!("https://{}/", host.trim())).expect("checked");
            fence.allow(&place, Why::tool("pip", "default index's downloads", "pip's PyPI model"));
        }
        _ if locked => {}
        _ => fence.warn(
            "the host the default Python index serves its files from is not known (pip's own model of it could not \
             be read): installs may fail until it is allowed",
        ),
    }
}

/// pip's own model of its default index: the host its files are served from.
const STORAGE: &str = "from pip._internal.models.index import PyPI; print(PyPI.file_storage_domain)";

/// uv's variables: the default index, named and extra indexes, find-links.
fn uv_env(env: &Env) -> Vec<Source> {
    let mut found = Vec::new();
    let mut add = |name: &str, kind: Kind| {
        for item in env.get(name).unwrap_or_default().split_whitespace() {
            // `UV_INDEX` entries may be `name=url`.
            let url = item.split_once('=').filter(|(n, _)| !n.contains('/')).map_or(item, |(_, u)| u);
            found.push(Source { url: url.to_string(), kind });
        }
    };
    add("UV_DEFAULT_INDEX", Kind::Index);
    add("UV_INDEX_URL", Kind::Index);
    add("UV_INDEX", Kind::Extra);
    add("UV_EXTRA_INDEX_URL", Kind::Extra);
    add("UV_FIND_LINKS", Kind::Links);
    found
}

/// pip's settings without pip: its files in its order, then `PIP_*`.
fn pip_files(env: &Env, project: &Path, fence: &mut Fence) -> Vec<files::PipSetting> {
    let mut settings = Vec::new();
    let config_file = env.get("PIP_CONFIG_FILE");
    // pip's own rule: a config file of /dev/null means no files at all.
    if config_file != Some("/dev/null") {
        let xdg_dirs = env.get("XDG_CONFIG_DIRS").unwrap_or("/etc/xdg");
        let mut paths: Vec<PathBuf> =
            xdg_dirs.split(':').filter(|d| d.starts_with('/')).map(|d| env.system(d).join("pip/pip.conf")).collect();
        paths.push(env.system("/etc/pip.conf"));
        // pip reads no user file when the session names a config file that exists.
        let users = !config_file.is_some_and(|f| Path::new(f).exists());
        if let Some(home) = env.home().filter(|_| users) {
            paths.push(home.join(".pip/pip.conf"));
            let config = env.get("XDG_CONFIG_HOME").map_or_else(|| home.join(".config"), PathBuf::from);
            paths.push(config.join("pip/pip.conf"));
        }
        paths.extend(env.get("VIRTUAL_ENV").map(|v| Path::new(v).join("pip.conf")));
        paths.extend(config_file.map(PathBuf::from));
        for path in paths {
            let Some(text) = read_text(&path, project, fence) else { continue };
            settings.extend(files::pip_conf(&text, &shown_path(&path, project)));
        }
    }
    for key in ["index-url", "extra-index-url", "find-links"] {
        let name = format!("PIP_{}", key.to_uppercase().replace('-', "_"));
        if let Some(value) = env.get(&name) {
            settings.push(files::PipSetting {
                section: ":env:".into(),
                key: key.into(),
                value: value.into(),
                origin: name,
            });
        }
    }
    settings
}

/// The folder's `requirements*.txt`, in name order.
fn requirements_files(folder: &Path) -> impl Iterator<Item = PathBuf> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(folder)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            name.starts_with("requirements") && name.ends_with(".txt") && p.is_file()
        })
        .collect();
    names.sort();
    names.into_iter()
}

/// The deepest a requirements file's `-r` includes are followed.
const MOST_INCLUDES: usize = 5;

fn read_requirements(
    path: &Path,
    project: &Path,
    env: &Env,
    fence: &mut Fence,
    seen: &mut Vec<PathBuf>,
    add: &mut impl FnMut(Vec<Source>, &'static str, &str),
    depth: usize,
) {
    let real = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    if seen.contains(&real) || depth > MOST_INCLUDES {
        return;
    }
    seen.push(real);
    let Some(text) = read_text(path, project, fence) else { return };
    let (sources, includes) = files::requirements(&text, env);
    add(sources, "requirements", &shown_path(path, project));
    let base = path.parent().unwrap_or(project);
    for include in includes {
        // An include by URL is fetched by pip from its host; its own lines are not read here.
        if hosts::web(&include).is_some() {
            add(vec![Source { url: include, kind: Kind::Package }], "requirements", &shown_path(path, project));
            continue;
        }
        read_requirements(&base.join(include), project, env, fence, seen, add, depth + 1);
    }
}

/// uv's configuration files, as uv finds them: `UV_CONFIG_FILE` alone if set; else the nearest
/// `uv.toml` (or `pyproject.toml` with `[tool.uv]`) up from the folder, then the user's and the
/// system's `uv.toml`. Each as its settings table.
fn uv_files(folder: &Path, env: &Env, project: &Path, fence: &mut Fence) -> Vec<(PathBuf, toml::Table)> {
    if env.get("UV_NO_CONFIG").is_some() {
        return Vec::new();
    }
    if let Some(file) = env.get("UV_CONFIG_FILE") {
        let path = PathBuf::from(file);
        return toml_file(&path, project, fence).map(|t| (path, t)).into_iter().collect();
    }
    let mut found = Vec::new();
    for at in folder.ancestors() {
        if let Some(table) = toml_file(&at.join("uv.toml"), project, fence) {
            found.push((at.join("uv.toml"), table));
            break;
        }
        let pyproject = at.join("pyproject.toml");
        let uv = toml_file(&pyproject, project, fence).and_then(|p| p.get("tool")?.get("uv")?.as_table().cloned());
        if let Some(uv) = uv {
            found.push((pyproject, uv));
            break;
        }
    }
    let home = env.home();
    let user = env.get("XDG_CONFIG_HOME").map(PathBuf::from).or_else(|| home.map(|h| h.join(".config")));
    let mut others: Vec<PathBuf> = user.into_iter().map(|c| c.join("uv/uv.toml")).collect();
    let xdg_dirs = env.get("XDG_CONFIG_DIRS").unwrap_or("/etc/xdg");
    others.extend(xdg_dirs.split(':').filter(|d| d.starts_with('/')).map(|d| env.system(d).join("uv/uv.toml")));
    others.push(env.system("/etc/uv/uv.toml"));
    for path in others {
        if let Some(table) = toml_file(&path, project, fence) {
            found.push((path, table));
        }
    }
    found
}

/// A TOML file's table; one that is not TOML is a warning.
fn toml_file(path: &Path, project: &Path, fence: &mut Fence) -> Option<toml::Table> {
    let text = read_text(path, project, fence)?;
    match text.parse::<toml::Table>() {
        Ok(table) => Some(table),
        Err(e) => {
            fence.warn(format!(
                "{} is not TOML ({}); the indexes it names are not in the fence",
                shown_path(path, project),
                e.message()
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests;
