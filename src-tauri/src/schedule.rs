//! The app's scheduled starts: every few seconds it looks at the journal's pending schedules, takes
//! over those whose own process is gone (a killed `nightshift run --at`, an app that quit or a
//! reboot), and starts each one whose time has come — here from its contract (or an older
//! journal's form), an older journal's command line in a detached `nightshift` of its own — or
//! skips it per `[schedule] missed`. See
//! [`nightshift::schedule`].

use nightshift::schedule::{self, Launch, Verdict};
use nightshift::SessionId;
use tauri::{AppHandle, Manager};

use crate::commands::Form;
use crate::AppState;

pub fn start(app: AppHandle) {
    tauri::async_runtime::spawn(async move {
        loop {
            look(&app);
            tokio::time::sleep(schedule::CHECK).await;
        }
    });
}

fn look(app: &AppHandle) {
    let state = app.state::<AppState>();
    let missed = nightshift::config::Config::load(state.paths.config_dir.as_deref())
        .map(|c| c.schedule.missed)
        .unwrap_or_default();
    let clock = state.supervisor.clock().clone();
    let me = std::process::id();
    let due = match state.supervisor.write_store(|s| schedule::due_now(s, clock.as_ref(), me, missed, true)) {
        Ok(due) => due,
        Err(e) => {
            tracing::warn!("cannot look at the scheduled starts: {e}");
            return;
        }
    };
    let fired = !due.is_empty();
    for (row, launch, verdict) in due {
        let id = SessionId::from(row.session.clone());
        if let Verdict::Skip { late_by } = verdict {
            for kind in schedule::skip(&row, late_by) {
                state.supervisor.emit(&id, kind);
            }
            continue;
        }
        if let Err(why) = fire(&state, &id, &launch) {
            failure(&state.supervisor, &id, &why);
        }
    }
    if fired {
        crate::awake::recheck(app);
    }
}

/// Starts a claimed schedule: from its contract, here; one an older Nightshift journalled as the
/// window's form, built again from it; one journalled as a command line, in a `nightshift` of its
/// own.
fn fire(state: &AppState, id: &SessionId, launch: &Launch) -> Result<(), String> {
    match launch {
        Launch::Contract { .. } => {
            state.supervisor.start_scheduled(id.clone(), None).map(drop).map_err(|e| e.to_string())
        }
        Launch::App { form } => {
            let form: Form =
                serde_json::from_value(form.clone()).map_err(|e| format!("its form cannot be read: {e}"))?;
            match form {
                Form::Session(form) => {
                    let worktree = form.worktree;
                    let contract = crate::commands::session_contract(state, form).map_err(|e| e.to_string())?;
                    let contract =
                        crate::commands::in_worktree(state, contract, worktree).map_err(|e| e.to_string())?;
                    let spec = nightshift::SessionSpec::from(contract);
                    state.supervisor.start_rebuilt(id.clone(), spec).map(drop).map_err(|e| e.to_string())
                }
                Form::Loop(form) => {
                    let spec = crate::commands::loop_spec(state, form.clone()).map_err(|e| e.to_string())?;
                    let spec = crate::commands::loop_in_worktrees(state, spec, &form).map_err(|e| e.to_string())?;
                    state.supervisor.start_rebuilt_loop(id.clone(), spec).map(drop).map_err(|e| e.to_string())
                }
            }
        }
        Launch::Cli { .. } => {
            let (supervisor, failing) = (state.supervisor.clone(), id.clone());
            let failed = move |why: String| failure(&supervisor, &failing, &why);
            nightshift::paths::ensure_private_dir(&state.paths.log_dir()).map_err(|e| e.to_string())?;
            let log = state.paths.log_dir().join("scheduled.log");
            schedule::start_elsewhere(&crate::cli_path(), &state.paths.state_dir, id.as_str(), launch, &log, failed)
        }
    }
}

/// A scheduled start that failed, journalled unless the session started after all.
fn failure(supervisor: &nightshift::Supervisor, id: &SessionId, why: &str) {
    let state = supervisor.with_store(|s| s.session(id.as_str())).ok().flatten().map(|r| r.state);
    if state != Some(nightshift::SessionState::Scheduled) {
        return;
    }
    tracing::warn!(session = %id, "the scheduled start failed: {why}");
    supervisor.emit(
        id,
        nightshift::EventKind::state(nightshift::SessionState::Failed, format!("the scheduled start failed: {why}")),
    );
}
