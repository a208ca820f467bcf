//! The one error shape the window sees: `{ code, message }`.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{message}")]
pub struct UiError {
    /// Stable, machine-readable: the window may act on it.
    pub code: String,
    /// For people: what went wrong and what to do.
    pub message: String,
}

impl UiError {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self { code: code.to_string(), message: message.into() }
    }
}

impl From<nightshift::store::StoreError> for UiError {
    fn from(e: nightshift::store::StoreError) -> Self {
        use nightshift::store::StoreError;
        let code = match e {
            StoreError::NoSuchSession(_) => "no_session",
            StoreError::Ambiguous { .. } => "ambiguous_session",
            _ => "journal",
        };
        Self::new(code, e.to_string())
    }
}

impl From<nightshift::config::ConfigError> for UiError {
    fn from(e: nightshift::config::ConfigError) -> Self {
        use nightshift::config::ConfigError;
        let code = match e {
            ConfigError::Builtin(_) => "builtin_preset",
            ConfigError::NoPreset(_) => "no_preset",
            ConfigError::BadName(_) => "bad_preset_name",
            ConfigError::NoDir => "no_config_dir",
            _ => "config",
        };
        Self::new(code, e.to_string())
    }
}

impl From<nightshift::control::ControlError> for UiError {
    fn from(e: nightshift::control::ControlError) -> Self {
        use nightshift::control::{Code, ControlError};
        match e {
            // The session is gone from its process, or no process runs it: nothing to ask.
            ControlError::Refused(body) if matches!(body.code, Code::NoSession | Code::SessionEnded) => {
                Self::new("not_running", body.message)
            }
            ControlError::Refused(body) => Self { code: body.code.to_string(), message: body.message },
            ControlError::NotRunning(message) => Self::new("not_running", message),
            other => Self::new("unreachable", other.to_string()),
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
        assert_eq!((e.code.as_str(), e.message.as_str()), ("bad_request", "not a request"));
        let body = nightshift::control::ErrorBody::new(nightshift::control::Code::SessionEnded, "gone");
        let e = UiError::from(nightshift::control::ControlError::Refused(body));
        assert_eq!((e.code.as_str(), e.message.as_str()), ("not_running", "gone"), "nothing to ask, however said");
    }
}
