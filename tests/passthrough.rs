//! `nightshift run` on a real terminal: the user sees the agent's screen, types into it, and a
//! resize of their terminal reaches the agent. The "user's terminal" here is a PTY the test owns.

use crate::common;

use std::time::{Duration, Instant};

use nightshift::pty::{self, CommandSpec, PtySize};
use nightshift::screen::Screen;

struct Terminal {
    spawned: pty::Spawned,
    screen: Screen,
}

impl Terminal {
    /// Reads output until `ok` holds on the screen (bounded, real time).
    async fn until(&mut self, what: &str, ok: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let text = self.screen.snapshot().text();
            if ok(&text) {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "timed out waiting for {what}; screen:\n{text}");
            if let Ok(Some(bytes)) = tokio::time::timeout(left, self.spawned.output.recv()).await {
                self.screen.feed(&bytes);
            }
        }
    }
}

#[tokio::test]
async fn the_users_terminal_is_passed_through() {
    let env = common::Env::new();
    let flag = env.path("go");
    let script = format!(
        r#"trap 'echo "winch $(stty size)"' WINCH; echo "size $(stty size)"; while [ ! -e {} ]; do sleep 0.05; done; read -r l; echo "got:$l"; exit 5"#,
        flag.display()
    );
    let size = PtySize::new(90, 25);
    let spawned = pty::spawn(&CommandSpec {
        program: common::bin().display().to_string(),
        args: vec!["run".into(), "--".into(), "bash".into(), "--norc".into(), "-c".into(), script],
        cwd: env.dir.path().to_path_buf(),
        env: vec![
            ("NIGHTSHIFT_STATE_DIR".into(), env.state_dir().display().to_string()),
            ("NIGHTSHIFT_RUNTIME_DIR".into(), env.runtime_dir().display().to_string()),
        ],
        size,
    })
    .unwrap();
    let mut term = Terminal { spawned, screen: Screen::new(size) };

    term.until("the agent to see the user's terminal size", |t| t.contains("size 25 90")).await;
    term.spawned.pty.resize(PtySize::new(100, 30)).unwrap();
    term.screen.resize(PtySize::new(100, 30));
    term.until("the resize to reach the agent", |t| t.contains("winch 30 100")).await;
    std::fs::write(&flag, "").unwrap();
    term.spawned.pty.write(b"abc\r".to_vec());
    term.until("the typed line to reach the agent", |t| t.contains("got:abc")).await;
    let exit = tokio::time::timeout(Duration::from_secs(10), &mut term.spawned.exit).await.unwrap().unwrap();
    assert_eq!(exit.code(), Some(5), "nightshift run exits with the agent's code");
    let journal = env.journal();
    assert_eq!(journal.last().unwrap()["exit_code"], 5);
}

#[tokio::test]
async fn a_machine_that_cannot_be_kept_awake_is_said_in_the_log_not_over_the_agents_screen() {
    // No logind to ask: holding the machine awake fails once the agent works, after the terminal
    // became the agent's. The warning must not be drawn into the agent's screen.
    let env = common::Env::new();
    let script = "echo agent up; for i in $(seq 1 36); do echo tick $i; sleep 0.25; done; echo agent done";
    let size = PtySize::new(90, 25);
    let spawned = pty::spawn(&CommandSpec {
        program: common::bin().display().to_string(),
        args: vec!["run".into(), "--".into(), "bash".into(), "--norc".into(), "-c".into(), script.into()],
        cwd: env.dir.path().to_path_buf(),
        env: vec![
            ("NIGHTSHIFT_STATE_DIR".into(), env.state_dir().display().to_string()),
            ("NIGHTSHIFT_RUNTIME_DIR".into(), env.runtime_dir().display().to_string()),
            ("DBUS_SYSTEM_BUS_ADDRESS".into(), format!("unix:path={}", env.path("no-system-bus").display())),
        ],
        size,
    })
    .unwrap();
    let mut term = Terminal { spawned, screen: Screen::new(size) };
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !seen.contains("agent done") {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "the agent did not finish; seen:\n{seen}");
        match tokio::time::timeout(left, term.spawned.output.recv()).await {
            Ok(Some(bytes)) => {
                seen.push_str(&String::from_utf8_lossy(&bytes));
                term.screen.feed(&bytes);
            }
            _ => break,
        }
    }
    assert!(!seen.contains("keep the machine awake"), "a warning drawn over the agent's screen:\n{seen}");
    let logged = std::fs::read_dir(env.state_dir().join("logs"))
        .unwrap()
        .flatten()
        .map(|f| std::fs::read_to_string(f.path()).unwrap_or_default())
        .collect::<String>();
    assert!(logged.contains("cannot keep the machine awake"), "the log says it: {logged}");
}
