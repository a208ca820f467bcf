//! `nightshift --version` names the git revision it was built from, and a build without git degrades
//! to the bare version: the build script's own function, run on real repositories.

use crate::common;

#[path = "../build.rs"]
mod build_script;

use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn repo_with_a_commit(dir: &Path) -> String {
    git(dir, &["init", "-q"]);
    std::fs::write(dir.join("Cargo.toml"), "[package]\n").unwrap();
    git(dir, &["add", "Cargo.toml"]);
    git(dir, &["-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "one"]);
    git(dir, &["log", "-1", "--format=%h %cs", "--abbrev=10"])
}

#[test]
fn the_binary_names_the_commit_it_was_built_from() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(common::bin()).arg("--version").output().unwrap();
    let printed = String::from_utf8(out.stdout).unwrap();
    let (expected, _) = build_script::describe(root, env!("CARGO_PKG_VERSION"), None);
    assert_eq!(printed.trim(), format!("nightshift {expected}"));
    if root.join(".git").exists() {
        let head = git(root, &["rev-parse", "--short=10", "HEAD"]);
        assert!(printed.contains(&head), "{printed:?} does not name HEAD {head}");
    }
}

#[test]
fn a_work_tree_gives_its_commit_and_the_files_that_move_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let rev = repo_with_a_commit(dir.path());
    let (version, watch) = build_script::describe(dir.path(), "1.2.3", None);
    assert_eq!(version, format!("1.2.3 ({rev})"));
    let names: Vec<_> = watch.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert!(names.contains(&"HEAD".to_string()), "{watch:?}");
    let branch = git(dir.path(), &["symbolic-ref", "--short", "HEAD"]);
    assert!(names.contains(&branch), "{watch:?} misses the branch {branch}");
    assert!(watch.iter().all(|p| p.exists()), "a missing watched file reruns the script on every build");
}

#[test]
fn a_tarball_without_git_gives_the_bare_version() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(build_script::describe(dir.path(), "1.2.3", None), ("1.2.3".to_string(), vec![]));
}

#[test]
fn a_tarball_inside_another_repository_does_not_borrow_its_commit() {
    let outer = tempfile::tempdir().unwrap();
    repo_with_a_commit(outer.path());
    let unpacked = outer.path().join("nightshift-1.2.3");
    std::fs::create_dir(&unpacked).unwrap();
    assert_eq!(build_script::describe(&unpacked, "1.2.3", None).0, "1.2.3");
}

#[test]
fn a_packager_can_name_the_revision() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(build_script::describe(dir.path(), "1.2.3", Some(" abc123 ")).0, "1.2.3 (abc123)");
    assert_eq!(build_script::describe(dir.path(), "1.2.3", Some("")).0, "1.2.3");
}
