//! Where a repository fetches and pushes: its remotes' URLs and its submodules', as git itself
//! would use them (`insteadOf` and `pushInsteadOf` applied by git, not by us). Read only: nothing
//! is contacted (`remote get-url` and `ls-remote --get-url` expand the URL and stop).

use std::ffi::OsStr;
use std::path::Path;
use std::time::Instant;

use super::output_until;

/// A remote and the URLs git uses for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    pub name: String,
    /// `remote.NAME.url`, each with `insteadOf` applied.
    pub fetch: Vec<String>,
    /// What `git push` uses: `pushurl`, or the URLs with `pushInsteadOf` (else `insteadOf`) applied.
    pub push: Vec<String>,
}

/// A submodule and the URL it is cloned from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submodule {
    /// Its path in the working tree (`.gitmodules`' `path`, else its name).
    pub path: String,
    /// The URL as git would fetch it: the repository's own `submodule.NAME.url` over
    /// `.gitmodules`', a relative one taken from the remote it is relative to, `insteadOf` applied.
    pub url: String,
}

/// What a repository says about where it fetches and pushes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Remotes {
    pub remotes: Vec<Remote>,
    pub submodules: Vec<Submodule>,
    /// What could not be read (a remote git failed on), one line each, credentials taken out by
    /// the caller.
    pub unread: Vec<String>,
}

/// The remotes and submodules of the repository `dir` is in, `None` when it is in none. `env`
/// is added to git's environment (the session's `HOME` and `GIT_CONFIG_*`, whose `insteadOf`
/// rules apply); every git call is given up at `until`.
pub fn remotes(dir: &Path, env: &[(&str, &OsStr)], until: Instant) -> Result<Option<Remotes>, String> {
    let git = |args: &[&str]| output_until(dir, args, env, None, until);
    let top = match git(&["rev-parse", "--show-toplevel"]) {
        Ok(top) => top.trim_end_matches('\n').to_string(),
        Err(said) if said.contains("not a git repository") => return Ok(None),
        // A bare repository has remotes and no working tree.
        Err(said) if said.contains("must be run in a work tree") => String::new(),
        Err(said) => return Err(said),
    };
    let mut found = Remotes::default();
    for name in git(&["remote"])?.lines().map(str::trim).filter(|n| !n.is_empty()) {
        let fetch = git(&["remote", "get-url", "--all", name]);
        let push = git(&["remote", "get-url", "--push", "--all", name]);
        match (fetch, push) {
            (Ok(fetch), Ok(push)) => {
                found.remotes.push(Remote { name: name.to_string(), fetch: lines(&fetch), push: lines(&push) })
            }
            (Err(said), _) | (_, Err(said)) => found.unread.push(format!("the remote {name}: {said}")),
        }
    }
    if !top.is_empty() && Path::new(&top).join(".gitmodules").is_file() {
        let top = Path::new(&top);
        let in_top = |args: &[&str]| output_until(top, args, env, None, until);
        let declared =
            config_entries(in_top(&["config", "--file", ".gitmodules", "-z", "--get-regexp", r"^submodule\."]));
        let local = config_entries(in_top(&["config", "--local", "-z", "--get-regexp", r"^submodule\..*\.url$"]));
        let base = base_url(
            &found.remotes,
            &in_top(&["rev-parse", "--abbrev-ref", "HEAD"]).unwrap_or_default(),
            top,
            env,
            until,
        );
        for (name, declared_url, path) in submodule_entries(&declared) {
            let own = local.iter().find(|(k, _)| *k == format!("submodule.{name}.url")).map(|(_, v)| v.clone());
            let Some(url) = own.or(declared_url) else { continue };
            if url.starts_with('-') {
                // Git refuses these (CVE-2018-17456): an option, not a URL.
                found.unread.push(format!("the submodule {path}: its URL starts with '-', which git refuses"));
                continue;
            }
            let url = if url.starts_with("./") || url.starts_with("../") {
                match &base {
                    Some(base) => relative(base, &url),
                    None => url,
                }
            } else {
                match in_top(&["ls-remote", "--get-url", &url]) {
                    Ok(expanded) => expanded.trim_end_matches('\n').to_string(),
                    Err(said) => {
                        found.unread.push(format!("the submodule {path}: {said}"));
                        continue;
                    }
                }
            };
            found.submodules.push(Submodule { path, url });
        }
    }
    Ok(Some(found))
}

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect()
}

/// `git config -z --get-regexp`'s answer as (key, value); no setting is no entries.
fn config_entries(answer: Result<String, String>) -> Vec<(String, String)> {
    answer
        .unwrap_or_default()
        .split('\0')
        .filter_map(|entry| {
            let (key, value) = entry.split_once('\n').unwrap_or((entry, ""));
            (!key.is_empty()).then(|| (key.to_string(), value.to_string()))
        })
        .collect()
}

/// Each submodule of `.gitmodules`' entries: its name, its URL there, and its path.
fn submodule_entries(entries: &[(String, String)]) -> Vec<(String, Option<String>, String)> {
    let mut names: Vec<&str> = Vec::new();
    for (key, _) in entries {
        if let Some(name) = key.strip_prefix("submodule.").and_then(|k| k.rsplit_once('.')).map(|(n, _)| n) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    let get = |name: &str, what: &str| {
        let key = format!("submodule.{name}.{what}");
        entries.iter().rev().find(|(k, _)| *k == key).map(|(_, v)| v.clone())
    };
    names
        .into_iter()
        .map(|name| (name.to_string(), get(name, "url"), get(name, "path").unwrap_or_else(|| name.to_string())))
        .collect()
}

/// The URL relative submodule URLs are taken from, as git takes it: the remote of the branch
/// checked out, else `origin`, else the folder itself.
fn base_url(remotes: &[Remote], branch: &str, top: &Path, env: &[(&str, &OsStr)], until: Instant) -> Option<String> {
    let key = format!("branch.{}.remote", branch.trim());
    let of_branch = output_until(top, &["config", "--get", &key], env, None, until).ok().map(|r| r.trim().to_string());
    let name = of_branch.unwrap_or_else(|| "origin".to_string());
    match remotes.iter().find(|r| r.name == name) {
        Some(remote) => remote.fetch.first().cloned(),
        None => Some(top.display().to_string()),
    }
}

/// `../other.git` against `https://host/org/repo.git`: `https://host/org/other.git`.
fn relative(base: &str, url: &str) -> String {
    let mut base = base.trim_end_matches('/').to_string();
    let mut rest = url;
    loop {
        if let Some(r) = rest.strip_prefix("./") {
            rest = r;
        } else if let Some(r) = rest.strip_prefix("../") {
            rest = r;
            // One component up: to the last `/` past the host, or to an scp-like `host:`.
            let host_ends = base.find("://").map(|s| s + 3).map(|s| base[s..].find('/').map_or(base.len(), |p| s + p));
            match host_ends {
                Some(host_ends) => {
                    if let Some(at) = base.rfind('/').filter(|&at| at >= host_ends) {
                        base.truncate(at);
                    }
                }
                None => match base.rfind(['/', ':']) {
                    Some(at) if base.as_bytes()[at] == b':' => base.truncate(at + 1),
                    Some(at) => base.truncate(at),
                    None => {}
                },
            }
        } else {
            break;
        }
    }
    let joiner = if base.ends_with(':') { "" } else { "/" };
    format!("{base}{joiner}{rest}")
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"])
            .args(["-c", "protocol.file.allow=always"])
            .args(args)
            .current_dir(dir)
            .env("HOME", dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    fn until() -> Instant {
        Instant::now() + std::time::Duration::from_secs(20)
    }

    #[test]
    fn remotes_come_with_their_rewrites_applied_by_git() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q"]);
        git(&repo, &["remote", "add", "origin", "gh:org/repo.git"]);
        git(&repo, &["config", "url.https://git.example/.insteadOf", "gh:"]);
        git(&repo, &["config", "url.ssh://git@push.example:2222/.pushInsteadOf", "gh:"]);
        git(&repo, &["remote", "add", "mirror", "https://mirror.example/repo.git"]);
        git(&repo, &["remote", "set-url", "--push", "mirror", "git@other.example:repo.git"]);
        let home = [("HOME", tmp.path().as_os_str()), ("GIT_CONFIG_NOSYSTEM", OsStr::new("1"))];
        let found = remotes(&repo, &home, until()).unwrap().unwrap();
        assert_eq!(
            found.remotes,
            vec![
                Remote {
                    name: "mirror".into(),
                    fetch: vec!["https://mirror.example/repo.git".into()],
                    push: vec!["git@other.example:repo.git".into()],
                },
                Remote {
                    name: "origin".into(),
                    fetch: vec!["https://git.example/org/repo.git".into()],
                    push: vec!["ssh://git@push.example:2222/org/repo.git".into()],
                },
            ]
        );
        assert!(found.unread.is_empty());
        assert_eq!(remotes(tmp.path(), &home, until()), Ok(None), "not a repository");
    }

    #[test]
    fn submodules_from_gitmodules_the_local_config_and_relative_urls() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q"]);
        git(&repo, &["remote", "add", "origin", "https://git.example/org/repo.git"]);
        std::fs::write(
            repo.join(".gitmodules"),
            "[submodule \"lib\"]\n\tpath = vendor/lib\n\turl = ../lib.git\n\
             [submodule \"tools\"]\n\tpath = tools\n\turl = corp:tools.git\n\
             [submodule \"over\"]\n\tpath = over\n\turl = https://declared.example/over.git\n\
             [submodule \"evil\"]\n\tpath = evil\n\turl = --upload-pack=touch\n",
        )
        .unwrap();
        git(&repo, &["config", "url.https://corp.example/.insteadOf", "corp:"]);
        git(&repo, &["config", "submodule.over.url", "https://local.example/over.git"]);
        let home = [("HOME", tmp.path().as_os_str())];
        let found = remotes(&repo, &home, until()).unwrap().unwrap();
        let urls: Vec<(&str, &str)> = found.submodules.iter().map(|s| (s.path.as_str(), s.url.as_str())).collect();
        assert_eq!(
            urls,
            [
                ("vendor/lib", "https://git.example/org/lib.git"),
                ("tools", "https://corp.example/tools.git"),
                ("over", "https://local.example/over.git"),
            ]
        );
        assert_eq!(found.unread.len(), 1, "{:?}", found.unread);
        assert!(found.unread[0].contains("evil"));
    }

    #[test]
    fn relative_urls_climb_as_git_climbs() {
        assert_eq!(relative("https://h.example/org/repo.git", "../x.git"), "https://h.example/org/x.git");
        assert_eq!(relative("https://h.example/org/repo.git/", "./x"), "https://h.example/org/repo.git/x");
        assert_eq!(relative("git@h.example:org/repo", "../x"), "git@h.example:org/x");
        assert_eq!(relative("git@h.example:repo", "../x"), "git@h.example:x");
        assert_eq!(relative("https://h.example/repo", "../../../x"), "https://h.example/x");
    }
}
