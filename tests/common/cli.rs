//! The example CLI as a long-running child (`cli mcp`, `cli a2a`): stderr read line by line, SIGTERM to stop.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A running example CLI subcommand, its stderr lines arriving on a channel.
pub struct Cli {
    pub child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Cli {
    /// `cli <subcommand> <args>` from the repository root, without the `removed` variables and with `env`.
    pub fn start(subcommand: &str, args: &[&str], removed: &[&str], env: &[(&str, &str)]) -> Cli {
        let mut cmd = Command::new(super::example("cli"));
        cmd.arg(subcommand).args(args).current_dir(super::root()).stdin(Stdio::null()).stdout(Stdio::null());
        cmd.stderr(Stdio::piped());
        for k in removed {
            cmd.env_remove(k);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Cli { child, lines, seen: Vec::new() }
    }

    /// Wait for a stderr line containing `needle` (or the end of output); everything seen is kept.
    pub fn wait_for(&mut self, needle: &str) -> bool {
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(60)) {
            let hit = line.contains(needle);
            self.seen.push(line);
            if hit {
                return true;
            }
        }
        false
    }

    pub fn stderr(&self) -> String {
        self.seen.join("\n")
    }

    pub fn terminate(&mut self) -> std::process::ExitStatus {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.child.id() as i32), nix::sys::signal::Signal::SIGTERM)
            .unwrap();
        let status = self.child.wait().unwrap();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(line);
        }
        status
    }
}

impl Drop for Cli {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
