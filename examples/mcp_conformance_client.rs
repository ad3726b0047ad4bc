//! The client the official MCP conformance suite drives (`tests/conformance/run.sh`): it imports the scenario's
//! server through the library's importer (`source::mcp::McpImport`, as an `mcp_servers` entry would) and calls the
//! tool the scenario serves, so the suite checks our importer's side of the protocol.
//!
//! ```text
//! cargo run --example mcp_conformance_client --features mcp -- <server URL>
//! ```
//!
//! The suite appends the URL and names the scenario in `MCP_CONFORMANCE_SCENARIO`: `initialize` only connects and
//! lists (the importer's handshake), `tools_call` calls `add_numbers`, `sse-retry` calls `test_reconnection`, whose
//! stream the server closes mid-call so the client must reconnect as the server's `retry` field says.
//!
//! `auth/client-credentials-basic` hands the client its credentials in `MCP_CONFORMANCE_CONTEXT`; the importer
//! takes a secret only from an environment variable (`mcp_servers[].oauth.client_secret_env`), so
//! `tests/conformance/client_credentials.sh` moves the secret into `MCP_CONFORMANCE_CLIENT_SECRET` first, and the
//! import gets tokens with the client-credentials grant, the token endpoint discovered from the server.

use fisk_ai::config::McpOAuth;
use fisk_ai::source::mcp::McpImport;
use fisk_ai::tool::{CallContext, ToolInput};
use std::process::ExitCode;
use std::time::Duration;

/// The tool a scenario serves and the arguments to call it with; `None` when the scenario only connects.
fn call_for(scenario: &str) -> Option<(&'static str, &'static str)> {
    match scenario {
        "tools_call" => Some(("add_numbers", r#"{"a": 5, "b": 3}"#)),
        "sse-retry" => Some(("test_reconnection", "{}")),
        _ => None,
    }
}

/// The variable the wrapper script puts the scenario's client secret in.
const SECRET_VAR: &str = "MCP_CONFORMANCE_CLIENT_SECRET";

/// The client id of an auth scenario's context, when the wrapper provided its secret.
fn client_id() -> Option<String> {
    std::env::var_os(SECRET_VAR)?;
    let context: serde_json::Value = serde_json::from_str(&std::env::var("MCP_CONFORMANCE_CONTEXT").ok()?).ok()?;
    context["client_id"].as_str().map(str::to_owned)
}

async fn run(url: &str, scenario: &str) -> Result<(), String> {
    let mut import = McpImport::http("scenario", url).map_err(|e| e.to_string())?.with_timeout(Duration::from_secs(20));
    if let Some(id) = client_id() {
        import = import.with_oauth(McpOAuth::new(id, SECRET_VAR));
    }
    let loaded = import.load().await.map_err(|e| e.to_string())?;
    let names: Vec<&str> = loaded.tools.iter().map(|t| t.spec().name()).collect();
    eprintln!("{scenario}: imported {names:?}");
    let Some((name, args)) = call_for(scenario) else { return Ok(()) };
    let tool = loaded.tools.iter().find(|t| t.spec().name() == name).ok_or(format!("the server has no {name}"))?;
    let input = ToolInput::from_json(args).map_err(|e| e.to_string())?;
    let out = tool.call(&input, &CallContext::new().with_timeout(Duration::from_secs(20))).await;
    eprintln!("{name}: {}", out.content());
    if out.is_error() { Err(format!("{name} failed: {}", out.content())) } else { Ok(()) }
}

#[tokio::main]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: mcp_conformance_client <server URL> (MCP_CONFORMANCE_SCENARIO names the scenario)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    match run(&url, &scenario).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{scenario}: {e}");
            ExitCode::FAILURE
        }
    }
}
