//! A listing longer than one page (MCP-25): rmcp's path (2026-07-28 over HTTP, and stdio) hands it out a page at a
//! time with cursors, which rmcp's client follows to the same tools, in the same order, as a legacy session's
//! listing served whole from the serialized text; a late tool is still called (rmcp looks up its schema for every
//! 2026-07-28 call), and a cursor the server never handed out is refused.
#![cfg(feature = "mcp")]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use fisk_ai::serve::mcp::McpServer;
use fisk_ai::source::fisk::FiskApp;
use fisk_ai::{Config, Selection};
use mcp_support::*;
use rmcp::model::PaginatedRequestParams;
use std::fmt::Write;

/// An application of `n` commands, each with a flag of its own.
fn document(n: usize) -> Vec<u8> {
    let mut doc = String::from(r#"{"name":"big","help":"","commands":["#);
    for i in 0..n {
        let sep = if i > 0 { "," } else { "" };
        write!(
            doc,
            r#"{sep}{{"name":"c{i}","help":"Command {i}","flags":[{{"name":"f{i}","help":"Flag {i}","boolean":false,"cumulative":false}}]}}"#
        )
        .unwrap();
    }
    doc.push_str("]}");
    doc.into_bytes()
}

#[tokio::test]
async fn mcp_25_a_long_listing_is_paged_on_rmcps_path_and_whole_for_legacy_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = FiskApp::new(common::fake_app(dir.path(), "mcp-app")).tools_from_slice(&document(2100)).unwrap();
    let tools = Selection::new().apply(loaded.tools).unwrap();
    let config = Config::from_yaml_str("identity: big\nexpose:\n  agent:\n    mcp: {}\n").unwrap();
    let server = McpServer::builder().config(config).toolset(tools).build().await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let stop = tokio_util::sync::CancellationToken::new();
    let serving = tokio::spawn(server.serve(listener, stop.clone().cancelled_owned()));

    let legacy = connect(&url, TestClient::new(false, Answer::Decline), Era::Legacy).await;
    let whole = legacy.peer().list_tools(None).await.unwrap();
    assert_eq!((whole.tools.len(), whole.next_cursor), (2100, None), "a legacy session gets it whole");

    let modern = connect(&url, TestClient::new(false, Answer::Decline), Era::Modern).await;
    let first = modern.peer().list_tools(None).await.unwrap();
    assert_eq!((first.tools.len(), first.next_cursor.as_deref()), (1000, Some("1000")));
    let paged = modern.list_all_tools().await.unwrap();
    let names = |t: &[rmcp::model::Tool]| t.iter().map(|t| t.name.to_string()).collect::<Vec<_>>();
    assert_eq!(names(&paged), names(&whole.tools), "the same tools in the same order");
    assert_eq!(paged[2099], whole.tools[2099], "each tool parses back to what was listed");

    // The last command is called through rmcp's schema lookup; it is the fake application's unknown command.
    let late = call(&modern, "c2099", serde_json::json!({"f2099": "x"})).await;
    assert!(text(&late).contains("c2099"), "{late:?}");
    for cursor in ["7", "999", "5000", "-1000", "x"] {
        let asked =
            modern.peer().list_tools(Some(PaginatedRequestParams::default().with_cursor(Some(cursor.to_owned()))));
        assert!(asked.await.is_err(), "cursor {cursor:?} was never handed out");
    }
    legacy.cancel().await.unwrap();
    modern.cancel().await.unwrap();
    stop.cancel();
    serving.await.unwrap().unwrap();
}
