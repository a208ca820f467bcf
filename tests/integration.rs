//! The core and the CLI through real PTYs, the real `nightshift` binary, real git repositories and
//! real D-Bus: every integration test that needs no real agent client, in one binary (one link, one
//! build of the shared testkit). Each file of `tests/` is a module of this binary or of
//! `clients.rs`; `every_test_file_is_in_a_binary` keeps it so.

mod common;
mod mock_api;

mod accounts;
mod adoption;
mod attach;
mod bad_files;
mod cli;
mod colour;
mod concurrent_starts;
mod control_abuse;
mod crash_soak;
mod digest;
mod events_stream;
mod fixture_verdicts;
mod full_disk;
mod hook_cli;
mod journal_compat;
mod journal_growth;
mod keyring;
mod notify_cli;
mod output_storm;
mod passthrough;
mod phone;
mod plan_cli;
mod pty_sessions;
mod push;
mod record;
mod replay;
mod replay_flows;
mod respawn_cli;
mod resume_restore;
mod salvage;
mod schedule;
mod session_options;
mod usage_chip;
mod version;
mod wake_helper;
mod window_modules;
mod worktree;

/// `autotests` is off (the files are modules of two binaries), so a new file of `tests/` that no
/// binary declares would never run: this fails instead, naming it.
#[test]
fn every_test_file_is_in_a_binary() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let declared: std::collections::BTreeSet<String> = ["integration.rs", "clients.rs"]
        .iter()
        .flat_map(|root| {
            let text = std::fs::read_to_string(dir.join(root)).unwrap();
            text.lines()
                .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';').map(|m| format!("{m}.rs")))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let root = name == "integration.rs" || name == "clients.rs";
        if name.ends_with(".rs") && !root && !declared.contains(&name) {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "{missing:?} in no test binary: add `mod NAME;` to tests/integration.rs or tests/clients.rs"
    );
}
