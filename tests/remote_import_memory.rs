//! IMPORT-12: what the tool specs of a `remote_tools` listing hold is bounded in total (32 MiB), whatever the
//! peers send. Sixteen hosts answer with cards just under the 768 KiB message limit, each a schema as dense as
//! JSON gets (tests/common/a2a_peer.rs `huge_card`): parsed, each would hold about 12 MiB, 200 MiB for them all.
//! The hosts past the bound fail the build, each error naming the host, what was read and the bound, and this
//! process's peak memory stays far below what the cards would otherwise take. Alone in its own test binary so the
//! peak (`VmHWM`) is this test's.
#![cfg(feature = "nats")]

mod common;

use common::a2a_peer::{A2aPeer, Reply, client, huge_card};
use common::memory::{peak, reset_peak};
use common::nats::NatsServer;
use fisk_ai::agent::Agent;
use fisk_ai::llm::ScriptedProvider;
use fisk_ai::nats::NatsConnection;
use fisk_ai::{Config, ErrorKind};

/// How many hosts the hostile peer answers for.
const HOSTS: usize = 16;

#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn import_12_huge_cards_past_32_mib_fail_naming_host_read_and_bound_in_bounded_memory() {
    let server = NatsServer::start();
    let caller = NatsConnection::borrowed(client(&server.url()).await, "memctx");
    let peers = client(&server.url()).await;
    let mut serving = Vec::new();
    for i in 0..HOSTS {
        let identity = format!("huge{i:02}");
        let name = identity.clone();
        let card = move |req: &serde_json::Value| Reply::Raw(huge_card(req, &name));
        serving.push(A2aPeer::start(peers.clone(), &identity, card, |_| Reply::Silent).await);
    }
    let hosts: String = (0..HOSTS).map(|i| format!("  - name: huge{i:02}\n")).collect();
    let yaml =
        format!("identity: ops\nsystem_prompt: s\nnats_context: memctx\nllm:\n  model: m\nremote_tools:\n{hosts}");
    let config = Config::from_yaml_str(&yaml).unwrap();

    reset_peak();
    let before = peak();
    let built = Agent::builder()
        .pin_store(common::pin_store())
        .config(config)
        .provider(ScriptedProvider::new([]))
        .nats(caller)
        .build()
        .await;
    let grown = peak().saturating_sub(before);
    eprintln!("IMPORT-12: peak RSS grew by {} MiB over {HOSTS} huge cards", grown >> 20);

    let Err(err) = built else { panic!("the listing went past its bound, yet the agent was built") };
    assert_eq!(err.kind(), ErrorKind::Source, "{err}");
    let text = err.to_string();
    let failed: Vec<&str> = text.split("; remote_tools host ").collect();
    assert!(!text.contains("host \"huge00\""), "the first card fits: {text}");
    assert!(text.contains("host \"huge15\""), "the last host is past the bound: {text}");
    assert!(failed.len() >= HOSTS - 3, "32 MiB holds at most a few of these cards: {text}");
    for one in failed {
        assert!(one.contains("(NATS context memctx): remote agent \"huge"), "names the host: {one}");
        assert!(one.contains(" KiB read) would hold ") && one.contains(" MiB of tool specs on top of the "), "{one}");
        assert!(one.contains("past the 32.0 MiB bound on what the remote_tools listing may hold"), "{one}");
    }
    // Without the bound the specs alone would hold about 200 MiB; with it, at most 32 MiB and one card in flight.
    assert!(grown < 96 << 20, "peak memory grew by {} MiB", grown >> 20);
    drop(serving);
}
