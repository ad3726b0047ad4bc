//! The agent loop over the real Anthropic provider and loopback HTTP (BUDGET-4, PROV-5).
#![cfg(feature = "anthropic")]

mod common;
mod fake_anthropic;

use common::*;
use fake_anthropic::{FakeAnthropic, Reply};
use fisk_ai::Config;
use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
use fisk_ai::llm::anthropic::AnthropicProvider;
use std::time::Duration;

fn config(extra: &str) -> Config {
    Config::from_yaml_str(&format!(
        "identity: cowsay\napplication_path: {}\nsystem_prompt: s\nllm:\n  model: claude-haiku-4-5\n{extra}",
        root().join("examples/cowsay/cowsay").display()
    ))
    .unwrap()
}

#[tokio::test]
async fn budget_4_a_model_call_past_its_timeout_ends_the_run_cleanly_with_stats() {
    let slow = Reply::fixture("01_end_turn_text.json").with_delay(Duration::from_secs(30));
    let server = FakeAnthropic::with_replies([slow.clone(), slow]).await;
    let provider = AnthropicProvider::new("k")
        .with_base_url(server.url())
        .unwrap()
        .with_streaming(false)
        .with_max_retries(1)
        .with_backoff(Duration::from_millis(1), Duration::from_millis(1));
    // llm.budget.call_timeout bounds each attempt (PROV-5), over the provider's own 120 s default.
    let agent = Agent::builder()
        .config(config("  budget:\n    call_timeout: 200ms\n"))
        .provider(provider)
        .build()
        .await
        .unwrap();
    let outcome = agent.run("x", RunOptions::default()).await;
    assert_eq!(outcome.reason, TerminalReason::Error);
    let error = outcome.error.unwrap().to_string();
    assert!(error.contains("model call failed") && error.to_lowercase().contains("time"), "{error}");
    assert_eq!(outcome.stats.llm_calls, 1);
    assert_eq!(server.request_count(), 2, "one attempt and one retry, each bounded");
}

#[tokio::test]
async fn loop_4_a_non_retryable_api_error_ends_the_run_naming_it() {
    let server = FakeAnthropic::with_replies([Reply::fixture("error_401_authentication.json")]).await;
    let provider = AnthropicProvider::new("bad").with_base_url(server.url()).unwrap();
    let agent = Agent::builder().config(config("")).provider(provider).build().await.unwrap();
    let outcome = agent.run("x", RunOptions::default()).await;
    assert_eq!(outcome.reason, TerminalReason::Error);
    assert!(outcome.error.unwrap().to_string().contains("401"));
    assert_eq!(server.request_count(), 1);
}
