//! The machine kept awake for a headless host's sessions: logind's inhibitors held by the core's
//! policy, and the `[sleep]` settings it reads.

use std::time::Duration;

use nightshift::awake::{Change, Want};
use nightshift::paths::Paths;
use nightshift::session::SessionHandle;
use nightshift::supervisor::awake::NightKeeper;
use nightshift::supervisor::Supervisor;

/// The `[sleep]` settings of `paths`' config.toml; its defaults when it cannot be read (the start
/// says why elsewhere).
pub(crate) fn sleep_config(paths: &Paths) -> nightshift::config::SleepConfig {
    nightshift::config::Config::load(paths.config_dir.as_deref()).map(|c| c.sleep).unwrap_or_default()
}

/// Holds logind's inhibitors while what `wants` says (asked every few seconds) needs the machine
/// awake by the core's one policy ([`nightshift::awake`]: an agent working, a cycle or restart due,
/// a resume or a scheduled start within reach), lets them go otherwise, and sleeps through a long
/// wait with a wake alarm set by `sleep`, as the app does; until the returned value is dropped,
/// which lets them go and takes the alarm back. Every release, alarm and wake is journalled in the
/// sessions it concerns. The first look is made before this returns, so a warning that they cannot
/// be held prints as a line before a terminal goes raw; it is said once. `on_terminal`: the user's
/// terminal is the agent's from now on, so a later warning goes to the log, not into the agent's
/// screen.
pub(crate) async fn keep_awake<F>(
    supervisor: &Supervisor,
    sleep: nightshift::config::SleepConfig,
    why: String,
    wants: F,
    on_terminal: bool,
) -> KeptAwake
where
    F: Fn() -> Vec<(String, Want)> + Send + 'static,
{
    fn said(changes: Vec<Change>, to_log: bool) {
        for change in changes {
            let Change::Failed(e) = change else { continue };
            if to_log {
                tracing::warn!("{e}; the run goes on, but the machine may sleep");
            } else {
                eprintln!("nightshift: warning: {e}; the run goes on, but the machine may sleep");
            }
        }
    }
    let mut keeper = NightKeeper::start(sleep).await;
    let supervisor = supervisor.clone();
    said(keeper.apply(&supervisor, &wants(), |_| true, &why).await, false);
    KeptAwake(tokio::spawn(async move {
        loop {
            tokio::time::sleep(AWAKE_CHECK).await;
            said(keeper.apply(&supervisor, &wants(), |_| true, &why).await, on_terminal);
        }
    }))
}

/// What the live sessions of `handles` need of the machine.
pub(crate) fn sessions_want(handles: &[SessionHandle]) -> impl Fn() -> Vec<(String, Want)> + Send + 'static {
    let handles = handles.to_vec();
    move || {
        handles
            .iter()
            .filter_map(|h| {
                let status = h.status();
                status.exit.is_none().then(|| (h.id().to_string(), status.options.awake))
            })
            .collect()
    }
}

/// The inhibitors [`keep_awake`] holds by the policy; let go when dropped.
pub(crate) struct KeptAwake(tokio::task::JoinHandle<()>);

impl Drop for KeptAwake {
    fn drop(&mut self) {
        // The task's end drops its keeper: that is the release.
        self.0.abort();
    }
}

/// How often a headless host looks at what its sessions need of the machine.
const AWAKE_CHECK: Duration = Duration::from_secs(5);
