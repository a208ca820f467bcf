//! A full disk under the state directory (a small tmpfs, filled up): the session keeps running and
//! taking input, the events still reach the `--events` stream, the journal is not corrupted, and
//! once there is room again it is written again, with a `journal_gap` event counting what it missed.
//! Needs root for the mount (it says so and passes over otherwise; NIGHTSHIFT_REQUIRE_TMPFS=1 makes
//! that a failure).

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{read_events, wait_for, Env};

/// A tmpfs of `size` at `dir`, unmounted when dropped.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(dir: &std::path::Path, size: &str) -> Option<Self> {
        std::fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700"), "tmpfs"])
            .arg(dir)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            assert!(
                std::env::var_os("NIGHTSHIFT_REQUIRE_TMPFS").is_none(),
                "cannot mount a tmpfs at {}",
                dir.display()
            );
            eprintln!("skipped: cannot mount a tmpfs (needs root)");
            return None;
        }
        Some(Self(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Fills the file system of `dir` up with one file; returns it.
fn fill(dir: &std::path::Path) -> std::path::PathBuf {
    let filler = dir.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let block = vec![0u8; 64 << 10];
    while f.write_all(&block).is_ok() {}
    // The last bytes too, so not even a page is left.
    while f.write_all(&[0u8; 512]).is_ok() {}
    filler
}

fn integrity(journal: &std::path::Path) -> String {
    let conn = rusqlite::Connection::open(journal).unwrap();
    conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap()
}

#[test]
fn a_full_disk_costs_journal_entries_only_and_writing_resumes_with_the_gap_counted() {
    let env = Env::new();
    let Some(_tmpfs) = Tmpfs::mount(&env.state_dir(), "4m") else { return };
    let events = env.path("events.jsonl");
    let mut run = env
        .cmd(&["run", "--events", events.to_str().unwrap(), "--", "cat"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let session = wait_for("the session to start", Duration::from_secs(10), || {
        read_events(&events)
            .iter()
            .find(|e| e["state"] == "running")
            .map(|e| e["session"].as_str().unwrap().to_string())
    });
    let send = |text: &str| {
        let out = env.output(&["send", &session, text]);
        assert!(out.status.success(), "send {text}: {}", String::from_utf8_lossy(&out.stderr));
    };
    send("before");

    let filler = fill(&env.state_dir());
    for i in 0..5 {
        send(&format!("while full {i}"));
    }
    let inputs = |events: &[serde_json::Value]| events.iter().filter(|e| e["event"] == "input").count();
    wait_for("the inputs in the event stream", Duration::from_secs(5), || {
        (inputs(&read_events(&events)) >= 6).then_some(())
    });
    assert!(run.try_wait().unwrap().is_none(), "the session runs on with the disk full");

    std::fs::remove_file(&filler).unwrap();
    send("after");
    let gap = wait_for("a journal_gap event", Duration::from_secs(5), || {
        read_events(&events).into_iter().find(|e| e["event"] == "journal_gap")
    });
    assert!(gap["lost"].as_u64().unwrap() >= 5, "{gap}");
    println!("full disk: {gap}");
    let journal = env.journal();
    let journalled: Vec<&str> = journal.iter().filter_map(|e| e["event"].as_str()).collect();
    assert!(journalled.contains(&"journal_gap"), "{journalled:?}");
    assert_eq!(
        journal.iter().filter(|e| e["event"] == "input").count(),
        2,
        "before and after, not the ones in between"
    );

    let stopped = env.output(&["stop", &session]);
    assert!(stopped.status.success(), "{}", String::from_utf8_lossy(&stopped.stderr));
    let status = run.wait().unwrap();
    assert!(status.success() || status.code().is_some(), "{status:?}");
    assert_eq!(integrity(&env.state_dir().join("journal.sqlite3")), "ok");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&env.stdout(&["sessions", "--json"])).unwrap();
    assert_ne!(rows[0]["standing"], "live", "its end is journalled: {}", rows[0]);
}
