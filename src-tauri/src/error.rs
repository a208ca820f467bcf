//! The one error shape the window sees: `{ code, message }`.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{message}")]
pub struct UiError {
    /// Stable, machine-readable: the window may act on it.
    pub code: &'static str,
    /// For people: what went wrong and what to do.
    pub message: String,
}

impl From<nightshift::store::StoreError> for UiError {
    fn from(e: nightshift::store::StoreError) -> Self {
        use nightshift::store::StoreError;
        let code = match e {
            StoreError::NoSuchSession(_) => "no_session",
            StoreError::Ambiguous { .. } => "ambiguous_session",
            _ => "journal",
        };
        Self { code, message: e.to_string() }
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
}
