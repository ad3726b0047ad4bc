//! Approvals over NATS (APPR-1..6) against a real nats-server: approve, deny and expiry; two operators racing; a
//! forged and a malformed decision; the decision honoured on resume; a missing bucket refused with its fix; and
//! `cli approvals` deciding a call a gate is waiting on.
#![cfg(feature = "nats")]

mod common;

use async_nats::jetstream::{self, kv};
use common::nats::NatsServer;
use fisk_ai::gate::{ConfirmGate, ConfirmRequest, Decision};
use fisk_ai::nats::NatsConnection;
use fisk_ai::nats::approvals::{ApprovalBook, ApprovalRecord, NatsGate};
use serde_json::json;
use std::time::Duration;

struct Setup {
    _server: NatsServer,
    nats: NatsConnection,
    store: kv::Store,
}

async fn setup() -> Setup {
    let server = NatsServer::start();
    let client = async_nats::connect(server.url()).await.unwrap();
    // As `nats kv add APPROVALS --history 1` makes it (async-nats cannot create one on nats-server 2.9).
    common::kv::create_bucket(&client, "APPROVALS").await;
    let store = jetstream::new(client.clone()).get_key_value("APPROVALS").await.unwrap();
    Setup { _server: server, nats: NatsConnection::borrowed(client, "test"), store }
}

fn request(session: &str, call: &str) -> ConfirmRequest {
    ConfirmRequest::new("stream_rm", "stream rm", "nats stream rm ORDERS --force", "ai:confirm")
        .with_input(json!({"stream": "ORDERS"}))
        .with_call(Some(session), call)
}

/// A gate waiting on `req` in the background.
fn ask(gate: &NatsGate, req: ConfirmRequest) -> tokio::task::JoinHandle<Decision> {
    let gate = gate.clone();
    tokio::spawn(async move { gate.confirm(&req).await })
}

/// The one pending approval, once the gate has written it.
async fn pending(book: &ApprovalBook) -> ApprovalRecord {
    for _ in 0..500 {
        if let Some(r) = book.list().await.unwrap().into_iter().find(|r| r.state == "pending") {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no pending approval appeared");
}

#[tokio::test]
#[ignore = "needs nats-server"]
async fn appr_2_3_approve_runs_once_and_deny_declines() {
    let s = setup().await;
    let book = ApprovalBook::bind(&s.nats, "APPROVALS").await.unwrap();
    let gate = NatsGate::new(book.clone(), Duration::from_secs(30));
    let waiting = ask(&gate, request("run-1", "toolu_1"));
    let p = pending(&book).await;
    assert_eq!(
        (p.tool.as_str(), p.command_line.as_str(), p.trigger.as_str()),
        ("stream_rm", "nats stream rm ORDERS --force", "ai:confirm")
    );
    assert_eq!(p.session.as_deref(), Some("run-1"));
    let decided = book.decide(&p.id, true, "alice").await.unwrap();
    assert_eq!((decided.state.as_str(), decided.decided_by.as_deref()), ("approved", Some("alice")));
    assert_eq!(waiting.await.unwrap(), Decision::Once);

    let waiting = ask(&gate, request("run-1", "toolu_2"));
    let p = pending(&book).await;
    book.decide(&p.id, false, "bob").await.unwrap();
    assert_eq!(waiting.await.unwrap(), Decision::Decline);
    let again = book.decide(&p.id, true, "carol").await.unwrap_err().to_string();
    assert!(again.contains("already denied") && again.contains("bob"), "{again}");
    assert!(book.decide("no-such-id", true, "x").await.unwrap_err().to_string().contains("no approval no-such-id"));
}

#[tokio::test]
#[ignore = "needs nats-server"]
async fn appr_5_nobody_answering_declines_and_a_late_approve_is_refused() {
    let s = setup().await;
    let book = ApprovalBook::bind(&s.nats, "APPROVALS").await.unwrap();
    let gate = NatsGate::new(book.clone(), Duration::from_millis(400));
    assert_eq!(gate.confirm(&request("run-2", "toolu_1")).await, Decision::Decline);
    let records = book.list().await.unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].state, "expired");
    let late = book.decide(&records[0].id, true, "alice").await.unwrap_err().to_string();
    assert!(late.contains("already expired"), "{late}");
}

#[tokio::test]
#[ignore = "needs nats-server"]
async fn appr_3_two_operators_racing_exactly_one_decision_wins() {
    let s = setup().await;
    let book = ApprovalBook::bind(&s.nats, "APPROVALS").await.unwrap();
    let gate = NatsGate::new(book.clone(), Duration::from_secs(30));
    for round in 0..5 {
        let waiting = ask(&gate, request("run-3", &format!("toolu_{round}")));
        let p = pending(&book).await;
        let (a, b) = tokio::join!(book.decide(&p.id, true, "alice"), book.decide(&p.id, false, "bob"));
        assert!(a.is_ok() != b.is_ok(), "exactly one wins: {a:?} / {b:?}");
        let loser = a.as_ref().err().or(b.as_ref().err()).unwrap().to_string();
        assert!(loser.contains("your decision was not recorded") || loser.contains("already"), "{loser}");
        let want = if a.is_ok() { Decision::Once } else { Decision::Decline };
        assert_eq!(waiting.await.unwrap(), want, "the gate follows the winner");
    }
}

#[tokio::test]
#[ignore = "needs nats-server"]
async fn appr_4_a_forged_or_malformed_decision_declines() {
    let s = setup().await;
    let book = ApprovalBook::bind(&s.nats, "APPROVALS").await.unwrap();
    let gate = NatsGate::new(book.clone(), Duration::from_secs(30));
    // A decision for another run, written over this call's record.
    let waiting = ask(&gate, request("run-4", "toolu_1"));
    let p = pending(&book).await;
    let forged = json!({
        "version": 1, "id": p.id, "state": "approved", "tool": p.tool, "command": p.command,
        "command_line": p.command_line, "trigger": p.trigger, "session": "another-run", "call_id": p.call_id,
        "input_digest": p.input_digest, "created_ms": p.created_ms, "expires_ms": p.expires_ms,
        "decided_by": "mallory", "decided_ms": p.created_ms + 1
    });
    s.store.put(&p.id, forged.to_string().into()).await.unwrap();
    assert_eq!(waiting.await.unwrap(), Decision::Decline, "a decision for another run declines");
    // Garbage over the record.
    let waiting = ask(&gate, request("run-4", "toolu_2"));
    let p = pending(&book).await;
    s.store.put(&p.id, "{\"state\": \"approved\"".into()).await.unwrap();
    assert_eq!(waiting.await.unwrap(), Decision::Decline, "a malformed decision declines");
    // An approval with another command line (the same call, changed after it was asked).
    let waiting = ask(&gate, request("run-4", "toolu_3"));
    let p = pending(&book).await;
    let mut changed = p.clone();
    changed.command_line = "nats stream rm EVERYTHING --force".into();
    changed.state = "approved".into();
    changed.decided_by = Some("mallory".into());
    changed.decided_ms = Some(p.created_ms);
    s.store.put(&p.id, serde_json::to_vec(&changed).unwrap().into()).await.unwrap();
    assert_eq!(waiting.await.unwrap(), Decision::Decline);
    // A deleted record.
    let waiting = ask(&gate, request("run-4", "toolu_4"));
    let p = pending(&book).await;
    s.store.delete(&p.id).await.unwrap();
    assert_eq!(waiting.await.unwrap(), Decision::Decline);
}

#[tokio::test]
#[ignore = "needs nats-server"]
async fn appr_6_a_decision_made_while_nobody_waited_is_honoured_on_resume() {
    let s = setup().await;
    let book = ApprovalBook::bind(&s.nats, "APPROVALS").await.unwrap();
    let gate = NatsGate::new(book.clone(), Duration::from_secs(30));
    // The worker asking dies (its task is gone); the operator approves afterwards.
    let waiting = ask(&gate, request("run-5", "toolu_1"));
    let p = pending(&book).await;
    waiting.abort();
    book.decide(&p.id, true, "alice").await.unwrap();
    // The run resumed elsewhere asks the same call again: the decision stands, nothing new is asked.
    let resumed = NatsGate::new(ApprovalBook::bind(&s.nats, "APPROVALS").await.unwrap(), Duration::from_secs(30));
    assert_eq!(resumed.confirm(&request("run-5", "toolu_1")).await, Decision::Once);
    assert_eq!(book.list().await.unwrap().len(), 1, "no second approval was asked");
    // Another call of the same run is a new question.
    let waiting = ask(&resumed, request("run-5", "toolu_2"));
    let p2 = pending(&book).await;
    assert_ne!(p2.id, p.id);
    book.decide(&p2.id, false, "alice").await.unwrap();
    assert_eq!(waiting.await.unwrap(), Decision::Decline);
}

#[tokio::test]
#[ignore = "needs nats-server"]
async fn appr_1_a_missing_bucket_is_refused_with_its_fix() {
    let s = setup().await;
    let err = ApprovalBook::bind(&s.nats, "NOPE").await.unwrap_err().to_string();
    assert!(err.contains("bucket NOPE does not exist") && err.contains("nats kv add NOPE"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nats-server"]
async fn appr_3_cli_approvals_lists_and_decides_what_a_gate_waits_on() {
    let s = setup().await;
    let dir = tempfile::tempdir().unwrap();
    let contexts = common::nats::context_dir("test", json!({ "url": s._server.url() }), false);
    let xdg = common::nats::xdg_home_for(contexts.path());
    let config = dir.path().join("agent.yaml");
    std::fs::write(
        &config,
        "identity: ops\nsystem_prompt: x\nnats_context: test\nllm:\n  model: m\nharness:\n  approvals:\n    backend: nats\n    bucket: APPROVALS\n",
    )
    .unwrap();
    let cli = |args: &[&str]| {
        std::process::Command::new(common::example("cli"))
            .arg("approvals")
            .args(args)
            .arg("--config")
            .arg(&config)
            .env("XDG_CONFIG_HOME", xdg.path())
            .output()
            .unwrap()
    };
    let text = |o: &std::process::Output| {
        (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let empty = cli(&["list"]);
    assert!(text(&empty).0.contains("No pending approvals in bucket APPROVALS"), "{:?}", text(&empty));
    let book = ApprovalBook::bind(&s.nats, "APPROVALS").await.unwrap();
    let gate = NatsGate::new(book.clone(), Duration::from_secs(60));
    let waiting = ask(&gate, request("ticket-1", "toolu_1"));
    let p = pending(&book).await;
    let listed = cli(&["list"]);
    let (out, err) = text(&listed);
    assert!(
        out.contains(&p.id) && out.contains("nats stream rm ORDERS --force") && out.contains("ticket-1"),
        "{out}{err}"
    );
    let approved = cli(&["approve", &p.id, "--by", "alice"]);
    assert!(approved.status.success(), "{:?}", text(&approved));
    assert_eq!(waiting.await.unwrap(), Decision::Once);
    let twice = cli(&["deny", &p.id]);
    let (_, err) = text(&twice);
    assert!(!twice.status.success() && err.contains("already approved") && err.contains("alice"), "{err}");
}
