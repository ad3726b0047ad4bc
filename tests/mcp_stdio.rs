//! MCP over stdio (STDIO-1..6) through the real `cli mcp --stdio` process and rmcp's client on both protocol
//! eras: listing and calls, elicitation-gated calls, oversize and malformed lines, the end of stdin and SIGTERM in
//! the middle of a call (the process group is killed), and a client's cancellation (CANCEL-1) over stdio and HTTP.
#![cfg(feature = "mcp")]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use common::procs::wait_gone;
use mcp_support::stdio::StdioServer;
use mcp_support::*;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::test]
async fn stdio_1_lists_and_calls_on_both_eras() {
    for era in ERAS {
        let (mut server, client) = StdioServer::connect(&[], TestClient::new(false, Answer::Decline), era).await;
        let tools = client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert!(names.contains(&"echo") && names.contains(&"purge"), "{era:?}: {names:?}");
        let out = exec_json(&call(&client, "echo", json!({"words": ["over", "stdio"]})).await);
        assert_eq!(out["output"], "echo: over stdio\n", "{era:?}");
        let bad = call(&client, "echo", json!({"nope": 1})).await;
        assert!(is_error(&bad), "a schema violation is an error result: {bad:?}");
        client.cancel().await.unwrap();
        assert!(server.exited().await.success(), "{}", server.stderr());
        assert!(server.stderr().contains("serving over stdio"), "startup lines go to stderr: {}", server.stderr());
    }
}

#[tokio::test]
async fn stdio_2_gated_calls_ask_through_elicitation_on_both_eras() {
    for era in ERAS {
        for (answer, runs) in [(Answer::Approve, true), (Answer::Decline, false), (Answer::Cancel, false)] {
            let user = TestClient::new(true, answer.clone());
            let (mut server, client) = StdioServer::connect(&[], user.clone(), era).await;
            let out = call(&client, "purge", json!({"target": "t"})).await;
            assert_eq!(user.asked().len(), 1, "{era:?} {answer:?}: the user was asked once");
            assert!(user.asked()[0].message.contains("purge -- t"), "{:?}", user.asked());
            if runs {
                assert_eq!(exec_json(&out)["output"], "purged t\n");
                assert_eq!(server.ran(), ["purge t"]);
            } else {
                assert!(is_error(&out) && text(&out).contains("did not run"), "{era:?} {answer:?}: {out:?}");
                assert!(server.ran().is_empty(), "{era:?} {answer:?}: {:?}", server.ran());
            }
            client.cancel().await.unwrap();
            server.exited().await;
        }
        // A client that cannot be asked is refused under the default confirm_over_mcp: always.
        let user = TestClient::new(false, Answer::Approve);
        let (mut server, client) = StdioServer::connect(&[], user.clone(), era).await;
        let out = call(&client, "purge", json!({"target": "t"})).await;
        assert!(is_error(&out) && text(&out).contains("did not run"), "{era:?}: {out:?}");
        assert!(user.asked().is_empty() && server.ran().is_empty());
        client.cancel().await.unwrap();
        server.exited().await;
    }
}

/// Send raw lines and read the answers: stdout holds JSON-RPC and nothing else.
#[tokio::test]
async fn stdio_3_oversize_and_malformed_lines_are_answered_and_the_session_goes_on() {
    let (mut server, stdout, mut stdin) = StdioServer::start(&[]);
    let mut answers = BufReader::new(stdout).lines();
    let mut next = async || -> Value {
        let line = tokio::time::timeout(Duration::from_secs(30), answers.next_line()).await.unwrap().unwrap();
        serde_json::from_str(&line.expect("an answer")).expect("stdout carries only JSON-RPC")
    };
    stdin.write_all(b"this is not json\n").await.unwrap();
    assert_eq!(next().await["error"]["code"], -32700);
    // Past the default 4 MiB bound: answered, never held, and the next line is read.
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}\n",
        "x".repeat(5 << 20)
    );
    stdin.write_all(big.as_bytes()).await.unwrap();
    let answer = next().await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("longer than"), "{answer}");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    stdin.write_all(format!("{init}\n").as_bytes()).await.unwrap();
    let answer = next().await;
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["result"]["serverInfo"]["name"], "testsrv", "{answer}");
    drop(stdin);
    assert!(server.exited().await.success());
}

/// A `hang` call that is running: its two background sleepers' pids.
async fn hanging(server: &StdioServer, client: &Client) -> (tokio::task::JoinHandle<()>, [i32; 2]) {
    let pidfile = server.path("pids");
    let peer = client.peer().clone();
    let args = json!({"pidfile": pidfile.display().to_string()});
    let task = tokio::spawn(async move {
        let _ = peer.call_tool(params("hang", args)).await;
    });
    (task, pids(&pidfile).await)
}

#[tokio::test]
async fn stdio_4_the_end_of_stdin_mid_call_kills_the_process_group_and_the_server_exits() {
    for era in ERAS {
        let (mut server, client) = StdioServer::connect(&[], TestClient::new(false, Answer::Decline), era).await;
        let (_task, [a, b]) = hanging(&server, &client).await;
        assert!(common::procs::alive(a) && common::procs::alive(b));
        client.cancel().await.unwrap(); // closes the server's stdin
        assert!(server.exited().await.success(), "{}", server.stderr());
        wait_gone(a, "a sleeper of the call").await;
        wait_gone(b, "a sleeper of the call").await;
    }
}

#[tokio::test]
async fn stdio_4_sigterm_or_sigint_mid_call_kills_the_process_group_and_the_server_exits() {
    use nix::sys::signal::Signal;
    for signal in [Signal::SIGTERM, Signal::SIGINT] {
        let (mut server, client) =
            StdioServer::connect(&[], TestClient::new(false, Answer::Decline), Era::Legacy).await;
        let (_task, [a, b]) = hanging(&server, &client).await;
        let pid = nix::unistd::Pid::from_raw(server.child.id().unwrap() as i32);
        nix::sys::signal::kill(pid, signal).unwrap();
        // Killed by the signal would be a failure: the server handles it and exits on its own.
        assert!(server.exited().await.success(), "{signal}: {}", server.stderr());
        wait_gone(a, "a sleeper of the call").await;
        wait_gone(b, "a sleeper of the call").await;
    }
}

/// CANCEL-1: `notifications/cancelled` kills the call's process group and frees its slot: with one slot, the next
/// call runs (it would wait out the 60 s timeout otherwise).
#[tokio::test]
async fn cancel_1_a_cancelled_call_is_killed_and_its_slot_freed_over_stdio_and_http() {
    let limits = ["max_concurrent_tools: 1", "tool_timeout: 60s"];
    for era in ERAS {
        let (mut server, client) = StdioServer::connect(&limits, TestClient::new(false, Answer::Decline), era).await;
        cancel_then_call_again(&client, &server.path(&format!("pids-{era:?}"))).await;
        client.cancel().await.unwrap();
        server.exited().await;
        assert!(server.stderr().contains("cancelled by the client: hang"), "{}", server.stderr());

        let served = serve(&limits).await;
        let client = connect(&served.url, TestClient::new(false, Answer::Decline), era).await;
        cancel_then_call_again(&client, &served.path(&format!("pids-{era:?}"))).await;
        client.cancel().await.unwrap();
        let events = served.events();
        served.stop().await.unwrap();
        assert!(events.iter().any(|e| e.starts_with("call hang")), "{events:?}");
        assert!(events.iter().any(|e| e.starts_with("cancelled hang")), "{events:?}");
    }
}

/// The server's resident memory in KiB, from `/proc`.
fn rss_kib(server: &StdioServer) -> u64 {
    let pid = server.child.id().expect("running");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Write `initialize` and `notifications/initialized` as raw lines, and read the first answer.
async fn raw_hello(
    stdin: &mut tokio::process::ChildStdin,
    answers: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
) {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let hello = format!("{init}\n{}\n", json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    stdin.write_all(hello.as_bytes()).await.unwrap();
    let line = tokio::time::timeout(Duration::from_secs(30), answers.next_line()).await.unwrap().unwrap().unwrap();
    assert!(line.contains("serverInfo"), "{line}");
}

/// Hostile: a client that pipelines requests and never reads its stdout. The server stops reading once a bounded
/// number of replies wait to be written (the client's writes then block), its memory stays flat instead of
/// holding every reply, and once the client reads, every request is answered.
#[tokio::test]
async fn stdio_3_a_client_that_never_reads_is_no_longer_read_and_loses_nothing() {
    let (mut server, stdout, mut stdin) = StdioServer::start(&[]);
    let mut answers = BufReader::new(stdout).lines();
    raw_hello(&mut stdin, &mut answers).await;
    let list = |id: usize| format!("{}\n", json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
    // One listing first, so what a listing pages in is counted before the flood.
    stdin.write_all(list(1).as_bytes()).await.unwrap();
    let first: Value = serde_json::from_str(&answers.next_line().await.unwrap().unwrap()).unwrap();
    let before = rss_kib(&server);
    // Each reply is the whole listing: 20,000 of them held would be tens of MB.
    let n = 20_000;
    let flood: String = (2..n + 2).map(list).collect();
    let writer = tokio::spawn(async move {
        stdin.write_all(flood.as_bytes()).await.unwrap();
        stdin
    });
    // The writes cannot all go through while nobody reads: the server stopped reading.
    let blocked = tokio::time::timeout(Duration::from_secs(2), async {
        while !writer.is_finished() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(blocked.is_err(), "the server read the whole flood without its replies being read");
    let grown = rss_kib(&server).saturating_sub(before);
    assert!(grown < 8 * 1024, "the server holds {grown} KiB more while its replies are unread");
    let mut ids = std::collections::HashSet::new();
    while ids.len() < n {
        let line = tokio::time::timeout(Duration::from_secs(60), answers.next_line()).await.unwrap().unwrap().unwrap();
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["result"]["tools"], first["result"]["tools"], "every request gets the listing");
        assert!(ids.insert(answer["id"].as_u64().unwrap()), "answered twice: {}", answer["id"]);
    }
    assert_eq!(ids, (2..n as u64 + 2).collect(), "every request was answered");
    drop(writer.await.unwrap());
    assert!(server.exited().await.success());
}

/// A repeated argument key over stdio is refused as over HTTP: rmcp's decoding keeps only the last value, so the
/// line is read as the client sent it.
#[tokio::test]
async fn stdio_1_a_repeated_argument_key_is_refused_as_over_http() {
    let (mut server, stdout, mut stdin) = StdioServer::start(&[]);
    let mut answers = BufReader::new(stdout).lines();
    raw_hello(&mut stdin, &mut answers).await;
    // The method as usual, and written with an escape, which is the same method to rmcp.
    for (id, method) in [(5, "tools/call"), (6, "tools\\/call")] {
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"name":"echo","arguments":{{"words":["a"],"words":["b"]}}}}}}"#
        );
        stdin.write_all(format!("{call}\n").as_bytes()).await.unwrap();
        let line = tokio::time::timeout(Duration::from_secs(30), answers.next_line()).await.unwrap().unwrap().unwrap();
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["result"]["isError"], true, "{method}: {answer}");
        let text = answer["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("duplicate property \"words\""), "{method}: {text}");
    }
    // serde_json's private key, which rmcp's `Value` would unwrap, before a key given twice: refused as sent, the
    // probe not stopping short of the second key, and never read as what it wraps.
    let wrapped = r#"{"words":{"$serde_json::private::RawValue":"[\"a\"]"},"words":["b"]}"#;
    let call =
        format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"echo","arguments":{wrapped}}}}}"#);
    stdin.write_all(format!("{call}\n").as_bytes()).await.unwrap();
    let line = tokio::time::timeout(Duration::from_secs(30), answers.next_line()).await.unwrap().unwrap().unwrap();
    let answer: Value = serde_json::from_str(&line).unwrap();
    assert_eq!((&answer["id"], &answer["result"]["isError"]), (&json!(7), &json!(true)), "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(r#"reserved property "$serde_json::private::RawValue""#), "{text}");
    assert!(server.ran().is_empty(), "nothing ran: {:?}", server.ran());
    drop(stdin);
    assert!(server.exited().await.success());
}

/// Hostile: a client that pipelines calls without end. Past 256 calls in progress (running, or waiting for one
/// of the `max_concurrent_tools` slots) a call is answered with an error at once, not held; the session goes on.
#[tokio::test]
async fn stdio_6_calls_past_the_bound_in_progress_are_refused_at_once() {
    let (mut server, stdout, mut stdin) = StdioServer::start(&["max_concurrent_tools: 1"]);
    let mut answers = BufReader::new(stdout).lines();
    raw_hello(&mut stdin, &mut answers).await;
    let pidfile = server.path("pids").display().to_string();
    // One runs and hangs; the rest wait for its slot.
    let calls: String = (1..=300)
        .map(|id| {
            let params = json!({"name": "hang", "arguments": {"pidfile": pidfile}});
            format!("{}\n", json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}))
        })
        .collect();
    stdin.write_all(calls.as_bytes()).await.unwrap();
    let mut refused = Vec::new();
    while refused.len() < 300 - 256 {
        let line = tokio::time::timeout(Duration::from_secs(30), answers.next_line()).await.unwrap().unwrap().unwrap();
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert!(answer["error"]["message"].as_str().unwrap().contains("256 calls are already in progress"), "{answer}");
        refused.push(answer["id"].as_u64().unwrap());
    }
    assert!(refused.iter().all(|&id| id > 256), "only calls past the bound are refused: {refused:?}");
    // The session goes on.
    stdin.write_all(format!("{}\n", json!({"jsonrpc": "2.0", "id": 999, "method": "ping"})).as_bytes()).await.unwrap();
    let line = tokio::time::timeout(Duration::from_secs(30), answers.next_line()).await.unwrap().unwrap().unwrap();
    assert_eq!(serde_json::from_str::<Value>(&line).unwrap()["id"], 999, "{line}");
    let [a, b] = pids(&server.path("pids")).await;
    drop(stdin);
    assert!(server.exited().await.success());
    wait_gone(a, "a sleeper of the call").await;
    wait_gone(b, "a sleeper of the call").await;
}

/// CANCEL-1: a cancel for an id the server never saw, or for a call that already finished, is ignored: nothing is
/// answered or logged for it, and the session goes on.
#[tokio::test]
async fn cancel_1_a_cancel_for_an_unknown_or_finished_id_is_ignored() {
    let (mut server, stdout, mut stdin) = StdioServer::start(&[]);
    let mut answers = BufReader::new(stdout).lines();
    raw_hello(&mut stdin, &mut answers).await;
    let call = |id: u64| {
        let params = json!({"name": "echo", "arguments": {"words": [format!("word{id}")]}});
        format!("{}\n", json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}))
    };
    let cancel = |id: Value| {
        let params = json!({"requestId": id, "reason": "test"});
        format!("{}\n", json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}))
    };
    let mut answer = async || -> Value {
        let line = tokio::time::timeout(Duration::from_secs(30), answers.next_line()).await.unwrap().unwrap().unwrap();
        serde_json::from_str(&line).unwrap()
    };
    stdin.write_all(call(1).as_bytes()).await.unwrap();
    let first = answer().await;
    assert_eq!(first["id"], 1, "{first}");
    // The finished call's id, an id never sent, and one of another type.
    let cancels = [cancel(json!(1)), cancel(json!(424_242)), cancel(json!("never-sent"))].concat();
    stdin.write_all(cancels.as_bytes()).await.unwrap();
    stdin.write_all(call(2).as_bytes()).await.unwrap();
    let second = answer().await;
    assert_eq!(second["id"], 2, "nothing answers a notification: {second}");
    assert_eq!(second["result"]["isError"], false, "{second}");
    assert!(second["result"]["content"][0]["text"].as_str().unwrap().contains("word2"), "{second}");
    drop(stdin);
    assert!(server.exited().await.success());
}
