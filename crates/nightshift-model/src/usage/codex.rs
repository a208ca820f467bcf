//! Codex's own usage data, as it writes it in each thread's rollout file
//! (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl`). After every response it
//! appends an `event_msg` of type `token_count`: the thread's tokens so far and the last
//! response's, the model's context window, and the plan's `rate_limits` from the service's
//! `x-codex-*` headers, a `primary` window (5 hours) and a `secondary` one (7 days), each with its
//! used percent, its length in minutes and its reset (epoch seconds). Each `turn_context` names the
//! model. Read only: Nightshift never writes Codex's files.
//!
//! Measured on codex-cli 0.171.0 (`tests/fixtures/codex/0.171.0/rollout/`).

use chrono::{DateTime, TimeZone, Utc};
use serde_json::Value;

use super::Sample;

/// How much of the end of a rollout file is read for its latest figures: a token count follows
/// every response, so the latest is always near the end.
pub const TAIL: u64 = 256 << 10;

/// The latest figures of a rollout file's `tail` as a sample: the plan's windows, the thread's
/// tokens, the context in use and the model. `None` when it holds no token count yet.
pub fn from_rollout(tail: &str) -> Option<Sample> {
    let mut count: Option<Value> = None;
    let mut model: Option<String> = None;
    for line in tail.lines().rev() {
        if count.is_some() && model.is_some() {
            break;
        }
        // The first line of a tail read from the middle of a file is cut: it does not parse.
        let Ok(mut v) = serde_json::from_str::<Value>(line) else { continue };
        match (v["type"].as_str(), v["payload"]["type"].as_str()) {
            (Some("event_msg"), Some("token_count")) if count.is_none() => count = Some(v["payload"].take()),
            (Some("turn_context"), _) if model.is_none() => model = v["payload"]["model"].as_str().map(String::from),
            _ => {}
        }
    }
    let count = count?;
    let mut sample = Sample { model, ..Sample::default() };
    let limits = &count["rate_limits"];
    for (name, fallback_minutes) in [("primary", 300), ("secondary", 10_080)] {
        let w = &limits[name];
        let Some(pct) = w["used_percent"].as_f64() else { continue };
        let minutes = w["window_minutes"].as_u64().unwrap_or(fallback_minutes);
        let resets = w["resets_at"].as_i64().and_then(|s| Utc.timestamp_opt(s, 0).single());
        // The window is known by its length, not its name: a day or less is the short one.
        if minutes <= 24 * 60 {
            (sample.five_hour_pct, sample.five_hour_resets_at) = (Some(pct), resets);
        } else {
            (sample.seven_day_pct, sample.seven_day_resets_at) = (Some(pct), resets);
        }
    }
    let info = &count["info"];
    sample.tokens = info["total_token_usage"]["total_tokens"].as_u64();
    let window = info["model_context_window"].as_f64().filter(|w| *w > 0.0);
    if let (Some(used), Some(window)) = (info["last_token_usage"]["total_tokens"].as_f64(), window) {
        sample.context_pct = Some((used / window * 100.0).min(100.0));
    }
    let known = sample.five_hour_pct.is_some() || sample.seven_day_pct.is_some() || sample.tokens.is_some();
    known.then_some(sample)
}

/// When the window that Codex's data says is used up resets (the longer one first: it holds).
pub fn limit_reset(sample: &Sample) -> Option<DateTime<Utc>> {
    match (sample.five_hour_pct, sample.seven_day_pct) {
        (_, Some(p)) if p >= 100.0 => sample.seven_day_resets_at,
        (Some(p), _) if p >= 100.0 => sample.five_hour_resets_at,
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> String {
        std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/codex/0.171.0/rollout/one-turn.jsonl"),
        )
        .unwrap()
    }

    #[test]
    fn a_real_rollout_gives_both_windows_the_tokens_the_context_and_the_model() {
        let s = from_rollout(&fixture()).expect("a token count");
        assert_eq!((s.five_hour_pct, s.seven_day_pct), (Some(35.0), Some(12.0)));
        assert_eq!(s.five_hour_resets_at.map(|t| t.timestamp()), Some(1_796_436_420));
        assert_eq!(s.seven_day_resets_at.map(|t| t.timestamp()), Some(1_796_782_020));
        assert_eq!((s.tokens, s.model.as_deref()), (Some(1240), Some("gpt-5-codex")));
        let ctx = s.context_pct.unwrap();
        assert!((ctx - 1240.0 / 258_400.0 * 100.0).abs() < 1e-9, "{ctx}");
        assert_eq!(s.cost_usd, None, "Codex says no cost");
        assert_eq!(limit_reset(&s), None);
    }

    #[test]
    fn a_tail_cut_mid_line_a_rollout_without_counts_and_a_limit_are_read() {
        let text = fixture();
        let third = text.char_indices().map(|(i, _)| i).find(|i| *i >= text.len() / 3).unwrap();
        let cut = &text[third..];
        assert!(from_rollout(cut).is_some(), "the cut first line is passed over");
        let first_turn: String = text.lines().take(3).map(|l| format!("{l}\n")).collect();
        assert_eq!(from_rollout(&first_turn), None);
        let full = r#"{"type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"primary":{"used_percent":100.0,"window_minutes":300,"resets_at":1796436420},"secondary":null}}}"#;
        let s = from_rollout(full).unwrap();
        assert_eq!((s.five_hour_pct, s.tokens), (Some(100.0), None));
        assert_eq!(limit_reset(&s).map(|t| t.timestamp()), Some(1_796_436_420));
    }
}
