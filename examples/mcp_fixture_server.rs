//! A small, deliberately configurable MCP server built on rmcp, over stdio or streamable HTTP. The MCP import
//! tests start it as a real child process (and the benches as a peer to call); it is also a template for writing
//! a stdio server.
//!
//! ```text
//! cargo run --example mcp_fixture_server --features mcp -- [--http ADDR] [--many N --page N] [--hostile]
//!     [--flood-stderr] [--extra NAME]... [--legacy] [--endless] [--setsid] [--huge-pages BYTES] [--bad-schemas]
//!     [--garbage-list] [--deep-reply] [--on-exit FILE [--stubborn]]
//! ```
//!
//! Tools: `echo {text}`, `add {a, b}`, `env` (this process's environment, one `NAME=value` per line), `big
//! {bytes}` (a text of that many bytes, starting `HEAD` and ending `TAIL`), `slow {ms}`, `die` (exits while
//! answering), `mixed` (a text, an image and a text item), `structured` (structured content only), `fails`
//! (`isError`), `pwd`, `auth` and `trace` (the `Authorization` header, and the `traceparent` header and `_meta` value, a
//! request carried over HTTP). `--many N` adds `t00000`.. tools, listed `--page` at a time; `--hostile` adds tools whose
//! names or descriptions are unusable or carry control and bidi characters (and a schema whose prose does, and
//! dirty instructions). `--setsid` adds `setsid`: it starts a child of this server that leaves the server's
//! process group and session (`setsid()`), holds none of its pipes, sleeps forever, and answers that child's
//! process id (EXEC-17: it must not outlive the connection).
//!
//! Hostile modes ([`hostile`]): `--huge-pages BYTES` answers every listing page with ten tools whose descriptions
//! add up to BYTES and a fresh cursor, forever; `--bad-schemas` adds tools whose input schema is `"string"`, `5`,
//! `[1,2]`, `{"type":"string"}` or nested 10,000 levels; `--garbage-list` makes the listing reply invalid JSON;
//! `--deep-reply` adds `deep`, answering structured content nested 10,000 levels.
//!
//! Closing (MCPI-17): `--on-exit FILE` appends `eof` to FILE when stdin ends, as a server flushing its state
//! would; with `--stubborn` it then keeps running, and appends `term` for each `SIGTERM` it ignores.

#[path = "mcp_fixture_server/hostile.rs"]
pub mod hostile;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, Implementation, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// The server; [`Fixture::from_args`] reads the flags above.
#[derive(Clone)]
pub struct Fixture {
    tools: Arc<Vec<Tool>>,
    page: usize,
    /// `--legacy`: refuse the 2026-07-28 `server/discover`, and an `initialize` offering a revision without a
    /// handshake, as a server of the 2025-11-25 era does.
    legacy: bool,
    /// `--endless`: every page of the listing names a next one.
    endless: bool,
    /// `--huge-pages BYTES`: every listing page is ten fresh tools of BYTES of descriptions, forever.
    huge_pages: usize,
    /// `--hostile`: dirty instructions too.
    hostile: bool,
    /// Messages carry placeholders for text rmcp cannot express, replaced on the way out ([`hostile::relay`]).
    relayed: bool,
}

impl Fixture {
    /// The server the flags describe (`--many`, `--page`, `--hostile`).
    pub fn from_args(args: &[String]) -> Fixture {
        let many = flag(args, "--many").and_then(|n| n.parse().ok()).unwrap_or(0);
        let page = flag(args, "--page").and_then(|n| n.parse().ok()).unwrap_or(usize::MAX);
        let mut tools = tools(many, args.iter().any(|a| a == "--hostile"));
        // `--extra NAME` (repeatable): one more tool, answering `called NAME`.
        for (i, a) in args.iter().enumerate() {
            if a == "--extra"
                && let Some(name) = args.get(i + 1)
            {
                tools.push(tool(name, &format!("An extra tool named {name}"), object(json!({}), &[])));
            }
        }
        // `--describe NAME=TEXT` and `--widen NAME` (repeatable): change a tool's description, or add an optional
        // `note` property to its input schema, as a server that changed between two runs would (PIN-2).
        for (i, a) in args.iter().enumerate() {
            let Some(value) = args.get(i + 1) else { continue };
            if a == "--describe"
                && let Some((name, text)) = value.split_once('=')
            {
                tools.iter_mut().filter(|t| t.name == name).for_each(|t| t.description = Some(text.to_owned().into()));
            } else if a == "--widen" {
                for t in tools.iter_mut().filter(|t| t.name == value.as_str()) {
                    let mut schema = (*t.input_schema).clone();
                    if let Some(Value::Object(props)) = schema.get_mut("properties") {
                        props.insert("note".to_owned(), json!({"type": "string"}));
                    }
                    t.input_schema = Arc::new(schema);
                }
            }
        }
        let on = |name: &str| args.iter().any(|a| a == name);
        if on("--setsid") {
            tools.push(tool(
                "setsid",
                "Start a child in a session of its own; answer its process id",
                object(json!({}), &[]),
            ));
        }
        if on("--bad-schemas") {
            tools.extend(hostile::bad_schema_tools());
        }
        if on("--garbage-list") {
            tools.push(hostile::garbage_tool());
        }
        if on("--deep-reply") {
            tools.push(tool("deep", "Answer structured content nested 10,000 levels", object(json!({}), &[])));
        }
        let huge_pages = flag(args, "--huge-pages").and_then(|n| n.parse().ok()).unwrap_or(0);
        Fixture {
            tools: Arc::new(tools),
            page: page.max(1),
            legacy: on("--legacy"),
            endless: on("--endless"),
            huge_pages,
            hostile: on("--hostile"),
            relayed: on("--bad-schemas") || on("--garbage-list") || on("--deep-reply"),
        }
    }
}

fn tool(name: &str, description: &str, schema: Value) -> Tool {
    let Value::Object(schema) = schema else { unreachable!("schemas here are objects") };
    Tool::new(name.to_owned(), description.to_owned(), Arc::new(schema))
}

fn object(props: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

fn tools(many: usize, hostile: bool) -> Vec<Tool> {
    let mut tools = vec![
        tool("echo", "Echo the text back", object(json!({"text": {"type": "string"}}), &["text"])),
        tool(
            "add",
            "Add two integers",
            object(json!({"a": {"type": "integer"}, "b": {"type": "integer"}}), &["a", "b"]),
        ),
        tool("env", "Print this server's environment", object(json!({}), &[])),
        tool("big", "Answer a text of the given size", object(json!({"bytes": {"type": "integer"}}), &["bytes"])),
        tool("slow", "Answer after a delay", object(json!({"ms": {"type": "integer"}}), &["ms"])),
        tool("die", "Exit while answering", object(json!({}), &[])),
        tool("mixed", "Answer text, image and text items", object(json!({}), &[])),
        tool("structured", "Answer structured content only", object(json!({}), &[])),
        tool("fails", "Answer with isError", object(json!({}), &[])),
        tool("pwd", "Print the working directory", object(json!({}), &[])),
        tool("era", "Print the protocol version of this request", object(json!({}), &[])),
        tool("pid", "Print this server's process id", object(json!({}), &[])),
        tool("hugeerror", "Fail with a 1 MB JSON-RPC error", object(json!({}), &[])),
        tool("auth", "Print the Authorization header this request carried (HTTP only)", object(json!({}), &[])),
        tool("trace", "Print the traceparent this request carried in its header and its _meta", object(json!({}), &[])),
    ];
    tools.extend((0..many).map(|i| tool(&format!("t{i:05}"), &format!("Synthetic tool {i}"), object(json!({}), &[]))));
    if hostile {
        tools.push(tool("has space", "A name no model can call", object(json!({}), &[])));
        tools.push(tool("grüße", "A name with unicode", object(json!({}), &[])));
        tools.push(tool("blank", "   ", object(json!({}), &[])));
        tools.push(tool("notobject", "A schema that is not an object", json!({"type": "string"})));
        tools.push(tool("sneaky", "Looks fine\u{1b}[2J\u{202e}txt.exe\u{200b} then\rrewrites", object(json!({}), &[])));
        tools.push(hostile::dirty_schema_tool());
    }
    tools
}

fn text(s: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(s.into())])
}

fn arg(args: &Option<JsonObject>, key: &str) -> i64 {
    args.as_ref().and_then(|a| a.get(key)).and_then(Value::as_i64).unwrap_or_default()
}

async fn answer(request: &CallToolRequestParams, context: &RequestContext<RoleServer>) -> CallToolResult {
    let args = &request.arguments;
    match request.name.as_ref() {
        "era" => text(context.protocol_version().map(|v| v.as_str().to_owned()).unwrap_or_default()),
        "auth" => {
            let parts = context.extensions.get::<axum::http::request::Parts>();
            let header = parts.and_then(|p| p.headers.get("authorization")).and_then(|v| v.to_str().ok());
            text(header.unwrap_or("none"))
        }
        "trace" => {
            let parts = context.extensions.get::<axum::http::request::Parts>();
            let header = parts.and_then(|p| p.headers.get("traceparent")).and_then(|v| v.to_str().ok());
            // rmcp hands a request's `_meta` over in the context.
            let meta = context.meta.get_traceparent();
            text(format!("header={} meta={}", header.unwrap_or("none"), meta.unwrap_or("none")))
        }
        "echo" => text(args.as_ref().and_then(|a| a.get("text")).and_then(Value::as_str).unwrap_or_default()),
        "add" => text((arg(args, "a") + arg(args, "b")).to_string()),
        "env" => text(std::env::vars().map(|(k, v)| format!("{k}={v}\n")).collect::<String>()),
        "big" => {
            let n = usize::try_from(arg(args, "bytes")).unwrap_or_default().max(8);
            text(format!("HEAD{}TAIL", "x".repeat(n - 8)))
        }
        "slow" => {
            tokio::time::sleep(Duration::from_millis(u64::try_from(arg(args, "ms")).unwrap_or_default())).await;
            text("done")
        }
        "die" => std::process::exit(3),
        "mixed" => CallToolResult::success(vec![
            ContentBlock::text("first"),
            ContentBlock::image("aGk=", "image/png"),
            ContentBlock::text("last"),
        ]),
        "structured" => {
            let mut r = CallToolResult::success(Vec::new());
            r.structured_content = Some(json!({"ok": true, "n": 2}));
            r
        }
        "fails" => CallToolResult::error(vec![ContentBlock::text("it broke")]),
        "pid" => text(std::process::id().to_string()),
        "setsid" => text(spawn_setsid()),
        "deep" => {
            let mut r = CallToolResult::success(Vec::new());
            r.structured_content = Some(hostile::raw("deep"));
            r
        }
        "pwd" => text(std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default()),
        other => text(format!("called {other}")),
    }
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        let info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("fixture", "1.0"));
        if self.hostile { info.with_instructions(hostile::DIRTY_INSTRUCTIONS) } else { info }
    }

    /// `--legacy` is strict, as servers of that era are: a revision without a handshake is refused, not
    /// negotiated down.
    async fn initialize(
        &self,
        request: rmcp::model::InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::InitializeResult, ErrorData> {
        if self.legacy && !request.protocol_version.has_initialize() {
            let asked = request.protocol_version.as_str();
            return Err(ErrorData::invalid_params(format!("unsupported protocol version {asked}"), None));
        }
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn discover(&self, context: RequestContext<RoleServer>) -> Result<rmcp::model::DiscoverResult, ErrorData> {
        if self.legacy {
            return Err(ErrorData::method_not_found::<rmcp::model::DiscoverRequestMethod>());
        }
        let versions = self.supported_protocol_versions().into_owned();
        let _ = context;
        Ok(rmcp::model::DiscoverResult::from_server_info(versions, self.get_info()))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let start: usize = request.and_then(|r| r.cursor).and_then(|c| c.parse().ok()).unwrap_or(0);
        if self.huge_pages > 0 {
            let mut result = ListToolsResult::with_all_items(hostile::huge_page(start, self.huge_pages));
            result.next_cursor = Some((start + 1).to_string());
            return Ok(result);
        }
        let end = (start + self.page).min(self.tools.len());
        let mut result = ListToolsResult::with_all_items(self.tools[start.min(end)..end].to_vec());
        result.next_cursor = (end < self.tools.len() || self.endless).then(|| end.to_string());
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        if request.name == "hugeerror" {
            return Err(ErrorData::internal_error("e".repeat(1 << 20), None));
        }
        Ok(answer(&request, &context).await.into())
    }
}

/// Start this executable as `--setsid-sleep` with no pipes of ours once it has left this server's session: its
/// process id, or why it could not start.
fn spawn_setsid() -> String {
    use std::io::Read;
    let started = std::env::current_exe().and_then(|exe| {
        std::process::Command::new(exe)
            .arg("--setsid-sleep")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
    });
    // Never waited for: the child is meant to outlive this call, and the server, if nothing ends it.
    let mut child = match started {
        Ok(child) => child,
        Err(e) => return format!("cannot start: {e}"),
    };
    // Answer only once it has called setsid(): a test that ends the server before then would see the group kill
    // end it. Its one line says so; then the pipe is closed on this side.
    let mut ready = [0u8; 1];
    if let Some(mut out) = child.stdout.take() {
        let _ = out.read(&mut ready);
    }
    child.id().to_string()
}

/// The `--setsid-sleep` child: leave the parent's process group and session, say so, then sleep until killed.
fn setsid_sleep() -> ! {
    use std::io::Write;
    // A child of the server is never a group leader, so setsid() succeeds; if it did not, the test would still see
    // a live process by its pid.
    let _ = nix::unistd::setsid();
    let _ = writeln!(std::io::stdout(), "ready");
    let _ = std::io::stdout().flush();
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "--setsid-sleep") {
        setsid_sleep();
    }
    let fixture = Fixture::from_args(&args);
    if args.iter().any(|a| a == "--flood-stderr") {
        std::thread::spawn(|| {
            use std::io::Write;
            let line = "e".repeat(1000);
            loop {
                if writeln!(std::io::stderr(), "{line}").is_err() {
                    return;
                }
            }
        });
    }
    match flag(&args, "--http") {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            println!("http://{}/mcp", listener.local_addr()?);
            serve_http(fixture, listener).await
        }
        None if fixture.relayed => {
            // rmcp writes into a pipe; the relay copies it to stdout with the placeholders replaced.
            let (ours, theirs) = tokio::io::duplex(1 << 16);
            let (from_rmcp, _) = tokio::io::split(theirs);
            let (_, to_relay) = tokio::io::split(ours);
            tokio::spawn(hostile::relay(from_rmcp));
            let running = fixture.serve((tokio::io::stdin(), to_relay)).await?;
            running.waiting().await?;
            Ok(())
        }
        None => {
            let on_exit = flag(&args, "--on-exit");
            let stubborn = args.iter().any(|a| a == "--stubborn");
            // Only a stubborn server catches SIGTERM; the others die of it, as most servers do.
            let mut term = match stubborn {
                true => Some(tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?),
                false => None,
            };
            let running = fixture.serve(rmcp::transport::stdio()).await?;
            running.waiting().await?;
            let Some(file) = on_exit else { return Ok(()) };
            note(&file, "eof");
            let Some(term) = term.as_mut() else { return Ok(()) };
            while term.recv().await.is_some() {
                note(&file, "term");
            }
            Ok(())
        }
    }
}

/// Append `line` to `file`, synced, so a test reads it even if this process is killed right after.
fn note(file: &str, line: &str) {
    use std::io::Write;
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(file) {
        let _ = writeln!(f, "{line}");
        let _ = f.sync_all();
    }
}

/// Serve streamable HTTP at `/mcp` on `listener`.
pub async fn serve_http(fixture: Fixture, listener: tokio::net::TcpListener) -> Result<(), Box<dyn std::error::Error>> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let relayed = fixture.relayed;
    let service = StreamableHttpService::new(
        move || Ok(fixture.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let mut router = axum::Router::new().nest_service("/mcp", service);
    if relayed {
        router = router.layer(axum::middleware::map_response(hostile::relay_body));
    }
    axum::serve(listener, router).await?;
    Ok(())
}
