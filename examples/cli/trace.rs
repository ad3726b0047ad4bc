//! `--trace FILE` (PROV-18): one JSON object per line for each model request, response, error and retry, plus a
//! session header and a summary footer. The file must not exist and is created with mode 0600; a write failure is
//! warned once and the run goes on.

use fisk_ai::agent::RunOutcome;
use fisk_ai::llm::anthropic::{WireError, WireObserver, WireRequest, WireResponse, WireRetry};
use serde_json::{Value, json};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

pub(crate) struct Trace {
    file: Mutex<File>,
    failed: AtomicBool,
}

fn now() -> f64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or_default()
}

/// A body as JSON when it is JSON, else as text.
fn body(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

impl Trace {
    pub(crate) fn create(path: &Path) -> Result<Arc<Self>, Box<dyn std::error::Error>> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| format!("--trace {}: {e} (the file must not exist)", path.display()))?;
        Ok(Arc::new(Trace { file: Mutex::new(file), failed: AtomicBool::new(false) }))
    }

    fn write(&self, mut record: Value) {
        record["time"] = json!(now());
        let mut line = record.to_string();
        line.push('\n');
        let ok = self.file.lock().map(|mut f| f.write_all(line.as_bytes()).is_ok()).unwrap_or(false);
        if !ok && !self.failed.swap(true, Ordering::Relaxed) {
            eprintln!("warning: writing the trace file failed; the run continues without it");
        }
    }

    pub(crate) fn header(&self, model: &str, tools: usize) {
        self.write(json!({"type": "session", "model": model, "tools": tools, "pid": std::process::id()}));
    }

    pub(crate) fn footer(&self, outcome: &RunOutcome) {
        let s = &outcome.stats;
        self.write(json!({
            "type": "summary",
            "reason": outcome.reason.as_str(),
            "error": outcome.error.as_ref().map(ToString::to_string),
            "llm_calls": s.llm_calls,
            "tool_calls": s.tool_calls,
            "input_tokens": s.usage.input_tokens,
            "output_tokens": s.usage.output_tokens,
            "cache_read_tokens": s.usage.cache_read_tokens,
            "cache_creation_tokens": s.usage.cache_creation_tokens,
            "latency_ms": u64::try_from(s.latency.as_millis()).unwrap_or(u64::MAX),
        }));
    }
}

impl WireObserver for Trace {
    fn on_request(&self, r: &WireRequest<'_>) {
        self.write(
            json!({"type": "request", "attempt": r.attempt, "method": r.method, "url": r.url, "body": body(r.body)}),
        );
    }

    fn on_response(&self, r: &WireResponse<'_>) {
        self.write(json!({
            "type": "response", "attempt": r.attempt, "status": r.status, "request_id": r.request_id,
            "streamed": r.streamed, "elapsed_ms": u64::try_from(r.elapsed.as_millis()).unwrap_or(u64::MAX),
            "body": body(r.body),
        }));
    }

    fn on_error(&self, e: &WireError<'_>) {
        self.write(
            json!({"type": "error", "attempt": e.attempt, "error": e.error.to_string(), "will_retry": e.will_retry}),
        );
    }

    fn on_retry(&self, r: &WireRetry<'_>) {
        self.write(json!({
            "type": "retry", "attempt": r.attempt, "wait_ms": u64::try_from(r.wait.as_millis()).unwrap_or(u64::MAX),
            "error": r.error.to_string(),
        }));
    }
}
