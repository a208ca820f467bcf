//! Scheduled starts: `run|loop --at 23:30` (the next such local time) and `--after-reset` (when the
//! account's current 5-hour window resets, so the night begins with a fresh one), and the same from
//! the window's New session page.
//!
//! A schedule is a session recorded as `scheduled`, with its due time and its contract (what the
//! user armed, its worktree already made) in the journal, so it outlives the process that made it
//! and any Nightshift process starts it alike.
//! That process waits for the time on the wall clock, looking every few seconds (a monotonic sleep
//! stops while the machine is suspended: one due at 23:30 starts right after a wake at 23:50). If
//! the process is gone, the next Nightshift process — the app, or `nightshift restore` — takes the
//! schedule over; a time that passed more than [`LATE`] before that starts at once, or is skipped
//! with `[schedule] missed = "skip"`. Whichever process starts a schedule claims it in the journal
//! first, so none starts twice. `nightshift stop` (or the window's Stop) cancels one in the journal,
//! and the process waiting for it lets it go at its next look.

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, LocalResult, NaiveTime, TimeZone, Timelike, Utc};
use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::event::{EventKind, SessionState, StopKind};
use crate::store::{NewSession, SessionRow, Store, StoreError};

/// How often a waiting process looks at the wall clock (and at the journal, for a cancel).
pub const CHECK: Duration = Duration::from_secs(2);
/// A schedule taken over later than this after its time passed while no Nightshift ran: the
/// `missed` setting decides.
pub const LATE: chrono::Duration = chrono::Duration::minutes(2);
/// After a window's reset before `--after-reset` starts (the reset as reported is rounded).
pub const RESET_MARGIN: chrono::Duration = chrono::Duration::seconds(60);

#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error("`{0}` is not a time of day; give a local time as HH:MM (23:30) or HH:MM:SS")]
    BadTime(String),
    #[error(
        "--after-reset needs to know when {0}'s 5-hour window resets, and no session has reported it yet; \
         run one session on it first (its statusLine reports the window), or give --at HH:MM"
    )]
    NoWindow(String),
}

/// A local time of day (`--at 23:30`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeOfDay(NaiveTime);

impl FromStr for TimeOfDay {
    type Err = ScheduleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        NaiveTime::parse_from_str(text, "%H:%M:%S")
            .or_else(|_| NaiveTime::parse_from_str(text, "%H:%M"))
            .map(Self)
            .map_err(|_| ScheduleError::BadTime(s.to_string()))
    }
}

impl TimeOfDay {
    /// The first instant after `now` at this time of day in `tz`: today's, or tomorrow's once
    /// today's has passed. A time a clock change skips is taken an hour later; one it repeats, the
    /// first time.
    pub fn next_after<Tz: TimeZone>(self, now: DateTime<Utc>, tz: &Tz) -> DateTime<Utc> {
        let mut day = now.with_timezone(tz).date_naive();
        for _ in 0..3 {
            let naive = day.and_time(self.0);
            let at = match tz.from_local_datetime(&naive) {
                LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => Some(t),
                LocalResult::None => tz.from_local_datetime(&(naive + chrono::Duration::hours(1))).earliest(),
            };
            if let Some(at) = at.map(|t| t.with_timezone(&Utc)).filter(|t| *t > now) {
                return at;
            }
            day = day.succ_opt().unwrap_or(day);
        }
        now + chrono::Duration::days(1)
    }

    /// As the user wrote it: `23:30`, or `23:30:15` with seconds.
    pub fn label(self) -> String {
        self.0.format(if self.0.second() == 0 { "%H:%M" } else { "%H:%M:%S" }).to_string()
    }
}

/// When a start is due, and why, in the journal's words.
#[derive(Debug, Clone, PartialEq)]
pub struct Due {
    pub at: DateTime<Utc>,
    pub why: String,
}

/// `--at TIME`: the next such time, local.
pub fn at(time: TimeOfDay, now: DateTime<Utc>) -> Due {
    Due { at: time.next_after(now, &chrono::Local), why: format!("at {}", time.label()) }
}

/// `--after-reset`: when the 5-hour window of `latest` (the account's newest sample in the
/// journal) resets, plus a margin; now, when it has reset already.
pub fn after_reset(
    latest: Option<&crate::usage::Sample>,
    account: &str,
    now: DateTime<Utc>,
) -> Result<Due, ScheduleError> {
    let resets = latest.and_then(|s| s.five_hour_resets_at).ok_or_else(|| ScheduleError::NoWindow(account.into()))?;
    if resets <= now {
        return Ok(Due { at: now, why: "when the 5-hour window resets (it has already)".into() });
    }
    let local = resets.with_timezone(&chrono::Local).format("%H:%M");
    Ok(Due { at: resets + RESET_MARGIN, why: format!("when the 5-hour window resets at {local}") })
}

/// How a scheduled session is started, whoever starts it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum Launch {
    /// From its contract, as built when it was scheduled, begun at its time: in whichever
    /// Nightshift process starts it (the one that scheduled it, the app, `nightshift restore`).
    Contract { contract: Box<crate::contract::Contract> },
    /// (From a journal older than scheduled contracts, started as it was then.)
    /// `nightshift ARGS` (a `run` or `loop` command line without its schedule) in `cwd`, with
    /// `env` (the variables that say where things are: `PATH`, the client's config directory;
    /// never a token) over the starting process's own.
    Cli {
        args: Vec<String>,
        cwd: String,
        #[serde(default)]
        env: Vec<(String, String)>,
    },
    /// (From a journal older than scheduled contracts.) The window's New session form: the app starts it.
    App { form: serde_json::Value },
}

/// What a schedule whose time passed while no Nightshift ran becomes (`[schedule] missed`).
pub use crate::config::Missed;

/// What to do with a schedule now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Wait,
    Start,
    /// Its time passed this long ago while no Nightshift ran, and such ones are skipped.
    Skip {
        late_by: chrono::Duration,
    },
}

/// The verdict on a schedule due at `due`, at `now`. `adopted`: the process looking took it over
/// from one that is gone, so a time long passed passed while no Nightshift ran.
pub fn verdict(due: DateTime<Utc>, now: DateTime<Utc>, adopted: bool, missed: Missed) -> Verdict {
    if now < due {
        Verdict::Wait
    } else if adopted && missed == Missed::Skip && now - due > LATE {
        Verdict::Skip { late_by: now - due }
    } else {
        Verdict::Start
    }
}

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    Due,
    /// The schedule no longer stands (cancelled, or taken by another process).
    Gone,
}

/// Waits for `due` on `clock`, looking every [`CHECK`], for as long as `stands()` says the
/// schedule does.
pub async fn wait(clock: &dyn Clock, due: DateTime<Utc>, mut stands: impl FnMut() -> bool) -> Waited {
    loop {
        if !stands() {
            return Waited::Gone;
        }
        let now = clock.now();
        if now >= due {
            return Waited::Due;
        }
        let left = (due - now).to_std().unwrap_or_default();
        tokio::time::sleep(left.min(CHECK)).await;
    }
}

/// The events that record a new schedule (after its row): what the journal and `--events` say.
pub fn events(due: &Due) -> [EventKind; 2] {
    let when = due.at.with_timezone(&chrono::Local).format("%a %H:%M:%S");
    [
        EventKind::Scheduled { due: due.at, why: due.why.clone() },
        EventKind::state(SessionState::Scheduled, format!("starts {when} ({})", due.why)),
    ]
}

/// Records session `new.id` as scheduled: its row, in state `scheduled`, and its schedule, in one
/// transaction. The events come from [`events`], through the caller's journal.
pub fn record(store: &mut Store, new: &NewSession<'_>, due: &Due, launch: &Launch) -> Result<(), StoreError> {
    let launch = serde_json::to_string(launch).expect("a launch serialises");
    store.create_scheduled(new, due.at, &due.why, &launch)
}

/// The variables a command-line schedule keeps for whoever starts it: where programs and the
/// clients' config directories are (never a token or a key).
pub use crate::contract::KEPT_ENV;

/// Cancels the schedule of `row` (not started yet): taken first, like a start, so a process about
/// to start it cannot (one that already has is [`StoreError::ScheduleStarting`]); the user's stop
/// is returned for the caller's writer to journal, and the process waiting for it sees it at its
/// next look.
pub fn cancel(
    store: &mut Store,
    clock: &dyn Clock,
    row: &SessionRow,
    source: &str,
) -> Result<[EventKind; 2], StoreError> {
    let schedule = store.schedule_of(&row.id)?;
    let me = std::process::id();
    let taken = match schedule.as_ref().and_then(|s| s.claimed_by.filter(|_| s.stale_claim())) {
        Some(stale) => store.reclaim_schedule(&row.id, stale, me, clock.now())?,
        None => store.claim_schedule(&row.id, me, clock.now())?,
    };
    if !taken {
        return Err(StoreError::ScheduleStarting(row.id.clone()));
    }
    let due = schedule.map(|s| s.due);
    let when = due.map(|d| format!(" (it was to start {})", d.with_timezone(&chrono::Local).format("%a %H:%M")));
    Ok([
        EventKind::StopRequested { source: source.to_string(), kind: StopKind::User },
        EventKind::state(SessionState::Exited, format!("cancelled before it started{}", when.unwrap_or_default())),
    ])
}

/// What skipping a schedule whose time passed while no Nightshift ran says (claimed first by the
/// caller), for the caller's writer to journal.
pub fn skip(schedule: &crate::store::ScheduleRow, late_by: chrono::Duration) -> [EventKind; 2] {
    let minutes = late_by.num_minutes();
    let reason = format!(
        "its time passed {minutes} min ago while no Nightshift ran, and missed starts are skipped \
         ([schedule] missed = \"skip\")"
    );
    [
        EventKind::ScheduleSkipped { due: schedule.due, reason: reason.clone() },
        EventKind::state(SessionState::Exited, format!("skipped: {reason}")),
    ]
}

/// One look at the journal's pending schedules by process `pid`, which takes over those whose
/// process is gone (the window's own only when `app`: only the app can start those): each one
/// this process should start or skip now, claimed for it, with how to start it (its own still
/// waiting are left for later looks).
pub fn due_now(
    store: &mut Store,
    clock: &dyn Clock,
    pid: u32,
    missed: Missed,
    app: bool,
) -> Result<Vec<(crate::store::ScheduleRow, Launch, Verdict)>, StoreError> {
    let mut out = Vec::new();
    for row in store.pending_schedules()? {
        if row.claimed {
            // Being started by a live process; or claimed by one that died first: taken over.
            let Some(stale) = row.claimed_by.filter(|_| row.stale_claim()) else { continue };
            let Ok(launch) = serde_json::from_str::<Launch>(&row.launch) else { continue };
            if (matches!(launch, Launch::App { .. }) && !app)
                || !store.reclaim_schedule(&row.session, stale, pid, clock.now())?
            {
                continue;
            }
            tracing::info!(session = %row.session, stale, "took over a scheduled start whose starter died");
            let verdict = match verdict(row.due, clock.now(), true, missed) {
                Verdict::Wait => Verdict::Start,
                v => v,
            };
            out.push((row, launch, verdict));
            continue;
        }
        let mine = row.owner_pid == Some(i64::from(pid));
        if !mine && !row.orphaned() {
            continue;
        }
        let Ok(launch) = serde_json::from_str::<Launch>(&row.launch) else {
            tracing::warn!(session = %row.session, "a scheduled start this Nightshift cannot read; left as it is");
            continue;
        };
        if matches!(launch, Launch::App { .. }) && !app {
            continue;
        }
        let now = clock.now();
        let verdict = verdict(row.due, now, !mine, missed);
        if !mine && verdict == Verdict::Wait {
            // Taken over: this process waits for it from now on.
            store.adopt_session(&row.session, pid, None)?;
            tracing::info!(session = %row.session, due = %row.due, "took over a scheduled start");
            continue;
        }
        if verdict == Verdict::Wait || !store.claim_schedule(&row.session, pid, now)? {
            continue;
        }
        out.push((row, launch, verdict));
    }
    Ok(out)
}

/// The pending schedules process `pid` looks after or may take over, those it is starting
/// included (for saying what waits, and for waiting until they started).
pub fn watched(store: &Store, pid: u32, app: bool) -> Result<Vec<crate::store::ScheduleRow>, StoreError> {
    let me = Some(i64::from(pid));
    Ok(store
        .pending_schedules()?
        .into_iter()
        .filter(|row| {
            if row.claimed {
                row.claimed_by == me || row.stale_claim()
            } else {
                row.owner_pid == me || row.orphaned()
            }
        })
        .filter(|row| {
            app || serde_json::from_str::<Launch>(&row.launch).is_ok_and(|l| !matches!(l, Launch::App { .. }))
        })
        .collect())
}

/// Starts a claimed command-line schedule from another process: `nightshift ARGS` again, adopting
/// the scheduled session, in a process group of its own with no terminal (it outlives whoever
/// starts it), its output appended to `log`, on the journal in `state_dir`. `failed` is called
/// (from a thread) with why, should that process end badly: the caller journals it if the session
/// never started.
pub fn start_elsewhere(
    cli: &std::path::Path,
    state_dir: &std::path::Path,
    session: &str,
    launch: &Launch,
    log: &std::path::Path,
    failed: impl FnOnce(String) + Send + 'static,
) -> Result<(), String> {
    let mut cmd = relaunch(cli, session, launch).ok_or_else(|| "its command line is empty".to_string())?;
    let out = crate::paths::private_append(log).map_err(|e| format!("cannot open {}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    use std::os::unix::process::CommandExt;
    cmd.env(crate::paths::STATE_DIR_ENV, state_dir).stdout(out).stderr(err).process_group(0);
    let mut child = cmd.spawn().map_err(|e| format!("cannot run {}: {e}", cli.display()))?;
    // Without a thread to wait on it (the user's process limit used up), nothing reaps it; it
    // runs on all the same, and is reaped when this process ends.
    let waited = std::thread::Builder::new().name("schedule-wait".into()).spawn(move || match child.wait() {
        Ok(status) if status.success() => {}
        Ok(status) => failed(format!("`nightshift` {status}; its output is in the log")),
        Err(e) => failed(e.to_string()),
    });
    if let Err(e) = waited {
        tracing::warn!("no thread to wait on the scheduled start ({e}); it runs unwatched");
    }
    Ok(())
}

/// The command that starts a command-line schedule in another process (see [`start_elsewhere`]).
pub fn relaunch(cli: &std::path::Path, session: &str, launch: &Launch) -> Option<std::process::Command> {
    let Launch::Cli { args, cwd, env } = launch else { return None };
    let (sub, rest) = args.split_first()?;
    let mut cmd = std::process::Command::new(cli);
    cmd.arg(sub).args(["--scheduled", session]).args(rest).current_dir(cwd);
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    cmd.stdin(std::process::Stdio::null());
    Some(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;
    use crate::event::{Event, SessionId};

    /// Journals what a cancel or a skip says, as its caller's writer does.
    fn journal(store: &mut Store, clock: &FakeClock, id: &str, said: impl IntoIterator<Item = EventKind>) {
        for kind in said {
            store.record(&Event { ts: clock.now(), session: SessionId::from(id.to_string()), kind }).unwrap();
        }
    }

    fn ts(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn a_time_of_day_is_the_next_such_time() {
        let tz = chrono_tz::Europe::Berlin;
        let t: TimeOfDay = "23:30".parse().unwrap();
        // 21:00 in Berlin (UTC+1 in December): tonight's.
        assert_eq!(t.next_after(ts("2026-12-01T20:00:00Z"), &tz), ts("2026-12-01T22:30:00Z"));
        // At 23:30 itself, or past it: tomorrow's.
        assert_eq!(t.next_after(ts("2026-12-01T22:30:00Z"), &tz), ts("2026-12-02T22:30:00Z"));
        assert_eq!(t.next_after(ts("2026-12-01T23:00:00Z"), &tz), ts("2026-12-02T22:30:00Z"));
        let s: TimeOfDay = "07:00:30".parse().unwrap();
        assert_eq!(s.label(), "07:00:30");
        assert_eq!(t.label(), "23:30");
        // 02:30 does not exist on the night the clocks go forward: an hour later.
        let skipped: TimeOfDay = "02:30".parse().unwrap();
        assert_eq!(skipped.next_after(ts("2027-03-27T23:00:00Z"), &tz), ts("2027-03-28T01:30:00Z"));
        // 02:30 happens twice when they go back: the first.
        assert_eq!(skipped.next_after(ts("2027-10-30T23:00:00Z"), &tz), ts("2027-10-31T00:30:00Z"));
        for bad in ["25:00", "23", "half past", "23:60", ""] {
            let e = bad.parse::<TimeOfDay>().unwrap_err().to_string();
            assert!(e.contains("HH:MM"), "{e}");
        }
    }

    #[test]
    fn after_reset_waits_for_the_window_and_needs_to_know_it() {
        let now = ts("2026-12-01T21:00:00Z");
        let sample = |resets| crate::usage::Sample { five_hour_resets_at: Some(resets), ..Default::default() };
        let due = after_reset(Some(&sample(ts("2026-12-01T23:10:00Z"))), "work", now).unwrap();
        assert_eq!(due.at, ts("2026-12-01T23:11:00Z"));
        assert!(due.why.starts_with("when the 5-hour window resets at"), "{}", due.why);
        assert_eq!(after_reset(Some(&sample(ts("2026-12-01T20:00:00Z"))), "work", now).unwrap().at, now);
        let e = after_reset(None, "work", now).unwrap_err().to_string();
        assert!(e.contains("work") && e.contains("--at"), "{e}");
    }

    #[test]
    fn a_missed_time_starts_or_is_skipped_only_when_nightshift_was_down() {
        let due = ts("2026-12-01T23:30:00Z");
        let at = |m: i64| due + chrono::Duration::minutes(m);
        assert_eq!(verdict(due, at(-1), false, Missed::Skip), Verdict::Wait);
        assert_eq!(verdict(due, at(0), false, Missed::Skip), Verdict::Start);
        // Its own process woke late (a suspend): it starts.
        assert_eq!(verdict(due, at(90), false, Missed::Skip), Verdict::Start);
        // Taken over after a restart: within the grace it starts; later, the setting decides.
        assert_eq!(verdict(due, at(1), true, Missed::Skip), Verdict::Start);
        assert_eq!(verdict(due, at(90), true, Missed::Start), Verdict::Start);
        assert_eq!(verdict(due, at(90), true, Missed::Skip), Verdict::Skip { late_by: chrono::Duration::minutes(90) });
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_ends_on_the_wall_clock_time_and_not_before() {
        let clock = FakeClock::new(ts("2026-12-01T23:29:00Z"));
        let due = ts("2026-12-01T23:30:00Z");
        let (c, started) = (clock.clone(), tokio::time::Instant::now());
        // The fake wall clock moves with tokio's paused one.
        let ticker = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
                c.advance(chrono::Duration::milliseconds(500));
            }
        });
        assert_eq!(wait(&clock, due, || true).await, Waited::Due);
        ticker.abort();
        assert!(clock.now_utc() >= due);
        let waited = started.elapsed();
        assert!(waited >= Duration::from_secs(60) && waited <= Duration::from_secs(60) + CHECK, "{waited:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_suspend_past_the_time_starts_it_at_the_next_look() {
        let clock = FakeClock::new(ts("2026-12-01T23:00:00Z"));
        let due = ts("2026-12-01T23:30:00Z");
        let c = clock.clone();
        let sleeper = tokio::spawn(async move {
            // The machine sleeps at once and wakes at 23:50: the monotonic clock did not move.
            tokio::task::yield_now().await;
            c.set(ts("2026-12-01T23:50:00Z"));
        });
        let started = tokio::time::Instant::now();
        assert_eq!(wait(&clock, due, || true).await, Waited::Due);
        sleeper.await.unwrap();
        assert!(started.elapsed() <= CHECK, "{:?}", started.elapsed());
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_schedule_ends_the_wait_and_never_comes_due() {
        let clock = FakeClock::new(ts("2026-12-01T23:29:00Z"));
        let due = ts("2026-12-01T23:30:00Z");
        let looks = std::sync::atomic::AtomicU32::new(0);
        // Cancelled after the third look (six seconds in).
        let stands = || looks.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < 3;
        assert_eq!(wait(&clock, due, stands).await, Waited::Gone);
    }

    fn new_session(id: &str) -> NewSession<'_> {
        NewSession {
            id,
            kind: crate::store::SessionKind::Terminal,
            command: &[],
            cwd: "/w",
            agent: "generic",
            preset: None,
            created: ts("2026-12-01T21:00:00Z"),
            owner_pid: u32::MAX - 1,
            control_socket: None,
        }
    }

    fn scheduled(store: &mut Store, clock: &FakeClock, id: &str, due: DateTime<Utc>, owner: u32) {
        let due = Due { at: due, why: "at 23:30".into() };
        let launch =
            Launch::Cli { args: vec!["run".into(), "--".into(), "true".into()], cwd: "/w".into(), env: vec![] };
        record(store, &NewSession { owner_pid: owner, ..new_session(id) }, &due, &launch).unwrap();
        for kind in events(&due) {
            store.record(&Event { ts: clock.now(), session: SessionId::from(id.to_string()), kind }).unwrap();
        }
    }

    /// Another Nightshift process (by its name: a copy of `sleep` called `nightshift-other`, kept
    /// in its directory for as long as it runs).
    struct Other(std::process::Child, #[allow(dead_code)] tempfile::TempDir);

    impl Other {
        fn start() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let exe = dir.path().join("nightshift-other");
            std::fs::copy("/bin/sleep", &exe).unwrap();
            let child = std::process::Command::new(&exe).arg("60").spawn().unwrap();
            let pid = i64::from(child.id());
            for _ in 0..200 {
                if crate::store::nightshift_alive(pid) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Self(child, dir)
        }

        fn pid(&self) -> u32 {
            self.0.id()
        }
    }

    impl Drop for Other {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    #[test]
    fn the_journal_keeps_schedules_takes_over_orphans_and_starts_each_once() {
        let mut store = Store::open_in_memory().unwrap();
        let clock = FakeClock::new(ts("2026-12-01T23:00:00Z"));
        let me = std::process::id();
        let due = ts("2026-12-01T23:30:00Z");
        let other = Other::start();
        // One of a process that is gone, one of this process, one of another live Nightshift, and
        // one of a live process that is no Nightshift (pid 1: after a reboot, an old pid is often
        // someone else's).
        scheduled(&mut store, &clock, "gone", due, u32::MAX - 1);
        scheduled(&mut store, &clock, "mine", due, me);
        scheduled(&mut store, &clock, "other", due, other.pid());
        scheduled(&mut store, &clock, "reused", due, 1);
        let row = store.session("gone").unwrap().unwrap();
        assert_eq!((row.state, row.standing()), (SessionState::Scheduled, crate::store::Standing::Scheduled));
        assert_eq!(row.shown_state(), "scheduled");
        assert!(due_now(&mut store, &clock, me, Missed::Start, false).unwrap().is_empty(), "nothing before its time");
        assert_eq!(store.session("gone").unwrap().unwrap().owner_pid, Some(i64::from(me)), "taken over");

        clock.set(due + chrono::Duration::seconds(1));
        let starts: Vec<_> = due_now(&mut store, &clock, me, Missed::Start, false).unwrap();
        let ids: Vec<&str> = starts.iter().map(|(r, _, _)| r.session.as_str()).collect();
        assert_eq!(ids, ["gone", "mine", "reused"], "the live Nightshift's own is left to it");
        assert!(starts.iter().all(|(_, l, v)| *v == Verdict::Start && matches!(l, Launch::Cli { .. })));
        assert!(due_now(&mut store, &clock, me, Missed::Start, false).unwrap().is_empty(), "claimed: never twice");
        assert!(!store.claim_schedule("gone", 7, clock.now()).unwrap(), "nor by another process");

        // A cancelled one cannot be claimed, and says why it ended.
        scheduled(&mut store, &clock, "cancelled", due + chrono::Duration::hours(1), me);
        let row = store.session("cancelled").unwrap().unwrap();
        let said = cancel(&mut store, &clock, &row, "nightshift stop").unwrap();
        journal(&mut store, &clock, "cancelled", said);
        let row = store.session("cancelled").unwrap().unwrap();
        assert_eq!(row.state, SessionState::Exited);
        assert!(row.reason.as_deref().is_some_and(|r| r.starts_with("cancelled before it started")), "{row:?}");
        assert!(!store.claim_schedule("cancelled", me, clock.now()).unwrap());
        let waiting: Vec<_> =
            store.pending_schedules().unwrap().into_iter().filter(|r| !r.claimed).map(|r| r.session).collect();
        assert_eq!(waiting, ["other"], "only the live Nightshift's own still waits");
    }

    #[test]
    fn a_claim_whose_process_died_is_taken_over_and_a_live_one_refuses_a_cancel() {
        let mut store = Store::open_in_memory().unwrap();
        let clock = FakeClock::new(ts("2026-12-01T23:31:00Z"));
        let me = std::process::id();
        let due = ts("2026-12-01T23:30:00Z");
        scheduled(&mut store, &clock, "stale", due, u32::MAX - 1);
        assert!(store.claim_schedule("stale", u32::MAX - 1, clock.now()).unwrap(), "claimed, then its starter died");
        let other = Other::start();
        scheduled(&mut store, &clock, "starting", due, other.pid());
        assert!(store.claim_schedule("starting", other.pid(), clock.now()).unwrap(), "being started by a live one");
        let taken = due_now(&mut store, &clock, me, Missed::Start, false).unwrap();
        let ids: Vec<&str> = taken.iter().map(|(r, _, _)| r.session.as_str()).collect();
        assert_eq!(ids, ["stale"]);
        assert_eq!(store.schedule_of("stale").unwrap().unwrap().claimed_by, Some(i64::from(me)));
        // The one a live process is starting cannot be cancelled under it: the user is told.
        let row = store.session("starting").unwrap().unwrap();
        let e = cancel(&mut store, &clock, &row, "nightshift stop").unwrap_err();
        assert!(e.to_string().contains("being started as scheduled"), "{e}");
        assert_eq!(store.session("starting").unwrap().unwrap().state, SessionState::Scheduled);
        // Once it is gone too, the cancel goes through.
        drop(other);
        let said = cancel(&mut store, &clock, &row, "nightshift stop").unwrap();
        journal(&mut store, &clock, "starting", said);
        assert_eq!(store.session("starting").unwrap().unwrap().state, SessionState::Exited);
    }

    #[test]
    fn a_schedule_is_pending_from_its_first_commit() {
        // A process killed right after recording it, before its events: still a schedule.
        let mut store = Store::open_in_memory().unwrap();
        let due = Due { at: ts("2026-12-01T23:30:00Z"), why: "at 23:30".into() };
        let launch = Launch::Cli { args: vec!["run".into()], cwd: "/w".into(), env: vec![] };
        record(&mut store, &new_session("killed"), &due, &launch).unwrap();
        let row = store.session("killed").unwrap().unwrap();
        assert_eq!(row.state, SessionState::Scheduled);
        let pending: Vec<_> = store.pending_schedules().unwrap().into_iter().map(|r| r.session).collect();
        assert_eq!(pending, ["killed"]);
    }

    #[test]
    fn only_the_app_takes_a_schedule_made_in_the_window() {
        let mut store = Store::open_in_memory().unwrap();
        let clock = FakeClock::new(ts("2026-12-01T23:31:00Z"));
        let due = Due { at: ts("2026-12-01T23:30:00Z"), why: "at 23:30".into() };
        let launch = Launch::App { form: serde_json::json!({"session": {"command": "claude"}}) };
        record(&mut store, &new_session("form"), &due, &launch).unwrap();
        for kind in events(&due) {
            store.record(&Event { ts: clock.now(), session: SessionId::from("form".to_string()), kind }).unwrap();
        }
        let me = std::process::id();
        assert!(due_now(&mut store, &clock, me, Missed::Start, false).unwrap().is_empty(), "not restore's");
        assert!(watched(&store, me, false).unwrap().is_empty());
        let taken = due_now(&mut store, &clock, me, Missed::Start, true).unwrap();
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].1, launch);
    }

    #[test]
    fn a_contract_is_started_by_any_nightshift_and_reads_back_whole() {
        let mut store = Store::open_in_memory().unwrap();
        let clock = FakeClock::new(ts("2026-12-01T23:31:00Z"));
        let due = Due { at: ts("2026-12-01T23:30:00Z"), why: "at 23:30".into() };
        let t = crate::contract::Terminal::new(
            crate::agent::AgentKind::Claude,
            "claude".into(),
            &["Work through TASKS.md".to_string()],
            "/w".into(),
            (120, 40),
        );
        let contract = crate::contract::Contract::session(crate::agent::AgentKind::Claude, t).into_contract();
        let launch = Launch::Contract { contract: Box::new(contract) };
        record(&mut store, &new_session("armed"), &due, &launch).unwrap();
        let me = std::process::id();
        assert_eq!(watched(&store, me, false).unwrap().len(), 1, "restore looks after it, not the app alone");
        let taken = due_now(&mut store, &clock, me, Missed::Start, false).unwrap();
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].1, launch, "the contract as it was scheduled");
    }

    #[test]
    fn one_missed_while_nightshift_was_down_is_skipped_when_so_set() {
        let mut store = Store::open_in_memory().unwrap();
        let clock = FakeClock::new(ts("2026-12-02T01:00:00Z"));
        scheduled(&mut store, &clock, "late", ts("2026-12-01T23:30:00Z"), u32::MAX - 1);
        let found = due_now(&mut store, &clock, std::process::id(), Missed::Skip, false).unwrap();
        assert_eq!(found.len(), 1);
        let Verdict::Skip { late_by } = found[0].2 else { panic!("{found:?}") };
        let said = skip(&found[0].0, late_by);
        journal(&mut store, &clock, "late", said);
        let row = store.session("late").unwrap().unwrap();
        assert_eq!(row.state, SessionState::Exited);
        assert!(row.reason.as_deref().is_some_and(|r| r.contains("90 min ago")), "{row:?}");
    }

    #[test]
    fn a_command_line_schedule_is_started_again_adopting_its_session() {
        let launch = Launch::Cli {
            args: vec!["run".into(), "--agent".into(), "claude".into(), "--".into(), "claude".into()],
            cwd: "/w".into(),
            env: vec![("CLAUDE_CONFIG_DIR".into(), "/home/u/.claude-work".into())],
        };
        let cmd = relaunch(std::path::Path::new("/bin/nightshift"), "abc", &launch).unwrap();
        let args: Vec<_> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(args, ["run", "--scheduled", "abc", "--agent", "claude", "--", "claude"]);
        let env: Vec<_> = cmd.get_envs().map(|(k, v)| (k.to_owned(), v.map(|v| v.to_owned()))).collect();
        assert_eq!(env, [("CLAUDE_CONFIG_DIR".into(), Some("/home/u/.claude-work".into()))]);
        assert_eq!(cmd.get_current_dir(), Some(std::path::Path::new("/w")));
        assert!(relaunch(std::path::Path::new("/bin/nightshift"), "abc", &Launch::App { form: serde_json::json!({}) })
            .is_none());
    }
}
