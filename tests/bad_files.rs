//! Bad files, through the real binary: a journal that is not SQLite, one a newer Nightshift wrote,
//! and config or agent files with bad TOML, unknown keys or wrong types. Each is one line on stderr
//! naming the file (and for TOML the line, column and key) and the fix; a journal is never written.

use crate::common;

use common::Env;

/// Runs `nightshift ARGS`; it must fail with exactly one line on stderr, which is returned.
fn one_line_error(env: &Env, args: &[&str]) -> String {
    let out = env.output(args);
    assert!(!out.status.success(), "nightshift {args:?} should fail");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "one line:\n{stderr}");
    stderr
}

#[test]
fn journals_it_cannot_read_are_refused_in_one_line_and_left_as_they_are() {
    let env = Env::new();
    std::fs::create_dir_all(env.state_dir()).unwrap();
    let journal = env.state_dir().join("journal.sqlite3");
    std::fs::write(&journal, "not a database, someone's notes\n".repeat(100)).unwrap();
    let before = std::fs::read(&journal).unwrap();
    for args in [&["sessions"][..], &["run", "--", "true"]] {
        let err = one_line_error(&env, args);
        assert!(err.contains(journal.to_str().unwrap()) && err.contains("move it aside"), "{err}");
    }
    assert_eq!(std::fs::read(&journal).unwrap(), before);

    std::fs::remove_file(&journal).unwrap();
    env.stdout(&["sessions"]);
    let conn = rusqlite::Connection::open(&journal).unwrap();
    conn.pragma_update(None, "user_version", 1000).unwrap();
    drop(conn);
    let before = std::fs::read(&journal).unwrap();
    for args in [&["sessions"][..], &["run", "--", "true"], &["restore"]] {
        let err = one_line_error(&env, args);
        assert!(err.contains("schema version 1000") && err.contains("newer Nightshift"), "{err}");
    }
    assert_eq!(std::fs::read(&journal).unwrap(), before, "a newer journal is never written");
}

#[test]
fn bad_config_and_agent_files_are_told_with_line_column_key_and_fix() {
    let env = Env::new();
    let config = env.dir.path().join("config");
    std::fs::create_dir_all(config.join("agents")).unwrap();
    let cases = [
        (
            "[presets.mine]\nidle_timeout = \"ten\"\n",
            "line 2, column 16, key `presets.mine.idle_timeout`: invalid type",
        ),
        ("[app]\nkeep_resumes = true\n", "line 2, column 1, key `app.keep_resumes`: unknown field"),
        ("[presets.mine\n", "line 1, column 14, key `presets.mine`"),
    ];
    for (text, want) in cases {
        std::fs::write(config.join("config.toml"), text).unwrap();
        let err = one_line_error(&env, &["presets"]);
        assert!(err.contains("config.toml: ") && err.contains(want), "{text:?}: {err}");
        assert!(err.contains("move the file aside to use the defaults"), "{err}");
    }
    std::fs::remove_file(config.join("config.toml")).unwrap();

    std::fs::write(config.join("agents/claude.toml"), "[working]\nfootre = 'esc'\n").unwrap();
    let err = one_line_error(&env, &["run", "--agent", "claude", "--", "true"]);
    assert!(err.contains("claude.toml: line 2, column 1, key `working.footre`: unknown field"), "{err}");
    std::fs::write(config.join("agents/claude.toml"), "[composer]\nprompt = '(('\n").unwrap();
    let err = one_line_error(&env, &["run", "--agent", "claude", "--", "true"]);
    assert!(err.contains("`composer.prompt` is not a valid regular expression") && err.contains("fix it"), "{err}");
}

#[test]
fn a_bad_guard_file_refuses_only_what_the_guard_would_judge() {
    let env = Env::new();
    let config = env.dir.path().join("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("guard.toml"), "[[rule]]\nkind = 3\n").unwrap();
    // Nothing guarded: the file is not the start's business.
    let out = env.output(&["run", "--", "true"]);
    assert!(out.status.success(), "an unguarded start: {}", String::from_utf8_lossy(&out.stderr));
    let restore = env.output(&["restore"]);
    assert!(restore.status.success(), "restore: {}", String::from_utf8_lossy(&restore.stderr));
    // Guarded, by --guard or by its preset: refused in one line naming the file, never run on the
    // built-in rules instead of the ones the user wrote.
    let err = one_line_error(&env, &["run", "--guard", "true", "--", "true"]);
    assert!(err.contains("guard.toml: line 2, column 8, key `rule.kind`") && err.contains("fix it"), "{err}");
    let err = one_line_error(&env, &["run", "--preset", "overnight", "--no-sandbox", "--", "true"]);
    assert!(err.contains("guard.toml: line 2, column 8, key `rule.kind`"), "{err}");
}
