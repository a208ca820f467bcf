//! Puts the git revision into `nightshift --version` (`NIGHTSHIFT_VERSION`).
//!
//! The revision is the source tree's own: git is asked only when this package's directory is the top
//! of a work tree, so a source tarball unpacked inside some other repository does not borrow that
//! repository's commit. Without git, or outside a work tree, the version is the bare package version.
//! A packager building from a tarball can name the revision with `NIGHTSHIFT_GIT_REV`.
//! `tests/version.rs` runs these functions on real repositories.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

/// The version string for the sources in `dir`, and the files whose change means it changed.
pub fn describe(dir: &Path, version: &str, given_rev: Option<&str>) -> (String, Vec<PathBuf>) {
    if let Some(rev) = given_rev.map(str::trim).filter(|r| !r.is_empty()) {
        return (format!("{version} ({rev})"), Vec::new());
    }
    let own_tree = git(dir, &["rev-parse", "--show-toplevel"])
        .and_then(|top| Path::new(&top).canonicalize().ok())
        .is_some_and(|top| dir.canonicalize().is_ok_and(|d| d == top));
    match git(dir, &["log", "-1", "--format=%h %cs", "--abbrev=10"]).filter(|_| own_tree) {
        Some(rev) => (format!("{version} ({rev})"), head_files(dir)),
        None => (version.to_string(), Vec::new()),
    }
}

/// Files whose change means HEAD moved: HEAD itself, the branch it names, and the packed refs. Only
/// those that exist: cargo reruns a build script on every build while a file it watches is missing.
fn head_files(dir: &Path) -> Vec<PathBuf> {
    let mut names = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        names.push(branch);
    }
    names
        .iter()
        .filter_map(|name| git(dir, &["rev-parse", "--git-path", name]))
        .map(|p| dir.join(p))
        .filter(|p| p.exists())
        .collect()
}

#[allow(dead_code)] // tests/version.rs includes this file for `describe`
fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=NIGHTSHIFT_GIT_REV");
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let version = std::env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    let given = std::env::var("NIGHTSHIFT_GIT_REV").ok();
    let (full, watch) = describe(&dir, &version, given.as_deref());
    for file in watch {
        println!("cargo::rerun-if-changed={}", file.display());
    }
    println!("cargo::rustc-env=NIGHTSHIFT_VERSION={full}");
}
