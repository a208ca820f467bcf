//! The edge of the awake policy: logind's inhibitors held while the night needs the machine, and
//! the wake alarm set through `nightshift-wake` while it sleeps through a long wait.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

use super::{alarm_stands, night, Night, SleepSettings, Want};

/// logind's idle and sleep inhibitors, held while this value lives (never the display's).
pub struct Inhibitor(#[allow(dead_code)] keepawake::KeepAwake);

impl std::fmt::Debug for Inhibitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Inhibitor")
    }
}

/// Takes the inhibitors, saying `why` to logind (blocking: a D-Bus round trip). The error says
/// what failed, for a one-line warning: the run goes on, and the machine may sleep.
pub fn inhibit(why: &str) -> Result<Inhibitor, String> {
    keepawake::Builder::default()
        .display(false)
        .idle(true)
        .sleep(true)
        .reason(why)
        .app_name("Nightshift")
        .app_reverse_domain("dev.nightshift.app")
        .create()
        .map(Inhibitor)
        .map_err(|e| format!("cannot keep the machine awake: {e}; check that systemd-logind is running"))
}

/// What [`Keeper::apply`] changed, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Held,
    Released,
    /// The inhibitors could not be taken: a new warning, said once.
    Failed(String),
    /// The inhibitors are let go for a long wait, and a wake alarm is set at `wake_at` for what is
    /// due at `due` (a new alarm, or one moved to a new time).
    Sleeping {
        wake_at: DateTime<Utc>,
        due: DateTime<Utc>,
    },
    /// The alarm set for `at` is taken back: the machine is needed before then.
    AlarmCancelled {
        at: DateTime<Utc>,
    },
    /// The alarm set for `at` went off (it woke the machine, or the machine was awake anyway).
    AlarmFired {
        at: DateTime<Utc>,
    },
    /// No alarm could be set, and why: this process holds every wait awake from now on.
    AlarmFailed(String),
}

/// One wake alarm: the helper that holds it, armed for `at`. Dropping it ends the helper, and the
/// alarm with it.
#[derive(Debug)]
struct Alarm {
    at: DateTime<Utc>,
    child: tokio::process::Child,
    /// The helper's standard input, held open: when this process dies, however it dies, the
    /// pipe closes and the helper ends with its alarm.
    _lifeline: Option<tokio::process::ChildStdin>,
}

/// How long the helper may take to say it armed the alarm.
const ARM_ANSWER: Duration = Duration::from_secs(5);

impl Alarm {
    /// Starts `helper` for `at` and waits for its word that the alarm is armed; or why not, in one
    /// line (the helper's own, which names the fix).
    async fn arm(helper: &Path, at: DateTime<Utc>) -> Result<Alarm, String> {
        let mut child = tokio::process::Command::new(helper)
            .arg(at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot run the wake helper {}: {e}", helper.display()))?;
        let lifeline = child.stdin.take();
        let stdout = child.stdout.take().expect("piped");
        let mut first = String::new();
        let read = tokio::time::timeout(ARM_ANSWER, BufReader::new(stdout).read_line(&mut first)).await;
        if matches!(read, Ok(Ok(n)) if n > 0) && first.starts_with("armed") {
            return Ok(Alarm { at, child, _lifeline: lifeline });
        }
        let _ = child.start_kill();
        let mut said = String::new();
        if let Some(mut stderr) = child.stderr.take() {
            let _ = tokio::time::timeout(Duration::from_secs(1), stderr.read_to_string(&mut said)).await;
        }
        let _ = child.wait().await;
        let said = said.lines().next().unwrap_or("").trim().trim_start_matches("nightshift-wake: ").to_string();
        Err(match read {
            Err(_) => {
                format!("the wake helper {} did not arm an alarm within {} s", helper.display(), ARM_ANSWER.as_secs())
            }
            _ if said.is_empty() => format!("the wake helper {} ended without arming an alarm", helper.display()),
            _ => said,
        })
    }

    /// Whether the helper has ended: `Ok` when its alarm went off, `Err` with why not.
    fn ended(&mut self) -> Option<Result<(), String>> {
        match self.child.try_wait() {
            Ok(None) => None,
            Ok(Some(status)) if status.success() => Some(Ok(())),
            Ok(Some(status)) => Some(Err(format!("the wake helper ended before its alarm ({status})"))),
            Err(e) => Some(Err(format!("cannot tell whether the wake helper runs: {e}"))),
        }
    }
}

/// What one process holds of the machine, by the policy: the inhibitors while the night needs it
/// awake, and a wake alarm while it sleeps through a long wait.
#[derive(Debug, Default)]
pub struct Keeper {
    lock: Option<Inhibitor>,
    warning: Option<String>,
    sleep: SleepSettings,
    /// The wake helper (`nightshift-wake`, with its capability); without, every wait is held.
    helper: Option<PathBuf>,
    alarm: Option<Alarm>,
    /// Why no alarm can be set by this process (the helper failed once): every wait is held.
    broken: Option<String>,
}

impl Keeper {
    /// A keeper that sleeps through long waits by `sleep`, waking the machine with `helper`.
    pub fn sleeping_with(sleep: SleepSettings, helper: Option<PathBuf>) -> Keeper {
        Keeper { sleep, helper, ..Keeper::default() }
    }

    /// The settings this keeper decides by now, on `battery` or not: no alarm without a helper
    /// that works.
    pub fn settings(&self, battery: bool) -> SleepSettings {
        let can_wake = self.sleep.can_wake && self.helper.is_some() && self.broken.is_none();
        SleepSettings { can_wake, ..self.sleep }.on(battery)
    }

    /// Takes or lets go of the inhibitors and sets or takes back the wake alarm for what `wants`
    /// need of the machine at `now`, saying `why` to logind when taking them (a blocking D-Bus
    /// round trip, off the async threads).
    pub async fn apply(
        &mut self,
        wants: &[(String, Want)],
        now: DateTime<Utc>,
        battery: bool,
        why: &str,
    ) -> Vec<Change> {
        let mut changes = Vec::new();
        if let Some(ended) = self.alarm.as_mut().and_then(Alarm::ended) {
            let at = self.alarm.take().map(|a| a.at).unwrap_or(now);
            match ended {
                Ok(()) => changes.push(Change::AlarmFired { at }),
                Err(e) => {
                    self.broken = Some(e.clone());
                    changes.push(Change::AlarmFailed(e));
                }
            }
        }
        let settings = self.settings(battery);
        if self.alarm.as_ref().is_some_and(|a| alarm_stands(wants, now, &settings, a.at)) {
            // Asleep through the wait, or free to be: the alarm wakes it.
            self.lock = None;
            return changes;
        }
        match night(wants, now, &settings) {
            Night::Sleep { wake_at, due } => {
                if self.alarm.as_ref().map(|a| a.at) != Some(wake_at) {
                    self.alarm = None;
                    let helper = self.helper.clone().expect("can_wake needs a helper");
                    match Alarm::arm(&helper, wake_at).await {
                        Ok(alarm) => {
                            self.alarm = Some(alarm);
                            changes.push(Change::Sleeping { wake_at, due });
                        }
                        Err(e) => {
                            self.broken = Some(e.clone());
                            changes.push(Change::AlarmFailed(e));
                            changes.extend(self.hold(why).await);
                            return changes;
                        }
                    }
                }
                // Dropping the lock closes its file descriptors: that is the release.
                self.lock = None;
            }
            Night::Hold => {
                changes.extend(self.cancel());
                changes.extend(self.hold(why).await);
            }
            Night::Free => {
                changes.extend(self.cancel());
                if self.lock.take().is_some() {
                    changes.push(Change::Released);
                }
            }
        }
        changes
    }

    fn cancel(&mut self) -> Option<Change> {
        self.alarm.take().map(|a| Change::AlarmCancelled { at: a.at })
    }

    async fn hold(&mut self, why: &str) -> Option<Change> {
        if self.lock.is_some() {
            return None;
        }
        let why = why.to_string();
        match tokio::task::spawn_blocking(move || inhibit(&why)).await {
            Ok(Ok(lock)) => {
                self.lock = Some(lock);
                self.warning = None;
                Some(Change::Held)
            }
            Ok(Err(e)) if self.warning.as_deref() != Some(&e) => {
                self.warning = Some(e.clone());
                Some(Change::Failed(e))
            }
            Ok(Err(_)) => None,
            Err(e) => {
                tracing::error!("the sleep inhibitor task failed: {e}");
                None
            }
        }
    }

    pub fn holding(&self) -> bool {
        self.lock.is_some()
    }

    /// The wake alarm set now, if the machine sleeps through a wait.
    pub fn alarm(&self) -> Option<DateTime<Utc>> {
        self.alarm.as_ref().map(|a| a.at)
    }

    /// Why the inhibitors could not be taken, the last time they were asked for.
    pub fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }

    /// Why no wake alarm can be set by this process, when one failed.
    pub fn alarm_warning(&self) -> Option<&str> {
        self.broken.as_deref()
    }
}
