//! Built-ins inside the agent: HITL tools with a prompter, memory on files with its index, order and notes
//! (HITL-1/11/12, MEM-1/15/16/17/19, SEL-12, LOOP-2, OVR-7).

mod common;

use common::*;
use fisk_ai::agent::{Agent, RunOptions};
use fisk_ai::llm::{Block, Response, ScriptedProvider, StopReason, Usage};
use fisk_ai::memory::InMemoryStore;
use fisk_ai::operator::{Answer, Prompter};
use fisk_ai::tool::ToolInput;
use fisk_ai::{Config, Warning, async_trait};
use serde_json::{Value, json};
use std::sync::Arc;

fn config(harness: &str) -> Config {
    Config::from_yaml_str(&format!(
        "identity: farm\napplication_path: {}\nsystem_prompt: Tell cow jokes.\nllm:\n  model: m\nharness:\n{harness}",
        root().join("examples/cowsay/cowsay").display()
    ))
    .unwrap()
}

fn calls(blocks: Vec<(&str, &str, Value)>) -> Response {
    Response::new(
        blocks
            .into_iter()
            .map(|(id, name, input)| Block::ToolUse {
                id: id.into(),
                name: name.into(),
                input: ToolInput::from_value(&input),
            })
            .collect(),
        StopReason::ToolUse,
        Usage::default(),
    )
}

fn done() -> Response {
    Response::new(vec![Block::text("done")], StopReason::EndTurn, Usage::default())
}

fn result_values(provider: &ScriptedProvider, request: usize) -> Vec<Value> {
    let reqs = provider.requests();
    reqs[request]
        .messages
        .last()
        .unwrap()
        .content
        .iter()
        .map(|b| match b {
            Block::ToolResult { content, .. } => {
                serde_json::from_str(content).unwrap_or(Value::String(content.clone()))
            }
            other => panic!("{other:?}"),
        })
        .collect()
}

struct Yes;

#[async_trait]
impl Prompter for Yes {
    fn can_ask(&self) -> bool {
        true
    }
    async fn confirm(&self, _: &str) -> Answer<bool> {
        Answer::Given(true)
    }
    async fn select(&self, _: &str, _: &[String]) -> Answer<usize> {
        Answer::Given(1)
    }
    async fn input(&self, _: &str, _: Option<&str>) -> Answer<String> {
        Answer::Given("typed".into())
    }
}

#[tokio::test]
async fn hitl_1_11_12_tools_follow_commands_with_their_note_and_decline_without_an_operator() {
    let provider = Arc::new(ScriptedProvider::new([
        calls(vec![("1", "ask_human_confirm", json!({"question": "Feed the cows?"}))]),
        done(),
    ]));
    let agent = Agent::builder()
        .config(config("  human_in_the_loop: {enabled: true}\n"))
        .provider_arc(provider.clone())
        .build()
        .await
        .unwrap();
    let names: Vec<&str> = agent.toolset().iter().map(|t| t.spec().name()).collect();
    assert_eq!(names[5..], ["ask_human_confirm", "ask_human_select", "ask_human_input"]);
    assert!(agent.warnings().contains(&Warning::HitlWithoutOperator));
    agent.run("x", RunOptions::default()).await;
    let system = &provider.requests()[0].system;
    assert_eq!(system.len(), 2);
    assert_eq!(system[0], "Tell cow jokes.");
    assert!(system[1].contains("ask_human_"), "{}", system[1]);
    let r = &result_values(&provider, 1)[0];
    assert_eq!(r["confirmed"], false);
    assert!(r["reason"].is_string());
}

#[tokio::test]
async fn hitl_6_answers_from_the_hosts_prompter_reach_the_model() {
    let provider = Arc::new(ScriptedProvider::new([
        calls(vec![
            ("1", "ask_human_confirm", json!({"question": "Feed?"})),
            ("2", "ask_human_select", json!({"question": "Which cow?", "options": ["bessie", "daisy"]})),
            ("3", "ask_human_input", json!({"question": "Name?"})),
        ]),
        done(),
    ]));
    let agent = Agent::builder()
        .config(config("  human_in_the_loop: {enabled: true}\n"))
        .provider_arc(provider.clone())
        .prompter(Yes)
        .build()
        .await
        .unwrap();
    assert!(!agent.warnings().contains(&Warning::HitlWithoutOperator));
    agent.run("x", RunOptions::default()).await;
    assert_eq!(
        result_values(&provider, 1),
        [json!({"confirmed": true}), json!({"selected": "daisy"}), json!({"value": "typed"})]
    );
}

#[tokio::test]
async fn mem_15_17_19_memory_on_files_persists_across_runs_and_is_indexed_at_run_start() {
    let dir = tempfile::tempdir().unwrap();
    let mem_dir = dir.path().join("mem");
    let harness = format!(
        "  memory:\n    enabled: true\n    options: {{directory: {}}}\n  tools: [{{name: base64_encode}}]\n",
        mem_dir.display()
    );
    let provider = Arc::new(ScriptedProvider::new([
        calls(vec![(
            "1",
            "memory_write",
            json!({"key": "herd.size", "description": "How many cows", "content": "3 cows"}),
        )]),
        done(),
        calls(vec![("2", "memory_read", json!({"key": "herd.size"}))]),
        done(),
    ]));
    let agent = Agent::builder().config(config(&harness)).provider_arc(provider.clone()).build().await.unwrap();
    let names: Vec<&str> = agent.toolset().iter().map(|t| t.spec().name()).collect();
    assert_eq!(names[5..], ["memory_list", "memory_read", "memory_write", "memory_delete", "base64_encode"]);
    assert!(!mem_dir.exists(), "building the agent touches no disk");

    agent.run("remember", RunOptions::default()).await;
    assert_eq!(result_values(&provider, 1)[0], json!({"written": true}));
    assert!(mem_dir.join("herd.size.md").is_file());
    let first = &provider.requests()[0].system;
    assert_eq!(first.len(), 3, "prompt, memory note, index");
    assert!(first[2].contains("(none stored yet)"), "{}", first[2]);

    agent.run("recall", RunOptions::default()).await;
    let second = &provider.requests()[2].system;
    assert!(second[2].contains("<memory-index>") && second[2].contains("- herd.size: How many cows"), "{}", second[2]);
    let read = &result_values(&provider, 3)[0];
    assert_eq!((read["found"].as_bool(), read["content"].as_str()), (Some(true), Some("3 cows")));
}

#[tokio::test]
async fn mem_15_no_index_leaves_the_index_out_and_ovr_7_injected_stores_are_used() {
    let store = InMemoryStore::new();
    let provider = Arc::new(ScriptedProvider::new([done()]));
    let agent = Agent::builder()
        .config(config("  memory: {enabled: true, no_index: true}\n"))
        .provider_arc(provider.clone())
        .memory_store(store)
        .build()
        .await
        .unwrap();
    agent.run("x", RunOptions::default()).await;
    let system = &provider.requests()[0].system;
    assert_eq!(system.len(), 2);
    assert!(!system.iter().any(|s| s.contains("<memory-index>")));
}

#[tokio::test]
async fn ovr_7_mem_18_an_injected_store_with_another_backend_and_an_unopenable_backend_fail_at_build() {
    let jet = "  memory: {enabled: true, backend: jetstream, options: {bucket: B}}\n";
    let err = Agent::builder()
        .config(config(jet))
        .provider(ScriptedProvider::new([]))
        .memory_store(InMemoryStore::new())
        .build()
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("a memory store was injected but harness.memory.backend names \"jetstream\""),
        "{err}"
    );
    assert_eq!(err.key(), Some("harness.memory.backend"));
    let mut cfg = config(jet);
    cfg.nats_context = Some("fisk-ai-test-no-such-context".into());
    let err = Agent::builder().config(cfg).provider(ScriptedProvider::new([])).build().await.unwrap_err();
    #[cfg(feature = "nats")]
    assert!(
        err.to_string().contains("harness.memory (jetstream)")
            && err.to_string().contains("fisk-ai-test-no-such-context"),
        "the backend opens at build and its failure names the key and the context: {err}"
    );
    #[cfg(not(feature = "nats"))]
    assert!(err.to_string().contains("needs the nats feature"), "{err}");
}

#[tokio::test]
async fn mem_25_read_before_update_is_per_run_not_per_agent() {
    let store = InMemoryStore::new().with_read_before_update(true);
    let write = |id: &str, overwrite: bool| {
        (
            id.to_owned(),
            json!({"key": "k", "description": "d", "content": format!("from {id}"), "overwrite": overwrite}),
        )
    };
    let provider = Arc::new(ScriptedProvider::new([
        // Run 1 creates the key (which grants this run overwrite authority) and overwrites it.
        calls(vec![("1", "memory_write", write("1", false).1), ("2", "memory_write", write("2", true).1)]),
        done(),
        // Run 2 never read the key: its blind overwrite must be refused.
        calls(vec![("3", "memory_write", write("3", true).1)]),
        done(),
    ]));
    let agent = Agent::builder()
        .config(config("  memory: {enabled: true, no_index: true}\n"))
        .provider_arc(provider.clone())
        .memory_store(store)
        .build()
        .await
        .unwrap();
    agent.run("one", RunOptions::default()).await;
    assert_eq!(result_values(&provider, 1), [json!({"written": true}), json!({"written": true})]);
    agent.run("two", RunOptions::default()).await;
    let refused = &result_values(&provider, 3)[0];
    assert_eq!(refused["written"], false, "{refused}");
    assert!(refused["reason"].as_str().unwrap().contains("read"), "{refused}");
}

#[tokio::test]
async fn hitl_11_12_notes_and_warnings_follow_the_selected_tools_not_the_configuration() {
    let provider = Arc::new(ScriptedProvider::new([done()]));
    let mut cfg = config("  human_in_the_loop: {enabled: true}\n  memory: {enabled: true}\n");
    cfg.exclude = Some(fisk_ai::config::Filter::new(["^ask_human_", "^memory_"], [] as [&str; 0]));
    let agent = Agent::builder()
        .config(cfg)
        .provider_arc(provider.clone())
        .memory_store(InMemoryStore::new())
        .build()
        .await
        .unwrap();
    assert!(!agent.warnings().contains(&Warning::HitlWithoutOperator));
    agent.run("x", RunOptions::default()).await;
    assert_eq!(provider.requests()[0].system, ["Tell cow jokes."]);
}
