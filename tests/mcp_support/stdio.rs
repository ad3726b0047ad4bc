//! `cli mcp --stdio` as a real child process, and rmcp's client on its stdin and stdout on either lifecycle.

use super::{Client, Era, TestClient};
use rmcp::ServiceExt;
use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// A running `cli mcp --stdio` over the fake application, and what it wrote to stderr.
pub struct StdioServer {
    pub child: Child,
    pub dir: TempDir,
    pub stderr: Arc<Mutex<Vec<String>>>,
}

impl StdioServer {
    /// Start the server with these `mcp` settings; its stdin and stdout are the caller's to use.
    pub fn start(mcp: &[&str]) -> (StdioServer, ChildStdout, ChildStdin) {
        Self::start_with(mcp, "")
    }

    /// [`start`](Self::start), with `extra` top-level configuration (lines under `harness:`, indented by two).
    pub fn start_with(mcp: &[&str], extra: &str) -> (StdioServer, ChildStdout, ChildStdin) {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("agent.yaml");
        std::fs::write(&config, super::config_yaml(dir.path(), mcp, extra)).unwrap();
        let mut child = Command::new(crate::common::example("cli"))
            .args(["mcp", "--stdio", "--config"])
            .arg(&config)
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stderr: Arc<Mutex<Vec<String>>> = Arc::default();
        let lines = stderr.clone();
        let mut reader = BufReader::new(child.stderr.take().unwrap()).lines();
        tokio::spawn(async move {
            while let Ok(Some(line)) = reader.next_line().await {
                lines.lock().unwrap().push(line);
            }
        });
        let (stdout, stdin) = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
        (StdioServer { child, dir, stderr }, stdout, stdin)
    }

    /// Start the server and connect `client` to it on `era`.
    pub async fn connect(mcp: &[&str], client: TestClient, era: Era) -> (StdioServer, Client) {
        let (server, stdout, stdin) = Self::start(mcp);
        let client = match era {
            Era::Legacy => client.serve((stdout, stdin)).await.expect("legacy connect over stdio"),
            Era::Modern => client
                .serve_with_lifecycle(
                    (stdout, stdin),
                    ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] },
                )
                .await
                .expect("discover connect over stdio"),
        };
        (server, client)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// What gated commands actually ran.
    pub fn ran(&self) -> Vec<String> {
        std::fs::read_to_string(self.path("ran")).map(|s| s.lines().map(str::to_owned).collect()).unwrap_or_default()
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().join("\n")
    }

    /// Wait, bounded, for the server to exit on its own.
    pub async fn exited(&mut self) -> std::process::ExitStatus {
        tokio::time::timeout(std::time::Duration::from_secs(30), self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("the stdio server did not exit; stderr:\n{}", self.stderr()))
            .unwrap()
    }
}
