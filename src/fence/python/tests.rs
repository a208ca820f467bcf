//! The Python reader on files, variables and pips the tests write: pip's settings (asked or read),
//! requirements files, uv's and poetry's configuration, the lockfiles, and the default index
//! taken from pip only where nothing takes its place.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::files::{self, Kind, Source};
use crate::fence::tests::kit::{env, link_python, script, shown, write};
use crate::fence::{project, Found};

/// `pip install --help` as pip prints it, naming `default` as its default index.
fn help(default: &str) -> String {
    format!(
        "
Usage:
  pip install [options] <requirement specifier> [package-index-options] ...

Package Index Options:
  -i, --index-url <url>       Base URL of the Python Package Index (default
                              {default}). This should point to a
                              repository compliant with PEP 503 (the simple
                              repository API) or a local directory laid out in
                              the same format.
  --extra-index-url <url>     Extra URLs of package indexes to use in addition
                              to --index-url. Should follow the same rules as
                              --index-url.
"
    )
}

/// A fake Python in `bin` whose pip lists `listed` as its settings, names
/// `https://pypi.default.example/simple` as its default index and `files.default.example` as
/// where its files are; each call is logged to the returned file.
fn fake_python(bin: &Path, listed: &str) -> PathBuf {
    let answers = bin.join("answers");
    write(&answers, "listed", listed);
    write(&answers, "help", &help("https://pypi.default.example/simple"));
    let log = answers.join("calls");
    script(
        bin,
        "python3",
        &format!(
            "echo \"$*\" >> '{log}'\ncase \"$*\" in\n  \
             '-m pip --version') echo 'pip 24.0 from /fake/site-packages/pip (python 3.12)' ;;\n  \
             '-m pip config list') /bin/cat '{a}/listed' ;;\n  \
             '-m pip install --help') /bin/cat '{a}/help' ;;\n  \
             '-c '*) echo files.default.example ;;\n  \
             *) echo \"unexpected: python3 $*\" >&2; exit 2 ;;\nesac",
            log = log.display(),
            a = answers.display()
        ),
    );
    log
}

fn calls(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

const DEFAULT: [&str; 2] = [
    "pypi.default.example — pip's default index, from pip install --help",
    "files.default.example — pip's default index's downloads, from pip's PyPI model",
];

fn none_of(found: &Found, absent: &[&str]) {
    let all = format!("{found:?}");
    for text in absent {
        assert!(!all.contains(text), "{text} is in {all}");
    }
}

#[test]
fn pips_settings_as_pip_lists_them_and_as_pip_conf_spells_them() {
    let listed = "\
global.index-url='https://__token__:s3cret@pypi.global.example/simple'
global.extra-index-url='https://extra.global.example/simple'
global.find-links='/opt/wheels'
global.cert='/etc/ssl/certs/ca-certificates.crt'
install.index-url='https://install.example/simple'
:env:.extra-index-url='https://a.env.example/simple https://b.env.example/simple'
:env:.disable-pip-version-check='1'
";
    let source = |url: &str, kind| Source { url: url.into(), kind };
    assert_eq!(
        files::pip_effective(&files::pip_config_list(listed)),
        [
            (source("https://install.example/simple", Kind::Index), "pip config".to_string()),
            (source("https://a.env.example/simple", Kind::Extra), "PIP_EXTRA_INDEX_URL".into()),
            (source("https://b.env.example/simple", Kind::Extra), "PIP_EXTRA_INDEX_URL".into()),
            (source("/opt/wheels", Kind::Links), "pip config".into()),
        ],
        "per key: the environment, else [install], else [global]"
    );
    let conf = "\
# pip.conf
[global]
index_url = https://global.example/simple
extra-index-url =
    https://one.example/simple
    https://two.example/simple
; a comment
timeout: 60
[install]
Index-URL: https://install.example/simple
[download]
index-url = https://download-only.example/simple
";
    let settings = files::pip_conf(conf, "/etc/pip.conf");
    assert_eq!(settings.len(), 5, "{settings:?}");
    assert_eq!(settings[0].key, "index-url", "as pip reads a key: lowercase, `-` for `_`");
    assert_eq!(
        files::pip_effective(&settings),
        [
            (source("https://install.example/simple", Kind::Index), "/etc/pip.conf".to_string()),
            (source("https://one.example/simple", Kind::Extra), "/etc/pip.conf".into()),
            (source("https://two.example/simple", Kind::Extra), "/etc/pip.conf".into()),
        ]
    );
}

#[test]
fn without_pip_its_files_are_read_in_its_order_under_its_variables() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir) = (tmp.path().join("home"), tmp.path().join("project"));
    write(
        tmp.path(),
        "etc/pip.conf",
        "[global]\nindex-url = https://system.example/simple\nextra-index-url = https://system-extra.example/simple\n",
    );
    write(&home, ".config/pip/pip.conf", "[global]\nindex-url = https://user.example/simple\n");
    write(&dir, "requirements.txt", "requests==2.31.0\n");
    let user_conf = home.join(".config/pip/pip.conf");
    let extra = [("PIP_EXTRA_INDEX_URL", "https://me:s3cret@env-extra.example/simple")];
    let found = project(&dir, &env(&home, tmp.path(), None, &extra));
    assert_eq!(
        shown(&found),
        [
            format!("user.example — pip's index, from {}", user_conf.display()),
            "env-extra.example — pip's extra index, from PIP_EXTRA_INDEX_URL".into(),
        ]
    );
    assert!(found.warnings.is_empty(), "the default is replaced, so not needed: {:?}", found.warnings);
    none_of(&found, &["system.example", "system-extra.example", "s3cret"]);

    let index = [("PIP_INDEX_URL", "https://__token__:s3cret@env.example/simple")];
    let found = project(&dir, &env(&home, tmp.path(), None, &index));
    assert_eq!(
        shown(&found),
        [
            "env.example — pip's index, from PIP_INDEX_URL".to_string(),
            format!("system-extra.example — pip's extra index, from {}", tmp.path().join("etc/pip.conf").display()),
        ]
    );
    none_of(&found, &["user.example", "s3cret"]);

    // pip's own rule: PIP_CONFIG_FILE=/dev/null reads no file at all.
    let found = project(&dir, &env(&home, tmp.path(), None, &[("PIP_CONFIG_FILE", "/dev/null")]));
    assert!(found.hosts.is_empty(), "{:?}", shown(&found));
    assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
}

#[test]
fn a_config_file_the_session_names_puts_the_users_files_aside() {
    // pip reads no user file when PIP_CONFIG_FILE names one that exists (`should_load_user_config`).
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir) = (tmp.path().join("home"), tmp.path().join("project"));
    write(&home, ".config/pip/pip.conf", "[global]\nindex-url = https://user.example/simple\n");
    write(&home, ".pip/pip.conf", "[global]\nextra-index-url = https://legacy-user.example/simple\n");
    let ci = write(tmp.path(), "ci/pip.conf", "[global]\nextra-index-url = https://ci-extra.example/simple\n");
    write(&dir, "requirements.txt", "requests==2.31.0\n");
    let found = project(&dir, &env(&home, tmp.path(), None, &[("PIP_CONFIG_FILE", ci.to_str().unwrap())]));
    assert_eq!(shown(&found), [format!("ci-extra.example — pip's extra index, from {}", ci.display())]);
    none_of(&found, &["user.example", "legacy-user.example"]);
    assert_eq!(found.warnings.len(), 1, "pip's default is unknown again: {:?}", found.warnings);
    // One that does not exist puts nothing aside.
    let missing = tmp.path().join("ci/absent.conf");
    let found = project(&dir, &env(&home, tmp.path(), None, &[("PIP_CONFIG_FILE", missing.to_str().unwrap())]));
    assert_eq!(
        shown(&found),
        [
            format!("user.example — pip's index, from {}", home.join(".config/pip/pip.conf").display()),
            format!("legacy-user.example — pip's extra index, from {}", home.join(".pip/pip.conf").display()),
        ]
    );
}

#[test]
fn pip_is_asked_and_its_default_is_taken_only_when_nothing_replaces_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir, bin) = (tmp.path().join("home"), tmp.path().join("project"), tmp.path().join("bin"));
    write(&dir, "requirements.txt", "requests==2.31.0\n");
    // A file pip's answer does not show (as if pip read it no more): not used.
    write(&home, ".config/pip/pip.conf", "[global]\nextra-index-url = https://stale.example/simple\n");
    let env = env(&home, tmp.path(), Some(&bin), &[]);

    let log = fake_python(&bin, "global.cert='/etc/ssl/cert.pem'\n");
    let found = project(&dir, &env);
    assert_eq!(shown(&found), DEFAULT);
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    assert!(calls(&log).contains("-m pip install --help"), "{}", calls(&log));
    none_of(&found, &["stale.example"]);

    std::fs::remove_dir_all(&bin).unwrap();
    let log = fake_python(&bin, "global.index-url='https://u:s3cret@pypi.corp.example/simple'\n");
    let found = project(&dir, &env);
    assert_eq!(shown(&found), ["pypi.corp.example — pip's index, from pip config"]);
    assert!(!calls(&log).contains("install --help"), "the default was asked for: {}", calls(&log));
    none_of(&found, &["default.example", "s3cret"]);

    // A requirements file's own index replaces it too.
    std::fs::remove_dir_all(&bin).unwrap();
    let log = fake_python(&bin, "");
    write(&dir, "requirements.txt", "-i https://req.example/simple\nrequests\n");
    let found = project(&dir, &env);
    assert_eq!(shown(&found), ["req.example — pip's index, from requirements.txt"]);
    assert!(!calls(&log).contains("install --help"), "{}", calls(&log));
}

#[test]
fn a_pip_that_cannot_list_its_settings_is_told_and_its_files_are_read() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir, bin) = (tmp.path().join("home"), tmp.path().join("project"), tmp.path().join("bin"));
    script(&bin, "pip3", "echo 'ERROR: https://me:s3cret@pypi.corp.example/ is not allowed' >&2; exit 1");
    write(&home, ".pip/pip.conf", "[install]\nindex-url = https://legacy-home.example/simple\n");
    write(&dir, "setup.py", "");
    let found = project(&dir, &env(&home, tmp.path(), Some(&bin), &[]));
    assert_eq!(
        shown(&found),
        [format!("legacy-home.example — pip's index, from {}", home.join(".pip/pip.conf").display())]
    );
    assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
    assert!(found.warnings[0].starts_with("pip could not say its settings"), "{}", found.warnings[0]);
    assert!(found.warnings[0].contains("https://pypi.corp.example/"), "{}", found.warnings[0]);
    none_of(&found, &["s3cret"]);
}

#[test]
fn uvs_settings_in_tool_uv_and_in_uv_toml_which_wins() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir, bin) = (tmp.path().join("home"), tmp.path().join("project"), tmp.path().join("bin"));
    let log = fake_python(&bin, "");
    write(
        &dir,
        "pyproject.toml",
        r#"[project]
name = "app"

[tool.uv]
extra-index-url = ["https://extra.uv.example/simple"]

[[tool.uv.index]]
name = "corp"
url = "https://uv.corp.example/simple"
default = true

[[tool.uv.index]]
name = "wheels"
url = "https://wheels.example/flat/"
format = "flat"

[tool.uv.sources]
lib = { git = "https://git.corp.example/lib.git" }
"#,
    );
    let env = env(&home, tmp.path(), Some(&bin), &[]);
    let found = project(&dir, &env);
    assert_eq!(
        shown(&found),
        [
            "extra.uv.example — uv's extra index, from pyproject.toml",
            "uv.corp.example — uv's index, from pyproject.toml",
            "wheels.example — uv's find-links, from pyproject.toml",
            "git.corp.example — uv's packages, from pyproject.toml",
        ]
    );
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    assert!(!calls(&log).contains("install --help"), "uv's default is replaced: {}", calls(&log));

    // Only extra indexes: the default is still uv's, and pip names it.
    write(
        &dir,
        "pyproject.toml",
        "[project]\nname = \"app\"\n\n[tool.uv]\nextra-index-url = [\"https://extra.uv.example/simple\"]\n",
    );
    let found = project(&dir, &env);
    assert_eq!(shown(&found)[0], "extra.uv.example — uv's extra index, from pyproject.toml");
    assert_eq!(shown(&found)[1..], DEFAULT);

    // A uv.toml beside it wins over `[tool.uv]`; the user's uv.toml is read as well.
    write(&dir, "uv.toml", "index-url = \"https://me:s3cret@uvtoml.example/simple\"\n");
    write(&home, ".config/uv/uv.toml", "[[index]]\nurl = \"https://user.uv.example/simple\"\n");
    let found = project(&dir, &env);
    assert_eq!(
        shown(&found),
        [
            "uvtoml.example — uv's index, from uv.toml".to_string(),
            format!("user.uv.example — uv's extra index, from {}", home.join(".config/uv/uv.toml").display()),
        ]
    );
    none_of(&found, &["extra.uv.example", "default.example", "s3cret"]);

    // uv's variables come first, and UV_NO_CONFIG leaves the files out.
    let vars = [("UV_INDEX", "corp=https://uv-env.example/simple"), ("UV_NO_CONFIG", "1")];
    let found = project(&dir, &crate::fence::tests::kit::env(&home, tmp.path(), Some(&bin), &vars));
    assert_eq!(shown(&found)[0], "uv-env.example — uv's extra index, from the environment (UV_*)");
    assert_eq!(shown(&found)[1..], DEFAULT);
    none_of(&found, &["uvtoml.example", "user.uv.example"]);
}

#[test]
fn poetrys_sources_and_which_of_them_replace_the_default() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, bin) = (tmp.path().join("project"), tmp.path().join("bin"));
    let log = fake_python(&bin, "");
    let pyproject = |sources: &str| format!("[tool.poetry]\nname = \"app\"\nversion = \"0.1.0\"\n\n{sources}");
    let primary = "[[tool.poetry.source]]\nname = \"corp\"\nurl = \"https://poetry.corp.example/simple/\"\npriority = \"primary\"\n\n";
    let supplemental = "[[tool.poetry.source]]\nname = \"extra\"\nurl = \"https://supplemental.example/simple/\"\npriority = \"supplemental\"\n";
    write(&dir, "pyproject.toml", &pyproject(&format!("{primary}{supplemental}")));
    let env = env(tmp.path(), tmp.path(), Some(&bin), &[]);
    let found = project(&dir, &env);
    assert_eq!(
        shown(&found),
        [
            "poetry.corp.example — poetry's index, from pyproject.toml",
            "supplemental.example — poetry's extra index, from pyproject.toml",
        ]
    );
    assert!(!calls(&log).contains("install --help"), "{}", calls(&log));

    write(&dir, "pyproject.toml", &pyproject(supplemental));
    let found = project(&dir, &env);
    assert_eq!(shown(&found)[0], "supplemental.example — poetry's extra index, from pyproject.toml");
    assert_eq!(shown(&found)[1..], DEFAULT);
    none_of(&found, &["poetry.corp.example"]);

    // Before poetry 1.8, `default = true` said the same as `primary`.
    let old: toml::Table =
        "[[tool.poetry.source]]\nname = \"old\"\nurl = \"https://old.example/simple\"\ndefault = true\n"
            .parse()
            .unwrap();
    assert_eq!(files::poetry_sources(&old), [Source { url: "https://old.example/simple".into(), kind: Kind::Index }]);
}

#[test]
fn requirements_options_includes_and_direct_references() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "requirements.txt",
        "\
# --index-url https://commented.example/simple
--index-url https://${PYPI_USER}:${PYPI_TOKEN}@pypi.corp.example/simple
--extra-index-url=https://extra.req.example/simple
-f https://links.req.example/wheels/
-r requirements-dev.txt
-c https://constraints.example/c.txt
requests==2.31.0  # --index-url https://trailing-comment.example/
lib @ https://files.corp.example/lib-1.0.tar.gz
git+https://git.corp.example/tool.git#egg=tool
-e ./local
--find-links /opt/wheels
",
    );
    write(
        dir,
        "requirements-dev.txt",
        "--extra-index-url \\\n  https://dev.extra.example/simple\n-r requirements.txt\n",
    );
    let vars = [("PYPI_USER", "me"), ("PYPI_TOKEN", "s3cret")];
    let found = project(dir, &env(dir, dir, None, &vars));
    assert_eq!(
        shown(&found),
        [
            "dev.extra.example — pip's extra index, from requirements-dev.txt",
            "pypi.corp.example — pip's index, from requirements.txt",
            "extra.req.example — pip's extra index, from requirements.txt",
            "links.req.example — pip's find-links, from requirements.txt",
            "files.corp.example — pip's packages, from requirements.txt",
            "git.corp.example — pip's packages, from requirements.txt",
            "constraints.example — pip's packages, from requirements.txt",
        ]
    );
    assert!(
        found.warnings.is_empty(),
        "an index is named, and the includes' loop is followed once: {:?}",
        found.warnings
    );
    none_of(&found, &["commented.example", "trailing-comment.example", "s3cret", "me:s3cret"]);
}

#[test]
fn lockfiles_give_their_hosts_and_stand_for_the_unknown_default() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "uv/uv.lock",
        r#"version = 1
requires-python = ">=3.12"

[[package]]
name = "requests"
version = "2.31.0"
source = { registry = "https://pypi.lock.example/simple" }
sdist = { url = "https://files.lock.example/packages/requests-2.31.0.tar.gz", hash = "sha256:ab", size = 1 }
wheels = [
    { url = "https://files.lock.example/packages/requests-2.31.0-py3-none-any.whl", hash = "sha256:cd", size = 2 },
]

[[package]]
name = "lib"
version = "1.0"
source = { git = "https://git.corp.example/lib.git?rev=main#abc" }

[[package]]
name = "app"
version = "0.1.0"
source = { editable = "." }
"#,
    );
    write(
        dir,
        "poetry/poetry.lock",
        r#"[[package]]
name = "corp-lib"
version = "1.0"

[package.source]
type = "legacy"
url = "https://poetry.lock.example/simple"
reference = "corp"

[[package]]
name = "local"
version = "0.1"

[package.source]
type = "directory"
url = "../local-path-not-a-host"
reference = ""
"#,
    );
    // No pip: the lockfiles name the hosts, and nothing is told.
    let env = env(dir, dir, None, &[]);
    let found = project(&dir.join("uv"), &env);
    assert_eq!(
        shown(&found),
        [
            "pypi.lock.example — uv's extra index, from uv.lock",
            "files.lock.example — uv's packages, from uv.lock",
            "git.corp.example — uv's packages, from uv.lock",
        ]
    );
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    let found = project(&dir.join("poetry"), &env);
    assert_eq!(shown(&found), ["poetry.lock.example — poetry's extra index, from poetry.lock"]);
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    none_of(&found, &["local-path-not-a-host"]);

    // A lockfile whose packages all come from the default names no host: the default is unknown.
    write(dir, "poetry/poetry.lock", "[[package]]\nname = \"requests\"\nversion = \"2.31.0\"\n");
    let found = project(&dir.join("poetry"), &env);
    assert!(found.hosts.is_empty(), "{:?}", shown(&found));
    assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
    // One that is not TOML is told, not guessed at.
    write(dir, "uv/uv.lock", "[[package]\nname = ");
    let found = project(&dir.join("uv"), &env);
    assert!(found.hosts.is_empty(), "{:?}", shown(&found));
    assert!(found.warnings[0].starts_with("uv.lock cannot be read"), "{:?}", found.warnings);
}

#[test]
fn without_pip_and_with_nothing_naming_an_index_a_warning_not_a_guess() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, empty_bin) = (tmp.path().join("project"), tmp.path().join("bin"));
    std::fs::create_dir_all(&empty_bin).unwrap();
    write(&dir, "requirements.txt", "requests==2.31.0\n");
    let found = project(&dir, &env(tmp.path(), tmp.path(), Some(&empty_bin), &[]));
    assert!(found.hosts.is_empty(), "no host is guessed: {:?}", shown(&found));
    assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
    assert!(found.warnings[0].starts_with("pip is not installed and nothing names a Python index"));
    // An extra index does not replace the default: both the host and the warning.
    let vars = [("PIP_EXTRA_INDEX_URL", "https://extra.example/simple")];
    let found = project(&dir, &env(tmp.path(), tmp.path(), Some(&empty_bin), &vars));
    assert_eq!(shown(&found), ["extra.example — pip's extra index, from PIP_EXTRA_INDEX_URL"]);
    assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
}

#[test]
fn the_default_index_in_pips_help() {
    assert_eq!(
        files::default_in_help(&help("https://pypi.default.example/simple")).as_deref(),
        Some("https://pypi.default.example/simple")
    );
    assert_eq!(files::default_in_help("  -i, --index-url <url>  Base URL of the index.\n"), None);
    assert_eq!(files::default_in_help("Base URL (default https://elsewhere.example/)\n"), None, "not --index-url's");
}

#[test]
fn the_real_pip_is_asked_and_names_its_own_default() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir, bin) = (tmp.path().join("home"), tmp.path().join("project"), tmp.path().join("bin"));
    if !link_python(&bin) {
        eprintln!("python3 with pip is not installed here: nothing to ask");
        return;
    }
    std::fs::create_dir_all(&home).unwrap();
    write(&dir, "requirements.txt", "requests==2.31.0\n");
    // What pip's own model says, asked here directly.
    let said = Command::new(bin.join("python3"))
        .args([
            "-c",
            "from pip._internal.models.index import PyPI; print(PyPI.simple_url); print(PyPI.file_storage_domain)",
        ])
        .env_clear()
        .env("HOME", &home)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&said.stdout).to_string();
    let mut lines = said.lines();
    let index = crate::fence::hosts::web(lines.next().expect("pip names its index")).unwrap().host;
    let storage = lines.next().expect("pip names where its files are").trim().to_string();
    let vars = [("PIP_DISABLE_PIP_VERSION_CHECK", "1")];
    let found = project(&dir, &env(&home, tmp.path(), Some(&bin), &vars));
    assert_eq!(
        shown(&found),
        [
            format!("{index} — pip's default index, from pip install --help"),
            format!("{storage} — pip's default index's downloads, from pip's PyPI model"),
        ]
    );
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);

    let vars =
        [("PIP_DISABLE_PIP_VERSION_CHECK", "1"), ("PIP_INDEX_URL", "https://me:s3cret@pypi.corp.example/simple")];
    let found = project(&dir, &env(&home, tmp.path(), Some(&bin), &vars));
    assert_eq!(shown(&found), ["pypi.corp.example — pip's index, from PIP_INDEX_URL"]);
    none_of(&found, &[&index, &storage, "s3cret"]);
}
