//! The wake alarm: `nightshift-wake`, the helper that alone holds `CAP_WAKE_ALARM`, found beside
//! the running binary or on PATH, and asked to arm a real alarm once to know that it can.

use std::io::BufRead as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The helper's name.
const HELPER: &str = "nightshift-wake";

/// How long the trial may take to say it armed its alarm.
const TRIAL: Duration = Duration::from_secs(3);

/// Where the helper is: beside the running binary (an install puts the CLI, the app and the helper
/// in one folder), else on PATH.
fn find() -> Option<PathBuf> {
    let beside = std::env::current_exe().ok().and_then(|exe| exe.parent().map(|d| d.join(HELPER)));
    beside.filter(|p| p.is_file()).or_else(|| {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path).map(|d| d.join(HELPER)).find(|p| p.is_file())
    })
}

/// The helper, once it armed an alarm an hour out (taken back at once); or why it cannot, in one
/// line with the fix.
pub(super) fn helper() -> Result<PathBuf, String> {
    let path = find().ok_or_else(|| {
        format!("{HELPER} is not installed beside nightshift or on PATH; `make install` or the .deb puts it there")
    })?;
    let at = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let mut child = Command::new(&path)
        .arg(at)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::PermissionDenied => format!(
                "{} is not yours to run (it is kept to its owner and one group, since it can wake the machine); \
                 ask its owner to add you to its group (`sudo adduser $USER nightshift` for the .deb), then log in again",
                path.display()
            ),
            _ => format!("cannot run {}: {e}", path.display()),
        })?;
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let armed = rx.recv_timeout(TRIAL).is_ok_and(|line| line.starts_with("armed"));
    let _ = child.kill();
    let out = child.wait_with_output().ok();
    if armed {
        return Ok(path);
    }
    let said =
        out.map(|o| String::from_utf8_lossy(&o.stderr).lines().next().unwrap_or("").to_string()).unwrap_or_default();
    let said = said.trim().trim_start_matches("nightshift-wake: ");
    Err(if said.is_empty() {
        format!("{} did not arm a trial alarm within 3 s", path.display())
    } else {
        said.to_string()
    })
}
