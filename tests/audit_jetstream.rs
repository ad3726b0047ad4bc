//! The JetStream audit sink (AUD-5) against a real `nats-server -js`: two writers (a fleet) append to one chain
//! concurrently and it verifies; a deleted message is caught; a2a calls (AUD-1) are recorded into the stream with
//! the calling peer; `cli audit verify --stream` reads it through a NATS context.
#![cfg(feature = "nats")]

mod common;

use common::nats::NatsServer;
use fisk_ai::audit::{AuditSink, Entry, Event, StreamSink, verify_stream};
use fisk_ai::nats::NatsConnection;
use fisk_ai::serve::a2a::A2aServer;
use serde_json::{Value, json};

async fn connection(server: &NatsServer) -> NatsConnection {
    NatsConnection::borrowed(async_nats::connect(server.url()).await.unwrap(), "test")
}

/// The stream an operator makes for the trail (`guarded`: deletes and purges denied, as the sink requires).
async fn make_stream(
    server: &NatsServer,
    name: &str,
    subjects: &[&str],
    guarded: bool,
) -> async_nats::jetstream::stream::Stream {
    let js = async_nats::jetstream::new(async_nats::connect(server.url()).await.unwrap());
    let config = async_nats::jetstream::stream::Config {
        name: name.into(),
        subjects: subjects.iter().map(|s| (*s).to_owned()).collect(),
        deny_delete: guarded,
        deny_purge: guarded,
        ..Default::default()
    };
    js.create_stream(config).await.unwrap()
}

/// Copy the records of `from` into a new unguarded stream `to` (on subject `to`), leaving out message `skip`: what
/// an operator with delete rights could make of a trail.
async fn copy_without(server: &NatsServer, from: &str, to: &str, skip: u64) -> async_nats::jetstream::stream::Stream {
    let target = make_stream(server, to, &[to], false).await;
    let client = async_nats::connect(server.url()).await.unwrap();
    let js = async_nats::jetstream::new(client);
    let mut source = js.get_stream(from).await.unwrap();
    let last = source.info().await.unwrap().state.last_sequence;
    for seq in (1..=last).filter(|s| *s != skip) {
        let message = source.get_raw_message(seq).await.unwrap();
        js.publish(to.to_owned(), message.payload).await.unwrap().await.unwrap();
    }
    target
}

#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn aud_5_two_writers_share_one_chain_in_the_stream_and_a_deleted_record_is_caught() {
    let server = NatsServer::start();
    make_stream(&server, "AUDIT", &["fisk.audit"], true).await;
    let (a, b) = (connection(&server).await, connection(&server).await);
    let (a, b) = (StreamSink::bind(&a, "AUDIT").await.unwrap(), StreamSink::bind(&b, "AUDIT").await.unwrap());
    let write = |sink: StreamSink, who: &'static str| async move {
        for i in 0..15 {
            let entries =
                [Entry::new(Event::Requested, "other", &format!("{who}{i}")), Entry::new(Event::Refused, "other", who)];
            sink.append(&entries).await.unwrap();
        }
    };
    tokio::join!(write(a, "a"), write(b, "b"));
    let verified = verify_stream(&connection(&server).await, "AUDIT").await.unwrap().unwrap();
    assert_eq!(verified.records, 60);

    // A record removed (here: a copy of the trail without message 7) breaks the chain there.
    copy_without(&server, "AUDIT", "COPY", 7).await;
    let broken = verify_stream(&connection(&server).await, "COPY").await.unwrap().unwrap_err();
    assert_eq!(broken.at, "stream COPY message 7", "{broken}");
    // A purge (of a stream that allowed one) is caught too, and no writer starts a new chain after it.
    let purged = copy_without(&server, "AUDIT", "PURGED", 0).await;
    purged.purge().await.unwrap();
    let broken = verify_stream(&connection(&server).await, "PURGED").await.unwrap().unwrap_err();
    assert!(broken.why.contains("are gone"), "{broken}");

    // What cannot hold one chain is refused at bind, naming the key and what to do.
    let err = StreamSink::bind(&connection(&server).await, "COPY").await.unwrap_err();
    assert!(err.to_string().contains("must refuse deletes and purges"), "{err}");
    make_stream(&server, "WIDE", &["audit.>"], true).await;
    let err = StreamSink::bind(&connection(&server).await, "WIDE").await.unwrap_err();
    assert!(err.to_string().contains("exactly one subject without wildcards"), "{err}");
    let err = StreamSink::bind(&connection(&server).await, "MISSING").await.unwrap_err();
    assert!(err.to_string().contains("nats stream add MISSING"), "{err}");
    assert_eq!(err.key(), Some("harness.audit.stream"));
}

#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn aud_1_a2a_calls_are_recorded_in_the_stream_with_the_calling_peer_and_cli_verifies_it() {
    let server = NatsServer::start();
    make_stream(&server, "AUDIT", &["fisk.audit"], true).await;
    let dir = tempfile::tempdir().unwrap();
    let app = common::fake_app(dir.path(), "mcp-app");
    let yaml = format!(
        "identity: farm\napplication_path: {}\nnats_context: test\nharness:\n  audit:\n    stream: AUDIT\n\
         expose:\n  agent:\n    agent_to_agent: true\n",
        app.display()
    );
    std::fs::write(dir.path().join("agent.yaml"), &yaml).unwrap();
    let config = fisk_ai::Config::from_yaml_str(&yaml).unwrap();
    let a2a = A2aServer::builder().config(config).nats(connection(&server).await).build().await.unwrap();
    let running = a2a.start().await.unwrap();
    let peer = async_nats::connect(server.url()).await.unwrap();
    let reply = common::a2a::call(&peer, "farm", "echo", Some(json!({"words": ["hi"]}))).await;
    assert!(reply["output"].as_str().unwrap().contains("echo: hi"), "{reply}");
    let reply = common::a2a::call(&peer, "farm", "nope", None).await;
    assert_eq!(reply["is_error"], true);

    let js = async_nats::jetstream::new(peer.clone());
    let mut stream = js.get_stream("AUDIT").await.unwrap();
    // The refusal of an unknown tool is recorded off the intake loop: wait for it.
    for _ in 0..200 {
        if stream.info().await.unwrap().state.messages >= 6 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let mut all = Vec::new();
    for seq in 1..=6 {
        let message = stream.get_raw_message(seq).await.unwrap();
        all.push(serde_json::from_slice::<Value>(&message.payload).unwrap());
    }
    let events: Vec<(&str, &str)> =
        all.iter().map(|r| (r["tool"].as_str().unwrap(), r["event"].as_str().unwrap())).collect();
    assert_eq!(
        events,
        [
            ("echo", "requested"),
            ("echo", "validated"),
            ("echo", "run"),
            ("echo", "finished"),
            ("nope", "requested"),
            ("nope", "refused")
        ]
    );
    assert!(all.iter().all(|r| r["caller"] == "tester" && r["surface"] == "a2a" && r["agent"] == "farm"), "{all:#?}");
    assert!(all.iter().all(|r| r["request"].as_str().is_some_and(|s| !s.is_empty())));
    running.shutdown().await;

    let contexts = common::nats::context_dir("test", json!({"url": server.url()}), false);
    let home = common::nats::xdg_home_for(contexts.path());
    let verify = |dir: &std::path::Path| {
        common::example_cli(&["audit", "verify", "--stream", "AUDIT", "--config", "agent.yaml"], dir)
            .env("XDG_CONFIG_HOME", home.path())
            .output()
            .unwrap()
    };
    let out = verify(dir.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("6 record(s)"), "{}", String::from_utf8_lossy(&out.stdout));
    // A guarded stream refuses the delete itself; a copy without message 2 is what deleting would leave.
    assert!(stream.delete_message(2).await.is_err(), "deny_delete holds");
    copy_without(&server, "AUDIT", "COPY", 2).await;
    let out = common::example_cli(&["audit", "verify", "--stream", "COPY", "--config", "agent.yaml"], dir.path())
        .env("XDG_CONFIG_HOME", home.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("stream COPY message 2"), "{stderr}");
}
