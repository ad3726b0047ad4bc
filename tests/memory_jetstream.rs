//! The JetStream memory backend against a real `nats-server -js` (MEM-22..27): binding and its refusals, the key
//! layout, two agents racing on one key, listing, the backend through an agent's configuration, and a server
//! restart mid-run.
#![cfg(feature = "nats")]

mod common;

use common::nats::NatsServer;
use fisk_ai::memory::{JetStreamMemory, MemoryRecord, MemoryStore, memory_tools};
use fisk_ai::nats::NatsConnection;
use fisk_ai::tool::{CallContext, Tool, ToolInput, ToolOutput};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

async fn server_with_bucket(bucket: &str) -> (NatsServer, NatsConnection) {
    let server = NatsServer::start();
    let client = async_nats::connect(server.url()).await.unwrap();
    common::kv::create_bucket(&client, bucket).await;
    (server, NatsConnection::borrowed(client, "test"))
}

async fn call(tools: &[Arc<dyn Tool>], name: &str, args: Value) -> ToolOutput {
    let tool = tools.iter().find(|t| t.spec().name() == name).unwrap();
    tool.call(&ToolInput::from_value(&args), &CallContext::new()).await
}

fn json_of(out: &ToolOutput) -> Value {
    assert!(!out.is_error(), "tool error: {}", out.content());
    serde_json::from_str(out.content()).unwrap()
}

#[tokio::test]
#[ignore = "needs nats-server (apt-get install -y nats-server); .ci/run runs it on 2.9 and 2.15"]
async fn mem_22_23_binding_refuses_a_missing_bucket_a_ttl_and_small_values_with_the_fix() {
    let server = NatsServer::start();
    let client = async_nats::connect(server.url()).await.unwrap();
    let nats = NatsConnection::borrowed(client.clone(), "test");

    let missing = JetStreamMemory::bind(&nats, "NOPE", "ops").await.unwrap_err().to_string();
    assert!(missing.contains("\"NOPE\" does not exist"), "{missing}");
    assert!(missing.contains("nats kv add NOPE --history=1 --max-value-size=69600"), "{missing}");

    common::kv::create(&client, common::kv::with_ttl("TTL", Duration::from_secs(3600))).await;
    let ttl = JetStreamMemory::bind(&nats, "TTL", "ops").await.unwrap_err().to_string();
    assert!(ttl.contains("\"TTL\" has a TTL of 3600s"), "{ttl}");

    let small = async_nats::jetstream::stream::Config { max_message_size: 4096, ..common::kv::bucket_config("SMALL") };
    common::kv::create(&client, small).await;
    let small = JetStreamMemory::bind(&nats, "SMALL", "ops").await.unwrap_err().to_string();
    assert!(small.contains("max value size of 4096 bytes") && small.contains("69600"), "{small}");

    // The agent never creates a bucket: the refused binds left none behind.
    let js = async_nats::jetstream::new(client);
    assert!(js.get_stream("KV_NOPE").await.is_err());
}

#[tokio::test]
#[ignore = "needs nats-server (apt-get install -y nats-server); .ci/run runs it on 2.9 and 2.15"]
async fn mem_24_keys_live_under_the_prefix_and_an_empty_prefix_is_flat() {
    let (_server, nats) = server_with_bucket("MEM").await;
    let ops = JetStreamMemory::bind(&nats, "MEM", "ops").await.unwrap();
    let flat = JetStreamMemory::bind(&nats, "MEM", "").await.unwrap();
    ops.create("region", &MemoryRecord::new("Region", "eu-west-1").unwrap()).await.unwrap();

    let kv = async_nats::jetstream::new(nats.client().clone()).get_key_value("MEM").await.unwrap();
    let raw = kv.get("ops.region").await.unwrap().unwrap();
    assert_eq!(raw, "---\ndescription: Region\n---\n\neu-west-1", "the stored bytes are the shared format (MEM-13)");
    // The flat view sees the whole bucket, prefixed key included; the prefixed view only its own.
    flat.create("shared", &MemoryRecord::new("Shared", "x").unwrap()).await.unwrap();
    let keys = |entries: Vec<fisk_ai::memory::Entry>| entries.into_iter().map(|e| e.key).collect::<Vec<_>>();
    assert_eq!(keys(flat.list().await.unwrap()), ["ops.region", "shared"]);
    assert_eq!(keys(ops.list().await.unwrap()), ["region"]);
    assert!(ops.read("shared").await.unwrap().is_none());
    assert_eq!(flat.read("ops.region").await.unwrap().unwrap().content, "eu-west-1");
}

#[tokio::test]
#[ignore = "needs nats-server (apt-get install -y nats-server); .ci/run runs it on 2.9 and 2.15"]
async fn mem_27_listing_dedups_skips_deleted_keys_and_sees_other_writers() {
    let (_server, nats) = server_with_bucket("MEM").await;
    let a = JetStreamMemory::bind(&nats, "MEM", "team").await.unwrap();
    let other = async_nats::connect(format!("nats://127.0.0.1:{}", _server.port())).await.unwrap();
    let b = JetStreamMemory::bind(&NatsConnection::borrowed(other, "other"), "MEM", "team").await.unwrap();
    for i in 0..50 {
        a.create(&format!("k{i:02}"), &MemoryRecord::new(&format!("v{i}"), "x").unwrap()).await.unwrap();
    }
    // Many revisions of one key, and deletes by another writer.
    for n in 0..5 {
        b.overwrite("k00", &MemoryRecord::new(&format!("rewritten {n}"), "y").unwrap(), None).await.unwrap();
    }
    for i in 40..50 {
        assert!(b.delete(&format!("k{i:02}")).await.unwrap());
    }
    let listed = a.list().await.unwrap();
    assert_eq!(listed.len(), 40);
    assert_eq!(listed[0].key, "k00");
    assert_eq!(listed[0].description, "rewritten 4");
    assert!(listed.windows(2).all(|w| w[0].key < w[1].key));
    assert_eq!(a.count().await.unwrap(), 40);
}

/// The race: two agents (two connections, two runs) read the same key, then both `memory_write` with
/// `overwrite: true` at once, 100 rounds. Exactly one wins each round; the loser is told to read and retry, does,
/// and wins alone; no update is lost.
#[tokio::test]
#[ignore = "needs nats-server (apt-get install -y nats-server); .ci/run runs it on 2.9 and 2.15"]
async fn mem_25_two_agents_racing_on_one_key_never_lose_an_update() {
    let (server, nats) = server_with_bucket("MEM").await;
    let seed = JetStreamMemory::bind(&nats, "MEM", "fleet").await.unwrap();
    seed.create("counter", &MemoryRecord::new("Shared counter", "0").unwrap()).await.unwrap();
    let mut agents = Vec::new();
    for name in ["a", "b"] {
        let client = async_nats::connect(server.url()).await.unwrap();
        let store = JetStreamMemory::bind(&NatsConnection::borrowed(client, name), "MEM", "fleet").await.unwrap();
        agents.push(Arc::new(memory_tools(Arc::new(store))));
    }
    let read = |tools: Arc<Vec<Arc<dyn Tool>>>| async move {
        let out = json_of(&call(&tools, "memory_read", json!({"key": "counter"})).await);
        out["content"].as_str().unwrap().parse::<u64>().unwrap()
    };
    let bump = |tools: Arc<Vec<Arc<dyn Tool>>>, seen: u64| async move {
        let args = json!({"key": "counter", "description": "Shared counter", "content": (seen + 1).to_string(),
                          "overwrite": true});
        json_of(&call(&tools, "memory_write", args).await)
    };
    for round in 0..100u64 {
        let seen = futures::future::join(read(agents[0].clone()), read(agents[1].clone())).await;
        assert_eq!(seen, (2 * round, 2 * round));
        let (x, y) = futures::future::join(bump(agents[0].clone(), seen.0), bump(agents[1].clone(), seen.1)).await;
        let wins = [&x, &y].iter().filter(|o| o["written"] == true).count();
        assert_eq!(wins, 1, "round {round}: exactly one write wins: {x} {y}");
        let (loser, out) = if x["written"] == true { (1, &y) } else { (0, &x) };
        let reason = out["reason"].as_str().unwrap();
        assert!(reason.contains("changed since") && reason.contains("memory_read"), "round {round}: {reason}");
        // The loser reads and retries, as told.
        let now = read(agents[loser].clone()).await;
        assert_eq!(now, 2 * round + 1);
        assert_eq!(bump(agents[loser].clone(), now).await["written"], true);
    }
    assert_eq!(seed.read("counter").await.unwrap().unwrap().content, "200", "no update was lost");
}

/// A server restart mid-run: memory calls in the gap are error results naming the bucket, later calls work again
/// over the reconnected client, and nothing written before is lost.
#[tokio::test]
#[ignore = "needs nats-server (apt-get install -y nats-server); .ci/run runs it on 2.9 and 2.15"]
async fn mem_14_a_server_restart_gives_error_results_then_recovers_without_loss() {
    let mut server = NatsServer::start();
    let client = async_nats::connect(server.url()).await.unwrap();
    common::kv::create_bucket(&client, "MEM").await;
    let store = JetStreamMemory::bind(&NatsConnection::borrowed(client.clone(), "test"), "MEM", "ops").await.unwrap();
    let tools = memory_tools(Arc::new(store));
    let write = |key: &str| json!({"key": key, "description": "Note", "content": format!("about {key}")});
    assert_eq!(json_of(&call(&tools, "memory_write", write("before")).await), json!({"written": true}));

    server.kill();
    for (name, args) in
        [("memory_write", write("gap")), ("memory_read", json!({"key": "before"})), ("memory_list", json!({}))]
    {
        let out = call(&tools, name, args).await;
        assert!(out.is_error(), "{name} in the gap must be an error result: {}", out.content());
        assert!(out.content().contains("memory bucket \"MEM\""), "{name}: {}", out.content());
    }
    server.restart();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while client.connection_state() != async_nats::connection::State::Connected {
        assert!(std::time::Instant::now() < deadline, "the client did not reconnect");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // JetStream needs a moment after the listener is up; retry the first call until it answers.
    let mut listed = call(&tools, "memory_list", json!({})).await;
    while listed.is_error() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        listed = call(&tools, "memory_list", json!({})).await;
    }
    assert_eq!(json_of(&listed)["memories"].as_array().map(Vec::len), Some(1), "{}", listed.content());
    assert_eq!(json_of(&call(&tools, "memory_read", json!({"key": "before"})).await)["content"], "about before");
    assert_eq!(json_of(&call(&tools, "memory_write", write("after")).await), json!({"written": true}));
}

/// MEM-18, CFG-15: `harness.memory.backend: jetstream` through an agent's configuration, over the host's injected
/// connection: the model's writes land in the bucket under the identity's prefix, and the next run's index shows them.
#[tokio::test]
#[ignore = "needs nats-server (apt-get install -y nats-server); .ci/run runs it on 2.9 and 2.15"]
async fn mem_18_the_configured_backend_keeps_an_agents_memory_in_the_bucket() {
    use fisk_ai::agent::{Agent, RunOptions};
    use fisk_ai::llm::{Block, Response, ScriptedProvider, StopReason, Usage};

    let (_server, nats) = server_with_bucket("AGENTS").await;
    let yaml = format!(
        "identity: farm\napplication_path: {}\nsystem_prompt: Remember things.\nllm:\n  model: m\nharness:\n  \
         memory: {{enabled: true, backend: jetstream, options: {{bucket: AGENTS}}}}\n",
        common::root().join("examples/cowsay/cowsay").display()
    );
    let write = json!({"key": "region", "description": "Where we deploy", "content": "eu-west-1"});
    let call = Block::ToolUse { id: "1".into(), name: "memory_write".into(), input: ToolInput::from_value(&write) };
    let done = || Response::new(vec![Block::text("done")], StopReason::EndTurn, Usage::default());
    let provider = Arc::new(ScriptedProvider::new([
        Response::new(vec![call], StopReason::ToolUse, Usage::default()),
        done(),
        done(),
    ]));
    let agent = Agent::builder()
        .config(fisk_ai::Config::from_yaml_str(&yaml).unwrap())
        .provider_arc(provider.clone())
        .nats(nats.clone())
        .build()
        .await
        .unwrap();
    agent.run("remember the region", RunOptions::default()).await;
    let kv = async_nats::jetstream::new(nats.client().clone()).get_key_value("AGENTS").await.unwrap();
    assert_eq!(kv.get("farm.region").await.unwrap().unwrap(), "---\ndescription: Where we deploy\n---\n\neu-west-1");

    agent.run("what do you know?", RunOptions::default()).await;
    let system = provider.requests()[2].system.join("\n");
    assert!(system.contains("region") && system.contains("Where we deploy"), "the index lists the entry: {system}");
    // OVR-7: the injected connection is still open after the runs.
    assert_eq!(nats.client().connection_state(), async_nats::connection::State::Connected);
}

/// MEM-28, INFO-7: `info` shows the backend, bucket, context and prefix, and whether the bucket could be bound;
/// a missing bucket is reported with the command that creates it, not fatal.
#[tokio::test]
#[ignore = "needs nats-server (apt-get install -y nats-server); .ci/run runs it on 2.9 and 2.15"]
async fn mem_28_info_shows_the_bucket_and_its_reachability() {
    let (server, _nats) = server_with_bucket("AGENTS").await;
    let contexts = server.context_dir("t", json!({"url": server.url()}), false);
    let xdg = common::nats::xdg_home_for(contexts.path());
    let dir = tempfile::tempdir().unwrap();
    let info = move |bucket: &str| {
        let yaml = format!(
            "identity: farm\napplication_path: {}\nnats_context: t\nsystem_prompt: s\nllm:\n  model: m\nharness:\n  \
             memory: {{enabled: true, backend: jetstream, options: {{bucket: {bucket}}}}}\n",
            common::root().join("examples/cowsay/cowsay").display()
        );
        std::fs::write(dir.path().join("agent.yaml"), yaml).unwrap();
        let out = common::example_cli(&["info", "--config", "agent.yaml"], dir.path())
            .env("XDG_CONFIG_HOME", xdg.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let shown = tokio::task::spawn_blocking(move || (info("AGENTS"), info("MISSING"))).await.unwrap();
    let memory = |text: &str| text.split("Memory:").nth(1).unwrap().split("\n\n\n").next().unwrap().to_owned();
    let ok = memory(&shown.0);
    for row in ["jetstream", "Bucket", "AGENTS", "Context", "Prefix", "farm", "Reachability  reachable"] {
        assert!(ok.contains(row), "{row} in {ok}");
    }
    let missing = memory(&shown.1);
    assert!(missing.contains("unreachable") && missing.contains("nats kv add MISSING"), "{missing}");
}

/// Hostile input from a peer sharing the bucket: a description far over MEM-9's limit is cut in listings, and a
/// prefix holding thousands more keys than the entry cap fails the listing instead of growing it without end.
#[tokio::test]
#[ignore = "needs nats-server (apt-get install -y nats-server); .ci/run runs it on 2.9 and 2.15"]
async fn mem_27_a_peers_oversized_entries_and_key_flood_stay_bounded() {
    let (_server, nats) = server_with_bucket("MEM").await;
    let kv = async_nats::jetstream::new(nats.client().clone()).get_key_value("MEM").await.unwrap();
    let long = format!("---\ndescription: {}\n---\n\nx", "d".repeat(20_000));
    kv.put("team.long", long.into()).await.unwrap();
    let store = JetStreamMemory::bind(&nats, "MEM", "team").await.unwrap();
    let listed = store.list().await.unwrap();
    assert_eq!(listed[0].description.chars().count(), fisk_ai::memory::MAX_DESCRIPTION_CHARS);

    let puts = (0..4 * fisk_ai::memory::MAX_ENTRIES + 10).map(|i| kv.put(format!("team.k{i}"), "v".into()));
    for put in futures::future::join_all(puts).await {
        put.unwrap();
    }
    let err = store.list().await.unwrap_err().to_string();
    assert!(err.contains("memory bucket \"MEM\"") && err.contains("too many entries"), "{err}");
}
