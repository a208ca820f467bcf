//! What one process's night does with the machine: the awake policy's [`Keeper`] set up by the
//! user's `[sleep]` settings and what this machine can do, asked whether it runs on battery, and
//! every release, alarm and wake journalled in the sessions it concerns.

use std::time::{Duration, Instant};

use crate::awake::{Change, Keeper, Want};
use crate::config::SleepConfig;
use crate::event::{EventKind, SessionId, SleepAction};
use crate::platform::{Os, Power};

use super::Supervisor;

/// How long an answer to "on battery?" is kept (a D-Bus round trip).
const BATTERY_KEPT: Duration = Duration::from_secs(60);

/// Whether a wake alarm can be set here, and why not: the helper with its capability, and a
/// machine that may suspend.
pub fn can_wake() -> Result<std::path::PathBuf, String> {
    if Os::can_suspend() == Some(false) {
        return Err("this machine may not suspend (logind's CanSuspend says no): there is no sleep to wake from".into());
    }
    Os::wake_helper()
}

/// The night's keeper of one process.
#[derive(Debug)]
pub struct NightKeeper {
    keeper: Keeper,
    /// Why no wake alarm can be set here, found at the start.
    no_alarm: Option<String>,
    battery: Option<(Instant, bool)>,
}

impl NightKeeper {
    /// A keeper by `config`, having asked whether a wake alarm can be set here (off the async
    /// threads: it runs the helper once), saying in the log when every wait will be held awake.
    pub async fn start(config: SleepConfig) -> NightKeeper {
        let keeper = tokio::task::spawn_blocking(move || NightKeeper::new(&config)).await;
        let keeper = keeper.unwrap_or_else(|_| NightKeeper {
            keeper: Keeper::default(),
            no_alarm: Some("the check for a wake alarm failed".into()),
            battery: None,
        });
        if let Some(why) = keeper.no_alarm() {
            tracing::info!("long waits are held awake: {why}");
        }
        keeper
    }

    fn new(config: &SleepConfig) -> NightKeeper {
        let (helper, no_alarm) = if config.through_waits {
            match can_wake() {
                Ok(helper) => (Some(helper), None),
                Err(e) => (None, Some(e)),
            }
        } else {
            (None, Some("[sleep] through_waits = false in config.toml".to_string()))
        };
        let keeper = Keeper::sleeping_with(config.settings(helper.is_some()), helper);
        NightKeeper { keeper, no_alarm, battery: None }
    }

    pub fn keeper(&self) -> &Keeper {
        &self.keeper
    }

    /// Why every wait is held awake by this process, if it is.
    pub fn no_alarm(&self) -> Option<&str> {
        self.keeper.alarm_warning().or(self.no_alarm.as_deref())
    }

    /// Whether the machine runs on battery, asked at most once a minute.
    async fn on_battery(&mut self) -> bool {
        match self.battery {
            Some((asked, battery)) if asked.elapsed() < BATTERY_KEPT => battery,
            _ => {
                let battery = tokio::task::spawn_blocking(Os::on_battery).await.ok().flatten() == Some(true);
                if self.battery.is_some_and(|(_, was)| was != battery) {
                    tracing::info!(battery, "the machine's power changed");
                }
                self.battery = Some((Instant::now(), battery));
                battery
            }
        }
    }

    /// Holds, releases and sets alarms for what `wants` need of the machine now, by the policy;
    /// journals each change in the sessions and starts of `wants` that `own` says this process
    /// runs and that hold it, and logs it.
    pub async fn apply(
        &mut self,
        supervisor: &Supervisor,
        wants: &[(String, Want)],
        own: impl Fn(&str) -> bool,
        why: &str,
    ) -> Vec<Change> {
        let battery = self.on_battery().await;
        let now = supervisor.journal.now();
        let changes = self.keeper.apply(wants, now, battery, why).await;
        let holding: Vec<&(String, Want)> = wants.iter().filter(|(id, w)| w.hold && own(id)).collect();
        let waits = holding.iter().map(|(id, w)| format!("{id}: {}", w.reason)).collect::<Vec<_>>().join("; ");
        let power = if battery { "on battery; " } else { "" };
        for change in &changes {
            let (action, at, due, reason) = match change {
                Change::Held => {
                    tracing::info!(sessions = holding.len(), "sleep assertion held (idle and sleep)");
                    continue;
                }
                Change::Released => {
                    tracing::info!("sleep assertion released: no session needs the machine awake");
                    continue;
                }
                Change::Failed(_) => continue,
                Change::Sleeping { wake_at, due } => {
                    tracing::info!(%wake_at, %due, battery, "sleep allowed through a long wait; wake alarm set");
                    (SleepAction::Allowed, *wake_at, Some(*due), format!("{power}every wait is long: {waits}"))
                }
                Change::AlarmCancelled { at } => {
                    tracing::info!(%at, "wake alarm taken back: the machine is needed before it");
                    (SleepAction::Cancelled, *at, None, format!("needed before then: {waits}"))
                }
                Change::AlarmFired { at } => {
                    tracing::info!(%at, "the wake alarm went off");
                    (SleepAction::Woken, *at, None, "the wake alarm went off".to_string())
                }
                Change::AlarmFailed(e) => {
                    tracing::warn!("no wake alarm: {e}; every wait is held awake");
                    (SleepAction::Refused, now, None, e.clone())
                }
            };
            for (id, _) in &holding {
                let reason = reason.clone();
                supervisor.journal.emit(&SessionId::from(id.clone()), EventKind::Sleep { action, at, due, reason });
            }
        }
        changes
    }
}
