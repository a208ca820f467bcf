//! Sessions in worktrees (`nightshift run --worktree`), with real git repositories and the real
//! binary: two sessions on one repository each commit on a branch of their own in a folder outside
//! the user's checkout, which stays byte for byte as it was (index, HEAD, refs, stash, status, its
//! files); `worktree list`, `show` and the digest tell each one's work; removal refuses to lose
//! work unless forced; bad starts are refused in one line and leave nothing behind.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Env;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}

/// The user's checkout: a commit, a staged change, an unstaged one, an untracked file and a stash.
fn users_repo(env: &Env) -> PathBuf {
    let repo = env.path("project");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("README"), "the project\n").unwrap();
    std::fs::write(repo.join("src/lib.txt"), "one\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "The project as it starts"]);
    std::fs::write(repo.join("README"), "stashed\n").unwrap();
    git(&repo, &["stash", "-q"]);
    std::fs::write(repo.join("src/lib.txt"), "one, staged\n").unwrap();
    git(&repo, &["add", "src/lib.txt"]);
    std::fs::write(repo.join("README"), "the project, half edited\n").unwrap();
    std::fs::write(repo.join("notes.txt"), "mine\n").unwrap();
    repo
}

/// Everything of the user's checkout a session must not change.
fn snapshot(repo: &Path) -> Vec<String> {
    let refs: Vec<String> = git(repo, &["for-each-ref", "--format=%(refname) %(objectname)"])
        .lines()
        .filter(|r| !r.starts_with("refs/heads/nightshift/"))
        .map(str::to_string)
        .collect();
    let mut out = vec![
        git(repo, &["rev-parse", "HEAD"]),
        git(repo, &["symbolic-ref", "HEAD"]),
        git(repo, &["status", "--porcelain=v2", "--untracked-files=all"]),
        git(repo, &["stash", "list"]),
        format!("{:?}", std::fs::read(repo.join(".git/index")).unwrap()),
        refs.join("\n"),
    ];
    for file in ["README", "src/lib.txt", "notes.txt"] {
        out.push(std::fs::read_to_string(repo.join(file)).unwrap());
    }
    out
}

fn configure(env: &Env) -> PathBuf {
    let root = env.path("worktrees");
    std::fs::create_dir_all(env.path("config")).unwrap();
    std::fs::write(env.path("config").join("config.toml"), format!("[worktree]\ndir = \"{}\"\n", root.display()))
        .unwrap();
    root
}

/// `nightshift run --worktree NAME` of a command that makes `commits` commits, from `dir`.
fn commit_in_worktree(env: &Env, dir: &Path, name: &str, commits: u32) -> std::process::Output {
    let script = format!(
        "for i in $(seq {commits}); do echo \"{name} $i\" > {name}.txt; git add {name}.txt; \
         git -c user.name=a -c user.email=a@a commit -qm \"{name} $i\"; done"
    );
    env.cmd(&["run", "--worktree", name, "--", "bash", "-c", &script]).current_dir(dir).output().unwrap()
}

#[test]
fn two_sessions_on_one_repository_commit_in_worktrees_of_their_own_and_the_checkout_stays_as_it_was() {
    let env = Env::new();
    let root = configure(&env);
    let repo = users_repo(&env);
    let before = snapshot(&repo);
    let one = commit_in_worktree(&env, &repo, "one", 1);
    assert!(one.status.success(), "{}", String::from_utf8_lossy(&one.stderr));
    assert!(String::from_utf8_lossy(&one.stderr).contains("on nightshift/one"), "the place is told");
    // The second from a subfolder: it works in the same subfolder of its worktree.
    let two = commit_in_worktree(&env, &repo.join("src"), "two", 2);
    assert!(two.status.success(), "{}", String::from_utf8_lossy(&two.stderr));
    assert_eq!(snapshot(&repo), before, "the user's checkout is byte for byte as it was");

    let base = git(&repo, &["rev-parse", "HEAD"]);
    assert_eq!(git(&repo, &["rev-list", "--count", &format!("{base}..nightshift/one")]), "1");
    assert_eq!(git(&repo, &["rev-list", "--count", &format!("{base}..nightshift/two")]), "2");
    assert!(git(&repo, &["show", "nightshift/two:src/two.txt"]).starts_with("two 2"), "made in the subfolder");
    for name in ["one", "two"] {
        let path = git(&repo, &["worktree", "list", "--porcelain"])
            .lines()
            .filter_map(|l| l.strip_prefix("worktree "))
            .find(|p| p.ends_with(&format!("/{name}")))
            .map(PathBuf::from)
            .expect("listed by git");
        assert!(path.starts_with(&root) && !path.starts_with(&repo), "{} outside the checkout", path.display());
    }

    let list = env.stdout(&["worktree", "list"]);
    let line = |branch: &str| list.lines().find(|l| l.starts_with(branch)).unwrap_or_default().to_string();
    assert!(line("nightshift/one").contains("1 commit, 1 file changed, 1 insertion(+), no remote"), "{list}");
    assert!(line("nightshift/two").contains("2 commits"), "{list}");
    let show = env.stdout(&["worktree", "show", "two"]);
    assert!(show.contains(&format!("merge:  git -C {} merge nightshift/two", repo.display())), "{show}");
    let digest: serde_json::Value = serde_json::from_str(&env.stdout(&["digest", "--format", "json"])).unwrap();
    let mut branches: Vec<(String, u64)> = digest["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| Some((s["worktree"]["branch"].as_str()?.to_string(), s["worktree"]["ahead"].as_u64()?)))
        .collect();
    branches.sort();
    assert_eq!(branches, [("nightshift/one".to_string(), 1), ("nightshift/two".to_string(), 2)]);
    let text = env.stdout(&["digest"]);
    assert!(text.contains("worktree: nightshift/two at ") && text.contains("merge: git -C"), "{text}");

    // Removal: the merged one goes with its branch; the one with unmerged, unpushed commits is
    // refused, then removed by force with its uncommitted file kept and its branch kept.
    git(&repo, &["stash", "-q", "--include-untracked"]);
    git(&repo, &["merge", "-q", "--ff-only", "nightshift/one"]);
    let removed = env.stdout(&["worktree", "remove", "one"]);
    assert!(removed.contains("Its branch nightshift/one is deleted too"), "{removed}");
    let two_path = root.read_dir().unwrap().next().unwrap().unwrap().path().join("two");
    std::fs::write(two_path.join("left.txt"), "not committed\n").unwrap();
    let refused = env.output(&["worktree", "remove", "two"]);
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(
        said.contains("1 uncommitted file(s) and 2 commit(s) neither merged nor pushed") && said.contains("--force")
    );
    assert!(two_path.exists(), "nothing removed");
    let forced = env.stdout(&["worktree", "remove", "two", "--force"]);
    assert!(
        forced.contains("kept as refs/nightshift/salvage/") && forced.contains("nightshift/two is kept"),
        "{forced}"
    );
    assert!(!two_path.exists());
    assert_eq!(git(&repo, &["rev-list", "--count", &format!("{base}..nightshift/two")]), "2", "its commits are kept");
}

#[test]
fn a_start_that_cannot_have_its_worktree_is_refused_in_one_line_and_leaves_nothing() {
    let env = Env::new();
    let root = configure(&env);
    let refused = |dir: &Path, name: &str| {
        let out = env.cmd(&["run", "--worktree", name, "--", "true"]).current_dir(dir).output().unwrap();
        assert!(!out.status.success(), "{name} in {} started", dir.display());
        let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
        assert_eq!(said.lines().count(), 1, "{said}");
        said
    };
    let plain = env.path("plain");
    std::fs::create_dir_all(&plain).unwrap();
    assert!(refused(&plain, "x").contains("is not in a git repository"));
    let bare = env.path("bare.git");
    std::fs::create_dir_all(&bare).unwrap();
    git(&bare, &["init", "-q", "--bare"]);
    assert!(refused(&bare, "x").contains("is a bare repository"));
    let fresh = env.path("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    git(&fresh, &["init", "-q"]);
    assert!(refused(&fresh, "x").contains("has no commit yet"));
    let repo = users_repo(&env);
    assert!(refused(&repo, "a b").contains("is not a name git takes"));
    git(&repo, &["branch", "nightshift/taken"]);
    assert!(refused(&repo, "taken").contains("the branch nightshift/taken exists already"));
    // A folder left from a crash: refused, not reused.
    let left = nightshift::git::worktree::folder(&root, &std::fs::canonicalize(&repo).unwrap()).join("left");
    std::fs::create_dir_all(&left).unwrap();
    assert!(refused(&repo, "left").contains("exists already"));
    // A start refused for another reason makes no worktree.
    let out = env
        .cmd(&["run", "--worktree", "never", "--preset", "no-such", "--", "true"])
        .current_dir(&repo)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(git(&repo, &["branch", "--list", "nightshift/never"]).is_empty(), "no branch made");
    // A detached HEAD works from its commit.
    let head = git(&repo, &["rev-parse", "HEAD"]);
    git(&repo, &["checkout", "-q", "--detach"]);
    let out = env.cmd(&["run", "--worktree", "detached", "--", "true"]).current_dir(&repo).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(git(&repo, &["rev-parse", "nightshift/detached"]), head);
}
