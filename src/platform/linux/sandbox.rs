//! Whether Claude Code's sandbox can run here: on Linux it wraps each Bash command in bubblewrap
//! (which needs unprivileged user namespaces) and proxies its network through socat.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::Linux;
use crate::platform::Sandboxes;

/// The first `program` on `PATH`.
fn on_path(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join(program))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()))
}

impl Sandboxes for Linux {
    fn claude_sandbox() -> Result<(), String> {
        let bwrap = on_path("bwrap").ok_or("bubblewrap is not installed (sudo apt install bubblewrap)")?;
        if on_path("socat").is_none() {
            return Err("socat is not installed (sudo apt install socat)".into());
        }
        try_bwrap(&bwrap)
    }
}

/// Makes a throwaway sandbox the way the client's does: a new user and network namespace.
fn try_bwrap(bwrap: &Path) -> Result<(), String> {
    let mut cmd = Command::new(bwrap);
    cmd.args(["--ro-bind", "/", "/", "--dev", "/dev", "--unshare-user", "--unshare-net", "--die-with-parent", "true"]);
    let out = cmd.stderr(std::process::Stdio::piped()).stdout(std::process::Stdio::null()).spawn();
    let child = out.map_err(|e| format!("bubblewrap cannot be run ({e})"))?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(Ok(o)) if o.status.success() => Ok(()),
        Ok(Ok(o)) => {
            let said = String::from_utf8_lossy(&o.stderr).lines().next().unwrap_or("it failed").trim().to_string();
            Err(format!(
                "bubblewrap cannot make a sandbox here ({said}): unprivileged user namespaces are off; turn them on \
                 (sudo sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu \
                 kernel.apparmor_restrict_unprivileged_userns=0)"
            ))
        }
        Ok(Err(e)) => Err(format!("bubblewrap cannot be run ({e})")),
        Err(_) => Err("bubblewrap did not answer within 10 s".into()),
    }
}
