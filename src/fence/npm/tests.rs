//! npm's reader on files, variables and answers the tests write: the `.npmrc` layers and
//! `npm_config_*`, the lockfiles, `npm config list`'s text, a fake npm and the real one.

use std::path::Path;
use std::process::Command;

use super::*;
use crate::fence::tests::kit::{env, link_real, script, shown, write};
use crate::fence::{project, Found};

/// A fake npm in `bin` that answers `config list --json` with `json` and `config list` with
/// `text`, asked as Nightshift asks (no log, no update check, a cache of its own), and fails on
/// anything else.
fn fake_npm(bin: &Path, json: &str, text: &str) {
    write(bin, "answers/json", json);
    write(bin, "answers/text", text);
    let answers = bin.join("answers");
    script(
        bin,
        "npm",
        &format!(
            "case \"$*\" in\n  'config list --json --logs-max=0 --update-notifier=false --cache='/*) /bin/cat '{0}/json' ;;\n  \
             'config list --logs-max=0 --update-notifier=false --cache='/*) /bin/cat '{0}/text' ;;\n  \
             *) echo \"unexpected: npm $*\" >&2; exit 2 ;;\nesac",
            answers.display()
        ),
    );
}

fn no_credentials(found: &Found, secrets: &[&str]) {
    let all = format!("{found:?}");
    for secret in secrets {
        assert!(!all.contains(secret), "{secret} is in {all}");
    }
}

#[test]
fn without_npm_the_layers_win_key_by_key() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir) = (tmp.path().join("home"), tmp.path().join("project"));
    write(
        &home,
        ".npmrc",
        "registry=https://npm.user.example/\n@acme:registry=https://acme.user.example/\n\
         @user:registry=https://user-only.example/\n",
    );
    write(&dir, "package.json", "{}");
    write(&dir, ".npmrc", "registry=https://npm.project.example/\n@acme:registry=https://acme.project.example/\n");
    let vars = [("NPM_CONFIG_@acme:registry", "https://acme.env.example/"), ("npm_config_fund", "false")];
    let found = project(&dir, &env(&home, tmp.path(), None, &vars));
    assert_eq!(
        shown(&found),
        [
            "npm.project.example — npm's registry, from .npmrc".to_string(),
            "acme.env.example — npm's registry for @acme, from the environment (NPM_CONFIG_@acme:registry)".into(),
            format!("user-only.example — npm's registry for @user, from {}", home.join(".npmrc").display()),
        ]
    );
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    let all = format!("{found:?}");
    for overridden in ["npm.user.example", "acme.user.example", "acme.project.example"] {
        assert!(!all.contains(overridden), "{overridden} was replaced by a later layer: {all}");
    }
}

#[test]
fn the_variables_in_either_case_and_the_files_they_point_to() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir) = (tmp.path().join("home"), tmp.path().join("project"));
    write(&home, ".npmrc", "@home:registry=https://home.example/\n");
    let user = write(tmp.path(), "elsewhere/npmrc", "@user:registry=https://user.elsewhere.example/\n");
    let global =
        write(tmp.path(), "global/npmrc", "registry=https://global.example/\n@g:registry=https://g.example/\n");
    write(&dir, "package.json", "{}");
    write(&dir, "web/.npmrc", "registry=https://not-the-project-root.example/\n");
    let vars = [
        ("npm_config_userconfig", user.to_str().unwrap()),
        ("NPM_CONFIG_GLOBALCONFIG", global.to_str().unwrap()),
        ("NPM_CONFIG_REGISTRY", "https://first.example/"),
        ("npm_config_registry", "https://second.example/"),
    ];
    let found = project(&dir, &env(&home, tmp.path(), None, &vars));
    assert_eq!(
        shown(&found),
        [
            "second.example — npm's registry, from the environment (npm_config_registry)".to_string(),
            format!("g.example — npm's registry for @g, from {}", global.display()),
            format!("user.elsewhere.example — npm's registry for @user, from {}", user.display()),
        ],
        "the later variable wins; the user file named replaces ~/.npmrc"
    );
    let all = format!("{found:?}");
    for absent in ["first.example", "global.example", "home.example", "not-the-project-root"] {
        assert!(!all.contains(absent), "{absent}: {all}");
    }
}

#[test]
fn an_npmrc_read_as_npm_reads_it() {
    let env = env(Path::new("/nonexistent"), Path::new("/nonexistent"), None, &[("CORP", "npm.corp.example")]);
    let text = "\
; a comment
# another
registry = \"https://${CORP}/\"
@acme:registry=https://acme.example/ ; trailing comment
//npm.corp.example/:_authToken=${UNSET_TOKEN}
@bad:registry=not a url
always-auth
=nothing
[section]
registry=https://in-a-section.example/
";
    let npmrc = parse_npmrc(text, &env);
    assert_eq!(
        npmrc.entries,
        [
            (3, "registry".to_string(), "https://npm.corp.example/".to_string()),
            (4, "@acme:registry".into(), "https://acme.example/".into()),
        ]
    );
    assert_eq!(
        npmrc.problems,
        [
            (5, "`${UNSET_TOKEN}` is not set in the session".to_string()),
            (6, "`@bad:registry` is not a URL with a host".into()),
            (7, "no `=` in it".into()),
            (8, "no name before `=`".into()),
        ]
    );
    // Through the reader each problem is one warning, with the file and line.
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "package.json", "{}");
    write(tmp.path(), ".npmrc", text);
    let found = project(tmp.path(), &env.clone().with_root(tmp.path()));
    assert_eq!(
        shown(&found),
        ["npm.corp.example — npm's registry, from .npmrc", "acme.example — npm's registry for @acme, from .npmrc"]
    );
    assert_eq!(found.warnings.len(), 4, "{:?}", found.warnings);
    assert!(found.warnings[1].starts_with(".npmrc: line 6: `@bad:registry` is not a URL"), "{}", found.warnings[1]);
}

#[test]
fn lockfiles_give_the_hosts_they_resolve_from() {
    let hosts = |name: &str, text: &str| -> Vec<String> {
        lockfile_places(name, text).unwrap().into_iter().map(|p| p.shown()).collect()
    };
    let v3 = r#"{"lockfileVersion": 3, "packages": {
        "": {"name": "app"},
        "node_modules/a": {"resolved": "https://npm.corp.example/a/-/a-1.0.0.tgz"},
        "node_modules/b": {"resolved": "https://me:t0ken@cdn.other.example/b-2.0.0.tgz"},
        "node_modules/c": {"resolved": "git+ssh://git@git.corp.example/team/c.git#abc"},
        "node_modules/d": {"resolved": "file:../d-1.0.0.tgz"},
        "node_modules/e": {"version": "1.0.0", "link": true}}}"#;
    assert_eq!(hosts("package-lock.json", v3), ["cdn.other.example", "git.corp.example:22", "npm.corp.example"]);
    let v1 = r#"{"lockfileVersion": 1, "dependencies": {"a": {"resolved": "https://v1.example/a.tgz",
        "dependencies": {"b": {"resolved": "https://nested.example/b.tgz"}}}}}"#;
    assert_eq!(hosts("npm-shrinkwrap.json", v1), ["nested.example", "v1.example"]);
    assert!(lockfile_places("package-lock.json", "{not json").is_err());

    let yarn = r#"# yarn lockfile v1

left-pad@^1.3.0:
  version "1.3.0"
  resolved "https://yarn.corp.example/left-pad/-/left-pad-1.3.0.tgz#5b8a3a7765dfe001261dde915589e782f8c94d1e"
  integrity sha512-XI5MPzVNApjAyhQzphX8BkmKsKUxD4LdyK24iZeQ9gbmaMEXxfNatQp6Ea5JPWkXmbKBMqXNKNrgoR/b3Lrrqw==

"@acme/x@1.0.0":
  resolution: "@acme/x@npm:1.0.0"
  resolved "https://acme.yarn.example/@acme/x/-/x-1.0.0.tgz"
"#;
    assert_eq!(hosts("yarn.lock", yarn), ["acme.yarn.example", "yarn.corp.example"]);

    let pnpm = "lockfileVersion: '9.0'
packages:
  left-pad@1.3.0:
    resolution: {integrity: sha512-XI5MPzVNApjAyhQzphX8BkmKsKUxD4LdyK24iZeQ9gbmaMEXxfNatQp6Ea5JPWkXmbKBMqXNKNrgoR/b3Lrrqw==}
  '@acme/x@1.0.0':
    resolution: {integrity: sha512-abc, tarball: https://pnpm.corp.example/@acme/x/-/x-1.0.0.tgz}
  y@file:y.tgz:
    resolution:
      tarball: 'https://own-line.example/y.tgz'
      integrity: sha512-def
";
    assert_eq!(hosts("pnpm-lock.yaml", pnpm), ["own-line.example", "pnpm.corp.example"]);
}

#[test]
fn a_lockfile_host_the_configuration_does_not_name_is_allowed_and_told() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "package.json", "{}");
    write(dir, ".npmrc", "registry=https://npm.corp.example/\n");
    write(
        dir,
        "package-lock.json",
        r#"{"lockfileVersion": 3, "packages": {
            "node_modules/a": {"resolved": "https://npm.corp.example/a/-/a-1.0.0.tgz"},
            "node_modules/b": {"resolved": "https://me:t0ken@cdn.other.example/b-2.0.0.tgz"},
            "node_modules/c": {"resolved": "git+ssh://git@git.corp.example/team/c.git#abc"}}}"#,
    );
    let found = project(dir, &env(dir, dir, None, &[]));
    assert_eq!(
        shown(&found),
        [
            "npm.corp.example — npm's registry, from .npmrc",
            "cdn.other.example — npm's locked packages, from package-lock.json",
            "git.corp.example:22 — npm's locked packages, from package-lock.json",
        ]
    );
    assert_eq!(found.hosts[0].also, [Why::tool("npm", "locked packages", "package-lock.json")]);
    assert_eq!(found.warnings.len(), 2, "{:?}", found.warnings);
    assert!(found.warnings[0].contains("from cdn.other.example, which npm's configuration does not name"));
    assert!(found.warnings[1].contains("over ssh from git.corp.example:22"), "{}", found.warnings[1]);
    assert!(!found.warnings.iter().any(|w| w.contains("npm.corp.example")), "the named registry is not told");
    no_credentials(&found, &["t0ken"]);
}

#[test]
fn yarns_own_registry_files_are_read_where_yarn_locks() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir) = (tmp.path().join("home"), tmp.path().join("project"));
    write(&home, ".yarnrc", "registry \"https://yarn1.home.example/\"\n");
    write(&dir, "package.json", "{}");
    write(&dir, "yarn.lock", "# yarn lockfile v1\n");
    write(
        &dir,
        ".yarnrc.yml",
        "npmRegistryServer: \"https://yarn.corp.example\"\nnpmScopes:\n  acme:\n    npmRegistryServer: 'https://acme.yarn.example'\n",
    );
    let found = project(&dir, &env(&home, tmp.path(), None, &[]));
    assert_eq!(
        shown(&found),
        [
            "yarn.corp.example — yarn's registry, from .yarnrc.yml".to_string(),
            "acme.yarn.example — yarn's registry, from .yarnrc.yml".into(),
            format!("yarn1.home.example — yarn's registry, from {}", home.join(".yarnrc").display()),
        ]
    );
    // Without a yarn.lock the folder is npm's, and yarn's files say nothing.
    std::fs::remove_file(dir.join("yarn.lock")).unwrap();
    let found = project(&dir, &env(&home, tmp.path(), None, &[]));
    assert!(found.hosts.is_empty(), "{:?}", shown(&found));
}

#[test]
fn which_file_each_setting_came_from_in_npm_config_list() {
    // `npm config list` as npm 11 prints it, one registry overridden by a nearer file.
    let text = r#"; "global" config from /usr/etc/npmrc

cafile = "/etc/ssl/certs/ca-certificates.crt"

; "user" config from /home/u/.npmrc

@user:registry = "https://user.example/"
; registry = "https://npm.user.example/" ; overridden by project
//npm.corp.example/:_authToken = (protected)

; "project" config from /home/u/app/.npmrc

@acme:registry = "https://acme.example/npm/"
registry = "https://npm.corp.example/"

; "env" config from environment

@env:registry = "https://env.example/"
update-notifier = false

; "cli" config from command line

json = true

; node bin location = /usr/bin/node
; node version = v20.20.2
; npm local prefix = /home/u/app
; cwd = /home/u/app
; HOME = /home/u
; Run `npm config ls -l` to show all defaults.
"#;
    let sources = sources(text);
    let get = |key: &str| sources.get(key).map(String::as_str);
    assert_eq!(get("cafile"), Some("/usr/etc/npmrc"));
    assert_eq!(get("@user:registry"), Some("/home/u/.npmrc"));
    assert_eq!(get("registry"), Some("/home/u/app/.npmrc"), "the overriding file, not the overridden one");
    assert_eq!(get("@acme:registry"), Some("/home/u/app/.npmrc"));
    assert_eq!(get("@env:registry"), Some("environment"));
    assert_eq!(get("json"), Some("command line"));
    assert_eq!(get("//npm.corp.example/:_authToken"), Some("/home/u/.npmrc"));
    for absent in ["node bin location", "cwd", "HOME", "npm local prefix"] {
        assert_eq!(get(absent), None, "{absent} is npm's comment, not a setting");
    }
    assert_eq!(sources.len(), 8, "{sources:?}");
}

#[test]
fn a_company_registry_npm_reports_is_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir, bin) = (tmp.path().join("home"), tmp.path().join("project"), tmp.path().join("bin"));
    // npm's answer wins over the files: this one is stale (npm's listing shows no such setting).
    write(&home, ".npmrc", "registry=https://file-only.example/\n");
    write(&dir, "package.json", "{}");
    let user = home.join(".npmrc");
    fake_npm(
        &bin,
        r#"{"registry": "https://me:t0ken@npm.corp.example/", "@acme:registry": "https://acme.corp.example/",
            "cafile": "/etc/ssl/cert.pem", "@acme:always-auth": true, "registry-like": "https://nope.example/"}"#,
        &format!(
            "; \"user\" config from {}\n\nregistry = \"https://npm.corp.example/\"\n\n\
             ; \"env\" config from environment\n\n@acme:registry = \"https://acme.corp.example/\"\n",
            user.display()
        ),
    );
    let found = project(&dir, &env(&home, tmp.path(), Some(&bin), &[]));
    assert_eq!(
        shown(&found),
        [
            format!("npm.corp.example — npm's registry, from {}", user.display()),
            "acme.corp.example — npm's registry for @acme, from the environment (npm_config_*)".into(),
        ]
    );
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    no_credentials(&found, &["t0ken", "file-only", "nope.example"]);
}

#[test]
fn npms_builtin_default_is_taken_from_npm_and_called_so() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, bin) = (tmp.path().join("project"), tmp.path().join("bin"));
    write(&dir, "package.json", "{}");
    // Nothing set anywhere: npm lists no setting, and its JSON holds its builtin default.
    fake_npm(
        &bin,
        r#"{"registry": "https://registry.npm.fake.example/", "cache": "/home/u/.npm"}"#,
        "; node bin location = /usr/bin/node\n; cwd = /x\n; Run `npm config ls -l` to show all defaults.\n",
    );
    let found = project(&dir, &env(tmp.path(), tmp.path(), Some(&bin), &[]));
    assert_eq!(shown(&found), ["registry.npm.fake.example — npm's default registry, from npm config"]);
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    // Something else set (an unrelated key): the registry is still npm's default.
    fake_npm(
        &bin,
        r#"{"registry": "https://registry.npm.fake.example/", "fund": false}"#,
        "; \"env\" config from environment\n\nfund = false\n",
    );
    let found = project(&dir, &env(tmp.path(), tmp.path(), Some(&bin), &[]));
    assert_eq!(shown(&found), ["registry.npm.fake.example — npm's default registry, from npm config"]);
}

#[test]
fn without_npm_and_with_nothing_naming_a_registry_a_warning_not_a_guess() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, empty_bin) = (tmp.path().join("project"), tmp.path().join("bin"));
    std::fs::create_dir_all(&empty_bin).unwrap();
    write(&dir, "package.json", "{}");
    let env = env(tmp.path(), tmp.path(), Some(&empty_bin), &[]);
    let found = project(&dir, &env);
    assert!(found.hosts.is_empty(), "no host is guessed: {:?}", shown(&found));
    assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
    assert!(found.warnings[0].starts_with("npm is not installed and no .npmrc names a registry"));
    // A scoped registry does not say what the default is: still told.
    write(&dir, ".npmrc", "@acme:registry=https://acme.example/\n");
    let found = project(&dir, &env);
    assert_eq!(shown(&found), ["acme.example — npm's registry for @acme, from .npmrc"]);
    assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
    // A lockfile names the hosts itself: nothing to tell.
    write(&dir, "package-lock.json", r#"{"packages": {"node_modules/a": {"resolved": "https://lock.example/a.tgz"}}}"#);
    let found = project(&dir, &env);
    assert_eq!(
        shown(&found),
        [
            "acme.example — npm's registry for @acme, from .npmrc",
            "lock.example — npm's locked packages, from package-lock.json"
        ]
    );
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
}

#[test]
fn an_npm_that_fails_is_told_without_its_credentials_and_the_files_are_read() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, bin) = (tmp.path().join("project"), tmp.path().join("bin"));
    script(&bin, "npm", "echo 'npm error 401 https://me:s3cret@npm.corp.example/ unauthorized' >&2; exit 1");
    write(&dir, "package.json", "{}");
    write(&dir, ".npmrc", "registry=https://me:s3cret@npm.corp.example/\n//npm.corp.example/:_authToken=s3cret\n");
    let found = project(
        &dir,
        &env(tmp.path(), tmp.path(), Some(&bin), &[("npm_config_@x:registry", "https://u:s3cret@x.example/")]),
    );
    assert_eq!(
        shown(&found),
        [
            "npm.corp.example — npm's registry, from .npmrc",
            "x.example — npm's registry for @x, from the environment (npm_config_@x:registry)",
        ]
    );
    assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
    assert!(found.warnings[0].contains("npm could not say its registries"), "{}", found.warnings[0]);
    assert!(found.warnings[0].contains("https://npm.corp.example/ unauthorized"), "{}", found.warnings[0]);
    no_credentials(&found, &["s3cret"]);
}

#[test]
fn the_real_npm_is_asked_and_names_its_own_default() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir, bin) = (tmp.path().join("home"), tmp.path().join("project"), tmp.path().join("bin"));
    if !link_real(&bin, "npm") || !link_real(&bin, "node") {
        eprintln!("npm or node is not installed here: nothing to ask");
        return;
    }
    std::fs::create_dir_all(&home).unwrap();
    write(&dir, "package.json", "{}");
    // No update check: asking npm must not reach the network.
    let vars = [("npm_config_update_notifier", "false")];
    let env = env(&home, tmp.path(), Some(&bin), &vars);
    // What npm itself says its registry is, asked here the same way.
    let said = Command::new(bin.join("npm"))
        .args(["config", "get", "registry"])
        .current_dir(&dir)
        .env_clear()
        .envs([("HOME", home.as_os_str()), ("PATH", bin.as_os_str())])
        .envs(vars)
        .output()
        .unwrap();
    assert!(said.status.success(), "{}", String::from_utf8_lossy(&said.stderr));
    let default = hosts::web(String::from_utf8_lossy(&said.stdout).trim()).expect("npm names a URL").shown();
    let found = project(&dir, &env);
    assert_eq!(shown(&found), [format!("{default} — npm's default registry, from npm config")]);
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);

    // The project's own registry replaces it, and npm says which file set it.
    write(&dir, ".npmrc", "registry=https://npm.corp.example/\n@acme:registry=https://acme.corp.example/\n");
    let found = project(&dir, &env);
    assert_eq!(
        shown(&found),
        ["npm.corp.example — npm's registry, from .npmrc", "acme.corp.example — npm's registry for @acme, from .npmrc"]
    );
    assert!(found.hosts.iter().all(|a| a.host != default), "npm's default is replaced: {:?}", shown(&found));
}
