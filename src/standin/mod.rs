//! Stand-ins for the agents' APIs on 127.0.0.1: the Anthropic Messages API that Claude Code talks
//! to, and the OpenAI Responses API that Codex talks to. Each answers from the last
//! `mock:NAME[:ARG]` marker of the prompt it is sent, so what happens is chosen by what is typed:
//! a short answer, a long one, a tool call, a question, a usage limit, an overload.
//!
//! `nightshift doctor --canary` drives tonight's installed clients through them, and the project's
//! tests drive the pinned clients the same way: one implementation, so what the canary checks is
//! what the tests check. They never reach another address, cost nothing and need no login; the
//! clients are given a throwaway key.

pub mod anthropic;
pub mod openai;

pub use anthropic::AnthropicApi;
pub use openai::ResponsesApi;
