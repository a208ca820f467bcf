use super::*;

#[test]
fn built_in_adapters_compile() {
    for kind in AgentKind::ALL {
        Adapter::builtin(kind);
    }
}

#[test]
fn a_user_file_overrides_keys_and_bad_patterns_are_named() {
    let load =
        |text: &str| Adapter::with_overrides(AgentKind::Claude, "/home/u/.config/nightshift/agents/claude.toml", text);
    let a = load("[working]\nfooter = 'press esc'\n").unwrap();
    assert_eq!(a.footer.as_ref().unwrap().as_str(), "press esc");
    assert!(a.prompt.is_some(), "keys the user did not give stay built-in");

    let err = load("[working]\nfooter = '(unclosed'\n").unwrap_err().to_string();
    assert!(err.contains("claude.toml") && err.contains("working.footer"), "{err}");
    assert!(!err.contains('\n') && err.contains("unclosed group") && err.contains("fix it"), "{err}");

    let err = load("[[dialog]]\nkind = 'quiz'\npattern = 'x'\n").unwrap_err().to_string();
    assert!(err.contains("quiz") && err.contains("question"), "a dialog kind Nightshift does not know: {err}");

    let err = load("[working]\nfootre = 'x'\n").unwrap_err().to_string();
    assert!(err.contains("line 2, column 1, key `working.footre`: unknown field"), "{err}");
    assert!(!err.contains('\n') && err.ends_with("remove the file to use the built-in signals"), "{err}");

    let err = load("screen = 'yes'\n").unwrap_err().to_string();
    assert!(err.contains("line 1, column 10, key `screen`: invalid type"), "a wrong type: {err}");
}

#[test]
fn sessions_keep_their_model_and_their_client_version_unless_the_users_file_says_otherwise() {
    let codex = Adapter::builtin(AgentKind::Codex);
    assert_eq!(
        codex.session_args(),
        ["-c", "notice.hide_rate_limit_model_nudge=true", "-c", "check_for_update_on_startup=false"]
    );
    assert!(Adapter::builtin(AgentKind::Claude).session_args().is_empty());
    // Tonight's client stays tonight's: each holds its own updater, per session.
    assert_eq!(Adapter::builtin(AgentKind::Claude).session_env(), [("DISABLE_AUTOUPDATER".into(), "1".into())]);
    assert!(codex.session_env().is_empty());
    assert_eq!(codex.cycle_commands(), &CycleCommands::default(), "0.171.0's /clear and /init");
    let mine = Adapter::with_overrides(AgentKind::Codex, "codex.toml", "[launch]\nsession_args = []\n").unwrap();
    assert!(mine.session_args().is_empty());
    assert_eq!(mine.launch().map(|l| l.0), Some("codex"), "the other launch keys stay built-in");
}

#[test]
fn a_dialog_drawn_from_the_top_of_a_tall_screen_is_read_whole() {
    // Claude Code's first-start trust question in a 120x40 terminal: drawn from the top, its
    // rows above the blank bottom half (the capture the doctor's probe kept).
    let text = include_str!("../../../../../tests/fixtures/claude-code/2.1.332/nightshift/trust-first-start.txt");
    let mut screen = crate::screen::Screen::new(crate::screen::PtySize::new(120, 40));
    let mut bytes = b"\x1b[2J".to_vec();
    for (i, row) in text.lines().enumerate() {
        bytes.extend(format!("\x1b[{};1H{row}", i + 1).into_bytes());
    }
    screen.feed(&bytes);
    let verdict = Adapter::builtin(AgentKind::Claude).classify(&screen.snapshot());
    let dialog = verdict.dialog.expect("a dialog");
    assert_eq!(dialog.kind, DialogKind::Trust, "{dialog:?}");
}

fn read(text: &str) -> Verdict {
    let mut screen = crate::screen::Screen::new(crate::screen::PtySize::new(120, 40));
    let mut bytes = b"\x1b[2J".to_vec();
    for (i, row) in text.lines().enumerate() {
        bytes.extend(format!("\x1b[{};1H{row}", i + 1).into_bytes());
    }
    screen.feed(&bytes);
    Adapter::builtin(AgentKind::Claude).classify(&screen.snapshot())
}

#[test]
fn a_question_lists_the_options_a_button_can_give_and_the_keys_that_pick_them() {
    let text = include_str!("../../../../../tests/fixtures/claude-code/2.1.332/question/01-question.txt");
    let dialog = read(text).dialog.expect("a dialog");
    assert_eq!(dialog.kind, DialogKind::Question);
    let options: Vec<(u8, &str)> = dialog.options.iter().map(|(n, l)| (*n, l.as_str())).collect();
    assert_eq!(options, [(1, "SQLite (Recommended)"), (2, "PostgreSQL")], "typed answers are left out");
    let claude = Adapter::builtin(AgentKind::Claude);
    assert!(claude.answers(DialogKind::Question) && claude.answers(DialogKind::Permission));
    assert!(!claude.answers(DialogKind::Trust), "a trust or limit menu is never answered from afar");
    assert_eq!(claude.keys(Reply::Pick(2)), Some(b"2".to_vec()));
    assert_eq!(claude.keys(Reply::Allow), Some(b"1".to_vec()));
    assert_eq!(claude.keys(Reply::Deny), Some(b"\x1b".to_vec()));
    let codex = Adapter::builtin(AgentKind::Codex);
    assert!(codex.answers(DialogKind::Permission), "Codex's approval: `y` once, Esc to refuse");
    assert_eq!((codex.keys(Reply::Allow), codex.keys(Reply::Deny)), (Some(b"y".to_vec()), Some(b"\x1b".to_vec())));
    let generic = Adapter::builtin(AgentKind::Generic);
    assert_eq!((generic.keys(Reply::Allow), generic.answers(DialogKind::Permission)), (None, false));
}

#[test]
fn several_questions_in_one_call_are_read_in_turn_then_their_review() {
    let fixture = |name: &str| {
        let path =
            format!("{}/../../tests/fixtures/claude-code/2.1.332/nightshift/{name}.txt", env!("CARGO_MANIFEST_DIR"));
        read(&std::fs::read_to_string(path).unwrap()).dialog.expect("a dialog")
    };
    let labels = |d: &Dialog| d.options.iter().map(|(n, l)| (*n, l.clone())).collect::<Vec<_>>();
    let first = fixture("question-multi-first");
    assert_eq!(
        (first.kind, first.text.as_deref()),
        (DialogKind::Question, Some("Which port should the server listen on?"))
    );
    assert_eq!(labels(&first), [(1, "3000".to_string()), (2, "8080".to_string())]);
    let second = fixture("question-multi-second");
    assert_eq!(second.text.as_deref(), Some("Drop the production database now?"));
    assert_eq!(labels(&second), [(1, "No".to_string()), (2, "Yes, drop it".to_string())]);
    let review = fixture("question-multi-review");
    assert_eq!((review.kind, review.text.as_deref()), (DialogKind::Question, Some("Review your answers")));
    assert_eq!(labels(&review), [(1, "Submit answers".to_string()), (2, "Cancel".to_string())]);
}

/// What a button made for `dialog` is bound to.
fn print_of(dialog: &Dialog) -> String {
    dialog.print()
}

#[test]
fn a_prompt_is_bound_to_its_whole_region_and_a_redraw_to_the_same() {
    let fixture = |name: &str| {
        let path =
            format!("{}/../../tests/fixtures/claude-code/2.1.332/nightshift/{name}.txt", env!("CARGO_MANIFEST_DIR"));
        read(&std::fs::read_to_string(path).unwrap()).dialog.expect("a dialog")
    };
    // `--no-hooks`: the same question row, another command.
    let (touch, rm) = (fixture("permission-touch"), fixture("permission-rm"));
    assert_eq!(touch.text, rm.text, "both ask 'Do you want to proceed?'");
    assert_ne!(print_of(&touch), print_of(&rm), "a prompt for `touch a` does not answer one for `rm -rf`");
    let (first, second) = (fixture("permission-fetch"), fixture("permission"));
    assert_ne!(print_of(&first), print_of(&second));
    // The selection moved down: the same question.
    assert_eq!(print_of(&fixture("question-multi-first")), print_of(&fixture("question-multi-first-down")));
    assert_ne!(print_of(&fixture("question-multi-first")), print_of(&fixture("question-multi-second")));
}

#[test]
fn a_permission_prompt_carries_no_options() {
    let text = include_str!("../../../../../tests/fixtures/claude-code/2.1.332/nightshift/permission.txt");
    let dialog = read(text).dialog.expect("a dialog");
    assert_eq!((dialog.kind, dialog.options.len()), (DialogKind::Permission, 0), "{dialog:?}");
}
