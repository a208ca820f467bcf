//! Runs the tests' mock Anthropic API on its own, to drive a real Claude Code client by hand:
//! `cargo run --example mock_api` then point `ANTHROPIC_BASE_URL` at the address it prints.

#[path = "../tests/mock_api/mod.rs"]
mod mock_api;

#[tokio::main]
async fn main() {
    let mock = mock_api::MockApi::start().await;
    // `MOCK_USAGE=weekly|5h:SECONDS` sets the window that is full and when it resets.
    if let Ok(spec) = std::env::var("MOCK_USAGE") {
        let now = mock_api::epoch(std::time::SystemTime::now());
        let (which, secs) = spec.split_once(':').unwrap_or((&spec, "120"));
        let reset = (now + secs.parse::<u64>().unwrap_or(120)) / 60 * 60 + 60;
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
