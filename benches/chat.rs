//! Conversations (conversations issue, Measure).
//!
//! 1. Per-turn overhead of a 50-turn chat: the time from a follow-up to the next time the continuation is asked,
//!    at turns 1, 10 and 50, with a provider that answers at once without reading the request. The baseline at each
//!    depth is serializing that conversation (what a real provider does with it on every turn): the turn's cost
//!    may grow with the depth only as that does.
//! 2. Streamed-delta latency: from a chunk's write on a loopback socket to its `Delta` at the host, p50 and p99, for
//!    the Anthropic provider's delta sink against the same chunks read as raw bytes by a bare reqwest client (the
//!    baseline), in the same run. Printed, not a criterion group: criterion reports means, not percentiles.

use criterion::{BenchmarkId, Criterion, criterion_group};
use fisk_ai::agent::{Agent, NextStep, RunOptions, TurnEnd};
use fisk_ai::llm::{Block, Caps, Message, ModelProvider, ProviderError, Request, Response, StopReason, Usage};
use fisk_ai::{Config, async_trait};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Answers every call at once with a short text, reading nothing of the request.
struct Canned(Caps);

#[async_trait]
impl ModelProvider for Canned {
    fn capabilities(&self) -> &Caps {
        &self.0
    }

    async fn call(&self, _: &Request<'_>) -> Result<Response, ProviderError> {
        let usage = Usage { input_tokens: 10, output_tokens: 5, ..Usage::default() };
        Ok(Response::new(vec![Block::text("Daisy and Bella are hungry; feed them hay.")], StopReason::EndTurn, usage))
    }
}

fn agent(rt: &tokio::runtime::Runtime) -> Agent {
    // The cowsay demo: a real tool set in every request, as in a chat over the demo.
    let app = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/cowsay/cowsay");
    let yaml = format!("identity: bench\napplication_path: {app}\nsystem_prompt: s\nllm:\n  model: m\n");
    let config = Config::from_yaml_str(&yaml).unwrap();
    rt.block_on(Agent::builder().config(config).provider(Canned(Caps::new("canned"))).build()).unwrap()
}

/// One conversation of `depth` turns; returns how long turn `depth` took (follow-up given to continuation asked).
async fn turn_at(agent: &Agent, depth: usize) -> Duration {
    let state = Arc::new(Mutex::new((0usize, None::<Instant>, Duration::ZERO)));
    let seen = state.clone();
    let options = RunOptions::new().with_continuation(move |_: &TurnEnd| {
        let mut s = seen.lock().unwrap();
        s.0 += 1;
        if let Some(started) = s.1.take() {
            s.2 = started.elapsed();
        }
        let step = if s.0 >= depth {
            NextStep::End
        } else {
            if s.0 + 1 == depth {
                s.1 = Some(Instant::now());
            }
            NextStep::FollowUp("and the ones in the north field?".to_owned())
        };
        async move { step }
    });
    let started = Instant::now();
    agent.run("which cows are hungry?", options).await;
    let s = state.lock().unwrap();
    if depth == 1 { started.elapsed() } else { s.2 }
}

/// The conversation a provider serializes at turn `depth`.
fn conversation(depth: usize) -> Vec<Message> {
    let mut messages = Vec::new();
    for _ in 0..depth {
        messages.push(Message::user("and the ones in the north field?"));
        messages.push(Message::assistant(vec![Block::text("Daisy and Bella are hungry; feed them hay.")]));
    }
    messages.pop();
    messages
}

fn turns(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let agent = agent(&rt);
    let mut group = c.benchmark_group("chat_turn");
    for depth in [1usize, 10, 50] {
        group.bench_with_input(BenchmarkId::new("turn", depth), &depth, |b, &depth| {
            b.iter_custom(|iters| rt.block_on(async { futures_sum(&agent, depth, iters).await }));
        });
        let messages = conversation(depth);
        group.bench_with_input(BenchmarkId::new("baseline_serialize", depth), &messages, |b, m| {
            b.iter(|| serde_json::to_vec(std::hint::black_box(m)).unwrap().len());
        });
    }
    group.finish();
}

async fn futures_sum(agent: &Agent, depth: usize, iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        total += turn_at(agent, depth).await;
    }
    total
}

criterion_group!(benches, turns);

#[cfg(feature = "anthropic")]
#[path = "common/stats.rs"]
mod stats;

#[cfg(feature = "anthropic")]
mod latency {
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const CHUNKS: usize = 400;

    /// A Messages API stream, one `text_delta` per chunk, each written alone 1 ms apart; `sent[i]` is when chunk `i`
    /// went to the socket.
    async fn serve(listener: tokio::net::TcpListener, sent: Arc<Mutex<Vec<Instant>>>) {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 64 << 10];
        let mut got = Vec::new();
        loop {
            let n = sock.read(&mut buf).await.unwrap();
            got.extend_from_slice(&buf[..n]);
            if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
                let len: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse().unwrap());
                if got.len() >= end + 4 + len {
                    break;
                }
            }
        }
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
        sock.write_all(head.as_bytes()).await.unwrap();
        let start = r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}}"#;
        let block = r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#;
        sock.write_all(
            format!("event: message_start\ndata: {start}\n\nevent: content_block_start\ndata: {block}\n\n").as_bytes(),
        )
        .await
        .unwrap();
        for i in 0..CHUNKS {
            let delta = format!(
                "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"#{i};\"}}}}\n\n"
            );
            sent.lock().unwrap().push(Instant::now());
            sock.write_all(delta.as_bytes()).await.unwrap();
            sock.flush().await.unwrap();
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let end = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
        sock.write_all(end.as_bytes()).await.unwrap();
    }

    /// The chunk numbers `#i;` in `text`, each stamped `at`.
    fn stamp(text: &str, at: Instant, recv: &Mutex<Vec<Option<Instant>>>) {
        let mut recv = recv.lock().unwrap();
        for part in text.split('#').skip(1) {
            if let Some(i) = part.split(';').next().and_then(|n| n.parse::<usize>().ok()).filter(|i| *i < CHUNKS) {
                recv[i].get_or_insert(at);
            }
        }
    }

    async fn run(sdk: bool) -> Vec<Duration> {
        use fisk_ai::llm::{Delta, Message, ModelProvider, Request, ToolPlan};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let sent = Arc::new(Mutex::new(Vec::new()));
        let server = tokio::spawn(serve(listener, sent.clone()));
        let recv = Arc::new(Mutex::new(vec![None; CHUNKS]));
        if sdk {
            let provider = fisk_ai::llm::anthropic::AnthropicProvider::new("k").with_base_url(&url).unwrap();
            let plan = ToolPlan::new(fisk_ai::Selection::new().apply(Vec::new()).unwrap(), true);
            let messages = [Message::user("go")];
            let heard = recv.clone();
            let sink = move |d: Delta<'_>| {
                if let Delta::Text(t) = d {
                    stamp(t, Instant::now(), &heard);
                }
            };
            provider.call(&Request::new("m", &[], &messages, &plan).with_deltas(&sink)).await.unwrap();
        } else {
            use futures::StreamExt;
            let resp = reqwest::Client::new().post(format!("{url}/v1/messages")).body("{}").send().await.unwrap();
            let mut body = resp.bytes_stream();
            while let Some(chunk) = body.next().await {
                stamp(&String::from_utf8_lossy(&chunk.unwrap()), Instant::now(), &recv);
            }
        }
        server.await.unwrap();
        let sent = sent.lock().unwrap();
        let recv = recv.lock().unwrap();
        sent.iter().zip(recv.iter()).map(|(s, r)| r.expect("every chunk arrives").duration_since(*s)).collect()
    }

    use super::stats::percentile;

    pub(crate) fn report() {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let mut base = rt.block_on(run(false));
        let mut sdk = rt.block_on(run(true));
        base.sort();
        sdk.sort();
        let (b50, b99) = (percentile(&base, 0.5), percentile(&base, 0.99));
        let (s50, s99) = (percentile(&sdk, 0.5), percentile(&sdk, 0.99));
        println!("delta latency, socket write to host ({CHUNKS} chunks, 1 ms apart):");
        println!("  baseline raw reqwest bytes: p50 {b50:?}  p99 {b99:?}");
        println!("  fisk-ai Delta event:        p50 {s50:?}  p99 {s99:?}");
        println!(
            "  ratio: p50 {:.2}x  p99 {:.2}x",
            s50.as_secs_f64() / b50.as_secs_f64(),
            s99.as_secs_f64() / b99.as_secs_f64()
        );
    }
}

fn main() {
    benches();
    #[cfg(feature = "anthropic")]
    latency::report();
    Criterion::default().configure_from_args().final_summary();
}
