//! The MCP session cap (issue 10, issue 24 item 11, MCP-24): at `max_sessions` a new session takes the place of the
//! least recently used session with no request in progress, so abandoned sessions cannot lock clients out; an
//! evicted session's next request gets 404 (on which SDK clients re-initialize); a new session is refused with 503
//! only when every session is busy; idle sessions expire; `DELETE` answers 204.
#![cfg(feature = "mcp")]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use futures::StreamExt;
use mcp_support::raw::*;
use mcp_support::*;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

fn tools_list(id: u32) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#)
}

fn echo_call(id: u32, word: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "echo", "arguments": {"words": [word]}}})
        .to_string()
}

/// Poll until `user` has been asked for approval `n` times: its call is then in progress on the server.
async fn until_asked(user: &TestClient, n: usize) {
    for _ in 0..400 {
        if user.asked().len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the approval request never reached the user");
}

#[tokio::test]
async fn mcp_24_at_max_sessions_the_least_recently_used_idle_session_makes_room() {
    let (server, addr, _dir) = mounted(&["max_sessions: 4"], "/").await;
    let http = reqwest::Client::new();
    let mut ids = Vec::new();
    for _ in 0..4 {
        ids.push(open_session(&http, addr).await.expect("a session below the cap"));
    }
    // The oldest session is used again, so the second-oldest is now the least recently used.
    assert_eq!(in_session(&http, addr, &ids[0], tools_list(2)).await.0, 200);
    let fifth = open_session(&http, addr).await.expect("an idle session makes room");
    assert_eq!(server.open_sessions(), 4, "the cap holds");
    let (status, body) = in_session(&http, addr, &ids[1], tools_list(3)).await;
    assert_eq!((status, body.as_str()), (404, "Not Found: Session not found"), "the evicted session is unknown");
    for id in [&ids[0], &ids[2], &ids[3], &fifth] {
        assert_eq!(in_session(&http, addr, id, tools_list(4)).await.0, 200, "session {id} is still open");
    }
    // A request that opens no session still goes on at the cap (the stateless lifecycle).
    let ping = http_post(addr).body(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#).send().await.unwrap();
    assert_ne!(ping.status().as_u16(), 503);
}

#[tokio::test]
async fn mcp_sessions_delete_answers_204_and_frees_a_place() {
    let (server, addr, _dir) = mounted(&["max_sessions: 4"], "/").await;
    let http = reqwest::Client::new();
    let id = open_session(&http, addr).await.unwrap();
    open_session(&http, addr).await.unwrap();
    let resp = http
        .delete(format!("http://{addr}/"))
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 204, "the official clients expect 200 or 204");
    assert_eq!(server.open_sessions(), 1);
    assert_eq!(in_session(&http, addr, &id, tools_list(2)).await.0, 404, "a deleted session is gone");
}

#[tokio::test]
async fn mcp_sessions_idle_past_session_idle_timeout_are_closed() {
    let (server, addr, _dir) = mounted(&["max_sessions: 2", "session_idle_timeout: 1s"], "/").await;
    let http = reqwest::Client::new();
    let first = open_session(&http, addr).await.unwrap();
    open_session(&http, addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // A late request does not revive an expired session.
    let (status, _) = in_session(&http, addr, &first, tools_list(3)).await;
    assert_eq!(status, 404, "an expired session is gone");
    open_session(&http, addr).await.expect("the idle sessions were reaped to make room");
    assert_eq!(server.open_sessions(), 1, "both idle sessions closed, the new one open");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mcp_24_two_thousand_abandoned_sessions_do_not_lock_a_new_client_out() {
    let (server, addr, _dir) = mounted(&[], "/").await;
    // One client, so the 2,000 handshakes reuse a few keep-alive connections; 16 at a time.
    let http = reqwest::Client::new();
    let before = rss_kib();
    let first = open_session(&http, addr).await.expect("the first session");
    let peak = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let answers: Vec<Result<String, (u16, String)>> = futures::stream::iter(1..2000)
        .map(|_| {
            let (http, server, peak) = (http.clone(), server.clone(), peak.clone());
            async move {
                let answer = open_session(&http, addr).await;
                peak.fetch_max(server.open_sessions(), std::sync::atomic::Ordering::SeqCst);
                answer
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    let after = rss_kib();
    let refused: Vec<_> = answers.iter().filter_map(|a| a.as_ref().err()).collect();
    assert!(refused.is_empty(), "no abandoned session is busy, so none is refused: {:?}", refused.first());
    let peak = peak.load(std::sync::atomic::Ordering::SeqCst);
    assert!(peak <= 256, "never more than max_sessions (256) open, saw {peak}");
    assert_eq!(server.open_sessions(), 256);
    assert_eq!(in_session(&http, addr, &first, tools_list(2)).await.0, 404, "the oldest was evicted");

    // At once: 20 SDK clients, 15 calls each, all succeed.
    let mut tasks = Vec::new();
    for c in 0..20 {
        let url = format!("http://{addr}/");
        tasks.push(tokio::spawn(async move {
            let client = connect(&url, TestClient::new(false, Answer::Decline), Era::Legacy).await;
            for i in 0..15 {
                let out = call(&client, "echo", json!({"words": [format!("c{c}i{i}")]})).await;
                assert_eq!(exec_json(&out)["output"], format!("echo: c{c}i{i}\n"));
            }
            client.cancel().await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert!(server.open_sessions() <= 256);
    eprintln!("RSS {before} KiB before, {after} KiB after 2,000 abandoned sessions (256 held, peak {peak})");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mcp_24_a_session_with_a_call_in_flight_is_never_evicted() {
    let (server, addr, dir) = mounted(&["max_sessions: 2"], "/").await;
    let url = format!("http://{addr}/");
    let http = reqwest::Client::new();
    // Session A: a gated call waits for its user's approval, so the call stays in progress as long as the test
    // wants.
    let (go_a, go_b) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let user_a = TestClient::new(true, Answer::ApproveAfter(go_a.clone()));
    let a = connect(&url, user_a.clone(), Era::Legacy).await;
    let call_a = tokio::spawn(async move { call(&a, "purge", json!({"target": "a"})).await });
    until_asked(&user_a, 1).await;

    // Abandoned sessions come and go around it: each new one evicts the idle one, never A.
    let mut idle = open_session(&http, addr).await.expect("a place is free");
    for _ in 0..3 {
        let next = open_session(&http, addr).await.expect("the idle session makes room, not the busy one");
        assert_eq!(server.open_sessions(), 2);
        assert_eq!(in_session(&http, addr, &idle, tools_list(2)).await.0, 404, "the idle one went");
        idle = next;
    }

    // Session B takes the idle place and starts its own gated call: now every session is busy.
    let user_b = TestClient::new(true, Answer::ApproveAfter(go_b.clone()));
    let b = connect(&url, user_b.clone(), Era::Legacy).await;
    let call_b = tokio::spawn(async move { call(&b, "purge", json!({"target": "b"})).await });
    until_asked(&user_b, 1).await;
    let (status, body) = open_session(&http, addr).await.expect_err("every session is busy");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("max_sessions 2") && body.contains("request in progress"), "{body}");
    assert_eq!(server.open_sessions(), 2, "a refused session allocates nothing");

    // A's call ends normally: it was never evicted.
    go_a.notify_one();
    assert_eq!(exec_json(&call_a.await.unwrap())["output"], "purged a\n");
    // A is idle once its response has been sent: it can now make room, and B, still busy, is kept.
    let opened = open_session_when_free(&http, addr).await;
    assert_eq!(in_session(&http, addr, &opened, tools_list(5)).await.0, 200, "A, idle again, made room");
    go_b.notify_one();
    assert_eq!(exec_json(&call_b.await.unwrap())["output"], "purged b\n");
    let ran = std::fs::read_to_string(dir.path().join("ran")).unwrap();
    assert_eq!(ran, "purge a\npurge b\n");
}

#[tokio::test]
async fn mcp_24_an_evicted_sessions_sdk_client_reinitializes_on_404() {
    let (server, addr, _dir) = mounted(&["max_sessions: 2"], "/").await;
    let http = reqwest::Client::new();
    let client = connect(&format!("http://{addr}/"), TestClient::new(false, Answer::Decline), Era::Legacy).await;
    assert_eq!(exec_json(&call(&client, "echo", json!({"words": ["before"]})).await)["output"], "echo: before\n");
    // Two newer sessions: the client's, the least recently used, is evicted.
    let newer = open_session(&http, addr).await.unwrap();
    open_session(&http, addr).await.unwrap();
    assert_eq!(in_session(&http, addr, &newer, tools_list(2)).await.0, 200);
    // rmcp's client gets the 404, opens a new session (evicting the idle raw one) and retries the call.
    assert_eq!(exec_json(&call(&client, "echo", json!({"words": ["after"]})).await)["output"], "echo: after\n");
    assert_eq!(server.open_sessions(), 2);
    client.cancel().await.unwrap();
}

/// The status of a GET opening session `id`'s standalone stream; the stream itself is dropped unread (it stays
/// open until its session closes).
async fn standalone_stream_status(http: &reqwest::Client, addr: std::net::SocketAddr, id: &str) -> u16 {
    let resp = http
        .get(format!("http://{addr}/"))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", id)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    resp.status().as_u16()
}

/// The races eviction must win: calls start on the least recently used sessions while new sessions are opened at
/// the cap. Each call either runs to its result (its session was marked busy before eviction could pick it) or gets
/// 404 (its session was gone before it arrived); never a 500, and never a 200 whose stream ends without the result
/// because the session was closed under it. A GET opening a session's standalone stream gets the stream or 404, never
/// a 500. Each `initialize` gets a session or, when every session is busy, 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mcp_24_calls_racing_eviction_either_run_or_get_404() {
    let (server, addr, _dir) = mounted(&["max_sessions: 6", "max_concurrent_tools: 8"], "/").await;
    let http = reqwest::Client::new();
    let (mut ran, mut gone, mut refused) = (0, 0, 0);
    for round in 0..15 {
        let mut sessions = Vec::new();
        for _ in 0..6 {
            sessions.push(open_session_when_free(&http, addr).await);
        }
        let calls = sessions.iter().enumerate().map(|(i, id)| {
            let (http, word) = (http.clone(), format!("r{round}s{i}"));
            async move {
                let (status, body) = in_session(&http, addr, id, echo_call(7, &word)).await;
                (status, body.contains(&format!("echo: {word}")), body)
            }
        });
        let streams = sessions.iter().map(|id| standalone_stream_status(&http, addr, id));
        let opens = (0..6).map(|_| open_session(&http, addr));
        let (calls, streams, opens) = tokio::join!(
            futures::future::join_all(calls),
            futures::future::join_all(streams),
            futures::future::join_all(opens)
        );
        for status in streams {
            assert!(status == 200 || status == 404, "a standalone stream racing eviction got {status}");
        }
        for (status, has_result, body) in calls {
            match status {
                200 if has_result => ran += 1,
                404 => gone += 1,
                _ => panic!("a call racing eviction got {status} without its result: {body:?}"),
            }
        }
        for open in opens {
            match open {
                Ok(_) => {}
                Err((503, _)) => refused += 1,
                Err(other) => panic!("an initialize racing calls got {other:?}"),
            }
        }
        assert!(server.open_sessions() <= 6);
    }
    eprintln!("racing eviction: {ran} calls ran, {gone} found their session gone, {refused} initializes refused");
    assert_eq!(ran + gone, 90);
}

/// A session being opened counts as busy until its `initialize` has been answered: a concurrent `initialize` at the
/// cap never evicts it half-open (its client would get a 500 for a session that vanished before its answer).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mcp_24_concurrent_initializes_at_the_cap_get_a_session_or_503() {
    let (server, addr, _dir) = mounted(&["max_sessions: 2"], "/").await;
    let http = reqwest::Client::new();
    let answers: Vec<Result<String, (u16, String)>> =
        futures::stream::iter(0..300).map(|_| open_session(&http, addr)).buffer_unordered(16).collect().await;
    let mut opened = 0;
    for answer in answers {
        match answer {
            Ok(_) => opened += 1,
            Err((503, _)) => {}
            Err(other) => panic!("an initialize racing others got {other:?}"),
        }
    }
    assert!(opened >= 2, "at least the first two opened, {opened} did");
    assert!(server.open_sessions() <= 2);
}
