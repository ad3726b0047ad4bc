//! The MCP fixture server (examples/mcp_fixture_server.rs) as a real child process, over stdio or streamable HTTP,
//! with any of its modes (hostile ones included: see its `hostile` module).

use fisk_ai::source::Loaded;
use fisk_ai::source::mcp::McpImport;
use fisk_ai::warning::Warning;

/// The fixture server's command line with `args`.
pub fn stdio_command(args: &[&str]) -> Vec<String> {
    let mut command = vec![super::example("mcp_fixture_server").display().to_string()];
    command.extend(args.iter().map(|a| (*a).to_owned()));
    command
}

/// An import of the fixture over stdio, named `name`.
pub fn stdio(name: &str, args: &[&str]) -> McpImport {
    McpImport::stdio(name, stdio_command(args)).unwrap()
}

/// The fixture serving streamable HTTP from its own process (so its memory is not the test's); killed on drop.
pub struct HttpFixture {
    child: std::process::Child,
    /// The endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
}

impl HttpFixture {
    /// Start the fixture with `args` on a free loopback port.
    pub fn start(args: &[&str]) -> HttpFixture {
        let mut child = std::process::Command::new(super::example("mcp_fixture_server"))
            .args(["--http", "127.0.0.1:0"])
            .args(args)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        let stdout = child.stdout.take().unwrap();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).unwrap();
        HttpFixture { child, url: line.trim().to_owned() }
    }

    /// An import of this server, named `name`.
    pub fn import(&self, name: &str) -> McpImport {
        McpImport::http(name, self.url.clone()).unwrap()
    }
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `ImportSkipped` warnings of a load, as `(source, tool, reason)`.
pub fn skipped(loaded: &Loaded) -> Vec<(String, String, String)> {
    loaded
        .warnings
        .iter()
        .filter_map(|w| match w {
            Warning::ImportSkipped { source, tool, reason } => Some((source.clone(), tool.clone(), reason.clone())),
            _ => None,
        })
        .collect()
}
