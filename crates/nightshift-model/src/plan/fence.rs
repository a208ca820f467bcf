//! Tonight's network fence for the folder `plan` runs in: what a sandboxed agent started there
//! would reach, each host with why, and what the project looks like it needs beyond it.

use serde::Serialize;

use crate::agent::Fence;
use crate::event::FencedHost;

/// The fence an unattended, sandboxed start in `folder` would get now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FolderFence {
    pub folder: String,
    /// `false`: the sandbox is off in the settings, and so is the fence.
    pub sandboxed: bool,
    pub fence: Fence,
    pub hosts: Vec<FencedHost>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl FolderFence {
    /// The fence as the plan's text says it: one line, and one more per warning.
    pub fn lines(&self) -> Vec<String> {
        let head = format!("Tonight's fence in {}", self.folder);
        let first = match (self.sandboxed, self.fence, self.hosts.as_slice()) {
            (false, ..) => format!("{head}: none, the sandbox is off ([sandbox] enabled = false)"),
            (true, Fence::Open, _) => format!("{head} (open): every host, each connection journalled"),
            (true, fence, []) => format!(
                "{head} ({}): no host gets through; add what the night needs with --allow-host HOST or [sandbox] network",
                fence.as_str()
            ),
            (true, fence, hosts) => format!(
                "{head} ({}): {}",
                fence.as_str(),
                hosts.iter().map(|h| format!("{} ({})", h.host, h.why)).collect::<Vec<_>>().join("; ")
            ),
        };
        let warnings = self.warnings.iter().filter(|_| self.sandboxed).map(|w| format!("  ! {w}"));
        std::iter::once(first).chain(warnings).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fence(sandboxed: bool, fence: Fence, hosts: &[(&str, &str)], warnings: &[&str]) -> FolderFence {
        FolderFence {
            folder: "/home/u/project".into(),
            sandboxed,
            fence,
            hosts: hosts.iter().map(|(h, w)| FencedHost { host: (*h).into(), why: (*w).into() }).collect(),
            warnings: warnings.iter().map(|w| (*w).into()).collect(),
        }
    }

    #[test]
    fn each_host_with_why_and_each_warning_on_a_line_of_its_own() {
        let f = fence(
            true,
            Fence::Project,
            &[("git.example", "the remote origin"), ("npm.corp.example", "npm's registry, from .npmrc")],
            &["the remote old is reached over git://"],
        );
        assert_eq!(
            f.lines(),
            [
                "Tonight's fence in /home/u/project (project): git.example (the remote origin); \
                 npm.corp.example (npm's registry, from .npmrc)",
                "  ! the remote old is reached over git://",
            ]
        );
    }

    #[test]
    fn no_host_an_open_fence_and_no_sandbox_each_say_so() {
        assert!(
            fence(true, Fence::Project, &[], &[]).lines()[0].contains("no host gets through; add what the night needs")
        );
        assert!(fence(true, Fence::None, &[], &[]).lines()[0].contains("(none): no host gets through"));
        assert!(
            fence(true, Fence::Open, &[], &[]).lines()[0].ends_with("(open): every host, each connection journalled")
        );
        let off = fence(false, Fence::Project, &[("git.example", "the remote origin")], &["a warning"]);
        assert_eq!(
            off.lines(),
            ["Tonight's fence in /home/u/project: none, the sandbox is off ([sandbox] enabled = false)"]
        );
    }
}
