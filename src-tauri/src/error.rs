//! The one error shape the window sees: `{ code, message }`.

use serde::Serialize;

/// What went wrong, by a name the window may act on (its `quietCodes`); stable across versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Code {
    AgentSignals,
    AmbiguousSession,
    Autostart,
    BadAgent,
    BadArgs,
    BadCommand,
    BadCwd,
    BadForm,
    /// Not a host the network fence can let through.
    BadHost,
    BadLoop,
    BadPresetName,
    BadPush,
    BadPushToken,
    BadRange,
    BadSalvage,
    BadSize,
    BadStart,
    BadSwitch,
    BadWorktree,
    BuiltinPreset,
    Config,
    DigestFailed,
    DoctorFailed,
    EmptyText,
    HandoffUnreadable,
    Journal,
    NoConfigDir,
    NoPreset,
    NoRecording,
    /// The agent's sandbox cannot run here, and the settings do not allow starting without it.
    NoSandbox,
    NoSession,
    NotATerminal,
    NotAllReached,
    NotRunning,
    RecordingUnreadable,
    ResumeFailed,
    StartFailed,
    TerminalClosed,
    Unreachable,
    /// A worktree holds work a removal would lose (remove it anyway with force).
    WorktreeAtRisk,
    /// Another Nightshift process refused, with its own code.
    #[serde(untagged)]
    Refused(nightshift::control::Code),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{message}")]
pub struct UiError {
    /// Stable, machine-readable: the window may act on it.
    pub code: Code,
    /// For people: what went wrong and what to do.
    pub message: String,
}

impl UiError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }
}

impl From<nightshift::store::StoreError> for UiError {
    fn from(e: nightshift::store::StoreError) -> Self {
        use nightshift::store::StoreError;
        let code = match e {
            StoreError::NoSuchSession(_) => Code::NoSession,
            StoreError::Ambiguous { .. } => Code::AmbiguousSession,
            _ => Code::Journal,
        };
        Self::new(code, e.to_string())
    }
}

impl From<nightshift::config::ConfigError> for UiError {
    fn from(e: nightshift::config::ConfigError) -> Self {
        use nightshift::config::ConfigError;
        let code = match e {
            ConfigError::Builtin(_) => Code::BuiltinPreset,
            ConfigError::NoPreset(_) => Code::NoPreset,
            ConfigError::BadName(_) => Code::BadPresetName,
            ConfigError::NoDir => Code::NoConfigDir,
            _ => Code::Config,
        };
        Self::new(code, e.to_string())
    }
}

impl From<nightshift::supervisor::build::BuildError> for UiError {
    fn from(e: nightshift::supervisor::build::BuildError) -> Self {
        use nightshift::supervisor::build::BuildError;
        match e {
            BuildError::Cwd(message) => Self::new(Code::BadCwd, message),
            BuildError::Command(message) => Self::new(Code::BadCommand, message),
            BuildError::Adapter(e) => Self::new(Code::AgentSignals, e.to_string()),
            BuildError::Config(e) => e.into(),
            BuildError::Switch(e) => Self::new(Code::BadSwitch, e.to_string()),
            BuildError::Sandbox(message) => Self::new(Code::NoSandbox, message),
            BuildError::Loop(e) => Self::new(Code::BadLoop, e.to_string()),
            e @ (BuildError::Guard(_) | BuildError::Setting(_)) => Self::new(Code::BadForm, e.to_string()),
        }
    }
}

impl From<nightshift::control::ControlError> for UiError {
    fn from(e: nightshift::control::ControlError) -> Self {
        use nightshift::control::{Code as Refusal, ControlError};
        match e {
            // The session is gone from its process, or no process runs it: nothing to ask.
            ControlError::Refused(body) if matches!(body.code, Refusal::NoSession | Refusal::SessionEnded) => {
                Self::new(Code::NotRunning, body.message)
            }
            ControlError::Refused(body) => Self { code: Code::Refused(body.code), message: body.message },
            ControlError::NotRunning(message) => Self::new(Code::NotRunning, message),
            other => Self::new(Code::Unreachable, other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shape_is_code_and_message() {
        let e = UiError::from(nightshift::store::StoreError::NoSuchSession("abc".into()));
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json, serde_json::json!({"code": "no_session", "message": e.message}));
        assert_eq!(json.as_object().unwrap().len(), 2);
    }

    #[test]
    fn a_refusal_from_another_process_keeps_its_code() {
        let body = nightshift::control::ErrorBody::new(nightshift::control::Code::BadRequest, "not a request");
        let e = UiError::from(nightshift::control::ControlError::Refused(body));
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            serde_json::json!({"code": "bad_request", "message": "not a request"})
        );
        let body = nightshift::control::ErrorBody::new(nightshift::control::Code::SessionEnded, "gone");
        let e = UiError::from(nightshift::control::ControlError::Refused(body));
        assert_eq!((e.code, e.message.as_str()), (Code::NotRunning, "gone"), "nothing to ask, however said");
    }
}
