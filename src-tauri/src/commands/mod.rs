//! What the window can ask for. Each command is a thin call into the core; every error reaches the
//! window as one `{code, message}`.
//!
//! A session is reached the same way whoever runs it: the app's own sessions answer through
//! [`control::answer`] in-process, those of a headless `nightshift run` through their control
//! socket.
//!
//! - `sessions`: a session's page and its actions;
//! - `new`: the New session page;
//! - `settings`: the other views and the app's settings;
//! - `needs`: the actions of the digest's and the morning's "needs you" rows;
//! - `replay`: a recorded life played back;
//! - `worktrees`: the worktrees sessions worked in, listed and removed.

mod needs;
mod new;
mod replay;
mod sessions;
mod settings;
mod worktrees;

pub use needs::*;
pub use new::*;
pub use replay::*;
pub use sessions::*;
pub use settings::*;
pub use worktrees::*;

use std::path::PathBuf;

use nightshift::config::Config;
use nightshift::control::{self, Request, Response};
use nightshift::digest::{self, Format, Range, LAST_VIEWED_KEY};
use nightshift::limits::resume;
use nightshift::notice::Switches;
use nightshift::schedule;
use nightshift::session::{Change, Options};
use nightshift::store::{SessionKind, SessionSummary, Standing};
use nightshift::{AgentKind, SessionSpec};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tauri::{AppHandle, State};

use crate::error::{Code, UiError};
use crate::AppState;

#[cfg(test)]
mod tests {
    use super::new::expand_home;
    use super::{Actions, SessionKind, SessionOptions, Standing};

    #[test]
    fn the_options_page_gets_the_core_auto_resume_defaults() {
        let json = serde_json::to_value(SessionOptions::from(nightshift::session::Options::default())).unwrap();
        assert_eq!(json["respawn_active"], false, "the options themselves stay at the top level");
        let defaults = serde_json::to_value(nightshift::limits::resume::Settings::default()).unwrap();
        assert_eq!(json["auto_resume_defaults"], defaults);
        assert_eq!(json["auto_resume_defaults"]["margin"], 5.0, "seconds, as the page's field takes them");
    }

    #[test]
    fn a_session_page_may_ask_what_the_commands_do() {
        use SessionKind::{Loop, Terminal};
        use Standing::*;
        let table = [
            // standing, kind, its agent names conversations, (stop, resume, send)
            (Live, Terminal, true, (true, false, true)),
            (Live, Loop, true, (true, false, false)),
            (Scheduled, Terminal, true, (true, false, false)),
            // No Nightshift runs these: Stop ends them in the journal (`end_orphan`).
            (Lost, Terminal, false, (true, true, false)),
            (Kept, Terminal, true, (true, false, false)),
            // An ended terminal session's conversation is carried on in a new session.
            (Ended, Terminal, true, (false, true, false)),
            (Ended, Terminal, false, (false, false, false)),
            (Ended, Loop, true, (false, false, false)),
        ];
        for (standing, kind, conversing, (stop, resume, send)) in table {
            let actions = Actions::of(standing, kind, conversing);
            assert_eq!(actions, Actions { stop, resume, send }, "{standing:?} {kind:?} {conversing}");
        }
    }

    #[test]
    fn home_is_expanded_only_at_the_start() {
        assert_eq!(expand_home("~/src", Some("/home/me")), "/home/me/src");
        assert_eq!(expand_home("~", Some("/home/me")), "/home/me");
        assert_eq!(expand_home("/srv/~/x", Some("/home/me")), "/srv/~/x");
        assert_eq!(expand_home("~/src", None), "~/src");
    }
}
