//! Call overhead: one tool call through the harness (validation, argv, spawn, merged capture) against a bare tokio
//! spawn-and-wait of the same argv with its output captured (target: at most 1.05x).

use criterion::{Criterion, criterion_group, criterion_main};
use fisk_ai::source::fisk::{AppModel, FiskApp};
use fisk_ai::tool::{CallContext, ToolInput};
use std::hint::black_box;
use std::process::Stdio;

const DOC: &str = r#"{"name":"echo","commands":[{"name":"say","help":"Say",
 "flags":[{"name":"wrap","boolean":true,"cumulative":false}],
 "args":[{"name":"message","required":true,"cumulative":false}],
 "restricted_schema":{"type":"object","additionalProperties":false,"required":["message"],
   "properties":{"wrap":{"type":"boolean"},"message":{"type":"string"}}}}]}"#;

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let app = FiskApp::new("/bin/echo");
    let tool = app.tools_from_model(AppModel::from_slice(DOC.as_bytes()).unwrap()).unwrap().tools.remove(0);
    let input = ToolInput::from_json(r#"{"message": "hello world", "wrap": true}"#).unwrap();
    let ctx = CallContext::new();
    let argv = ["say", "--wrap", "--", "hello world"];

    let mut g = c.benchmark_group("call");
    g.bench_function("baseline_bare_spawn", |b| {
        b.iter(|| {
            rt.block_on(async {
                let out =
                    tokio::process::Command::new("/bin/echo").args(argv).stdin(Stdio::null()).output().await.unwrap();
                black_box(out)
            })
        })
    });
    g.bench_function("harness_call", |b| b.iter(|| rt.block_on(async { black_box(tool.call(&input, &ctx).await) })));
    g.finish();
}

criterion_group!(call_benches, benches);
criterion_main!(call_benches);
