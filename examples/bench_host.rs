//! One supervisor process hosting N sessions, the way the tray app hosts them (its core, without
//! the window): for `make bench-sessions`, which measures what supervising costs per session.
//!
//! ```text
//! bench_host N -- PROGRAM [ARGS]...
//! ```
//!
//! The journal goes to `$NIGHTSHIFT_STATE_DIR`. Each session is a Claude session (the adapter, the
//! detector and the screen model of a real one) running PROGRAM in a PTY of its own. It prints
//! `ready` and the session ids once all have started, and stops them all when its input closes.

use std::io::{BufRead, Write};
use std::sync::Arc;

use nightshift::clock::SystemClock;
use nightshift::paths::Paths;
use nightshift::pty::{CommandSpec, PtySize};
use nightshift::store::Store;
use nightshift::{AgentKind, SessionSpec, Supervisor};

fn main() {
    let mut argv = std::env::args().skip(1);
    let usage = || -> ! {
        eprintln!("usage: bench_host N -- PROGRAM [ARGS]...");
        std::process::exit(2)
    };
    let n: usize = argv.next().and_then(|n| n.parse().ok()).unwrap_or_else(|| usage());
    if argv.next().as_deref() != Some("--") {
        usage();
    }
    let program = argv.next().unwrap_or_else(|| usage());
    let args: Vec<String> = argv.collect();

    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(async {
        let paths = Paths::resolve(None).expect("the state directory");
        let store = Store::open(&paths.journal()).expect("the journal");
        let supervisor = Supervisor::new(store, Arc::new(SystemClock));
        let cwd = std::env::current_dir().expect("a working directory");
        let mut handles = Vec::new();
        for _ in 0..n {
            let command = CommandSpec {
                program: program.clone(),
                args: args.clone(),
                cwd: cwd.clone(),
                env: Vec::new(),
                size: PtySize::new(120, 40),
            };
            let mut spec = SessionSpec::of(AgentKind::Claude, command);
            spec.terminal_mut().hooks = false;
            handles.push(supervisor.start(spec).expect("a session starts"));
        }
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "ready");
        for h in &handles {
            let _ = writeln!(out, "{}", h.id());
        }
        let _ = out.flush();
        drop(out);
        // Until the bench closes our input.
        tokio::task::spawn_blocking(|| {
            let stdin = std::io::stdin();
            for _ in stdin.lock().lines() {}
        })
        .await
        .ok();
        for h in &handles {
            let _ = h.stop("the bench").await;
        }
        for h in &handles {
            h.wait().await;
        }
    });
}
