use super::*;

fn perms(mode: Option<&str>, allow: usize, base_url: Option<&str>, root: bool) -> Permissions {
    Permissions { mode: mode.map(String::from), allow, base_url: base_url.map(String::from), root }
}

#[test]
fn permission_modes_that_stall_or_refuse_an_unattended_session_are_named() {
    let judge = |p| judge_permissions("cwd.0.permissions", "~/api", &p);
    assert_eq!(judge(perms(Some("bypassPermissions"), 0, None, true)).status, Status::Fail);
    assert_eq!(judge(perms(Some("bypassPermissions"), 0, None, false)).status, Status::Warn);
    let gateway = judge(perms(None, 3, Some("http://127.0.0.1:9"), false));
    assert_eq!(gateway.status, Status::Warn);
    assert!(gateway.detail.contains("classifier is not reached"), "{gateway:?}");
    assert_eq!(judge(perms(None, 0, None, false)).status, Status::Pass, "auto with its classifier");
    let bare = judge(perms(Some("default"), 0, None, false));
    assert_eq!(bare.status, Status::Warn);
    assert!(bare.remedy.as_deref().unwrap().contains("permissions.allow"));
    assert_eq!(judge(perms(Some("acceptEdits"), 0, None, false)).status, Status::Warn);
    assert_eq!(judge(perms(Some("acceptEdits"), 2, None, false)).status, Status::Pass);
    assert_eq!(judge(perms(Some("plan"), 2, None, false)).status, Status::Warn);
}

#[test]
fn free_disk_below_a_gigabyte_warns_and_below_100_megabytes_fails() {
    const MB: u64 = 1 << 20;
    assert_eq!(judge_disk(50 * MB, "/s").status, Status::Fail);
    assert_eq!(judge_disk(500 * MB, "/s").status, Status::Warn);
    assert_eq!(judge_disk(500 * MB, "/s").detail, "500 MB free in /s");
    assert_eq!(judge_disk(20 * 1024 * MB, "/s").detail, "20 GB free in /s");
    assert_eq!(judge_disk(20 * 1024 * MB, "/s").status, Status::Pass);
}

#[test]
fn a_version_other_than_the_verified_one_warns() {
    assert_eq!(judge_version("claude", "2.1.332", Some("2.1.332")).status, Status::Pass);
    let newer = judge_version("claude", "2.2.0", Some("2.1.332"));
    assert_eq!(newer.status, Status::Warn);
    assert!(newer.detail.contains("verified on 2.1.332"), "{newer:?}");
    assert_eq!(newer.id, "harness.claude.version");
}

#[test]
fn battery_and_a_lid_that_suspends_warn() {
    let checks = judge_power(Some(true), Some("suspend"));
    assert_eq!(checks.iter().map(|c| c.status).collect::<Vec<_>>(), [Status::Warn, Status::Warn]);
    assert!(checks[1].remedy.as_deref().unwrap().contains("HandleLidSwitch=ignore"));
    let ac = judge_power(Some(false), Some("ignore"));
    assert_eq!(ac.iter().map(|c| c.status).collect::<Vec<_>>(), [Status::Pass, Status::Pass]);
    let unknown = judge_power(None, None);
    assert_eq!(unknown.len(), 1);
    assert_eq!(unknown[0].status, Status::Warn);
}

#[test]
fn the_probe_fails_on_a_still_screen_read_as_working_or_unread() {
    let working = ProbeRead::Working { signal: "the title `◐ Claude Code`".into(), quiet_ms: 1600 };
    let check = judge_probe("claude", Some("2.2.0"), &working, Some("/s/doctor/probe-claude.txt"));
    assert_eq!(check.status, Status::Fail);
    assert!(check.detail.contains("still for 1.6 s") && check.detail.contains("probe-claude.txt"), "{check:?}");
    assert_eq!(judge_probe("claude", None, &ProbeRead::Unknown, None).status, Status::Fail);
    assert_eq!(judge_probe("claude", Some("2.1.332"), &ProbeRead::Idle, None).status, Status::Pass);
    let trust = ProbeRead::Dialog { kind: "trust".into(), text: Some("Do you trust the files in this folder?".into()) };
    assert_eq!(judge_probe("claude", None, &trust, None).status, Status::Pass);
}

#[test]
fn a_repository_mid_rebase_fails_and_a_plain_folder_warns() {
    let plain = judge_repo(0, "/p", &RepoState::default());
    assert_eq!((plain.len(), plain[0].status), (1, Status::Warn));
    let rebasing = judge_repo(1, "/p", &RepoState { repo: true, operation: Some("rebase") });
    assert_eq!(rebasing[1].status, Status::Fail);
    assert_eq!(rebasing[1].id, "cwd.1.operation");
    assert!(rebasing[1].remedy.as_deref().unwrap().contains("git rebase --continue"));
}

#[test]
fn the_report_says_one_line_per_check_and_fails_on_any_fail() {
    let report = Report::new(vec![
        Check::pass("a", "config", "fine"),
        Check::warn("b", "power", "on battery", "plug it in"),
        Check::fail("c", "claude", "not on PATH", "install it"),
    ]);
    assert!(!report.ok);
    assert_eq!(report.counts, Counts { pass: 1, warn: 1, fail: 1, skip: 0 });
    assert_eq!(
        report.text(),
        "PASS  config: fine\nWARN  power: on battery — plug it in\nFAIL  claude: not on PATH — install it\n\
         1 passed, 1 warning(s), 1 failed: not ready: fix the FAILs\n"
    );
}

#[test]
fn the_sandbox_check_says_what_unattended_starts_will_do() {
    let on = crate::config::SandboxSettings::default();
    assert_eq!(judge_sandbox(crate::agent::AgentKind::Claude, &on, Ok(())).status, Status::Pass);
    let missing = || Err("socat is not installed (sudo apt install socat)".to_string());
    let refused = judge_sandbox(crate::agent::AgentKind::Claude, &on, missing());
    assert_eq!(refused.status, Status::Fail);
    assert!(
        refused.detail.contains("socat is not installed") && refused.detail.contains("refused"),
        "{}",
        refused.detail
    );
    let lax = crate::config::SandboxSettings { allow_unsandboxed: true, ..on.clone() };
    assert_eq!(judge_sandbox(crate::agent::AgentKind::Claude, &lax, missing()).status, Status::Warn);
    let codex = judge_sandbox(crate::agent::AgentKind::Codex, &on, Err("a write outside was not refused".into()));
    assert_eq!((codex.id.as_str(), codex.status), ("sandbox.codex", Status::Fail));
    assert!(codex.detail.starts_with("Codex's sandbox cannot run") && codex.detail.contains("loop starts fail"));
    assert!(!refused.remedy.as_deref().unwrap_or_default().contains("  "), "{:?}", refused.remedy);
    let off = crate::config::SandboxSettings { enabled: false, ..on };
    assert_eq!(judge_sandbox(crate::agent::AgentKind::Claude, &off, missing()).status, Status::Pass);
}

#[test]
fn the_wake_check_says_whether_tonight_sleeps_through_long_waits() {
    let sleep = crate::config::SleepConfig::default();
    let helper = Ok(std::path::PathBuf::from("/usr/bin/nightshift-wake"));
    let wakes = judge_wake(&sleep, &helper, Some(false));
    assert_eq!(wakes.status, Status::Pass);
    assert_eq!(
        wakes.detail,
        "long waits sleep and are woken for their end: it sleeps through a wait of 30 min or more, and a wake \
         alarm wakes it 2 min before (/usr/bin/nightshift-wake sets the alarm)"
    );
    assert!(judge_wake(&sleep, &helper, Some(true)).detail.contains("on battery, it sleeps through a wait of 10 min"));
    let no_cap = Err("cannot arm a wake alarm: this binary lacks CAP_WAKE_ALARM; run `sudo setcap …`".to_string());
    let held = judge_wake(&sleep, &no_cap, None);
    assert_eq!(held.status, Status::Warn);
    assert!(held.detail.starts_with("long waits are held awake tonight, as before: cannot arm"), "{held:?}");
    assert!(held.remedy.as_deref().unwrap().starts_with("run the setcap command it names"), "{held:?}");
    let off = crate::config::SleepConfig { through_waits: false, ..sleep };
    assert_eq!(judge_wake(&off, &helper, None).status, Status::Pass, "the user's own choice");
}

#[test]
fn codex_is_told_what_its_fence_cannot_do() {
    use crate::agent::Fence;
    let strict = judge_codex_fence(Fence::None);
    assert_eq!(strict.status, Status::Pass);
    for fence in [Fence::Project, Fence::Open] {
        let loose = judge_codex_fence(fence);
        assert_eq!(loose.status, Status::Warn);
        assert!(loose.detail.contains("connects directly is neither fenced nor seen"), "{}", loose.detail);
        assert!(loose.detail.contains(".git read-only"), "{}", loose.detail);
        assert!(loose.remedy.as_deref().is_some_and(|f| f.contains("--network none")), "{loose:?}");
    }
}
