//! The fence of whole projects the tests write: remotes through a real git, the bad input of the
//! issue, and the kit the ecosystems' own tests share.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::*;

/// What the ecosystems' tests share: files written, tools found or faked, an environment whose
/// home and root are the test's own.
pub(crate) mod kit {
    use std::path::{Path, PathBuf};

    use super::super::{Env, Found};

    pub(crate) fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// An executable shell script `name` in `dir`.
    pub(crate) fn script(dir: &Path, name: &str, body: &str) {
        use std::os::unix::fs::PermissionsExt as _;
        let path = write(dir, name, &format!("#!/bin/sh\n{body}\n"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// The session of a test: `HOME` is `home`, system files are looked for under `root`, tools
    /// on `path` only.
    pub(crate) fn env(home: &Path, root: &Path, path: Option<&Path>, vars: &[(&str, &str)]) -> Env {
        let mut all: Vec<(String, String)> = vec![("HOME".into(), home.display().to_string())];
        all.extend(path.map(|p| ("PATH".to_string(), p.display().to_string())));
        all.extend(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        Env::new(all).with_root(root)
    }

    /// Links the real `name` from this process's `PATH` into `bin`, to the program itself (so a
    /// script reached through a link still finds its files); `false` when there is none.
    pub(crate) fn link_real(bin: &Path, name: &str) -> bool {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let found = std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| p.is_file());
        let Some(real) = found.and_then(|p| p.canonicalize().ok()) else { return false };
        link(bin, name, &real);
        true
    }

    /// Links this machine's Python (as it names itself, past any shim) into `bin` as `python3`;
    /// `false` when there is none or it has no pip.
    pub(crate) fn link_python(bin: &Path) -> bool {
        let asked = std::process::Command::new("python3")
            .args(["-c", "import os, sys; print(os.path.realpath(sys.executable))"])
            .output();
        let Ok(out) = asked else { return false };
        let real = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if !out.status.success() || !real.is_file() {
            return false;
        }
        link(bin, "python3", &real);
        let pip = std::process::Command::new(bin.join("python3")).args(["-m", "pip", "--version"]).output();
        pip.is_ok_and(|out| out.status.success())
    }

    fn link(bin: &Path, name: &str, real: &Path) {
        std::fs::create_dir_all(bin).unwrap();
        std::os::unix::fs::symlink(real, bin.join(name)).unwrap();
    }

    /// Each host as `host[:port] — why`.
    pub(crate) fn shown(found: &Found) -> Vec<String> {
        found
            .hosts
            .iter()
            .map(|a| match a.port {
                Some(port) => format!("{}:{port} — {}", a.host, a.why.words()),
                None => format!("{} — {}", a.host, a.why.words()),
            })
            .collect()
    }
}

use kit::{env, script, shown, write};

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_reasons_in_words() {
    assert_eq!(Why::Remote { name: "origin".into(), push: false }.words(), "the remote origin");
    assert_eq!(Why::Remote { name: "origin".into(), push: true }.words(), "the remote origin (push)");
    assert_eq!(Why::Submodule { path: "vendor/lib".into() }.words(), "the submodule vendor/lib");
    assert_eq!(Why::tool("npm", "registry", ".npmrc").words(), "npm's registry, from .npmrc");
}

#[test]
fn remotes_with_insteadof_credentials_ssh_and_git_protocol() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["remote", "add", "origin", "https://me:ghp_T0KEN@Git.Example.com/org/repo.git"]);
    git(&repo, &["remote", "set-url", "--push", "origin", "ssh://git@push.example:2222/org/repo.git"]);
    git(&repo, &["remote", "add", "old", "git://legacy.example/repo.git"]);
    git(&repo, &["remote", "add", "local", "/srv/git/repo.git"]);
    git(&repo, &["remote", "add", "work", "work:team/repo.git"]);
    // The user's own rewrite, in the session's home: git applies it, not us.
    write(&home, ".gitconfig", "[url \"https://tok:en@corp.example/\"]\n\tinsteadOf = work:\n");
    let env = env(&home, tmp.path(), None, &[("GIT_CONFIG_NOSYSTEM", "1")]);
    let found = project(&repo, &env);
    assert_eq!(
        shown(&found),
        [
            "legacy.example:9418 — the remote old",
            "git.example.com — the remote origin",
            "push.example:2222 — the remote origin (push)",
            "corp.example — the remote work",
        ]
    );
    let all = format!("{found:?}");
    assert!(
        !all.contains("T0KEN") && !all.contains("tok:en") && !all.contains("me:ghp"),
        "no credential anywhere: {all}"
    );
    assert_eq!(found.warnings.len(), 2, "{:?}", found.warnings);
    assert!(found.warnings[0].contains("the remote old is reached over git://"), "{}", found.warnings[0]);
    assert!(found.warnings[1].contains("over ssh (push.example:2222)") && found.warnings[1].contains("port 2222"));
    assert!(found.warnings[1].contains("SSH_AUTH_SOCK"));
    // The same URL for fetch and push is one host with both reasons.
    git(&repo, &["remote", "set-url", "--push", "origin", "https://git.example.com/org/repo.git"]);
    let found = project(&repo, &env);
    let origin = found.hosts.iter().find(|a| a.host == "git.example.com").unwrap();
    assert_eq!(origin.also, [Why::Remote { name: "origin".into(), push: true }]);
}

#[test]
fn a_folder_that_is_no_repository_has_no_remotes_and_no_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let found = project(tmp.path(), &env(tmp.path(), tmp.path(), None, &[]));
    assert_eq!(found, Found::default());
}

#[test]
fn ecosystems_are_found_two_levels_down_and_not_in_vendored_trees() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "web/package.json", "{}");
    write(dir, "web/.npmrc", "registry=https://npm.web.example/\n");
    write(dir, "web/node_modules/dep/package.json", "{}");
    write(dir, "web/node_modules/dep/.npmrc", "registry=https://never.example/\n");
    write(dir, "services/api/go.mod", "module x\n");
    write(dir, ".hidden/Cargo.toml", "");
    write(dir, "a/b/c/Cargo.toml", "");
    let shows = Shows::of(dir);
    assert_eq!(shows.npm, [dir.join("web")]);
    assert_eq!(shows.go, [dir.join("services/api")]);
    assert!(shows.cargo.is_empty() && shows.python.is_empty() && !shows.cut_short);
    let found = project(dir, &env(dir, dir, None, &[("GOPROXY", "off"), ("GOSUMDB", "off")]));
    assert_eq!(shown(&found), ["npm.web.example — npm's registry, from web/.npmrc"]);
}

#[test]
fn an_ip_and_an_ipv6_registry_are_kept_as_hosts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "package.json", "{}");
    write(
        dir,
        ".npmrc",
        "registry=http://10.1.2.3:4873/\n@v6:registry=http://[::1]:8080/\n@full:registry=https://[2001:DB8:0:0::1]/\n",
    );
    let found = project(dir, &env(dir, dir, None, &[]));
    assert_eq!(
        shown(&found),
        [
            "10.1.2.3:4873 — npm's registry, from .npmrc",
            "2001:db8::1 — npm's registry for @full, from .npmrc",
            "::1:8080 — npm's registry for @v6, from .npmrc",
        ]
    );
    assert_eq!(found.hosts[2].host, "::1");
    assert_eq!(found.hosts[2].port, Some(8080));
}

#[test]
fn a_list_of_ten_thousand_hosts_is_read_fast_and_once_each() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // A lockfile of 10,000 packages from three hosts…
    let packages: Vec<String> = (0..10_000)
        .map(|i| {
            format!("\"node_modules/p{i}\": {{\"resolved\": \"https://r{}.example/p{i}/-/p{i}-1.0.0.tgz\"}}", i % 3)
        })
        .collect();
    write(dir, "package-lock.json", &format!("{{\"lockfileVersion\": 3, \"packages\": {{{}}}}}", packages.join(",")));
    // …and 10,000 private module patterns, each its own host, half of them twice.
    let private: Vec<String> = (0..15_000).map(|i| format!("git{}.corp.example/team", i % 10_000)).collect();
    write(dir, "go.mod", "module x\n");
    let private = private.join(",");
    let env = env(dir, dir, None, &[("GOPRIVATE", &private), ("GOPROXY", "off"), ("GOSUMDB", "off")]);
    let started = Instant::now();
    let found = project(dir, &env);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "took {took:?}");
    let npm: Vec<&Allowed> = found.hosts.iter().filter(|a| a.host.starts_with('r')).collect();
    assert_eq!(npm.len(), 3);
    let go = found.hosts.iter().filter(|a| a.host.starts_with("git")).count();
    assert_eq!(go, 10_000);
    // GONOPROXY defaults to GOPRIVATE in go itself, not here: the same hosts once, not twice.
    assert_eq!(found.hosts.len(), 10_003);
}

#[test]
fn a_tool_that_hangs_is_stopped_and_its_files_are_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("project");
    let bin = tmp.path().join("bin");
    script(&bin, "npm", "/bin/sleep 30");
    write(&dir, "package.json", "{}");
    write(&dir, ".npmrc", "registry=https://npm.corp.example/\n");
    let env = env(tmp.path(), tmp.path(), Some(&bin), &[]).with_limit(Duration::from_millis(300));
    let started = Instant::now();
    let found = project(&dir, &env);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(shown(&found), ["npm.corp.example — npm's registry, from .npmrc"]);
    assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
    assert!(found.warnings[0].contains("did not answer within"), "{}", found.warnings[0]);
}

#[test]
fn a_tool_planted_in_the_project_is_never_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("project");
    let bin = dir.join("node_modules/.bin");
    let marker = tmp.path().join("ran");
    script(&bin, "npm", &format!("touch {}; echo '{{\"registry\": \"https://evil.example/\"}}'", marker.display()));
    write(&dir, "package.json", "{}");
    write(&dir, ".npmrc", "registry=https://npm.corp.example/\n");
    let found = project(&dir, &env(tmp.path(), tmp.path(), Some(&bin), &[]));
    assert!(!marker.exists(), "the project's npm ran");
    assert_eq!(shown(&found), ["npm.corp.example — npm's registry, from .npmrc"]);
}

#[test]
fn credentials_in_a_warning_are_taken_out() {
    let mut fence = Fence::default();
    fence.warn("git said: fatal: https://me:s3cret@host.example/x not found");
    assert_eq!(fence.found.warnings, ["git said: fatal: https://host.example/x not found"]);
}
