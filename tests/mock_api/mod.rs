//! The stand-in Anthropic API of the core ([`nightshift::standin::anthropic`]), as the tests name it.
#![allow(unused_imports)]

pub use nightshift::standin::anthropic::AnthropicApi as MockApi;
pub use nightshift::standin::anthropic::*;
