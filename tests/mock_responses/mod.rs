//! The stand-in Responses API of the core ([`nightshift::standin::openai`]), as the tests name it.
#![allow(unused_imports)]

pub use nightshift::standin::openai::ResponsesApi as MockResponses;
pub use nightshift::standin::openai::*;
