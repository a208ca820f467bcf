//! Tonight's network fence for a start of a sandboxed session: the hosts it lets through, each with
//! why, and Nightshift's proxy that judges every connection by them and reports what it refused.
//! Read anew at every start from what the project says then (its remotes, its tools' package
//! indexes) and what the user listed.

use std::path::Path;

use crate::agent::{Fence, Sandbox};
use crate::event::FencedHost;
use crate::proxy::{Pattern, Policy};
use crate::session::FenceView;

/// The fence of one start.
#[derive(Debug)]
pub struct Tonight {
    pub policy: Policy,
    pub view: FenceView,
}

impl Tonight {
    /// What the client is told its sandbox may reach (the proxy judges all the same).
    pub fn allowed(&self) -> Vec<String> {
        self.policy.patterns().iter().map(ToString::to_string).collect()
    }
}

/// The fence of `sandbox` for a start in `cwd` with `env` (the session's environment).
pub fn tonight(sandbox: &Sandbox, cwd: &Path, env: &[(String, String)]) -> Tonight {
    let var = |key: &str| match env.iter().rev().find(|(k, _)| k == key) {
        Some((_, v)) => Some(v.clone()),
        None => std::env::var(key).ok(),
    };
    let mut hosts: Vec<FencedHost> = Vec::new();
    let mut add = |host: String, why: String| {
        if !hosts.iter().any(|h| h.host == host) {
            hosts.push(FencedHost { host, why });
        }
    };
    for host in &sandbox.network {
        add(host.clone(), "your list ([sandbox] network, --allow-host)".into());
    }
    let mut warnings = Vec::new();
    if sandbox.fence == Fence::Project {
        // The agent's API, should a command call it (a base URL the user set; else the client's
        // own traffic is not a command's).
        for key in ["ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"] {
            if let Some(host) = var(key).as_deref().and_then(host_of) {
                add(host, format!("the agent's API ({key})"));
            }
        }
        // The session's environment over this process's own (its HOME, PATH and the tools' settings).
        let vars = std::env::vars().filter(|(k, _)| !env.iter().any(|(e, _)| e == k)).chain(env.iter().cloned());
        let found = crate::fence::project(cwd, &crate::fence::Env::new(vars));
        for allowed in found.hosts {
            let host = match allowed.port {
                Some(port) => Pattern::Host { host: allowed.host, port: Some(port) }.to_string(),
                None => allowed.host,
            };
            add(host, allowed.why.words());
        }
        warnings = found.warnings;
    }
    let policy = match sandbox.fence {
        Fence::Open => Policy::open(),
        _ => Policy::only(hosts.iter().filter_map(|h| Pattern::parse(&h.host))),
    };
    Tonight { policy, view: FenceView { fence: sandbox.fence, hosts, warnings, refused: Vec::new() } }
}

/// The host of a URL (`https://user:pw@host:8443/x` → `host:8443`), never its credentials.
fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next()?.rsplit('@').next()?;
    Pattern::parse(authority).map(|p| p.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_urls_host_without_its_credentials() {
        assert_eq!(host_of("https://user:secret@api.example.org:8443/v1").as_deref(), Some("api.example.org:8443"));
        assert_eq!(host_of("http://127.0.0.1:4000").as_deref(), Some("127.0.0.1:4000"));
        assert_eq!(host_of("http://[::1]:4000/").as_deref(), Some("[::1]:4000"));
        assert_eq!(host_of("not a url at all"), None);
    }
}
