use super::*;

#[test]
fn unattended_work_is_sandboxed_unless_turned_off_and_a_sandbox_that_cannot_run_refuses() {
    let on = SandboxSettings { network: vec!["crates.io".into()], ..SandboxSettings::default() };
    let ok = || Ok(());
    let (s, note) = on.sandbox_for(AgentKind::Claude, None, true, ok).unwrap();
    assert_eq!((s.unwrap().network, note), (vec!["crates.io".to_string()], None));
    assert_eq!(on.sandbox_for(AgentKind::Claude, None, false, ok).unwrap(), (None, None), "attended: off");
    assert!(on.sandbox_for(AgentKind::Claude, Some(true), false, ok).unwrap().0.is_some(), "asked for");
    assert_eq!(on.sandbox_for(AgentKind::Claude, Some(false), true, ok).unwrap(), (None, None), "--no-sandbox");
    let off = SandboxSettings { enabled: false, ..SandboxSettings::default() };
    assert_eq!(off.sandbox_for(AgentKind::Codex, None, true, ok).unwrap(), (None, None), "the setting");
    assert!(on.sandbox_for(AgentKind::Codex, None, true, || Err("never asked".into())).unwrap().0.is_some());

    let missing = || Err("socat is not installed (sudo apt install socat)".to_string());
    let e = on.sandbox_for(AgentKind::Claude, None, true, missing).unwrap_err();
    assert!(e.contains("socat is not installed") && e.contains("--no-sandbox") && e.contains("allow_unsandboxed"));
    let lax = SandboxSettings { allow_unsandboxed: true, ..SandboxSettings::default() };
    let (s, note) = lax.sandbox_for(AgentKind::Claude, None, true, missing).unwrap();
    assert!(s.is_none() && note.unwrap().starts_with("not sandboxed: socat"));
    assert!(on
        .sandbox_for(AgentKind::Generic, Some(true), true, ok)
        .unwrap_err()
        .contains("only the claude and codex commands"));
    assert!(on.sandbox_for(AgentKind::Generic, None, true, ok).unwrap().1.is_some());
    // Left out of config.toml when it is the default; read back when set.
    let text = toml::to_string(&Config::default()).unwrap();
    assert!(!text.contains("sandbox"), "{text}");
    let read: Config = toml::from_str("[sandbox]\nnetwork = [\"crates.io\"]\n").unwrap();
    assert!(read.sandbox.enabled && read.sandbox.network == ["crates.io"]);
}

#[test]
fn a_start_whose_command_cannot_carry_the_sandbox_is_refused_unless_allowed() {
    let on = SandboxSettings::default();
    let lax = SandboxSettings { allow_unsandboxed: true, ..SandboxSettings::default() };
    let words = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // Claude through a wrapper or under another name: nothing to set the sandbox on.
    for program in ["npx", "/opt/anthropic/claude-2.1", "bash"] {
        let e = on.sandbox_for_command(AgentKind::Claude, program, &[], None, true).unwrap_err();
        assert!(e.contains("not the claude CLI itself") && e.contains("allow_unsandboxed"), "{e}");
        let (s, note) = lax.sandbox_for_command(AgentKind::Claude, program, &[], None, true).unwrap();
        assert!(s.is_none() && note.unwrap().starts_with("not sandboxed: "), "{program}");
    }
    assert!(on.sandbox_for_command(AgentKind::Claude, "npx", &[], None, false).unwrap() == (None, None), "attended");
    assert!(on.sandbox_for_command(AgentKind::Claude, "npx", &[], Some(false), true).unwrap() == (None, None));
    // Codex's own flags that turn its sandbox off, in every spelling.
    for flags in [
        &["--dangerously-bypass-approvals-and-sandbox"][..],
        &["--yolo"],
        &["-s", "danger-full-access"],
        &["--sandbox=danger-full-access"],
        &["--sandbox", "danger-full-access"],
        &["-c", "sandbox_mode=\"danger-full-access\""],
        &["--config=sandbox_mode='danger-full-access'"],
    ] {
        let e = on.sandbox_for_command(AgentKind::Codex, "codex", &words(flags), None, true).unwrap_err();
        assert!(e.contains(flags.last().unwrap().split('=').next().unwrap()) && e.contains("allow_unsandboxed"), "{e}");
        let (s, note) = lax.sandbox_for_command(AgentKind::Codex, "codex", &words(flags), None, true).unwrap();
        assert!(s.is_none() && note.unwrap().contains("turns Codex's sandbox off"), "{flags:?}");
    }
    // What keeps a sandbox is not cried wolf at.
    for flags in [&["-s", "read-only"][..], &["--full-auto"], &["-m", "gpt-5", "fix the danger-full-access bug"]] {
        let (s, note) = on.sandbox_for_command(AgentKind::Codex, "codex", &words(flags), None, true).unwrap();
        assert!(s.is_some() && note.is_none(), "{flags:?}");
    }
}

#[test]
fn user_presets_round_trip_and_built_ins_are_protected() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cfg");
    let mut config = Config::load(Some(&dir)).unwrap();
    assert!(config.presets.is_empty());
    let mut mine = respawn::builtin("overnight").unwrap();
    mine.idle_timeout = std::time::Duration::from_secs(25);
    mine.kickstart_prompt = "go on".into();
    config.save_preset("my-night", mine.clone()).unwrap();
    assert!(matches!(config.save_preset("overnight", mine.clone()), Err(ConfigError::Builtin(_))));
    assert!(matches!(config.save_preset("bad name", mine.clone()), Err(ConfigError::BadName(_))));
    config.save(Some(&dir)).unwrap();
    let back = Config::load(Some(&dir)).unwrap();
    assert_eq!(back.preset("my-night").unwrap(), (mine, Source::User));
    assert_eq!(back.preset("Overnight").unwrap().1, Source::Builtin);
    assert_eq!(back.all().len(), 6);
    let mut back = back;
    assert!(matches!(back.delete_preset("solo"), Err(ConfigError::Builtin(_))));
    back.delete_preset("my-night").unwrap();
    assert!(matches!(back.preset("my-night"), Err(ConfigError::NoPreset(_))));
}

#[test]
fn a_bad_file_is_named_with_the_problem() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("config.toml"), "[presets.x]\nidle_timeout = \"soon\"\n").unwrap();
    let err = Config::load(Some(tmp.path())).unwrap_err().to_string();
    assert!(err.contains("config.toml") && err.contains("idle_timeout"), "{err}");
    // A hand-written preset may leave settings out: they are the Overnight preset's, but for its
    // guard and sandbox, which stay off unless the preset turns them on.
    std::fs::write(tmp.path().join("config.toml"), "[presets.short]\nduration = 600\n").unwrap();
    let short = Config::load(Some(tmp.path())).unwrap().preset("short").unwrap().0;
    assert_eq!(short.duration, std::time::Duration::from_secs(600));
    let overnight = respawn::builtin("overnight").unwrap();
    assert_eq!(short.idle_timeout, overnight.idle_timeout);
    assert_eq!(short.breaker_retry, overnight.breaker_retry);
    assert!(overnight.guard && overnight.sandbox);
    assert!(!short.guard && !short.sandbox, "{short:?}");
    std::fs::write(tmp.path().join("config.toml"), "[presets.solo]\nidle_timeout = 1\n").unwrap();
    assert!(Config::load(Some(tmp.path())).unwrap_err().to_string().contains("built-in"));
}

fn problem(text: &str) -> String {
    let err = Config::parse(Path::new("/c/config.toml"), text).unwrap_err().to_string();
    assert!(!err.contains('\n'), "one line: {err}");
    err
}

#[test]
fn bad_toml_is_told_in_one_line_with_line_column_key_and_fix() {
    let wrong_type = problem("[notifications]\nfinished = false\n\n[presets.x]\nidle_timeout = \"ten\"\n");
    assert!(
        wrong_type.starts_with("/c/config.toml: line 5, column 16, key `presets.x.idle_timeout`: "),
        "{wrong_type}"
    );
    assert!(wrong_type.ends_with("move the file aside to use the defaults"), "{wrong_type}");
    let unknown = problem("[app]\nkeep_resumes_on_quitt = true\n");
    assert!(unknown.contains("line 2, column 1, key `app.keep_resumes_on_quitt`: unknown field"), "{unknown}");
    assert!(unknown.contains("expected `keep_resumes_on_quit`"), "the fix: {unknown}");
    let syntax = problem("[presets.x\n");
    assert!(syntax.contains("line 1, column 11, key `presets.x`: unclosed table"), "{syntax}");
    let top = problem("colour = 3\n");
    assert!(top.contains("key `colour`: unknown field"), "{top}");
    let non_ascii = problem("[presets.\"é\"]\nidle_timeout = []\n");
    assert!(non_ascii.contains("line 2, column 16, key `presets.\"é\".idle_timeout`"), "{non_ascii}");
}
