//! The OpenAI provider's structured-answer scenario (OUT-5, OUT-7), part of `openai_scenarios.rs` (and so of the
//! contract test): its request bodies, with `response_format`, are checked against OpenAI's description too.

use super::{Counter, config, plan, provider};
use crate::fake_openai::{FakeOpenAi, calls, streamed, text};
use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
use fisk_ai::llm::{Block, FINAL_ANSWER_TOOL, Message, ModelProvider, OutputSchema, Request};
use serde_json::json;

/// OUT-5, OUT-7: `response_format` asks for the schema on every request, streamed and read whole, and beside
/// tools; the loop's repair turn is an ordinary user message.
pub async fn out_5_7_a_structured_answer_asks_through_response_format() {
    let schema = OutputSchema::new(json!({"type": "object", "properties": {"count": {"type": "integer"}},
        "required": ["count"], "additionalProperties": false}))
    .unwrap();
    for streaming in [false, true] {
        let answer = r#"{"count": 2}"#;
        let reply = if streaming { streamed(answer, &[], "stop") } else { text(answer, "stop").reply() };
        let server = FakeOpenAi::with_replies([reply]).await;
        let system = vec!["You count things.".to_owned()];
        let (messages, plan) = ([Message::user("Count to two.")], plan(&["count"]));
        let req = Request::new("gpt-4.1", &system, &messages, &plan).with_output(Some(&schema));
        let r = provider(&server, streaming).call(&req).await.unwrap();
        assert_eq!(r.content, vec![Block::text(answer)]);
        let body = server.requests()[0].body_json().clone();
        assert_eq!(body["response_format"]["json_schema"]["name"], FINAL_ANSWER_TOOL);
        assert_eq!(&body["response_format"]["json_schema"]["schema"], schema.schema());
    }
    let server = FakeOpenAi::with_replies([
        calls(&[("call_1", "count", r#"{"n": 2}"#)]).reply(),
        text("two", "stop").reply(),
        streamed(r#"{"count": 2}"#, &[], "stop"),
    ])
    .await;
    let agent = Agent::builder().config(config(&server.url(), "")).tool(Counter::new("count")).build().await.unwrap();
    let outcome = agent.run("Count to two.", RunOptions::new().with_output_schema(schema)).await;
    assert_eq!(outcome.reason, TerminalReason::Completed, "{:?}", outcome.error);
    assert_eq!(outcome.output, Some(json!({"count": 2})));
    assert_eq!(server.request_count(), 3);
}
