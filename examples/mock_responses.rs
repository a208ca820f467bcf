//! Runs the stand-in OpenAI Responses API (the one the tests and `doctor --canary` use) on its own,
//! to drive a real Codex CLI by hand: `cargo run --example mock_responses`, then set the `base_url` of a `[model_providers.mock]` in
//! a private `CODEX_HOME`'s config.toml to the address it prints (see CONTRIBUTING.md).
//! `MOCK_DEFAULT=slow:5` answers prompts without a `mock:` marker that way.

use nightshift::standin::openai as mock_responses;

#[tokio::main]
async fn main() {
    let mock = mock_responses::ResponsesApi::start().await.expect("the stand-in API starts");
    if let Ok(default) = std::env::var("MOCK_DEFAULT") {
        mock.set_default(&default);
    }
    println!("{}", mock.base_url());
    let mut seen = 0;
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let requests = mock.requests();
        for r in &requests[seen..] {
            let tail: String = r.last_user.chars().rev().take(60).collect::<Vec<_>>().into_iter().rev().collect();
            eprintln!(
                "{} {} {:?} {} {} {} messages {:?}",
                r.method,
                r.path,
                r.kind,
                r.scenario,
                r.status,
                r.messages.len(),
                tail
            );
        }
        seen = requests.len();
    }
}
