//! A host's own plug-ins, as a new user embeds the crate: a host tool source and a host built-in, each saying
//! where its tools may be exposed (roles as data, `ToolSpec::exposure`), served over MCP to the official rmcp
//! client; an agent-only host tool is not served, and the server says why at start.
#![cfg(feature = "mcp")]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use fisk_ai::builtin::{BuiltinEnv, BuiltinFactory};
use fisk_ai::source::{Loaded, OnFailure, SourcePolicy, ToolSource};
use fisk_ai::tool::{CallContext, Exposure, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use fisk_ai::{Config, McpServer, async_trait};
use mcp_support::{Answer, ERAS, TestClient, connect, is_error, serve_config, text};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// A host tool answering with its own name and the text it got.
struct Echo(ToolSpec);

#[async_trait]
impl Tool for Echo {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn call(&self, input: &ToolInput, _: &CallContext) -> ToolOutput {
        let v: Value = input.to_value().unwrap_or_default();
        ToolOutput::success(format!("{} heard {}", self.0.name(), v["text"].as_str().unwrap_or("")))
    }
}

fn echo(name: &str, kind: ToolKind, exposure: Exposure) -> Arc<dyn Tool> {
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    Arc::new(Echo(ToolSpec::new(name, kind, schema).with_description(format!("{name} echoes")).with_exposure(exposure)))
}

/// A host source with one servable tool and one that is agent-only (the default for custom tools).
struct HostSource;

#[async_trait]
impl ToolSource for HostSource {
    fn name(&self) -> &str {
        "host"
    }
    async fn load(&self, _ctx: &fisk_ai::source::LoadContext) -> fisk_ai::Result<Loaded> {
        let private = Arc::new(Echo(
            ToolSpec::new("host_private", ToolKind::Custom, json!({"type": "object"})).with_description("private"),
        ));
        Ok(Loaded::new(vec![echo("host_status", ToolKind::Custom, Exposure::Servable), private]))
    }
}

/// A host built-in that declares itself servable.
struct Shout;

impl BuiltinFactory for Shout {
    fn name(&self) -> &str {
        "shout"
    }
    fn build(&self, options: &Map<String, Value>, _: &BuiltinEnv) -> fisk_ai::Result<Arc<dyn Tool>> {
        fisk_ai::builtin::reject_unknown_options("shout", options, &[])?;
        Ok(echo("shout", ToolKind::Builtin, Exposure::Servable))
    }
}

fn config() -> Config {
    Config::from_yaml_str("identity: hosted\nharness:\n  tools:\n    - name: shout\nexpose:\n  agent:\n    mcp: {}\n")
        .unwrap()
}

#[tokio::test]
async fn mcp_7_host_tools_that_say_servable_are_served_and_called_over_mcp() {
    for era in ERAS {
        let dir = tempfile::tempdir().unwrap();
        let served = serve_config(dir, config(), |b| b.source(HostSource).builtin(Shout)).await;
        let client = connect(&served.url, TestClient::new(false, Answer::Decline), era).await;
        let mut names: Vec<String> =
            client.list_all_tools().await.unwrap().into_iter().map(|t| t.name.into_owned()).collect();
        names.sort();
        assert_eq!(names, ["host_status", "shout"], "{era:?}");
        for (tool, said) in [("host_status", "host_status heard hi"), ("shout", "shout heard hi")] {
            let out = mcp_support::call(&client, tool, json!({"text": "hi"})).await;
            assert!(!is_error(&out), "{era:?} {tool}: {out:?}");
            assert_eq!(text(&out), said);
        }
        let refused = client.call_tool(mcp_support::params("host_private", json!({}))).await;
        let refused_or_error = match refused {
            Ok(out) => is_error(&out),
            Err(_) => true,
        };
        assert!(refused_or_error, "{era:?}: an agent-only tool was callable over MCP");
        client.cancel().await.unwrap();
        served.stop().await.unwrap();
    }
}

#[tokio::test]
async fn mcp_7_an_agent_only_host_tool_is_not_served_and_the_server_says_why() {
    let server = McpServer::builder().config(config()).source(HostSource).builtin(Shout).build().await.unwrap();
    let warned: Vec<String> = server.warnings().iter().map(ToString::to_string).collect();
    assert!(
        warned.iter().any(|w| w.contains("host_private") && w.contains("Exposure::Servable")),
        "no warning names the agent-only host tool: {warned:?}"
    );
    assert!(server.tools().get("host_private").is_none());
}

#[tokio::test]
async fn mcp_7_only_agent_only_host_tools_is_a_startup_error_that_does_not_blame_the_application() {
    struct PrivateOnly;
    #[async_trait]
    impl ToolSource for PrivateOnly {
        fn name(&self) -> &str {
            "private"
        }
        async fn load(&self, _ctx: &fisk_ai::source::LoadContext) -> fisk_ai::Result<Loaded> {
            Ok(Loaded::new(vec![echo("p", ToolKind::Custom, Exposure::AgentOnly)]))
        }
    }
    let yaml = "identity: hosted\nexpose:\n  agent:\n    mcp: {}\n";
    let err = McpServer::builder().config(Config::from_yaml_str(yaml).unwrap()).source(PrivateOnly).build().await;
    let err = err.unwrap_err().to_string();
    assert!(!err.contains("no application is wrapped"), "{err}");
    assert!(err.contains("Exposure::Servable"), "{err}");
}

/// A host source that learns its tools from a process it runs through the load context's hardened runner.
struct Probing(std::sync::Mutex<Vec<fisk_ai::source::ProcessOutput>>);

#[async_trait]
impl ToolSource for Probing {
    fn name(&self) -> &str {
        "probing"
    }
    async fn load(&self, ctx: &fisk_ai::source::LoadContext) -> fisk_ai::Result<Loaded> {
        let sh = |script: &str| vec!["-c".to_owned(), script.to_owned()];
        let timeout = std::time::Duration::from_secs(20);
        let env =
            ctx.run("/bin/sh", &sh("echo \"home=${HOME:-unset} llmformat=${LLMFORMAT:-unset}\""), timeout).await?;
        let flood = ctx.run("/bin/sh", &sh("yes 0123456789abcdef | head -c 2000000; exit 3"), timeout).await?;
        self.0.lock().unwrap().extend([env, flood]);
        // A hung probe is ended by the runner's timeout, and the error names the program.
        let hung = ctx.run("/bin/sleep", &["30".to_owned()], std::time::Duration::from_millis(300)).await;
        let err = hung.expect_err("a probe past its timeout is an error").to_string();
        assert!(err.contains("/bin/sleep") && err.contains("did not finish"), "{err}");
        Ok(Loaded::new(vec![echo("probed", ToolKind::Custom, Exposure::AgentOnly)]))
    }
}

#[tokio::test]
async fn harness_6_a_host_source_runs_its_process_through_the_contexts_hardened_runner() {
    let probing = Arc::new(Probing(std::sync::Mutex::new(Vec::new())));
    let harness = fisk_ai::harness::Harness::builder()
        .config(Config::from_yaml_str("identity: hosted\n").unwrap())
        .source_arc(probing.clone())
        // A variable certainly set in this process: scrubbed by the harness, so the child must not see it.
        .scrub(["HOME"])
        .build()
        .await
        .unwrap();
    assert!(harness.toolset().get("probed").is_some());
    let runs = probing.0.lock().unwrap().clone();
    assert_eq!(runs[0].exit_code, 0);
    assert_eq!(runs[0].output.trim(), "home=unset llmformat=1", "the scrubbed environment, as every child gets it");
    assert_eq!(runs[1].exit_code, 3);
    assert!(runs[1].truncated && runs[1].output.len() < 200_000, "output bounded: {} bytes", runs[1].output.len());
}

/// A host memory backend named in YAML: it reads its own options and refuses any it does not know.
struct Scratch(Arc<std::sync::Mutex<Option<u64>>>);

#[async_trait]
impl fisk_ai::MemoryBackend for Scratch {
    fn name(&self) -> &str {
        "scratch"
    }
    async fn open(&self, s: &fisk_ai::memory::MemorySettings<'_>) -> fisk_ai::Result<Arc<dyn fisk_ai::MemoryStore>> {
        s.reject_unknown_options(&["capacity"])?;
        *self.0.lock().unwrap() = s.options().get("capacity").and_then(Value::as_u64);
        Ok(Arc::new(fisk_ai::memory::InMemoryStore::new()))
    }
}

/// A host session backend named in YAML, the same way.
struct Journal(Arc<std::sync::Mutex<Option<String>>>);

#[async_trait]
impl fisk_ai::SessionBackend for Journal {
    fn name(&self) -> &str {
        "journal"
    }
    async fn open(&self, s: &fisk_ai::session::SessionSettings<'_>) -> fisk_ai::Result<Arc<dyn fisk_ai::SessionStore>> {
        s.reject_unknown_options(&["label"])?;
        *self.0.lock().unwrap() = s.options().get("label").and_then(Value::as_str).map(str::to_owned);
        Ok(Arc::new(fisk_ai::session::InMemorySessionStore::new()))
    }
}

async fn with_backends(yaml: &str) -> (fisk_ai::Result<fisk_ai::Harness>, Option<u64>, Option<String>) {
    let (capacity, label) = (Arc::default(), Arc::default());
    let built = fisk_ai::harness::Harness::builder()
        .config(Config::from_yaml_str(yaml).unwrap())
        .memory_backend(Scratch(Arc::clone(&capacity)))
        .session_backend(Journal(Arc::clone(&label)))
        .build()
        .await;
    let capacity = *capacity.lock().unwrap();
    let label = label.lock().unwrap().clone();
    (built, capacity, label)
}

#[tokio::test]
async fn harness_3_host_backends_named_in_yaml_get_their_options() {
    let yaml = "identity: hosted\nharness:\n  memory:\n    enabled: true\n    backend: scratch\n    options:\n      \
                capacity: 3\n  sessions:\n    backend: journal\n    options:\n      label: ops\n";
    let (built, capacity, label) = with_backends(yaml).await;
    let harness = built.unwrap();
    assert!(harness.memory().is_some(), "the host memory store was opened");
    assert!(harness.sessions().is_ok(), "the host session store was opened");
    assert_eq!(capacity, Some(3));
    assert_eq!(label.as_deref(), Some("ops"));
    assert!(harness.toolset().get("memory_write").is_some(), "memory tools over the host store");
}

#[tokio::test]
async fn harness_3_an_option_a_host_backend_does_not_know_is_refused_with_its_location() {
    let yaml = "identity: hosted\nharness:\n  memory:\n    enabled: true\n    backend: scratch\n    options:\n      \
                capacity: 3\n      colour: red\n";
    let err = with_backends(yaml).await.0.unwrap_err();
    assert_eq!(err.key(), Some("harness.memory.options.colour"));
    assert!(err.to_string().contains("line 8"), "{err}");
    assert!(err.to_string().contains("scratch") && err.to_string().contains("capacity"), "{err}");

    let yaml = "identity: hosted\nharness:\n  sessions:\n    backend: journal\n    options:\n      labels: x\n";
    let err = with_backends(yaml).await.0.unwrap_err();
    assert_eq!(err.key(), Some("harness.sessions.options.labels"), "{err}");
    assert!(err.to_string().contains("line 6"), "{err}");
}

#[tokio::test]
async fn harness_3_an_unregistered_backend_is_refused_listing_the_registered_ones() {
    let yaml = "identity: hosted\nharness:\n  memory:\n    backend: redis\n";
    let err = with_backends(yaml).await.0.unwrap_err().to_string();
    assert!(err.contains("\"redis\"") && err.contains("file, jetstream, scratch"), "{err}");
    assert!(err.contains("line 4"), "{err}");
    let yaml = "identity: hosted\nharness:\n  sessions:\n    backend: sqlite\n";
    let err = with_backends(yaml).await.0.unwrap_err().to_string();
    assert!(err.contains("\"sqlite\"") && err.contains("file, jetstream, journal"), "{err}");
}

/// A host provider factory for another API: named by `llm.provider`, declaring its own credential.
struct AcmeFactory;

impl fisk_ai::llm::ProviderFactory for AcmeFactory {
    fn name(&self) -> &str {
        "acme"
    }
    fn credentials(&self) -> Vec<String> {
        vec!["ACME_API_KEY".to_owned()]
    }
    fn build(&self, _: &fisk_ai::llm::ProviderSettings<'_>) -> fisk_ai::Result<Arc<dyn fisk_ai::ModelProvider>> {
        let answer = fisk_ai::llm::Response::new(
            vec![fisk_ai::llm::Block::text("acme answers")],
            fisk_ai::llm::StopReason::EndTurn,
            fisk_ai::llm::Usage::default(),
        );
        Ok(Arc::new(fisk_ai::llm::ScriptedProvider::new([answer])))
    }
}

#[tokio::test]
async fn harness_3_a_host_provider_factory_is_named_in_yaml_and_its_credential_is_scrubbed() {
    let yaml = "identity: hosted\nsystem_prompt: s\nllm:\n  provider: acme\n  model: m\n";
    let harness = fisk_ai::harness::Harness::builder()
        .config(Config::from_yaml_str(yaml).unwrap())
        .source(HostSource)
        .provider_factory(AcmeFactory)
        .build()
        .await
        .unwrap();
    assert!(harness.child_env().scrubbed().any(|n| n == "ACME_API_KEY"));
    let agent = fisk_ai::Agent::builder().harness(Arc::new(harness)).build().await.unwrap();
    let outcome = agent.run("hi", fisk_ai::RunOptions::new()).await;
    assert_eq!(outcome.answer.as_deref(), Some("acme answers"), "{:?}", outcome.error);
}

/// A session backend that cannot be reached: its error is kept for that store, not raised for both.
struct Unreachable;

#[async_trait]
impl fisk_ai::SessionBackend for Unreachable {
    fn name(&self) -> &str {
        "unreachable"
    }
    async fn open(&self, _: &fisk_ai::session::SessionSettings<'_>) -> fisk_ai::Result<Arc<dyn fisk_ai::SessionStore>> {
        Err(fisk_ai::Error::nats("journal host 10.0.0.9 refused the connection"))
    }
}

#[tokio::test]
async fn harness_3_open_stores_resolves_the_host_backends_a_run_would_without_loading_tools() {
    let yaml = "identity: hosted\napplication_path: /nonexistent/app\nharness:\n  memory:\n    enabled: true\n    \
                backend: scratch\n    options:\n      capacity: 7\n  sessions:\n    backend: journal\n    options:\n      \
                label: ops\n";
    let (capacity, label) = (Arc::default(), Arc::default());
    let stores = fisk_ai::harness::Harness::builder()
        .config(Config::from_yaml_str(yaml).unwrap())
        .memory_backend(Scratch(Arc::clone(&capacity)))
        .session_backend(Journal(Arc::clone(&label)))
        .open_stores()
        .await
        .expect("no source is loaded: the missing application is not touched");
    assert!(matches!(stores.memory(), Some(Ok(_))));
    assert!(stores.sessions().is_ok());
    assert_eq!(*capacity.lock().unwrap(), Some(7));
    assert_eq!(label.lock().unwrap().as_deref(), Some("ops"));

    // A configuration error fails the open with its location; an unreachable store is kept as that store's error.
    let yaml = "identity: hosted\nharness:\n  sessions:\n    backend: journal\n    options:\n      colour: red\n";
    let err = fisk_ai::harness::Harness::builder()
        .config(Config::from_yaml_str(yaml).unwrap())
        .session_backend(Journal(Arc::default()))
        .open_stores()
        .await
        .unwrap_err();
    assert_eq!(err.key(), Some("harness.sessions.options.colour"), "{err}");
    let yaml = "identity: hosted\nharness:\n  memory:\n    enabled: true\n  sessions:\n    backend: unreachable\n";
    let stores = fisk_ai::harness::Harness::builder()
        .config(Config::from_yaml_str(yaml).unwrap())
        .session_backend(Unreachable)
        .open_stores()
        .await
        .unwrap();
    assert!(matches!(stores.memory(), Some(Ok(_))), "the file memory store still opens");
    let err = stores.into_sessions().map(drop).unwrap_err().to_string();
    assert!(err.contains("10.0.0.9"), "{err}");
}

/// A host source that either fails to load or returns `x_keep`, `x_drop` and `y_other` whatever the policy says,
/// (each prefixed with its name), remembering whether the context told it its `x_drop` is dropped.
struct Lister {
    name: &'static str,
    down: bool,
    saw_drop_dropped: std::sync::Mutex<Option<bool>>,
}

fn lister(name: &'static str, down: bool) -> Arc<Lister> {
    Arc::new(Lister { name, down, saw_drop_dropped: std::sync::Mutex::new(None) })
}

#[async_trait]
impl ToolSource for Lister {
    fn name(&self) -> &str {
        self.name
    }
    async fn load(&self, ctx: &fisk_ai::source::LoadContext) -> fisk_ai::Result<Loaded> {
        *self.saw_drop_dropped.lock().unwrap() = Some(!ctx.keeps(&format!("{}_x_drop", self.name)));
        if self.down {
            return Err(fisk_ai::Error::source_failed(format!("{} is down", self.name)));
        }
        let names = ["x_keep", "x_drop", "y_other"].map(|n| format!("{}_{n}", self.name));
        Ok(Loaded::new(names.iter().map(|n| echo(n, ToolKind::Custom, Exposure::AgentOnly)).collect()))
    }
}

fn bare() -> fisk_ai::harness::HarnessBuilder {
    fisk_ai::harness::Harness::builder().config(Config::from_yaml_str("identity: hosted\n").unwrap())
}

fn names(harness: &fisk_ai::Harness) -> Vec<String> {
    let mut names: Vec<String> = harness.toolset().iter().map(|t| t.spec().name().to_owned()).collect();
    names.sort_unstable();
    names
}

#[tokio::test]
async fn harness_6_per_source_filters_live_in_the_pipeline_even_for_a_source_that_ignores_them() {
    use fisk_ai::select::Rule;
    let (filtered, open) = (lister("a", false), lister("b", false));
    let policy = SourcePolicy::new().include(Rule::tools(["^a_x_"]).unwrap()).exclude(Rule::tools(["_drop$"]).unwrap());
    let harness = bare().source_arc_with(filtered.clone(), policy).source_arc(open.clone()).build().await.unwrap();
    assert_eq!(
        names(&harness),
        ["a_x_keep", "b_x_drop", "b_x_keep", "b_y_other"],
        "one source's rules, not the other's"
    );
    assert_eq!(*filtered.saw_drop_dropped.lock().unwrap(), Some(true), "the context hands the source its policy");
    assert_eq!(*open.saw_drop_dropped.lock().unwrap(), Some(false), "and only its own");
}

#[tokio::test]
async fn harness_6_a_source_failure_does_what_its_policy_or_the_surface_says() {
    // Unset: a host source's failure stops the build, naming it.
    let err = bare().source_arc(lister("down", true)).build().await.unwrap_err().to_string();
    assert!(err.contains("down is down"), "{err}");

    // Warn on the source: the build goes on without it and says why.
    let warned = SourcePolicy::new().on_failure(OnFailure::Warn);
    let harness =
        bare().source_arc_with(lister("down", true), warned).source_arc(lister("up", false)).build().await.unwrap();
    assert_eq!(names(&harness), ["up_x_drop", "up_x_keep", "up_y_other"]);
    let said: Vec<String> =
        harness.warnings().iter().filter(|w| w.kind() == "source_failed").map(ToString::to_string).collect();
    assert!(said.len() == 1 && said[0].contains("down") && said[0].contains("down is down"), "{said:?}");

    // The surface's choice covers sources without their own; a source's own choice wins over it.
    let lenient = bare().on_source_failure(OnFailure::Warn).source_arc(lister("down", true)).build().await.unwrap();
    assert!(lenient.toolset().is_empty() && lenient.warnings().iter().any(|w| w.kind() == "source_failed"));
    let strict = SourcePolicy::new().on_failure(OnFailure::Abort);
    let err = bare().on_source_failure(OnFailure::Warn).source_arc_with(lister("must", true), strict).build().await;
    assert!(err.unwrap_err().to_string().contains("must is down"));

    // Report: every source is tried, then every such failure is reported together, in order.
    let report = || SourcePolicy::new().on_failure(OnFailure::Report);
    let (first, last) = (lister("first", true), lister("last", true));
    let err = bare()
        .source_arc_with(first, report())
        .source_arc_with(last.clone(), report())
        .build()
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("first is down; ") && err.ends_with("last is down"), "{err}");
    assert!(last.saw_drop_dropped.lock().unwrap().is_some(), "the second source was tried");
}

/// A host source whose one servable tool declares `schema` as its output schema.
struct Typed(Value);

#[async_trait]
impl ToolSource for Typed {
    fn name(&self) -> &str {
        "typed"
    }
    async fn load(&self, _ctx: &fisk_ai::source::LoadContext) -> fisk_ai::Result<Loaded> {
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
        let spec = ToolSpec::new("typed_echo", ToolKind::Custom, schema)
            .with_description("echoes, declaring an output schema")
            .with_exposure(Exposure::Servable)
            .with_output_schema(self.0.clone());
        Ok(Loaded::new(vec![Arc::new(Echo(spec)) as Arc<dyn Tool>]))
    }
}

/// TYPED-2: an output schema MCP cannot serve (not an object schema) stops the build, naming the tool; a tool whose
/// result breaks its declared schema (not a JSON object) gets an error result naming it, never a success a client
/// validating typed results would reject.
#[tokio::test]
async fn typed_2_a_host_tools_output_schema_and_results_are_held_to_it() {
    let built = McpServer::builder().config(config()).source(Typed(json!("a string"))).builtin(Shout).build().await;
    let Err(err) = built else { panic!("a non-object output schema is refused") };
    let err = err.to_string();
    assert!(err.contains("typed_echo") && err.contains("outputSchema"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let declared = json!({"type": "object", "properties": {"said": {"type": "string"}}});
    let served = serve_config(dir, config(), |b| b.source(Typed(declared)).builtin(Shout)).await;
    let client = connect(&served.url, TestClient::new(false, Answer::Decline), mcp_support::Era::Modern).await;
    let out = mcp_support::call(&client, "typed_echo", json!({"text": "hi"})).await;
    assert!(is_error(&out) && out.structured_content.is_none(), "{out:?}");
    assert!(text(&out).contains("typed_echo") && text(&out).contains("typed_echo heard hi"), "{}", text(&out));
    client.cancel().await.unwrap();
    served.stop().await.unwrap();
}
