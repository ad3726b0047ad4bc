//! The `tracing` spans of one scripted run (issue 16 part 3): the span tree, the OpenTelemetry GenAI fields and
//! their values, and no content in any field unless the host opts in (`AgentBuilder::trace_content`).

mod common;

use common::trace::{Trace, capture};
use common::turns::call_with;
use fisk_ai::Config;
use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
use fisk_ai::llm::{Block, Response, ScriptedProvider, StopReason, Usage};
use fisk_ai::telemetry::{self as t, CHAT_SPAN, CONTENT_TARGET, RUN_SPAN, TOOL_SPAN};
use fisk_ai::tool::{ToolKind, ToolSpec};
use serde_json::json;

use common::secrets::{ANSWER, ARGUMENT, Echo, OUTPUT, PROMPT, SECRETS, SYSTEM};

fn echo(name: &str, gated: bool) -> Echo {
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}, "additionalProperties": false});
    Echo(ToolSpec::new(name, ToolKind::Custom, schema).with_confirm(gated))
}

fn reply(blocks: Vec<Block>, stop: StopReason, input: u64, output: u64, id: &str) -> Response {
    let usage = Usage { input_tokens: input, output_tokens: output, cache_read_tokens: 5, ..Usage::default() };
    Response::new(blocks, stop, usage).with_origin(Some("test-model-2026-01-01".into()), Some(id.into()))
}

/// One run: a turn with three calls (one runs, one names no tool, one is gated with nobody to ask), then the answer.
async fn scripted_run(content: bool) -> Trace {
    let config =
        Config::from_yaml_str(&format!("identity: tracer\nsystem_prompt: {SYSTEM}\nllm:\n  model: test-model\n"))
            .unwrap();
    let args = format!(r#"{{"text": "{ARGUMENT}"}}"#);
    let provider = ScriptedProvider::new([
        reply(
            vec![
                Block::text("counting"),
                call_with("c1", "echo", &args),
                call_with("c2", "no_such_tool", &args),
                call_with("c3", "guarded", &args),
            ],
            StopReason::ToolUse,
            100,
            20,
            "msg_1",
        ),
        reply(vec![Block::text(ANSWER)], StopReason::EndTurn, 200, 10, "msg_2"),
    ]);
    let agent = Agent::builder()
        .config(config)
        .provider(provider)
        .tool(echo("echo", false))
        .tool(echo("guarded", true))
        .trace_content(content)
        .build()
        .await
        .unwrap();
    let (capture, guard) = capture();
    let outcome = agent.run(PROMPT, RunOptions::new()).await;
    drop(guard);
    assert_eq!(outcome.reason, TerminalReason::Completed, "{:?}", outcome.error);
    capture.trace()
}

fn ours(trace: &Trace) -> Vec<&common::trace::SpanRecord> {
    trace.spans.iter().filter(|s| s.target == t::TARGET).collect()
}

#[tokio::test]
async fn one_run_is_an_invoke_agent_span_over_its_chat_and_execute_tool_spans() {
    let trace = scripted_run(false).await;
    let runs = trace.named(RUN_SPAN);
    assert_eq!(runs.len(), 1, "{:#?}", trace.spans);
    let run = runs[0];
    assert_eq!(run.parent, None);
    for (field, value) in [
        (t::OTEL_NAME, "invoke_agent tracer"),
        (t::OPERATION_NAME, "invoke_agent"),
        (t::AGENT_NAME, "tracer"),
        (t::PROVIDER_NAME, "scripted"),
        (t::SYSTEM, "scripted"),
        (t::REQUEST_MODEL, "test-model"),
        (t::RUN_RESUMED, "false"),
        // Recorded at the end: totals (input counts the cached tokens too), the outcome, the counters.
        (t::USAGE_INPUT_TOKENS, "310"),
        (t::USAGE_OUTPUT_TOKENS, "30"),
        (t::RUN_OUTCOME, "completed"),
        (t::RUN_LLM_CALLS, "2"),
        (t::RUN_TOOL_CALLS, "3"),
    ] {
        assert_eq!(run.field(field), Some(value), "{field} in {run:#?}");
    }
    assert_eq!(run.field(t::CONVERSATION_ID), None, "not checkpointed");
    assert_eq!(run.field(t::OTEL_STATUS_CODE), None, "a completed run is not an error");

    // Every span of ours is the run or its direct child, in call order: chat, three tool calls, chat.
    let tree: Vec<(&str, Option<usize>)> = ours(&trace).iter().map(|s| (s.name, s.parent)).collect();
    let child = Some(run.index);
    assert_eq!(
        tree,
        [
            (RUN_SPAN, None),
            (CHAT_SPAN, child),
            (TOOL_SPAN, child),
            (TOOL_SPAN, child),
            (TOOL_SPAN, child),
            (CHAT_SPAN, child)
        ]
    );
}

#[tokio::test]
async fn chat_spans_carry_the_request_and_the_reply_fields() {
    let trace = scripted_run(false).await;
    let chats = trace.named(CHAT_SPAN);
    let expected = [("1", "105", "20", "tool_use", "msg_1"), ("2", "205", "10", "end_turn", "msg_2")];
    for (chat, (iteration, input, output, finish, id)) in chats.iter().zip(expected) {
        for (field, value) in [
            (t::OTEL_NAME, "chat test-model"),
            (t::OTEL_KIND, "client"),
            (t::OPERATION_NAME, "chat"),
            (t::PROVIDER_NAME, "scripted"),
            (t::REQUEST_MODEL, "test-model"),
            (t::ITERATION, iteration),
            (t::RESPONSE_MODEL, "test-model-2026-01-01"),
            (t::RESPONSE_ID, id),
            (t::USAGE_INPUT_TOKENS, input),
            (t::USAGE_OUTPUT_TOKENS, output),
            (t::USAGE_CACHE_READ_TOKENS, "5"),
            (t::RESPONSE_FINISH_REASONS, finish),
        ] {
            assert_eq!(chat.field(field), Some(value), "{field} in {chat:#?}");
        }
    }
    assert_eq!(chats.len(), 2);
}

#[tokio::test]
async fn execute_tool_spans_say_how_each_call_ended_with_an_event_for_refusals_and_denials() {
    let trace = scripted_run(false).await;
    let tools = trace.named(TOOL_SPAN);
    let expected = [("echo", "c1", "ran"), ("no_such_tool", "c2", "refused"), ("guarded", "c3", "declined")];
    assert_eq!(tools.len(), expected.len());
    for (span, (name, id, outcome)) in tools.iter().zip(expected) {
        assert_eq!(span.field(t::OTEL_NAME), Some(format!("execute_tool {name}").as_str()));
        assert_eq!(span.field(t::OPERATION_NAME), Some("execute_tool"));
        assert_eq!(span.field(t::TOOL_NAME), Some(name));
        assert_eq!(span.field(t::TOOL_CALL_ID), Some(id));
        assert_eq!(span.field(t::TOOL_TYPE), Some("function"));
        assert_eq!(span.field(t::TOOL_OUTCOME), Some(outcome), "{span:#?}");
    }
    let (ran, refused, declined) = (tools[0], tools[1], tools[2]);
    assert_eq!(ran.field(t::TOOL_KIND), Some("custom"));
    assert_eq!(ran.field(t::TOOL_GATED), Some("false"));
    assert_eq!(ran.field(t::OTEL_STATUS_CODE), None);
    assert_eq!(refused.field(t::ERROR_TYPE), Some("unknown_tool"));
    assert_eq!(refused.field(t::OTEL_STATUS_CODE), Some("error"));
    assert_eq!(declined.field(t::TOOL_GATED), Some("true"));

    let events = |span: &common::trace::SpanRecord, field: &str| -> Vec<String> {
        trace.events_in(span.index).iter().filter_map(|e| e.field(field).map(str::to_owned)).collect()
    };
    assert_eq!(events(refused, t::REFUSAL), ["unknown_tool"]);
    assert_eq!(events(declined, t::DECLINE_REASON), ["no_operator"]);
    // The unknown tool is also a run warning, inside the call's span.
    assert_eq!(events(refused, t::WARNING_KIND), ["unknown_tool"]);
}

#[tokio::test]
async fn by_default_no_field_carries_the_prompt_arguments_output_or_answer() {
    let trace = scripted_run(false).await;
    for (where_, value) in trace.values("") {
        for secret in SECRETS {
            assert!(!value.contains(secret), "{secret} in {where_} = {value}");
        }
    }
    assert!(trace.events.iter().all(|e| e.target != CONTENT_TARGET), "{:#?}", trace.events);
}

#[tokio::test]
async fn trace_content_adds_the_content_as_events_inside_the_spans() {
    let trace = scripted_run(true).await;
    let content: Vec<_> = trace.events.iter().filter(|e| e.target == CONTENT_TARGET).collect();
    let find = |field: &str| -> Vec<(&str, usize)> {
        content.iter().filter_map(|e| Some((e.field(field)?, e.span?))).collect()
    };
    let chats = trace.named(CHAT_SPAN);
    let tools = trace.named(TOOL_SPAN);

    let system = find(t::SYSTEM_INSTRUCTIONS);
    assert_eq!(system.len(), 1, "the system prompt on the first call only");
    assert!(system[0].0.contains(SYSTEM) && system[0].1 == chats[0].index);

    let inputs = find(t::INPUT_MESSAGES);
    assert_eq!(inputs.len(), 2);
    assert!(inputs[0].0.contains(PROMPT) && inputs[0].1 == chats[0].index, "{inputs:?}");
    // The second call adds only the tool results, not the prompt again.
    assert!(inputs[1].0.contains(OUTPUT) && !inputs[1].0.contains(PROMPT) && inputs[1].1 == chats[1].index);

    let outputs = find(t::OUTPUT_MESSAGES);
    assert!(outputs[1].0.contains("ANSWER-SECRET") && outputs[1].1 == chats[1].index, "{outputs:?}");

    let arguments = find(t::TOOL_CALL_ARGUMENTS);
    assert_eq!(arguments.len(), 3, "refused and declined calls too");
    assert!(arguments.iter().zip(&tools).all(|((text, span), tool)| text.contains(ARGUMENT) && *span == tool.index));

    let results = find(t::TOOL_CALL_RESULT);
    assert_eq!(results.len(), 1, "only the call that ran has a result");
    assert!(results[0].0.contains(OUTPUT) && results[0].1 == tools[0].index);
    assert_eq!(find(t::TOOL_DISPLAY).len(), 1);

    // The spans themselves still carry no content.
    for span in &trace.spans {
        for (field, value) in &span.fields {
            assert!(!SECRETS.iter().any(|s| value.contains(s)), "{field} = {value}");
        }
    }
}
