//! OpenTelemetry through the example CLI (OTEL-2, OTEL-5..8): `cli mcp` and `cli run` export to a loopback
//! OTLP/HTTP receiver (decoding with the official `opentelemetry-proto` package) when `OTEL_EXPORTER_OTLP_ENDPOINT`
//! is set, honouring `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`; a served MCP request continues the trace
//! its caller (the official Python MCP SDK client) sends in `_meta` or a `traceparent` header, a malformed one is
//! ignored, and a call to an imported MCP server carries the run's trace to it.
#![cfg(all(
    feature = "otel",
    feature = "anthropic",
    feature = "mcp",
    feature = "nats",
    feature = "terminal",
    feature = "knowledge"
))]

mod common;

use common::cli::Cli;
use common::otlp::{Receiver, named, names};
use serde_json::Value;
use std::path::Path;

/// Ids of the callers' traces: (trace id, parent span id).
const META: (&str, &str) = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
const HEADER: (&str, &str) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
const BOTH_META: (&str, &str) = ("11111111111111111111111111111111", "2222222222222222");
const BOTH_HEADER: (&str, &str) = ("33333333333333333333333333333333", "4444444444444444");
const FALLBACK: (&str, &str) = ("55555555555555555555555555555555", "6666666666666666");
const SECRET: &str = "MOO-SECRET";

fn traceparent((trace, span): (&str, &str)) -> String {
    format!("00-{trace}-{span}-01")
}

fn otel_env<'a>(receiver: &'a str, service: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver),
        ("OTEL_SERVICE_NAME", service),
        ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci,team=tools"),
        // Export soon after each span ends, so the test does not wait out the default 5 s.
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ]
}

/// `cli mcp` serving the cowsay demo with export on; its URL.
fn serve(env: &[(&str, &str)]) -> (Cli, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let args = ["--config", "examples/cowsay/agent.yaml", "--port", &port];
    let mut cli = Cli::start("mcp", &args, &["FISK_AI_MCP_PORT", "FISK_AI_MCP_ADDRESS"], env);
    assert!(cli.wait_for("register it with an MCP client"), "startup:\n{}", cli.stderr());
    (cli, format!("http://127.0.0.1:{port}/"))
}

async fn python_call(url: &str, mode: &str, traceparent: &str, header: &str) {
    let script = common::root().join("tests/fixtures/python/mcp_trace_client.py");
    let message = format!("{SECRET} {mode}");
    let out = tokio::process::Command::new(common::python::interpreter())
        .arg(&script)
        .args([url, mode, &message, traceparent, header])
        .output()
        .await
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "python client ({mode}) failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains(&message), "{mode}: the call ran: {stdout}");
}

/// The served `tools/call say` span in `trace`, and the `execute_tool say` span under it.
fn served_call<'a>(spans: &'a [Value], trace: &str) -> (&'a Value, &'a Value) {
    let calls: Vec<&Value> = named(spans, "tools/call say").into_iter().filter(|s| s["trace_id"] == trace).collect();
    assert_eq!(calls.len(), 1, "one tools/call in trace {trace}: {}", names(spans));
    let call = calls[0];
    let tools: Vec<&Value> =
        named(spans, "execute_tool say").into_iter().filter(|s| s["parent_span_id"] == call["span_id"]).collect();
    assert_eq!(tools.len(), 1, "the tool call's span is the request's child: {spans:#?}");
    (call, tools[0])
}

#[tokio::test]
#[ignore = "needs the OTLP receiver (FISK_AI_OTLP_PYTHON) and the Python MCP client (FISK_AI_PYTHON); .ci/run provides them"]
async fn otel_5_otel_6_otel_8_cli_mcp_continues_the_callers_trace_from_meta_or_header_and_ignores_garbage() {
    let receiver = Receiver::start();
    let base = receiver.base_url();
    let (mut cli, url) = serve(&otel_env(&base, "otel-mcp-test"));
    python_call(&url, "meta", &traceparent(META), "").await;
    python_call(&url, "header", "", &traceparent(HEADER)).await;
    python_call(&url, "both", &traceparent(BOTH_META), &traceparent(BOTH_HEADER)).await;
    python_call(&url, "fallback", "", &traceparent(FALLBACK)).await;
    python_call(&url, "malformed", "", "").await;
    // OTEL-3, OTEL-8: SIGTERM ends main, and the export flushes as it drops.
    assert!(cli.terminate().success(), "{}", cli.stderr());
    let spans = receiver.spans_when(|s| named(s, "tools/call say").len() >= 5);

    // A request without a tool is named by its method alone.
    assert!(!named(&spans, "tools/list").is_empty(), "{}", names(&spans));
    // OTEL-8: the resource the standard variables describe.
    let resource = &spans.first().unwrap_or_else(|| panic!("nothing exported: {}", cli.stderr()))["resource"];
    assert_eq!(resource["service.name"], "otel-mcp-test", "{resource}");
    assert_eq!(resource["deployment.environment"], "ci", "{resource}");
    assert_eq!(resource["team"], "tools", "{resource}");

    // OTEL-5: `_meta` (put there by the SDK from the client's own context), a header, `_meta` over a header, and
    // (OTEL-6) the header when `_meta`'s value is malformed.
    for (mode, (trace, parent)) in [("meta", META), ("header", HEADER), ("both", BOTH_META), ("fallback", FALLBACK)] {
        let (call, tool) = served_call(&spans, trace);
        assert_eq!(call["parent_span_id"], parent, "{mode}: {call}");
        assert_eq!(call["kind"], "SPAN_KIND_SERVER", "{mode}");
        assert_eq!(call["attributes"]["mcp.method.name"], "tools/call", "{mode}");
        assert_eq!(tool["trace_id"], trace, "{mode}");
        assert_eq!(tool["attributes"]["gen_ai.tool.name"], "say", "{mode}");
    }
    assert!(named(&spans, "tools/call say").iter().all(|s| s["trace_id"] != BOTH_HEADER.0), "meta wins");

    // OTEL-6: garbage in `_meta` and the header: the call ran, in a trace of its own, as a root.
    let known = [META.0, HEADER.0, BOTH_META.0, FALLBACK.0];
    let fresh: Vec<&Value> = named(&spans, "tools/call say")
        .into_iter()
        .filter(|s| !known.contains(&s["trace_id"].as_str().unwrap()))
        .collect();
    assert_eq!(fresh.len(), 1, "{}", names(&spans));
    assert_eq!(fresh[0]["parent_span_id"], "", "{}", fresh[0]);

    // OTEL-4: the arguments never left the process.
    let dump = serde_json::to_string(&spans).unwrap();
    assert!(!dump.contains(SECRET), "content was exported: {dump}");
}

/// The importing agent: no application, the served cowsay as `cow` reached by `server` (an `mcp_servers` entry's
/// `url: ...` or `command: [...]` line), a scripted model that calls `say` once.
fn importer_config(dir: &Path, server: &str) -> std::path::PathBuf {
    let script = dir.join("script.yaml");
    let turns = format!(
        "turns:\n  - calls:\n      - tool: say\n        input: {{message: \"{SECRET} imported\"}}\n  - text: The cow spoke.\n"
    );
    std::fs::write(&script, turns).unwrap();
    let config = dir.join("agent.yaml");
    let yaml = format!(
        "identity: importer\nsystem_prompt: Use the cow.\nllm:\n  provider: scripted\n  script: {}\n  model: m\n\
         mcp_servers:\n  - name: cow\n    {server}\n    include:\n      tools: [\"^say$\"]\n",
        script.display()
    );
    std::fs::write(&config, yaml).unwrap();
    config
}

/// `cli run` with `config`, exporting as `importer`.
async fn run_importer(base: &str, dir: &Path, config: &Path) {
    let mut run = common::example_cli(&["run", "--config", config.to_str().unwrap(), "talk"], dir);
    for (k, v) in otel_env(base, "importer") {
        run.env(k, v);
    }
    let out = tokio::task::spawn_blocking(move || run.output().unwrap()).await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The importer's run, its `say` call, and the served `tools/call say` under that call: one trace across both
/// processes, with no content exported.
fn assert_one_trace(receiver: &Receiver) {
    let spans =
        receiver.spans_when(|s| !named(s, "tools/call say").is_empty() && !named(s, "execute_tool say").is_empty());
    let of = |service: &str, name: &str| -> Vec<&Value> {
        named(&spans, name).into_iter().filter(|s| s["resource"]["service.name"] == service).collect()
    };
    let [run_span] = of("importer", "invoke_agent importer")[..] else { panic!("{}", names(&spans)) };
    let [ours] = of("importer", "execute_tool say")[..] else { panic!("{}", names(&spans)) };
    let [theirs] = of("served", "tools/call say")[..] else { panic!("{}", names(&spans)) };
    assert_eq!(ours["parent_span_id"], run_span["span_id"]);
    assert_eq!(ours["attributes"]["gen_ai.tool.type"], "extension");
    // The server's request is a child of the importer's tool call: one trace across both processes.
    assert_eq!(theirs["trace_id"], run_span["trace_id"], "{theirs}");
    assert_eq!(theirs["parent_span_id"], ours["span_id"], "{theirs}");
    let dump = serde_json::to_string(&spans).unwrap();
    assert!(!dump.contains(SECRET), "content was exported: {dump}");
}

#[tokio::test]
#[ignore = "needs the OTLP receiver (FISK_AI_OTLP_PYTHON) and the Python MCP client (FISK_AI_PYTHON); .ci/run provides them"]
async fn otel_7_a_call_to_an_imported_mcp_server_carries_the_runs_trace() {
    let receiver = Receiver::start();
    let base = receiver.base_url();
    let (mut served, url) = serve(&otel_env(&base, "served"));
    let dir = tempfile::tempdir().unwrap();
    let config = importer_config(dir.path(), &format!("url: {url}"));
    run_importer(&base, dir.path(), &config).await;
    assert!(served.terminate().success(), "{}", served.stderr());
    assert_one_trace(&receiver);
}

/// The same over stdio: `cli run` starts `cli mcp --stdio` as its server. The server exports its span when it
/// exits, which it can because the importer closes it as MCPI-17 asks (EOF first, not a kill).
#[tokio::test]
#[ignore = "needs the OTLP receiver (FISK_AI_OTLP_PYTHON); .ci/run provides it"]
async fn otel_7_mcpi_17_a_call_to_a_stdio_mcp_server_carries_the_runs_trace() {
    let receiver = Receiver::start();
    let base = receiver.base_url();
    let dir = tempfile::tempdir().unwrap();
    // `env` runs the server from the checkout (the demo's paths are relative to it) as another service.
    let command = format!(
        "command: [/usr/bin/env, -C, {:?}, OTEL_SERVICE_NAME=served, {:?}, mcp, --stdio, --config, examples/cowsay/agent.yaml]",
        common::root().display().to_string(),
        common::example("cli").display().to_string()
    );
    let config = importer_config(dir.path(), &command);
    run_importer(&base, dir.path(), &config).await;
    assert_one_trace(&receiver);
}

#[test]
fn otel_2_the_cli_refuses_an_unusable_otlp_setting_naming_the_variable() {
    for (env, says) in [
        (
            vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318")],
            "OTEL_EXPORTER_OTLP_ENDPOINT must be an http or https URL",
        ),
        (vec![("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://")], "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is not a URL"),
        (
            vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")],
            "OTEL_EXPORTER_OTLP_PROTOCOL is \"grpc\", but this build exports OTLP over http/protobuf only",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = common::example_cli(&["info", "--config"], dir.path());
        cmd.arg(common::root().join("examples/cowsay/agent.yaml"));
        for var in ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL"]
        {
            cmd.env_remove(var);
        }
        cmd.env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "").envs(env);
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
