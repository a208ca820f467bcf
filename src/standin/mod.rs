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

use std::net::SocketAddr;
use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the epoch, as the APIs' headers give instants.
pub fn epoch(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// How many times each prompt has been answered overloaded, for `mock:overload:K`.
#[derive(Debug, Default)]
struct Overloads(std::sync::Mutex<std::collections::HashMap<String, u32>>);

impl Overloads {
    /// Whether this request of `prompt` is refused as overloaded: its first `k` are.
    fn refuse(&self, prompt: &str, k: u32) -> bool {
        let mut seen = self.0.lock().unwrap();
        let n = seen.entry(prompt.to_string()).or_insert(0);
        *n += 1;
        *n <= k
    }
}

/// The tool calls whose results have been answered, by id.
#[derive(Debug, Default)]
struct Answered(std::sync::Mutex<std::collections::HashSet<String>>);

impl Answered {
    /// Marks each of `ids` answered; whether any of them was not yet.
    fn any_new<'a>(&self, ids: impl IntoIterator<Item = &'a str>) -> bool {
        let mut answered = self.0.lock().unwrap();
        // Every one is marked: counted, not stopped at the first new one.
        ids.into_iter().filter(|id| answered.insert(id.to_string())).count() > 0
    }
}

/// A stand-in's server on a free port of 127.0.0.1 (never another address); stops when dropped.
#[derive(Debug)]
struct Serving {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Serving {
    async fn start(app: axum::Router) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            // Ends only when the task is aborted (the stand-in dropped).
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { addr, task })
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.task.abort();
    }
}
