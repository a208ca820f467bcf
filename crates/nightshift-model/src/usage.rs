//! Plan usage from Claude Code's own statusLine data.
//!
//! Claude Code runs a statusLine command with a JSON status on stdin (on start and after turns, not
//! per frame). For the sessions it runs, Nightshift passes `nightshift statusline` as that command
//! with `claude --settings '<json>'` — nothing is written to any settings file — and the exporter
//! forwards the JSON to the supervising process, then prints the user's own statusLine or a compact
//! line of its own. The supervisor turns the JSON into a [`Sample`] and journals it when it changed.
//!
//! The user's statusLine is a command the exporter runs outside any sandbox, so it is never taken
//! from a file the agent can write: it is read once per start, by the supervisor, from the scopes
//! the client itself reads for that start (the runtime's `usage::launch_statusline`), and handed to the exporter in
//! the session's environment ([`USER_STATUSLINE_ENV`]). A sandboxed session takes the user's own
//! settings alone: its project's files are the agent's to write.

pub mod codex;

use chrono::{DateTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Tells the exporter, in the session's environment, where the supervisor listens.
pub const CONTROL_ENV: &str = "NIGHTSHIFT_CONTROL";
/// The session's secret for the exporter: only its own statusLine may report for it.
pub const TOKEN_ENV: &str = "NIGHTSHIFT_TOKEN";
/// The user's own statusLine command, as the supervisor read it when the session started; the
/// exporter runs this and nothing else.
pub const USER_STATUSLINE_ENV: &str = "NIGHTSHIFT_USER_STATUSLINE";

/// One reading of a session's usage. Percentages are 0–100.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub five_hour_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", with = "crate::clock::opt_ts", default)]
    pub five_hour_resets_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seven_day_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", with = "crate::clock::opt_ts", default)]
    pub seven_day_resets_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The session's input and output tokens so far (the statusLine's totals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
}

/// Money and tokens spent, across the statusLine's own counts: they start again after `/clear`
/// and with each new process, so a lower figure is a new count, not money back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    /// The cost as the statusLine last reported it.
    pub cost: Option<f64>,
    /// Everything since the session started, across those restarts of the count.
    pub spent: Option<f64>,
    /// Tokens as the statusLine last reported them.
    pub tokens: Option<u64>,
    /// All of them since the session started.
    pub tokens_spent: u64,
}

impl Tally {
    pub fn add(&mut self, sample: &Sample) {
        if let Some(cost) = sample.cost_usd {
            let added = match self.cost {
                Some(before) if cost >= before => cost - before,
                _ => cost,
            };
            self.spent = Some(self.spent.unwrap_or(0.0) + added);
            self.cost = Some(cost);
        }
        if let Some(tokens) = sample.tokens {
            let added = match self.tokens {
                Some(before) if tokens >= before => tokens - before,
                _ => tokens,
            };
            self.tokens_spent += added;
            self.tokens = Some(tokens);
        }
    }

    /// What was spent before a new process of the session started: its counts start from zero.
    pub fn carried_over(&self) -> Self {
        Self { cost: None, spent: self.spent, tokens: None, tokens_spent: self.tokens_spent }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("not a Claude Code status: {0}")]
pub struct NotAStatus(String);

fn pct(v: &Value) -> Option<f64> {
    v.as_f64().filter(|p| p.is_finite() && (0.0..=1000.0).contains(p))
}

fn epoch(v: &Value) -> Option<DateTime<Utc>> {
    let secs = v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))?;
    Utc.timestamp_opt(secs, 0).single()
}

impl Sample {
    /// Reads the fields Nightshift keeps from a statusLine JSON. Anything that is not a JSON object
    /// with at least one of them is refused.
    pub fn from_status(json: &[u8]) -> Result<Self, NotAStatus> {
        let v: Value = serde_json::from_slice(json).map_err(|e| NotAStatus(e.to_string()))?;
        if !v.is_object() {
            return Err(NotAStatus("not a JSON object".into()));
        }
        let limits = &v["rate_limits"];
        let sample = Sample {
            five_hour_pct: pct(&limits["five_hour"]["used_percentage"]),
            five_hour_resets_at: epoch(&limits["five_hour"]["resets_at"]),
            seven_day_pct: pct(&limits["seven_day"]["used_percentage"]),
            seven_day_resets_at: epoch(&limits["seven_day"]["resets_at"]),
            context_pct: pct(&v["context_window"]["used_percentage"]),
            cost_usd: v["cost"]["total_cost_usd"].as_f64().filter(|c| c.is_finite() && *c >= 0.0),
            model: v["model"]["display_name"].as_str().map(|m| m.chars().take(60).collect()),
            tokens: match (
                v["context_window"]["total_input_tokens"].as_u64(),
                v["context_window"]["total_output_tokens"].as_u64(),
            ) {
                (None, None) => None,
                (i, o) => Some(i.unwrap_or(0) + o.unwrap_or(0)),
            },
        };
        if sample == Sample::default() {
            return Err(NotAStatus("none of the usage fields are there".into()));
        }
        Ok(sample)
    }

    /// Whether the plan windows are known (subscriber mode, after the first answer).
    pub fn has_limits(&self) -> bool {
        self.five_hour_pct.is_some() || self.seven_day_pct.is_some()
    }

    /// Its plan windows alone: the context, cost and tokens are a session's own.
    pub fn windows(&self) -> Sample {
        Sample {
            five_hour_pct: self.five_hour_pct,
            five_hour_resets_at: self.five_hour_resets_at,
            seven_day_pct: self.seven_day_pct,
            seven_day_resets_at: self.seven_day_resets_at,
            ..Sample::default()
        }
    }
}

/// The colour band of a window's use: green under 60 %, yellow 60–84 %, red from 85 %. Ordered from
/// the least used to the most: the worse of two is the greater.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Band {
    Green,
    Yellow,
    Red,
}

impl Band {
    pub fn of(pct: f64) -> Self {
        if pct >= 85.0 {
            Self::Red
        } else if pct >= 60.0 {
            Self::Yellow
        } else {
            Self::Green
        }
    }

    /// The band of the more used of `sample`'s windows (the chip's colour); none without a reading.
    pub fn of_sample(sample: &Sample) -> Option<Self> {
        [sample.five_hour_pct, sample.seven_day_pct].into_iter().flatten().map(Self::of).max()
    }

    fn ansi(self) -> &'static str {
        match self {
            Self::Green => "\x1b[32m",
            Self::Yellow => "\x1b[33m",
            Self::Red => "\x1b[31m",
        }
    }
}

/// The chip: `5h 35% · 7d 38%`, each part coloured by its band when `colour` is set.
pub fn chip(sample: &Sample, colour: bool) -> String {
    let part = |label: &str, pct: Option<f64>| {
        pct.map(|p| {
            let text = format!("{label} {}%", p.round() as i64);
            if colour {
                format!("{}{text}\x1b[0m", Band::of(p).ansi())
            } else {
                text
            }
        })
    };
    let parts: Vec<String> =
        [part("5h", sample.five_hour_pct), part("7d", sample.seven_day_pct)].into_iter().flatten().collect();
    if parts.is_empty() {
        "5h – · 7d –".to_string()
    } else {
        parts.join(" · ")
    }
}

const SPARKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// A sparkline of `values` (0–100), one character each; `·` where there is no reading.
pub fn sparkline(values: &[Option<f64>]) -> String {
    values
        .iter()
        .map(|v| match v {
            Some(p) => SPARKS[((p.clamp(0.0, 100.0) / 100.0) * 7.0).round() as usize],
            None => '·',
        })
        .collect()
}

/// Whether a statusLine command is Nightshift's exporter.
pub fn is_ours(command: &str) -> bool {
    command.contains("nightshift") && command.contains("statusline")
}

/// The `--settings` JSON that makes Claude Code run the exporter.
pub fn settings(exporter: &str) -> Value {
    serde_json::json!({"statusLine": {"type": "command", "command": exporter, "padding": 0}})
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATUS: &str = include_str!(
        "../../../tests/fixtures/claude-code/2.1.332/statusline/statusline-stdin-1796042093977595111.json"
    );

    #[test]
    fn reads_the_real_clients_status() {
        let s = Sample::from_status(STATUS.as_bytes()).unwrap();
        assert_eq!(s.five_hour_pct, Some(42.0));
        assert_eq!(s.five_hour_resets_at.unwrap().timestamp(), 1796052892);
        assert_eq!(s.seven_day_pct, Some(17.0));
        assert_eq!(s.context_pct, Some(1.0));
        assert_eq!(s.cost_usd, Some(0.028524));
        assert_eq!(s.model.as_deref(), Some("Sonnet 5.5"));
        assert!(s.has_limits());
    }

    #[test]
    fn garbage_is_refused() {
        for bad in ["", "not json", "[1,2]", "{}", "{\"rate_limits\": \"x\"}", "\u{0}\u{1}"] {
            assert!(Sample::from_status(bad.as_bytes()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn chip_and_bands() {
        let s = Sample { five_hour_pct: Some(35.2), seven_day_pct: Some(84.6), ..Default::default() };
        assert_eq!(chip(&s, false), "5h 35% · 7d 85%");
        assert_eq!(Band::of(59.9), Band::Green);
        assert_eq!(Band::of(60.0), Band::Yellow);
        assert_eq!(Band::of(84.9), Band::Yellow);
        assert_eq!(Band::of(85.0), Band::Red);
        let sample = |five, seven| Sample { five_hour_pct: five, seven_day_pct: seven, ..Sample::default() };
        assert_eq!(Band::of_sample(&sample(Some(91.0), Some(40.0))), Some(Band::Red));
        assert_eq!(Band::of_sample(&sample(Some(10.0), Some(70.0))), Some(Band::Yellow), "the worse window");
        assert_eq!(Band::of_sample(&sample(None, Some(20.0))), Some(Band::Green));
        assert_eq!(Band::of_sample(&sample(None, None)), None);
        assert!(chip(&s, true).contains("\x1b[32m5h 35%"));
        assert_eq!(chip(&Sample::default(), false), "5h – · 7d –");
        assert_eq!(sparkline(&[Some(0.0), None, Some(100.0), Some(50.0)]), "▁·█▅");
    }
}
