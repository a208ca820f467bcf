//! `--at` and `--after-reset` on `run` and `loop`: record the session as `scheduled`, wait for its
//! time here (Ctrl-C cancels it; a closed terminal or a reboot leaves it to the next Nightshift
//! process), then start it. See [`nightshift::schedule`].

use std::process::ExitCode;

use anyhow::Context as _;
use nightshift::event::{EventKind, SessionId, SessionState, StopKind};
use nightshift::schedule::{self, Due, TimeOfDay, Waited};
use nightshift::store::Store;
use nightshift::supervisor::Supervisor;
use tokio::signal::unix::{signal, SignalKind};

#[derive(Debug, Clone, clap::Args)]
pub struct When {
    /// Start at this local time instead of now (HH:MM, the next such time; HH:MM:SS too): until
    /// then the session is listed as `scheduled`, and `nightshift stop` cancels it
    #[arg(long, value_name = "HH:MM", conflicts_with = "after_reset")]
    pub at: Option<String>,
    /// Start when the account's current 5-hour window resets, so the night begins with a fresh one
    #[arg(long)]
    pub after_reset: bool,
    /// Start the scheduled session ID now (how the app and `nightshift restore` start a schedule
    /// an older Nightshift journalled as its command line, once its own process is gone)
    #[arg(long, value_name = "ID", hide = true, conflicts_with_all = ["at", "after_reset"])]
    pub scheduled: Option<String>,
}

/// When the session begins.
#[derive(Debug)]
pub enum Begin {
    Now,
    /// At `due`: recorded with its contract, waited for here, started by another Nightshift
    /// process if this one is gone.
    At(Due),
    /// The scheduled session this is, whose time has come (one an older Nightshift journalled as
    /// its command line: `--scheduled ID`).
    Adopt(SessionId),
}

impl When {
    /// When the session begins; `account` is the one it runs under (its window for
    /// `--after-reset`; `None`: the client's default).
    pub fn begin(&self, store: &Store, account: Option<&str>, agent: nightshift::AgentKind) -> anyhow::Result<Begin> {
        if let Some(id) = &self.scheduled {
            let row = store.find_session(id)?;
            let claimed = store.schedule_of(&row.id)?.is_some_and(|s| s.claimed);
            if row.state != SessionState::Scheduled || !claimed {
                anyhow::bail!(
                    "session {} is not a scheduled session whose time has come; start a new one instead",
                    row.id
                );
            }
            return Ok(Begin::Adopt(SessionId::from(row.id)));
        }
        let now = chrono::Utc::now();
        let due = match (&self.at, self.after_reset) {
            (Some(at), _) => {
                let time: TimeOfDay = at.parse().map_err(|e| anyhow::anyhow!("--at: {e}"))?;
                schedule::at(time, now)
            }
            (None, true) => {
                let rows = store.latest_limits_by_account(agent)?;
                let latest = rows.iter().find(|r| r.account.as_deref() == account).map(|r| &r.sample);
                schedule::after_reset(latest, account.unwrap_or("the default account"), now)?
            }
            (None, false) => return Ok(Begin::Now),
        };
        Ok(Begin::At(due))
    }
}

/// Waits here for scheduled session `id`'s time, telling the user what happens; true when it is to
/// start now (claimed by this process), false when it went (cancelled, taken by another process,
/// or left for the next one).
pub async fn wait(
    supervisor: &Supervisor,
    sleep: nightshift::config::SleepConfig,
    id: &SessionId,
    due: &Due,
) -> anyhow::Result<(bool, ExitCode)> {
    let when = due.at.with_timezone(&chrono::Local).format("%a %H:%M:%S");
    eprintln!(
        "nightshift: session {id} starts {when} ({}); `nightshift stop {id}` or Ctrl-C cancels it. If this \
         process ends first, the app or `nightshift restore` starts it.",
        due.why
    );
    // Awake until then, when it is near (a machine asleep at its time starts it only on waking).
    let (session, at) = (id.to_string(), due.at);
    let _awake = super::awake::keep_awake(
        supervisor,
        sleep,
        format!("Nightshift session {id} starts {when}"),
        move || vec![(session.clone(), nightshift::awake::want_scheduled(at, chrono::Utc::now()))],
        false,
    )
    .await;
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot listen for signals")?;
    let mut terminate = signal(SignalKind::terminate()).context("cannot listen for signals")?;
    let mut hangup = signal(SignalKind::hangup()).context("cannot listen for signals")?;
    let stands = || {
        supervisor.with_store(|s| s.schedule_of(id.as_str())).ok().flatten().is_some_and(|s| !s.claimed)
            && supervisor
                .with_store(|s| s.session(id.as_str()))
                .ok()
                .flatten()
                .is_some_and(|r| r.state == SessionState::Scheduled)
    };
    let clock = supervisor.clock().clone();
    tokio::select! {
        waited = schedule::wait(clock.as_ref(), due.at, stands) => match waited {
            Waited::Gone => {
                eprintln!("nightshift: session {id} will not start here: it was cancelled, or another Nightshift process started it");
                Ok((false, ExitCode::SUCCESS))
            }
            Waited::Due => {
                let claimed = supervisor.write_store(|s| s.claim_schedule(id.as_str(), std::process::id(), clock.now()))?;
                if !claimed {
                    eprintln!("nightshift: session {id} was started by another Nightshift process");
                }
                Ok((claimed, ExitCode::SUCCESS))
            }
        },
        _ = interrupt.recv() => {
            supervisor.emit(id, EventKind::StopRequested { source: "Ctrl-C to nightshift".into(), kind: StopKind::User });
            supervisor.emit(id, EventKind::state(SessionState::Exited, "cancelled before it started (Ctrl-C)"));
            eprintln!("nightshift: session {id} is cancelled; it will not start");
            Ok((false, ExitCode::from(130)))
        }
        _ = terminate.recv() => Ok((false, left(id))),
        _ = hangup.recv() => Ok((false, left(id))),
    }
}

fn left(id: &SessionId) -> ExitCode {
    eprintln!("nightshift: session {id} stays scheduled; the app or `nightshift restore` starts it at its time");
    ExitCode::SUCCESS
}
