//! Shared parts of the MCP serving tests: a real server on 127.0.0.1:0 over the fake application
//! (tests/fixtures/fisk/mcp-app.json), and rmcp's own client over loopback HTTP on either lifecycle.
#![allow(dead_code)]

pub mod raw;
pub mod stdio;

use fisk_ai::Config;
use fisk_ai::serve::mcp::{McpEvent, McpServer, McpServerBuilder};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation, ProgressNotificationParam, ProtocolVersion, TASKS_EXTENSION_ID,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, RequestContext, RoleClient, RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tempfile::TempDir;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The two protocol eras a client can be on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `initialize` lifecycle; rmcp negotiates it down to 2025-11-25; gated calls use `elicitation/create`.
    Legacy,
    /// `server/discover` lifecycle on 2026-07-28; gated calls use `InputRequiredResult`.
    Modern,
}

pub const ERAS: [Era; 2] = [Era::Legacy, Era::Modern];

/// How the test client's user answers an approval request.
#[derive(Debug, Clone)]
pub enum Answer {
    Approve,
    /// `accept` with `approve: false`.
    AcceptFalse,
    /// `accept` with `approve: "yes"` (not the boolean true).
    AcceptOther,
    Decline,
    Cancel,
    /// The client's handler fails.
    Error,
    /// Never answers.
    Hang,
    /// Waits for the notify, then approves.
    ApproveAfter(Arc<Notify>),
}

/// What the client's user was shown.
#[derive(Debug, Clone)]
pub struct Asked {
    pub message: String,
    pub schema: Value,
}

/// A test client: declares elicitation or not, answers per [`Answer`], records what it was asked.
#[derive(Clone)]
pub struct TestClient {
    pub elicit: bool,
    pub answer: Answer,
    pub asked: Arc<Mutex<Vec<Asked>>>,
    /// Every `notifications/progress` received, with when it arrived.
    pub progress: Arc<Mutex<Vec<(std::time::Instant, ProgressNotificationParam)>>>,
    /// Declares the tasks extension (TASK-1).
    pub tasks: bool,
}

impl TestClient {
    pub fn new(elicit: bool, answer: Answer) -> Self {
        TestClient { elicit, answer, asked: Arc::default(), progress: Arc::default(), tasks: false }
    }

    /// The same client, declaring the tasks extension.
    pub fn with_tasks(mut self) -> Self {
        self.tasks = true;
        self
    }

    pub fn asked(&self) -> Vec<Asked> {
        self.asked.lock().unwrap().clone()
    }
}

impl ClientHandler for TestClient {
    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        self.progress.lock().unwrap().push((std::time::Instant::now(), params));
    }

    fn get_info(&self) -> ClientConfig {
        let mut caps = if self.elicit {
            ClientCapabilities::builder().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        if self.tasks {
            caps.extensions
                .get_or_insert_with(Default::default)
                .insert(TASKS_EXTENSION_ID.to_owned(), Default::default());
        }
        ClientConfig::new(caps, Implementation::new("fisk-test-client", "1.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } = &request {
            self.asked
                .lock()
                .unwrap()
                .push(Asked { message: message.clone(), schema: serde_json::to_value(requested_schema).unwrap() });
        }
        let accept = |v: Value| Ok(ElicitResult::new(ElicitationAction::Accept).with_content(v));
        match &self.answer {
            Answer::Approve => accept(json!({"approve": true})),
            Answer::AcceptFalse => accept(json!({"approve": false})),
            Answer::AcceptOther => accept(json!({"approve": "yes"})),
            Answer::Decline => Ok(ElicitResult::new(ElicitationAction::Decline)),
            Answer::Cancel => Ok(ElicitResult::new(ElicitationAction::Cancel)),
            Answer::Error => Err(ErrorData::internal_error("the approval dialog crashed", None)),
            Answer::Hang => {
                std::future::pending::<()>().await;
                unreachable!()
            }
            Answer::ApproveAfter(go) => {
                go.notified().await;
                accept(json!({"approve": true}))
            }
        }
    }
}

pub type Client = RunningService<RoleClient, TestClient>;

/// Connect `client` to `url` on `era`.
pub async fn connect(url: &str, client: TestClient, era: Era) -> Client {
    let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
    match era {
        Era::Legacy => client.serve(transport).await.expect("legacy connect"),
        Era::Modern => client
            .serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] },
            )
            .await
            .expect("discover connect"),
    }
}

/// Call `name` with `args`, driving approval rounds; panics on a protocol error (MCP-18 says there are none).
pub async fn call(client: &Client, name: &str, args: Value) -> CallToolResult {
    client.call_tool(params(name, args)).await.unwrap_or_else(|e| panic!("protocol error calling {name}: {e}"))
}

pub fn params(name: &str, args: Value) -> CallToolRequestParams {
    let p = CallToolRequestParams::new(name.to_owned());
    match args {
        Value::Object(map) => p.with_arguments(map),
        Value::Null => p,
        other => panic!("arguments must be an object, got {other}"),
    }
}

/// The single text content of a result.
pub fn text(result: &CallToolResult) -> String {
    assert_eq!(result.content.len(), 1, "one content item: {result:?}");
    result.content[0].as_text().expect("text content").text.clone()
}

pub fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

/// The EXEC-13 JSON of a command that ran.
pub fn exec_json(result: &CallToolResult) -> Value {
    assert!(!is_error(result), "expected a normal result, got {result:?}");
    serde_json::from_str(&text(result)).expect("EXEC-13 JSON")
}

/// The `mcp` block lines (already indented under `mcp:`), e.g. `["confirm_over_mcp: auto"]`.
pub fn config_yaml(dir: &Path, mcp: &[&str], extra: &str) -> String {
    let app = crate::common::fake_app(dir, "mcp-app");
    let mcp = if mcp.is_empty() {
        "    mcp: {}\n".to_owned()
    } else {
        let mut s = "    mcp:\n".to_owned();
        for line in mcp {
            s.push_str(&format!("      {line}\n"));
        }
        s
    };
    format!(
        "identity: testsrv\napplication_path: {}\nharness:\n  confirm_tags: [impact:rw]\n  tools:\n    - name: \
         base64_encode\n    - name: read_file\n      confirm: true\n      options: {{root: {}}}\n{extra}expose:\n  \
         agent:\n{mcp}",
        app.display(),
        dir.display()
    )
}

pub fn config(dir: &Path, mcp: &[&str]) -> Config {
    Config::from_yaml_str(&config_yaml(dir, mcp, "")).unwrap()
}

/// A running server and what it logged.
pub struct Served {
    pub url: String,
    pub addr: std::net::SocketAddr,
    pub dir: TempDir,
    pub events: Arc<Mutex<Vec<String>>>,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<fisk_ai::Result<()>>,
}

impl Served {
    /// The lines `ran` holds: what gated commands actually ran.
    pub fn ran(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("ran"))
            .map(|s| s.lines().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn events(&self) -> Vec<String> {
        self.events.lock().unwrap().clone()
    }

    /// Stop and wait for the server to return.
    pub async fn stop(self) -> fisk_ai::Result<()> {
        self.stop.cancel();
        tokio::time::timeout(Duration::from_secs(30), self.task).await.expect("server stops").expect("join")
    }

    pub fn trigger_stop(&self) {
        self.stop.cancel();
    }

    pub async fn join(self) -> fisk_ai::Result<()> {
        tokio::time::timeout(Duration::from_secs(30), self.task).await.expect("server stops").expect("join")
    }
}

/// ` by <caller>` for an authenticated call, nothing otherwise.
fn by(caller: Option<&fisk_ai::serve::mcp::Caller>) -> String {
    caller.map(|c| format!(" by {c}")).unwrap_or_default()
}

/// Render an event as one line, the way a log would.
pub fn render(e: &McpEvent<'_>) -> String {
    match e {
        McpEvent::Warning(w) => format!("warning {} {w}", w.kind()),
        McpEvent::ClientConnected { client, protocol, elicitation, gated, caller } => {
            let client = client.unwrap_or("-");
            format!("connected {client} {protocol} elicitation={elicitation} {gated:?}{}", by(*caller))
        }
        McpEvent::ToolCall { name, display, caller } => format!("call {name} {display}{}", by(*caller)),
        McpEvent::Denied { name, display, why, caller } => format!("denied {name} {display} {why:?}{}", by(*caller)),
        McpEvent::Cancelled { name, display, caller } => format!("cancelled {name} {display}{}", by(*caller)),
        McpEvent::TaskRefused { name, why, caller } => format!("task refused {name} {why}{}", by(*caller)),
        _ => format!("{e:?}"),
    }
}

/// Build and serve a server on 127.0.0.1:0 for `config`; `tweak` adjusts the builder.
pub async fn serve_config(
    dir: TempDir,
    config: Config,
    tweak: impl FnOnce(McpServerBuilder) -> McpServerBuilder,
) -> Served {
    let events: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = events.clone();
    let builder =
        McpServer::builder().config(config).events(move |e: &McpEvent<'_>| sink.lock().unwrap().push(render(e)));
    let server = tweak(builder).build().await.expect("server builds");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let task = tokio::spawn(server.serve(listener, stop.clone().cancelled_owned()));
    Served { url: format!("http://{addr}/"), addr, dir, events, stop, task }
}

/// As [`serve_config`], on `port` of 127.0.0.1 (for a configuration that must name its own URL).
pub async fn serve_on(dir: TempDir, config: Config, port: u16) -> Served {
    let events: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = events.clone();
    let builder =
        McpServer::builder().config(config).events(move |e: &McpEvent<'_>| sink.lock().unwrap().push(render(e)));
    let server = builder.build().await.expect("server builds");
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let task = tokio::spawn(server.serve(listener, stop.clone().cancelled_owned()));
    Served { url: format!("http://{addr}/"), addr, dir, events, stop, task }
}

/// A server over the fake application with these `mcp` settings.
pub async fn serve(mcp: &[&str]) -> Served {
    serve_with(mcp, |b| b).await
}

pub async fn serve_with(mcp: &[&str], tweak: impl FnOnce(McpServerBuilder) -> McpServerBuilder) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), mcp);
    serve_config(dir, config, tweak).await
}

/// The two pids the fake application's `hang` command writes to `pidfile` (its two sleepers), once both are there.
pub async fn pids(pidfile: &Path) -> [i32; 2] {
    for _ in 0..400 {
        if let Ok(s) = std::fs::read_to_string(pidfile)
            && let [a, b] = s.lines().filter_map(|l| l.trim().parse().ok()).collect::<Vec<i32>>()[..]
        {
            return [a, b];
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{} never held two pids", pidfile.display());
}

/// CANCEL-1: start `hang`, cancel it once its sleepers run, check both are gone, then check the next call gets the
/// slot (run this with `max_concurrent_tools: 1`).
pub async fn cancel_then_call_again(client: &Client, pidfile: &Path) {
    use rmcp::model::{ClientRequest, Request};
    use rmcp::service::PeerRequestOptions;
    let args = json!({"pidfile": pidfile.display().to_string()});
    let request = ClientRequest::CallToolRequest(Request::new(params("hang", args)));
    let handle = client.peer().send_cancellable_request(request, PeerRequestOptions::no_options()).await.unwrap();
    let [a, b] = pids(pidfile).await;
    handle.cancel(Some("the user gave up".to_owned())).await.unwrap();
    crate::common::procs::wait_gone(a, "a sleeper of the cancelled call").await;
    crate::common::procs::wait_gone(b, "a sleeper of the cancelled call").await;
    let next = call(client, "echo", json!({"words": ["next"]}));
    let next = tokio::time::timeout(Duration::from_secs(20), next).await;
    assert_eq!(exec_json(&next.expect("the cancelled call's slot was freed"))["output"], "echo: next\n");
}
