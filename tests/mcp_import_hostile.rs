//! MCP import against hostile servers (issue 24): the fixture server's hostile modes, as a real child over stdio
//! and as a real HTTP server process. A bad schema skips one tool (MCPI-6); a reply that cannot be parsed fails at
//! once, naming the server and why (MCPI-14); what the model reads of an import is clean (MCPI-15). The listing's
//! memory bound (MCPI-13) is measured alone in tests/mcp_import_listing_bound.rs.
#![cfg(feature = "mcp")]

mod common;
#[path = "../examples/mcp_fixture_server/hostile.rs"]
#[allow(dead_code)]
mod hostile;

use common::mcp::{HttpFixture, skipped, stdio};
use fisk_ai::source::mcp::McpImport;
use fisk_ai::tool::{CallContext, Tool, ToolInput};
use std::sync::Arc;
use std::time::Duration;

/// Longer than any of these tests takes: a hang (the old behaviour, waiting out the timeout) fails on the message.
const PATIENT: Duration = Duration::from_secs(120);

/// The fixture's ordinary tools, which every hostile mode keeps.
const ORDINARY: usize = 15;

fn find(tools: &[Arc<dyn Tool>], name: &str) -> Arc<dyn Tool> {
    tools.iter().find(|t| t.spec().name() == name).cloned().unwrap_or_else(|| panic!("no tool {name}"))
}

async fn call(tool: &Arc<dyn Tool>, input: &str) -> fisk_ai::tool::ToolOutput {
    tool.call(&ToolInput::from_json(input).unwrap(), &CallContext::new()).await
}

/// Both transports, each import named `name`.
fn both(name: &str, args: &[&str]) -> (McpImport, HttpFixture, McpImport) {
    let server = HttpFixture::start(args);
    let http = server.import(name).with_timeout(PATIENT);
    (stdio(name, args).with_timeout(PATIENT), server, http)
}

/// MCPI-6: each unusable input schema (`"string"`, `5`, `[1,2]`, `{"type":"string"}`, nested 10,000 levels) skips
/// that one tool with a warning naming the server, the tool and what is wrong; every other tool is kept.
#[tokio::test]
async fn mcpi_6_bad_schema_skips_one_tool() {
    let (stdio, _server, http) = both("bad", &["--bad-schemas"]);
    for import in [stdio, http] {
        let loaded = import.load().await.unwrap();
        assert_eq!(loaded.tools.len(), ORDINARY, "{:?}", loaded.warnings);
        let mut got = skipped(&loaded);
        got.sort();
        let want = [
            ("schema_array", "its inputSchema is an array, not an object schema"),
            ("schema_deep", "its definition nests deeper than 128 levels"),
            ("schema_number", "its inputSchema is 5, not an object schema"),
            ("schema_string", "its inputSchema is \"string\", not an object schema"),
            ("schema_typed_string", "its inputSchema has type \"string\", not \"object\""),
        ];
        let want: Vec<(String, String, String)> =
            want.iter().map(|(t, r)| ("bad".to_owned(), (*t).to_owned(), (*r).to_owned())).collect();
        assert_eq!(got, want);
        // The warning as an operator reads it names all three.
        let shown = loaded.warnings.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
        assert!(shown.contains("tool \"schema_number\" from bad is skipped: its inputSchema is 5"), "{shown}");
        // The kept tools work.
        let echo = find(&loaded.tools, "echo");
        assert_eq!(call(&echo, r#"{"text": "still here"}"#).await.content(), "still here");
    }
}

/// MCPI-14: a listing reply that is not JSON fails the load at once, naming the server and why, over both
/// transports; not "no answer within" after the timeout.
#[tokio::test]
async fn mcpi_14_an_unparsable_listing_fails_at_once_naming_why() {
    let (stdio, _server, http) = both("garbled", &["--garbage-list"]);
    for import in [stdio, http] {
        let err = import.load().await.unwrap_err().to_string();
        assert!(err.starts_with("mcp server garbled: cannot list tools: "), "{err}");
        assert!(err.contains("it sent a message that is not valid JSON"), "{err}");
        assert!(!err.contains("no answer within"), "{err}");
    }
}

/// MCPI-14: a listing reply over the 8 MiB line bound fails at once, saying so, over both transports.
#[tokio::test]
async fn mcpi_14_a_listing_over_the_line_bound_fails_at_once() {
    let (stdio, _server, http) = both("wide", &["--huge-pages", "9000000"]);
    for import in [stdio, http] {
        let err = import.load().await.unwrap_err().to_string();
        assert!(err.starts_with("mcp server wide: cannot list tools: "), "{err}");
        assert!(err.contains("exceeds the 8 MiB limit"), "{err}");
        assert!(!err.contains("no answer within"), "{err}");
    }
}

/// MCPI-14: a reply nested 10,000 levels deep answers its call at once with the reason. Over stdio the connection
/// is ended: later calls fail fast with the same reason. Over HTTP each request stands alone.
#[tokio::test]
async fn mcpi_14_a_reply_nested_too_deep_fails_its_call_at_once() {
    let (stdio, _server, http) = both("deep", &["--deep-reply"]);
    let loaded = stdio.load().await.unwrap();
    let out = call(&find(&loaded.tools, "deep"), "{}").await;
    assert!(out.is_error(), "{}", out.content());
    assert!(out.content().starts_with("mcp server deep is gone: it sent a message nested deeper than 128 levels"));
    assert!(out.content().contains("the connection was ended"), "{}", out.content());
    let later = call(&find(&loaded.tools, "echo"), r#"{"text": "x"}"#).await;
    assert_eq!((later.is_error(), later.content()), (true, out.content()));

    let loaded = http.load().await.unwrap();
    let out = call(&find(&loaded.tools, "deep"), "{}").await;
    assert!(out.is_error(), "{}", out.content());
    assert!(out.content().starts_with("mcp server deep: "), "{}", out.content());
    assert!(out.content().contains("nested deeper than 128 levels"), "{}", out.content());
    assert_eq!(call(&find(&loaded.tools, "echo"), r#"{"text": "x"}"#).await.content(), "x");
}

/// MCPI-15: escape sequences (OSC, CSI, 8-bit CSI), C0/C1 controls and invisible characters never reach the model
/// from an import: a tool's description and its schema's prose at any depth are cleaned at import time, over both
/// transports. Values the server compares (an enum) are left exactly as the server gave them; the server's
/// instructions are not imported at all.
#[tokio::test]
async fn mcpi_15_descriptions_and_schema_prose_reach_the_model_clean() {
    let (stdio, _server, http) = both("dirty", &["--hostile"]);
    for import in [stdio, http] {
        let loaded = import.load().await.unwrap();
        let spec = find(&loaded.tools, "dirty_schema").spec().clone();
        assert_eq!(spec.description(), hostile::CLEANED);
        let schema = spec.input_schema();
        for prose in [
            &schema["title"],
            &schema["description"],
            &schema["properties"]["path"]["description"],
            &schema["properties"]["path"]["default"],
            &schema["properties"]["path"]["examples"][0],
            &schema["properties"]["mode"]["description"],
            &schema["properties"]["nested"]["properties"]["inner"]["description"],
        ] {
            assert_eq!(prose, hostile::CLEANED, "{schema}");
        }
        assert_eq!(schema["properties"]["mode"]["enum"][0], "a\u{200b}b", "compared values stay verbatim");
        for tool in &loaded.tools {
            let spec = tool.spec();
            let mut all = vec![spec.description().to_owned()];
            texts(spec.input_schema(), &mut all);
            for text in all.iter().filter(|t| *t != "a\u{200b}b") {
                let dirty =
                    |c: char| (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{202e}' | '\u{200b}');
                assert!(!text.chars().any(dirty), "{}: {text:?}", spec.name());
                assert!(!text.contains("pwned"), "instructions are not imported");
            }
        }
    }
}

/// Every string and key in `value`.
fn texts(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|v| texts(v, out)),
        serde_json::Value::Object(members) => {
            for (key, member) in members {
                out.push(key.clone());
                texts(member, out);
            }
        }
        _ => {}
    }
}
