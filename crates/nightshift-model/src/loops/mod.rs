//! A loop as the decisions see it: its [`machine`] and what an iteration's stream said
//! ([`stream`]). Running the iterations is the runtime's.

pub mod machine;
pub mod stream;
