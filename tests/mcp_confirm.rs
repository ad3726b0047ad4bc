//! Confirmation over MCP (MCP-8..13): every elicitation answer on both protocol eras, clients that cannot be
//! asked under each `confirm_over_mcp`, the 2026-07-28 request state treated as untrusted, and approval waiting
//! outside the concurrency slot and the tool timeout. Real processes: a gated command that ran leaves a line in
//! the fake app's `ran` file.
#![cfg(feature = "mcp")]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use mcp_support::*;
use rmcp::model::{CallToolResponse, InputRequests};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

fn assert_denied(out: &rmcp::model::CallToolResult, needles: &[&str]) {
    assert!(is_error(out), "a denial is an error result: {out:?}");
    let t = text(out);
    assert!(t.contains("did not run"), "{t}");
    for n in needles {
        assert!(t.contains(n), "{n:?} in {t}");
    }
}

#[tokio::test]
async fn mcp_10_11_explicit_approval_runs_the_command_on_both_eras() {
    let served = serve(&[]).await;
    for era in ERAS {
        let user = TestClient::new(true, Answer::Approve);
        let client = connect(&served.url, user.clone(), era).await;
        let target = format!("{era:?}");
        let out = exec_json(&call(&client, "purge", json!({"target": target})).await);
        assert_eq!(out["output"], format!("purged {target}\n"));

        // MCP-10: the server, the resolved command line and the trigger; one required boolean `approve`.
        let asked = user.asked();
        assert_eq!(asked.len(), 1, "{era:?}");
        let msg = &asked[0].message;
        assert!(msg.contains("testsrv") && msg.contains(&format!("purge -- {target}")) && msg.contains("ai:confirm"));
        let schema = &asked[0].schema;
        assert_eq!(schema["required"], json!(["approve"]), "{schema}");
        assert_eq!(schema["properties"].as_object().unwrap().len(), 1, "{schema}");
        assert_eq!(schema["properties"]["approve"]["type"], "boolean", "{schema}");

        // A confirm_tags trigger is named too.
        let out = exec_json(&call(&client, "farm_feed", json!({"food": "hay"})).await);
        assert_eq!(out["output"], "fed --food=hay\n");
        assert!(user.asked()[1].message.contains("impact:rw"));

        // A built-in with confirm: true is gated the same way (GATE-3).
        std::fs::write(served.path("note.txt"), "moo").unwrap();
        let out = call(&client, "read_file", json!({"path": "note.txt"})).await;
        assert!(!is_error(&out), "{out:?}");
        assert!(text(&out).contains("moo"));
        assert_eq!(user.asked().len(), 3);
        client.cancel().await.unwrap();
    }
    assert_eq!(served.ran(), ["purge Legacy", "feed --food=hay", "purge Modern", "feed --food=hay"]);
    served.stop().await.unwrap();
}

#[tokio::test]
async fn mcp_11_every_answer_but_an_explicit_approval_denies_on_both_eras() {
    let served = serve_with(&[], |b| b.confirm_timeout(Duration::from_millis(300))).await;
    let cases: [(Answer, &[&str]); 5] = [
        (Answer::AcceptFalse, &["user's decision", "do not retry"]),
        (Answer::AcceptOther, &["user's decision", "do not retry"]),
        (Answer::Decline, &["user's decision", "do not retry"]),
        (Answer::Cancel, &["closed without a decision", "Do not retry"]),
        (Answer::Error, &["failed", "Do not retry"]),
    ];
    for era in ERAS {
        for (answer, needles) in cases.iter().cloned() {
            let user = TestClient::new(true, answer.clone());
            let client = connect(&served.url, user.clone(), era).await;
            let result = client.call_tool(params("purge", json!({"target": "x"}))).await;
            match (&answer, era) {
                // On 2026-07-28 the answer is produced by the client; a failing handler fails the client's own call,
                // so no approval ever reaches the server.
                (Answer::Error, Era::Modern) => assert!(result.is_err(), "{result:?}"),
                _ => assert_denied(&result.unwrap(), needles),
            }
            assert_eq!(user.asked().len(), 1, "{era:?} {answer:?}: the user was asked");
            client.cancel().await.unwrap();
        }
    }
    assert!(served.ran().is_empty(), "nothing ran: {:?}", served.ran());
    let events = served.events();
    assert!(events.iter().any(|e| e.starts_with("denied purge purge -- x Refused")), "{events:?}");
    assert!(events.iter().any(|e| e.starts_with("denied purge purge -- x Dismissed")), "{events:?}");
    served.stop().await.unwrap();
}

#[tokio::test]
async fn mcp_10_11_an_unanswered_request_times_out_and_denies_legacy() {
    let served = serve_with(&[], |b| b.confirm_timeout(Duration::from_millis(300))).await;
    let user = TestClient::new(true, Answer::Hang);
    let client = connect(&served.url, user.clone(), Era::Legacy).await;
    let out = call(&client, "purge", json!({"target": "x"})).await;
    assert_denied(&out, &["nobody answered", "within 300ms"]);
    assert_eq!(user.asked().len(), 1);
    assert!(served.ran().is_empty());
    served.stop().await.unwrap();
}

/// Drive the 2026-07-28 rounds by hand: the first call returns the approval request and the state.
async fn first_round(client: &Client, name: &str, args: Value) -> (InputRequests, String) {
    match client.call_tool_once(params(name, args)).await.unwrap() {
        CallToolResponse::InputRequired(r) => (r.input_requests.expect("requests"), r.request_state.expect("state")),
        other => panic!("expected input_required, got {other:?}"),
    }
}

fn answer(approve: bool) -> BTreeMap<String, Value> {
    BTreeMap::from([("approval".to_owned(), json!({"action": "accept", "content": {"approve": approve}}))])
}

async fn retry(
    client: &Client,
    name: &str,
    args: Value,
    state: &str,
    responses: BTreeMap<String, Value>,
) -> rmcp::model::CallToolResult {
    let p = params(name, args).with_request_state(state).with_input_responses(responses);
    match client.call_tool_once(p).await.unwrap() {
        CallToolResponse::Complete(r) => r,
        other => panic!("expected a final result, got {other:?}"),
    }
}

#[tokio::test]
async fn mcp_10_11_an_unanswered_request_times_out_and_denies_2026() {
    let served = serve_with(&[], |b| b.confirm_timeout(Duration::from_millis(300))).await;
    let client = connect(&served.url, TestClient::new(true, Answer::Approve), Era::Modern).await;
    let (requests, state) = first_round(&client, "purge", json!({"target": "x"})).await;
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["approval"]);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let out = retry(&client, "purge", json!({"target": "x"}), &state, answer(true)).await;
    assert_denied(&out, &["nobody answered"]);
    assert!(served.ran().is_empty());
    served.stop().await.unwrap();
}

#[tokio::test]
async fn mcp_11_client_returned_state_is_untrusted_2026() {
    let served = serve(&[]).await;
    let client = connect(&served.url, TestClient::new(true, Answer::Approve), Era::Modern).await;
    let args = || json!({"target": "x"});

    // A state the server never issued, with an "approval", runs nothing.
    let out = retry(&client, "purge", args(), "0000deadbeef", answer(true)).await;
    assert_denied(&out, &["does not match a pending approval"]);

    // An approval is bound to the exact call: other arguments or another tool are refused.
    let (_, state) = first_round(&client, "purge", args()).await;
    let out = retry(&client, "purge", json!({"target": "y"}), &state, answer(true)).await;
    assert_denied(&out, &["does not match"]);
    let (_, state) = first_round(&client, "purge", args()).await;
    let out = retry(&client, "farm_feed", json!({}), &state, answer(true)).await;
    assert_denied(&out, &["does not match"]);

    // The answer must be there and be an elicitation result.
    let (_, state) = first_round(&client, "purge", args()).await;
    let out = retry(&client, "purge", args(), &state, BTreeMap::new()).await;
    assert_denied(&out, &["no answer was sent"]);
    let (_, state) = first_round(&client, "purge", args()).await;
    let garbage = BTreeMap::from([("approval".to_owned(), json!({"approve": true}))]);
    let out = retry(&client, "purge", args(), &state, garbage).await;
    assert_denied(&out, &["not an elicitation result"]);

    // A real approval runs it once; replaying the same state does not run it again.
    let (_, state) = first_round(&client, "purge", args()).await;
    let out = retry(&client, "purge", args(), &state, answer(true)).await;
    assert_eq!(exec_json(&out)["output"], "purged x\n");
    let out = retry(&client, "purge", args(), &state, answer(true)).await;
    assert_denied(&out, &["does not match a pending approval"]);
    assert_eq!(served.ran(), ["purge x"], "ran exactly once");
    served.stop().await.unwrap();
}

#[tokio::test]
async fn mcp_8_12_clients_without_elicitation_under_each_confirm_over_mcp() {
    for (mode, runs) in [("always", false), ("auto", true), ("never", true)] {
        let served = serve(&[&format!("confirm_over_mcp: {mode}")]).await;
        for era in ERAS {
            let user = TestClient::new(false, Answer::Approve);
            let client = connect(&served.url, user.clone(), era).await;
            let out = call(&client, "purge", json!({"target": "x"})).await;
            if runs {
                assert_eq!(exec_json(&out)["output"], "purged x\n", "{mode} {era:?}");
            } else {
                assert_denied(&out, &["cannot be asked", "ai:confirm", "Do not retry"]);
            }
            assert!(user.asked().is_empty(), "{mode} {era:?}: a client without elicitation is never asked");
            client.cancel().await.unwrap();
        }
        let events = served.events();
        let ungated = events.iter().filter(|e| e.starts_with("warning ungated_over_mcp")).count();
        // MCP-12: under auto, each ungated run of a gated tool logs a warning naming the command and tag.
        assert_eq!(ungated, if mode == "auto" { 2 } else { 0 }, "{mode}: {events:?}");
        if mode == "auto" {
            assert!(events.iter().any(|e| e.contains("purge -- x") && e.contains("ai:confirm")), "{events:?}");
        }
        // MCP-13: each client's connection says how its gated tools behave.
        let expect = match mode {
            "always" => "Refused",
            _ => "RunUngated",
        };
        let connects: Vec<&String> = events.iter().filter(|e| e.starts_with("connected")).collect();
        assert_eq!(connects.len(), 2, "one per client, initialize and discover: {events:?}");
        assert!(connects.iter().any(|e| e.contains(" 2026-07-28 ")), "{connects:?}");
        assert!(
            connects.iter().all(|e| e.ends_with(expect) && e.contains("elicitation=false")),
            "{mode}: {connects:?}"
        );
        assert_eq!(served.ran().len(), if runs { 2 } else { 0 }, "{mode}");
        served.stop().await.unwrap();
    }
}

#[tokio::test]
async fn mcp_8_eliciting_clients_are_asked_under_auto_and_not_under_never() {
    for (mode, asked) in [("auto", 1), ("never", 0)] {
        let served = serve(&[&format!("confirm_over_mcp: {mode}")]).await;
        for era in ERAS {
            let user = TestClient::new(true, Answer::Decline);
            let client = connect(&served.url, user.clone(), era).await;
            let out = call(&client, "purge", json!({"target": "x"})).await;
            assert_eq!(is_error(&out), asked == 1, "{mode} {era:?}: {out:?}");
            assert_eq!(user.asked().len(), asked, "{mode} {era:?}");
            client.cancel().await.unwrap();
        }
        served.stop().await.unwrap();
    }
}

#[tokio::test]
async fn mcp_13_waiting_for_approval_holds_no_slot_and_is_outside_the_tool_timeout() {
    let served = serve(&["max_concurrent_tools: 1", "tool_timeout: 1s"]).await;
    let go = Arc::new(tokio::sync::Notify::new());
    let waiting = TestClient::new(true, Answer::ApproveAfter(go.clone()));
    let a = connect(&served.url, waiting.clone(), Era::Legacy).await;
    let gated = tokio::spawn(async move { call(&a, "purge", json!({"target": "late"})).await });
    // Wait until the approval request is with the user.
    for _ in 0..200 {
        if !waiting.asked().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(waiting.asked().len(), 1);

    // The only slot is free while the user thinks: another client's call runs to completion.
    let b = connect(&served.url, TestClient::new(false, Answer::Decline), Era::Modern).await;
    let out = tokio::time::timeout(Duration::from_secs(20), call(&b, "echo", json!({"words": ["free"]})))
        .await
        .expect("a call runs while an approval is pending");
    assert_eq!(exec_json(&out)["output"], "echo: free\n");

    // Answer after longer than tool_timeout: the approval wait is not part of the call's deadline.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    go.notify_one();
    let out = gated.await.unwrap();
    assert_eq!(exec_json(&out)["output"], "purged late\n");
    assert_eq!(served.ran(), ["purge late"]);
    served.stop().await.unwrap();
}

/// A value with a flag inside it, a right-to-left override, zero-width characters, a newline, a colour escape and a
/// single quote: what the user is asked about, and what the server logs, must show one quoted, visible value.
const HOSTILE_TARGET: &str = "ORDERS\u{202e} --dry-run\u{200b}\u{feff}\n\u{1b}[31mred's";
/// `purge` with [`HOSTILE_TARGET`], as the operator must see it.
const HOSTILE_SHOWN: &str = r"purge -- 'ORDERS\u{202e} --dry-run\u{200b}\u{feff} red'\''s'";

#[tokio::test]
async fn gate_8_mcp_10_the_elicitation_message_and_the_log_show_the_quoted_sanitized_command() {
    let served = serve(&[]).await;
    for era in ERAS {
        let user = TestClient::new(true, Answer::Approve);
        let client = connect(&served.url, user.clone(), era).await;
        let out = exec_json(&call(&client, "purge", json!({"target": HOSTILE_TARGET})).await);
        // EXEC-13: the result's command keeps the plain join.
        assert_eq!(out["command"], format!("purge -- {HOSTILE_TARGET}"), "{era:?}");
        let msg = &user.asked()[0].message;
        assert!(msg.contains(&format!("\n\n{HOSTILE_SHOWN}\n\n")), "{era:?}: {msg}");
        for hidden in ['\u{202e}', '\u{200b}', '\u{feff}', '\u{1b}'] {
            assert!(!msg.contains(hidden), "{era:?}: {hidden:?} reached the user: {msg:?}");
        }
        client.cancel().await.unwrap();
    }
    let events = served.events();
    let calls: Vec<&String> = events.iter().filter(|e| e.starts_with("call purge")).collect();
    assert_eq!(calls.len(), 2, "{events:?}");
    for line in calls {
        assert_eq!(line, &format!("call purge {HOSTILE_SHOWN}"), "MCP-19: the server log line");
    }
    served.stop().await.unwrap();
}
