//! What hosts the sessions of one long-lived Nightshift process, wired alike in each: `run`,
//! `loop`, `restore` and the tray app. A supervisor on the journal, its control socket (so
//! `nightshift send/stop/attach` and the window reach its sessions, and Claude's statusLine and
//! hooks report to it), the `nightshift` binary those run as, and the phone: its pushes of these
//! sessions' notices and the answers to them.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::control::ControlServer;
use crate::paths::Paths;
use crate::push::Following;
use crate::remote::Listening;
use crate::store::Store;
use crate::supervisor::Supervisor;

/// When the phone hears from this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phone {
    /// When `[push]` sets a target as the process starts (a headless run: its settings do not
    /// change under it); a bad `[push]` is said and left off, the sessions matter more.
    IfSet,
    /// From the start, whether or not a target is set yet: the app's settings can set one later.
    Always,
}

/// What a process is to the night: its phone, its name in the journal, whether it adopts.
#[derive(Debug, Clone, Copy)]
pub struct Role {
    pub phone: Phone,
    /// How the journal names it (`the tray app`, `nightshift keep`), with its pid after.
    pub name: &'static str,
    /// Whether it takes over the sessions of a Nightshift process that died or hung (see
    /// [`crate::supervisor::adopt`]); every process keeps the lease on its own either way.
    pub adopts: bool,
}

/// One process's sessions and their surfaces.
#[derive(Debug)]
pub struct Host {
    pub supervisor: Supervisor,
    /// The phone's notifications of these sessions, when they are followed.
    pub push: Option<Following>,
    /// What could not be set up, a line each, for the process to say (it goes on without it).
    pub problems: Vec<String>,
    /// Kept for the life of the host: dropping it removes the socket.
    control: Option<ControlServer>,
    /// The phone's answers, heard while the sessions run.
    answers: Option<Listening>,
    /// The lease on this process's sessions, and the adoption of others'.
    night: tokio::task::JoinHandle<()>,
}

impl Host {
    /// The host of this process on `store`, its sessions' hooks and statusLine run as `cli`.
    /// Needs the Tokio runtime (the socket's server, the phone's tasks).
    pub fn open(paths: &Paths, store: Store, clock: Arc<dyn Clock>, cli: &Path, role: Role) -> Self {
        let phone = role.phone;
        let mut supervisor = Supervisor::new(store, clock);
        let mut problems = Vec::new();
        let socket = paths.control_socket(std::process::id());
        let control = match ControlServer::bind(&socket, supervisor.clone()) {
            Ok(server) => {
                supervisor.set_control_socket(socket);
                supervisor.set_cli(cli);
                Some(server)
            }
            Err(e) => {
                tracing::warn!(
                    "no control socket at {}: {e}; `nightshift send/stop` cannot reach this process's sessions",
                    socket.display()
                );
                None
            }
        };
        let setup = crate::push::load(paths.config_dir.as_deref()).unwrap_or_else(|problem| {
            tracing::warn!("push notifications are off: {problem}");
            problems.push(format!("push notifications are off: {problem}"));
            crate::push::Setup::default()
        });
        if setup.settings.configured() {
            tracing::info!("push notifications are on");
        }
        let push = match phone {
            Phone::IfSet => crate::push::follow(&supervisor, setup),
            Phone::Always => Some(crate::push::start(&supervisor, setup, crate::push::RETRY_AFTER.to_vec())),
        };
        let answers = push
            .as_ref()
            .filter(|p| phone == Phone::Always || p.answers().is_some())
            .map(|p| crate::remote::listen(&supervisor, p));
        let lease =
            crate::config::Config::load(paths.config_dir.as_deref()).map(|c| c.adoption.lease).unwrap_or_else(|e| {
                problems.push(format!("{e}; the lease on sessions is the default one"));
                crate::supervisor::adopt::LEASE
            });
        let by = format!("{} (process {})", role.name, std::process::id());
        let night = supervisor.keep_night(crate::supervisor::Adoption { by, lease, adopts: role.adopts });
        Self { supervisor, push, problems, control, answers, night }
    }

    /// The sessions are over: the socket goes, the phone's answers are no longer heard, and the
    /// last notices reach the phone (waiting at most `within`).
    pub async fn finish(self, within: Duration) {
        self.night.abort();
        drop(self.control);
        drop(self.answers);
        if let Some(push) = self.push {
            push.finish(within).await;
        }
    }
}
