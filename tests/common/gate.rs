//! A `ConfirmGate` double for agent-level gate tests: scripted answers, a switchable "can ask", and a record of
//! every call, so a test sees what the agent loop asked and in which order.

use fisk_ai::async_trait;
use fisk_ai::gate::{ConfirmGate, ConfirmRequest, Decision};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What the gate was asked, shared between the gate (moved into the agent) and the test.
#[derive(Debug, Default)]
pub struct GateLog {
    can_ask: AtomicBool,
    can_ask_calls: AtomicUsize,
    asked: Mutex<Vec<ConfirmRequest>>,
    answers: Mutex<VecDeque<Decision>>,
}

impl GateLog {
    /// How often `can_ask` was called.
    pub fn can_ask_calls(&self) -> usize {
        self.can_ask_calls.load(Ordering::SeqCst)
    }

    /// The tool names `confirm` was asked about, in order.
    pub fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().iter().map(|r| r.tool.clone()).collect()
    }

    /// The full requests `confirm` was asked with.
    pub fn requests(&self) -> Vec<ConfirmRequest> {
        self.asked.lock().unwrap().clone()
    }

    /// Change what `can_ask` reports from now on (for example from an event sink in the middle of a run).
    pub fn set_can_ask(&self, on: bool) {
        self.can_ask.store(on, Ordering::SeqCst);
    }

    /// Scripted answers not yet given.
    pub fn unused_answers(&self) -> usize {
        self.answers.lock().unwrap().len()
    }
}

/// A gate that answers from a script; asking it more often than scripted fails the test.
#[derive(Debug, Clone)]
pub struct RecordingGate {
    log: Arc<GateLog>,
}

impl RecordingGate {
    /// A gate that can ask and gives `answers` in order.
    pub fn new(answers: &[Decision]) -> (Self, Arc<GateLog>) {
        let log = Arc::new(GateLog {
            can_ask: AtomicBool::new(true),
            answers: Mutex::new(answers.iter().copied().collect()),
            ..GateLog::default()
        });
        (RecordingGate { log: log.clone() }, log)
    }

    /// A gate that reports nobody can be asked (no terminal, GATE-6), yet would approve if asked anyway: a loop
    /// that asks it regardless would run the command, so the test sees the mistake.
    pub fn unreachable() -> (Self, Arc<GateLog>) {
        let (gate, log) = Self::new(&[Decision::Once; 8]);
        log.set_can_ask(false);
        (gate, log)
    }
}

#[async_trait]
impl ConfirmGate for RecordingGate {
    fn can_ask(&self) -> bool {
        self.log.can_ask_calls.fetch_add(1, Ordering::SeqCst);
        self.log.can_ask.load(Ordering::SeqCst)
    }

    async fn confirm(&self, req: &ConfirmRequest) -> Decision {
        self.log.asked.lock().unwrap().push(req.clone());
        self.log.answers.lock().unwrap().pop_front().expect("the gate was asked more often than scripted")
    }
}

/// The fake `gate-app` in a directory of its own: commands `alpha` and `beta`, both tagged `ai:confirm`, each
/// appending its name to `ran` when it really runs.
pub struct GateApp {
    pub dir: tempfile::TempDir,
}

impl GateApp {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        super::fake_app(dir.path(), "gate-app");
        GateApp { dir }
    }

    pub fn config(&self) -> fisk_ai::Config {
        let app = self.dir.path().join("gate-app");
        fisk_ai::Config::from_yaml_str(&format!(
            "identity: gate\napplication_path: {}\nsystem_prompt: s\nllm:\n  model: m\n",
            app.display()
        ))
        .unwrap()
    }

    /// The commands that actually ran, in order.
    pub fn ran(&self) -> Vec<String> {
        match std::fs::read_to_string(self.dir.path().join("ran")) {
            Ok(text) => text.lines().map(str::to_owned).collect(),
            Err(_) => Vec::new(),
        }
    }
}
