//! The fence's proxy: the one way out of a sandboxed session's commands to the network. Claude
//! Code's sandbox is given its ports (`sandbox.network.httpProxyPort` and `socksProxyPort`) instead
//! of running a proxy of its own, so every connection a command tries is seen here, allowed or
//! refused, whatever the command's exit code makes of it afterwards.
//!
//! It speaks HTTP (`CONNECT host:port` for TLS and ssh — the client's `GIT_SSH_COMMAND` tunnels
//! through it — and absolute-form requests for plain `http://`) and SOCKS5 (`CONNECT` by name or
//! address), listens on 127.0.0.1 only, and asks one [`Policy`] (pure: the fence's hosts and
//! `*.domain` patterns) of each connection by the host as the command named it. A refusal is
//! answered (HTTP 403 with a line the agent can read, SOCKS "not allowed by ruleset") and reported
//! on a channel with its host and port. The policy can be changed while it runs (a host allowed
//! for the rest of the night).

mod http;
mod socks;

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

pub use nightshift_model::hosts::{Pattern, Policy};

/// How long a client has to say where it goes.
const HEAD_WITHIN: Duration = Duration::from_secs(30);
/// How long connecting to where it goes may take.
const CONNECT_WITHIN: Duration = Duration::from_secs(20);

/// A connection the fence refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub host: String,
    pub port: u16,
}

/// A connection the fence let through (for the counts; the host only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passed {
    pub host: String,
    pub port: u16,
}

/// What the proxy tells its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    Refused(Refused),
    Passed(Passed),
}

/// A running proxy: its two ports on 127.0.0.1, and the policy it asks. Dropping it stops both
/// listeners (connections under way end with their commands).
#[derive(Debug)]
pub struct Proxy {
    pub http_port: u16,
    pub socks_port: u16,
    policy: Arc<RwLock<Policy>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Proxy {
    /// Starts both listeners on free ports of 127.0.0.1 (within a Tokio runtime), asking `policy`
    /// and telling `reports` what it let through and what it refused.
    pub async fn start(policy: Policy, reports: mpsc::UnboundedSender<Report>) -> std::io::Result<Self> {
        Self::start_now(policy, reports)
    }

    /// [`Proxy::start`] from code that runs within a Tokio runtime but is not async itself.
    pub fn start_now(policy: Policy, reports: mpsc::UnboundedSender<Report>) -> std::io::Result<Self> {
        let policy = Arc::new(RwLock::new(policy));
        let listen = || -> std::io::Result<TcpListener> {
            let std = std::net::TcpListener::bind("127.0.0.1:0")?;
            std.set_nonblocking(true)?;
            TcpListener::from_std(std)
        };
        let (http, socks) = (listen()?, listen()?);
        let (http_port, socks_port) = (http.local_addr()?.port(), socks.local_addr()?.port());
        let tasks = vec![
            tokio::spawn(serve(http, Arc::clone(&policy), reports.clone(), Kind::Http)),
            tokio::spawn(serve(socks, Arc::clone(&policy), reports, Kind::Socks)),
        ];
        Ok(Self { http_port, socks_port, policy, tasks })
    }

    /// Lets `host` through from now on (the user allowed it for the rest of the night).
    pub fn allow(&self, pattern: Pattern) {
        self.policy.write().unwrap_or_else(|p| p.into_inner()).add(pattern);
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Http,
    Socks,
}

async fn serve(listener: TcpListener, policy: Arc<RwLock<Policy>>, reports: mpsc::UnboundedSender<Report>, kind: Kind) {
    loop {
        let Ok((client, _)) = listener.accept().await else { continue };
        let (policy, reports) = (Arc::clone(&policy), reports.clone());
        tokio::spawn(async move {
            let allows =
                move |host: &str, port: u16| policy.read().unwrap_or_else(|p| p.into_inner()).allows(host, port);
            let result = match kind {
                Kind::Http => http::serve(client, &allows, &reports).await,
                Kind::Socks => socks::serve(client, &allows, &reports).await,
            };
            if let Err(e) = result {
                tracing::debug!("a fenced connection ended: {e}");
            }
        });
    }
}

/// Connects to `host:port` for a command the fence let through.
async fn connect(host: &str, port: u16) -> std::io::Result<TcpStream> {
    let addrs: Vec<SocketAddr> = tokio::time::timeout(CONNECT_WITHIN, tokio::net::lookup_host((host, port)))
        .await
        .map_err(timed_out)??
        .collect();
    let mut last = std::io::Error::new(std::io::ErrorKind::NotFound, format!("{host} has no address"));
    for addr in addrs {
        match tokio::time::timeout(CONNECT_WITHIN, TcpStream::connect(addr)).await.map_err(timed_out)? {
            Ok(stream) => return Ok(stream),
            Err(e) => last = e,
        }
    }
    Err(last)
}

fn timed_out(_: tokio::time::error::Elapsed) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::TimedOut, "it took too long")
}

/// What a refused command is told (an HTTP body, a log line): the host, and that it is the fence.
pub fn refusal_words(host: &str, port: u16) -> String {
    format!(
        "Nightshift's network fence refused {host}:{port}: it is not among the hosts this project uses tonight. Do \
         not look for a way around it; note what you needed in your progress notes and carry on with the rest."
    )
}

#[cfg(test)]
mod tests;
