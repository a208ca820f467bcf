//! cargo's reader on configuration files, variables, index caches and lockfiles the tests
//! write: cargo cannot be asked, so every case is its files.

use std::path::{Path, PathBuf};

use super::*;
use crate::fence::tests::kit::{env, shown, write};
use crate::fence::{project, Found};

/// An index cargo has fetched, in `cargo_home`'s cache as cargo keeps it: `<host>-<hash>/` with
/// the index's own `config.json`. Returns the folder.
fn cached(cargo_home: &Path, folder: &str, config_json: &str) -> PathBuf {
    let path = cargo_home.join("registry/index").join(folder);
    write(&path, "config.json", config_json);
    path
}

/// crates.io's index as cargo caches it (the names are the cache's data, not the reader's).
fn crates_io_cache(cargo_home: &Path) -> PathBuf {
    cached(
        cargo_home,
        "index.crates.io-1949cf8c6b5b557f",
        r#"{"dl": "https://static.crates.io/crates", "api": "https://crates.io"}"#,
    )
}

fn default_registry(cache: &Path) -> [String; 3] {
    let json = cache.join("config.json");
    [
        format!("index.crates.io — cargo's default registry's index, from {}", cache.display()),
        format!("static.crates.io — cargo's default registry's downloads, from {}", json.display()),
        format!("crates.io — cargo's default registry's API, from {}", json.display()),
    ]
}

fn none_of(found: &Found, absent: &[&str]) {
    let all = format!("{found:?}");
    for text in absent {
        assert!(!all.contains(text), "{text} is in {all}");
    }
}

/// A project in `tmp/project` with a `Cargo.toml`, and cargo's home in `tmp/cargo-home`.
fn setup(tmp: &Path) -> (PathBuf, PathBuf) {
    let (dir, cargo_home) = (tmp.join("project"), tmp.join("cargo-home"));
    write(&dir, "Cargo.toml", "[package]\nname = \"app\"\nversion = \"0.1.0\"\n");
    std::fs::create_dir_all(&cargo_home).unwrap();
    (dir, cargo_home)
}

#[test]
fn registries_of_the_project_and_of_cargo_home_the_nearer_winning() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, cargo_home) = setup(tmp.path());
    write(
        &cargo_home,
        "config.toml",
        "[registries.corp]\nindex = \"sparse+https://cargo.corp.example/index/\"\n\n\
         [registries.homeonly]\nindex = \"https://me:s3cret@git.corp.example/index.git\"\n",
    );
    write(
        &dir,
        ".cargo/config.toml",
        "[registries.corp]\nindex = \"sparse+https://cargo-near.corp.example/index/\"\n\n\
         [registries.ssh]\nindex = \"ssh://git@git.ssh.example:2222/index.git\"\n",
    );
    let near = cached(
        &cargo_home,
        "cargo-near.corp.example-0123456789abcdef",
        r#"{"dl": "https://dl.corp.example/crates/{crate}/{version}/download", "api": "https://api.corp.example"}"#,
    );
    let crates_io = crates_io_cache(&cargo_home);
    let home_config = cargo_home.join("config.toml");
    let found = project(&dir, &env(tmp.path(), tmp.path(), None, &[("CARGO_HOME", cargo_home.to_str().unwrap())]));
    let mut want = vec![
        "cargo-near.corp.example — cargo's registry corp's index, from .cargo/config.toml".to_string(),
        format!("dl.corp.example — cargo's registry corp's downloads, from {}", near.join("config.json").display()),
        format!("api.corp.example — cargo's registry corp's API, from {}", near.join("config.json").display()),
        format!("git.corp.example — cargo's registry homeonly's index, from {}", home_config.display()),
        "git.ssh.example:2222 — cargo's registry ssh's index, from .cargo/config.toml".into(),
    ];
    want.extend(default_registry(&crates_io));
    assert_eq!(shown(&found), want);
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    none_of(&found, &["cargo.corp.example", "s3cret"]);
}

#[test]
fn a_replaced_crates_io_is_not_allowed_what_replaces_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, cargo_home) = setup(tmp.path());
    crates_io_cache(&cargo_home);
    let mirror = cached(&cargo_home, "mirror.corp.example-fedcba9876543210", r#"{"dl": "https://dl.mirror.example/"}"#);
    write(
        &dir,
        ".cargo/config.toml",
        "[source.crates-io]\nreplace-with = \"mirror\"\n\n[source.mirror]\nregistry = \"sparse+https://mirror.corp.example/index/\"\n",
    );
    let env = env(tmp.path(), tmp.path(), None, &[("CARGO_HOME", cargo_home.to_str().unwrap())]);
    let found = project(&dir, &env);
    assert_eq!(
        shown(&found),
        [
            "mirror.corp.example — cargo's source mirror's index, from .cargo/config.toml".to_string(),
            format!(
                "dl.mirror.example — cargo's source mirror's downloads, from {}",
                mirror.join("config.json").display()
            ),
        ]
    );
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    none_of(&found, &["index.crates.io", "static.crates.io", "\"crates.io\""]);

    // Vendored: nothing is reached, and nothing is told.
    write(
        &dir,
        ".cargo/config.toml",
        "[source.crates-io]\nreplace-with = \"vendored-sources\"\n\n[source.vendored-sources]\ndirectory = \"vendor\"\n",
    );
    let found = project(&dir, &env);
    assert_eq!(found, Found::default());

    // A chain that goes round, or ends nowhere, is told and followed no further.
    write(
        &dir,
        ".cargo/config.toml",
        "[source.crates-io]\nreplace-with = \"a\"\n\n[source.a]\nreplace-with = \"crates-io\"\n",
    );
    let found = project(&dir, &env);
    assert!(found.hosts.is_empty(), "{:?}", shown(&found));
    assert_eq!(
        found.warnings,
        ["cargo's source replacement cannot be followed: `replace-with` goes round through crates-io, a"]
    );
    write(&dir, ".cargo/config.toml", "[source.crates-io]\nreplace-with = \"nowhere\"\n");
    let found = project(&dir, &env);
    assert!(found.warnings[0].ends_with("source crates-io is replaced with nowhere, which is defined nowhere"));
}

#[test]
fn the_default_registry_is_what_cargo_has_fetched_or_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, cargo_home) = setup(tmp.path());
    // Not cargo's name for a cached index (no 16-digit hash): no host of it.
    write(&cargo_home, "registry/index/not-an-index/config.json", r#"{"dl": "https://never.example/"}"#);
    let env = env(tmp.path(), tmp.path(), None, &[("CARGO_HOME", cargo_home.to_str().unwrap())]);
    let found = project(&dir, &env);
    assert!(found.hosts.is_empty(), "no host is guessed: {:?}", shown(&found));
    assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
    assert!(found.warnings[0].starts_with("cargo's default registry is not known yet"), "{}", found.warnings[0]);
    // Once cargo has fetched it, its cache names it.
    let cache = crates_io_cache(&cargo_home);
    let found = project(&dir, &env);
    assert_eq!(shown(&found), default_registry(&cache));
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    none_of(&found, &["never.example"]);
    // Without CARGO_HOME, cargo's home is ~/.cargo.
    let home = tmp.path().join("home");
    let cache = crates_io_cache(&home.join(".cargo"));
    let found = project(&dir, &crate::fence::tests::kit::env(&home, tmp.path(), None, &[]));
    assert_eq!(shown(&found), default_registry(&cache));
}

#[test]
fn variables_over_files_and_the_file_cargo_prefers() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, cargo_home) = setup(tmp.path());
    crates_io_cache(&cargo_home);
    // Both spellings in one folder: cargo reads `config`, not `config.toml`.
    write(&dir, ".cargo/config", "[registries.my-corp]\nindex = \"sparse+https://from-config.example/\"\n");
    write(&dir, ".cargo/config.toml", "[registries.other]\nindex = \"sparse+https://from-config-toml.example/\"\n");
    let vars = [("CARGO_HOME", cargo_home.to_str().unwrap())];
    let found = project(&dir, &env(tmp.path(), tmp.path(), None, &vars));
    assert_eq!(shown(&found)[0], "from-config.example — cargo's registry my-corp's index, from .cargo/config");
    none_of(&found, &["from-config-toml.example"]);

    let vars = [
        ("CARGO_HOME", cargo_home.to_str().unwrap()),
        ("CARGO_REGISTRIES_MY_CORP_INDEX", "sparse+https://u:s3cret@from-env.example/index/"),
        ("CARGO_REGISTRIES_NEW_ONE_INDEX", "https://new.example/index.git"),
        ("CARGO_REGISTRY_DEFAULT", "unnamed"),
    ];
    let found = project(&dir, &env(tmp.path(), tmp.path(), None, &vars));
    assert_eq!(
        shown(&found)[..2],
        [
            "from-env.example — cargo's registry my-corp's index, from the environment (CARGO_REGISTRIES_MY_CORP_INDEX)",
            "new.example — cargo's registry new-one's index, from the environment (CARGO_REGISTRIES_NEW_ONE_INDEX)",
        ]
    );
    assert_eq!(
        found.warnings,
        ["cargo's default registry unnamed (from the environment (CARGO_REGISTRY_DEFAULT)) has no index configured"]
    );
    none_of(&found, &["from-config.example", "s3cret"]);

    // A file that is not TOML is told.
    write(&dir, ".cargo/config", "[registries\n");
    let found = project(&dir, &env(tmp.path(), tmp.path(), None, &vars[..1]));
    assert!(found.warnings[0].starts_with(".cargo/config is not TOML"), "{:?}", found.warnings);
}

const LOCK: &str = r#"version = 4

[[package]]
name = "app"
version = "0.1.0"

[[package]]
name = "serde"
version = "1.0.0"
source = "registry+https://github.com/rust-lang/crates.io-index"

[[package]]
name = "serde_derive"
version = "1.0.0"
source = "registry+https://github.com/rust-lang/crates.io-index"

[[package]]
name = "corp-lib"
version = "0.1.0"
source = "sparse+https://cargo.corp.example/index/"

[[package]]
name = "forked"
version = "0.2.0"
source = "git+https://me:s3cret@git.corp.example/forked.git?branch=main#0123abcd"

[[package]]
name = "old-corp"
version = "0.1.0"
source = "registry+https://git.oldcorp.example/index.git"
"#;

#[test]
fn cargo_lock_and_cargo_toml_name_their_sources() {
    assert_eq!(
        lock_sources(LOCK).unwrap(),
        [
            "git+https://me:s3cret@git.corp.example/forked.git?branch=main#0123abcd",
            "registry+https://git.oldcorp.example/index.git",
            "registry+https://github.com/rust-lang/crates.io-index",
            "sparse+https://cargo.corp.example/index/",
        ],
        "each once"
    );
    let tmp = tempfile::tempdir().unwrap();
    let (dir, cargo_home) = setup(tmp.path());
    let cache = crates_io_cache(&cargo_home);
    write(&dir, "Cargo.lock", LOCK);
    write(
        &dir,
        "Cargo.toml",
        r#"[package]
name = "app"
version = "0.1.0"
repository = "https://repo.example/app"

[package.metadata.docs]
git = "https://not-a-dependency.example/x.git"

[dependencies]
x = { git = "https://git.dep.example/x.git", branch = "main" }

[target.'cfg(unix)'.dev-dependencies]
y = { git = "ssh://git@git.ssh.example/y.git" }

[patch.crates-io]
z = { git = "https://patch.example/z.git" }
"#,
    );
    let found = project(&dir, &env(tmp.path(), tmp.path(), None, &[("CARGO_HOME", cargo_home.to_str().unwrap())]));
    let mut want = default_registry(&cache).to_vec();
    want.extend([
        "git.corp.example — cargo's git dependency, from Cargo.lock".to_string(),
        "cargo.corp.example — cargo's locked registry, from Cargo.lock".into(),
        "git.dep.example — cargo's git dependency, from Cargo.toml".into(),
        "patch.example — cargo's git dependency, from Cargo.toml".into(),
        "git.ssh.example:22 — cargo's git dependency, from Cargo.toml".into(),
    ]);
    assert_eq!(shown(&found), want);
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    // A `registry+` URL is a registry's name as much as its address: only where cargo reached it.
    none_of(&found, &["github.com", "git.oldcorp.example", "not-a-dependency", "repo.example", "s3cret"]);
}

#[test]
fn a_locked_registry_that_is_replaced_is_not_allowed_through_the_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, cargo_home) = setup(tmp.path());
    // crates.io's git index, as older cargo fetched it and left it in the cache.
    let old = cached(&cargo_home, "github.com-1ecc6299db9ec823", r#"{"dl": "https://old-dl.example/api/v1/crates"}"#);
    write(&dir, "Cargo.lock", LOCK);
    let env = env(tmp.path(), tmp.path(), None, &[("CARGO_HOME", cargo_home.to_str().unwrap())]);
    // Not replaced: cargo reaches it, for the lock's sake as for its own.
    let found = project(&dir, &env);
    assert_eq!(
        shown(&found)[..2],
        [
            format!("github.com — cargo's default registry's index, from {}", old.display()),
            format!(
                "old-dl.example — cargo's default registry's downloads, from {}",
                old.join("config.json").display()
            ),
        ]
    );
    assert_eq!(found.hosts[0].also, [Why::tool("cargo", "locked registry", "Cargo.lock")]);
    // Vendored: cargo reaches neither it nor its downloads, whatever the lock says.
    write(
        &dir,
        ".cargo/config.toml",
        "[source.crates-io]\nreplace-with = \"vendored-sources\"\n\n[source.vendored-sources]\ndirectory = \"vendor\"\n",
    );
    let found = project(&dir, &env);
    assert_eq!(
        shown(&found),
        [
            "git.corp.example — cargo's git dependency, from Cargo.lock",
            "cargo.corp.example — cargo's locked registry, from Cargo.lock",
        ]
    );
    none_of(&found, &["github.com", "old-dl.example"]);
}

#[test]
fn the_settings_merged_nearest_first() {
    let table = |text: &str| -> toml::Table { text.parse().unwrap() };
    let tables = [
        (
            "near".to_string(),
            table("[source.crates-io]\nreplace-with = \"near-mirror\"\n[source.near-mirror]\nregistry = \"https://near.example/\"\n"),
        ),
        (
            "far".to_string(),
            table(
                "[source.crates-io]\nreplace-with = \"far-mirror\"\n[source.far-mirror]\ngit = \"https://far.example/idx.git\"\n\
                 [registry]\ndefault = \"corp\"\n[registries.corp]\nindex = \"https://corp.example/\"\n",
            ),
        ),
    ];
    let config = merge(&tables, &crate::fence::Env::new::<&str, &str>([]));
    assert_eq!(
        config.sources["crates-io"],
        (SourceDef { replace_with: Some("near-mirror".into()), ..SourceDef::default() }, "near".into())
    );
    assert_eq!(config.sources["far-mirror"].0.url.as_deref(), Some("https://far.example/idx.git"));
    assert_eq!(config.registries["corp"], ("https://corp.example/".to_string(), "far".to_string()));
    assert_eq!(config.default, Some(("corp".to_string(), "far".to_string())));
    assert_eq!(replaced(&config, "crates-io"), Ok(Some("near-mirror".into())));
    assert_eq!(replaced(&config, "far-mirror"), Ok(None));
}
