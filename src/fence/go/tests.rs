//! Go's reader on settings the tests write: `GOPROXY` lists, `GOSUMDB`, the private module
//! patterns, go's env files and a fake go's answer (go itself is not needed).

use std::path::{Path, PathBuf};

use super::*;
use crate::fence::tests::kit::{env, script, shown, write};
use crate::fence::{project, Found};

fn place(host: &str, port: Option<u16>) -> Option<Place> {
    Some(Place { scheme: "https".into(), host: host.into(), port })
}

fn none_of(found: &Found, absent: &[&str]) {
    let all = format!("{found:?}");
    for text in absent {
        assert!(!all.contains(text), "{text} is in {all}");
    }
}

/// A fake go in `bin` that answers `go env -json` (as the reader asks it, with GOTOOLCHAIN=local)
/// with `json`, and fails on anything else.
fn fake_go(bin: &Path, json: &str) {
    let answer = write(bin, "answers/env.json", json);
    script(
        bin,
        "go",
        &format!(
            "[ \"$GOTOOLCHAIN\" = local ] || {{ echo 'asked without GOTOOLCHAIN=local' >&2; exit 1; }}\n\
             [ \"$*\" = 'env -json GOPROXY GOSUMDB GOPRIVATE GONOPROXY GONOSUMDB' ] || \
             {{ echo \"unexpected: go $*\" >&2; exit 2; }}\n/bin/cat '{}'",
            answer.display()
        ),
    );
}

/// A module folder: `tmp/project` with a `go.mod`.
fn module(tmp: &Path) -> PathBuf {
    let dir = tmp.join("project");
    write(
        &dir,
        "go.mod",
        "module example.com/app

go 1.22

require (
\tgithub.com/pkg/errors v0.9.1
\tgolang.org/x/text v0.14.0 // indirect
\tgit.corp.example/team/lib v1.2.3
)

require gopkg.in/yaml.v3 v3.0.1

replace example.com/x => ../x
",
    );
    dir
}

#[test]
fn goproxy_lists_as_go_reads_them() {
    let hosts = |list: &str| -> (Vec<Option<String>>, bool) {
        let plan = proxies(list);
        (plan.proxies.into_iter().map(|(_, p)| p.map(|p| p.shown())).collect(), plan.direct_first)
    };
    let some = |hosts: &[&str]| hosts.iter().map(|h| Some(h.to_string())).collect::<Vec<_>>();
    assert_eq!(
        hosts("https://proxy.corp.example,https://backup.example:8443|direct"),
        (some(&["proxy.corp.example", "backup.example:8443"]), false),
        "`,` and `|` both separate; `direct` last is a fallback, not every module's host"
    );
    assert_eq!(hosts("direct"), (vec![], true));
    assert_eq!(hosts("direct,https://after.example"), (some(&["after.example"]), true));
    assert_eq!(hosts("off"), (vec![], false));
    assert_eq!(hosts("https://first.example,off,https://never.example"), (some(&["first.example"]), false));
    assert_eq!(hosts("goproxy.corp.example/go"), (some(&["goproxy.corp.example"]), false), "no scheme: HTTPS");
    assert_eq!(hosts("https://me:s3cret@auth.example/"), (some(&["auth.example"]), false));
    assert_eq!(hosts(" , https://spaces.example ,"), (some(&["spaces.example"]), false));
    assert_eq!(hosts("file:///srv/modules"), (vec![None], false), "a folder of this machine has no host");
    let entries = |list: &str| proxies(list).proxies.into_iter().map(|(entry, _)| entry).collect::<Vec<_>>();
    assert_eq!(
        entries("https://me:s3cret@bad host.example/go,you:s3cret@other bad.example/x@v"),
        ["https://bad host.example/go", "other bad.example/x@v"],
        "an entry is kept without its credentials, with or without a scheme"
    );
}

#[test]
fn gosumdb_off_a_name_a_key_and_a_url() {
    assert_eq!(checksum_db("off"), None);
    assert_eq!(checksum_db(""), None);
    assert_eq!(checksum_db("sum.corp.example"), place("sum.corp.example", None));
    assert_eq!(checksum_db("sum.corp.example+ab12cd34+AbCdEf"), place("sum.corp.example", None));
    assert_eq!(
        checksum_db("sum.corp.example+ab12cd34+AbCdEf https://sumproxy.corp.example/"),
        place("sumproxy.corp.example", None)
    );
    assert_eq!(
        checksum_db("sum.corp.example sumproxy.example:8443"),
        place("sumproxy.example", Some(8443)),
        "no scheme: HTTPS"
    );
    assert_eq!(checksum_db("sum.corp.example https://u:s3cret@sumdb.example/"), place("sumdb.example", None));
}

#[test]
fn private_module_patterns_and_the_hosts_they_name() {
    let host = |pattern: &str| pattern_host(pattern).map(|r| r.map(|p| p.host));
    assert_eq!(host("git.corp.example/team/*"), Some(Ok("git.corp.example".into())));
    assert_eq!(host("Git.Corp.Example"), Some(Ok("git.corp.example".into())));
    assert_eq!(host("*.corp.example"), Some(Ok("*.corp.example".into())));
    assert_eq!(host("git.*.example/x"), Some(Err(())), "a pattern no fence can hold");
    assert_eq!(host("*"), Some(Err(())), "every module: no host to name");
    assert_eq!(host("corp*/x"), Some(Err(())));
    assert_eq!(host("none"), None, "no module path starts with a dotless element go fetches");
    assert_eq!(host("corp/*"), None);
    assert_eq!(host(""), None);
    assert_eq!(host(" /x"), None);
}

#[test]
fn go_env_files_and_go_mod_requirements() {
    let text = "\
# written by go env -w
GOPROXY=https://proxy.corp.example,direct
GOFLAGS=-mod=mod
#GOSUMDB=off
GOPRIVATE=git.corp.example
not a setting
";
    let values = env_file(text);
    assert_eq!(values.get("GOPROXY").map(String::as_str), Some("https://proxy.corp.example,direct"));
    assert_eq!(values.get("GOPRIVATE").map(String::as_str), Some("git.corp.example"));
    assert_eq!(values.len(), 2, "only the settings the fence reads: {values:?}");
    let tmp = tempfile::tempdir().unwrap();
    let dir = module(tmp.path());
    let go_mod = std::fs::read_to_string(dir.join("go.mod")).unwrap();
    assert_eq!(module_hosts(&go_mod), ["github.com", "golang.org", "git.corp.example", "gopkg.in"]);
    assert!(module_hosts("module example.com/app\nreplace a.example/x => b.example/y v1.0.0\n").is_empty());
}

#[test]
fn without_go_the_variables_over_its_files_each_setting_from_where_it_was_set() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir) = (tmp.path().join("home"), module(tmp.path()));
    let goroot = tmp.path().join("goroot");
    let root_env = write(&goroot, "go.env", "GOPROXY=https://root-proxy.example,direct\nGOSUMDB=sum.root.example\n");
    let user_env = write(
        &home,
        ".config/go/env",
        "GOPROXY=https://user-proxy.example|https://user-backup.example\nGOPRIVATE=git.corp.example/team\n",
    );
    let vars =
        [("GOROOT", goroot.to_str().unwrap()), ("GOSUMDB", "sum.env.example https://me:s3cret@sumdb.env.example")];
    let found = project(&dir, &env(&home, tmp.path(), None, &vars));
    let user = user_env.display();
    assert_eq!(
        shown(&found),
        [
            format!("user-proxy.example — go's module proxy, from GOPROXY ({user})"),
            format!("user-backup.example — go's module proxy, from GOPROXY ({user})"),
            "sumdb.env.example — go's checksum database, from GOSUMDB (the environment)".into(),
            format!("git.corp.example — go's direct fetches (GOPRIVATE), from {user}"),
        ]
    );
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    none_of(&found, &["root-proxy.example", "sum.root.example", "s3cret"]);

    // GOENV=off: no user file; the toolchain's go.env is what is left.
    let vars = [("GOROOT", goroot.to_str().unwrap()), ("GOENV", "off")];
    let found = project(&dir, &env(&home, tmp.path(), None, &vars));
    let root = root_env.display();
    assert_eq!(
        shown(&found),
        [
            format!("root-proxy.example — go's module proxy, from GOPROXY ({root})"),
            format!("sum.root.example — go's checksum database, from GOSUMDB ({root})"),
        ],
        "`direct` after a proxy fetches no module's host first"
    );
    none_of(&found, &["user-proxy.example", "git.corp.example", "github.com"]);
}

#[test]
fn go_is_asked_and_its_answer_wins_over_the_files() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir, bin) = (tmp.path().join("home"), module(tmp.path()), tmp.path().join("bin"));
    write(&home, ".config/go/env", "GOPROXY=https://file-proxy.example\n");
    // What go says, its defaults included (the names are this fake go's data).
    fake_go(
        &bin,
        r#"{"GOPROXY": "https://proxy.golang.org,direct", "GOSUMDB": "sum.golang.org",
            "GOPRIVATE": "*.corp.example", "GONOPROXY": "*.corp.example", "GONOSUMDB": "*.corp.example"}"#,
    );
    let env = env(&home, tmp.path(), Some(&bin), &[]);
    let found = project(&dir, &env);
    assert_eq!(
        shown(&found),
        [
            "proxy.golang.org — go's module proxy, from GOPROXY (go env)",
            "sum.golang.org — go's checksum database, from GOSUMDB (go env)",
            "*.corp.example — go's direct fetches (GOPRIVATE), from go env",
        ]
    );
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    none_of(&found, &["file-proxy.example", "github.com", "GONOPROXY"]);

    // An answer that is not JSON is told, and the files are read instead.
    fake_go(&bin, "go: warning: https://me:s3cret@proxy.example/ is not JSON");
    let found = project(&dir, &env);
    assert_eq!(
        shown(&found)[0],
        format!("file-proxy.example — go's module proxy, from GOPROXY ({})", home.join(".config/go/env").display())
    );
    assert!(
        found.warnings[0].starts_with("go could not say its settings (go env's answer is not JSON"),
        "{:?}",
        found.warnings
    );
    assert!(found.warnings[1].contains("GOSUMDB"), "{:?}", found.warnings);
    none_of(&found, &["proxy.golang.org", "s3cret"]);
}

#[test]
fn with_direct_first_every_required_modules_host_is_fetched_from() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = module(tmp.path());
    let found = project(&dir, &env(tmp.path(), tmp.path(), None, &[("GOPROXY", "direct"), ("GOSUMDB", "off")]));
    assert_eq!(
        shown(&found),
        [
            "github.com — go's direct fetches (GOPROXY=direct), from go.mod",
            "golang.org — go's direct fetches (GOPROXY=direct), from go.mod",
            "git.corp.example — go's direct fetches (GOPROXY=direct), from go.mod",
            "gopkg.in — go's direct fetches (GOPROXY=direct), from go.mod",
        ]
    );
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    // `off`: nothing is fetched at all.
    let found = project(&dir, &env(tmp.path(), tmp.path(), None, &[("GOPROXY", "off"), ("GOSUMDB", "off")]));
    assert_eq!(found, Found::default());
}

#[test]
fn without_go_and_with_nothing_set_a_warning_not_a_guess() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, empty_bin) = (module(tmp.path()), tmp.path().join("bin"));
    std::fs::create_dir_all(&empty_bin).unwrap();
    let found = project(&dir, &env(tmp.path(), tmp.path(), Some(&empty_bin), &[]));
    assert!(found.hosts.is_empty(), "no host is guessed: {:?}", shown(&found));
    assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
    assert!(found.warnings[0].contains("GOPROXY and GOSUMDB is not set"), "{}", found.warnings[0]);
    // One set, the other still unknown and told.
    let vars = [("GOPROXY", "https://proxy.corp.example")];
    let found = project(&dir, &env(tmp.path(), tmp.path(), Some(&empty_bin), &vars));
    assert_eq!(shown(&found), ["proxy.corp.example — go's module proxy, from GOPROXY (the environment)"]);
    assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
    assert!(found.warnings[0].contains(" GOSUMDB is not set") && !found.warnings[0].contains("GOPROXY"));
}

#[test]
fn gonoproxy_decides_what_goes_around_the_proxy_none_included() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = module(tmp.path());
    // `go help module-private`'s own example: private modules, all through the company's proxy.
    let vars =
        [("GOPRIVATE", "*.corp.example"), ("GOPROXY", "proxy.corp.example"), ("GONOPROXY", "none"), ("GOSUMDB", "off")];
    let found = project(&dir, &env(tmp.path(), tmp.path(), None, &vars));
    assert_eq!(shown(&found), ["proxy.corp.example — go's module proxy, from GOPROXY (the environment)"]);
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    // GONOPROXY names its own hosts; GOPRIVATE's are then not fetched directly.
    let vars = [
        ("GOPRIVATE", "*.corp.example,git.other.example"),
        ("GONOPROXY", "git.corp.example"),
        ("GOPROXY", "https://proxy.example"),
        ("GOSUMDB", "off"),
    ];
    let found = project(&dir, &env(tmp.path(), tmp.path(), None, &vars));
    assert_eq!(
        shown(&found),
        [
            "proxy.example — go's module proxy, from GOPROXY (the environment)",
            "git.corp.example — go's direct fetches (GONOPROXY), from the environment",
        ]
    );
    none_of(&found, &["*.corp.example", "git.other.example"]);
}

#[test]
fn credentials_in_go_settings_reach_no_host_reason_or_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = module(tmp.path());
    let vars = [
        ("GOPROXY", "https://me:s3cret@proxy.corp.example,you:s3cret@bad host.example"),
        ("GOSUMDB", "sum.corp.example https://me:s3cret@sumdb.corp.example"),
    ];
    let found = project(&dir, &env(tmp.path(), tmp.path(), None, &vars));
    assert_eq!(
        shown(&found),
        [
            "proxy.corp.example — go's module proxy, from GOPROXY (the environment)",
            "sumdb.corp.example — go's checksum database, from GOSUMDB (the environment)",
        ]
    );
    assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
    assert!(found.warnings[0].contains("bad host.example"), "{}", found.warnings[0]);
    none_of(&found, &["s3cret"]);
}
