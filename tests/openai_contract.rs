//! Contract test: every scenario of the OpenAI provider suite (`common/openai_scenarios.rs`) runs against the fake
//! Chat Completions server, and then every request body the provider sent validates against
//! `CreateChatCompletionRequest` of OpenAI's OpenAPI description, every completion the fake replayed against
//! `CreateChatCompletionResponse`, and every SSE chunk it replayed against `CreateChatCompletionStreamResponse`.
//! Replies marked as quirks (error bodies, local servers' departures from the API) are what the provider must
//! survive, not what the API sends, and are not checked.
//!
//! `FISK_AI_OPENAI_OPENAPI` names the description (`../shared/fixtures/openai-openapi/openapi.yaml`, third-party,
//! never committed), `FISK_AI_OPENAPI_VALIDATE` the validator (`../shared/tools/openapi_validate.py`) and
//! `FISK_AI_OPENAPI_PYTHON` a Python with PyYAML and jsonschema (`.ci/run` sets all three up). Without them the test
//! prints a `SKIPPED` line and passes, except under `CI`, where it fails.
#![cfg(feature = "openai")]

#[path = "common/openai.rs"]
mod fake_openai;
#[path = "common/openai_scenarios.rs"]
mod scenarios;

use fake_openai::{Shape, recorded, split_events};
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::Write;
use std::process::Command;

/// The validator's verdict on `docs` as `schema`: `Err` with its report when any is invalid.
fn validate(python: &str, script: &str, spec: &str, schema: &str, docs: &BTreeSet<String>) -> Result<(), String> {
    let mut file = tempfile::Builder::new().suffix(".jsonl").tempfile().unwrap();
    for doc in docs {
        writeln!(file, "{doc}").unwrap();
    }
    file.flush().unwrap();
    let out = Command::new(python)
        .args([script, spec, schema])
        .arg(file.path())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python} {script}: {e}"));
    let report = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let summary = format!("{} passed, 0 failed", docs.len());
    if out.status.success() && report.contains(&summary) {
        return Ok(());
    }
    let bad: Vec<&str> = report.lines().filter(|l| !l.starts_with("ok ")).collect();
    Err(format!("{schema}:\n{}", bad.join("\n")))
}

/// The `data:` payloads of an SSE body but `[DONE]`.
fn chunk_payloads(body: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(body);
    split_events(&text)
        .iter()
        .flat_map(|e| {
            e.lines().filter_map(|l| l.strip_prefix("data:")).map(|d| d.trim().to_owned()).collect::<Vec<_>>()
        })
        .filter(|d| d != "[DONE]" && !d.is_empty())
        .collect()
}

/// A chunk as validated. The description lags the live API on one point (its README says so): it types
/// `choices[].finish_reason` as a string, but the API and every compatible server send `null` on every chunk but
/// the last. Only that null is replaced, with `"stop"`, before validation.
fn chunk_for_validation(payload: &str) -> String {
    let mut v: Value = serde_json::from_str(payload).unwrap_or_else(|e| panic!("replayed chunk is not JSON: {e}"));
    for choice in v["choices"].as_array_mut().into_iter().flatten() {
        if choice.get("finish_reason") == Some(&Value::Null) {
            choice["finish_reason"] = Value::from("stop");
        }
    }
    v.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contract_every_request_and_replayed_reply_of_the_suite_matches_openais_openapi_description() {
    let vars = ["FISK_AI_OPENAI_OPENAPI", "FISK_AI_OPENAPI_VALIDATE", "FISK_AI_OPENAPI_PYTHON"];
    let values: Vec<String> = vars.iter().filter_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty())).collect();
    let [spec, script, python] = values.as_slice() else {
        let msg = "SKIPPED: openai contract test: set FISK_AI_OPENAI_OPENAPI \
                   (../shared/fixtures/openai-openapi/openapi.yaml), FISK_AI_OPENAPI_VALIDATE \
                   (../shared/tools/openapi_validate.py) and FISK_AI_OPENAPI_PYTHON (a python with pyyaml and \
                   jsonschema; .ci/run makes one) to run it";
        assert!(std::env::var_os("CI").is_none(), "{msg} (required under CI)");
        // Straight to the process's stderr: the test harness captures eprintln!, and this must be seen.
        let _ = writeln!(std::io::stderr(), "\n!!!!!!!! {msg}\n");
        return;
    };
    assert!(std::path::Path::new(spec).is_file(), "FISK_AI_OPENAI_OPENAPI={spec} is not a file");

    for (name, scenario) in scenarios::all() {
        let _ = writeln!(std::io::stderr(), "scenario {name}");
        scenario().await;
    }
    let rec = recorded();
    let requests: BTreeSet<String> = rec
        .requests
        .iter()
        .map(|b| serde_json::from_slice::<Value>(b).expect("every request body is JSON").to_string())
        .collect();
    let mut completions = BTreeSet::new();
    let mut chunks = BTreeSet::new();
    for (shape, body) in &rec.replies {
        match shape {
            Shape::Completion => {
                completions.insert(serde_json::from_slice::<Value>(body).unwrap().to_string());
            }
            Shape::Chunks => chunks.extend(chunk_payloads(body).iter().map(|p| chunk_for_validation(p))),
            Shape::Quirk => {}
        }
    }
    let counts = (requests.len(), completions.len(), chunks.len());
    assert!(counts.0 >= 15 && counts.1 >= 8 && counts.2 >= 20, "the suite ran: {counts:?}");
    let results = [
        validate(python, script, spec, "CreateChatCompletionRequest", &requests),
        validate(python, script, spec, "CreateChatCompletionResponse", &completions),
        validate(python, script, spec, "CreateChatCompletionStreamResponse", &chunks),
    ];
    let failures: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    assert!(failures.is_empty(), "not valid against the description:\n{}", failures.join("\n\n"));
}
