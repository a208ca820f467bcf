//! Runs the stand-in Anthropic API (the one the tests and `doctor --canary` use) on its own, to
//! drive a real Claude Code client by hand: `cargo run --example mock_api` then point `ANTHROPIC_BASE_URL` at the address it prints.
//!
//! `MOCK_USAGE=weekly|5h:SECONDS` (or `…:4d`, `…:2h`, `…:90m`) fills that window until it resets. The
//! client 2.1.332 treats the weekly limit by its reset: within 24 hours it arms its automatic continue
//! (`Continuing automatically at … · Esc to cancel`), beyond 24 hours it opens the blocking
//! `What do you want to do?` menu instead (`MOCK_USAGE=weekly:4d`). `MOCK_UPGRADE_PATHS=overage` sends
//! `anthropic-ratelimit-unified-upgrade-paths`, which drops the menu's "Upgrade your plan".

use nightshift::standin::anthropic as mock_api;

#[tokio::main]
async fn main() {
    let mock = mock_api::AnthropicApi::start().await.expect("the stand-in API starts");
    // `MOCK_USAGE=weekly|5h:SECONDS` sets the window that is full and when it resets.
    if let Ok(spec) = std::env::var("MOCK_USAGE") {
        let now = mock_api::epoch(std::time::SystemTime::now());
        let (which, secs) = spec.split_once(':').unwrap_or((&spec, "120"));
        let reset = (now + seconds(secs).unwrap_or(120)) / 60 * 60 + 60;
        let mut usage = mock_api::Usage::default();
        match which {
            "weekly" => {
                usage.seven_day = 1.0;
                usage.seven_day_reset = reset;
            }
            _ => usage.five_hour_reset = reset,
        }
        mock.set_usage(usage);
    }
    if let Ok(paths) = std::env::var("MOCK_UPGRADE_PATHS") {
        mock.set_upgrade_paths(Some(&paths));
    }
    println!("{}", mock.base_url());
    let mut seen = 0;
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let requests = mock.requests();
        for r in &requests[seen..] {
            let tail: String = r.last_user.chars().rev().take(60).collect::<Vec<_>>().into_iter().rev().collect();
            eprintln!(
                "{} {} {} {} {:?}",
                r.method,
                r.path,
                r.scenario,
                r.status,
                if r.scenario == "after_tool" { r.last_user.clone() } else { tail }
            );
        }
        seen = requests.len();
    }
}

/// `90`, `90s`, `90m`, `2h` or `4d` in seconds.
fn seconds(spec: &str) -> Option<u64> {
    let (digits, unit) = spec.split_at(spec.find(|c: char| !c.is_ascii_digit()).unwrap_or(spec.len()));
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        "d" => n * 86400,
        _ => return None,
    })
}
