//! MCP serving limits and robustness: the concurrency bound under load (MCP-16), tool timeouts killing the process
//! group (MCP-17), 1,000 calls from 50 clients, malformed and oversize requests, Host checks, graceful shutdown
//! (MCP-22), and DESIGN §6 invariant 10.
#![cfg(feature = "mcp")]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use fisk_ai::serve::mcp::McpServer;
use mcp_support::*;
use serde_json::json;
use std::time::Duration;

fn is_dead(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

async fn wait_for_file(path: &std::path::Path, lines: usize) -> Vec<String> {
    for _ in 0..400 {
        if let Ok(s) = std::fs::read_to_string(path) {
            let v: Vec<String> = s.lines().map(str::to_owned).collect();
            if v.len() >= lines {
                return v;
            }
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{} never got {lines} lines", path.display());
}

async fn wait_dead(pids: &[String]) {
    for _ in 0..200 {
        if pids.iter().all(|p| is_dead(p)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("processes still alive: {pids:?}");
}

/// The most processes that were between their `start` and `end` lines at once.
fn peak(log: &str) -> usize {
    let (mut now, mut max) = (0usize, 0usize);
    for line in log.lines() {
        if line.starts_with("start ") {
            now += 1;
            max = max.max(now);
        } else if line.starts_with("end ") {
            now -= 1;
        }
    }
    max
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mcp_16_concurrent_calls_never_exceed_max_concurrent_tools_across_clients() {
    let served = serve(&["max_concurrent_tools: 3"]).await;
    let log = served.path("slow.log");
    let mut tasks = Vec::new();
    for i in 0..12 {
        let era = ERAS[i % 2];
        let url = served.url.clone();
        let log = log.display().to_string();
        tasks.push(tokio::spawn(async move {
            let client = connect(&url, TestClient::new(false, Answer::Decline), era).await;
            let (a, b) =
                tokio::join!(call(&client, "slow", json!({"log": log})), call(&client, "slow", json!({"log": log})));
            client.cancel().await.unwrap();
            [a, b]
        }));
    }
    for t in tasks {
        for out in t.await.unwrap() {
            assert_eq!(exec_json(&out)["output"], "slept\n");
        }
    }
    let log = std::fs::read_to_string(&log).unwrap();
    assert_eq!(log.lines().count(), 48, "24 calls, each a start and an end");
    let peak = peak(&log);
    assert!(peak <= 3, "at most 3 processes at once, saw {peak}:\n{log}");
    assert!(peak >= 2, "the load did overlap (otherwise this test proves nothing), saw {peak}");
    served.stop().await.unwrap();
}

#[tokio::test]
async fn mcp_17_a_timed_out_call_is_an_error_and_its_process_group_is_killed() {
    let served = serve(&["tool_timeout: 500ms"]).await;
    for era in ERAS {
        let client = connect(&served.url, TestClient::new(false, Answer::Decline), era).await;
        let pidfile = served.path(&format!("pids-{era:?}"));
        let out = call(&client, "hang", json!({"pidfile": pidfile.display().to_string()})).await;
        assert!(is_error(&out), "{out:?}");
        assert!(text(&out).contains("did not finish within 500ms"), "{}", text(&out));
        let pids = wait_for_file(&pidfile, 2).await;
        wait_dead(&pids).await;
        client.cancel().await.unwrap();
    }
    served.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_thousand_calls_from_fifty_concurrent_clients_all_succeed() {
    let served = serve(&["max_concurrent_tools: 8"]).await;
    let mut tasks = Vec::new();
    for c in 0..50 {
        let url = served.url.clone();
        tasks.push(tokio::spawn(async move {
            let client = connect(&url, TestClient::new(false, Answer::Decline), ERAS[c % 2]).await;
            let mut ok = 0;
            for i in 0..20 {
                let out = call(&client, "echo", json!({"words": [format!("c{c}"), format!("i{i}")]})).await;
                assert_eq!(exec_json(&out)["output"], format!("echo: c{c} i{i}\n"));
                ok += 1;
            }
            client.cancel().await.unwrap();
            ok
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.expect("no client failed");
    }
    assert_eq!(total, 1000);
    served.stop().await.unwrap();
}

fn post(served: &Served) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .post(&served.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
}

async fn still_serves(served: &Served) {
    for era in ERAS {
        let client = connect(&served.url, TestClient::new(false, Answer::Decline), era).await;
        assert_eq!(client.list_all_tools().await.unwrap().len(), 9);
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn malformed_json_rpc_never_crashes_the_server() {
    let served = serve(&[]).await;
    let bodies = [
        "{not json",
        "",
        "[1,2,3]",
        "null",
        r#"{"jsonrpc":"2.0"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":"oops"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"no/such/method","params":{}}"#,
        r#"{"jsonrpc":"1.0","id":{"a":1},"method":"initialize"}"#,
        "\u{0}\u{1}\u{2}",
    ];
    for body in bodies {
        let resp = post(&served).body(body).send().await.unwrap();
        assert!(!resp.status().is_server_error(), "{body:?} -> {}", resp.status());
    }
    // A request without the Accept header the transport requires.
    let resp = reqwest::Client::new().post(&served.url).body("{}").send().await.unwrap();
    assert!(resp.status().is_client_error(), "{}", resp.status());
    still_serves(&served).await;
    served.stop().await.unwrap();
}

#[tokio::test]
async fn oversize_bodies_are_refused_and_the_server_keeps_serving() {
    let served = serve_with(&[], |b| b.max_request_body(64 * 1024)).await;
    let big = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#, "x".repeat(200 * 1024));
    let resp = post(&served).body(big.clone()).send().await.unwrap();
    assert_eq!(resp.status(), reqwest::StatusCode::PAYLOAD_TOO_LARGE);
    // Chunked, without a Content-Length.
    let stream = futures::stream::iter((0..64).map(|_| Ok::<_, std::io::Error>(vec![b'x'; 8 * 1024])));
    let resp = post(&served).body(reqwest::Body::wrap_stream(stream)).send().await.unwrap();
    assert_eq!(resp.status(), reqwest::StatusCode::PAYLOAD_TOO_LARGE);
    still_serves(&served).await;
    served.stop().await.unwrap();
}

#[tokio::test]
async fn host_headers_that_do_not_fit_a_loopback_bind_are_refused() {
    let served = serve(&[]).await;
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#;
    let resp = post(&served).header("host", "evil.example").body(init).send().await.unwrap();
    assert_eq!(resp.status(), reqwest::StatusCode::FORBIDDEN, "DNS-rebinding protection");
    let resp =
        post(&served).header("host", format!("localhost:{}", served.addr.port())).body(init).send().await.unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    served.stop().await.unwrap();
}

#[tokio::test]
async fn mcp_22_shutdown_lets_in_flight_calls_finish() {
    let served = serve(&[]).await;
    let client = connect(&served.url, TestClient::new(false, Answer::Decline), Era::Legacy).await;
    let log = served.path("slow.log");
    let arg = json!({"log": log.display().to_string()});
    let pending = tokio::spawn(async move { call(&client, "slow", arg).await });
    wait_for_file(&log, 1).await;
    served.trigger_stop();
    let out = pending.await.unwrap();
    assert_eq!(exec_json(&out)["output"], "slept\n", "the in-flight call completed");
    served.join().await.unwrap();
}

#[tokio::test]
async fn mcp_22_shutdown_stops_calls_still_running_after_the_grace_period() {
    let served = serve(&["tool_timeout: 1m"]).await;
    let client = connect(&served.url, TestClient::new(false, Answer::Decline), Era::Modern).await;
    let pidfile = served.path("pids");
    let arg = json!({"pidfile": pidfile.display().to_string()});
    let _pending = tokio::spawn(async move { client.call_tool(params("hang", arg)).await });
    let pids = wait_for_file(&pidfile, 2).await;
    served.trigger_stop();
    // It returns (after at most the 5 s grace), and what was still running is gone.
    served.join().await.unwrap();
    wait_dead(&pids).await;
}

#[tokio::test]
async fn invariant_10_mcp_binds_127_0_0_1_unless_told_otherwise_and_gated_tools_fail_closed() {
    // Binds loopback by default.
    let dir = tempfile::tempdir().unwrap();
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server = McpServer::builder().config(config(dir.path(), &[])).port(free).build().await.unwrap();
    assert_eq!(server.address(), "127.0.0.1");
    assert_eq!(server.confirm_over_mcp(), fisk_ai::config::ConfirmOverMcp::Always, "fail-closed default");
    let listener = server.bind().await.unwrap();
    let addr = listener.local_addr().unwrap();
    assert!(addr.ip().is_loopback() && addr.ip().to_string() == "127.0.0.1", "{addr}");
    drop(listener);

    // Gated tools fail closed for clients that cannot be asked, on both eras, under the default setting.
    let served = serve(&[]).await;
    for era in ERAS {
        let client = connect(&served.url, TestClient::new(false, Answer::Approve), era).await;
        for (name, args) in
            [("purge", json!({"target": "x"})), ("farm_feed", json!({})), ("read_file", json!({"path": "a"}))]
        {
            let out = call(&client, name, args).await;
            assert!(is_error(&out) && text(&out).contains("cannot be asked"), "{era:?} {name}: {out:?}");
        }
        client.cancel().await.unwrap();
    }
    assert!(served.ran().is_empty(), "no gated command ran: {:?}", served.ran());
    served.stop().await.unwrap();
}

#[tokio::test]
async fn browser_origins_that_are_not_local_are_refused_on_every_bind_dns_rebinding() {
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#;
    for bind in ["127.0.0.1", "0.0.0.0"] {
        let dir = tempfile::tempdir().unwrap();
        let address = format!("address: \"{bind}\"");
        // The origin checks hold without authentication too (AUTH-9's opt-out, for a server behind a gateway).
        let mcp = [address.as_str(), "insecure_no_auth: true"];
        let server = McpServer::builder().config(config(dir.path(), &mcp)).build().await.unwrap();
        let listener = tokio::net::TcpListener::bind((bind, 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = tokio_util::sync::CancellationToken::new();
        let task = tokio::spawn(server.serve(listener, stop.clone().cancelled_owned()));
        let http = reqwest::Client::new();
        let post = |origin: Option<String>| {
            let mut req = http
                .post(format!("http://127.0.0.1:{port}/"))
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(init);
            if let Some(o) = origin {
                req = req.header("origin", o);
            }
            req.send()
        };
        let evil = post(Some("http://evil.example".into())).await.unwrap();
        assert_eq!(evil.status(), reqwest::StatusCode::FORBIDDEN, "{bind}: a rebinding page's Origin is refused");
        let local = post(Some(format!("http://localhost:{port}"))).await.unwrap();
        assert!(local.status().is_success(), "{bind}: {}", local.status());
        let none = post(None).await.unwrap();
        assert!(none.status().is_success(), "{bind}: clients that are not browsers send no Origin");
        stop.cancel();
        task.await.unwrap().unwrap();
    }
}
