//! A fisk-compatible application whose commands try to escape a sandbox, for tests/sandbox.rs (SBX-1..6).
//!
//! Each command takes one positional `target` and prints what happened: `ok ...` when the attempt succeeded,
//! `denied ...` with the error when it did not (exit 1). Nothing here interprets its input as shell code.

use std::io::Write;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

/// Name, help, tags. A name with a suffix (`write_ro`) acts as its prefix (`write`) under other tags.
const COMMANDS: &[(&str, &str, &str)] = &[
    ("read", "Read the file at target", ""),
    ("write", "Write a line to the file at target", ""),
    ("exec", "Run the program at target and print its output", ""),
    ("tcp", "Connect over TCP to the address target", ""),
    ("udp", "Send a UDP datagram to the address target", ""),
    ("unix", "Connect to the Unix socket at target", ""),
    ("dgram", "Send a datagram to the Unix socket at target from a socketpair's end", ""),
    ("loop", "Listen on 127.0.0.1 and connect to that listener over TCP (target is ignored)", ""),
    ("hog", "Allocate and touch target MiB of memory", ""),
    ("spin", "Spin on the CPU for target seconds", ""),
    ("big", "Write target MiB to the file target.out", ""),
    ("files", "Open /dev/null target times", ""),
    ("env", "Print the environment (target is ignored)", ""),
    ("fork", "Start target processes that wait (output closed), then report how many started", ""),
    (
        "vanish",
        "Start a process that leaves the session, clears its environment and closes its output; print its pid and memory cgroup",
        "",
    ),
    ("caps", "Print the effective capabilities (target is ignored)", ""),
    ("fds", "List the open file descriptors (target is ignored)", ""),
    ("cgroup", "Print the memory cgroup and its oom_kill_disable; with target tamper, set it first", ""),
    ("write_ro", "Write, tagged ai:sandbox=readonly", r#""ai:sandbox=readonly""#),
    ("write_behavior", "Write, tagged with the behaviour tag ai:read_only", r#""ai:read_only""#),
    ("tcp_nonet", "Connect, tagged ai:net=none", r#""ai:net=none""#),
    ("tcp_lo", "Connect, tagged ai:net=loopback", r#""ai:net=loopback""#),
    ("loop_lo", "Connect to its own listener, tagged ai:net=loopback", r#""ai:net=loopback""#),
];

fn introspection() -> String {
    let commands: Vec<String> = COMMANDS
        .iter()
        .map(|(name, help, tags)| {
            format!(
                r#"{{"name":"{name}","help":"{help}","tags":[{tags}],"args":[{{"name":"target","help":"What to try","required":true}}],"restricted_schema":{{"type":"object","additionalProperties":false,"required":["target"],"properties":{{"target":{{"type":"string","description":"What to try"}}}}}}}}"#
            )
        })
        .collect();
    format!(r#"{{"name":"sandbox-app","help":"Tries to escape","commands":[{}]}}"#, commands.join(","))
}

fn attempt(command: &str, target: &str) -> Result<String, String> {
    let err = |e: std::io::Error| e.to_string();
    match command {
        "read" => std::fs::read_to_string(target).map_err(err),
        "write" => std::fs::write(target, "escaped\n").map(|()| format!("wrote {target}")).map_err(err),
        "exec" => {
            let out = std::process::Command::new(target).output().map_err(err)?;
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        }
        "tcp" => {
            let addr: SocketAddr = target.parse().map_err(|e| format!("{e}"))?;
            TcpStream::connect_timeout(&addr, Duration::from_secs(2))
                .map(|_| format!("connected to {addr}"))
                .map_err(err)
        }
        "udp" => {
            let socket = UdpSocket::bind("0.0.0.0:0").map_err(err)?;
            socket.send_to(b"escaped", target).map(|n| format!("sent {n} bytes")).map_err(err)
        }
        "dgram" => {
            let (end, _other) = std::os::unix::net::UnixDatagram::pair().map_err(err)?;
            end.send_to(b"escaped", target).map(|n| format!("sent {n} bytes to {target}")).map_err(err)
        }
        "loop" => {
            use std::io::Read;
            let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(err)?;
            let addr = listener.local_addr().map_err(err)?;
            let mut client = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).map_err(err)?;
            let (mut server, _) = listener.accept().map_err(err)?;
            client.write_all(b"x").map_err(err)?;
            let mut byte = [0u8];
            server.read_exact(&mut byte).map_err(err)?;
            Ok(format!("talked to itself over {addr}"))
        }
        "unix" => {
            std::os::unix::net::UnixStream::connect(target).map(|_| format!("connected to {target}")).map_err(err)
        }
        "hog" => {
            let mib: usize = target.parse().map_err(|e| format!("{e}"))?;
            let mut kept = Vec::new();
            for _ in 0..mib {
                let mut chunk = Vec::new();
                chunk.try_reserve_exact(1 << 20).map_err(|e| format!("allocation failed: {e}"))?;
                chunk.resize(1 << 20, 1u8);
                kept.push(chunk);
            }
            Ok(format!("held {} MiB", kept.len()))
        }
        "spin" => {
            let secs: u64 = target.parse().map_err(|e| format!("{e}"))?;
            let start = std::time::Instant::now();
            let mut x = 0u64;
            while start.elapsed() < Duration::from_secs(secs) {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            Ok(format!("spun {x}"))
        }
        "big" => {
            let mib: usize = target.parse().map_err(|e| format!("{e}"))?;
            let mut file = std::fs::File::create(format!("{target}.out")).map_err(err)?;
            let chunk = vec![b'x'; 1 << 20];
            for _ in 0..mib {
                file.write_all(&chunk).map_err(err)?;
            }
            Ok(format!("wrote {mib} MiB"))
        }
        "files" => {
            let n: usize = target.parse().map_err(|e| format!("{e}"))?;
            let mut open = Vec::new();
            for _ in 0..n {
                open.push(std::fs::File::open("/dev/null").map_err(err)?);
            }
            Ok(format!("opened {}", open.len()))
        }
        "env" => {
            Ok(std::env::vars_os().map(|(k, v)| format!("\n{}={}", k.to_string_lossy(), v.to_string_lossy())).collect())
        }
        "vanish" => {
            use std::process::Stdio;
            let me = std::env::current_exe().map_err(err)?;
            let mut cmd = std::process::Command::new(me);
            cmd.arg("park-setsid").env_clear().stdout(Stdio::null()).stderr(Stdio::null());
            let pid = cmd.spawn().map_err(err)?.id();
            let group = memory_cgroup().map(|d| d.display().to_string()).unwrap_or_default();
            Ok(format!("started {pid} in {group}"))
        }
        "fds" => {
            let fds = std::fs::read_dir("/proc/self/fd").map_err(err)?;
            Ok(fds.filter_map(|e| e.ok()).map(|e| format!(" {}", e.file_name().to_string_lossy())).collect())
        }
        "cgroup" => {
            let dir = memory_cgroup().ok_or("in no cgroup v1 memory group")?;
            let oom = dir.join("memory.oom_control");
            if target == "tamper" {
                std::fs::write(&oom, "1").map_err(err)?;
            }
            let settings = std::fs::read_to_string(&oom).map_err(err)?;
            let disabled = settings.lines().find_map(|l| l.strip_prefix("oom_kill_disable ")).unwrap_or("?");
            Ok(format!("{} oom_kill_disable={disabled}", dir.display()))
        }
        "caps" => {
            let status = std::fs::read_to_string("/proc/self/status").map_err(err)?;
            Ok(status.lines().filter(|l| l.starts_with("CapEff:")).collect())
        }
        "fork" => {
            let n: usize = target.parse().map_err(|e| format!("{e}"))?;
            let me = std::env::current_exe().map_err(err)?;
            let mut started = 0;
            for _ in 0..n {
                // Output closed, so the call ends when this process does (its group is what ends the parked ones).
                let (out, err) = (std::process::Stdio::null(), std::process::Stdio::null());
                match std::process::Command::new(&me).arg("park").stdout(out).stderr(err).spawn() {
                    Ok(_) => started += 1,
                    Err(e) => return Err(format!("started {started}, then: {e}")),
                }
            }
            Ok(format!("started {started}"))
        }
        other => Err(format!("unknown command {other}")),
    }
}

/// This process's cgroup v1 memory directory: the hierarchy's mount joined with its path in /proc/self/cgroup.
fn memory_cgroup() -> Option<std::path::PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mounts.lines().find_map(|l| {
        let (pre, fs) = l.split_once(" - ")?;
        (fs.starts_with("cgroup ") && fs.rsplit(',').any(|o| o == "memory")).then(|| pre.split(' ').nth(4))?
    })?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| l.split_once(":memory:").map(|(_, p)| p.to_owned()))?;
    Some(std::path::Path::new(mount).join(path.trim_start_matches('/')))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--fisk-introspect") {
        // Introspection runs confined read-only (SBX-1): asked to, it tries a write first, whose file a test looks
        // for.
        if let Some(path) = std::env::var_os("SANDBOX_APP_INTROSPECT_WRITE") {
            let _ = std::fs::write(path, "written by introspection\n");
        }
        println!("{}", introspection());
        return;
    }
    match args.first().map(String::as_str) {
        Some("park") => {
            std::thread::sleep(Duration::from_secs(60));
            return;
        }
        Some("park-setsid") => {
            // Leaves the call's process group and session, with nothing in its environment to tie it to the call.
            let _ = nix::unistd::setsid();
            std::thread::sleep(Duration::from_secs(60));
            return;
        }
        _ => {}
    }
    let (Some(command), Some(target)) = (args.first(), args.last()) else {
        eprintln!("usage: sandbox_app COMMAND [--] TARGET");
        std::process::exit(2);
    };
    let base = command.split('_').next().unwrap_or(command);
    match attempt(base, target) {
        Ok(text) => println!("ok {text}"),
        Err(e) => {
            println!("denied {e}");
            std::process::exit(1);
        }
    }
}
