//! The trivial application the serving benches (mcp, a2a) call: `sh` whose only command prints its words with the
//! shell's own `echo`, so a call costs one small spawn.

use std::path::{Path, PathBuf};

/// A trivial fisk application: `sh` (dash on Debian) whose only command prints its words with the shell's own
/// `echo`, so a call costs one small spawn, as the issue's one-line shell command does.
pub fn write(dir: &Path) -> PathBuf {
    let doc = r#"{"name":"bench","help":"A trivial application","version":"0.0.1","commands":[{"name":"echo","help":"Print the words back","flags":[],"args":[{"name":"words","help":"Words to print","required":false,"cumulative":true}],"restricted_schema":{"additionalProperties":false,"properties":{"words":{"description":"Words to print","items":{"type":"string"},"type":"array"}},"type":"object"}}]}"#;
    std::fs::write(dir.join("doc.json"), doc).unwrap();
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --fisk-introspect ]; then exec cat '{}'; fi\nshift\necho \"$@\"\n",
        dir.join("doc.json").display()
    );
    let path = dir.join("bench-app");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

/// The baseline both serving benches compare against: `n` concurrent bare spawns of the argv a served call runs.
#[allow(dead_code)] // not every bench that writes the application compares against it
pub async fn spawn_directly(app: &Path, n: usize) -> Vec<std::io::Result<std::process::Output>> {
    let calls = (0..n).map(|_| {
        tokio::process::Command::new(app).args(["echo", "--", "hello"]).stdin(std::process::Stdio::null()).output()
    });
    futures::future::join_all(calls).await
}
