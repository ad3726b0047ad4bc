//! Importing another agent's tools over NATS (SPEC 16.2, IMPORT-1..11; docs/nats-wire.md §2) against a real
//! nats-server and a fake a2a peer (tests/common/a2a_peer.rs): discovery, filters, skips, final naming, calls end
//! to end, journaling, strictness, and the MCP server that never imports.
#![cfg(feature = "nats")]

mod common;

use common::a2a_peer::{A2aPeer, Reply, client, descriptor, tool_reply};
use common::nats::NatsServer;
use common::turns::{call_with, done, result_of, turn};
use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
use fisk_ai::llm::ScriptedProvider;
use fisk_ai::nats::NatsConnection;
use fisk_ai::nats::wire::MessageKind;
use fisk_ai::select::Rule;
use fisk_ai::session::{FileSessionStore, SessionId};
use fisk_ai::source::remote::RemoteAgent;
use fisk_ai::source::{LoadContext, SourcePolicy, ToolSource};
use fisk_ai::tool::{CallContext, Origin, ToolInput, ToolKind};
use fisk_ai::{Config, ErrorKind};
use serde_json::{Value, json};
use std::sync::Arc;

/// A server, the caller's (borrowed) connection labelled `testctx`, and a client for fake peers.
async fn setup() -> (NatsServer, NatsConnection, async_nats::Client) {
    let server = NatsServer::start();
    let caller = NatsConnection::borrowed(client(&server.url()).await, "testctx");
    let peers = client(&server.url()).await;
    (server, caller, peers)
}

/// A tool handler echoing the request's input back as a command's EXEC-13 facts.
fn echo(identity: &'static str) -> impl Fn(&Value) -> Reply + Send + Sync + 'static {
    move |req| {
        let output = req.get("input").map_or("<absent>".to_owned(), Value::to_string);
        let name = req["name"].as_str().unwrap_or_default();
        Reply::Json(tool_reply(
            req,
            identity,
            json!({"output": output, "exec": {"command": format!("{identity} {name}")}}),
        ))
    }
}

/// IMPORT-2, IMPORT-4, IMPORT-8, A2A-6: one discovery request with a fresh header (id = request = conversation,
/// sequence 0, sender the caller, recipient the host); the host's include then exclude by name (regex, SEL-6);
/// an empty description skipped with a warning; an absent schema becomes `{"type":"object"}`; the tools carry no
/// tags, are imported, never gated, and named `remote <host>` by their origin.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn import_2_4_discovery_filters_and_skips() {
    let (_server, caller, peers) = setup().await;
    let tools = vec![
        descriptor("stream_ls", "List streams"),
        descriptor("stream_rm", "Remove a stream"),
        descriptor("consumer_ls", "List consumers"),
        descriptor("stream_blank", "  "),
        json!({"name": "stream_info", "description": "Stream facts"}),
    ];
    let peer = A2aPeer::serving(peers, "storage", tools, echo("storage")).await;
    let agent = RemoteAgent::new(caller, "ops", "storage").unwrap().with_alias("st").unwrap();
    let policy =
        SourcePolicy::new().include(Rule::tools(["^stream_"]).unwrap()).exclude(Rule::tools(["_rm$"]).unwrap());
    let found = agent.discover(&LoadContext::default().with_policy(policy)).await.unwrap();
    assert_eq!((found.version.as_str(), found.advertised), ("1.2.3", 5));
    let names: Vec<&str> = found.loaded.tools.iter().map(|t| t.spec().name()).collect();
    assert_eq!(names, ["stream_ls", "stream_info"]);
    let said: Vec<String> = found.loaded.warnings.iter().map(ToString::to_string).collect();
    assert!(said.len() == 1 && said[0].contains("stream_blank") && said[0].contains("empty description"), "{said:?}");
    let info = &found.loaded.tools[1];
    assert_eq!(info.spec().input_schema(), &json!({"type": "object"}));
    for t in &found.loaded.tools {
        let spec = t.spec();
        assert_eq!(spec.kind(), ToolKind::Imported);
        assert!(spec.tags().is_empty() && !spec.confirm_opt_in() && !spec.no_defer());
        assert_eq!(spec.origin(), &Origin::remote_host("storage", "st"));
        assert_eq!(spec.origin().imported_from().as_deref(), Some("remote storage"), "IMPORT-10 trace wording");
        assert_eq!(spec.origin().to_string(), "st", "INFO-4 SOURCE column");
    }
    assert_eq!(agent.origin(), Origin::remote_host("storage", "st"));

    let asked = peer.requests("choria.fisk-ai.discovery.storage");
    assert_eq!(asked.len(), 1, "one discovery request");
    let req = &asked[0];
    MessageKind::DiscoveryRequest.validate(req).unwrap();
    assert_eq!(req["protocol"], "io.choria.fisk-ai.v1.discovery.request");
    assert_eq!((&req["id"], &req["id"]), (&req["request"], &req["conversation"]));
    assert_eq!(req["id"].as_str().unwrap().len(), 27, "a KSUID");
    assert_eq!(req["sequence"], 0);
    assert_eq!(req["sender"], json!({"name": "ops"}));
    assert_eq!(req["recipient"], json!({"name": "storage"}));
    assert!(req.get("parent").is_none() && req.get("must_understand").is_none());
}

/// IMPORT-8: a host contributing nothing after its filters warns, naming it.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn import_8_a_host_contributing_nothing_warns() {
    let (_server, caller, peers) = setup().await;
    let _peer = A2aPeer::serving(peers, "quiet", vec![descriptor("a", "A")], echo("quiet")).await;
    let agent = RemoteAgent::new(caller, "ops", "quiet").unwrap();
    let ctx = LoadContext::default().with_policy(SourcePolicy::new().include(Rule::tools(["^nomatch$"]).unwrap()));
    let loaded = ToolSource::load(&agent, &ctx).await.unwrap();
    assert!(loaded.tools.is_empty());
    assert!(loaded.warnings.iter().any(|w| w.kind() == "import_empty" && w.to_string().contains("quiet")));
}

/// IMPORT-9, A2A-9: a call end to end. With `exec` the EXEC-13 JSON is rebuilt; without it the output is the
/// text; `is_error` gives the output verbatim; an absent, null or empty input is left out of the request, an
/// object is sent as given.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn import_9_calls_rebuild_exec_13_and_keep_is_error_verbatim() {
    let (_server, caller, peers) = setup().await;
    let tools = vec![descriptor("say", "Say"), descriptor("plain", "Plain"), descriptor("broken", "Broken")];
    let peer = A2aPeer::serving(peers, "cow", tools, |req| {
        let body = match req["name"].as_str() {
            Some("say") => {
                json!({"output": "moo\n", "exec": {"command": "cow say --text hi", "exit_code": 2, "truncated": true}})
            }
            Some("plain") => {
                json!({"output": format!("input {}", req.get("input").map_or("absent".into(), Value::to_string))})
            }
            _ => json!({"is_error": true, "output": "tool \"broken\" is not available"}),
        };
        Reply::Json(tool_reply(req, "cow", body))
    })
    .await;
    let loaded = RemoteAgent::new(caller, "ops", "cow").unwrap().load().await.unwrap();
    let tool = |name: &str| loaded.tools.iter().find(|t| t.spec().name() == name).unwrap().clone();
    let ctx = CallContext::new();

    let out = tool("say").call(&ToolInput::from_json(r#"{"text":"hi"}"#).unwrap(), &ctx).await;
    assert!(!out.is_error(), "{}", out.content());
    let exec: Value = serde_json::from_str(out.content()).unwrap();
    assert_eq!(exec, json!({"command": "cow say --text hi", "exit_code": 2, "output": "moo\n", "truncated": true}));
    assert_eq!(out.exec_output(), Some("moo\n"));

    let out = tool("plain").call(&ToolInput::from_json(r#"{"n": 12345678901234567890}"#).unwrap(), &ctx).await;
    assert_eq!((out.content(), out.is_error()), ("input {\"n\":12345678901234567890}", false));
    for empty in ["null", "{}"] {
        let out = tool("plain").call(&ToolInput::from_json(empty).unwrap(), &ctx).await;
        assert_eq!(out.content(), "input absent", "{empty} is left out");
    }
    let out = tool("plain").call(&ToolInput::empty(), &ctx).await;
    assert_eq!(out.content(), "input absent");

    let out = tool("broken").call(&ToolInput::empty(), &ctx).await;
    assert_eq!((out.content(), out.is_error()), ("tool \"broken\" is not available", true));

    let sent = peer.requests("choria.fisk-ai.tool.cow");
    assert_eq!(sent.len(), 6);
    for req in &sent {
        MessageKind::ToolRequest.validate(req).unwrap();
        assert_eq!((&req["sender"]["name"], &req["recipient"]["name"]), (&json!("ops"), &json!("cow")));
        assert_eq!(req["id"], req["request"]);
    }
    assert_ne!(sent[0]["id"], sent[1]["id"], "a fresh id per request");
}

/// docs/nats-wire.md §2: the outgoing request is validated first, so a non-object input fails locally with a clear
/// error and nothing is sent; so does one over the A2A-10 size limit.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn import_9_a_non_object_input_fails_locally() {
    let (_server, caller, peers) = setup().await;
    let peer = A2aPeer::serving(peers, "cow", vec![descriptor("say", "Say")], echo("cow")).await;
    let loaded = RemoteAgent::new(caller, "ops", "cow").unwrap().load().await.unwrap();
    for input in ["[1, 2]", "\"text\"", "7"] {
        let out = loaded.tools[0].call(&ToolInput::from_json(input).unwrap(), &CallContext::new()).await;
        assert!(out.is_error(), "{input}");
        assert!(
            out.content().starts_with("calling tool \"say\" on agent \"cow\": the tool request is invalid"),
            "{}",
            out.content()
        );
        assert!(out.content().contains("/input"), "names the property: {}", out.content());
    }
    // A2A-10: a request over 768 KiB is refused here too, rather than by the peer.
    let big = ToolInput::from_value(&json!({"text": "x".repeat(786_432)}));
    let out = loaded.tools[0].call(&big, &CallContext::new()).await;
    assert!(out.is_error() && out.content().contains("over the 786432-byte limit"), "{}", &out.content()[..200]);
    assert!(peer.requests("choria.fisk-ai.tool.cow").is_empty(), "nothing was sent");
}

fn agent_config(hosts: &str, extra: &str) -> Config {
    let yaml = format!(
        "identity: ops\nsystem_prompt: s\nnats_context: testctx\nllm:\n  model: m\n{extra}remote_tools:\n{hosts}"
    );
    Config::from_yaml_str(&yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"))
}

fn imported_names(agent: &Agent) -> Vec<String> {
    common::imported_names(agent.toolset())
}

/// IMPORT-5 (and docs/nats-wire.md §2 "Naming"): names are counted after the IMPORT-4 skips, so a tool another
/// host advertises with an empty description does not force a prefix; a name both hosts expose, or one a built-in
/// holds, becomes `<alias>_<name>`; a name that is not valid is skipped with a warning (IMPORT-6); the result
/// does not depend on the hosts' order. CFG-15: one connection (the injected one) serves every host.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn import_5_final_names_across_hosts_count_after_the_skips() {
    let (_server, caller, peers) = setup().await;
    let alpha = vec![
        descriptor("status", "Alpha status"),
        descriptor("lonely", ""),
        descriptor("base64_encode", "Alpha's own encoder"),
        descriptor("only_a", "Only alpha"),
        descriptor("bad name!", "IMPORT-6: not a valid final name"),
    ];
    let beta = vec![descriptor("status", "Beta status"), descriptor("lonely", "Beta lonely")];
    let _a = A2aPeer::serving(peers.clone(), "alpha", alpha, echo("alpha")).await;
    let _b = A2aPeer::serving(peers, "beta", beta, echo("beta")).await;
    let builtins = "harness:\n  tools:\n    - name: base64_encode\n";
    let hosts = ["  - name: alpha\n", "  - name: beta\n    alias: b\n"];
    let mut seen = Vec::new();
    for order in [[hosts[0], hosts[1]], [hosts[1], hosts[0]]] {
        let agent = Agent::builder()
            .pin_store(common::pin_store())
            .config(agent_config(&order.concat(), builtins))
            .provider(ScriptedProvider::new([]))
            .nats(caller.clone())
            .build()
            .await
            .unwrap();
        let names = imported_names(&agent);
        assert_eq!(names, ["alpha_base64_encode", "alpha_status", "b_status", "lonely", "only_a"]);
        assert!(agent.warnings().iter().any(|w| w.to_string().contains("lonely")), "the skip warns");
        assert!(agent.warnings().iter().any(|w| w.kind() == "invalid_tool_name"), "IMPORT-6 warns");
        assert_eq!(agent.toolset().gated_count(), 0, "IMPORT-10: never gated locally");
        seen.push(names);
    }
    assert_eq!(seen[0], seen[1]);
}

/// IMPORT-7, docs/nats-wire.md §2: a run is strict, and every host is tried in order before the errors are
/// reported together, each naming its host, the subject and the NATS context.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn import_7_unreachable_hosts_fail_the_build_together_naming_host_and_context() {
    let (_server, caller, peers) = setup().await;
    let good = A2aPeer::serving(peers, "good", vec![descriptor("x", "X")], echo("good")).await;
    let hosts = "  - name: gone1\n  - name: good\n  - name: gone2\n";
    let err = Agent::builder()
        .pin_store(common::pin_store())
        .config(agent_config(hosts, ""))
        .provider(ScriptedProvider::new([]))
        .nats(caller)
        .build()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Nats);
    let text = err.to_string();
    for host in ["gone1", "gone2"] {
        assert!(text.contains(&format!("remote_tools host \"{host}\" (NATS context testctx)")), "{text}");
        assert!(text.contains(&format!("no responders on choria.fisk-ai.discovery.{host}")), "{text}");
    }
    assert!(!text.contains("\"good\""), "{text}");
    assert_eq!(good.requests("choria.fisk-ai.discovery.good").len(), 1, "the host between them was tried too");
}

/// IMPORT-7, CFG-15: without an injected connection the agent connects from `nats_context`; a context that cannot
/// be loaded fails the build naming the hosts and the context. (No server needed.)
#[tokio::test]
async fn import_7_a_missing_nats_context_fails_the_build_naming_hosts_and_context() {
    let mut config = agent_config("  - name: far\n", "");
    config.nats_context = Some("fisk-ai-test-no-such-context".into());
    let err = Agent::builder()
        .pin_store(common::pin_store())
        .config(config)
        .provider(ScriptedProvider::new([]))
        .build()
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("remote_tools host \"far\"") && text.contains("fisk-ai-test-no-such-context"), "{text}");
}

/// IMPORT-9, IMPORT-10: inside a run the remote tool goes through the one dispatch path, its result reaches the
/// model, it is counted as a remote call and journaled with `remote: true`.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn import_10_a_run_calls_the_remote_tool_and_journals_it_as_remote() {
    let (_server, caller, peers) = setup().await;
    let _peer = A2aPeer::serving(peers, "cow", vec![descriptor("say", "Say")], echo("cow")).await;
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let provider = Arc::new(ScriptedProvider::new([turn(vec![call_with("1", "say", r#"{"text":"hi"}"#)]), done()]));
    let agent = Agent::builder()
        .pin_store(common::pin_store())
        .config(agent_config("  - name: cow\n", ""))
        .provider_arc(provider)
        .nats(caller)
        .session_store(FileSessionStore::new(&runs))
        .build()
        .await
        .unwrap();
    let sid = SessionId::new("remote").unwrap();
    let outcome = agent.run("x", RunOptions::new().with_checkpoint(sid.clone())).await;
    assert_eq!(outcome.reason, TerminalReason::Completed, "{:?}", outcome.error);
    let (content, is_error) = result_of(&outcome.messages, "1");
    assert!(!is_error, "{content}");
    let exec: Value = serde_json::from_str(&content).unwrap();
    assert_eq!(exec, json!({"command": "cow say", "exit_code": 0, "output": "{\"text\":\"hi\"}"}));
    assert_eq!(outcome.stats.remote_tool_calls, 1);
    let journal = std::fs::read_to_string(FileSessionStore::new(&runs).journal_path(&sid)).unwrap();
    let result = journal.lines().find(|l| l.contains("session.tool_result")).unwrap();
    let result: Value = serde_json::from_str(result).unwrap();
    assert_eq!(result["tool_result"]["remote"], true);
}

/// IMPORT-11: the MCP server never re-serves imported tools, so it does not connect to `remote_tools` hosts (none
/// exists here, and no NATS server runs) and warns that they have no effect.
#[cfg(feature = "mcp")]
#[tokio::test]
async fn import_11_the_mcp_server_never_imports_remote_tools() {
    let dir = tempfile::tempdir().unwrap();
    let app = common::fake_app(dir.path(), "cowsay");
    let yaml = format!(
        "identity: t\napplication_path: {}\nnats_context: nowhere\nexpose:\n  agent:\n    mcp: {{}}\nremote_tools:\n  - name: far\n",
        app.display()
    );
    let config = Config::from_yaml_str(&yaml).unwrap();
    let server = fisk_ai::serve::mcp::McpServer::builder().config(config).build().await.unwrap();
    assert!(server.tools().iter().all(|t| t.spec().kind() == ToolKind::Command));
    let said = server.warnings().iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
    assert!(said.contains("remote_tools") && said.contains("no effect over MCP"), "{said}");
}
