//! The night as a whole, against the real Claude Code client and the project's mock API: a run
//! killed mid-turn comes back on its conversation with what it was armed with.

use crate::{common, mock_api};

use std::io::{BufRead, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::claude::{client, ClaudeRun, Options};
use common::{read_events, wait_for, KillOnDrop};
use mock_api::MockApi;
use serde_json::Value;

const NIGHT_TOKEN: &str = "sk-ant-oat01-mock-night-00000000000000000000000";
const OPENING: &str = "Work through TASKS.md, one step per turn.";

/// A session's options, asked over its owner's control socket.
fn options(run: &ClaudeRun, id: &str) -> Value {
    let sessions: Vec<Value> = serde_json::from_str(&run.env.stdout(&["sessions", "--json"])).unwrap();
    let socket = sessions.iter().find(|s| s["id"] == id).unwrap()["control_socket"].as_str().unwrap().to_string();
    let mut stream = std::os::unix::net::UnixStream::connect(socket).unwrap();
    writeln!(stream, "{}", serde_json::json!({"op": "options", "session": id})).unwrap();
    let mut line = String::new();
    std::io::BufReader::new(stream).read_line(&mut line).unwrap();
    serde_json::from_str::<Value>(&line).unwrap()["options"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_mid_turn_works_again_on_its_conversation_after_restore() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let opening = format!("{OPENING} mock:slow:60");
    let mut run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options {
            run_args: &["--preset", "overnight", "--idle-timeout", "600", "--max-cost-usd", "5", "--account", "night"],
            args: &[&opening],
            accounts: &[("night", NIGHT_TOKEN)],
            ..Default::default()
        },
    );
    let id = run.session();
    run.wait_state("working", 0, Duration::from_secs(60));
    let conversation = wait_for("the conversation's id", Duration::from_secs(20), || {
        run.events().into_iter().find(|e| e["event"] == "conversation").map(|e| e["id"].as_str().unwrap().to_string())
    });
    // Mid-turn: its answer is streaming.
    wait_for("the opening prompt's request", Duration::from_secs(30), || {
        mock.messages().iter().any(|r| r.last_user.contains(OPENING)).then_some(())
    });
    let armed = options(&run, &id);
    let until = armed["respawn_until"].clone();
    assert!(until.is_string(), "{armed}");

    // Nightshift itself is killed mid-turn (an OOM kill, a panic: no word to the journal).
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(run.child.id() as i32), nix::sys::signal::Signal::SIGKILL)
        .unwrap();
    run.child.wait().unwrap();
    let asked_before = mock.messages().len();

    let events = run.env.path("restore.jsonl");
    let started = Instant::now();
    let restore = KillOnDrop(
        run.cmd(&["restore", "--events", events.to_str().unwrap()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let restored = wait_for("the session working again", Duration::from_secs(60), || {
        read_events(&events).into_iter().find(|e| e["session"] == id.as_str() && e["state"] == "working")
    });
    let latency = started.elapsed();
    eprintln!("restore to working: {:.1} s", latency.as_secs_f64());
    assert!(latency < Duration::from_secs(30), "working again {latency:?} after `nightshift restore`: {restored}");

    let journal = read_events(&events);
    let said = journal.iter().find(|e| e["event"] == "restored").expect("the restore is journalled");
    assert!(said["reason"].as_str().unwrap().contains("respawn was armed"), "{said}");
    let start = journal.iter().find(|e| e["state"] == "starting").unwrap()["reason"].as_str().unwrap().to_string();
    assert!(start.contains(&format!("--resume {conversation}")), "the same conversation: {start}");
    // The conversation goes on with the kickstart; the opening prompt reached the API once.
    let asked = wait_for("the kickstart's request", Duration::from_secs(30), || {
        let all = mock.messages();
        (all.len() > asked_before).then_some(all)
    });
    let openings = asked.iter().filter(|r| r.last_user.contains(OPENING)).count();
    assert_eq!(
        openings,
        1,
        "the opening prompt was sent again: {:?}",
        asked.iter().map(|r| &r.last_user).collect::<Vec<_>>()
    );
    let after = &asked[asked_before];
    // The kickstart, said as Nightshift's.
    assert!(after.last_user.starts_with(nightshift::automated::MARKER), "{}", after.last_user);
    assert!(after.last_user.contains("] Continue the work."), "{}", after.last_user);
    assert_eq!(after.credential, NIGHT_TOKEN, "under its account");
    // What it was armed with: the same hours (not a fresh eight), its budget.
    let now = options(&run, &id);
    assert_eq!(now["respawn_until"], until, "{now}");
    assert_eq!(now["budget"]["max_cost_usd"], 5.0, "{now}");
    assert_eq!(now["preset"], "overnight");

    run.env.stdout(&["stop", &id]);
    let mut restore = restore;
    let status = wait_for("restore to end", Duration::from_secs(20), || restore.0.try_wait().unwrap());
    assert!(status.success());
}

// ---- The night rehearsal -------------------------------------------------------------------------

/// Commits in the project since its first one.
fn commits(dir: &std::path::Path) -> usize {
    common::git_in(dir, &["rev-list", "--count", "HEAD"], false).trim().parse::<usize>().unwrap() - 1
}

/// Waits until the project has more commits than `than`: the work goes on.
fn work_goes_on(run: &ClaudeRun, than: usize, after: &str) -> usize {
    let started = std::time::Instant::now();
    loop {
        let n = commits(&run.workdir);
        if n > than {
            return n;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "no commit after {after}:\n{}\n{}",
            run.env.stdout(&["journal"]),
            run.env.stdout(&["log", &run.session()])
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every event of the night so far, from the journal (whichever process wrote it).
fn journal(run: &ClaudeRun, id: &str) -> Vec<Value> {
    common::json_lines(&run.env.stdout(&["journal", "--json", "--session", id]))
}

fn count(events: &[Value], f: impl Fn(&Value) -> bool) -> usize {
    events.iter().filter(|e| f(e)).count()
}

/// `nightshift restore ARGS` in the run's environment, its events and what it says kept as `name`.
fn restore(run: &ClaudeRun, name: &str, args: &[&str]) -> (KillOnDrop, std::path::PathBuf) {
    let events = run.env.path(&format!("{name}.jsonl"));
    let out = std::fs::File::create(run.env.path(&format!("{name}.out"))).unwrap();
    let child = run
        .cmd(&["restore", "--events", events.to_str().unwrap()])
        .args(args)
        .env("NIGHTSHIFT_LOG", "nightshift=info")
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap();
    (KillOnDrop(child), events)
}

/// What a `restore` said, and the session's journal, for a failure's message.
fn said(run: &ClaudeRun, name: &str) -> String {
    let out = std::fs::read_to_string(run.env.path(&format!("{name}.out"))).unwrap_or_default();
    format!("{out}\n{}", run.env.stdout(&["journal"]))
}

/// A 5-hour limit resetting `secs` from now (not on a minute: the notice says the minute, the
/// client's data the second), and the next request meets it.
fn limit_in(mock: &MockApi, secs: u64) -> std::time::SystemTime {
    let now = mock_api::epoch(std::time::SystemTime::now());
    let reset = now + secs;
    mock.set_usage(mock_api::Usage {
        five_hour: 0.97,
        five_hour_reset: reset,
        seven_day: 0.4,
        seven_day_reset: now + 3 * 86400,
    });
    mock.set_default("limit");
    std::time::UNIX_EPOCH + Duration::from_secs(reset)
}

/// The limit's wait was slept through: the inhibitors let go with a wake alarm 5 s before the
/// resume was due, and the alarm went off (the helper, run as root, has `CAP_WAKE_ALARM`; without
/// it, the wait is held and the journal says why).
fn slept_through_the_wait(events: &[Value]) {
    let sleeps: Vec<&Value> = events.iter().filter(|e| e["event"] == "sleep").collect();
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let caps = status.lines().find_map(|l| l.strip_prefix("CapEff:")).map(str::trim).unwrap_or("0");
    if !u64::from_str_radix(caps, 16).is_ok_and(|c| c >> 35 & 1 == 1) {
        assert!(sleeps.iter().any(|e| e["action"] == "refused"), "{sleeps:#?}");
        return;
    }
    let due = events
        .iter()
        .filter(|e| e["event"] == "resume_armed")
        .map(|e| e["due"].as_str().unwrap().parse::<chrono::DateTime<chrono::Utc>>().unwrap())
        .next_back()
        .unwrap();
    // The last alarm set (an earlier one moves when the reset is learnt to the second).
    let allowed = sleeps.iter().rfind(|e| e["action"] == "allowed").unwrap_or_else(|| panic!("{sleeps:#?}"));
    let at: chrono::DateTime<chrono::Utc> = allowed["at"].as_str().unwrap().parse().unwrap();
    assert_eq!(allowed["due"].as_str().map(|d| d.parse::<chrono::DateTime<chrono::Utc>>().unwrap()), Some(due));
    assert_eq!(due - at, chrono::Duration::seconds(5), "the alarm 5 s before the resume: {allowed}");
    assert!(allowed["reason"].as_str().unwrap().contains("a resume after the usage limit is due at"), "{allowed}");
    let woken = sleeps.iter().find(|e| e["action"] == "woken").unwrap_or_else(|| panic!("{sleeps:#?}"));
    assert_eq!(woken["at"], allowed["at"], "{woken}");
    eprintln!("slept through the wait, woken by the alarm at {at} for the resume at {due}");
}

/// The night's standing instructions, given with `--standing`.
const STANDING: &str = "Tonight: only the steps of TASKS.md; never force-push.";

/// Words only an input Nightshift typed by itself has: a resume, a kickstart, an update prompt, a
/// handoff request (a Stop hook's block), a handoff given back.
const AUTOMATED_WORDS: [&str; 5] =
    ["continue", "Continue the work", "Before your context is reset", "handoff for your next self", "Your handoff"];

/// One compressed night against the real client and the mock API, in a git repository: turns
/// that commit, a usage limit, the client killed, a question answered from the phone, the context past the
/// handoff threshold, Nightshift itself SIGKILLed and restored, and Nightshift ended with a resume
/// pending (a Quit, a logout: SIGTERM) and started again. After each, the work goes on; no request
/// goes into a refused window, the opening prompt is sent once, each need is pushed once, and the
/// morning's counts are the journal's and git's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compressed_night_goes_on_after_everything_it_brings() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    mock.set_default("commit");
    let ntfy = common::ntfy::Fake::start();
    // Waits of 20 s or more sleep, woken 5 s before their end: the night's clock, scaled.
    let config = format!(
        "[push]\nntfy = \"{}\"\nlisten = \"{}\"\n[sleep]\nmin_wait = 20\nwake_before = 5\n[pace]\nweekly_pace = 5\n",
        ntfy.url("night"),
        ntfy.url("answers")
    );
    let key = nightshift::phone::Key::generate().to_hex();
    let opening = format!("{OPENING} mock:commit");
    // The project's remote and the package index its .npmrc names, each on an address of its own:
    // every step after the first fetches from the index and pushes, inside the default fence.
    let scratch = common::Env::new();
    let bare = scratch.path("srv/remote.git");
    std::fs::create_dir_all(&bare).unwrap();
    common::git_in(&bare, &["init", "-q", "--bare", "-b", "main"], false);
    let remote = common::hosts::git_server("127.0.0.2", &bare).await;
    let index = common::hosts::index("127.0.0.3", &[("/left-pad", "{\"name\":\"left-pad\"}")]).await;
    let origin = format!("{}/remote.git", remote.url());
    let npmrc = format!("registry={}/\n", index.url());
    let work = format!(
        "bash echo \"step $(date +%s%N)\" >> work.txt && git add work.txt && \
         git -c user.name=agent -c user.email=agent@example.com commit -qm 'Do the next step' && \
         curl -sSf {}/left-pad -o /dev/null && git push -q origin HEAD:main",
        index.url()
    );
    let mut run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options {
            run_args: &[
                "--preset",
                "overnight",
                "--idle-timeout",
                "2",
                "--user-quiet",
                "0",
                "--inter-step-delay",
                "0.5",
                "--auto-resume",
                "--handoff-at",
                "75",
                "--standing",
                STANDING,
            ],
            args: &["--permission-mode", "acceptEdits", "--allowedTools=Bash", &opening],
            project: &[
                ("TASKS.md", "- [ ] one\n- [ ] two\n- [ ] three\n"),
                ("work.txt", ""),
                (".npmrc", &npmrc),
                ("package.json", "{\"name\":\"night\"}\n"),
            ],
            config: &config,
            config_files: &[("phone.key", &key)],
            remote: Some(&origin),
            ..Default::default()
        },
    );
    mock.set_default(&work);
    let dir = run.workdir.clone();
    let id = run.session();
    let night_started = chrono::Utc::now();
    let mut done = work_goes_on(&run, 1, "the opening turn and a cycle");
    eprintln!("phase: turns that commit ({done} commits)");

    // A 5-hour limit, its reset a minute out: the resume comes seconds after it.
    let reset1 = limit_in(&mock, 60);
    run.wait_state("limit_paused", 0, Duration::from_secs(60));
    mock.set_default(&work);
    done = work_goes_on(&run, done, "the limit's reset");
    eprintln!("phase: a limit ({done} commits)");
    slept_through_the_wait(&journal(&run, &id));

    // The weekly pace (5 points of slack): a week two days old that has spent 40 % (day 2 allows
    // 34 %) parks new cycles until its third day begins, a minute out; then the work goes on.
    let day3 = mock_api::epoch(std::time::SystemTime::now()) + 60;
    mock.set_usage(mock_api::Usage {
        five_hour: 0.3,
        five_hour_reset: day3 + 3 * 3600,
        seven_day: 0.4,
        seven_day_reset: day3 + 5 * 86400,
    });
    let parked = wait_for("the weekly pace's park", Duration::from_secs(60), || {
        journal(&run, &id).into_iter().find(|e| e["event"] == "paced" && e["until"].is_string())
    });
    assert!(parked["reason"].as_str().unwrap().starts_with("to keep the weekly pace: day 2 of the week"), "{parked}");
    let at_park = commits(&dir);
    let went_on = wait_for("the park's end", Duration::from_secs(90), || {
        journal(&run, &id).into_iter().find(|e| e["event"] == "paced" && e["until"].is_null())
    });
    let (from, to) = (parked["ts"].as_str().unwrap().to_string(), went_on["ts"].as_str().unwrap().to_string());
    let cycles_parked = count(&journal(&run, &id), |e| {
        e["event"] == "respawn"
            && e["action"] == "cycle_started"
            && e["ts"].as_str().is_some_and(|t| t > from.as_str() && t < to.as_str())
    });
    assert_eq!(cycles_parked, 0, "no cycle began while parked");
    done = work_goes_on(&run, done.max(at_park), "the weekly pace's park");
    eprintln!("phase: parked by the weekly pace ({done} commits)");

    // The client is killed: it is started again on its conversation.
    let pid = run.events().iter().rev().find_map(|e| e["pid"].as_u64()).unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    done = work_goes_on(&run, done, "the client's kill");
    eprintln!("phase: the client killed ({done} commits)");

    // A question, answered from the phone at a person's pace: its push's first button.
    mock.set_default("question");
    let asked = run.states().len();
    run.wait_state("waiting_input", asked.saturating_sub(1), Duration::from_secs(60));
    mock.set_default(&work);
    let button = wait_for("the question's buttons", Duration::from_secs(30), || {
        let pushed = ntfy.seen().into_iter().find(|p| p.path == "/night" && p.body.starts_with("Which database"))?;
        pushed.buttons().into_iter().next().map(|(_, body)| body)
    });
    tokio::time::sleep(Duration::from_secs(6)).await;
    ntfy.press("answers", &button);
    let answered = (0..300)
        .find_map(|_| {
            std::thread::sleep(Duration::from_millis(100));
            run.events().into_iter().find(|e| e["event"] == "dialog_answered" && e["dialog"] == "question")
        })
        .unwrap_or_else(|| {
            let told: Vec<String> = ntfy.seen().into_iter().map(|p| format!("{} {}", p.path, p.body)).collect();
            let around: Vec<String> = run.events().iter().rev().take(30).map(|e| e.to_string()).collect();
            panic!("the phone's answer was not journalled; pushed: {told:#?}; the last events: {around:#?}")
        });
    assert_eq!(answered["by"], "phone", "{answered}");
    done = work_goes_on(&run, done, "the question");
    eprintln!("phase: a question ({done} commits)");

    // The context past the handoff threshold: a handoff, the reset, the work from it.
    mock.set_default("ctx:800000");
    wait_for("the handoff", Duration::from_secs(90), || {
        let events = run.events();
        if events.iter().any(|e| e["event"] == "handoff_asked") {
            mock.set_default(&work);
        }
        events.into_iter().find(|e| e["event"] == "handoff")
    });
    mock.set_default(&work);
    work_goes_on(&run, done, "the handoff");
    // Three more cycles after it: each starts from the progress note and the repository, not
    // from the handoff, which went to the conversation after its reset.
    let cycles = |run: &ClaudeRun| count(&run.events(), |e| e["event"] == "respawn" && e["action"] == "cycle_started");
    let after_handoff = cycles(&run);
    wait_for("three cycles after the handoff", Duration::from_secs(120), || {
        (cycles(&run) >= after_handoff + 3).then_some(())
    });
    done = commits(&dir);
    eprintln!("phase: a handoff, then three cycles ({done} commits)");

    // Nightshift itself is SIGKILLed mid-turn while a keeper runs (as the app, or the user service,
    // does): the keeper takes the night over within seconds, nobody typing `restore`.
    let (mut restore1, events1) = restore(&run, "restore1", &["--keep"]);
    wait_for("the keeper to keep", Duration::from_secs(20), || {
        std::fs::read_to_string(run.env.path("restore1.out")).ok().filter(|o| o.contains("Keeping the night"))
    });
    mock.set_default("slow:30");
    let turns = mock.messages().len();
    wait_for("a slow turn under way", Duration::from_secs(60), || {
        mock.messages().iter().skip(turns).any(|r| r.scenario.starts_with("slow")).then_some(())
    });
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(run.child.id() as i32), nix::sys::signal::Signal::SIGKILL)
        .unwrap();
    run.child.wait().unwrap();
    mock.set_default(&work);
    let killed = Instant::now();
    let back = std::time::Instant::now();
    while !read_events(&events1).iter().any(|e| e["session"] == id.as_str() && e["state"] == "working") {
        assert!(
            back.elapsed() < Duration::from_secs(60),
            "not working again after the keeper took it over: {}",
            said(&run, "restore1")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("kill to working again, taken over by the keeper: {:.1} s", killed.elapsed().as_secs_f64());
    assert!(killed.elapsed() < Duration::from_secs(30), "working again {:?} after the kill", killed.elapsed());
    assert!(read_events(&events1).iter().any(|e| e["session"] == id.as_str() && e["event"] == "adopted"));
    done = work_goes_on(&run, done, "Nightshift's kill");
    eprintln!("phase: Nightshift killed, the keeper took the night over ({done} commits)");

    // A second limit; Nightshift ends while the resume is pending (Quit, a logout: SIGTERM).
    let paused_before = count(&read_events(&events1), |e| e["state"] == "limit_paused");
    let reset2 = limit_in(&mock, 70);
    wait_for("the second pause", Duration::from_secs(60), || {
        (count(&read_events(&events1), |e| e["state"] == "limit_paused") > paused_before).then_some(())
    });
    mock.set_default(&work);
    // Its reset to the second, from the client's data, is in the journal before Nightshift ends
    // (its notice gives only the minute).
    wait_for("the exact reset journalled", Duration::from_secs(30), || {
        read_events(&events1)
            .into_iter()
            .rev()
            .find(|e| e["event"] == "usage" && e["five_hour_pct"].as_f64().is_some_and(|p| p >= 100.0))
    });
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(restore1.0.id() as i32), nix::sys::signal::Signal::SIGTERM)
        .unwrap();
    wait_for("the first restore to end", Duration::from_secs(20), || restore1.0.try_wait().unwrap());
    assert!(read_events(&events1).iter().any(|e| e["event"] == "resume_kept"), "the pending resume is kept");
    let (mut restore2, _events2) = restore(&run, "restore2", &[]);
    let reset_wait = reset2.duration_since(std::time::SystemTime::now()).unwrap_or_default() + Duration::from_secs(60);
    let resumed = std::time::Instant::now();
    while commits(&dir) <= done {
        assert!(resumed.elapsed() < reset_wait, "no commit after the second reset: {}", said(&run, "restore2"));
        std::thread::sleep(Duration::from_millis(100));
    }
    done = commits(&dir);
    eprintln!("phase: ended with a resume pending, started again ({done} commits)");

    // The morning.
    run.env.stdout(&["stop", &id]);
    wait_for("the night's end", Duration::from_secs(30), || restore2.0.try_wait().unwrap());
    let night_ended = chrono::Utc::now();
    let events = journal(&run, &id);
    let asked = mock.messages();

    // No request went into a refused window.
    let refused: Vec<_> = asked.iter().filter(|r| r.scenario == "refused").collect();
    assert!(
        refused.is_empty(),
        "requests into a window still refused: {:?}\n{}",
        refused
            .iter()
            .map(|r| (
                chrono::DateTime::<chrono::Utc>::from(r.at).to_rfc3339(),
                r.last_user.chars().rev().take(120).collect::<String>()
            ))
            .collect::<Vec<_>>(),
        run.env.stdout(&["journal"])
    );
    // The resume came seconds after each reset.
    let mut latencies = Vec::new();
    for reset in [reset1, reset2] {
        let first = asked.iter().find(|r| r.at >= reset && r.status == 200).expect("a request after the reset");
        latencies.push(first.at.duration_since(reset).unwrap().as_secs_f64());
    }
    latencies.sort_by(f64::total_cmp);
    eprintln!(
        "limit resume latency: median {:.1} s, worst {:.1} s over {} limits",
        latencies[latencies.len() / 2],
        latencies.last().unwrap(),
        latencies.len()
    );
    assert!(*latencies.last().unwrap() <= 30.0, "a resume later than 30 s after its reset: {latencies:?}");
    // The opening prompt reached the API once.
    assert_eq!(asked.iter().filter(|r| r.last_user.contains(OPENING)).count(), 1, "the opening prompt was sent again");
    // Every input Nightshift typed by itself said so, with the night's standing instructions; the
    // user's own opening prompt did not.
    let automated: Vec<&str> = asked
        .iter()
        .filter(|r| !r.last_user.starts_with("[tool_result]") && !r.last_user.contains(OPENING))
        .map(|r| r.last_user.as_str())
        .filter(|said| AUTOMATED_WORDS.iter().any(|w| said.contains(w)))
        .collect();
    let unmarked: Vec<&&str> = automated
        .iter()
        .filter(|said| !said.contains(nightshift::automated::MARKER) || !said.contains(STANDING))
        .collect();
    assert!(unmarked.is_empty(), "automated inputs without the marker or the standing instructions: {unmarked:?}");
    for (kind, words) in [("resume", "] continue"), ("kickstart", "] Continue the work")] {
        let n = automated.iter().filter(|said| said.contains(words)).count();
        assert!(n >= 1, "no marked {kind} reached the API: {automated:?}");
    }
    assert!(!asked
        .iter()
        .any(|r| r.last_user.contains(OPENING) && r.last_user.contains(nightshift::automated::MARKER)));
    eprintln!("automated inputs in the request log: {}, every one marked", automated.len());

    // The journal's counts of the night.
    let limits = count(&events, |e| e["event"] == "limit_detected" && e["source"] != "journal");
    let restarts = count(&events, |e| e["event"] == "respawn" && e["action"] == "restart");
    // An adoption is the restore nobody typed.
    let adoptions = count(&events, |e| e["event"] == "adopted");
    let restores = count(&events, |e| e["event"] == "restored") + adoptions;
    assert_eq!(adoptions, 1, "the keeper took the night over once");
    let handoffs = count(&events, |e| e["event"] == "handoff");
    let questions = count(&events, |e| e["event"] == "dialog_answered" && e["dialog"] == "question");
    assert_eq!((limits, restores, handoffs, questions), (2, 2, 1, 1), "limits, restores, handoffs, questions");
    assert!(restarts >= 1, "the client's kill made a restart");

    // One push per need: the question once, each limit once, each restore once.
    let pushed = |kind: &str| count(&events, |e| e["event"] == "push_sent" && e["kind"] == kind);
    assert_eq!(pushed("question"), 1, "the question, pushed once");
    assert_eq!(pushed("limit"), 2, "each limit, pushed once");
    assert_eq!(pushed("answer"), 1, "the phone's button answered once");
    let presses = ntfy.seen().iter().filter(|p| p.path == "/answers").count();
    assert_eq!(
        ntfy.seen().len() - presses,
        count(&events, |e| e["event"] == "push_sent"),
        "every publish journalled once"
    );

    // The morning summary says the same as the journal and git.
    let range =
        format!("{}..{}", night_started.to_rfc3339(), (night_ended + chrono::Duration::seconds(1)).to_rfc3339());
    // The last step's push lands with its turn: then nothing of the night is only on this machine.
    let head = common::git_in(&dir, &["rev-parse", "HEAD"], false);
    // The night's steps pushed as they went; the last one may have been cut short by the phase that
    // ended Nightshift, and a push from inside Claude's sandbox can leave the project's origin/main
    // behind. The morning's fetch, and at most one push of what the night left, as a person's.
    let deadline = Instant::now() + Duration::from_secs(20);
    while common::git_in(&bare, &["rev-parse", "main"], true) != head && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    common::git_in(&dir, &["fetch", "-q", "origin"], false);
    let left = common::git_in(&dir, &["rev-list", "--count", "origin/main..HEAD"], false);
    assert!(left.trim().parse::<usize>().unwrap() <= 1, "the night left {left} commits unpushed");
    common::git_in(&dir, &["push", "-q", "origin", "HEAD:main"], false);
    let digest: Value =
        serde_json::from_str(&run.env.stdout(&["digest", "--range", &range, "--format", "json"])).unwrap();
    let session = digest["sessions"].as_array().unwrap().iter().find(|s| s["id"] == id.as_str()).unwrap().clone();
    let counts = &session["counts"];
    eprintln!("the morning's counts: {counts}");
    assert_eq!(counts["limits"], limits as u64, "{counts}");
    assert_eq!(counts["restarts"], restarts as u64, "{counts}");
    assert_eq!(counts["restores"], restores as u64, "{counts}");
    assert_eq!(counts["adoptions"], adoptions as u64, "{counts}");
    assert_eq!(counts["handoffs_written"], handoffs as u64, "{counts}");
    assert_eq!(count(&events, |e| e["event"] == "handoff_given"), 1, "one handoff, one conversation");
    assert_eq!(counts["handoffs_given"], 1, "{counts}");
    assert_eq!(counts["questions_answered"], questions as u64, "{counts}");
    assert_eq!((counts["phone_applied"].as_u64(), counts["phone_refused"].as_u64()), (Some(1), Some(0)), "{counts}");
    assert_eq!(counts["commits"], commits(&dir) as u64, "{counts}");
    // The remote and the index were reached through the default fence, and nothing was refused.
    let pushed = common::git_in(&bare, &["rev-list", "--count", "main"], true).trim().parse::<usize>().unwrap_or(0);
    assert!(pushed >= 4, "the night's steps reached the remote: {pushed} commits there of {}", commits(&dir) + 1);
    assert!(index.seen().iter().filter(|s| s.path == "/left-pad").count() >= 3, "the index served the steps");
    assert_eq!(count(&events, |e| e["event"] == "net_refused"), 0, "nothing of the project's was refused");
    assert!(count(&events, |e| e["event"] == "fence") >= 1, "each start journals its fence");
    let alarms = count(&events, |e| e["event"] == "sleep" && e["action"] == "woken");
    assert_eq!(counts["wake_alarms"], alarms as u64, "{counts}");
    // The parked stretch, with its reason, in the morning's digest.
    assert_eq!(counts["parked"], 1, "{counts}");
    let happened: Vec<&str> =
        session["happened"].as_array().unwrap().iter().filter_map(|h| h["text"].as_str()).collect();
    assert!(
        happened.iter().any(|t| t.starts_with("parked ") && t.contains("to keep the weekly pace: day 2 of the week")),
        "{happened:#?}"
    );
    assert!(session["needs_you"].as_array().is_none_or(|n| n.is_empty()), "nothing needs you: {session}");
}
