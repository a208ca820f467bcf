//! How much journal a chatty night costs: a Claude session whose statusLine changes every 3 s
//! (context, cost and tokens rising, the 5-hour window creeping up) for eight hours, journalled the
//! way the supervisor journals a report (a usage sample and a `usage` event), on a real SQLite file.
//! `NIGHTSHIFT_GROWTH_NIGHTS=7` measures a week.

use crate::common;

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use nightshift::clock::FakeClock;
use nightshift::journal::Journal;
use nightshift::store::{NewSession, SessionKind, Store};
use nightshift::usage::Sample;
use nightshift::{EventKind, SessionId};

const EVERY: Duration = Duration::seconds(3);
const NIGHT: Duration = Duration::hours(8);

fn start() -> DateTime<Utc> {
    "2026-11-30T22:00:00Z".parse().unwrap()
}

/// The journal's bytes on disk (its WAL folded in).
fn size(path: &std::path::Path) -> u64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    drop(conn);
    std::fs::metadata(path).unwrap().len()
}

/// Journals `nights` chatty nights of one session; returns the size after each night.
fn chatty(path: &std::path::Path, nights: u32) -> Vec<u64> {
    let clock = Arc::new(FakeClock::new(start()));
    let journal = Journal::new(Store::open(path).unwrap(), clock.clone());
    let id = SessionId::from("c0ffee00".to_string());
    let command = ["claude".to_string()];
    journal
        .write(|s| {
            s.create_session(&NewSession {
                id: id.as_str(),
                kind: SessionKind::Terminal,
                command: &command,
                cwd: "/home/u/project",
                agent: "claude",
                preset: Some("overnight"),
                created: start(),
                owner_pid: std::process::id(),
                control_socket: None,
            })
        })
        .unwrap();
    let mut sizes = Vec::new();
    let mut n = 0u64;
    for night in 0..nights {
        clock.set(start() + Duration::days(i64::from(night)));
        let end = clock.now_utc() + NIGHT;
        while clock.now_utc() < end {
            n += 1;
            let sample = Sample {
                five_hour_pct: Some((n / 200 % 100) as f64),
                five_hour_resets_at: Some(start() + Duration::hours(5 * (1 + n as i64 / 6000))),
                seven_day_pct: Some((n / 2000 % 100) as f64),
                seven_day_resets_at: Some(start() + Duration::days(7)),
                context_pct: Some((n % 97) as f64),
                cost_usd: Some(n as f64 * 0.0137),
                model: Some("Opus 4.7".into()),
                tokens: Some(n * 1234),
            };
            let now = clock.now_utc();
            journal.write(|s| s.record_usage(id.as_str(), now, &sample)).unwrap();
            journal.emit(&id, EventKind::Usage { sample });
            clock.advance(EVERY);
        }
        sizes.push(size(path));
    }
    sizes
}

#[test]
fn a_chatty_night_costs_a_bounded_journal() {
    let env = common::Env::new();
    std::fs::create_dir_all(env.state_dir()).unwrap();
    let path = env.state_dir().join("journal.sqlite3");
    let nights = std::env::var("NIGHTSHIFT_GROWTH_NIGHTS").ok().and_then(|n| n.parse().ok()).unwrap_or(2);
    let sizes = chatty(&path, nights);
    let per_night: Vec<u64> = sizes.iter().scan(0, |before, s| Some(s - std::mem::replace(before, *s))).collect();
    let samples = NIGHT.num_seconds() / EVERY.num_seconds();
    println!("journal growth: {samples} samples a night, bytes per night {per_night:?}, total {sizes:?}");
    assert!(per_night[0] < 8 << 20, "the first night, all of it in full: {} bytes", per_night[0]);
    if nights >= 2 {
        // From the second night on, the night before is thinned as this one is written, and its
        // pages are used again: the file hardly grows.
        assert!(per_night[1..].iter().all(|n| *n < 512 << 10), "later nights: {per_night:?}");
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok");
}
