//! Sessions in worktrees (`nightshift run --worktree`), with real git repositories and the real
//! binary: two sessions on one repository each commit on a branch of their own in a folder outside
//! the user's checkout, which stays byte for byte as it was (index, HEAD, refs, stash, status, its
//! files); `worktree list`, `show` and the digest tell each one's work; removal refuses to lose
//! work unless forced; bad starts are refused in one line and leave nothing behind. Loops with
//! `--worktree` and `--worktree-per-task` do the same, one branch for the loop or one per task.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{read_events, Env};

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
        .flat_map(|s| s["worktrees"].as_array().cloned().unwrap_or_default())
        .filter_map(|w| Some((w["branch"].as_str()?.to_string(), w["ahead"].as_u64()?)))
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

/// The worktree of a session named `name` whose command commits once on its branch, and where it is.
fn worktree_with_a_commit(env: &Env, repo: &Path, name: &str) -> PathBuf {
    let made = commit_in_worktree(env, repo, name, 1);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    PathBuf::from(
        git(repo, &["worktree", "list", "--porcelain"])
            .lines()
            .filter_map(|l| l.strip_prefix("worktree "))
            .find(|p| p.ends_with(&format!("/{name}")))
            .expect("listed by git"),
    )
}

/// Work committed on a detached HEAD in the worktree is at risk like any commit: the removal is
/// refused, and forced it still leaves the commit reachable, saying where.
#[test]
fn a_commit_on_a_detached_head_in_the_worktree_is_never_dropped() {
    let env = Env::new();
    configure(&env);
    let repo = users_repo(&env);
    let wt = worktree_with_a_commit(&env, &repo, "loose");
    // Its branch merged, so the branch alone would say there is nothing to lose.
    git(&repo, &["stash", "-q", "--include-untracked"]);
    git(&repo, &["merge", "-q", "--ff-only", "nightshift/loose"]);
    git(&wt, &["checkout", "-q", "--detach"]);
    std::fs::write(wt.join("loose.txt"), "on a detached HEAD\n").unwrap();
    git(&wt, &["add", "loose.txt"]);
    git(&wt, &["commit", "-qm", "Work on a detached HEAD"]);
    let loose = git(&wt, &["rev-parse", "HEAD"]);

    let refused = env.output(&["worktree", "remove", "loose"]);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success(),
        "removed with a commit only its HEAD holds: {}",
        String::from_utf8_lossy(&refused.stdout)
    );
    assert!(said.contains("1 commit(s) on its detached HEAD") && said.contains("--force"), "{said}");
    assert!(wt.exists(), "nothing removed");

    let forced = env.output(&["worktree", "remove", "loose", "--force"]);
    assert!(forced.status.success(), "{}", String::from_utf8_lossy(&forced.stderr));
    let told = String::from_utf8_lossy(&forced.stdout);
    assert!(!wt.exists());
    let kept = git(&repo, &["for-each-ref", "--format=%(refname)", "--points-at", &loose]);
    assert!(!kept.is_empty(), "the commit is reachable from a ref: {told}");
    assert!(told.contains(kept.lines().next().unwrap()), "and the user is told which: {told}");
}

/// A worktree whose state git cannot read (its index is corrupt) is at risk, never "nothing to
/// lose"; and a removal of a clean, merged one does not force git.
#[test]
fn a_worktree_git_cannot_read_is_not_removed_without_force() {
    let env = Env::new();
    configure(&env);
    let repo = users_repo(&env);
    let wt = worktree_with_a_commit(&env, &repo, "broken");
    git(&repo, &["stash", "-q", "--include-untracked"]);
    git(&repo, &["merge", "-q", "--ff-only", "nightshift/broken"]);
    let index = PathBuf::from(git(&wt, &["rev-parse", "--git-path", "index"]));
    let index = if index.is_absolute() { index } else { wt.join(index) };
    std::fs::write(&index, b"DIRC not an index at all").unwrap();
    let refused = env.output(&["worktree", "remove", "broken"]);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success(),
        "removed though git could not read it: {}",
        String::from_utf8_lossy(&refused.stdout)
    );
    assert!(said.contains("could not be read") && said.contains("--force"), "{said}");
    assert!(wt.exists(), "nothing removed");

    // A clean, merged one goes, and a locked one stays locked: git is not forced past the lock.
    let other = worktree_with_a_commit(&env, &repo, "locked");
    git(&repo, &["merge", "-q", "--ff-only", "nightshift/locked"]);
    git(&repo, &["worktree", "lock", other.to_str().unwrap()]);
    let out = env.output(&["worktree", "remove", "locked"]);
    assert!(!out.status.success() && other.exists(), "a locked worktree is not removed unless forced");
    assert!(String::from_utf8_lossy(&out.stderr).contains("locked"), "{}", String::from_utf8_lossy(&out.stderr));
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

/// A repository whose committed `TASKS.md` lists `tasks`, with an unstaged edit and an untracked
/// file of the user's; and a harness that commits what it is asked into `done.txt`, then says the
/// stream of a quick successful turn.
fn loop_project(env: &Env, tasks: &[&str]) -> (PathBuf, PathBuf) {
    let repo = env.path("looped");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    let list: String = tasks.iter().map(|t| format!("- [ ] {t}\n")).collect();
    std::fs::write(repo.join("TASKS.md"), list).unwrap();
    std::fs::write(repo.join("README"), "the project\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "Tasks"]);
    std::fs::write(repo.join("README"), "the project, half edited\n").unwrap();
    std::fs::write(repo.join("mine.txt"), "mine\n").unwrap();
    let stream = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-code/2.1.332/headless/stream-json-fast.jsonl");
    let harness = env.path("fake-claude");
    let script = format!(
        "#!/bin/sh\nprintf '%s\\n' \"$2\" >> done.txt\ngit add done.txt\n\
         git -c user.name=a -c user.email=a@a commit -qm \"did a task\"\ncat {}\n",
        stream.display()
    );
    std::fs::write(&harness, script).unwrap();
    std::fs::set_permissions(&harness, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    (repo, harness)
}

/// Everything of the loop's checkout a loop must leave as it was, its tasks file included.
fn checkout(repo: &Path) -> Vec<String> {
    let mut out = vec![
        git(repo, &["rev-parse", "HEAD"]),
        git(repo, &["symbolic-ref", "HEAD"]),
        git(repo, &["status", "--porcelain=v2", "--untracked-files=all"]),
        format!("{:?}", std::fs::read(repo.join(".git/index")).unwrap()),
    ];
    for file in ["TASKS.md", "README", "mine.txt"] {
        out.push(std::fs::read_to_string(repo.join(file)).unwrap());
    }
    out
}

#[test]
fn a_loop_with_a_worktree_per_task_leaves_a_branch_for_each_and_a_clean_checkout() {
    let env = Env::new();
    let root = configure(&env);
    let (repo, harness) = loop_project(&env, &["Add the login page", "Write the docs", "Fix the build"]);
    let before = checkout(&repo);
    let events = env.path("loop.jsonl");
    let out = env
        .cmd(&[
            "loop",
            "--no-sandbox",
            "--program",
            harness.to_str().unwrap(),
            "--tasks",
            "TASKS.md",
            "--worktree",
            "night",
        ])
        .args(["--worktree-per-task", "--events", events.to_str().unwrap()])
        .current_dir(&repo)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("works in a new worktree in ") && said.contains("nightshift/night-"), "{said}");
    assert_eq!(checkout(&repo), before, "the checkout, its tasks file too, is as it was");

    let base = git(&repo, &["rev-parse", "HEAD"]);
    let branches = git(&repo, &["branch", "--list", "nightshift/*", "--format=%(refname:short)"]);
    assert_eq!(
        branches.lines().collect::<Vec<_>>(),
        [
            "nightshift/night-1-add-the-login-page",
            "nightshift/night-2-write-the-docs",
            "nightshift/night-3-fix-the-build"
        ]
    );
    for (branch, task) in branches.lines().zip(["Add the login page", "Write the docs", "Fix the build"]) {
        assert_eq!(git(&repo, &["rev-list", "--count", &format!("{base}..{branch}")]), "1", "{branch}");
        let done = git(&repo, &["show", &format!("{branch}:done.txt")]);
        assert!(done.contains(task) && done.lines().count() == 1, "{branch} did only its task: {done}");
    }
    let all = read_events(&events);
    let made: Vec<&str> =
        all.iter().filter(|e| e["event"] == "worktree_made").filter_map(|e| e["task"].as_str()).collect();
    assert_eq!(made, ["Add the login page", "Write the docs", "Fix the build"]);
    assert_eq!(all.iter().filter(|e| e["event"] == "task_done").count(), 3);
    for e in all.iter().filter(|e| e["event"] == "worktree_made") {
        assert!(Path::new(e["worktree"]["path"].as_str().unwrap()).starts_with(&root));
    }

    let list = env.stdout(&["worktree", "list"]);
    assert_eq!(list.lines().filter(|l| l.contains("1 commit") && l.contains("task: ")).count(), 3, "{list}");
    let text = env.stdout(&["digest"]);
    assert!(
        text.contains("worktree: nightshift/night-2-write-the-docs at ") && text.contains("(task: Write the docs)"),
        "{text}"
    );
    assert!(env.stdout(&["worktree", "show", "night-3-fix-the-build"]).contains("task:   Fix the build"));
}

#[test]
fn a_loop_with_one_worktree_works_every_task_on_its_branch_and_bad_starts_are_refused() {
    let env = Env::new();
    configure(&env);
    let (repo, harness) = loop_project(&env, &["One", "Two"]);
    let before = checkout(&repo);
    let out = env
        .cmd(&[
            "loop",
            "--no-sandbox",
            "--program",
            harness.to_str().unwrap(),
            "--tasks",
            "TASKS.md",
            "--worktree",
            "all",
        ])
        .current_dir(&repo)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("on nightshift/all"));
    assert_eq!(checkout(&repo), before);
    let base = git(&repo, &["rev-parse", "HEAD"]);
    assert_eq!(git(&repo, &["rev-list", "--count", &format!("{base}..nightshift/all")]), "2");
    assert_eq!(git(&repo, &["show", "nightshift/all:done.txt"]).lines().count(), 2, "both tasks, one after the other");
    let list = env.stdout(&["worktree", "list"]);
    assert!(list.starts_with("nightshift/all ") && list.contains("2 commits"), "{list}");

    // A loop outside a repository, or one that cannot have its branch, is refused in one line.
    let taken = env
        .cmd(&[
            "loop",
            "--no-sandbox",
            "--program",
            harness.to_str().unwrap(),
            "--tasks",
            "TASKS.md",
            "--worktree",
            "all",
        ])
        .current_dir(&repo)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&taken.stderr);
    assert!(!taken.status.success() && said.contains("the branch nightshift/all exists already"), "{said}");
    let plain = env.path("plain");
    std::fs::create_dir_all(&plain).unwrap();
    std::fs::write(plain.join("TASKS.md"), "- [ ] x\n").unwrap();
    let refused = env
        .cmd(&[
            "loop",
            "--no-sandbox",
            "--program",
            harness.to_str().unwrap(),
            "--tasks",
            "TASKS.md",
            "--worktree-per-task",
        ])
        .current_dir(&plain)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && said.contains("is not in a git repository"), "{said}");
}
