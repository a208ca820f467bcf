//! Processes on Linux: `kill(pid, 0)` for whether one exists, `/proc/<pid>/comm` for its name and
//! `/proc/<pid>/environ` for what it was started with.

use super::Linux;
use crate::platform::Processes;

impl Processes for Linux {
    fn alive(pid: i64) -> bool {
        let Ok(pid) = i32::try_from(pid) else {
            return false;
        };
        !matches!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None), Err(nix::errno::Errno::ESRCH))
    }

    fn is_nightshift(pid: i64) -> bool {
        Self::alive(pid)
            && std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|comm| comm.starts_with("nightshift"))
            && !dead(pid)
    }

    fn started_with(pid: u32, variable: &str, value: &str) -> bool {
        let wanted = format!("{variable}={value}");
        std::fs::read(format!("/proc/{pid}/environ"))
            .map(|env| env.split(|b| *b == 0).any(|kv| kv == wanted.as_bytes()))
            .unwrap_or(false)
    }
}

/// Whether `pid` has ended and waits only to be reaped (a zombie): a Nightshift killed a moment
/// ago is gone, though its parent has not reaped it yet.
fn dead(pid: i64) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The state follows the command's name, which may hold any character but ends with the last ')'.
    stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nightshift_killed_but_not_yet_reaped_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("nightshift-zombie");
        std::fs::copy("/bin/sleep", &exe).unwrap();
        let mut child = std::process::Command::new(&exe).arg("60").spawn().unwrap();
        let pid = i64::from(child.id());
        for _ in 0..200 {
            if Linux::is_nightshift(pid) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(Linux::is_nightshift(pid), "running: alive");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::SIGKILL).unwrap();
        // Not reaped yet: a zombie, which is no Nightshift any more.
        for _ in 0..200 {
            if dead(pid) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(Linux::alive(pid) && !Linux::is_nightshift(pid), "killed, unreaped: gone");
        child.wait().unwrap();
    }

    #[test]
    fn this_process_is_alive_and_known_by_its_environment() {
        let me = std::process::id();
        assert!(Linux::alive(i64::from(me)));
        assert!(!Linux::alive(i64::from(i32::MAX)), "no such pid");
        assert!(!Linux::alive(-1_i64 << 40), "not a pid at all");
        let (name, value) = std::env::vars().next().expect("a test runs with an environment");
        assert!(Linux::started_with(me, &name, &value));
        assert!(!Linux::started_with(me, &name, "not what it was started with"));
        // The test binary is not called nightshift-…: it is not taken for a Nightshift.
        let comm = std::fs::read_to_string(format!("/proc/{me}/comm")).unwrap();
        assert_eq!(Linux::is_nightshift(i64::from(me)), comm.starts_with("nightshift"));
    }
}
