//! The night plan: from the usage samples' burn over the last hours of work and the sessions still
//! armed, when each usage window is expected to fill and reset, the limit waits and resumes that
//! means, the expected spend, and what time work is expected to stop. A pure forecast: the samples,
//! the clock and the end of the night in, a [`Plan`] out.

use chrono::{DateTime, Duration, TimeZone, Utc};
use serde::Serialize;

use crate::usage::Sample;

pub mod fence;
pub mod waits;

pub use waits::{Asleep, SessionWait, WaitOn};

/// How far back the burn is measured.
pub const LOOKBACK: Duration = Duration::hours(3);
/// A burn needs readings this far apart to mean anything.
const MIN_SPAN: Duration = Duration::minutes(10);
const FIVE_HOURS: Duration = Duration::hours(5);

/// One usage window's forecast.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Window {
    /// `5h` or `7d`.
    pub name: &'static str,
    pub used_pct: Option<f64>,
    #[serde(with = "crate::clock::opt_ts")]
    pub resets_at: Option<DateTime<Utc>>,
    /// Percentage points per hour over the last hours of work; `None`: too few readings.
    pub burn_pct_per_hour: Option<f64>,
    /// When it reaches 100 % at that burn, if before it resets.
    #[serde(with = "crate::clock::opt_ts")]
    pub full_at: Option<DateTime<Utc>>,
}

/// A wait for a usage limit's reset.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Wait {
    pub window: &'static str,
    #[serde(with = "crate::clock::ts")]
    pub from: DateTime<Utc>,
    #[serde(with = "crate::clock::ts")]
    pub until: DateTime<Utc>,
    /// Work goes on after it (a resume); `false`: it outlasts the night.
    pub resumes: bool,
    /// The pace parks the work, not a limit: why ([`Plan::with_pace`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parked: Option<String>,
    /// A session waits on it now, as the journal says ([`Plan::with_waiting`]): not a forecast.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_progress: bool,
}

/// The forecast for the rest of the night, of one client's plan (its windows are its own).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// Whose plan: `claude`, or `codex`.
    pub agent: crate::agent::AgentKind,
    #[serde(with = "crate::clock::ts")]
    pub now: DateTime<Utc>,
    /// The end of the night (the morning).
    #[serde(with = "crate::clock::ts")]
    pub until: DateTime<Utc>,
    /// Sessions still armed (not ended).
    pub armed: usize,
    /// Usage readings in the lookback.
    pub samples: usize,
    pub five_hour: Window,
    pub seven_day: Window,
    pub waits: Vec<Wait>,
    pub resumes: usize,
    /// When work is expected to stop (the morning, or a window that runs out before it).
    #[serde(with = "crate::clock::ts")]
    pub stops_at: DateTime<Utc>,
    pub stops_why: String,
    /// Dollars an hour of work over the lookback, from the sessions' own totals.
    pub cost_per_hour: Option<f64>,
    /// Expected spend until work stops (working time only).
    pub expected_usd: Option<f64>,
    /// Codex's plan beside Claude's, when Codex sessions are armed or reported in the lookback.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub codex: Option<Box<Plan>>,
    /// Tonight's clients as the canary last judged them, one line each ([`clients`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<String>,
    /// What the machine does through the waits ([`Plan::with_sleep`]); `None`: not asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sleep: Option<SleepPlan>,
    /// Cycles and tasks begun an hour over the lookback, for what a parked stretch costs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_per_hour: Option<f64>,
    /// Each armed session's waits in progress and ahead, as its journal says: limits, breakers, a
    /// loop's retries and back-offs, the pace's parks, scheduled starts ([`Plan::with_waiting`]).
    pub waiting: Vec<SessionWait>,
    /// The sleep Nightshift allowed through a wait and the wake alarm it set, while they stand.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asleep: Option<Asleep>,
    /// Tonight's network fence for the folder the plan was asked in ([`Plan::with_fence`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fence: Option<fence::FolderFence>,
    /// The sessions that move at a limit instead of waiting it out ([`Plan::with_moves`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moves: Vec<Move>,
}

/// A session armed to move at a limit (`--at-limit switch|failover`), and when its client's
/// window is expected to fill.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Move {
    pub session: String,
    pub agent: crate::agent::AgentKind,
    /// Where it goes: `another Claude account`, `Codex, back at the reset`.
    pub to: String,
    /// When its client's window is forecast to fill; `None`: not tonight, or unknown.
    #[serde(with = "crate::clock::opt_ts")]
    pub at: Option<DateTime<Utc>>,
}

/// What the machine is expected to do through the night's waits.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SleepPlan {
    /// A wake alarm can be set here: long waits are slept through.
    pub can_wake: bool,
    /// The stretches it sleeps through, each woken for what ends it (or left asleep until the
    /// morning when nothing does).
    pub stretches: Vec<Stretch>,
}

/// One stretch slept through.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stretch {
    #[serde(with = "crate::clock::ts")]
    pub from: DateTime<Utc>,
    /// The wake alarm's time; `None`: nothing to wake for before the morning.
    #[serde(with = "crate::clock::opt_ts")]
    pub wakes_at: Option<DateTime<Utc>>,
}

/// The stretches of `waits` (each `[from, until)`, resuming or not) long enough to sleep through
/// by `settings`, between `now` and the morning `until`.
fn stretches(
    waits: &[(DateTime<Utc>, DateTime<Utc>, bool)],
    now: DateTime<Utc>,
    until: DateTime<Utc>,
    settings: &crate::awake::SleepSettings,
) -> Vec<Stretch> {
    waits
        .iter()
        .filter_map(|(from, to, resumes)| {
            let from = (*from).max(now);
            let wakes = *resumes && *to < until;
            let end = if wakes { *to } else { until };
            (end - from >= settings.min_wait && (!wakes || end - settings.lead > from))
                .then(|| Stretch { from, wakes_at: wakes.then(|| end - settings.lead) })
        })
        .collect()
}

/// Where two clients' waits overlap: the machine sleeps only while both wait.
fn overlap(
    a: &[(DateTime<Utc>, DateTime<Utc>, bool)],
    b: &[(DateTime<Utc>, DateTime<Utc>, bool)],
) -> Vec<(DateTime<Utc>, DateTime<Utc>, bool)> {
    let mut out = Vec::new();
    for (af, at, ar) in a {
        for (bf, bt, br) in b {
            let (from, to) = ((*af).max(*bf), (*at).min(*bt));
            if from < to {
                // It resumes at its end when the wait that ends first resumes.
                let resumes = if at <= bt { *ar } else { *br };
                out.push((from, to, resumes));
            }
        }
    }
    out.sort_by_key(|w| w.0);
    out
}

/// A window's reading: when, how full, and when that window resets.
type Point = (DateTime<Utc>, f64, Option<DateTime<Utc>>);
/// Which window of a sample: its percentage and its reset.
type Reading = fn(&Sample) -> (Option<f64>, Option<DateTime<Utc>>);

/// The burn of one window: readings of its current window (same reset) in the lookback.
fn burn(points: &[Point]) -> Option<f64> {
    let last = points.last()?;
    let same: Vec<_> = points.iter().filter(|p| p.2 == last.2).collect();
    let first = same.first()?;
    let span = last.0 - first.0;
    if span < MIN_SPAN {
        return None;
    }
    Some(((last.1 - first.1) / (span.num_seconds() as f64 / 3600.0)).max(0.0))
}

fn window(name: &'static str, points: &[Point], now: DateTime<Utc>) -> Window {
    let last = points.last();
    let used = last.map(|p| p.1);
    let resets_at = last.and_then(|p| p.2);
    let rate = burn(points);
    let full_at = match (used, rate) {
        (Some(u), Some(r)) if r > 0.0 => {
            let at = now + Duration::seconds(((100.0 - u).max(0.0) / r * 3600.0) as i64);
            resets_at.is_none_or(|reset| at < reset).then_some(at)
        }
        _ => None,
    };
    Window { name, used_pct: used, resets_at, burn_pct_per_hour: rate, full_at }
}

/// The plan at `now` until `until`, from `samples` (each with its session and time) and the number
/// of sessions still armed.
pub fn forecast(
    samples: &[(String, DateTime<Utc>, Sample)],
    armed: usize,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Plan {
    let recent: Vec<&(String, DateTime<Utc>, Sample)> =
        samples.iter().filter(|(_, at, _)| *at >= now - LOOKBACK && *at <= now).collect();
    let points = |f: Reading| {
        let mut v: Vec<Point> = recent.iter().filter_map(|(_, at, s)| f(s).0.map(|p| (*at, p, f(s).1))).collect();
        v.sort_by_key(|p| p.0);
        v
    };
    let five = window("5h", &points(|s| (s.five_hour_pct, s.five_hour_resets_at)), now);
    let seven = window("7d", &points(|s| (s.seven_day_pct, s.seven_day_resets_at)), now);

    // The 7-day window first: running out stops the night.
    let mut stops_at = until;
    let mut stops_why = "the morning".to_string();
    let mut waits = Vec::new();
    if armed == 0 {
        stops_at = now;
        stops_why = "no session is armed".into();
    } else if let Some(full) = seven.full_at.filter(|f| *f < until) {
        stops_at = full;
        stops_why = "the 7-day window runs out".into();
        waits.push(Wait {
            window: "7d",
            from: full,
            until: seven.resets_at.unwrap_or(until).max(until),
            resumes: false,
            parked: None,
            in_progress: false,
        });
    }

    // The 5-hour window: fill, wait for the reset, start again at zero, until work stops.
    if let (Some(used), Some(rate)) = (five.used_pct.filter(|_| armed > 0), five.burn_pct_per_hour.filter(|r| *r > 0.0))
    {
        waits.extend(five_hour_waits(used, rate, five.resets_at, now, stops_at, |_| None));
    }
    waits.sort_by_key(|w| w.from);
    let resumes = waits.iter().filter(|w| w.resumes).count();

    let cost_per_hour = cost_rate(&recent);
    let expected_usd = expected_spend(cost_per_hour, &waits, now, stops_at);
    Plan {
        agent: crate::agent::AgentKind::Claude,
        now,
        until,
        armed,
        samples: recent.len(),
        five_hour: five,
        seven_day: seven,
        waits,
        resumes,
        stops_at,
        stops_why,
        cost_per_hour,
        expected_usd,
        codex: None,
        clients: Vec::new(),
        sleep: None,
        work_per_hour: None,
        waiting: Vec::new(),
        asleep: None,
        fence: None,
        moves: Vec::new(),
    }
}

/// Dollars at `rate` an hour over the working time from `now` to `stops_at`, the waits left out.
fn expected_spend(rate: Option<f64>, waits: &[Wait], now: DateTime<Utc>, stops_at: DateTime<Utc>) -> Option<f64> {
    let waiting: Duration =
        waits.iter().map(|w| w.until.min(stops_at) - w.from.max(now)).filter(|d| *d > Duration::zero()).sum();
    let working = ((stops_at - now) - waiting).max(Duration::zero());
    rate.map(|r| r * working.num_seconds() as f64 / 3600.0)
}

/// `waits` with the ones in progress laid over the forecast: a forecast wait of the same window
/// that overlaps one in progress is that one, as the journal knows it.
fn merged(mut waits: Vec<Wait>) -> Vec<Wait> {
    let now: Vec<Wait> = waits.iter().filter(|w| w.in_progress).cloned().collect();
    waits
        .retain(|w| w.in_progress || !now.iter().any(|n| n.window == w.window && w.from < n.until && n.from < w.until));
    waits.sort_by_key(|w| w.from);
    waits
}

/// The 5-hour window's waits from `now` to `stops_at`: at `rate` points an hour from `used`, it fills
/// and waits for its reset, then starts again at zero. `parks` says of the window that resets at
/// a time whether the pace parks it at a lower line (`Some((line, why))`).
fn five_hour_waits(
    mut used: f64,
    rate: f64,
    reset: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    stops_at: DateTime<Utc>,
    parks: impl Fn(DateTime<Utc>) -> Option<(f64, String)>,
) -> Vec<Wait> {
    let mut waits = Vec::new();
    let (mut t, mut reset) = (now, reset);
    while t < stops_at {
        let park = reset.and_then(&parks);
        let line = park.as_ref().map_or(100.0, |(line, _)| *line);
        let full = t + Duration::seconds(((line - used).max(0.0) / rate * 3600.0) as i64);
        match reset {
            Some(r) if r <= full => {
                t = r;
                used = 0.0;
                reset = Some(r + FIVE_HOURS);
            }
            _ if full >= stops_at => break,
            _ => {
                let back = reset.unwrap_or(full + FIVE_HOURS);
                let parked = park.map(|(_, why)| why);
                let resumes = back < stops_at;
                waits.push(Wait { window: "5h", from: full, until: back, resumes, parked, in_progress: false });
                t = back;
                used = 0.0;
                reset = Some(back + FIVE_HOURS);
            }
        }
    }
    waits
}

/// Dollars an hour: each session's own cost total grew by so much over its readings' span.
fn cost_rate(recent: &[&(String, DateTime<Utc>, Sample)]) -> Option<f64> {
    let mut sessions: std::collections::BTreeMap<&str, Vec<(DateTime<Utc>, f64)>> = Default::default();
    for (session, at, s) in recent {
        if let Some(c) = s.cost_usd {
            sessions.entry(session.as_str()).or_default().push((*at, c));
        }
    }
    let (mut spent, mut from, mut to) = (0.0, None::<DateTime<Utc>>, None::<DateTime<Utc>>);
    for points in sessions.values_mut() {
        points.sort_by_key(|p| p.0);
        let (first, last) = (points.first()?, points.last()?);
        spent += (last.1 - first.1).max(0.0);
        from = Some(from.map_or(first.0, |f| f.min(first.0)));
        to = Some(to.map_or(last.0, |t| t.max(last.0)));
    }
    let span = to? - from?;
    (span >= MIN_SPAN).then(|| spent / (span.num_seconds() as f64 / 3600.0))
}

impl Plan {
    /// The plan kept to `pace` (times in `tz`): a window that holds the morning parks at its line
    /// instead of filling, and a week ahead of its pace parks now, each wait saying why. Sleep is
    /// asked after the pace ([`Plan::with_sleep`]), so parked stretches can be slept through too.
    pub fn with_pace<Z: TimeZone>(mut self, pace: &crate::limits::pace::PaceSettings, tz: &Z) -> Plan {
        use crate::limits::pace::{decide, PaceSettings, Verdict};
        if let Some(codex) = self.codex.take() {
            self.codex = Some(Box::new(codex.with_pace(pace, tz)));
        }
        if pace.is_off() || self.armed == 0 {
            return self;
        }
        let (five, now, stops_at) = (&self.five_hour, self.now, self.stops_at);
        if let (Some(reserve), Some(used), Some(rate)) =
            (pace.morning_reserve, five.used_pct, five.burn_pct_per_hour.filter(|r| *r > 0.0))
        {
            let line = 100.0 - reserve.pct;
            let morning = PaceSettings { morning_reserve: Some(reserve), weekly_pace: None };
            // A window parks when, at its line, the pace would park it: it holds the morning.
            let parks = |reset: DateTime<Utc>| {
                let at_line =
                    Sample { five_hour_pct: Some(line), five_hour_resets_at: Some(reset), ..Sample::default() };
                let when = (reset - FIVE_HOURS).max(now);
                match decide(&morning, &at_line, when, tz) {
                    Verdict::Park { reason, .. } => Some((line, reason.replace(&format!(": it is at {line:.0}%"), ""))),
                    Verdict::Go => None,
                }
            };
            let mut waits: Vec<Wait> =
                self.waits.iter().filter(|w| w.window != "5h" || w.in_progress).cloned().collect();
            waits.extend(five_hour_waits(used, rate, five.resets_at, now, stops_at, parks));
            self.waits = merged(waits);
        }
        if let (Some(_), Some(used)) = (pace.weekly_pace, self.seven_day.used_pct) {
            let week = Sample {
                seven_day_pct: Some(used),
                seven_day_resets_at: self.seven_day.resets_at,
                ..Sample::default()
            };
            let weekly = PaceSettings { morning_reserve: None, weekly_pace: pace.weekly_pace };
            if let Verdict::Park { until, reason, .. } = decide(&weekly, &week, now, tz) {
                // Nothing runs until then: the waits inside it are the pace's.
                self.waits.retain(|w| w.from >= until || w.in_progress);
                let resumes = until < self.until;
                let parked = Some(reason);
                self.waits.insert(0, Wait { window: "7d", from: now, until, resumes, parked, in_progress: false });
                if !resumes {
                    self.stops_at = now;
                    self.stops_why = "the weekly pace parks the work until after the morning".into();
                }
            }
        }
        self.resumes = self.waits.iter().filter(|w| w.resumes).count();
        self
    }

    /// The plan with the waits its sessions are in now ([`waits`]): each limit wait joins its
    /// client's waits, over a forecast one of the same window, and the sleep Nightshift allowed
    /// stands before the stretches the plan forecasts.
    pub fn with_waiting(mut self, waiting: Vec<SessionWait>, asleep: Option<Asleep>) -> Plan {
        let codex = |w: &&SessionWait| w.agent == crate::agent::AgentKind::Codex.as_str();
        if let Some(mut plan) = self.codex.take() {
            plan.join(waiting.iter().filter(codex));
            self.codex = Some(plan);
        }
        let mine = self.agent == crate::agent::AgentKind::Codex;
        self.join(waiting.iter().filter(|w| codex(w) == mine));
        self.waiting = waiting;
        self.asleep = asleep;
        self
    }

    /// Adds the limit waits of `waiting` to the plan's own.
    fn join<'a>(&mut self, waiting: impl Iterator<Item = &'a SessionWait>) {
        let mut waits = std::mem::take(&mut self.waits);
        for w in waiting.filter(|w| w.on == WaitOn::Limit) {
            let window = w.window.unwrap_or("5h");
            // A reset nobody knows is waited for through the morning.
            let until = w.resets_at.or(w.until).unwrap_or(self.until).max(w.since);
            if waits.iter().any(|o| o.in_progress && o.window == window && o.until == until) {
                continue;
            }
            let resumes = w.until.is_some_and(|due| due < self.until);
            waits.push(Wait { window, from: w.since, until, resumes, parked: None, in_progress: true });
        }
        self.waits = merged(waits);
        self.resumes = self.waits.iter().filter(|w| w.resumes).count();
        self.expected_usd = expected_spend(self.cost_per_hour, &self.waits, self.now, self.stops_at);
    }

    /// The plan with the sessions that move at a limit: each is given when its client's window
    /// is forecast to fill (the first limit wait ahead of its plan), which it does not wait out.
    pub fn with_moves(mut self, mut moves: Vec<Move>) -> Plan {
        for m in &mut moves {
            let plan = if m.agent == self.agent { Some(&self) } else { self.codex.as_deref() };
            m.at = plan.and_then(|p| p.waits.iter().find(|w| !w.in_progress && w.parked.is_none()).map(|w| w.from));
        }
        self.moves = moves;
        self
    }

    /// The plan with tonight's fence for the folder it was asked in.
    pub fn with_fence(mut self, fence: fence::FolderFence) -> Plan {
        self.fence = Some(fence);
        self
    }

    /// The plan with what the machine does through its waits by `settings`: the stretches it
    /// sleeps through (with Codex's plan beside, only where both clients wait), after the sleep in
    /// progress when Nightshift allowed one.
    pub fn with_sleep(mut self, settings: &crate::awake::SleepSettings) -> Plan {
        let waits = |p: &Plan| -> Vec<(DateTime<Utc>, DateTime<Utc>, bool)> {
            p.waits.iter().map(|w| (w.from, w.until, w.resumes)).collect()
        };
        let mut all = if self.armed > 0 { Some(waits(&self)) } else { None };
        if let Some(codex) = self.codex.as_ref().filter(|c| c.armed > 0) {
            all = Some(match all {
                Some(mine) => overlap(&mine, &waits(codex)),
                None => waits(codex),
            });
        }
        let mut stretches = match all {
            Some(w) if settings.can_wake => stretches(&w, self.now, self.until, settings),
            _ => Vec::new(),
        };
        if let Some(asleep) = &self.asleep {
            // The stretch under way is the one the journal says, not a forecast.
            stretches.retain(|s| s.from >= asleep.wakes_at);
        }
        self.sleep = Some(SleepPlan { can_wake: settings.can_wake, stretches });
        self
    }

    /// The plan as a person reads it, times in `tz`.
    pub fn text<Z: chrono::TimeZone>(&self, tz: &Z) -> String
    where
        Z::Offset: std::fmt::Display,
    {
        let at = |t: DateTime<Utc>| t.with_timezone(tz).format("%H:%M").to_string();
        let day = |t: DateTime<Utc>| t.with_timezone(tz).format("%a %H:%M").to_string();
        let codex = self.agent == crate::agent::AgentKind::Codex;
        let whose = if codex { " of Codex" } else { "" };
        let mut out =
            vec![format!("Now {} · until {} · {} session(s){whose} armed", at(self.now), at(self.until), self.armed)];
        if self.samples == 0 {
            out.push(format!(
                "No usage readings in the last 3 hours: the windows' burn is unknown ({} gives them as it works).",
                if codex { "a Codex session's notify" } else { "a Claude session's statusLine" }
            ));
        }
        for w in [&self.five_hour, &self.seven_day] {
            let label = if w.name == "5h" { "5-hour window" } else { "7-day window" };
            let used = w.used_pct.map_or("unknown".into(), |u| format!("{u:.0} % used"));
            let burn = w.burn_pct_per_hour.map_or("burn unknown".into(), |b| format!("burning {b:.1} %/h"));
            let reset = w
                .resets_at
                .map(|r| format!(", resets {}", if w.name == "5h" { at(r) } else { day(r) }))
                .unwrap_or_default();
            let full = match w.full_at {
                Some(f) if f < self.until => format!(" → full at {}", at(f)),
                Some(_) | None if w.burn_pct_per_hour.is_some() => " → lasts the night".into(),
                _ => String::new(),
            };
            out.push(format!("{label}: {used}, {burn}{full}{reset}"));
        }
        if self.waits.iter().all(|w| w.parked.is_some()) {
            out.push("Limit waits: none expected".into());
        } else {
            let waits: Vec<String> = self
                .waits
                .iter()
                .filter(|w| w.parked.is_none())
                .map(|w| {
                    format!(
                        "{}–{} ({}{})",
                        at(w.from),
                        at(w.until),
                        if w.in_progress { "in progress, " } else { "" },
                        if w.resumes { "then a resume" } else { "past the morning" }
                    )
                })
                .collect();
            let resumes = self.waits.iter().filter(|w| w.resumes && w.parked.is_none()).count();
            out.push(format!("Limit waits: {} → {resumes} resume(s)", waits.join(", ")));
        }
        for w in self.waits.iter().filter(|w| w.parked.is_some()) {
            let hours = (w.until.min(self.until) - w.from.max(self.now)).num_minutes().max(0) as f64 / 60.0;
            let work = match self.work_per_hour {
                Some(rate) if rate > 0.0 => {
                    format!(
                        "about {hours:.1} h of work, {:.0} cycle(s) or task(s) at the last 3 hours' pace",
                        rate * hours
                    )
                }
                _ => format!("about {hours:.1} h of work"),
            };
            let end = if w.until - w.from >= Duration::hours(20) { day(w.until) } else { at(w.until) };
            out.push(format!("Pace: parked {}–{end} {} ({work})", at(w.from), w.parked.as_deref().unwrap_or_default()));
        }
        for m in &self.moves {
            let when = m.at.map_or("if a limit comes".to_string(), |t| format!("at the limit expected {}", at(t)));
            out.push(format!("Moves: {} goes on with {} {when}, instead of waiting", m.session, m.to));
        }
        if !self.waiting.is_empty() {
            let far = |t: DateTime<Utc>| (t - self.now).abs() >= Duration::hours(20);
            let lines = waits::lines(&self.waiting, |t| if far(t) { day(t) } else { at(t) });
            out.push(format!("Waiting now:\n  {}", lines.join("\n  ")));
        }
        out.push(match (self.expected_usd, self.cost_per_hour) {
            (Some(usd), Some(rate)) => format!(
                "Expected spend: about {} (at {}/h over the last 3 hours)",
                crate::units::usd(usd),
                crate::units::usd(rate)
            ),
            _ => "Expected spend: unknown (no cost readings in the last 3 hours)".into(),
        });
        out.push(format!("Work is expected to stop at {}: {}", at(self.stops_at), self.stops_why));
        let any_wait = !self.waits.is_empty() || self.codex.as_ref().is_some_and(|c| !c.waits.is_empty());
        let mut each: Vec<String> = self
            .asleep
            .iter()
            .map(|a| {
                let due = a.due.map(|d| format!(", for what is due at {}", at(d))).unwrap_or_default();
                format!("allowed to sleep since {}; its wake alarm is set for {}{due}", at(a.since), at(a.wakes_at))
            })
            .collect();
        each.extend(self.sleep.iter().flat_map(|s| &s.stretches).map(|s| match s.wakes_at {
            Some(wake) => format!("sleeps {}–{}, wakes for the reset", at(s.from), at(wake)),
            None => format!("sleeps from {} to the morning: nothing to wake for", at(s.from)),
        }));
        match &self.sleep {
            _ if !each.is_empty() => out.push(format!("The machine: {}", each.join("; "))),
            Some(sleep) if any_wait && !sleep.can_wake => out.push(
                "The machine: kept awake through the waits, as no wake alarm can be set here (`nightshift doctor` says why)"
                    .into(),
            ),
            Some(_) if any_wait => out.push("The machine: kept awake through the waits, too short to sleep through".into()),
            _ => {}
        }
        if !self.clients.is_empty() {
            out.push(format!("Tonight's clients: {}", self.clients.join("; ")));
        }
        out.extend(self.fence.iter().flat_map(fence::FolderFence::lines));
        let mut text = out.join("\n") + "\n";
        if let Some(codex) = &self.codex {
            text.push_str("\nCodex, its own plan:\n");
            for line in codex.text(tz).lines().skip(1) {
                text.push_str(&format!("  {line}\n"));
            }
        }
        text
    }
}

/// The next `at` (local time in `tz`) after `now`: the morning the night runs to.
pub fn next_local<Z: chrono::TimeZone>(now: DateTime<Utc>, at: chrono::NaiveTime, tz: &Z) -> DateTime<Utc> {
    let local = now.with_timezone(tz);
    let today = local.date_naive().and_time(at);
    let pick = |d: chrono::NaiveDateTime| tz.from_local_datetime(&d).earliest().map(|t| t.with_timezone(&Utc));
    match pick(today).filter(|t| *t > now) {
        Some(t) => t,
        None => pick(today + Duration::days(1)).unwrap_or(now + Duration::days(1)),
    }
}

#[cfg(test)]
mod tests;
