//! The Python MCP SDK the interop tests use: the interpreter `FISK_AI_PYTHON` names (a venv with `mcp`;
//! `.ci/run` creates it), checked once per call, and a fixture server started on a free loopback port.

use std::path::PathBuf;

/// The interpreter, after checking it runs and imports `mcp`; a missing or unusable one fails the test, naming why.
pub fn interpreter() -> PathBuf {
    let unavailable = |why: String| -> ! {
        panic!(
            "the Python MCP SDK is unavailable: {why}; set FISK_AI_PYTHON to a python with `mcp` installed (.ci/run creates one)"
        )
    };
    let Some(python) = std::env::var_os("FISK_AI_PYTHON").filter(|v| !v.is_empty()) else {
        unavailable("FISK_AI_PYTHON is not set".to_owned())
    };
    let python = PathBuf::from(python);
    match std::process::Command::new(&python).args(["-c", "import mcp.server.mcpserver"]).output() {
        Ok(out) if out.status.success() => python,
        Ok(out) => unavailable(format!(
            "{} cannot import mcp: {}",
            python.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => unavailable(format!("{} does not run: {e}", python.display())),
    }
}

/// Start `tests/fixtures/python/<script>` with `args(port)` on a free loopback port, its output discarded and the
/// process killed when the handle drops; the child and the port.
pub fn spawn_on_free_port(script: &str, args: impl FnOnce(u16) -> Vec<String>) -> (tokio::process::Child, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let script = super::root().join("tests/fixtures/python").join(script).display().to_string();
    let child = tokio::process::Command::new(interpreter())
        .arg(script)
        .args(args(port))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    (child, port)
}
