//! MCP serving throughput with the traffic pattern the MCP SDK clients use (the TypeScript and Python SDKs):
//! one session and one kept-alive HTTP/1.1 connection per concurrent caller, JSON-RPC `tools/call` POSTs
//! answered as SSE. Compared in the same run with spawning the same command directly at the same concurrency
//! (target: at least 0.8x of that ceiling at concurrency 1, 8 and 32).
//!
//! The same calls are measured against a second server that checks an OAuth bearer JWT on every request
//! (`expose.agent.mcp.auth`, keys from a local JWKS, each client sending one token as the SDKs do): the target is
//! at most 1.05x the time per call of the server without `auth` once the keys are cached (AUTH-10).
//!
//! A third server writes the audit trail to a file (`harness.audit.file`, fsynced, AUD-9): the target is at most
//! 1.05x the time per call of the server without it. Besides the criterion groups, the two are called in turn
//! (`audit interleaved`), with the one `fdatasync` each audited call must wait for measured in the same rounds.
//!
//! Before the criterion groups it prints, for 1,000 sequential calls on one session, the p50/p99 latency (target:
//! p99 under 5 ms) and the server's CPU per call: the server runs on its own runtime whose worker threads are
//! named, and their user+system time is read from `/proc/self/task/*/stat` (the children's CPU is not in it).

#[path = "common/echo_app.rs"]
mod echo_app;
#[path = "common/sdk_client.rs"]
mod sdk_client;
#[path = "common/stats.rs"]
mod stats;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use fisk_ai::Config;
use fisk_ai::serve::mcp::McpServer;
use sdk_client::SdkClient;
use std::hint::black_box;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const SERVER_THREAD: &str = "fisk-mcp-bench-server";
const CONCURRENCY: [usize; 3] = [1, 8, 32];

/// User+system CPU of the server's runtime threads, in clock ticks.
fn server_cpu_ticks() -> u64 {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !SERVER_THREAD.starts_with(comm.trim()) {
            continue;
        }
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        // Fields after the parenthesized name: state is 3rd, utime 14th, stime 15th.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
        let fields: Vec<&str> = rest.split_whitespace().collect();
        total += fields.get(11).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
        total += fields.get(12).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    }
    total
}

fn sequential_report(rt: &tokio::runtime::Runtime, url: &str, app: &Path, token: Option<&str>, what: &str) {
    const CALLS: usize = 1000;
    let client = rt.block_on(SdkClient::open_with(url, token));
    rt.block_on(async {
        for _ in 0..50 {
            client.call().await;
        }
    });
    let (mut lat, mut direct) = (Vec::with_capacity(CALLS), Vec::with_capacity(CALLS));
    let cpu0 = server_cpu_ticks();
    rt.block_on(async {
        for _ in 0..CALLS {
            let t = Instant::now();
            black_box(client.call().await);
            lat.push(t.elapsed());
        }
    });
    let cpu = server_cpu_ticks() - cpu0;
    rt.block_on(async {
        for _ in 0..CALLS {
            let t = Instant::now();
            let out = tokio::process::Command::new(app).args(["echo", "--", "hello"]).stdin(Stdio::null()).output();
            black_box(out.await.unwrap());
            direct.push(t.elapsed());
        }
    });
    let pct = |v: &mut Vec<Duration>, p: f64| {
        v.sort();
        stats::percentile(v, p)
    };
    let tick_ms = 1000.0 / 100.0; // USER_HZ is 100 on Linux
    eprintln!(
        "{what} sequential ({CALLS} calls, one session, kept-alive): p50 {:?} p99 {:?} | direct spawn p50 {:?} p99 {:?} \
         | server CPU {:.3} ms/call",
        pct(&mut lat, 0.50),
        pct(&mut lat, 0.99),
        pct(&mut direct, 0.50),
        pct(&mut direct, 0.99),
        cpu as f64 * tick_ms / CALLS as f64
    );
}

/// Audit on against off with the two servers called in turn (one call each per round, 1,000 rounds), so both see
/// the same machine: p50 and mean per call, and their ratios. In the same rounds, the floor that durability sets:
/// one `fdatasync` of a record-sized line appended to a file in the same directory, which the audited call waits
/// for once, before its process starts (AUD-6); the ratio with that floor taken out is what the trail itself adds.
fn audit_report(rt: &tokio::runtime::Runtime, url: &str, audit_url: &str, dir: &Path) {
    use std::io::Write;
    const ROUNDS: usize = 1000;
    let (plain, audited) = rt.block_on(async { (SdkClient::open(url).await, SdkClient::open(audit_url).await) });
    let mut floor_file = std::fs::OpenOptions::new().append(true).create(true).open(dir.join("floor.jsonl")).unwrap();
    let line = vec![b'x'; 700];
    let (mut off, mut on, mut floor) = (Vec::new(), Vec::new(), Vec::new());
    rt.block_on(async {
        for round in 0..ROUNDS + 50 {
            let t = Instant::now();
            black_box(plain.call().await);
            let plain_took = t.elapsed();
            let t = Instant::now();
            black_box(audited.call().await);
            let audited_took = t.elapsed();
            let t = Instant::now();
            floor_file.write_all(&line).unwrap();
            floor_file.sync_data().unwrap();
            // The first rounds warm both servers up.
            if round >= 50 {
                off.push(plain_took);
                on.push(audited_took);
                floor.push(t.elapsed());
            }
        }
    });
    let mean = |v: &[Duration]| v.iter().sum::<Duration>() / v.len() as u32;
    let (m_off, m_on, m_floor) = (mean(&off), mean(&on), mean(&floor));
    for v in [&mut off, &mut on, &mut floor] {
        v.sort();
    }
    let (p_off, p_on, p_floor) =
        (stats::percentile(&off, 0.5), stats::percentile(&on, 0.5), stats::percentile(&floor, 0.5));
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    eprintln!(
        "audit interleaved ({ROUNDS} rounds): off p50 {p_off:?} mean {m_off:?} | on p50 {p_on:?} mean {m_on:?} | \
         ratio p50 {:.3}x mean {:.3}x (target 1.05x) | one fdatasync p50 {p_floor:?} mean {m_floor:?} | \
         ratio less that floor: p50 {:.3}x mean {:.3}x",
        ratio(p_on, p_off),
        ratio(m_on, m_off),
        ratio(p_on.saturating_sub(p_floor), p_off),
        ratio(m_on.saturating_sub(m_floor), m_off),
    );
}

fn benches(c: &mut Criterion) {
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(SERVER_THREAD)
        .enable_all()
        .build()
        .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let app = echo_app::write(dir.path());
    let yaml = format!(
        "identity: bench\napplication_path: {}\nexpose:\n  agent:\n    mcp:\n      max_concurrent_tools: 32\n",
        app.display()
    );
    let url = server_rt.block_on(start(&yaml));
    let (auth_yaml, token) = auth::setup(dir.path(), &yaml);
    let auth_url = server_rt.block_on(start(&auth_yaml));
    let audit_yaml = yaml.replace(
        "expose:",
        &format!("harness:\n  audit:\n    file: {}\nexpose:", dir.path().join("audit.jsonl").display()),
    );
    let audit_url = server_rt.block_on(start(&audit_yaml));
    sequential_report(&rt, &url, &app, None, "mcp");
    sequential_report(&rt, &auth_url, &app, Some(&token), "mcp+auth");
    sequential_report(&rt, &audit_url, &app, None, "mcp+audit");
    audit_report(&rt, &url, &audit_url, dir.path());

    let mut g = c.benchmark_group("mcp");
    g.sample_size(20);
    for n in CONCURRENCY {
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("direct_spawn", n), &n, |b, &n| {
            b.iter(|| rt.block_on(async { black_box(echo_app::spawn_directly(&app, n).await) }))
        });
        let clients: Vec<SdkClient> = rt.block_on(futures::future::join_all((0..n).map(|_| SdkClient::open(&url))));
        g.bench_with_input(BenchmarkId::new("mcp_sdk_pattern", n), &n, |b, _| {
            b.iter(|| {
                rt.block_on(async { black_box(futures::future::join_all(clients.iter().map(SdkClient::call)).await) })
            })
        });
        let open = (0..n).map(|_| SdkClient::open_with(&auth_url, Some(&token)));
        let authed: Vec<SdkClient> = rt.block_on(futures::future::join_all(open));
        g.bench_with_input(BenchmarkId::new("mcp_sdk_pattern_auth", n), &n, |b, _| {
            b.iter(|| {
                rt.block_on(async { black_box(futures::future::join_all(authed.iter().map(SdkClient::call)).await) })
            })
        });
        let audited: Vec<SdkClient> =
            rt.block_on(futures::future::join_all((0..n).map(|_| SdkClient::open(&audit_url))));
        g.bench_with_input(BenchmarkId::new("mcp_sdk_pattern_audit", n), &n, |b, _| {
            b.iter(|| {
                rt.block_on(async { black_box(futures::future::join_all(audited.iter().map(SdkClient::call)).await) })
            })
        });
    }
    g.finish();
}

/// Serve `yaml` on a loopback port of the current runtime; the URL.
async fn start(yaml: &str) -> String {
    let server = McpServer::builder().config(Config::from_yaml_str(yaml).unwrap()).build().await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(server.serve(listener, std::future::pending()));
    url
}

/// The `auth` variant: the test fixtures' RSA key published in a local JWKS, and one token it signed.
mod auth {
    use jsonwebtoken::{Algorithm, EncodingKey, Header, jwk::Jwk};
    use std::path::Path;

    pub fn setup(dir: &Path, yaml: &str) -> (String, String) {
        let pem = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/jwt/rsa.pem")).unwrap();
        let key = EncodingKey::from_rsa_pem(&pem).unwrap();
        let mut jwk = Jwk::from_encoding_key(&key, Algorithm::RS256).unwrap();
        jwk.common.key_id = Some("bench".to_owned());
        let jwks = dir.join("jwks.json");
        std::fs::write(&jwks, serde_json::json!({"keys": [jwk]}).to_string()).unwrap();
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        let claims = serde_json::json!({"iss": "https://issuer.example", "aud": "https://bench.example/",
            "sub": "bench", "scope": "mcp.use", "exp": now + 3600});
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some("bench".to_owned());
        let token = jsonwebtoken::encode(&header, &claims, &key).unwrap();
        let yaml = format!(
            "{yaml}      auth:\n        issuer: https://issuer.example\n        audience: https://bench.example/\n        \
             jwks_file: {}\n        required_scopes: [mcp.use]\n",
            jwks.display()
        );
        (yaml, token)
    }
}

criterion_group!(mcp_benches, benches);
criterion_main!(mcp_benches);
