//! Adoption on the real binary: a keeper (`nightshift restore --keep`) takes over, nobody asking,
//! the armed session of a `nightshift run` killed -9, and tells the run's terminal where it went;
//! two keepers racing for ten orphans take each once; an owner stopped within its lease keeps its
//! session, one stopped past it loses it to one keeper and stands down when it runs again.

use crate::common;

use std::process::{Child, Stdio};
use std::time::Duration;

use common::{wait_for, Env};

/// A lease of 40 s instead of a minute: an owner stopped for 20 s keeps its sessions (renewed every
/// 10 s, an adopter sees at most 33 s without a renewal), one stopped for a minute loses them.
fn lease_of_40_s(env: &Env) {
    std::fs::create_dir_all(env.path("config")).unwrap();
    std::fs::write(env.path("config").join("config.toml"), "[adoption]\nlease = 40\n").unwrap();
}

/// A keeper, ended with the test however it ends (a failed assertion included).
struct Keeper(Child);

impl Keeper {
    fn id(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn keeper(env: &Env, log: &str) -> Keeper {
    Keeper(
        env.cmd(&["restore", "--keep"])
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(env.path(log)).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// Ends a keeper as a logout would: its sessions stopped, their resumes kept.
fn stop(mut keeper: Keeper) {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(keeper.id() as i32), nix::sys::signal::SIGTERM);
    let _ = wait_for("the keeper to end", Duration::from_secs(20), || keeper.0.try_wait().unwrap());
}

/// An armed session (`--preset solo`) of a `run --detach`: its id and its run's pid.
fn armed_run(env: &Env) -> (String, i64) {
    armed_run_in(env, env.dir.path())
}

fn armed_run_in(env: &Env, cwd: &std::path::Path) -> (String, i64) {
    let cwd = cwd.to_str().unwrap();
    let args = ["run", "--detach", "--cwd", cwd, "--preset", "solo", "--", "bash", "-c", "echo working; sleep 600"];
    let out = env.output(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let owner = wait_for("the run to be running", Duration::from_secs(20), || {
        let row = session(env, &id);
        live(env, &id).then(|| row["owner_pid"].as_i64()).flatten()
    });
    (id, owner)
}

/// Whether a Nightshift runs session `id`'s agent now.
fn live(env: &Env, id: &str) -> bool {
    let row = session(env, id);
    row["standing"] == "live" && ["running", "idle", "working"].contains(&row["state"].as_str().unwrap_or_default())
}

fn session(env: &Env, id: &str) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = serde_json::from_str(&env.stdout(&["sessions", "--json"])).unwrap();
    rows.into_iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("session {id} listed"))
}

fn events_of(env: &Env, id: &str, name: &str) -> Vec<serde_json::Value> {
    env.journal().into_iter().filter(|e| e["session"] == id && e["event"] == name).collect()
}

fn signal(pid: i64, signal: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal).unwrap();
}

#[test]
fn a_killed_run_is_taken_over_by_the_keeper_and_its_terminal_hears_where() {
    let env = Env::new();
    let keeping = keeper(&env, "keeper.out");
    // The run in a terminal of its own, as a user starts it.
    let pair = portable_pty::native_pty_system().openpty(portable_pty::PtySize::default()).unwrap();
    let mut cmd = portable_pty::CommandBuilder::new(common::bin());
    cmd.args(["run", "--preset", "solo", "--", "bash", "-c", "echo working; sleep 600"]);
    for (k, v) in env.cmd(&[]).get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    cmd.env("TERM", "xterm-256color");
    cmd.cwd(env.dir.path());
    let mut run = pair.slave.spawn_command(cmd).unwrap();
    let mut reader = pair.master.try_clone_reader().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let into = std::sync::Arc::clone(&seen);
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = std::io::Read::read(&mut reader, &mut buf) {
            into.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let id = wait_for("the run's session", Duration::from_secs(20), || {
        let rows: Vec<serde_json::Value> = serde_json::from_str(&env.stdout(&["sessions", "--json"])).unwrap();
        rows.into_iter().find(|r| r["state"] == "running").and_then(|r| r["id"].as_str().map(String::from))
    });
    wait_for("the agent's output", Duration::from_secs(20), || seen.lock().unwrap().contains("working").then_some(()));
    let killed = std::time::Instant::now();
    signal(i64::from(run.process_id().unwrap()), nix::sys::signal::SIGKILL);
    let _ = run.wait();

    let adopted = wait_for("the keeper to adopt it", Duration::from_secs(30), || events_of(&env, &id, "adopted").pop());
    assert!(killed.elapsed() < Duration::from_secs(15), "adopted {:?} after the kill", killed.elapsed());
    assert!(adopted["by"].as_str().is_some_and(|b| b.starts_with("nightshift restore --keep (process")), "{adopted}");
    assert!(adopted["why"].as_str().is_some_and(|w| w.ends_with("was gone")), "{adopted}");
    wait_for("it to run again", Duration::from_secs(20), || live(&env, &id).then_some(()));
    assert_eq!(session(&env, &id)["owner_pid"].as_i64(), Some(i64::from(keeping.id())));
    // The terminal the run was started from says where the session went and how to see it.
    wait_for("the terminal to be told", Duration::from_secs(10), || {
        seen.lock().unwrap().contains(&format!("session {id} goes on in nightshift restore --keep")).then_some(())
    });
    assert!(seen.lock().unwrap().contains(&format!("`nightshift attach {id}`")));
    // The journal points at the keeper now: what reaches a session reaches it there.
    let screen = wait_for("its screen from the keeper", Duration::from_secs(10), || {
        let out = env.output(&["screen", &id]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (out.status.success() && text.contains("working")).then_some(text)
    });
    assert!(screen.contains("working"), "{screen}");
    assert_eq!(events_of(&env, &id, "adopted").len(), 1, "adopted once");
    drop(pair.master);
    stop(keeping);
}

#[test]
fn two_keepers_racing_for_ten_orphans_take_each_once() {
    let env = Env::new();
    let runs: Vec<(String, i64)> = (0..10).map(|_| armed_run(&env)).collect();
    let (a, b) = (keeper(&env, "a.out"), keeper(&env, "b.out"));
    // Past the keepers' first look, so these are adoptions and not their start's restore.
    std::thread::sleep(Duration::from_secs(4));
    for (_, owner) in &runs {
        signal(*owner, nix::sys::signal::SIGKILL);
    }
    for (id, _) in &runs {
        wait_for("each orphan to run again", Duration::from_secs(60), || {
            let row = session(&env, id);
            (live(&env, id) && !runs.iter().any(|(_, o)| row["owner_pid"].as_i64() == Some(*o))).then_some(())
        });
    }
    std::thread::sleep(Duration::from_secs(4));
    let keepers = [i64::from(a.id()), i64::from(b.id())];
    for (id, _) in &runs {
        let adopted = events_of(&env, id, "adopted");
        assert_eq!(adopted.len(), 1, "{id}: {adopted:?}");
        assert!(events_of(&env, id, "restored").is_empty(), "{id}: an adoption is its restore");
        assert!(keepers.contains(&session(&env, id)["owner_pid"].as_i64().unwrap()));
    }
    stop(a);
    stop(b);
}

#[test]
fn an_owner_stopped_within_its_lease_keeps_its_session_and_one_stopped_past_it_stands_down() {
    let env = Env::new();
    lease_of_40_s(&env);
    let (id, owner) = armed_run(&env);
    let keeping = keeper(&env, "keeper.out");
    std::thread::sleep(Duration::from_secs(4));
    // Stopped for 20 s (swapping, a debugger): nobody takes it.
    signal(owner, nix::sys::signal::SIGSTOP);
    std::thread::sleep(Duration::from_secs(20));
    signal(owner, nix::sys::signal::SIGCONT);
    std::thread::sleep(Duration::from_secs(15));
    assert!(events_of(&env, &id, "adopted").is_empty(), "an owner paused within its lease keeps its session");
    assert_eq!(session(&env, &id)["owner_pid"].as_i64(), Some(owner));

    // Stopped past it: the keeper takes it over.
    signal(owner, nix::sys::signal::SIGSTOP);
    let adopted = wait_for("the keeper to adopt it", Duration::from_secs(70), || events_of(&env, &id, "adopted").pop());
    assert!(adopted["why"].as_str().is_some_and(|w| w.contains("had not renewed its lease")), "{adopted}");
    wait_for("it to run again", Duration::from_secs(20), || {
        (session(&env, &id)["owner_pid"].as_i64() == Some(i64::from(keeping.id())) && live(&env, &id)).then_some(())
    });
    let before = env.journal().into_iter().filter(|e| e["session"] == id.as_str()).count();
    // The keeper's agent, which the old owner must leave alone.
    let agent = env
        .journal()
        .into_iter()
        .rev()
        .find(|e| e["session"] == id.as_str() && e["state"] == "running")
        .and_then(|e| e["pid"].as_i64())
        .expect("the keeper's agent");
    // Woken, the old owner stands down: it ends, and journals nothing of the session.
    signal(owner, nix::sys::signal::SIGCONT);
    wait_for("the old owner to end", Duration::from_secs(20), || {
        (!std::path::Path::new(&format!("/proc/{owner}")).exists()
            || std::fs::read_to_string(format!("/proc/{owner}/stat")).is_ok_and(|s| s.contains(") Z ")))
        .then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    let after: Vec<_> = env.journal().into_iter().filter(|e| e["session"] == id.as_str()).collect();
    let new: Vec<_> = after[before..].iter().filter(|e| e["event"] != "usage" && e["event"] != "awake").collect();
    assert!(new.iter().all(|e| e["state"] != "exited" && e["state"] != "failed"), "{new:?}");
    assert!(live(&env, &id), "{}", session(&env, &id));
    assert_eq!(session(&env, &id)["owner_pid"].as_i64(), Some(i64::from(keeping.id())));
    assert!(std::path::Path::new(&format!("/proc/{agent}")).exists(), "the keeper's agent {agent} untouched");
    stop(keeping);
}

#[test]
fn a_session_whose_folder_is_gone_is_never_brought_back_into_it() {
    let env = Env::new();
    let project = env.path("project");
    std::fs::create_dir(&project).unwrap();
    let (id, owner) = armed_run_in(&env, &project);
    signal(owner, nix::sys::signal::SIGKILL);
    std::fs::remove_dir_all(&project).unwrap();
    let said = env.stdout(&["restore"]);
    assert!(said.contains(&format!("Left session {id} as it is: its folder {} is gone", project.display())), "{said}");
    assert!(!project.exists(), "nothing made it again");
    assert!(events_of(&env, &id, "restored").is_empty() && events_of(&env, &id, "adopted").is_empty());
}
