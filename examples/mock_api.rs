//! Runs the tests' mock Anthropic API on its own, to drive a real Claude Code client by hand:
//! `cargo run --example mock_api` then point `ANTHROPIC_BASE_URL` at the address it prints.

#[path = "../tests/mock_api/mod.rs"]
mod mock_api;

#[tokio::main]
async fn main() {
    let mock = mock_api::MockApi::start().await;
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
