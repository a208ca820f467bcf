//! `nightshift-wake TIME`: arms one wake alarm for `TIME` (RFC 3339, in the future) and waits for
//! it. The alarm is a timerfd on `CLOCK_REALTIME_ALARM`, which wakes a suspended machine when it
//! fires; arming one needs `CAP_WAKE_ALARM`, which `make install` and the `.deb` give this binary
//! alone (`setcap cap_wake_alarm+ep`), so Nightshift itself needs no privilege.
//!
//! It does that one thing: it takes a time at most a week ahead and nothing else, prints one line
//! when the alarm is armed and one when it fires, and ends then (exit 0). Nightshift kills it when
//! the machine must stay awake again; the alarm goes with it. Given a pipe as its standard input
//! (as Nightshift gives it), it also ends when the other end closes: whoever armed the alarm is
//! gone (a SIGKILL leaves it no time to say so), and no alarm is left behind it. A refused argument
//! exits 2, an alarm that cannot be armed exits 1, each with a one-line reason and the fix.

use std::io::Write as _;
use std::process::ExitCode;

use chrono::{DateTime, SecondsFormat, Utc};
use nix::errno::Errno;
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};

const USAGE: &str = "give one time to wake at, as RFC 3339 (2026-12-05T03:10:00Z); nothing else is taken";
/// The furthest ahead an alarm may be set: no wait of a night is longer.
const FURTHEST: chrono::Duration = chrono::Duration::days(7);

/// The one time of `args`, in the future of `now`; or why not.
fn time_of(args: &[String], now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let [arg] = args else { return Err(USAGE.to_string()) };
    let at = DateTime::parse_from_rfc3339(arg).map_err(|_| format!("`{arg}` is not a time: {USAGE}"))?;
    let at = at.with_timezone(&Utc);
    if at <= now {
        return Err(format!("{} is not in the future", at.to_rfc3339_opts(SecondsFormat::Secs, true)));
    }
    if at > now + FURTHEST {
        return Err(format!("{} is more than a week ahead", at.to_rfc3339_opts(SecondsFormat::Secs, true)));
    }
    Ok(at)
}

fn arm(at: DateTime<Utc>) -> Result<TimerFd, String> {
    let fd = TimerFd::new(ClockId::CLOCK_REALTIME_ALARM, TimerFlags::TFD_CLOEXEC).map_err(|e| match e {
        Errno::EPERM => {
            let me = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "it".into());
            format!(
                "cannot arm a wake alarm: this binary lacks CAP_WAKE_ALARM; run `sudo setcap cap_wake_alarm+ep {me}`"
            )
        }
        e => format!("cannot arm a wake alarm: {e}; this kernel or machine has no alarm timers"),
    })?;
    let when = TimeSpec::new(at.timestamp(), i64::from(at.timestamp_subsec_nanos()));
    fd.set(Expiration::OneShot(when), TimerSetTimeFlags::TFD_TIMER_ABSTIME)
        .map_err(|e| format!("cannot arm a wake alarm: {e}"))?;
    Ok(fd)
}

/// How a wait ended.
enum Waited {
    Fired,
    /// The pipe on standard input closed: whoever armed the alarm is gone.
    Orphaned,
}

/// Waits for the alarm, and, when standard input is a pipe, for its other end to close.
fn wait(fd: &TimerFd) -> nix::Result<Waited> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::{AsFd as _, AsRawFd as _};
    let stdin = std::io::stdin();
    let piped = nix::sys::stat::fstat(stdin.as_raw_fd()).is_ok_and(|st| st.st_mode & libc_fifo() == libc_fifo());
    if !piped {
        return fd.wait().map(|()| Waited::Fired);
    }
    loop {
        let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN), PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::NONE) {
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e),
            Ok(_) => {}
        }
        if fds[0].revents().is_some_and(|r| r.contains(PollFlags::POLLIN)) {
            return fd.wait().map(|()| Waited::Fired);
        }
        if let Some(r) = fds[1].revents().filter(|r| !r.is_empty()) {
            if r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR) {
                return Ok(Waited::Orphaned);
            }
            // Anything written is read and dropped; only the end of the pipe means something.
            let mut buf = [0u8; 256];
            if nix::unistd::read(stdin.as_raw_fd(), &mut buf)? == 0 {
                return Ok(Waited::Orphaned);
            }
        }
    }
}

/// `S_IFIFO`.
fn libc_fifo() -> u32 {
    nix::sys::stat::SFlag::S_IFIFO.bits()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let at = match time_of(&args, Utc::now()) {
        Ok(at) => at,
        Err(why) => {
            eprintln!("nightshift-wake: {why}");
            return ExitCode::from(2);
        }
    };
    let fd = match arm(at) {
        Ok(fd) => fd,
        Err(why) => {
            eprintln!("nightshift-wake: {why}");
            return ExitCode::FAILURE;
        }
    };
    let armed =
        format!("armed a wake alarm (CLOCK_REALTIME_ALARM) for {}", at.to_rfc3339_opts(SecondsFormat::Secs, true));
    let _ = writeln!(std::io::stdout(), "{armed}");
    let _ = std::io::stdout().flush();
    match wait(&fd) {
        Ok(Waited::Fired) => {}
        // Whoever armed it is gone, and the alarm goes with this process.
        Ok(Waited::Orphaned) => return ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nightshift-wake: the alarm could not be waited for: {e}");
            return ExitCode::FAILURE;
        }
    }
    // Whoever started it may have stopped reading: the alarm fired all the same.
    let _ =
        writeln!(std::io::stdout(), "the alarm fired at {}", Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true));
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_one_time_in_the_future_is_taken() {
        let now: DateTime<Utc> = "2026-12-05T01:00:00Z".parse().unwrap();
        let one = |a: &[&str]| time_of(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>(), now);
        assert_eq!(one(&["2026-12-05T03:10:00Z"]), Ok("2026-12-05T03:10:00Z".parse().unwrap()));
        assert_eq!(one(&["2026-12-05T04:10:00+01:00"]), Ok("2026-12-05T03:10:00Z".parse().unwrap()));
        assert_eq!(one(&[]), Err(USAGE.to_string()));
        assert_eq!(one(&["2026-12-05T03:10:00Z", "--exec"]), Err(USAGE.to_string()));
        assert!(one(&["sh -c reboot"]).unwrap_err().starts_with("`sh -c reboot` is not a time"));
        assert_eq!(one(&["2026-12-05T00:59:00Z"]), Err("2026-12-05T00:59:00Z is not in the future".into()));
        assert_eq!(one(&["2026-12-12T01:00:00Z"]), Ok("2026-12-12T01:00:00Z".parse().unwrap()), "a week ahead");
        assert_eq!(one(&["2026-12-12T01:00:01Z"]), Err("2026-12-12T01:00:01Z is more than a week ahead".into()));
    }
}
