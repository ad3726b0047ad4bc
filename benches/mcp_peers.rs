//! The server's cost per call measured from outside, against peers in the same run (issue 27's "Server CPU per
//! HTTP call"): the fisk-ai MCP server and the official Python MCP SDK's server each run as their own process,
//! serving the same trivial command (`benches/common/echo_app.rs`), and are driven the way the SDK clients drive a
//! server (one session and one kept-alive connection per caller, `tools/call` answered as SSE).
//!
//! For each server: the server process's own CPU per call (user+system from `/proc/<pid>/stat`; the spawned
//! commands' CPU is their own and not counted) and its calls/s, over 1,000 sequential calls and at concurrency 8;
//! the ceiling is a bare spawn loop in C (`benches/peers/spawn_loop.c`, built with `cc`) running the same command
//! at the same concurrency. With Node.js and `@modelcontextprotocol/sdk` at hand, the official TypeScript SDK
//! client's sequential `tools/call` latency (p50, p99, max) against each server.
//!
//! ```text
//! FISK_AI_PYTHON=.../bin/python FISK_AI_NODE=.../bin/node FISK_AI_NODE_MODULES=.../node_modules \
//!     cargo bench --bench mcp_peers
//! ```
//!
//! Each peer is optional: without `FISK_AI_PYTHON` (an interpreter with `mcp` installed), `cc` or `FISK_AI_NODE`
//! the figures that need it are left out and the report says so.

#[path = "common/echo_app.rs"]
mod echo_app;
#[path = "common/sdk_client.rs"]
mod sdk_client;

use fisk_ai::Config;
use fisk_ai::serve::mcp::McpServer;
use sdk_client::SdkClient;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CONCURRENT: usize = 8;
/// Sequential calls per measurement (1,000), times `FISK_AI_BENCH_SCALE` when set (to profile a longer run).
fn sequential() -> usize {
    1000 * scale()
}
/// Calls at concurrency 8 per measurement (2,000), times `FISK_AI_BENCH_SCALE`.
fn concurrent_calls() -> usize {
    2000 * scale()
}
fn scale() -> usize {
    std::env::var("FISK_AI_BENCH_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1)
}
/// The environment variable that makes this binary the fisk-ai server process, serving the application it names.
const SERVE: &str = "FISK_AI_BENCH_SERVE";

fn main() {
    if let Ok(app) = std::env::var(SERVE) {
        return serve(&app);
    }
    let dir = tempfile::tempdir().unwrap();
    let app = echo_app::write(dir.path());
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();

    match spawn_loop(dir.path()) {
        Some(c) => {
            let rate = |n: usize| c.run(&app, n);
            eprintln!("bare spawn loop in C: {:.0} calls/s sequential, {:.0} at concurrency 8", rate(1), rate(8));
        }
        None => eprintln!("bare spawn loop in C: no `cc`, left out"),
    }
    let fisk = Server::fisk(&app);
    let fisk_cost = rt.block_on(fisk.measure());
    eprintln!("fisk-ai server: {fisk_cost}");
    let python = Server::python(&app);
    match &python {
        Some(py) => {
            let py_cost = rt.block_on(py.measure());
            eprintln!("python sdk server: {py_cost}");
            eprintln!(
                "fisk-ai/python CPU per call: {:.3}x sequential, {:.3}x at concurrency 8",
                fisk_cost.cpu_seq / py_cost.cpu_seq,
                fisk_cost.cpu_conc / py_cost.cpu_conc
            );
        }
        None => eprintln!("python sdk server: FISK_AI_PYTHON unset, left out"),
    }
    if std::env::var_os("FISK_AI_NODE").is_none() || std::env::var_os("FISK_AI_NODE_MODULES").is_none() {
        return eprintln!("typescript sdk client: FISK_AI_NODE or FISK_AI_NODE_MODULES unset, left out");
    }
    for (name, server) in [("fisk-ai", Some(&fisk)), ("python sdk", python.as_ref())] {
        if let Some(line) = server.and_then(|s| ts_client(&s.url)) {
            eprintln!("typescript sdk client against the {name} server: {line}");
        }
    }
}

/// This binary as the fisk-ai server: serve `app` on a loopback port, print the URL, stop when stdin closes.
fn serve(app: &str) {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let yaml = format!(
            "identity: bench\napplication_path: {app}\nexpose:\n  agent:\n    mcp:\n      max_concurrent_tools: 32\n"
        );
        let server = McpServer::builder().config(Config::from_yaml_str(&yaml).unwrap()).build().await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("http://{}/", listener.local_addr().unwrap());
        let stdin_closed = async {
            let _ = tokio::io::copy(&mut tokio::io::stdin(), &mut tokio::io::sink()).await;
        };
        server.serve(listener, stdin_closed).await.unwrap();
    });
}

/// A server process and its URL; killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn fisk(app: &Path) -> Server {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env(SERVE, app)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut url = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut url).unwrap();
        Server { child, url: url.trim().to_owned() }
    }

    fn python(app: &Path) -> Option<Server> {
        let python = std::env::var_os("FISK_AI_PYTHON")?;
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/echo_server.py");
        let child = Command::new(python)
            .arg(script)
            .arg(app)
            .arg(port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let until = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < until, "the Python SDK server did not listen within 30s");
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(Server { child, url: format!("http://127.0.0.1:{port}/mcp") })
    }

    /// User+system CPU of the server process so far, in seconds (its waited-for children's is not in it).
    fn cpu(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap();
        let rest = stat.rsplit_once(')').unwrap().1;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        ticks as f64 / 100.0 // USER_HZ
    }

    /// Context switches of the server's threads so far (voluntary and not), summed over `/proc/<pid>/task`.
    fn switches(&self) -> f64 {
        let mut total = 0u64;
        for task in std::fs::read_dir(format!("/proc/{}/task", self.child.id())).unwrap().flatten() {
            let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
            for line in status.lines().filter(|l| l.contains("ctxt_switches")) {
                total += line.rsplit(char::is_whitespace).next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
            }
        }
        total as f64
    }

    async fn measure(&self) -> Cost {
        let one = SdkClient::open(&self.url).await;
        for _ in 0..50 {
            one.call().await;
        }
        let (cpu0, sw0, t0) = (self.cpu(), self.switches(), Instant::now());
        let mut lat = Vec::with_capacity(sequential());
        for _ in 0..sequential() {
            let t = Instant::now();
            one.call().await;
            lat.push(t.elapsed());
        }
        let (cpu_seq, rate_seq) = ((self.cpu() - cpu0) / sequential() as f64, sequential() as f64 / secs(t0));
        let switches_seq = (self.switches() - sw0) / sequential() as f64;
        lat.sort();
        let clients = futures::future::join_all((0..CONCURRENT).map(|_| SdkClient::open(&self.url))).await;
        let (cpu0, t0) = (self.cpu(), Instant::now());
        futures::future::join_all(clients.iter().map(|c| async move {
            for _ in 0..concurrent_calls() / CONCURRENT {
                c.call().await;
            }
        }))
        .await;
        let (cpu_conc, rate_conc) =
            ((self.cpu() - cpu0) / concurrent_calls() as f64, concurrent_calls() as f64 / secs(t0));
        let p = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)];
        Cost { cpu_seq, rate_seq, switches_seq, cpu_conc, rate_conc, p50: p(0.5), p99: p(0.99) }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn secs(since: Instant) -> f64 {
    since.elapsed().as_secs_f64()
}

/// What one server costs: CPU per call in seconds and calls/s, sequential and at concurrency 8, and the
/// sequential latency.
struct Cost {
    cpu_seq: f64,
    rate_seq: f64,
    /// Context switches of the server's threads per sequential call.
    switches_seq: f64,
    cpu_conc: f64,
    rate_conc: f64,
    p50: Duration,
    p99: Duration,
}

impl std::fmt::Display for Cost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "sequential {:.0} µs CPU/call, {:.1} context switches/call, {:.0} calls/s, p50 {:?} p99 {:?} | concurrency 8 {:.0} µs CPU/call, {:.0} calls/s",
            self.cpu_seq * 1e6,
            self.switches_seq,
            self.rate_seq,
            self.p50,
            self.p99,
            self.cpu_conc * 1e6,
            self.rate_conc
        )
    }
}

/// The C spawn loop, built with `cc` into `dir`.
struct SpawnLoop(PathBuf);

fn spawn_loop(dir: &Path) -> Option<SpawnLoop> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/spawn_loop.c");
    let bin = dir.join("spawn_loop");
    let built = Command::new("cc").args(["-O2", "-pthread", "-o"]).arg(&bin).arg(src).status().ok()?;
    built.success().then_some(SpawnLoop(bin))
}

impl SpawnLoop {
    /// Calls per second of `app echo -- hello` at concurrency `n`.
    fn run(&self, app: &Path, n: usize) -> f64 {
        let calls = if n == 1 { sequential() } else { concurrent_calls() };
        let out = Command::new(&self.0).arg(app).arg(calls.to_string()).arg(n.to_string()).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    }
}

/// The TypeScript SDK client's "p50 p99 max" (µs) over 1,000 sequential calls to `url`, if Node.js is at hand.
fn ts_client(url: &str) -> Option<String> {
    let node = std::env::var_os("FISK_AI_NODE")?;
    let modules = std::env::var_os("FISK_AI_NODE_MODULES")?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/ts_client.mjs");
    let out = Command::new(node).arg(script).arg(url).arg(sequential().to_string()).arg(modules).output().ok()?;
    assert!(out.status.success(), "ts_client: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let us: Vec<&str> = text.split_whitespace().collect();
    Some(format!("p50 {} µs, p99 {} µs, max {} µs", us[0], us[1], us[2]))
}
