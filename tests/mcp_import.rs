//! MCP import (SPEC section 17, MCPI-1..12) against real servers: the rmcp fixture server as a real stdio child
//! process and over streamable HTTP in this process. The official Python SDK's servers are in
//! tests/mcp_import_python.rs; the round trip through `cli mcp` in tests/mcp_import_cli.rs.
#![cfg(feature = "mcp")]

mod common;
#[path = "../examples/mcp_fixture_server.rs"]
#[allow(dead_code)]
mod fixture;

use common::dispatch::dispatched;
use fisk_ai::ToolSource;
use fisk_ai::source::mcp::McpImport;
use fisk_ai::source::{LoadContext, SourcePolicy};
use fisk_ai::tool::{CallContext, Origin, Tool, ToolInput, ToolKind};
use fisk_ai::warning::Warning;
use std::sync::Arc;
use std::time::Duration;

/// The fixture server's command line with `args`.
pub fn stdio_command(args: &[&str]) -> Vec<String> {
    let mut command = vec![common::example("mcp_fixture_server").display().to_string()];
    command.extend(args.iter().map(|a| (*a).to_owned()));
    command
}

fn stdio(name: &str, args: &[&str]) -> McpImport {
    McpImport::stdio(name, stdio_command(args)).unwrap()
}

/// The fixture served over streamable HTTP in this process; its URL.
async fn http_fixture(args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { fixture::serve_http(fixture::Fixture::from_args(&args), listener).await.unwrap() });
    url
}

fn find(tools: &[Arc<dyn Tool>], name: &str) -> Arc<dyn Tool> {
    tools.iter().find(|t| t.spec().name() == name).cloned().unwrap_or_else(|| panic!("no tool {name}"))
}

async fn call(tool: &Arc<dyn Tool>, input: &str) -> fisk_ai::tool::ToolOutput {
    tool.call(&ToolInput::from_json(input).unwrap(), &CallContext::new()).await
}

/// MCPI-6, MCPI-8, MCPI-9 over both transports: listed with descriptions and schemas as given, imported, untagged,
/// from `mcp <server>`; calls answer with the text.
#[tokio::test]
async fn mcpi_6_8_tools_are_listed_and_called_over_stdio_and_http() {
    let url = http_fixture(&[]).await;
    for import in [stdio("files", &[]), McpImport::http("web", url).unwrap()] {
        let loaded = import.load().await.unwrap();
        let echo = find(&loaded.tools, "echo");
        let spec = echo.spec();
        assert_eq!((spec.kind(), spec.description()), (ToolKind::Imported, "Echo the text back"));
        assert_eq!(spec.input_schema()["required"], serde_json::json!(["text"]));
        assert!(spec.tags().is_empty(), "MCPI-9: imported tools carry no tags");
        assert_eq!(spec.origin().imported_from().unwrap(), format!("mcp {}", import.name()));
        let out = call(&echo, r#"{"text": "hello"}"#).await;
        assert_eq!((out.content(), out.is_error()), ("hello", false));
        let add = find(&loaded.tools, "add");
        assert_eq!(dispatched(add.clone(), r#"{"a": 2, "b": 40}"#).await.content(), "42");
        // Validated against the server's schema before the call, like every tool.
        let refused = dispatched(add, r#"{"a": "two", "b": 40}"#).await;
        assert!(refused.is_error() && refused.content().contains("a"), "{}", refused.content());
    }
}

/// Both protocol eras: the 2026-07-28 discovery where the server has it, else the 2025-11-25 handshake.
#[tokio::test]
async fn both_protocol_eras_are_spoken() {
    let modern = stdio("modern", &[]).load().await.unwrap();
    assert_eq!(call(&find(&modern.tools, "era"), "{}").await.content(), "2026-07-28");
    let legacy = stdio("legacy", &["--legacy"]).load().await.unwrap();
    assert_eq!(call(&find(&legacy.tools, "era"), "{}").await.content(), "2025-11-25");
    let url = http_fixture(&["--legacy"]).await;
    let legacy = McpImport::http("web", url).unwrap().load().await.unwrap();
    assert_eq!(call(&find(&legacy.tools, "era"), "{}").await.content(), "2025-11-25");
}

/// MCPI-8: text items joined with `\n`, other items as placeholders, structured content when there is no text,
/// `isError` as an error result naming the server.
#[tokio::test]
async fn mcpi_8_content_rules() {
    let loaded = stdio("files", &[]).load().await.unwrap();
    assert_eq!(call(&find(&loaded.tools, "mixed"), "{}").await.content(), "first\n[image content omitted]\nlast");
    assert_eq!(call(&find(&loaded.tools, "structured"), "{}").await.content(), r#"{"n":2,"ok":true}"#);
    let failed = call(&find(&loaded.tools, "fails"), "{}").await;
    assert!(failed.is_error());
    assert_eq!(failed.content(), "mcp server files reported an error: it broke");
    // `null` input is `{}`.
    let env = find(&loaded.tools, "env");
    assert!(!env.call(&ToolInput::empty(), &CallContext::new()).await.is_error());
}

/// MCPI-8 with EXEC-12: a result over 64 KiB is its head, the marker and its tail, over both transports.
#[tokio::test]
async fn mcpi_8_results_are_capped_exactly_as_exec_12() {
    let url = http_fixture(&[]).await;
    for import in [stdio("files", &[]), McpImport::http("web", url).unwrap()] {
        let big = find(&import.load().await.unwrap().tools, "big");
        let out = call(&big, r#"{"bytes": 200000}"#).await;
        let text = out.content();
        assert_eq!(text.len(), 65536 + "\n...[output truncated]...\n".len());
        assert!(text.starts_with("HEAD") && text.ends_with("TAIL"));
        assert_eq!(&text[32768..32768 + 26], "\n...[output truncated]...\n");
        let exact = call(&big, r#"{"bytes": 65536}"#).await;
        assert_eq!(exact.content().len(), 65536, "at most 64 KiB is verbatim");
    }
}

/// MCPI-6: pagination is followed (10,000 tools over 100 pages).
#[tokio::test]
async fn mcpi_6_ten_thousand_tools_across_pages() {
    let loaded = stdio("many", &["--many", "10000", "--page", "100"]).load().await.unwrap();
    assert_eq!(loaded.tools.len(), 10_015);
    assert_eq!(find(&loaded.tools, "t09999").spec().description(), "Synthetic tool 9999");
}

/// A listing that never ends fails the load, naming the server, instead of growing without bound.
#[tokio::test]
async fn an_endless_listing_fails_the_load() {
    let err = stdio("endless", &["--endless", "--page", "100"]).load().await.unwrap_err().to_string();
    assert!(err.contains("mcp server endless") && err.contains("past 2000 pages"), "{err}");
}

/// A server's error text is capped before it reaches the model (a JSON-RPC error can be megabytes).
#[tokio::test]
async fn a_huge_error_message_is_capped() {
    let loaded = stdio("e", &[]).load().await.unwrap();
    let out = call(&find(&loaded.tools, "hugeerror"), "{}").await;
    assert!(out.is_error() && out.content().len() < 3000, "{} bytes", out.content().len());
    assert!(out.content().contains("bytes omitted"), "{}", &out.content()[..200]);
}

/// MCPI-10: the operator approves exactly what is sent: the arguments as they will be serialized.
#[tokio::test]
async fn mcpi_10_the_approval_line_shows_what_is_sent() {
    let loaded = stdio("shown", &[]).load().await.unwrap();
    let add = find(&loaded.tools, "add");
    let input = ToolInput::from_json(r#"{ "b": 1, "a": 12345678901234567890123 }"#).unwrap();
    assert_eq!(
        add.prepare(&input, &input.to_value().unwrap()).unwrap().display(),
        r#"add {"a":1.2345678901234568e+22,"b":1}"#
    );
}

/// The context a pipeline hands a source under `policy`.
fn under(policy: SourcePolicy) -> LoadContext {
    LoadContext::default().with_policy(policy)
}

/// MCPI-6, HARNESS-6: the entry's include then exclude (the pipeline's policy), on the server's names.
#[tokio::test]
async fn mcpi_6_include_then_exclude_on_server_names() {
    let include = fisk_ai::select::Rule::tools(["^(echo|add|big)$"]).unwrap();
    let exclude = fisk_ai::select::Rule::tools(["^big$"]).unwrap();
    let policy = SourcePolicy::new().include(include).exclude(exclude);
    let loaded = ToolSource::load(&stdio("f", &[]), &under(policy)).await.unwrap();
    let mut names: Vec<&str> = loaded.tools.iter().map(|t| t.spec().name()).collect();
    names.sort_unstable();
    assert_eq!(names, ["add", "echo"]);

    let none = fisk_ai::select::Rule::tools(["^nothing$"]).unwrap();
    let empty = ToolSource::load(&stdio("f", &[]), &under(SourcePolicy::new().include(none))).await.unwrap();
    assert!(empty.tools.is_empty());
    assert!(empty.warnings.iter().any(|w| matches!(w, Warning::ImportEmpty { name, .. } if name == "f")));
}

/// MCPI-6, IMPORT-6: an empty description or a non-object schema is skipped at load, an unaddressable name at
/// selection, each with a warning; nothing else is lost.
#[tokio::test]
async fn mcpi_6_unusable_tools_are_skipped_with_warnings() {
    let loaded = stdio("h", &["--hostile"]).load().await.unwrap();
    let skipped: Vec<String> = loaded
        .warnings
        .iter()
        .filter_map(|w| match w {
            Warning::ImportSkipped { tool, .. } => Some(tool.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(skipped, ["blank", "notobject"]);
    let toolset = fisk_ai::select::Selection::new().apply(loaded.tools).unwrap();
    let invalid: Vec<&str> = toolset
        .warnings()
        .iter()
        .filter_map(|w| match w {
            Warning::InvalidToolName { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(invalid, ["has space", "grüße"]);
    assert!(toolset.get("echo").is_some() && toolset.get("sneaky").is_some());
    // MCPI-15: the description reaches the model cleaned (escapes and controls gone, bidi characters escaped).
    assert_eq!(toolset.get("sneaky").unwrap().spec().description(), "Looks fine\\u{202e}txt.exe\\u{200b} thenrewrites");
}

/// MCPI-8: a server slower than the timeout gives an error result naming the server; the next call works.
#[tokio::test]
async fn mcpi_8_a_slow_server_times_out_and_stays_usable() {
    let import = stdio("slowpoke", &[]).with_timeout(Duration::from_millis(500));
    let loaded = import.load().await.unwrap();
    let slow = find(&loaded.tools, "slow");
    let out = call(&slow, r#"{"ms": 5000}"#).await;
    assert!(out.is_error());
    assert!(
        out.content().contains("mcp server slowpoke") && out.content().contains("did not answer"),
        "{}",
        out.content()
    );
    assert_eq!(call(&slow, r#"{"ms": 1}"#).await.content(), "done");
}

/// MCPI-8: a server that dies mid-call gives an error result, not a hang, and later calls fail fast with the same
/// reason.
#[tokio::test]
async fn mcpi_8_a_server_dying_mid_call_fails_that_call_and_every_later_one() {
    let loaded = stdio("fragile", &[]).with_timeout(Duration::from_secs(60)).load().await.unwrap();
    let started = std::time::Instant::now();
    let out = call(&find(&loaded.tools, "die"), "{}").await;
    assert!(out.is_error());
    assert!(out.content().contains("mcp server fragile is gone"), "{}", out.content());
    let later = call(&find(&loaded.tools, "echo"), r#"{"text": "x"}"#).await;
    assert_eq!((later.is_error(), later.content()), (true, out.content()));
    // Not a timeout: the 60 s bound was never reached (not a timing assertion; a hang would fail the test run).
    assert!(started.elapsed() < Duration::from_secs(60));
}

/// MCPI-3: a server flooding stderr neither blocks nor corrupts the protocol.
#[tokio::test]
async fn mcpi_3_a_flooding_stderr_is_drained_apart_from_the_protocol() {
    let loaded = stdio("noisy", &["--flood-stderr"]).load().await.unwrap();
    let echo = find(&loaded.tools, "echo");
    for i in 0..50 {
        let text = format!("call {i}");
        assert_eq!(call(&echo, &serde_json::json!({ "text": text }).to_string()).await.content(), text);
    }
}

/// MCPI-3: the child runs in the process working directory, not the tools' one.
#[tokio::test]
async fn mcpi_3_the_child_runs_in_the_process_working_directory() {
    let loaded = stdio("here", &[]).load().await.unwrap();
    let pwd = call(&find(&loaded.tools, "pwd"), "{}").await;
    assert_eq!(pwd.content(), std::env::current_dir().unwrap().display().to_string());
}

/// MCPI-11: an unreachable server or a command that cannot start fails the load, naming the server.
#[tokio::test]
async fn mcpi_11_unreachable_servers_fail_the_load_naming_them() {
    let missing = McpImport::stdio("ghost", ["/nonexistent/mcp-server"]).unwrap().load().await.unwrap_err();
    assert!(
        missing.to_string().contains("mcp server ghost") && missing.to_string().contains("/nonexistent"),
        "{missing}"
    );
    let refused = common::net::RefusedPort::new();
    let url = format!("http://127.0.0.1:{}/mcp", refused.port());
    let closed = McpImport::http("nowhere", url).unwrap().with_timeout(Duration::from_secs(5)).load().await;
    assert!(closed.unwrap_err().to_string().contains("mcp server nowhere"));
    // A command that is not an MCP server at all: it exits at once.
    let not_mcp = McpImport::stdio("liar", ["/bin/true"]).unwrap().load().await.unwrap_err();
    assert!(not_mcp.to_string().contains("mcp server liar"), "{not_mcp}");
}

/// MCPI-2, MCPI-4: https unless loopback; a bearer token from a named variable, unset fails naming it.
#[tokio::test]
async fn mcpi_2_4_url_rules_and_bearer_token() {
    assert!(McpImport::http("x", "http://mcp.example.com/mcp").is_err());
    assert!(McpImport::http("x", "https://user:pw@mcp.example.com/mcp").is_err());
    let url = http_fixture(&[]).await;
    let unset = McpImport::http("web", url.clone()).unwrap().with_bearer_token_env("FISK_AI_TEST_UNSET_TOKEN");
    assert_eq!(unset.credentials(), ["FISK_AI_TEST_UNSET_TOKEN"]);
    let err = unset.load().await.unwrap_err().to_string();
    assert!(err.contains("FISK_AI_TEST_UNSET_TOKEN") && err.contains("not set"), "{err}");
    // Without a token, no Authorization header.
    let loaded = McpImport::http("web", url).unwrap().load().await.unwrap();
    assert_eq!(call(&find(&loaded.tools, "auth"), "{}").await.content(), "none");
}

/// MCPI-3: no process outlives the source: dropping the tools kills the server's process group.
#[tokio::test]
async fn mcpi_3_dropping_the_tools_kills_the_server() {
    let loaded = stdio("short", &[]).load().await.unwrap();
    let pid: i32 = call(&find(&loaded.tools, "pid"), "{}").await.content().parse().unwrap();
    assert!(alive(pid));
    drop(loaded);
    for _ in 0..100 {
        if !alive(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server {pid} outlived its tools");
}

/// OTEL-7: a call over HTTP carries the caller's trace context in the `traceparent` header as well as in `_meta`,
/// for a server whose HTTP instrumentation reads the header; without a recorded span it carries neither.
#[cfg(feature = "otel")]
#[tokio::test]
async fn otel_7_an_http_call_carries_the_trace_in_its_header_and_its_meta() {
    use tracing::Instrument;
    use tracing_subscriber::layer::SubscriberExt;
    // Nothing listens there: the spans are recorded (and so have ids), their export fails quietly.
    let export = fisk_ai::telemetry::otel::OtlpExport::to_url("http://127.0.0.1:9/v1/traces").unwrap();
    let _default = tracing::subscriber::set_default(tracing_subscriber::registry().with(export.layer()));
    let loaded = McpImport::http("web", http_fixture(&[]).await).unwrap().load().await.unwrap();
    let tool = find(&loaded.tools, "trace");
    // A span the export records (its filter keeps this crate's targets), as a tool call's own span is.
    let span = tracing::info_span!(target: "fisk_ai", "caller");
    let seen = call(&tool, "{}").instrument(span).await.content().to_owned();
    let (header, meta) = seen.split_once(' ').unwrap();
    let header = header.strip_prefix("header=").unwrap();
    assert_eq!(meta.strip_prefix("meta=").unwrap(), header, "{seen}");
    let fields: Vec<&str> = header.split('-').collect();
    assert!(matches!(fields[..], ["00", t, s, _] if t.len() == 32 && s.len() == 16), "{seen}");
    drop(_default);
    assert_eq!(call(&tool, "{}").await.content(), "header=none meta=none");
}

/// EXEC-17: a child of the server that left its process group and session (setsid) does not outlive the
/// connection: dropping the tools ends it with the server.
#[tokio::test]
async fn exec_17_a_servers_setsid_child_does_not_outlive_the_connection() {
    let loaded = stdio("spawner", &["--setsid"]).load().await.unwrap();
    let pid: i32 = call(&find(&loaded.tools, "setsid"), "{}").await.content().parse().unwrap();
    assert!(common::procs::alive(pid));
    drop(loaded);
    common::procs::wait_gone(pid, "the server's setsid child").await;
}

/// EXEC-17: when the server itself exits, its setsid child (now reparented to this process, tied to the server
/// only by the environment it inherited) is ended too, while the tools are still held.
#[tokio::test]
async fn exec_17_a_servers_setsid_child_does_not_outlive_the_server() {
    let loaded = stdio("spawner", &["--setsid"]).load().await.unwrap();
    let server: i32 = call(&find(&loaded.tools, "pid"), "{}").await.content().parse().unwrap();
    let pid: i32 = call(&find(&loaded.tools, "setsid"), "{}").await.content().parse().unwrap();
    assert!(call(&find(&loaded.tools, "die"), "{}").await.is_error());
    common::procs::wait_gone(server, "the server").await;
    common::procs::wait_gone(pid, "the server's setsid child").await;
    drop(loaded);
}

fn alive(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !stat.is_empty() && !stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z'))
}

#[test]
fn origin_names_the_server_for_traces_and_info() {
    assert_eq!(Origin::mcp_server("github", "gh").imported_from().unwrap(), "mcp github");
    assert_eq!(Origin::mcp_server("github", "gh").to_string(), "gh");
}

/// MCPI-5: `include.tags` is ignored with a warning, so an include of tags alone filters nothing (it used to match
/// no name and drop every tool).
#[tokio::test]
async fn mcpi_5_an_include_of_tags_alone_keeps_every_tool() {
    let command: Vec<String> = stdio_command(&[]);
    let yaml = format!(
        "mcp_servers:\n  - name: f\n    command: {}\n    include: {{tags: [\"impact:ro\"]}}\n",
        serde_json::to_string(&command).unwrap()
    );
    let config = fisk_ai::Config::from_yaml_str(&yaml).unwrap();
    let warnings = config.validate(fisk_ai::config::Mode::Lenient).unwrap();
    assert!(warnings.iter().any(|w| matches!(w, Warning::ImportIncludeTagsIgnored { .. })), "{warnings:?}");
    let all = stdio("f", &[]).load().await.unwrap().tools.len();
    assert_eq!(imported_by_a_harness(config).await.len(), all, "the pipeline keeps every tool");

    // Where the entry names tools, the pipeline applies them (HARNESS-6: the rule lives there, not in the source).
    let yaml = yaml.replace(r#"{tags: ["impact:ro"]}"#, r#"{tools: ["^(echo|add)$"]}"#);
    let mut kept = imported_by_a_harness(fisk_ai::Config::from_yaml_str(&yaml).unwrap()).await;
    kept.sort_unstable();
    assert_eq!(kept, ["add", "echo"]);
}

/// The names of the tools a harness built from `config` imported from MCP servers.
async fn imported_by_a_harness(config: fisk_ai::Config) -> Vec<String> {
    let harness =
        fisk_ai::harness::Harness::builder().pin_store(common::pin_store()).config(config).build().await.unwrap();
    (harness.toolset().iter())
        .filter(|t| t.spec().kind() == ToolKind::Imported)
        .map(|t| t.spec().name().to_owned())
        .collect()
}
