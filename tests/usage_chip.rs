//! The plan-usage chip: the statusLine exporter between a Claude session and the supervisor.

use crate::{common, mock_api};

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use common::claude::{client, ClaudeRun, Options};
use common::{wait_for, Env};
use mock_api::{epoch, MockApi, Usage};

const STATUS: &str = include_str!("fixtures/claude-code/2.1.332/statusline/statusline-stdin-1796042093977595111.json");

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap_or_default());
            }
        }
    }
    files
}

/// A fake `claude` that records how it was started, then waits.
fn fake_claude(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("claude");
    let record = dir.join("launch");
    std::fs::write(
        &script,
        format!(
            "#!/bin/bash\nenv > {rec}.env\nprintf '%s\\n' \"$@\" > {rec}.args\nexec sleep 100\n",
            rec = record.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

fn exporter(env: &[(String, String)], stdin: &[u8], cwd: &Path) -> (std::process::Output, Duration) {
    let mut cmd = Command::new(common::bin());
    cmd.arg("statusline").env_clear().env("PATH", "/usr/bin:/bin").current_dir(cwd);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let start = Instant::now();
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    (out, start.elapsed())
}

#[test]
fn the_exporter_is_passed_on_the_command_line_and_reports_with_the_sessions_token() {
    let env = Env::new();
    let claude = fake_claude(env.dir.path());
    let mut run = env.cmd(&["run", "--agent", "claude", "--", claude.to_str().unwrap(), "--model", "x"]);
    let mut child = run.stdin(Stdio::null()).stdout(Stdio::null()).spawn().unwrap();
    let launch = env.path("launch.args");
    let args = wait_for("the fake client to start", Duration::from_secs(10), || {
        std::fs::read_to_string(&launch).ok().filter(|t| t.lines().count() >= 4)
    });
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(args[0], "--settings");
    let settings: serde_json::Value = serde_json::from_str(args[1]).unwrap();
    let command = settings["statusLine"]["command"].as_str().unwrap();
    assert!(command.ends_with("nightshift statusline"), "{command}");
    assert_eq!(&args[2..], ["--model", "x"], "the user's arguments follow");
    let session_env: Vec<(String, String)> = std::fs::read_to_string(env.path("launch.env"))
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| k.starts_with("NIGHTSHIFT_"))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert!(session_env.iter().any(|(k, _)| k == "NIGHTSHIFT_TOKEN"));

    // Garbage: no panic, a line still printed, no sample.
    let (out, _) = exporter(&session_env, b"\x00\x01 not json {", env.dir.path());
    assert!(out.status.success());
    assert!(!out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    // A wrong token is refused.
    let forged: Vec<(String, String)> = session_env
        .iter()
        .map(|(k, v)| if k == "NIGHTSHIFT_TOKEN" { (k.clone(), "0".repeat(32)) } else { (k.clone(), v.clone()) })
        .collect();
    exporter(&forged, STATUS.as_bytes(), env.dir.path());
    let usage = || env.journal().into_iter().filter(|e| e["event"] == "usage").collect::<Vec<_>>();
    assert!(usage().is_empty(), "no sample from garbage or a forged token");

    // The real client's status JSON: one sample, and the same again adds nothing.
    let (out, _) = exporter(&session_env, STATUS.as_bytes(), env.dir.path());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "\x1b[32m5h 42%\x1b[0m · \x1b[32m7d 17%\x1b[0m · ctx 1%");
    exporter(&session_env, STATUS.as_bytes(), env.dir.path());
    let samples = usage();
    assert_eq!(samples.len(), 1, "{samples:?}");
    assert_eq!(samples[0]["five_hour_pct"], 42.0);
    let resets = chrono::DateTime::from_timestamp(1796052892, 0).unwrap();
    assert_eq!(samples[0]["five_hour_resets_at"], nightshift::clock::format_ts(resets));
    let text = env.stdout(&["usage"]);
    assert!(text.starts_with("5h 42% · 7d 17%"), "{text}");

    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    child.wait().unwrap();
}

#[test]
fn with_the_supervisor_gone_the_exporter_is_quick_and_prints_the_users_line() {
    let env = Env::new();
    let project = env.path("project");
    // A settings file where the client says it is: the exporter never reads it, only the command
    // the supervisor handed it as the session started.
    let marker = env.path("the-file-ran");
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    std::fs::write(
        project.join(".claude/settings.json"),
        serde_json::json!({"statusLine": {"command": format!("touch {}", marker.display())}}).to_string(),
    )
    .unwrap();
    let gone = vec![
        ("NIGHTSHIFT_CONTROL".to_string(), env.path("no-such.sock").display().to_string()),
        ("NIGHTSHIFT_TOKEN".to_string(), "f".repeat(32)),
        ("NIGHTSHIFT_SESSION".to_string(), "deadbeef".to_string()),
        ("NIGHTSHIFT_USER_STATUSLINE".to_string(), "printf 'MINE:'; head -c 14".to_string()),
        ("HOME".to_string(), env.path("home").display().to_string()),
    ];
    let status = STATUS.replace("/home/dev/src/project/run/statusline/ws", project.to_str().unwrap());
    let (out, took) = exporter(&gone, status.as_bytes(), env.dir.path());
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "MINE:{\"session_id\":", "the user's command, fed the same JSON");
    assert!(took < Duration::from_secs(1), "took {took:?}");
    assert!(!marker.exists(), "the exporter ran a command from a settings file");
    // Without a command handed over, its own line: still nothing read from the folder.
    let alone: Vec<(String, String)> =
        gone.iter().filter(|(k, _)| k != "NIGHTSHIFT_USER_STATUSLINE").cloned().collect();
    let (out, _) = exporter(&alone, status.as_bytes(), env.dir.path());
    assert!(String::from_utf8_lossy(&out.stdout).contains("5h 42%"), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(!marker.exists(), "the exporter ran a command from a settings file");

    // A socket that accepts but never answers costs a few hundred milliseconds, no more.
    let sock = env.path("silent.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let silent: Vec<(String, String)> =
        gone.iter()
            .map(|(k, v)| {
                if k == "NIGHTSHIFT_CONTROL" {
                    (k.clone(), sock.display().to_string())
                } else {
                    (k.clone(), v.clone())
                }
            })
            .collect();
    let (out, took) = exporter(&silent, status.as_bytes(), env.dir.path());
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("MINE:"));
    assert!(took < Duration::from_millis(900), "took {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_client_reports_the_plan_windows_and_the_users_files_stay_untouched() {
    let Some(claude) = client() else { return };
    let mock = MockApi::start().await.expect("the stand-in API starts");
    let now = epoch(SystemTime::now());
    let usage =
        Usage { five_hour: 0.63, five_hour_reset: now + 7200, seven_day: 0.21, seven_day_reset: now + 3 * 86400 };
    mock.set_usage(usage.clone());
    // The user's own statusLine, in the project's settings as the session starts (an attended,
    // unsandboxed one reads them as the client does); the client must still show it.
    let mine = r#"{"statusLine": {"type": "command", "command": "echo USER-STATUS-LINE"}}"#;
    let run = ClaudeRun::start(
        &claude,
        &mock.base_url(),
        Options { project: &[(".claude/settings.json", mine)], ..Options::default() },
    );
    let config = run.env.path("claude-config");
    // User settings as the client itself leaves them (it migrates older ones on start), so any
    // change would be someone else's.
    std::fs::write(
        config.join("settings.json"),
        "{\n  \"env\": {\n    \"DISABLE_AUTOUPDATER\": \"1\"\n  },\n  \"model\": \"sonnet\",\n  \"skipDangerousModePermissionPrompt\": true\n}\n",
    )
    .unwrap();
    let before_project = snapshot(&run.workdir);
    let settings_before = std::fs::read(config.join("settings.json")).unwrap();

    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("hello mock:slow:2", true);
    let (w, _, _) = run.wait_state("working", i + 1, Duration::from_secs(15));
    run.wait_state("idle", w + 1, Duration::from_secs(30));
    let sample = wait_for("a sample with the plan windows", Duration::from_secs(15), || {
        run.events().into_iter().find(|e| e["event"] == "usage" && e["five_hour_pct"].is_number())
    });
    assert_eq!(sample["five_hour_pct"], 63.0);
    assert_eq!(sample["seven_day_pct"], 21.0);
    let resets =
        |v: &serde_json::Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap().timestamp() as u64;
    assert_eq!(resets(&sample["five_hour_resets_at"]), usage.five_hour_reset);
    assert_eq!(resets(&sample["seven_day_resets_at"]), usage.seven_day_reset);

    let text = run.env.stdout(&["usage"]);
    assert!(text.starts_with("5h 63% · 7d 21%"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&run.env.stdout(&["usage", "--json"])).unwrap();
    assert_eq!(json["chip"], "5h 63% · 7d 21%");
    assert_eq!(json["bands"]["five_hour"], "yellow");
    assert_eq!(json["band"], "yellow", "the worse of 63 % and 21 %");
    assert_eq!(json["last_24h_hourly_five_hour_band"][23], "yellow", "this hour's bar");

    let screen = run.env.stdout(&["screen", &run.session()]);
    assert!(screen.contains("USER-STATUS-LINE"), "the user's statusLine still shows:\n{screen}");
    assert_eq!(snapshot(&run.workdir), before_project, "nothing under the project was written");
    assert_eq!(std::fs::read(config.join("settings.json")).unwrap(), settings_before);
    assert!(!config.join("settings.local.json").exists());
}
