//! MCPI-8 with EXEC-12's bounded memory: a server answering 100 MB. Over stdio the reply is reduced to its head and
//! tail while it streams in, so the result is capped exactly as EXEC-12; over HTTP rmcp refuses a body over its
//! 16 MiB limit, which becomes an error result naming the server. Either way this process's peak memory stays far
//! below the reply's size, and the server stays usable. Alone in its own test binary so the peak (`VmHWM`) is this
//! test's.
#![cfg(feature = "mcp")]

mod common;
#[path = "../examples/mcp_fixture_server.rs"]
#[allow(dead_code)]
mod fixture;

use fisk_ai::ToolSource;
use fisk_ai::source::mcp::McpImport;
use fisk_ai::tool::{CallContext, ToolInput};

const HUNDRED_MB: u64 = 100 << 20;

/// This process's peak resident set, in bytes.
fn peak() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

#[tokio::test]
async fn mcpi_8_a_100_mb_result_is_capped_over_stdio_and_refused_over_http_in_bounded_memory() {
    let command = vec![common::example("mcp_fixture_server").display().to_string()];
    let loaded = McpImport::stdio("huge", command).unwrap().load().await.unwrap();
    let big = loaded.tools.iter().find(|t| t.spec().name() == "big").unwrap().clone();
    let before = peak();
    let input = ToolInput::from_json(format!(r#"{{"bytes": {HUNDRED_MB}}}"#)).unwrap();
    let out = big.call(&input, &CallContext::new()).await;
    let grown = peak().saturating_sub(before);
    assert!(!out.is_error(), "{}", &out.content()[..out.content().len().min(300)]);
    let text = out.content();
    assert_eq!(text.len(), 65536 + "\n...[output truncated]...\n".len(), "capped exactly as EXEC-12");
    assert!(text.starts_with("HEADxxx") && text.ends_with("xxxTAIL"));
    // Bounded: the stdio reader holds at most its 8 MiB line limit of one message, never the 100 MB.
    assert!(grown < 48 << 20, "peak memory grew by {} MiB for a 100 MiB reply", grown >> 20);
    let echo = loaded.tools.iter().find(|t| t.spec().name() == "echo").unwrap();
    let after = echo.call(&ToolInput::from_json(r#"{"text": "still here"}"#).unwrap(), &CallContext::new()).await;
    assert_eq!(after.content(), "still here");

    // HTTP: the same reply is refused past rmcp's 16 MiB body limit, as an error result naming the server.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    // The server runs in this process here, so its own copy of the reply is not measured; 40 MiB is over the limit.
    tokio::spawn(async move { fixture::serve_http(fixture::Fixture::from_args(&[]), listener).await.unwrap() });
    let loaded = McpImport::http("web", url).unwrap().load().await.unwrap();
    let big = loaded.tools.iter().find(|t| t.spec().name() == "big").unwrap().clone();
    let input = ToolInput::from_json(format!(r#"{{"bytes": {}}}"#, 40 << 20)).unwrap();
    let out = big.call(&input, &CallContext::new()).await;
    assert!(out.is_error(), "over the transport limit: {}", &out.content()[..out.content().len().min(300)]);
    assert!(out.content().contains("mcp server web"), "{}", out.content());
    let echo = loaded.tools.iter().find(|t| t.spec().name() == "echo").unwrap();
    let after = echo.call(&ToolInput::from_json(r#"{"text": "again"}"#).unwrap(), &CallContext::new()).await;
    assert_eq!(after.content(), "again", "the next call reconnects: the HTTP server stays usable");
}
