//! The OpenAI Chat Completions provider over loopback HTTP (PROV-2..5, PROV-7, PROV-8, PROV-16, PROV-17, LOOP,
//! BUDGET-4): every scenario of `common/openai_scenarios.rs` as its own test, plus the checks that need no server.
#![cfg(feature = "openai")]

#[path = "common/openai.rs"]
mod fake_openai;
#[path = "common/openai_scenarios.rs"]
mod scenarios;

use fake_openai::{FakeOpenAi, streamed, text};
use fisk_ai::llm::Role;
use fisk_ai::llm::openai::{OpenAiFactory, OpenAiProvider};
use fisk_ai::llm::{Block, Message, ModelProvider, ProviderFactory, ProviderRegistry, ProviderSettings, Request};
use fisk_ai::tool::ToolInput;
use scenarios::{ask, plan, provider};

macro_rules! scenario_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $name() {
                scenarios::$name().await
            }
        )*
    };
}

scenario_tests!(
    prov_2_8_a_text_answer_streamed_and_not_with_usage,
    parallel_tool_calls_map_to_tool_use_blocks_in_order,
    prov_2_every_finish_reason_maps_to_a_neutral_stop_reason,
    a_refusal_message_is_text_and_a_refusal_stop,
    reasoning_models_take_max_completion_tokens,
    quirk_reasoning_fields_become_thinking_and_are_not_echoed,
    quirk_a_plain_json_answer_to_a_streaming_request_is_read_whole,
    quirk_usage_absent_from_the_stream_is_estimated,
    quirk_content_as_an_array_of_parts_is_joined,
    quirk_missing_or_empty_call_ids_get_stable_generated_ids,
    quirk_an_error_body_with_status_200_is_an_error,
    quirk_a_stream_without_done_is_whole_only_after_a_finish_reason,
    no_server_input_panics_the_provider,
    retries_on_429_500_503_honour_retry_after,
    retries_give_up_after_the_limit_and_never_retry_client_errors,
    prov_5_the_call_timeout_bounds_every_attempt,
    loop_parallel_calls_round_trip_through_the_agent,
    quirk_bad_arguments_reach_the_model_as_error_results,
    quirk_generated_ids_pair_results_with_calls_in_the_loop,
    budget_4_a_call_past_its_timeout_ends_the_run,
    conv_5_streamed_deltas_concatenate_to_the_final_text_and_reasoning,
    out_5_7_a_structured_answer_asks_through_response_format,
);

#[test]
fn every_scenario_runs_here_too() {
    // The contract test runs `scenarios::all()`; this binary must not skip one of them.
    let src = include_str!("openai_provider.rs");
    for (name, _) in scenarios::all() {
        assert!(src.contains(&format!("    {name},\n")), "{name} has no test in openai_provider.rs");
    }
}

/// A 50-turn conversation of tool calls and results, the bench's shape in small.
fn conversation(turns: usize) -> Vec<Message> {
    let mut messages = vec![Message::user("Count everything.")];
    for t in 0..turns {
        let id = format!("call_{t}");
        let input = ToolInput::from_json(format!(r#"{{"n": {t}}}"#)).unwrap();
        messages.push(Message::assistant(vec![
            Block::Thinking { text: "next".into(), signature: String::new() },
            Block::text(format!("Turn {t}.")),
            Block::ToolUse { id: id.clone(), name: "count".into(), input },
        ]));
        messages.push(Message { role: Role::User, content: vec![Block::tool_result(id, format!("{t}"), t % 7 == 3)] });
    }
    messages
}

/// The body up to the end of the system message: model, cap, tools, stream options, system.
fn prefix(body: &[u8]) -> &[u8] {
    let text = std::str::from_utf8(body).unwrap();
    let start = text.find(r#""messages":[{"role":"system""#).expect("the system message opens messages");
    let end = start + text[start..].find(r#"},{"role":"#).expect("a message follows the system message");
    &body[..end + 1]
}

#[test]
fn the_tools_and_system_prefix_is_byte_identical_on_every_turn() {
    let names: Vec<String> = (0..300).map(|i| format!("tool_{i:03}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let plan = plan(&names);
    let messages = conversation(50);
    let system: Vec<String> = scenarios::SYSTEM.iter().map(|s| (*s).to_owned()).collect();
    for streaming in [false, true] {
        let p = OpenAiProvider::new("k").with_streaming(streaming);
        let bodies: Vec<Vec<u8>> =
            (0..50).map(|t| p.request_body(&Request::new("gpt-4.1", &system, &messages[..2 * t + 1], &plan))).collect();
        let first = prefix(&bodies[0]);
        assert!(first.windows(13).any(|w| w == b"\"tool_299\",\"d"), "all 300 tools are in the prefix");
        for (t, body) in bodies.iter().enumerate() {
            assert_eq!(prefix(body), first, "turn {t}");
            let json: serde_json::Value = serde_json::from_slice(body).unwrap();
            assert_eq!(json["tools"].as_array().unwrap().len(), 300);
        }
        // Deterministic: the same request renders the same bytes, from this provider and a fresh one.
        let again = OpenAiProvider::new("k").with_streaming(streaming);
        let last = Request::new("gpt-4.1", &system, &messages, &plan);
        assert_eq!(p.request_body(&last), again.request_body(&last));
    }
}

#[test]
fn history_renders_tool_results_as_tool_messages_and_drops_thinking() {
    let p = OpenAiProvider::new("k").with_streaming(false);
    let messages = conversation(4);
    let plan = plan(&["count"]);
    let body = p.request_body(&Request::new("gpt-4.1", &[], &messages, &plan));
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let sent = json["messages"].as_array().unwrap();
    assert_eq!(sent[0], serde_json::json!({"role": "user", "content": "Count everything."}));
    assert_eq!(sent.len(), 9, "no system message without segments");
    assert_eq!(sent[1]["content"], "Turn 0.");
    assert_eq!(sent[1]["tool_calls"][0]["function"]["arguments"], r#"{"n": 0}"#);
    assert_eq!(sent[2], serde_json::json!({"role": "tool", "tool_call_id": "call_0", "content": "0"}));
    assert_eq!(sent[8]["content"], "[tool error] 3");
    assert!(!String::from_utf8_lossy(&body).contains("next"), "thinking is not echoed");
}

#[test]
fn prov_16_the_factory_declares_openai_api_key_and_no_tool_search() {
    let registry = ProviderRegistry::with_defaults();
    let factory = registry.get("openai").expect("openai is registered by default");
    assert_eq!(factory.credentials(), ["OPENAI_API_KEY"]);
    assert!(registry.credentials().iter().any(|c| c == "OPENAI_API_KEY"));
    let caps = factory.capabilities();
    assert_eq!((caps.provider.as_str(), caps.tool_search), ("openai", false));
    assert_eq!(OpenAiProvider::new("k").capabilities(), &caps);
    assert!(fisk_ai::exec::PROVIDER_CREDENTIALS.contains(&"OPENAI_API_KEY"));
}

fn config(extra: &str) -> fisk_ai::Config {
    fisk_ai::Config::from_yaml_str(&format!("llm:\n  model: gpt-4.1\n  provider: openai\n{extra}")).unwrap()
}

#[test]
fn prov_7_the_factory_checks_the_base_url_and_needs_a_key_only_off_loopback() {
    let cfg = config("");
    let err = OpenAiFactory.build(&ProviderSettings::new(&cfg).with_base_url("http://10.0.0.1/v1")).err().unwrap();
    assert!(err.to_string().contains("--base-url / OPENAI_BASE_URL"), "{err}");
    assert!(OpenAiFactory.check(&ProviderSettings::new(&cfg).with_base_url("ftp://x")).is_err());
    // llm.base_url: loopback needs no key; the flag wins over it.
    let local = config("  base_url: http://127.0.0.1:9/v1\n");
    assert!(OpenAiFactory.build(&ProviderSettings::new(&local)).is_ok());
    let err = OpenAiFactory
        .build(&ProviderSettings::new(&local).with_base_url("https://api.example.com/v1"))
        .err()
        .map(|e| e.to_string());
    if std::env::var_os("OPENAI_API_KEY").is_none() {
        assert!(err.unwrap().contains("OPENAI_API_KEY"));
        assert!(OpenAiFactory.build(&ProviderSettings::new(&cfg)).err().unwrap().to_string().contains("--api-key"));
    }
    assert!(OpenAiFactory.build(&ProviderSettings::new(&cfg).with_api_key("k")).is_ok());
}

#[tokio::test]
async fn a_keyless_provider_refuses_a_remote_host_before_sending() {
    let p = OpenAiProvider::new("");
    let (system, msgs, plan) = (Vec::new(), vec![Message::user("x")], plan(&[]));
    let err = p.call(&Request::new("gpt-4.1", &system, &msgs, &plan)).await.unwrap_err();
    assert!(err.to_string().contains("API key is required"), "{err}");
}

#[tokio::test]
async fn prov_17_http_debug_logs_the_traffic_without_the_key() {
    let server = FakeOpenAi::with_replies([streamed("Two.", &[], "stop"), text("ok", "stop").reply()]).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("http-debug.log");
    for streaming in [true, false] {
        let p = provider(&server, streaming).with_http_debug(&path).unwrap();
        ask(&p, &plan(&["count"]), &[Message::user("x")]).await.unwrap();
        let log = std::fs::read_to_string(&path).unwrap();
        assert!(log.contains("==> POST http://127.0.0.1:") && log.contains("/v1/chat/completions"), "{log}");
        assert!(log.contains("<== HTTP 200") && !log.contains("sk-test"), "{log}");
        if streaming {
            assert!(log.contains("(streamed; the message it accumulated to)") && log.contains("\"Two.\""), "{log}");
        }
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }
}

#[test]
fn decode_response_is_public_and_maps_a_completion() {
    let body = serde_json::to_vec(&fake_openai::calls(&[("c1", "count", r#"{"n":1}"#)]).0).unwrap();
    let r = OpenAiProvider::decode_response(&body, 1).unwrap();
    assert_eq!(r.stop_reason, fisk_ai::llm::StopReason::ToolUse);
    assert_eq!(Message::assistant(r.content).tool_uses().count(), 1);
    assert_eq!(r.usage.cache_read_tokens, 40);
    // What the `chat` span records as gen_ai.response.model and gen_ai.response.id.
    assert_eq!((r.model.as_deref(), r.id.as_deref()), (Some("gpt-4.1-2025-04-14"), Some("chatcmpl-fake")));
}
