//! What the user armed for a session or a loop is the model's ([`Contract`], re-exported here);
//! what of this process's environment a start keeps is read here.

pub use nightshift_model::contract::*;

/// The variables of [`KEPT_ENV`] this process has.
pub fn kept_env() -> Vec<(String, String)> {
    KEPT_ENV.iter().filter_map(|k| std::env::var(k).ok().map(|v| ((*k).to_string(), v))).collect()
}
