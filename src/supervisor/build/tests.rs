use super::*;

struct Dirs {
    tmp: tempfile::TempDir,
    paths: Paths,
}

/// Empty state and config directories, with `config` as `config.toml`.
fn dirs(config: &str) -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let config_dir = tmp.path().join("config");
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(config_dir.join("config.toml"), config).unwrap();
    let paths = Paths {
        state_dir: tmp.path().join("state"),
        runtime_dir: tmp.path().join("run"),
        config_dir: Some(config_dir),
    };
    Dirs { tmp, paths }
}

fn request(d: &Dirs, command: &[&str]) -> Request {
    Request::new(d.tmp.path().to_path_buf(), command.iter().map(|s| s.to_string()).collect())
}

fn refused(d: &Dirs, r: Request) -> BuildError {
    build(&d.paths, r, |_| Ok(())).expect_err("refused")
}

#[test]
fn the_agent_is_inferred_and_its_own_cli_starts_without_a_command() {
    let d = dirs("");
    let built = build(&d.paths, request(&d, &["claude", "--model", "opus", "Tidy the docs"]), |_| Ok(())).unwrap();
    let t = built.terminal();
    assert_eq!((built.contract().agent, t.program.as_str()), (AgentKind::Claude, "claude"));
    assert_eq!(t.args, ["--model", "opus"]);
    assert_eq!(t.prompt.as_deref(), Some("Tidy the docs"), "the opening prompt kept apart");
    let mut bare = request(&d, &[]);
    bare.agent = Some(AgentKind::Codex);
    let built = build(&d.paths, bare, |_| Ok(())).unwrap();
    assert_eq!((built.contract().agent, built.terminal().program.as_str()), (AgentKind::Codex, "codex"));
    let e = refused(&d, request(&d, &[]));
    assert!(matches!(e, BuildError::Command(_)) && e.to_string().contains("give the command"), "{e}");
}

#[test]
fn a_working_directory_must_be_a_full_path_to_a_directory() {
    let d = dirs("");
    let mut r = request(&d, &["bash"]);
    r.cwd = "relative/dir".into();
    assert!(matches!(refused(&d, r), BuildError::Cwd(m) if m.contains("give the full path")));
    let mut r = request(&d, &["bash"]);
    r.cwd = d.tmp.path().join("missing");
    assert!(matches!(refused(&d, r), BuildError::Cwd(m) if m.contains("is not a directory")));
}

#[test]
fn a_preset_is_armed_with_the_requests_changes_and_the_guard_needs_hooks() {
    let d = dirs("");
    let mut r = request(&d, &["claude"]);
    r.preset = Some("overnight".into());
    let built = build(&d.paths, r.clone(), |s| {
        s.idle_timeout = Duration::from_secs(7);
        Ok(())
    })
    .unwrap();
    let t = built.terminal();
    let armed = t.respawn.as_ref().expect("armed");
    assert_eq!((t.preset.as_deref(), armed.idle_timeout), (Some("overnight"), Duration::from_secs(7)));
    assert!(t.guard, "the overnight preset arms the guard");
    assert_eq!(built.contract().started, chrono::DateTime::UNIX_EPOCH, "its time counts from its start");
    let e = build(&d.paths, r.clone(), |_| Err("--idle-timeout must be positive".into())).unwrap_err();
    assert!(matches!(e, BuildError::Setting(_)), "{e}");
    r.hooks = false;
    let e = refused(&d, r);
    assert!(e.to_string().contains("the guard works through the client's hooks"), "{e}");
    let mut r = request(&d, &["claude"]);
    r.preset = Some("no-such".into());
    assert!(matches!(refused(&d, r), BuildError::Config(ConfigError::NoPreset(_))));
}

#[test]
fn accounts_switches_and_budgets_are_refused_with_what_to_change() {
    let d = dirs("");
    let mut r = request(&d, &["claude"]);
    r.account = AccountChoice::Named("work".into());
    let e = refused(&d, r);
    assert!(matches!(e, BuildError::Config(_)) && e.to_string().contains("no account `work`"), "{e}");
    let mut r = request(&d, &["claude"]);
    r.switch_accounts = Some(None);
    let e = refused(&d, r);
    assert!(matches!(e, BuildError::Switch(_)) && e.to_string().contains("no other account"), "{e}");
    let mut r = request(&d, &["codex"]);
    r.switch_accounts = Some(None);
    let e = refused(&d, r);
    assert!(e.to_string().contains("[accounts.NAME] codex = \"DIR\""), "Codex switches too: {e}");
    let mut r = request(&d, &["codex"]);
    r.switch_accounts = Some(None);
    r.hooks = false;
    let e = refused(&d, r);
    assert!(e.to_string().contains("come through Codex's notify, which --no-hooks turns off"), "{e}");
    let mut r = request(&d, &["bash"]);
    r.switch_accounts = Some(None);
    assert!(refused(&d, r).to_string().contains("turn it off for a generic session"));
    let mut r = request(&d, &["codex"]);
    r.budget.max_cost_usd = Some(5.0);
    let e = refused(&d, r).to_string();
    assert!(e.contains("Codex reports tokens but no cost") && e.contains("--max-tokens"), "{e}");
    let mut r = request(&d, &["claude"]);
    r.budget.max_cost_usd = Some(-1.0);
    assert!(refused(&d, r).to_string().contains("--max-cost-usd must be a positive number"));
}

#[test]
fn with_the_canary_required_a_client_it_has_not_passed_is_refused_with_the_fix() {
    let d = dirs("[canary]\nrequired = true\n");
    let bin = d.tmp.path().join("claude");
    std::fs::write(&bin, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let program = bin.display().to_string();
    let e = refused(&d, request(&d, &[&program])).to_string();
    assert!(e.starts_with(&format!("the canary has not run on {program} and [canary] required is set")), "{e}");
    assert!(e.contains("run `nightshift doctor --canary` first, or set required = false"), "{e}");
    let (size, modified) = crate::agent::canary::fingerprint(&bin).unwrap();
    let verdict = |ok: bool| crate::agent::canary::Verdict {
        at: chrono::Utc::now(),
        ok,
        failed: if ok { vec![] } else { vec!["working.spinner".into()] },
        kept: None,
        bin: bin.clone(),
        size,
        modified,
    };
    let mut results = crate::agent::canary::Results::default();
    results.record(AgentKind::Claude, "2.1.333", verdict(false));
    results.save(&d.paths.state_dir).unwrap();
    let e = refused(&d, request(&d, &[&program])).to_string();
    assert!(e.starts_with("the canary failed on claude 2.1.333 (working.spinner) and [canary] required is set"), "{e}");
    results.record(AgentKind::Claude, "2.1.333", verdict(true));
    results.save(&d.paths.state_dir).unwrap();
    assert!(build(&d.paths, request(&d, &[&program]), |_| Ok(())).is_ok(), "passed: it starts");
    assert!(build(&d.paths, request(&d, &["bash"]), |_| Ok(())).is_ok(), "a generic agent has no canary");
    let off = dirs("");
    assert!(build(&off.paths, request(&off, &[&program]), |_| Ok(())).is_ok(), "not required: it starts");
}

#[test]
fn a_loop_is_built_alike_for_the_command_line_and_the_window() {
    let d = dirs("[pace]\nweekly_pace = 5\n");
    let ask = |account: AccountChoice| LoopAsk {
        request: crate::loops::LoopRequest { prompt: Some("tidy up".into()), ..Default::default() },
        account,
        sandbox: Some(false),
        ..LoopAsk::default()
    };
    let project = d.tmp.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let (spec, warnings) =
        build_loop(&d.paths, &project, ask(AccountChoice::Default), |s| s.max_retries = 4).expect("a loop here");
    assert_eq!(spec.projects[0].cwd, project);
    assert_eq!(spec.settings.max_retries, 4, "the command line's ladder");
    assert_eq!(spec.settings.pace.weekly_pace, Some(5.0), "config.toml's pace when none is asked");
    assert!(spec.sandbox.is_none() && warnings.is_empty(), "as asked: {warnings:?}");
    let e = build_loop(&d.paths, &project, ask(AccountChoice::Named("work".into())), |_| {}).unwrap_err();
    assert!(matches!(e, BuildError::Config(_)) && e.to_string().contains("no account `work`"), "{e}");
    let mut neither = ask(AccountChoice::Default);
    neither.request.prompt = None;
    let e = build_loop(&d.paths, &project, neither, |_| {}).unwrap_err();
    assert!(matches!(e, BuildError::Loop(crate::loops::LoopError::NoTask)), "{e}");
}

#[test]
fn a_broken_config_refuses_only_what_reads_it() {
    let d = dirs("this is not toml [");
    assert!(build(&d.paths, request(&d, &["bash"]), |_| Ok(())).is_ok(), "nothing read it");
    let mut r = request(&d, &["claude"]);
    r.preset = Some("overnight".into());
    assert!(matches!(refused(&d, r), BuildError::Config(ConfigError::Invalid { .. })));
}

#[test]
fn a_failover_is_built_with_the_session_and_refused_then_when_it_cannot_be() {
    let d = dirs("");
    let mut r = request(&d, &["claude", "do the work"]);
    r.at_limit = Some(AtLimit::Failover);
    r.standing = Some("Only src/.".into());
    let none = refused(&d, r.clone()).to_string();
    assert!(none.contains("--failover-to codex"), "{none}");
    r.failover = Some(FailoverAsk { command: vec!["claude".into()], account: AccountChoice::Default, back: true });
    let same = refused(&d, r.clone()).to_string();
    assert!(same.contains("names a claude command") && same.contains("codex"), "{same}");
    let missing = vec!["/nowhere/codex".to_string()];
    r.failover = Some(FailoverAsk { command: missing, account: AccountChoice::Default, back: true });
    let gone = refused(&d, r.clone()).to_string();
    assert!(gone.contains("--failover-to") && gone.contains("/nowhere/codex"), "{gone}");
    // A stand-in named codex, installed.
    let bin = d.tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink("/bin/true", bin.join("codex")).unwrap();
    let codex = [bin.join("codex").display().to_string(), "--model".into(), "gpt-5.5".into()].to_vec();
    // Its folder without a login is refused (unless this machine's own environment has a key).
    let home = d.tmp.path().join("codex-home");
    std::fs::create_dir_all(&home).unwrap();
    let keyed = AgentKind::Codex.token_vars().iter().any(|k| std::env::var_os(k).is_some_and(|v| !v.is_empty()));
    r.failover = Some(FailoverAsk { command: codex.clone(), account: AccountChoice::Dir(home.clone()), back: true });
    if !keyed {
        let out = refused(&d, r.clone()).to_string();
        assert!(out.contains("codex is logged out") && out.contains("codex login"), "{out}");
    }
    std::fs::write(home.join("auth.json"), "{}").unwrap();
    let armed = build(&d.paths, r, |_| Ok(())).expect("built");
    let t = armed.terminal();
    assert!(t.switch.is_none(), "no other account: straight to the other agent");
    let f = t.failover.clone().expect("armed");
    assert!(f.back);
    let other = f.contract.terminal().expect("a terminal session");
    assert_eq!((f.contract.agent, other.program.clone()), (AgentKind::Codex, bin.join("codex").display().to_string()));
    assert_eq!(other.args, ["--model", "gpt-5.5"]);
    assert_eq!((other.cwd.as_path(), other.standing.as_deref()), (t.cwd.as_path(), Some("Only src/.")));
    assert!(other.failover.is_none() && other.prompt.is_none(), "it starts from the handoff, and never fails over");
}

#[test]
fn a_preset_can_arm_the_failover_and_name_the_other_agent() {
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/bin/true", bin.path().join("codex")).unwrap();
    let codex = bin.path().join("codex").display().to_string();
    // The other agent logs in with an account of its own.
    std::fs::write(bin.path().join("auth.json"), "{}").unwrap();
    let d = dirs(&format!(
        "[accounts.night]\ncodex = \"{}\"\n[presets.both]\nat_limit = \"failover\"\n\
         failover_to = \"{codex} --model gpt-5.5\"\nfailover_account = \"night\"\nstanding = \"Only src/.\"\n",
        bin.path().display()
    ));
    let mut r = request(&d, &["claude"]);
    r.preset = Some("both".into());
    let armed = build(&d.paths, r, |_| Ok(())).expect("built");
    let f = armed.terminal().failover.clone().expect("armed");
    assert_eq!(
        f.contract.account.as_ref().map(|a| (a.name.as_str(), a.dir.clone())),
        Some(("night", bin.path().into()))
    );
    let t = armed.terminal();
    assert_eq!(t.standing.as_deref(), Some("Only src/."), "the preset's standing instructions");
    let f = t.failover.clone().expect("the preset's failover");
    let other = f.contract.terminal().expect("a terminal session");
    assert_eq!(
        (other.program.as_str(), other.args.clone()),
        (codex.as_str(), vec!["--model".to_string(), "gpt-5.5".into()])
    );
    assert_eq!(other.respawn.as_ref().map(|r| r.at_limit), Some(AtLimit::Failover), "the same cycles");
    assert!(other.failover.is_none(), "it never fails over itself");
}
