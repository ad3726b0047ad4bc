//! The one dispatch path (DESIGN §4.1, issue "one call path"): the agent and the MCP server refuse the same bad
//! inputs with the same text, before any operator is asked and before any process starts (EXEC-3, TOOL-18..21,
//! invariant 3); a host tool never receives input its schema rejects; a panicking tool is an error result on both.
#![cfg(feature = "mcp")]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use common::gate::RecordingGate;
use common::turns::{call_with, done, result_of, turn};
use fisk_ai::agent::{Agent, RunOptions};
use fisk_ai::builtin::{BuiltinEnv, BuiltinFactory};
use fisk_ai::gate::Decision;
use fisk_ai::llm::{Response, ScriptedProvider};
use fisk_ai::tool::{CallContext, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use fisk_ai::{Config, async_trait};
use mcp_support::{Answer, ERAS, TestClient, connect, is_error, serve_config, text};
use serde_json::{Map, Value, json};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Bad inputs for `deploy` (gated, `target` required and `web|db`, `replicas` integer, no other keys), each with
/// what the refusal must say. Valid JSON text, as a model or client sends it.
const BAD: [(&str, &str, &str); 8] = [
    ("wrong type", r#"{"target": "web", "replicas": "three"}"#, "invalid value for property \"replicas\""),
    ("unknown key", r#"{"target": "web", "colour": "red"}"#, "unknown property \"colour\""),
    ("missing required", r#"{"replicas": 2}"#, "without required parameter(s): target"),
    ("enum violation", r#"{"target": "prod"}"#, "invalid value for property \"target\""),
    ("duplicate key", r#"{"target": "web", "target": "db"}"#, "duplicate property \"target\""),
    // serde_json's `Value` would read a first key like this as the JSON in its string: checked one way, used another.
    (
        "serde_json private key",
        r#"{"target": "web", "$serde_json::private::RawValue": "{}"}"#,
        "invalid arguments: reserved property \"$serde_json::private::RawValue\"",
    ),
    // Where serde_json's `Value` (which rmcp decodes arguments into) would unwrap it: `target` would read "web".
    (
        "serde_json private key, nested",
        r#"{"target": {"$serde_json::private::RawValue": "\"web\""}, "replicas": 1}"#,
        "invalid arguments: reserved property \"$serde_json::private::RawValue\"",
    ),
    // Before a key given twice: the transports' probe must not stop at the first and miss the second.
    (
        "serde_json private key, then a key twice",
        r#"{"target": {"$serde_json::private::RawValue": "\"web\""}, "replicas": 1, "replicas": 5}"#,
        "invalid arguments: reserved property \"$serde_json::private::RawValue\"",
    ),
];

/// Whether `input` must go out as raw JSON-RPC: a client library's map cannot hold a key given twice, and its
/// `Value` would unwrap serde_json's private key before sending.
fn raw_only(input: &str) -> bool {
    input.contains("$serde_json::private::") || input.contains(r#""target": "web", "target""#)
}

fn yaml(dir: &Path, extra: &str) -> String {
    let app = common::fake_app(dir, "dispatch-app");
    format!(
        "identity: disp\napplication_path: {}\nsystem_prompt: s\nllm:\n  model: m\n{extra}expose:\n  agent:\n    mcp: {{}}\n",
        app.display()
    )
}

fn ran(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("ran")).map(|s| s.lines().map(str::to_owned).collect()).unwrap_or_default()
}

/// Run one agent over `calls` (name, input) with a gate that would approve everything; the result of each.
async fn agent_results(
    config: Config,
    calls: &[(&str, &str)],
    builtin: Option<Recorder>,
) -> (Vec<(String, bool)>, Vec<String>) {
    let mut script: Vec<Response> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, input))| turn(vec![call_with(&format!("c{i}"), name, input)]))
        .collect();
    script.push(done());
    let provider = Arc::new(ScriptedProvider::new(script));
    let (gate, log) = RecordingGate::new(&[Decision::Once; 16]);
    let mut builder = Agent::builder().config(config).provider_arc(provider).gate(gate);
    if let Some(b) = builtin {
        builder = builder.builtin(b);
    }
    let outcome = builder.build().await.unwrap().run("go", RunOptions::new()).await;
    ((0..calls.len()).map(|i| result_of(&outcome.messages, &format!("c{i}"))).collect(), log.asked())
}

/// MCP: every bad input through rmcp's client on both lifecycles, with raw JSON-RPC where a client library's
/// map cannot hold the input (see [`raw_only`]).
async fn mcp_results(
    dir: tempfile::TempDir,
    config: Config,
    calls: &[(&str, &str)],
) -> (Vec<(String, bool)>, Vec<String>) {
    let served = serve_config(dir, config, |b| b).await;
    let mut out = Vec::new();
    for era in ERAS {
        let client = connect(&served.url, TestClient::new(true, Answer::Approve), era).await;
        for (name, input) in calls {
            if raw_only(input) {
                out.push(raw_call(&served.url, name, input).await);
                continue;
            }
            let Value::Object(map) = serde_json::from_str::<Value>(input).unwrap() else { unreachable!() };
            let result = client
                .call_tool(rmcp::model::CallToolRequestParams::new(name.to_string()).with_arguments(map))
                .await
                .unwrap();
            out.push((text(&result), is_error(&result)));
        }
        client.cancel().await.unwrap();
    }
    let asked = served.events().into_iter().filter(|e| e.starts_with("call ") || e.starts_with("denied ")).collect();
    served.stop().await.unwrap();
    (out, asked)
}

/// One legacy session opened by hand and a `tools/call` whose body is `input` verbatim.
async fn raw_call(url: &str, name: &str, input: &str) -> (String, bool) {
    let http = reqwest::Client::new();
    let post = |body: String, session: Option<String>| {
        let mut req = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body);
        if let Some(s) = session {
            req = req.header("mcp-session-id", s).header("mcp-protocol-version", "2025-11-25");
        }
        req.send()
    };
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    let resp = post(init.to_owned(), None).await.unwrap();
    let session = resp.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let _ = resp.text().await;
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let _ = post(note.to_owned(), Some(session.clone())).await.unwrap().text().await;
    let body =
        format!(r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"{name}","arguments":{input}}}}}"#);
    let reply = post(body, Some(session)).await.unwrap().text().await.unwrap();
    // SSE or plain JSON: the JSON-RPC response is the last `data:` line, or the body itself.
    let json = reply.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).rfind(|l| !l.is_empty());
    let v: Value = serde_json::from_str(json.unwrap_or(&reply)).unwrap_or_else(|e| panic!("{e}: {reply}"));
    let result = &v["result"];
    (result["content"][0]["text"].as_str().unwrap_or_default().to_owned(), result["isError"] == true)
}

#[tokio::test]
async fn exec_3_tool_18_one_table_of_bad_inputs_gets_the_same_refusal_on_the_agent_and_over_mcp() {
    let calls: Vec<(&str, &str)> = BAD.iter().map(|(_, input, _)| ("deploy", *input)).collect();
    let dir = tempfile::tempdir().unwrap();
    let (agent, asked) = agent_results(Config::from_yaml_str(&yaml(dir.path(), "")).unwrap(), &calls, None).await;
    assert!(asked.is_empty(), "the gate was asked about a call that cannot run: {asked:?}");
    assert!(ran(dir.path()).is_empty(), "the agent started a process: {:?}", ran(dir.path()));

    let mcp_dir = tempfile::tempdir().unwrap();
    let config = Config::from_yaml_str(&yaml(mcp_dir.path(), "")).unwrap();
    let path = mcp_dir.path().to_owned();
    let (mcp, events) = mcp_results(mcp_dir, config, &calls).await;
    assert!(events.is_empty(), "MCP asked or ran: {events:?}");
    assert!(ran(&path).is_empty(), "MCP started a process");

    for (i, (case, input, want)) in BAD.iter().enumerate() {
        let (text, error) = &agent[i];
        assert!(*error && text.contains(want), "agent, {case} {input}: {text}");
        for era in 0..ERAS.len() {
            assert_eq!(&mcp[era * BAD.len() + i], &agent[i], "{case}: MCP ({:?}) and the agent differ", ERAS[era]);
        }
    }
    // The same tool runs for a valid input on both, proving the refusals were not a broken tool.
    let dir = tempfile::tempdir().unwrap();
    let (ok, asked) = agent_results(
        Config::from_yaml_str(&yaml(dir.path(), "")).unwrap(),
        &[("deploy", r#"{"target": "db", "replicas": 2}"#)],
        None,
    )
    .await;
    assert!(!ok[0].1, "{}", ok[0].0);
    assert_eq!(asked, ["deploy"], "a valid gated call is asked about");
    assert_eq!(ran(dir.path()), ["deploy --replicas=2 -- db"]);
}

/// A host built-in whose schema says `text: string`; it records every input it receives, and panics on "boom".
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

struct RecorderTool(ToolSpec, Arc<Mutex<Vec<String>>>);

#[async_trait]
impl Tool for RecorderTool {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    async fn call(&self, input: &ToolInput, _ctx: &CallContext) -> ToolOutput {
        self.1.lock().unwrap().push(input.as_str().to_owned());
        let v: Value = input.to_value().unwrap();
        assert!(v["text"].is_string(), "a tool received input its schema rejects: {v}");
        if v["text"] == "boom" {
            panic!("the host tool fell over");
        }
        ToolOutput::success("kept")
    }
}

impl BuiltinFactory for Recorder {
    fn name(&self) -> &str {
        "keep"
    }

    fn build(&self, _options: &Map<String, Value>, _env: &BuiltinEnv) -> fisk_ai::Result<Arc<dyn Tool>> {
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"],
            "additionalProperties": false});
        let spec = ToolSpec::new("keep", ToolKind::Builtin, schema)
            .with_description("Keep a text")
            .with_exposure(fisk_ai::tool::Exposure::Servable);
        Ok(Arc::new(RecorderTool(spec, self.0.clone())))
    }
}

#[tokio::test]
async fn a_host_tool_never_receives_a_number_for_a_string_and_a_panic_is_an_error_result_on_both_surfaces() {
    let calls = [("keep", r#"{"text": 5}"#), ("keep", r#"{"text": "boom"}"#), ("keep", r#"{"text": "ok"}"#)];
    let extra = "harness:\n  tools:\n    - name: keep\n";

    let dir = tempfile::tempdir().unwrap();
    let recorder = Recorder::default();
    let config = Config::from_yaml_str(&yaml(dir.path(), extra)).unwrap();
    let (agent, _) = agent_results(config, &calls, Some(recorder.clone())).await;

    let mcp_dir = tempfile::tempdir().unwrap();
    let mcp_recorder = Recorder::default();
    let config = Config::from_yaml_str(&yaml(mcp_dir.path(), extra)).unwrap();
    let builtin = mcp_recorder.clone();
    let served = serve_config(mcp_dir, config, move |b| b.builtin(builtin)).await;
    let mut mcp = Vec::new();
    for era in ERAS {
        let client = connect(&served.url, TestClient::new(false, Answer::Decline), era).await;
        for (name, input) in calls {
            let Value::Object(map) = serde_json::from_str(input).unwrap() else { unreachable!() };
            let r = client.call_tool(rmcp::model::CallToolRequestParams::new(name).with_arguments(map)).await.unwrap();
            mcp.push((text(&r), is_error(&r)));
        }
        client.cancel().await.unwrap();
    }
    served.stop().await.unwrap();

    for (surface, results, seen) in [("agent", &agent[..], &recorder), ("mcp", &mcp[..3], &mcp_recorder)] {
        assert!(results[0].1 && results[0].0.contains("property \"text\""), "{surface}: {:?}", results[0]);
        assert_eq!(results[1], ("tool \"keep\" failed internally".to_owned(), true), "{surface}");
        assert_eq!(results[2], ("kept".to_owned(), false), "{surface}");
        let received = seen.0.lock().unwrap().clone();
        assert!(received.iter().all(|t| !t.contains('5')), "{surface}: the tool received {received:?}");
        assert!(!received.is_empty(), "{surface}: the valid calls reached the tool");
    }
    assert_eq!(&mcp[..3], &mcp[3..], "both MCP lifecycles agree");
}
