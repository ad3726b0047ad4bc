//! A loopback OTLP/HTTP receiver (tests/fixtures/python/otlp_receiver.py) that decodes what it gets with the
//! official `opentelemetry-proto` package, run by the interpreter `FISK_AI_OTLP_PYTHON` names (`.ci/run` installs
//! the package into its MCP venv and exports the variable); the spans it decoded, as JSON.

use serde_json::Value;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The interpreter, after checking it imports `opentelemetry.proto`; a missing one fails the test, naming why.
pub fn interpreter() -> PathBuf {
    let unavailable = |why: String| -> ! {
        panic!(
            "the OTLP receiver is unavailable: {why}; set FISK_AI_OTLP_PYTHON to a python with opentelemetry-proto \
             installed (.ci/run creates one)"
        )
    };
    let Some(python) = std::env::var_os("FISK_AI_OTLP_PYTHON").filter(|v| !v.is_empty()) else {
        unavailable("FISK_AI_OTLP_PYTHON is not set".to_owned())
    };
    let python = PathBuf::from(python);
    let check = "from opentelemetry.proto.collector.trace.v1 import trace_service_pb2";
    match std::process::Command::new(&python).args(["-c", check]).output() {
        Ok(out) if out.status.success() => python,
        Ok(out) => unavailable(format!(
            "{} cannot import opentelemetry.proto: {}",
            python.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => unavailable(format!("{} does not run: {e}", python.display())),
    }
}

/// A running receiver; killed when dropped.
pub struct Receiver {
    child: std::process::Child,
    port: u16,
    out: PathBuf,
}

impl Receiver {
    /// Start one on a free loopback port and wait until it accepts connections.
    pub fn start() -> Receiver {
        let python = interpreter();
        let script = super::root().join("tests/fixtures/python/otlp_receiver.py");
        let out = super::fresh_dir("otlp").join("spans.jsonl");
        // A port picked by binding :0 can be taken before the child binds it; then try another.
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let mut child = std::process::Command::new(&python)
                .arg(&script)
                .arg(port.to_string())
                .arg(&out)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap();
            for _ in 0..200 {
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Receiver { child, port, out };
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("the OTLP receiver did not start listening");
    }

    /// The base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` takes it.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The full traces URL.
    pub fn traces_url(&self) -> String {
        format!("{}/v1/traces", self.base_url())
    }

    /// Every span received so far; a request the receiver could not decode fails the test.
    pub fn spans(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let errors: Vec<&Value> = lines.iter().filter(|l| l.get("error").is_some()).collect();
        assert!(errors.is_empty(), "the receiver could not decode a request: {errors:?}");
        lines
    }

    /// The spans once `done` holds for them, waiting up to 30 s (a batch is exported on a timer).
    pub fn spans_when(&self, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let spans = self.spans();
            if done(&spans) || start.elapsed() > Duration::from_secs(30) {
                return spans;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The spans whose exported name is `name`.
pub fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

/// The one span whose exported name is `name`.
pub fn one<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    let found = named(spans, name);
    assert_eq!(found.len(), 1, "one {name:?} span in {}", names(spans));
    found[0]
}

/// Every span's name, for failure messages.
pub fn names(spans: &[Value]) -> String {
    spans.iter().map(|s| s["name"].as_str().unwrap_or("?")).collect::<Vec<_>>().join(", ")
}
