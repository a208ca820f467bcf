//! A session's secret, shared with its statusLine exporter and hooks, which prove with it that
//! they speak for the session over the control socket. A leaf: it uses nothing of the crate.

use serde::{Deserialize, Serialize};

/// A session's secret for its statusLine exporter and hooks: compared, never shown (`Debug` prints
/// `Token(hidden)`, so no log line or error can carry it).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Token(String);

impl Token {
    /// A fresh random token (128 bits).
    pub fn random() -> Self {
        Self(format!("{:032x}", rand::random::<u128>()))
    }

    /// The secret itself, for the client's environment and for comparing.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for Token {
    fn from(s: String) -> Self {
        Self(s)
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(hidden)")
    }
}
