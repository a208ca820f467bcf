//! The agent's own sandbox, set per session: Claude Code's native one (bubblewrap and a socat
//! proxy on Linux) through the session's `--settings`, Codex's `workspace-write`. Inside it, Bash
//! runs without a permission prompt, so an unattended night neither stalls on prompts nor runs
//! with `--dangerously-skip-permissions` on the whole machine. Nothing is written to the user's
//! own settings.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::AgentKind;

/// A session's or loop's sandbox.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sandbox {
    /// Folders its commands may write besides the one it starts in (and the client's own): the
    /// top of its worktree when it starts in a subfolder of it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write: Vec<PathBuf>,
    /// Hosts its commands may reach besides the fence's own (`[sandbox] network`, `--allow-host`:
    /// names, `host:port`, `*.domain`); every other is refused, never asked about. The client's
    /// own traffic to its API is not a command's and goes on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<String>,
    /// How far its commands reach the network.
    #[serde(default)]
    pub fence: Fence,
}

/// Nightshift's proxy as a sandbox goes through it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Proxied {
    pub http_port: u16,
    pub socks_port: u16,
    /// Unix sockets its commands may reach (the ssh agent's, to push over ssh).
    pub unix_sockets: Vec<PathBuf>,
}

/// How far a sandboxed session's commands reach the network.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fence {
    /// The hosts the user listed alone, through the client's own proxy (a contract from before
    /// fences reads so).
    #[default]
    None,
    /// The project's own hosts (its remotes, the package indexes its tools use), the agent's API
    /// host and the user's list, through Nightshift's proxy, which tells every refusal.
    Project,
    /// Any host, through Nightshift's proxy: nothing refused, every connection seen.
    Open,
}

impl Fence {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Project => "project",
            Self::Open => "open",
        }
    }
}

impl std::str::FromStr for Fence {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "none" => Ok(Self::None),
            "project" => Ok(Self::Project),
            "open" => Ok(Self::Open),
            other => Err(format!("`{other}` is no network fence: give open, project or none")),
        }
    }
}

impl Sandbox {
    /// Tonight's fence as asked (`--network`), with `allow` (`--allow-host`) added to the hosts
    /// of `[sandbox] network`; every host checked, a bad one refused in one line with the fix.
    pub fn fenced(&mut self, fence: Option<Fence>, allow: &[String]) -> Result<(), String> {
        if let Some(fence) = fence {
            self.fence = fence;
        }
        for host in allow {
            if !self.network.contains(host) {
                self.network.push(host.clone());
            }
        }
        match self.network.iter().find(|h| crate::hosts::Pattern::parse(h).is_none()) {
            Some(bad) => Err(format!(
                "`{bad}` is not a host the fence takes: give a name, an address, host:port or *.domain \
                 ([sandbox] network in config.toml, or --allow-host)"
            )),
            None => Ok(()),
        }
    }

    /// [`Sandbox::claude_settings`] with `hidden` folders its commands may not read at all
    /// (Nightshift's secrets, other accounts' logins).
    pub fn claude_settings_hiding(&self, hidden: &[PathBuf]) -> Value {
        let mut settings = self.claude_settings();
        if !hidden.is_empty() {
            settings["sandbox"]["filesystem"]["denyRead"] = json!(hidden);
        }
        settings
    }

    /// [`Sandbox::claude_settings_hiding`] with its network through Nightshift's proxy
    /// (`proxy`): the client's own proxy does not run, every connection is the fence's to judge
    /// (`allowed`, said to the client too), commands may listen on localhost (a test suite's
    /// server), and `unix_sockets` (the ssh agent's) are reachable.
    pub fn claude_settings_fenced(&self, hidden: &[PathBuf], proxy: &Proxied, allowed: &[String]) -> Value {
        let mut settings = self.claude_settings_hiding(hidden);
        let network = &mut settings["sandbox"]["network"];
        network["allowedDomains"] = json!(allowed);
        network["httpProxyPort"] = json!(proxy.http_port);
        network["socksProxyPort"] = json!(proxy.socks_port);
        network["allowLocalBinding"] = json!(true);
        if !proxy.unix_sockets.is_empty() {
            network["allowUnixSockets"] = json!(proxy.unix_sockets);
        }
        settings
    }

    /// Claude Code's settings for it, laid over the session's other `--settings`. It refuses to
    /// start when the sandbox cannot run (rather than run Bash unconfined), and offers no way out
    /// of it to a command.
    pub fn claude_settings(&self) -> Value {
        let mut sandbox = json!({
            "enabled": true,
            "failIfUnavailable": true,
            "autoAllowBashIfSandboxed": true,
            "allowUnsandboxedCommands": false,
            "network": {"allowedDomains": self.network, "strictAllowlist": true},
        });
        if !self.write.is_empty() {
            sandbox["filesystem"] = json!({"allowWrite": self.write});
        }
        json!({ "sandbox": sandbox })
    }

    /// Codex's flags for it, unless `theirs` (the user's own flags) chose a sandbox or an approval
    /// policy already (the client refuses a flag twice): `workspace-write` with no approval
    /// prompts (`exec`, `headless`, never asks and takes no such flag), its extra folders writable.
    /// `workspace-write` has the network on or off, no list of domains: its commands have no
    /// network, unless `proxied`: then the network is on and the commands' environment (Codex's
    /// `shell_environment_policy`, not the client's own, whose requests to its API and its own
    /// hosts are not the fence's) points them at Nightshift's proxy.
    pub fn codex_args(&self, theirs: &[String], headless: bool, proxied: Option<&Proxied>) -> Vec<String> {
        let chose = |flags: &[&str]| {
            theirs.iter().any(|a| flags.contains(&a.as_str()) || flags.iter().any(|f| a.starts_with(&format!("{f}="))))
        };
        let mut args = Vec::new();
        if !chose(&["-s", "--sandbox", "--full-auto", "--dangerously-bypass-approvals-and-sandbox", "--yolo"]) {
            args.extend(["--sandbox", "workspace-write"].map(String::from));
            if let Some(proxied) = proxied {
                args.extend(["-c", "sandbox_workspace_write.network_access=true"].map(String::from));
                for (key, value) in proxy_env(proxied) {
                    args.push("-c".into());
                    args.push(format!("shell_environment_policy.set.{key}={}", Value::String(value)));
                }
            }
            for dir in &self.write {
                args.extend(["--add-dir".to_string(), dir.display().to_string()]);
            }
        }
        if !headless
            && !chose(&[
                "-a",
                "--ask-for-approval",
                "--full-auto",
                "--dangerously-bypass-approvals-and-sandbox",
                "--yolo",
            ])
        {
            args.extend(["--ask-for-approval", "never"].map(String::from));
        }
        args
    }

    /// What it lets the agent's commands do, in a line (the session's options, the journal).
    pub fn describe(&self, agent: AgentKind) -> String {
        let write = match self.write.as_slice() {
            [] => "its folder".to_string(),
            more => format!(
                "its folder and {}",
                more.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            ),
        };
        let network = match (agent, self.fence, self.network.as_slice()) {
            (AgentKind::Codex, Fence::None, _) | (_, Fence::None, []) => "no network".to_string(),
            (AgentKind::Codex, _, _) => "network through Nightshift's proxy for the commands that use it".to_string(),
            (_, Fence::None, domains) => format!("network to {}", domains.join(", ")),
            (_, Fence::Project, []) => "network to the project's hosts".to_string(),
            (_, Fence::Project, domains) => format!("network to the project's hosts and {}", domains.join(", ")),
            (_, Fence::Open, _) => "any network, every connection seen".to_string(),
        };
        let reads = match agent {
            AgentKind::Codex => "read anything you can (Codex's sandbox limits writes, not reads)",
            _ => "read neither Nightshift's files nor other accounts'",
        };
        format!(
            "sandboxed: commands run without prompts, write {write} and the client's own folders, {reads}, {network}"
        )
    }
}

/// The user's own argument that turns `agent`'s sandbox off, if any: Codex's
/// `--dangerously-bypass-approvals-and-sandbox` or `--yolo`, a `danger-full-access` sandbox
/// (`-s`, `--sandbox`, or `-c sandbox_mode=…`). Claude's sandbox is laid over the user's settings
/// last, so no argument of theirs turns it off. Only flags count: a prompt that mentions one is a
/// prompt.
pub fn turned_off(agent: AgentKind, args: &[String]) -> Option<String> {
    if agent != AgentKind::Codex {
        return None;
    }
    let full = |value: &str| value.trim_matches(['"', '\'', ' ']) == "danger-full-access";
    let mode = |kv: &str| kv.split_once('=').is_some_and(|(k, v)| k.trim() == "sandbox_mode" && full(v));
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let off = match arg.as_str() {
            "--dangerously-bypass-approvals-and-sandbox" | "--yolo" => Some(arg.clone()),
            "-s" | "--sandbox" => it.next().filter(|v| full(v)).map(|v| format!("{arg} {v}")),
            "-c" | "--config" => it.next().filter(|v| mode(v)).map(|v| format!("{arg} {v}")),
            // Whatever follows `--` is the prompt.
            "--" => return None,
            other => {
                let set = other.strip_prefix("--sandbox=").or_else(|| other.strip_prefix("-s")).is_some_and(full)
                    || other.strip_prefix("--config=").or_else(|| other.strip_prefix("-c")).is_some_and(mode);
                set.then(|| arg.clone())
            }
        };
        if off.is_some() {
            return off;
        }
    }
    None
}

/// The environment that points a command's HTTP and SOCKS clients at Nightshift's proxy (Codex's,
/// whose sandbox has no proxy of its own: a command that ignores it is not held to the fence).
fn proxy_env(proxy: &Proxied) -> Vec<(String, String)> {
    let http = format!("http://127.0.0.1:{}", proxy.http_port);
    let socks = format!("socks5h://127.0.0.1:{}", proxy.socks_port);
    [
        ("HTTP_PROXY", http.clone()),
        ("HTTPS_PROXY", http.clone()),
        ("http_proxy", http.clone()),
        ("https_proxy", http),
        ("ALL_PROXY", socks.clone()),
        ("all_proxy", socks),
        ("NO_PROXY", "localhost,127.0.0.1,::1".into()),
        ("no_proxy", "localhost,127.0.0.1,::1".into()),
    ]
    .map(|(k, v)| (k.to_string(), v))
    .to_vec()
}

/// Whether a failed command's words say the sandbox refused it (a write outside its folders, a
/// host not allowed), not that the command failed on its own.
pub fn sandbox_refused(error: &str) -> bool {
    const SIGNS: [&str; 5] = [
        "read-only file system",
        "operation not permitted",
        "sandbox",
        "not in the allowed domains",
        "<sandbox_violations>",
    ];
    let error = error.to_lowercase();
    SIGNS.iter().any(|s| error.contains(s))
}

/// The hosts the client's own sandbox said it refused a command, from the `<sandbox_violations>`
/// of its failed result (`deny network-outbound 127.0.0.3:32917 (host is not on the allow list)`).
pub fn refused_hosts(error: &str) -> Vec<(String, u16)> {
    let Some(start) = error.find("<sandbox_violations>") else { return Vec::new() };
    let list = &error[start..error[start..].find("</sandbox_violations>").map_or(error.len(), |e| start + e)];
    list.lines()
        .filter_map(|line| line.trim().strip_prefix("deny network-outbound "))
        .filter_map(|rest| {
            let target = rest.split_whitespace().next()?;
            let (host, port) = target.rsplit_once(':')?;
            Some((host.trim_matches(['[', ']']).to_string(), port.parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_of_the_sandbox_is_told_from_a_command_that_failed() {
        assert!(sandbox_refused("Exit code 1\n/bin/bash: line 1: /home/u/x.txt: Read-only file system"));
        assert!(!sandbox_refused("Exit code 101\nerror[E0308]: mismatched types"));
        let said = "Exit code 128\n\n<sandbox_violations>\ndeny network-outbound 127.0.0.3:32917 (host is not on the \
                    allow list)\ndeny network-outbound [::1]:443 (host is not on the allow list)\n</sandbox_violations>";
        assert!(sandbox_refused(said));
        assert_eq!(refused_hosts(said), [("127.0.0.3".to_string(), 32917), ("::1".to_string(), 443)]);
        assert!(refused_hosts("Exit code 1\nfatal: unable to access").is_empty());
    }

    #[test]
    fn claude_gets_a_sandbox_it_must_start_and_cannot_leave() {
        let s = Sandbox { write: vec!["/wt/top".into()], network: vec!["crates.io".into()], ..Sandbox::default() };
        let v = s.claude_settings();
        let b = &v["sandbox"];
        assert_eq!((b["enabled"].as_bool(), b["failIfUnavailable"].as_bool()), (Some(true), Some(true)));
        assert_eq!(b["autoAllowBashIfSandboxed"], true);
        assert_eq!(b["allowUnsandboxedCommands"], false);
        assert_eq!(b["filesystem"]["allowWrite"], json!(["/wt/top"]));
        assert_eq!(b["network"], json!({"allowedDomains": ["crates.io"], "strictAllowlist": true}));
        assert!(Sandbox::default().claude_settings()["sandbox"].get("filesystem").is_none());
        let hiding = s.claude_settings_hiding(&["/home/u/.local/state/nightshift".into()]);
        assert_eq!(hiding["sandbox"]["filesystem"]["denyRead"], json!(["/home/u/.local/state/nightshift"]));
        assert_eq!(hiding["sandbox"]["filesystem"]["allowWrite"], json!(["/wt/top"]));
    }

    #[test]
    fn codex_writes_its_workspace_without_prompts_unless_the_user_chose() {
        let s = Sandbox { write: vec!["/wt/top".into()], ..Sandbox::default() };
        assert_eq!(
            s.codex_args(&[], false, None).join(" "),
            "--sandbox workspace-write --add-dir /wt/top --ask-for-approval never"
        );
        let theirs: Vec<String> = ["-s", "read-only"].map(String::from).to_vec();
        assert_eq!(s.codex_args(&theirs, false, None).join(" "), "--ask-for-approval never");
        let bypass = vec!["--dangerously-bypass-approvals-and-sandbox".to_string()];
        assert!(s.codex_args(&bypass, false, None).is_empty());
        assert!(s
            .codex_args(&["--ask-for-approval=on-request".to_string()], false, None)
            .join(" ")
            .ends_with("/wt/top"));
        assert_eq!(
            s.codex_args(&[], true, None).join(" "),
            "--sandbox workspace-write --add-dir /wt/top",
            "exec never asks"
        );
        // Fenced: the network on, and the commands' environment (not the client's) at the proxy.
        let proxied = Proxied { http_port: 3128, socks_port: 1080, unix_sockets: Vec::new() };
        let args = s.codex_args(&[], true, Some(&proxied));
        let set = |kv: &str| args.windows(2).any(|w| w[0] == "-c" && w[1] == kv);
        assert!(set("sandbox_workspace_write.network_access=true"), "{args:?}");
        assert!(set(r#"shell_environment_policy.set.HTTPS_PROXY="http://127.0.0.1:3128""#), "{args:?}");
        assert!(set(r#"shell_environment_policy.set.ALL_PROXY="socks5h://127.0.0.1:1080""#), "{args:?}");
        assert!(set(r#"shell_environment_policy.set.NO_PROXY="localhost,127.0.0.1,::1""#), "{args:?}");
    }

    #[test]
    fn it_says_what_it_allows() {
        let s = Sandbox { network: vec!["crates.io".into()], ..Sandbox::default() };
        assert!(s
            .describe(AgentKind::Claude)
            .ends_with("read neither Nightshift's files nor other accounts', network to crates.io"));
        assert!(s
            .describe(AgentKind::Codex)
            .ends_with("read anything you can (Codex's sandbox limits writes, not reads), no network"));
        let fenced = Sandbox { fence: Fence::Project, ..s.clone() };
        assert!(fenced.describe(AgentKind::Claude).ends_with("network to the project's hosts and crates.io"));
        assert!(fenced
            .describe(AgentKind::Codex)
            .ends_with("network through Nightshift's proxy for the commands that use it"));
    }
}
