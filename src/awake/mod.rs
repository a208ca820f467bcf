//! Keeping the machine awake: what each session needs is the model's policy (re-exported here);
//! holding logind's idle and sleep inhibitors for it is the [`Keeper`]'s.

pub use nightshift_model::awake::*;

mod keeper;

pub use keeper::{inhibit, Change, Inhibitor, Keeper};
