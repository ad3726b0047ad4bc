//! Client-side tool search (issue 15 part 3; SEARCH-1..3 for a provider without server-side search): the request
//! carries the direct tools plus `search_tools` and `call_tool`, byte-identical on every turn; a found tool runs
//! through the real tool's validation and gate; an unknown name gets a clear result; `ai:no_defer` stays direct.
#![cfg(all(feature = "openai", feature = "mcp"))]

mod common;
#[path = "common/openai.rs"]
mod fake_openai;

use common::gate::RecordingGate;
use common::turns::{call_with, done, result_of, turn};
use fake_openai::{FakeOpenAi, calls, text};
use fisk_ai::agent::{Agent, CALL_TOOL, RunEvent, RunOptions, SEARCH_TOOLS, TerminalReason};
use fisk_ai::gate::Decision;
use fisk_ai::llm::ScriptedProvider;
use fisk_ai::source::fisk::{AppModel, FiskApp};
use fisk_ai::source::{Loaded, ToolSource};
use fisk_ai::{Config, async_trait};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

const NOUNS: [&str; 25] = [
    "kv",
    "stream",
    "service",
    "agent",
    "fleet",
    "job",
    "lock",
    "election",
    "governor",
    "scout",
    "registry",
    "facts",
    "inventory",
    "rpc",
    "plugin",
    "broker",
    "tls",
    "audit",
    "task",
    "event",
    "metric",
    "backup",
    "config",
    "node",
    "policy",
];
const VERBS: [&str; 12] =
    ["get", "put", "ls", "rm", "watch", "info", "add", "edit", "purge", "report", "check", "sync"];

/// A choria-like application with `n` leaf commands `<noun> <verb>`: the first two `ai:no_defer`, `kv rm` gated.
fn doc(n: usize) -> Vec<u8> {
    let mut groups: Vec<Value> = Vec::new();
    let mut made = 0;
    'outer: for noun in NOUNS {
        let mut leaves = Vec::new();
        for verb in VERBS {
            if made == n {
                break;
            }
            let mut tags = vec![if verb == "rm" || verb == "purge" { "impact:rw" } else { "impact:ro" }];
            if made < 2 {
                tags.push("ai:no_defer");
            }
            if noun == "kv" && verb == "rm" {
                tags.push("ai:confirm");
            }
            leaves.push(json!({
                "name": verb,
                "help": format!("{verb} a {noun} entry of the fleet, by key"),
                "tags": tags,
                "args": [{"name": "key", "help": "The key", "required": false}],
                "restricted_schema": {"type": "object", "additionalProperties": false,
                    "properties": {"key": {"type": "string", "description": "The key"}}}
            }));
            made += 1;
        }
        groups.push(json!({"name": noun, "help": format!("{noun} commands"), "commands": leaves}));
        if made == n {
            break 'outer;
        }
    }
    assert_eq!(made, n, "the vocabulary covers {n} commands");
    serde_json::to_vec(&json!({"name": "choria", "commands": groups})).unwrap()
}

/// The generated application's tools, run by the `echo-args` fake app (each call prints its argv).
struct Choria {
    app: FiskApp,
    doc: Vec<u8>,
}

#[async_trait]
impl ToolSource for Choria {
    fn name(&self) -> &str {
        "choria"
    }

    async fn load(&self, _ctx: &fisk_ai::source::LoadContext) -> fisk_ai::Result<Loaded> {
        self.app.tools_from_model(
            AppModel::from_slice(&self.doc).map_err(|e| fisk_ai::Error::source_failed(e.to_string()))?,
        )
    }
}

fn choria(dir: &std::path::Path, n: usize) -> Choria {
    Choria { app: FiskApp::new(common::fake_app(dir, "echo-args")), doc: doc(n) }
}

fn yaml(extra: &str) -> String {
    format!("identity: c\nsystem_prompt: You run a fleet.\nllm:\n  model: gpt-4.1\n{extra}")
}

/// The raw `tools` array and first message of a Chat Completions request body, as sent.
fn prefix(body: &[u8]) -> (String, String) {
    #[derive(serde::Deserialize)]
    struct Body<'a> {
        #[serde(borrow)]
        tools: &'a serde_json::value::RawValue,
        #[serde(borrow)]
        messages: Vec<&'a serde_json::value::RawValue>,
    }
    let b: Body<'_> = serde_json::from_slice(body).unwrap();
    (b.tools.get().to_owned(), b.messages[0].get().to_owned())
}

#[tokio::test]
async fn search_1_3_the_request_prefix_is_byte_identical_across_50_turns_with_69_and_300_tools() {
    for n in [69, 300] {
        let dir = tempfile::tempdir().unwrap();
        let server = FakeOpenAi::start().await;
        // 49 tool turns (searches and routed calls, alternating), then the answer.
        for i in 0..49 {
            let call = if i % 2 == 0 {
                calls(&[(&format!("s{i}"), SEARCH_TOOLS, r#"{"query":"watch stream"}"#)])
            } else {
                calls(&[(&format!("c{i}"), CALL_TOOL, r#"{"name":"stream_watch","input":{"key":"k"}}"#)])
            };
            server.push(call.reply());
        }
        server.push(text("all done", "stop").reply());
        let config = Config::from_yaml_str(&yaml(&format!(
            "  provider: openai\n  base_url: {}\n  budget:\n    max_iterations: 60\n",
            server.url()
        )))
        .unwrap();
        let agent = Agent::builder()
            .config(config)
            .source(choria(dir.path(), n))
            .build()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(agent.client_tool_search(), "openai has no server-side search, so the agent's own applies");
        assert_eq!(agent.toolset().len(), n);
        let outcome = agent.run("watch the stream", RunOptions::new()).await;
        assert_eq!(outcome.reason, TerminalReason::Completed, "{n}: {:?}", outcome.error);
        let requests = server.requests();
        assert_eq!(requests.len(), 50);
        let first = prefix(&requests[0].body);
        for (turn, r) in requests.iter().enumerate() {
            assert!(prefix(&r.body) == first, "{n} tools: turn {} changed the tools or system prefix", turn + 1);
        }
        let names: Vec<String> = serde_json::from_str::<Vec<Value>>(&first.0)
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect();
        // ai:no_defer commands stay direct; everything else is behind search.
        assert_eq!(names, ["kv_get", "kv_put", SEARCH_TOOLS, CALL_TOOL], "{n} tools");
        // The routed calls ran the real command.
        assert!(outcome.stats.tool_calls == 49, "{:?}", outcome.stats);
        let (out, is_error) = result_of(&outcome.messages, "c1");
        assert!(!is_error && out.contains("stream watch"), "{out}");
    }
}

#[tokio::test]
async fn search_a_found_tool_runs_with_its_gate_and_validation_and_an_unknown_name_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(ScriptedProvider::new([
        turn(vec![call_with("s", SEARCH_TOOLS, r#"{"query": "rm kv entry", "limit": 3}"#)]),
        turn(vec![call_with("ok", CALL_TOOL, r#"{"name": "kv_rm", "input": {"key": "k1"}}"#)]),
        turn(vec![call_with("bad", CALL_TOOL, r#"{"name": "kv_rm", "input": {"key": 5}}"#)]),
        turn(vec![call_with("none", CALL_TOOL, r#"{"name": "kv_nope", "input": {}}"#)]),
        turn(vec![call_with("self", CALL_TOOL, r#"{"name": "call_tool"}"#)]),
        turn(vec![call_with("shape", CALL_TOOL, r#"{"tool": "kv_rm"}"#)]),
        done(),
    ]));
    let (gate, log) = RecordingGate::new(&[Decision::Once]);
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = seen.clone();
    let events = move |e: &RunEvent<'_>| {
        if let RunEvent::ToolCall { name, display, .. } = e {
            sink.lock().unwrap().push(format!("{name}: {display}"));
        }
    };
    let agent = Agent::builder()
        .config(Config::from_yaml_str(&yaml("")).unwrap())
        .provider_arc(provider)
        .source(choria(dir.path(), 69))
        .gate(gate)
        .build()
        .await
        .unwrap();
    assert!(agent.client_tool_search());
    let outcome = agent.run("remove k1", RunOptions::new().with_events(events)).await;
    assert_eq!(outcome.reason, TerminalReason::Completed, "{:?}", outcome.error);

    let (found, _) = result_of(&outcome.messages, "s");
    let found: Value = serde_json::from_str(&found).unwrap();
    let names: Vec<&str> = found["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.len() <= 3 && names.contains(&"kv_rm"), "{found}");
    let kv_rm = found["tools"].as_array().unwrap().iter().find(|t| t["name"] == "kv_rm").unwrap();
    assert_eq!(kv_rm["input_schema"]["properties"]["key"]["type"], "string", "the schema comes with the match");
    // SEARCHQ-6: each match shows its command path, in the CLI's own words.
    assert_eq!(kv_rm["command"], "kv rm", "{found}");

    // The routed call was gated under the real tool's name and ran the real command.
    assert_eq!(log.asked(), ["kv_rm"], "asked once, for the valid call only");
    let (ran, is_error) = result_of(&outcome.messages, "ok");
    assert!(!is_error && ran.contains("\"command\":\"kv rm -- k1\""), "{ran}");
    let trace = seen.lock().unwrap().clone();
    assert_eq!(trace[1], "kv_rm: kv rm -- k1", "the trace names the real tool: {trace:?}");
    assert_eq!(trace.len(), 2, "refused calls have no call event: {trace:?}");
    // Validation is the real tool's, before the gate.
    let (bad, is_error) = result_of(&outcome.messages, "bad");
    assert!(is_error && bad.contains("tool \"kv_rm\"") && bad.contains("property \"key\""), "{bad}");
    let (none, is_error) = result_of(&outcome.messages, "none");
    assert!(is_error && none.contains("unknown tool \"kv_nope\"") && none.contains(SEARCH_TOOLS), "{none}");
    let (itself, is_error) = result_of(&outcome.messages, "self");
    assert!(is_error && itself.contains("cannot call call_tool"), "{itself}");
    let (shape, is_error) = result_of(&outcome.messages, "shape");
    assert!(is_error && shape.contains("nothing was run"), "{shape}");
    // Statistics count the real calls once each.
    assert_eq!(outcome.stats.tool_calls, 6);
}

#[tokio::test]
async fn search_below_the_threshold_or_with_no_tool_search_everything_is_direct() {
    let dir = tempfile::tempdir().unwrap();
    let agent = |n: usize, extra: &str| {
        let config = Config::from_yaml_str(&yaml(extra)).unwrap();
        Agent::builder().config(config).provider(ScriptedProvider::new([])).source(choria(dir.path(), n)).build()
    };
    let small = agent(9, "").await.unwrap();
    assert!(!small.client_tool_search());
    assert_eq!(small.tool_plan().len(), 9);
    let off = agent(69, "  no_tool_search: true\n").await.unwrap();
    assert!(!off.client_tool_search());
    assert_eq!(off.tool_plan().len(), 69);
    assert!(off.warnings().iter().any(|w| w.kind() == "tool_search_disabled"), "{:?}", off.warnings());
}

/// SEARCHQ-8 through the configuration: `harness.knowledge.embeddings.tool_search` fuses `search_tools`' ranking
/// with a real (loopback) embeddings endpoint. The tools are embedded once, in batches, on the first search; each
/// search embeds its query; an endpoint that fails leaves the search to the words, and says so in the result.
#[cfg(feature = "knowledge")]
#[tokio::test]
async fn searchq_8_the_hybrid_tier_from_the_configuration_embeds_the_tools_once_and_falls_back_to_the_words() {
    use std::sync::atomic::Ordering;
    let server = common::embed::EmbedServer::start().await;
    let run = |tool_search: bool| {
        let dir = tempfile::tempdir().unwrap();
        let url = server.base_url.clone();
        async move {
            let provider = Arc::new(ScriptedProvider::new([
                turn(vec![call_with("s1", SEARCH_TOOLS, r#"{"query": "rm kv entry", "limit": 3}"#)]),
                turn(vec![call_with("s2", SEARCH_TOOLS, r#"{"query": "watch stream"}"#)]),
                done(),
            ]));
            let extra = format!(
                "harness:\n  knowledge:\n    embeddings:\n      base_url: {url}\n      model: m\n      tool_search: {tool_search}\n"
            );
            let agent = Agent::builder()
                .config(Config::from_yaml_str(&yaml(&extra)).unwrap())
                .provider_arc(provider)
                .source(choria(dir.path(), 69))
                .build()
                .await
                .unwrap();
            let outcome = agent.run("remove k1", RunOptions::new()).await;
            assert_eq!(outcome.reason, TerminalReason::Completed, "{:?}", outcome.error);
            let found = |id: &str| serde_json::from_str::<Value>(&result_of(&outcome.messages, id).0).unwrap();
            (found("s1"), found("s2"))
        }
    };
    let names = |found: &Value| -> Vec<String> {
        found["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
    };

    // Off (the default): the endpoint is never asked.
    let (s1, _) = run(false).await;
    assert!(names(&s1).contains(&"kv_rm".to_owned()), "{s1}");
    assert_eq!(server.seen.requests.load(Ordering::Relaxed), 0);

    // On: 67 deferred tools in two batches (64 a request), once; then one query per search.
    let (s1, s2) = run(true).await;
    assert_eq!(server.seen.requests.load(Ordering::Relaxed), 4);
    assert_eq!(server.seen.inputs.load(Ordering::Relaxed), 67 + 2);
    assert!(names(&s1).len() <= 3 && names(&s1).contains(&"kv_rm".to_owned()), "{s1}");
    assert!(names(&s2).contains(&"stream_watch".to_owned()), "{s2}");
    assert!(s1.get("ranking").is_none(), "fused, not degraded: {s1}");

    // The endpoint failing: each search still answers, by the words, and says why.
    server.seen.failing.store(true, Ordering::Relaxed);
    let (s1, _) = run(true).await;
    assert!(names(&s1).contains(&"kv_rm".to_owned()), "{s1}");
    let ranking = s1["ranking"].as_str().unwrap_or_default();
    assert!(ranking.starts_with("ranked by words only: the embedder failed"), "{s1}");
}
