//! MCPI-8 with EXEC-12's bounded memory: a server answering 100 MB, over stdio and over streamable HTTP (a
//! separate server process, so its own copy of the reply is not in this process). Either way the reply is reduced
//! to its head and tail while it streams in, the result is capped exactly as EXEC-12, this process's peak memory
//! stays far below the reply's size, and the server stays usable. Alone in its own test binary so the peak
//! (`VmHWM`) is this test's.
#![cfg(feature = "mcp")]

mod common;
#[path = "../examples/mcp_fixture_server.rs"]
#[allow(dead_code)]
mod fixture;

use common::memory::{peak, reset_peak};
use fisk_ai::source::mcp::McpImport;
use fisk_ai::tool::{CallContext, ToolInput};

const HUNDRED_MB: u64 = 100 << 20;

#[tokio::test]
async fn mcpi_8_a_100_mb_result_is_capped_over_stdio_and_http_in_bounded_memory() {
    let command = vec![common::example("mcp_fixture_server").display().to_string()];
    let loaded = McpImport::stdio("huge", command).unwrap().load().await.unwrap();
    let big = loaded.tools.iter().find(|t| t.spec().name() == "big").unwrap().clone();
    reset_peak();
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

    // HTTP: the same reply from a server process, read as it streams (SSE, as rmcp's server answers).
    let mut server = std::process::Command::new(common::example("mcp_fixture_server"))
        .args(["--http", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(server.stdout.take().unwrap()), &mut line).unwrap();
    let loaded = McpImport::http("web", line.trim()).unwrap().load().await.unwrap();
    let big = loaded.tools.iter().find(|t| t.spec().name() == "big").unwrap().clone();
    reset_peak();
    let before = peak();
    let out = big.call(&input, &CallContext::new()).await;
    let grown = peak().saturating_sub(before);
    assert!(!out.is_error(), "{}", &out.content()[..out.content().len().min(300)]);
    assert_eq!(out.content(), text, "the same EXEC-12 cap over HTTP");
    assert!(grown < 48 << 20, "peak memory grew by {} MiB for a 100 MiB reply over HTTP", grown >> 20);
    let echo = loaded.tools.iter().find(|t| t.spec().name() == "echo").unwrap();
    let after = echo.call(&ToolInput::from_json(r#"{"text": "again"}"#).unwrap(), &CallContext::new()).await;
    assert_eq!(after.content(), "again", "the session is still usable");
    let _ = server.kill();
    let _ = server.wait();
}
