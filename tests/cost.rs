//! What a run costs (COST-1..6): a known model priced exactly, `llm.pricing` over the built-in table, an unknown
//! price reported unknown, the money budget stopping the run, and a budget that cannot be enforced refused at build.

mod common;

use common::tools::FakeTool;
use common::turns::call;
use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
use fisk_ai::llm::{Block, Caps, Cost, PriceTable, Pricing, Response, ScriptedProvider, StopReason, Usage};
use fisk_ai::tool::{ToolKind, ToolSpec};
use fisk_ai::{Config, ErrorKind};
use std::sync::Arc;

fn config(model: &str, extra: &str) -> Config {
    Config::from_yaml_str(&format!("identity: priced\nsystem_prompt: s\nllm:\n  model: {model}\n{extra}")).unwrap()
}

/// One call's tokens: 1000 in, 500 out, 2000 read from the cache, 100 written to it.
fn usage() -> Usage {
    Usage { input_tokens: 1_000, output_tokens: 500, cache_read_tokens: 2_000, cache_creation_tokens: 100 }
}

fn answer() -> Response {
    Response::new(vec![Block::text("fine")], StopReason::EndTurn, usage())
}

fn probing() -> Response {
    Response::new(vec![call("c", "probe")], StopReason::ToolUse, usage())
}

/// A scripted provider that says it is the Anthropic one, whose list prices the built-in table holds.
fn anthropic(replies: impl IntoIterator<Item = Response>) -> ScriptedProvider {
    ScriptedProvider::new(replies).with_caps(Caps::new("anthropic"))
}

async fn agent(config: Config, provider: &Arc<ScriptedProvider>) -> fisk_ai::Result<Agent> {
    let probe = FakeTool(ToolSpec::new("probe", ToolKind::Custom, serde_json::json!({"type": "object"})));
    Agent::builder().config(config).provider_arc(provider.clone()).tool(probe).build().await
}

#[tokio::test]
async fn cost_1_a_built_in_model_is_priced_exactly_and_the_summary_shows_it() {
    // claude-sonnet-4-6: $3 in, $15 out, $0.30 cache read, $3.75 cache write per million tokens.
    // 1000 * 3 + 500 * 15 + 2000 * 0.3 + 100 * 3.75 = 11475 millionths of a dollar per call.
    let provider = Arc::new(anthropic([probing(), answer()]));
    let agent = agent(config("claude-sonnet-4-6-20260217", ""), &provider).await.unwrap();
    let outcome = agent.run("x", RunOptions::new()).await;
    assert_eq!(outcome.reason, TerminalReason::Completed);
    assert_eq!(outcome.stats.cost, Some(Cost::from_usd(0.02295).unwrap()));
    assert_eq!(outcome.stats.cost.unwrap().femtodollars(), 22_950_000_000_000);
    let summary = outcome.stats.summary(false, None, false);
    assert!(summary.contains(" cost=$0.022950 latency="), "{summary}");
}

#[tokio::test]
async fn cost_2_llm_pricing_prices_a_model_the_tables_do_not_know_and_wins_over_them() {
    let pricing = "  pricing:\n    input: 0.5\n    output: 1.5\n    cache_read: 0.05\n    cache_write: 0.625\n";
    for model in ["local-model", "claude-sonnet-4-6"] {
        let provider = Arc::new(ScriptedProvider::new([answer()]));
        let outcome = agent(config(model, pricing), &provider).await.unwrap().run("x", RunOptions::new()).await;
        // 1000 * 0.5 + 500 * 1.5 + 2000 * 0.05 + 100 * 0.625 = 1412.5 millionths.
        assert_eq!(outcome.stats.cost, Some(Cost::from_usd(0.0014125).unwrap()), "{model}");
    }
    // The host's table, between the configuration and the built-in table.
    let provider = Arc::new(ScriptedProvider::new([answer()]));
    let table =
        PriceTable::new().with("local-model", Pricing::per_million(1.0, 2.0).unwrap().with_cache(0.0, 0.0).unwrap());
    let probe = FakeTool(ToolSpec::new("probe", ToolKind::Custom, serde_json::json!({"type": "object"})));
    let agent = Agent::builder().config(config("local-model", "")).provider_arc(provider).prices(table).tool(probe);
    let outcome = agent.build().await.unwrap().run("x", RunOptions::new()).await;
    assert_eq!(outcome.stats.cost, Some(Cost::from_usd(0.002).unwrap()));
}

#[tokio::test]
async fn cost_2_the_built_in_table_prices_only_the_anthropic_provider() {
    // The same model through another provider (a gateway) may cost otherwise: unknown, and no money budget on it.
    let provider = Arc::new(ScriptedProvider::new([answer()]));
    let outcome = agent(config("claude-sonnet-4-6", ""), &provider).await.unwrap().run("x", RunOptions::new()).await;
    assert_eq!(outcome.stats.cost, None);
    let err = agent(config("claude-sonnet-4-6", "  budget:\n    max_cost: 1\n"), &provider).await.unwrap_err();
    assert!(err.to_string().contains("price of model claude-sonnet-4-6 is unknown"), "{err}");
}

#[tokio::test]
async fn cost_3_an_unknown_price_is_reported_unknown_never_zero() {
    let provider = Arc::new(ScriptedProvider::new([answer()]));
    let outcome = agent(config("local-model", ""), &provider).await.unwrap().run("x", RunOptions::new()).await;
    assert_eq!(outcome.stats.cost, None);
    assert!(outcome.stats.summary(false, None, false).contains(" cost=unknown "));
    // Cached tokens without a cache price make the cost unknown too, not cheaper.
    let provider = Arc::new(ScriptedProvider::new([answer()]));
    let partial = "  pricing:\n    input: 1\n    output: 2\n";
    let outcome = agent(config("local-model", partial), &provider).await.unwrap().run("x", RunOptions::new()).await;
    assert_eq!(outcome.stats.cost, None);
}

#[tokio::test]
async fn cost_4_the_cost_budget_stops_the_run_with_reason_budget() {
    // Each call costs $0.011475: the budget of 2 cents is reached after the second call, before its tool runs.
    let provider = Arc::new(anthropic([probing(), probing(), probing(), answer()]));
    let cfg = config("claude-sonnet-4-6", "  budget:\n    max_cost: 0.02\n");
    let outcome = agent(cfg, &provider).await.unwrap().run("x", RunOptions::new()).await;
    assert_eq!(outcome.reason, TerminalReason::Budget);
    assert_eq!(outcome.stats.llm_calls, 2);
    assert_eq!(outcome.stats.tool_calls, 1);
    let error = outcome.error.unwrap().to_string();
    assert!(
        error.contains("cost budget of $0.020000 (llm.budget.max_cost)") && error.contains("$0.022950 spent"),
        "{error}"
    );
}

#[tokio::test]
async fn cost_4_a_cost_budget_that_cannot_be_enforced_is_refused_where_it_is_written() {
    for (model, extra, needle) in [
        ("local-model", "  budget:\n    max_cost: 1\n", "price of model local-model is unknown"),
        ("local-model", "  budget:\n    max_cost: 1\n  pricing:\n    input: 1\n    output: 1\n", "no cache_read"),
    ] {
        let provider = Arc::new(ScriptedProvider::new([]));
        let err = agent(config(model, extra), &provider).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config);
        assert!(err.to_string().contains(needle) && err.to_string().contains("llm.budget.max_cost"), "{err}");
        assert_eq!(err.location().map(|l| l.line), Some(6), "{err}");
    }
}

#[test]
fn cost_6_bad_prices_are_refused_where_they_are_written() {
    for (yaml, line) in [
        ("llm:\n  pricing:\n    input: -1\n    output: 1\n", 3),
        ("llm:\n  pricing:\n    output: 1\n", 3),
        ("llm:\n  pricing:\n    input: 1\n    output: 1\n    cache: 2\n", 5),
        ("llm:\n  budget:\n    max_cost: -0.5\n", 3),
        ("llm:\n  budget:\n    max_cost: lots\n", 3),
    ] {
        let err = Config::from_yaml_str(yaml).unwrap_err();
        assert_eq!(err.location().map(|l| l.line), Some(line), "{yaml}: {err}");
    }
}
