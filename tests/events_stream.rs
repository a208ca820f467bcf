//! The `--events` stream against a reader that stops reading: the session does not wait for it,
//! the journal keeps every event, and when the reader comes back the stream goes on (what it could
//! not hold is said in it as `events_dropped`, with how many: `cli::run`'s own tests make it drop).

use crate::common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{wait_for, Env};
use nightshift::control::{self, Request, Response};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_stops_reading_the_events_never_stalls_the_session() {
    let env = Env::new();
    // Its stdout is a pipe nobody reads: once the pipe's buffer is full, a write to it blocks.
    let mut child = env
        .cmd(&["run", "--events", "-", "--", "bash", "-c", "echo ready; while read -r l; do :; done"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let store = || nightshift::store::Store::open_reader(&env.state_dir().join("journal.sqlite3")).unwrap();
    let row = wait_for("the session", Duration::from_secs(20), || {
        let path = env.state_dir().join("journal.sqlite3");
        path.exists().then(|| store().sessions().ok()?.into_iter().next()).flatten()
    });
    let socket = control::owner_socket(&row).unwrap().to_path_buf();
    // Each keystroke is an `input` event of some 200 bytes: far more than a pipe holds.
    let text = "x".repeat(40);
    let began = Instant::now();
    for i in 0..1500 {
        let send = Request::Send { session: row.id.clone(), text: text.clone(), enter: false, by: None };
        let answer = tokio::time::timeout(Duration::from_secs(5), control::request(&socket, &send)).await;
        assert!(matches!(answer, Ok(Ok(Response::Done))), "keystroke {i} was not taken: {answer:?}");
    }
    let took = began.elapsed();
    let query = nightshift::store::EventQuery { session: Some(row.id.clone()), ..Default::default() };
    let inputs = || store().events(&query).unwrap().into_iter().filter(|e| e.event == "input").count();
    wait_for("the journal to keep every event", Duration::from_secs(20), || (inputs() == 1500).then_some(()));
    // The reader comes back: the stream says what it could not take, then goes on.
    let mut out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut text);
        text
    });
    let stop = Request::Stop { session: row.id.clone(), source: None };
    let _ = control::request(&socket, &stop).await;
    wait_for("the run to end", Duration::from_secs(30), || child.try_wait().unwrap());
    let text = reader.join().unwrap();
    let dropped: u64 = common::json_lines(&text)
        .iter()
        .filter(|e| e["event"] == "events_dropped")
        .map(|e| e["count"].as_u64().unwrap())
        .sum();
    let streamed = common::json_lines(&text).iter().filter(|e| e["event"] == "input").count() as u64;
    assert_eq!(streamed + dropped, 1500, "every input streamed or counted as dropped ({took:?})");
}
