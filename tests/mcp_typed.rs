//! Typed results (TYPED-1, TYPED-2): every served tool's `outputSchema` is a valid JSON Schema 2020-12, and 100
//! results across the demo's tools (and the servable built-ins) carry `structuredContent` that validates against
//! it and equals the JSON text beside it. Real processes through rmcp's client over loopback HTTP.
#![cfg(feature = "mcp")]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use fisk_ai::Config;
use mcp_support::*;
use rmcp::model::Tool;
use serde_json::{Map, Value, json};

/// A valid input from a tool's schema: its required properties, varied by `i`.
fn input_for(tool: &Tool, i: usize) -> Value {
    let schema = Value::Object((*tool.input_schema).clone());
    let mut args = Map::new();
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    for name in required.iter().filter_map(Value::as_str) {
        let prop = &schema["properties"][name];
        let value = if let Some(first) = prop["enum"].as_array().and_then(|e| e.get(i % e.len())) {
            first.clone()
        } else {
            match prop["type"].as_str() {
                Some("integer") | Some("number") => json!(i % 7 + 1),
                Some("boolean") => json!(i.is_multiple_of(2)),
                Some("array") => json!([format!("moo{i}")]),
                _ => json!(format!("moo {i}")),
            }
        };
        args.insert(name.to_owned(), value);
    }
    Value::Object(args)
}

fn check(tool: &Tool, result: &rmcp::model::CallToolResult) {
    assert!(!is_error(result), "{}: {result:?}", tool.name);
    let schema = Value::Object((*tool.output_schema.clone().expect("an output schema")).clone());
    let structured =
        result.structured_content.as_ref().unwrap_or_else(|| panic!("{}: no structuredContent", tool.name));
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    if let Err(e) = validator.validate(structured) {
        panic!("{}: {structured} does not fit its output schema: {e}", tool.name);
    }
    let text: Value = serde_json::from_str(&text(result)).unwrap();
    assert_eq!(&text, structured, "{}: the text content is the same JSON", tool.name);
}

#[tokio::test]
async fn typed_1_2_output_schemas_are_valid_and_100_results_validate_against_them() {
    let dir = tempfile::tempdir().unwrap();
    let demo = Config::load(common::root().join("examples/cowsay/agent.yaml")).unwrap();
    let served = serve_config(dir, demo, |b| b.working_dir(common::root())).await;
    let client = connect(&served.url, TestClient::new(true, Answer::Approve), Era::Legacy).await;
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.len() >= 5, "{tools:?}");
    for tool in &tools {
        let schema = Value::Object((*tool.output_schema.clone().unwrap_or_else(|| panic!("{}", tool.name))).clone());
        jsonschema::draft202012::meta::validate(&schema).unwrap_or_else(|e| panic!("{}: {e}", tool.name));
    }
    for i in 0..100 {
        let tool = &tools[i % tools.len()];
        let result = call(&client, &tool.name, input_for(tool, i)).await;
        check(tool, &result);
    }
    client.cancel().await.unwrap();
    served.stop().await.unwrap();
}

#[tokio::test]
async fn typed_2_builtins_declare_their_schemas_and_errors_stay_untyped() {
    let served = serve(&["confirm_over_mcp: never"]).await;
    let client = connect(&served.url, TestClient::new(false, Answer::Decline), Era::Modern).await;
    let tools = client.list_all_tools().await.unwrap();
    let find = |n: &str| tools.iter().find(|t| t.name == n).unwrap_or_else(|| panic!("{n}")).clone();
    std::fs::write(served.path("note.txt"), "moo").unwrap();
    for (tool, args) in [
        (find("base64_encode"), json!({"text": "moo"})),
        (find("read_file"), json!({"path": "note.txt"})),
        (find("echo"), json!({"words": ["a"]})),
    ] {
        let schema = Value::Object((*tool.output_schema.clone().unwrap()).clone());
        jsonschema::draft202012::meta::validate(&schema).unwrap();
        check(&tool, &call(&client, &tool.name, args).await);
    }
    // An error result carries text only.
    let failed = call(&client, "read_file", json!({"path": "missing.txt"})).await;
    assert!(is_error(&failed) && failed.structured_content.is_none(), "{failed:?}");
    client.cancel().await.unwrap();
    served.stop().await.unwrap();
}
