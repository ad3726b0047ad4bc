//! MCP serving (SPEC section 15): rmcp's own client over loopback HTTP against the real server, on both
//! lifecycles (legacy `initialize` and 2026-07-28 `server/discover`), calling the real fake application.
#![cfg(feature = "mcp")]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use fisk_ai::serve::mcp::McpServer;
use fisk_ai::{Config, ErrorKind};
use mcp_support::*;
use rmcp::model::Tool as McpTool;
use serde_json::{Value, json};

fn find<'a>(tools: &'a [McpTool], name: &str) -> &'a McpTool {
    tools.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("{name} is listed"))
}

fn hints(t: &McpTool) -> (Option<String>, Option<bool>, Option<bool>, Option<bool>) {
    let a = t.annotations.as_ref().expect("annotations");
    (a.title.clone(), a.read_only_hint, a.destructive_hint, a.idempotent_hint)
}

fn fixture_schema(name: &str) -> Value {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(common::fixture("mcp-app.json")).unwrap()).unwrap();
    doc["commands"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap()["restricted_schema"].clone()
}

#[tokio::test]
async fn mcp_5_6_7_14_15_listing_identity_instructions_and_annotations_on_both_lifecycles() {
    let served = serve(&["instructions: Cow tools. purge is destructive."]).await;
    for era in ERAS {
        let client = connect(&served.url, TestClient::new(true, Answer::Decline), era).await;
        let info = client.peer_info().expect("server info");
        let server = info.server_info.as_ref().expect("implementation");
        assert_eq!(server.name, "testsrv", "{era:?}: MCP-5 name is the identity");
        assert_eq!(server.version, env!("CARGO_PKG_VERSION"), "{era:?}: MCP-5 build version");
        assert_eq!(info.instructions.as_deref(), Some("Cow tools. purge is destructive."), "{era:?}: MCP-6");

        let tools = client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        // MCP-7: commands in walk order then harness.tools built-ins; ai:deny and unaddressable names never.
        assert_eq!(
            names,
            ["echo", "purge", "farm_feed", "slow", "hang", "fail", "odd", "base64_encode", "read_file"],
            "{era:?}"
        );

        // MCP-14: title is the space-separated path; hints from behavior tags; omitted when untagged.
        assert_eq!(hints(find(&tools, "echo")), (Some("echo".into()), Some(true), None, Some(true)));
        assert_eq!(hints(find(&tools, "purge")), (Some("purge".into()), None, Some(true), None));
        assert_eq!(hints(find(&tools, "farm_feed")), (Some("farm feed".into()), None, Some(false), None));
        assert_eq!(hints(find(&tools, "fail")), (Some("fail".into()), None, None, None));
        // TAG-7 conflict: readOnlyHint wins, destructiveHint omitted.
        assert_eq!(hints(find(&tools, "odd")), (Some("odd".into()), Some(true), None, None));
        // Built-ins: title is the name, both read-only.
        assert_eq!(hints(find(&tools, "base64_encode")), (Some("base64_encode".into()), Some(true), None, None));
        assert_eq!(hints(find(&tools, "read_file")), (Some("read_file".into()), Some(true), None, None));
        assert_eq!(find(&tools, "farm_feed").title.as_deref(), Some("farm feed"));

        // MCP-15: the model description with the Tags line; schemas verbatim.
        let purge = find(&tools, "purge");
        assert_eq!(
            purge.description.as_deref(),
            Some("Delete a target\n\nDeletes the target for good.\n\nTags: ai:confirm, ai:destructive")
        );
        assert_eq!(Value::Object((*purge.input_schema).clone()), fixture_schema("purge"));
        assert_eq!(Value::Object((*find(&tools, "echo").input_schema).clone()), fixture_schema("echo"));
        assert_eq!(find(&tools, "fail").description.as_deref(), Some("Print something and exit 7"));

        // Confirmation is never an annotation.
        let listing = serde_json::to_string(&tools).unwrap();
        assert!(!listing.to_lowercase().contains("confirmhint"), "{listing}");
        client.cancel().await.unwrap();
    }
    served.stop().await.unwrap();
}

#[tokio::test]
async fn mcp_6_no_instructions_are_sent_when_empty() {
    let served = serve(&["instructions: \"\""]).await;
    for era in ERAS {
        let client = connect(&served.url, TestClient::new(true, Answer::Decline), era).await;
        assert_eq!(client.peer_info().unwrap().instructions, None, "{era:?}");
        client.cancel().await.unwrap();
    }
    served.stop().await.unwrap();
}

#[tokio::test]
async fn mcp_18_calls_run_the_real_command_and_return_exec_13_json_on_both_lifecycles() {
    let served = serve(&[]).await;
    for era in ERAS {
        let client = connect(&served.url, TestClient::new(false, Answer::Decline), era).await;
        let out = exec_json(&call(&client, "echo", json!({"loud": true, "words": ["a", "-b c"]})).await);
        assert_eq!(out, json!({"command": "echo --loud -- a -b c", "exit_code": 0, "output": "echo --loud: a -b c\n"}));

        // A non-zero exit is a normal result, not an error.
        let out = exec_json(&call(&client, "fail", json!({})).await);
        assert_eq!(out, json!({"command": "fail", "exit_code": 7, "output": "partial\n"}));

        // Arguments absent altogether are `{}`.
        let out = exec_json(&call(&client, "fail", Value::Null).await);
        assert_eq!(out["exit_code"], 7);

        // An ungated built-in runs in-process.
        let out = call(&client, "base64_encode", json!({"text": "hi"})).await;
        assert!(!is_error(&out));
        assert_eq!(text(&out), r#"{"encoded":"aGk="}"#);
        client.cancel().await.unwrap();
    }
    let events = served.events();
    // GATE-8: the log tells the one argument `-b c` from two; the EXEC-13 command above stays the plain join.
    assert!(events.iter().any(|e| e == "call echo echo --loud -- a '-b c'"), "MCP-19 per-call log: {events:?}");
    served.stop().await.unwrap();
}

#[tokio::test]
async fn mcp_18_bad_arguments_are_error_results_and_nothing_is_asked_or_run() {
    let served = serve(&[]).await;
    for era in ERAS {
        let user = TestClient::new(true, Answer::Approve);
        let client = connect(&served.url, user.clone(), era).await;
        let cases = [
            ("purge", json!({}), r#"tool "purge" was called without required parameter(s): target. required: target"#),
            ("purge", json!({"target": 5}), "target"),
            ("purge", json!({"target": "x", "force": true}), "unknown property \"force\""),
            ("farm_feed", json!({"food": "oats"}), "food"),
            ("echo", json!({"words": "not-an-array"}), "words"),
            ("no_such_tool", json!({}), "unknown tool \"no_such_tool\""),
            ("wipe", json!({}), "unknown tool \"wipe\""),
        ];
        for (name, args, needle) in cases {
            let out = call(&client, name, args.clone()).await;
            assert!(is_error(&out), "{era:?} {name} {args}: {out:?}");
            assert!(text(&out).contains(needle), "{era:?} {name} {args}: {}", text(&out));
        }
        assert!(user.asked().is_empty(), "{era:?}: nothing was asked");
        client.cancel().await.unwrap();
    }
    assert!(served.ran().is_empty(), "nothing ran: {:?}", served.ran());
    served.stop().await.unwrap();
}

#[tokio::test]
async fn mcp_1_serving_needs_the_expose_block() {
    let dir = tempfile::tempdir().unwrap();
    let app = common::fake_app(dir.path(), "mcp-app");
    let config = Config::from_yaml_str(&format!("application_path: {}\n", app.display())).unwrap();
    let err = McpServer::builder().config(config).build().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(err.to_string().contains("expose.agent.mcp"), "{err}");
}

#[tokio::test]
async fn mcp_1_lenient_validation_needs_no_system_prompt_or_llm() {
    let dir = tempfile::tempdir().unwrap();
    // config_yaml carries neither system_prompt nor llm.
    let server = McpServer::builder().config(config(dir.path(), &[])).build().await.unwrap();
    assert_eq!(server.identity(), "testsrv");
    assert_eq!(server.tools().len(), 9);
}

#[tokio::test]
async fn mcp_7_zero_servable_tools_is_a_startup_error() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = config_yaml(dir.path(), &[], "").replace("expose:", "include:\n  tools: [\"^nothing$\"]\nexpose:");
    let err = McpServer::builder().config(Config::from_yaml_str(&yaml).unwrap()).build().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Selection, "{err}");

    // Only built-ins that are never served: HITL and memory.
    let yaml = "identity: x\nharness:\n  human_in_the_loop: {enabled: true}\nexpose: {agent: {mcp: {}}}\n";
    let err = McpServer::builder().config(Config::from_yaml_str(yaml).unwrap()).build().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Selection);
    assert!(err.to_string().contains("no application is wrapped"), "{err}");
}

#[tokio::test]
async fn mcp_7_21_hitl_memory_and_expose_tools_narrowing() {
    let dir = tempfile::tempdir().unwrap();
    let extra = format!(
        "  human_in_the_loop: {{enabled: true}}\n  memory:\n    enabled: true\n    options: {{directory: {}}}\n",
        dir.path().join("mem").display()
    );
    let yaml = config_yaml(dir.path(), &[], "")
        .replace("harness:\n", &format!("harness:\n{extra}"))
        .replace("  agent:\n", "  agent:\n    tools:\n      exclude: {tools: [\"^slow$\", \"^base64\"]}\n");
    let server = McpServer::builder().config(Config::from_yaml_str(&yaml).unwrap()).build().await.unwrap();
    let names: Vec<&str> = server.tools().iter().map(|t| t.spec().name()).collect();
    assert_eq!(names, ["echo", "purge", "farm_feed", "hang", "fail", "odd", "read_file"]);
    let kinds: Vec<&str> = server.warnings().iter().map(|w| w.kind()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "no_effect_over_mcp").count(), 2, "MCP-21: {kinds:?}");
    // The unaddressable command name is reported (MCP-7), as is the TAG-7 conflict.
    assert!(kinds.contains(&"invalid_tool_name"), "{kinds:?}");
    assert!(kinds.contains(&"conflicting_behavior_tags"), "{kinds:?}");
}

#[tokio::test]
async fn mcp_7_custom_tools_from_an_agent_toolset_are_never_served() {
    use fisk_ai::Selection;
    use fisk_ai::tool::{CallContext, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};

    struct Custom(ToolSpec);
    #[fisk_ai::async_trait]
    impl Tool for Custom {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        async fn call(&self, _: &ToolInput, _: &CallContext) -> ToolOutput {
            ToolOutput::success("custom ran")
        }
    }
    let custom = Custom(ToolSpec::new("host_tool", ToolKind::Custom, json!({"type": "object"})));
    let toolset = Selection::new().apply(vec![std::sync::Arc::new(custom)]).unwrap();
    let config = Config::from_yaml_str("identity: x\nexpose: {agent: {mcp: {}}}\n").unwrap();
    let err = McpServer::builder().config(config).toolset(toolset).build().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Selection, "{err}");
}

#[tokio::test]
async fn mcp_2_3_listen_address_and_port_resolution() {
    let dir = tempfile::tempdir().unwrap();
    let server = McpServer::builder().config(config(dir.path(), &[])).build().await.unwrap();
    assert_eq!((server.address(), server.port()), ("127.0.0.1", 8080), "defaults");

    let configured = || config(dir.path(), &["port: 9999", "address: 127.0.0.2"]);
    let server = McpServer::builder().config(configured()).build().await.unwrap();
    assert_eq!((server.address(), server.port()), ("127.0.0.2", 9999), "configuration");

    let server = McpServer::builder().config(configured()).port(0).address("").build().await.unwrap();
    assert_eq!((server.address(), server.port()), ("127.0.0.2", 9999), "0 and empty mean unset");

    let server = McpServer::builder().config(configured()).port(1234).address("0.0.0.0").build().await.unwrap();
    assert_eq!((server.address(), server.port()), ("0.0.0.0", 1234), "overrides win");
}

#[tokio::test]
async fn mcp_7_an_agents_hitl_and_memory_tools_are_never_served_from_its_toolset() {
    use fisk_ai::agent::Agent;
    use fisk_ai::llm::ScriptedProvider;
    let dir = tempfile::tempdir().unwrap();
    let extra = format!(
        "  human_in_the_loop: {{enabled: true}}\n  memory:\n    enabled: true\n    options: {{directory: {}}}\n",
        dir.path().join("mem").display()
    );
    let yaml = config_yaml(dir.path(), &[], "system_prompt: s\nllm:\n  model: m\n")
        .replace("harness:\n", &format!("harness:\n{extra}"));
    let config = Config::from_yaml_str(&yaml).unwrap();
    let agent = Agent::builder().config(config.clone()).provider(ScriptedProvider::new([])).build().await.unwrap();
    let agent_names: Vec<&str> = agent.toolset().iter().map(|t| t.spec().name()).collect();
    assert!(agent_names.iter().any(|n| n.starts_with("ask_human_")), "{agent_names:?}");
    assert!(agent_names.iter().any(|n| n.starts_with("memory_")), "{agent_names:?}");
    let server = McpServer::builder().config(config).toolset(agent.toolset().clone()).build().await.unwrap();
    let served: Vec<&str> = server.tools().iter().map(|t| t.spec().name()).collect();
    assert!(!served.iter().any(|n| n.starts_with("ask_human_") || n.starts_with("memory_")), "{served:?}");
    assert!(served.contains(&"echo") && served.contains(&"read_file"), "{served:?}");
}
