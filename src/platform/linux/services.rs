//! The user's service manager: systemd's user instance (`systemctl --user`), its units in
//! `$XDG_CONFIG_HOME/systemd/user`, and logind's lingering for starting them at boot.

use std::path::PathBuf;
use std::process::Command;

use super::Linux;
use crate::platform::Services;

impl Services for Linux {
    fn service_dir() -> Result<PathBuf, String> {
        let config = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| directories::BaseDirs::new().map(|b| b.config_dir().to_path_buf()))
            .ok_or("no home directory to keep the user unit in; set XDG_CONFIG_HOME")?;
        Ok(config.join("systemd").join("user"))
    }

    fn manage(args: &[&str]) -> Result<(), String> {
        let out = Command::new("systemctl").arg("--user").args(args).output();
        let why = match out {
            Ok(o) if o.status.success() => return Ok(()),
            Ok(o) => String::from_utf8_lossy(&o.stderr).lines().next().unwrap_or("it failed").trim().to_string(),
            Err(e) => format!("cannot run systemctl: {e}"),
        };
        Err(format!("`systemctl --user {}` did not work ({why})", args.join(" ")))
    }

    fn enabled(unit: &str) -> Option<String> {
        Command::new("systemctl")
            .args(["--user", "is-enabled", unit])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .ok()
            .filter(|s| !s.is_empty())
    }

    fn start_at_boot() -> Option<bool> {
        let user = std::env::var("USER").ok()?;
        let out = Command::new("loginctl").args(["show-user", &user, "--property=Linger", "--value"]).output().ok()?;
        match String::from_utf8_lossy(&out.stdout).trim() {
            "yes" => Some(true),
            "no" => Some(false),
            _ => None,
        }
    }
}
