//! A scripted multi-tool conversation for the example CLI's session tests: the fake Messages API answers each
//! request from the conversation's length (turn `t` asks for `step` once per token of `turns[t]`, then a final
//! answer), and the `stepper` fake app logs `start TOKEN` / `end TOKEN` for every invocation.
//!
//! Users declare `mod common; mod fake_anthropic; mod stepper;`.
#![allow(dead_code)]

pub mod crash;

use crate::common::{example, fake_app};
use crate::fake_anthropic::{FakeAnthropic, streamed};
use fisk_ai::session::{FileSessionStore, Journal, SessionId, SessionStore};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

/// The final answer of the scripted conversation.
pub const ANSWER: &str = "all steps done";

pub struct Stepper {
    pub dir: tempfile::TempDir,
    pub server: FakeAnthropic,
    pub log: PathBuf,
    pub state: PathBuf,
    pub config: PathBuf,
    /// Set when the journals live in JetStream rather than under `state`.
    pub jetstream: Option<JetStreamJournals>,
}

/// Where a [`Stepper`]'s journals live when its configuration names the jetstream backend.
#[cfg(feature = "nats")]
pub struct JetStreamJournals {
    /// The NATS CLI configuration directory (holding context `test`) and the `XDG_CONFIG_HOME` that points at it.
    pub contexts: tempfile::TempDir,
    pub xdg: tempfile::TempDir,
    pub sessions: fisk_ai::session::jetstream::JetStreamSessions,
    pub stream: String,
    /// The stream, for counting a journal's messages cheaply.
    pub raw: async_nats::jetstream::stream::Stream,
}

/// Without NATS there are no JetStream journals.
#[cfg(not(feature = "nats"))]
pub enum JetStreamJournals {}

#[cfg(feature = "nats")]
impl JetStreamJournals {
    fn xdg(&self) -> &std::path::Path {
        self.xdg.path()
    }

    fn store(&self) -> Box<dyn SessionStore> {
        Box::new(self.sessions.clone())
    }

    /// One message per subject: the journal's subjects are its records. Blocks this worker thread (tests using
    /// it run on a multi-thread runtime).
    fn count(&self, id: &SessionId) -> usize {
        let filter = format!("{}.{id}.>", self.stream.to_lowercase());
        let raw = self.raw.clone();
        tokio::task::block_in_place(move || {
            tokio::runtime::Handle::current().block_on(async move {
                use futures::StreamExt;
                let Ok(info) = raw.info_builder().subjects(filter).fetch().await else { return 0 };
                info.filter(|s| std::future::ready(s.is_ok())).count().await
            })
        })
    }
}

#[cfg(not(feature = "nats"))]
impl JetStreamJournals {
    fn xdg(&self) -> &std::path::Path {
        match *self {}
    }

    fn store(&self) -> Box<dyn SessionStore> {
        match *self {}
    }

    fn count(&self, _: &SessionId) -> usize {
        match *self {}
    }
}

/// Which turn a request asks for: how many assistant messages it carries.
pub fn turn_of(body: &Value) -> usize {
    body["messages"].as_array().map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count())
}

impl Stepper {
    pub async fn start(turns: Vec<Vec<String>>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let app = fake_app(dir.path(), "stepper");
        let config = dir.path().join("agent.yaml");
        std::fs::write(
            &config,
            format!(
                "identity: stepper\napplication_path: {}\nsystem_prompt: Take the steps.\nllm:\n  model: test-model\n  budget:\n    max_iterations: 20\n",
                app.display()
            ),
        )
        .unwrap();
        let server = FakeAnthropic::start().await;
        server.set_responder(move |req| {
            let t = turn_of(req.body_json());
            match turns.get(t) {
                Some(tokens) => {
                    let blocks: Vec<Value> = tokens
                        .iter()
                        .map(|k| json!({"type": "tool_use", "id": format!("call-{k}"), "name": "step", "input": {"token": k}}))
                        .collect();
                    streamed(&blocks, "tool_use")
                }
                None => streamed(&[json!({"type": "text", "text": ANSWER})], "end_turn"),
            }
        });
        let log = dir.path().join("steps.log");
        let state = dir.path().join("state");
        Stepper { dir, server, log, state, config, jetstream: None }
    }

    /// As [`start`](Self::start), journaling to stream `stream` (made here as SESS-31 asks) on the server at `url`
    /// through NATS context `test`.
    #[cfg(feature = "nats")]
    pub async fn start_jetstream(turns: Vec<Vec<String>>, url: &str, stream: &str) -> Self {
        use async_nats::jetstream::{self, stream as js};
        let mut s = Self::start(turns).await;
        let text = std::fs::read_to_string(&s.config).unwrap();
        std::fs::write(
            &s.config,
            format!("{text}nats_context: test\nharness:\n  sessions:\n    backend: jetstream\n    options:\n      stream: {stream}\n"),
        )
        .unwrap();
        let client = async_nats::connect(url).await.unwrap();
        let config = js::Config {
            name: stream.into(),
            subjects: vec![format!("{}.>", stream.to_lowercase())],
            max_messages_per_subject: 1,
            discard: js::DiscardPolicy::New,
            discard_new_per_subject: true,
            ..Default::default()
        };
        let raw = jetstream::new(client.clone()).create_stream(config).await.unwrap();
        let nats = fisk_ai::nats::NatsConnection::borrowed(client, "test");
        let sessions = fisk_ai::session::jetstream::JetStreamSessions::bind(&nats, stream).await.unwrap();
        let contexts = crate::common::nats::context_dir("test", json!({ "url": url }), false);
        let xdg = crate::common::nats::xdg_home_for(contexts.path());
        s.jetstream = Some(JetStreamJournals { contexts, xdg, sessions, stream: stream.into(), raw });
        s
    }

    /// `fisk run` with this conversation's configuration, state directory and fake API; `extra` are more
    /// arguments (e.g. `--checkpoint --name X`, or `--resume X`).
    pub fn run(&self, extra: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(example("cli"));
        cmd.arg("run")
            .arg("--config")
            .arg(&self.config)
            .arg("--base-url")
            .arg(self.server.url())
            .args(extra)
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("STEPPER_LOG", &self.log)
            .env("NO_COLOR", "1")
            .env_remove("VERBOSE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        match &self.jetstream {
            Some(js) => {
                cmd.env("XDG_CONFIG_HOME", js.xdg());
            }
            None => {
                cmd.arg("--state-dir").arg(&self.state);
            }
        }
        cmd
    }

    /// `fisk session ...` over this state directory, or through the configuration naming the jetstream backend.
    pub fn session(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = std::process::Command::new(example("cli"));
        cmd.arg("session").args(args);
        match &self.jetstream {
            Some(js) => cmd.arg("--config").arg(&self.config).env("XDG_CONFIG_HOME", js.xdg()),
            None => cmd.arg("--state-dir").arg(&self.state),
        };
        cmd.output().unwrap()
    }

    /// The store the journals are in.
    pub fn sessions(&self) -> Box<dyn SessionStore> {
        match &self.jetstream {
            Some(js) => js.store(),
            None => Box::new(self.store()),
        }
    }

    /// Every `start TOKEN` logged so far, in order.
    pub fn starts(&self) -> Vec<String> {
        self.starts_by().into_iter().map(|(token, _)| token).collect()
    }

    /// Every start logged so far with the pid of the process that ran it (the CLI, or 1 for a step orphaned by a
    /// killed CLI before it began).
    pub fn starts_by(&self) -> Vec<(String, u32)> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .filter_map(|l| l.strip_prefix("start "))
            .filter_map(|l| l.rsplit_once(' '))
            .map(|(token, pid)| (token.to_owned(), pid.parse().unwrap_or(0)))
            .collect()
    }

    /// Every `end TOKEN` logged so far.
    pub fn ends(&self) -> Vec<String> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines().filter_map(|l| l.strip_prefix("end ")).map(str::to_owned).collect()
    }

    /// The turn index of every model request so far.
    pub fn request_turns(&self) -> Vec<usize> {
        self.server.requests().iter().map(|r| turn_of(r.body_json())).collect()
    }

    pub fn store(&self) -> FileSessionStore {
        FileSessionStore::new(&self.state)
    }

    /// The session's journal folded, or the error reading or folding it.
    pub async fn journal(&self, id: &SessionId) -> fisk_ai::Result<Journal> {
        Journal::fold(self.sessions().read(id).await?)
    }

    /// Complete lines in the journal file (0 when it does not exist), or records in the stream.
    pub fn journal_lines(&self, id: &SessionId) -> usize {
        if let Some(js) = &self.jetstream {
            return js.count(id);
        }
        std::fs::read(self.store().journal_path(id)).map_or(0, |b| b.iter().filter(|c| **c == b'\n').count())
    }

    /// Wait until `cond` holds, polling; panics after `limit`.
    pub async fn wait_for(&self, what: &str, limit: Duration, mut cond: impl FnMut(&Self) -> bool) {
        let deadline = tokio::time::Instant::now() + limit;
        while !cond(self) {
            assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

/// The output of a finished CLI process, as text.
pub struct Finished {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

pub async fn finish(child: tokio::process::Child) -> Finished {
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the CLI finished within 60s")
        .unwrap();
    Finished {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
