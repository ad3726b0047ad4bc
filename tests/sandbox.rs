//! Confining tool processes (SBX-1..6) against the real kernel: Landlock, seccomp, rlimits and no_new_privs,
//! with examples/sandbox_app.rs, whose commands try to escape, as the confined application.
//!
//! The tests that need the kernel features are `#[ignore = "needs ..."]` (a plain machine may lack Landlock);
//! .ci/run runs them twice: children started through the confinement step (SBX-9, the default), and again with
//! `FISK_AI_TEST_SPAWN=hook`, through the post-fork hook, so both ways of confining are held to every test.

mod common;

use common::*;
use fisk_ai::exec::ChildEnv;
use fisk_ai::sandbox::{Confinement, Limits, Network, Sandbox};
use fisk_ai::source::fisk::FiskApp;
use fisk_ai::tool::{CallContext, Tool};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// `profile` checked, started the way this run tests (see the module docs).
fn confinement(profile: Sandbox) -> fisk_ai::Result<Confinement> {
    let c = Confinement::new(profile)?;
    Ok(if std::env::var_os("FISK_AI_TEST_SPAWN").is_some_and(|v| v == "hook") { c.with_post_fork_hook() } else { c })
}

/// The sandbox_app's tools, confined by `profile`, run in `workdir`.
async fn confined(profile: Sandbox, workdir: &Path) -> HashMap<String, Arc<dyn Tool>> {
    let confinement = confinement(profile).expect("the profile is enforceable here");
    let env = ChildEnv::new().with_confinement(Arc::new(confinement)).with_working_dir(workdir);
    tools_of(env).await
}

async fn tools_of(env: ChildEnv) -> HashMap<String, Arc<dyn Tool>> {
    // Introspection runs confined too (the read-only form of the profile).
    let loaded = FiskApp::new(example("sandbox_app")).with_env(env).load().await.expect("introspection");
    loaded.tools.into_iter().map(|t| (t.spec().name().to_owned(), t)).collect()
}

/// Runs `command` on `target`; its exit code and output.
async fn attempt(tools: &HashMap<String, Arc<dyn Tool>>, command: &str, target: &str) -> (i32, String) {
    let tool = tools.get(command).unwrap_or_else(|| panic!("no tool {command}: {:?}", tools.keys()));
    let input = serde_json::json!({ "target": target }).to_string();
    let ctx = CallContext::new().with_timeout(Duration::from_secs(60));
    let out = tool.call(&raw(&input), &ctx).await;
    let report = out.exec_report().unwrap_or_else(|| panic!("{command} did not run: {}", out.content()));
    (report.exit_code, out.exec_output().unwrap_or_default().to_owned())
}

fn path(p: &Path) -> String {
    p.to_str().unwrap().to_owned()
}

/// A work directory (writable by the profile) and an outside directory (listed nowhere).
fn dirs() -> (PathBuf, PathBuf) {
    (fresh_dir("sbx-work"), fresh_dir("sbx-outside"))
}

#[tokio::test]
#[ignore = "needs Landlock (Linux 6.2+, ABI 3) and seccomp"]
async fn sbx_1_reads_only_beneath_the_readable_paths() {
    let (work, outside) = dirs();
    let readable = fresh_dir("sbx-readable");
    std::fs::write(readable.join("ok.txt"), "visible").unwrap();
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    let tools = confined(Sandbox::new().read(&readable).write(&work), &work).await;

    let (code, out) = attempt(&tools, "read", &path(&readable.join("ok.txt"))).await;
    assert_eq!((code, out.trim()), (0, "ok visible"));
    let (code, out) = attempt(&tools, "read", &path(&outside.join("secret.txt"))).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("denied") && out.contains("Permission denied") && !out.contains("secret"), "{out}");
}

#[tokio::test]
#[ignore = "needs Landlock (Linux 6.2+, ABI 3) and seccomp"]
async fn sbx_1_writes_only_beneath_the_writable_paths_and_never_through_a_symlink_out() {
    let (work, outside) = dirs();
    let readable = fresh_dir("sbx-readable");
    std::fs::write(outside.join("target.txt"), "untouched").unwrap();
    std::os::unix::fs::symlink(outside.join("target.txt"), work.join("link")).unwrap();
    let tools = confined(Sandbox::new().read(&readable).write(&work), &work).await;

    let (code, out) = attempt(&tools, "write", &path(&work.join("new.txt"))).await;
    assert_eq!(code, 0, "{out}");
    assert_eq!(std::fs::read_to_string(work.join("new.txt")).unwrap(), "escaped\n");

    for target in [readable.join("new.txt"), outside.join("new.txt"), work.join("link")] {
        let (code, out) = attempt(&tools, "write", &path(&target)).await;
        assert_eq!(code, 1, "{}: {out}", target.display());
        assert!(out.contains("Permission denied"), "{}: {out}", target.display());
    }
    assert!(!readable.join("new.txt").exists() && !outside.join("new.txt").exists());
    assert_eq!(std::fs::read_to_string(outside.join("target.txt")).unwrap(), "untouched");
}

#[tokio::test]
#[ignore = "needs Landlock (Linux 6.2+, ABI 3) and seccomp"]
async fn sbx_1_executes_only_beneath_the_executable_paths() {
    let (work, outside) = dirs();
    let bin = fresh_dir("sbx-bin");
    let program = which("true");
    std::fs::copy(&program, bin.join("allowed")).unwrap();
    std::fs::copy(&program, outside.join("forbidden")).unwrap();
    // The outside copy is readable, so only the exec right is missing.
    let tools = confined(Sandbox::new().exec(&bin).read(&outside).write(&work), &work).await;

    let (code, out) = attempt(&tools, "exec", &path(&bin.join("allowed"))).await;
    assert_eq!(code, 0, "{out}");
    let (code, out) = attempt(&tools, "exec", &path(&outside.join("forbidden"))).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Permission denied"), "{out}");
}

#[tokio::test]
#[ignore = "needs Landlock (Linux 6.2+, ABI 3) and seccomp"]
async fn sbx_3_network_none_refuses_tcp_udp_unix_sockets_and_datagram_pairs() {
    let (work, _) = dirs();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp = listener.local_addr().unwrap().to_string();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let udp_addr = udp.local_addr().unwrap().to_string();
    let unix = UnixServices::in_dir(&work);
    let attempts = [("tcp", tcp), ("udp", udp_addr), ("unix", unix.stream.clone()), ("dgram", unix.dgram.clone())];

    // The control: the same attempts succeed without the network setting.
    let open = confined(Sandbox::new().write(&work), &work).await;
    for (command, target) in &attempts {
        let (code, out) = attempt(&open, command, target).await;
        assert_eq!(code, 0, "{command} without network none: {out}");
    }

    let closed = confined(Sandbox::new().write(&work).network(Network::None), &work).await;
    for (command, target) in &attempts {
        let (code, out) = attempt(&closed, command, target).await;
        assert_eq!(code, 1, "{command} under network none: {out}");
        assert!(out.contains("Permission denied"), "{command}: {out}");
    }
}

/// A Unix stream listener and a Unix datagram service (as `/dev/log` is: reachable from a socketpair's end by
/// `sendto` a path) in `dir`, with their paths; they listen while this lives.
struct UnixServices {
    stream: String,
    dgram: String,
    _listeners: (std::os::unix::net::UnixListener, std::os::unix::net::UnixDatagram),
}

impl UnixServices {
    fn in_dir(dir: &Path) -> UnixServices {
        let (stream, dgram) = (dir.join("s.sock"), dir.join("log.sock"));
        let listeners = (
            std::os::unix::net::UnixListener::bind(&stream).unwrap(),
            std::os::unix::net::UnixDatagram::bind(&dgram).unwrap(),
        );
        UnixServices { stream: path(&stream), dgram: path(&dgram), _listeners: listeners }
    }
}

/// An address of this machine that is not loopback: the source it would use toward a documentation address (a
/// UDP `connect` sends nothing).
fn own_address() -> std::net::IpAddr {
    let probe = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    probe.connect("198.51.100.1:9").expect("this machine has a non-loopback address to test against");
    let ip = probe.local_addr().unwrap().ip();
    assert!(!ip.is_loopback(), "{ip}");
    ip
}

#[tokio::test]
#[ignore = "needs Landlock (Linux 6.2+, ABI 3), seccomp and a network namespace (root or user namespaces)"]
async fn sbx_3_network_loopback_reaches_its_own_loopback_and_nothing_else() {
    let (work, _) = dirs();
    let listener = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let udp = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    let (host_lo, outside) = (format!("127.0.0.1:{port}"), format!("{}:{port}", own_address()));
    let outside_udp = format!("{}:{}", own_address(), udp.local_addr().unwrap().port());
    let unix = UnixServices::in_dir(&work);
    let attempts = [
        ("loop", "-"),
        ("tcp", host_lo.as_str()),
        ("tcp", outside.as_str()),
        ("udp", outside_udp.as_str()),
        ("unix", unix.stream.as_str()),
        ("dgram", unix.dgram.as_str()),
    ];

    // The control: everything succeeds without the network setting.
    let open = confined(Sandbox::new().write(&work), &work).await;
    for (command, target) in attempts {
        let (code, out) = attempt(&open, command, target).await;
        assert_eq!(code, 0, "{command} {target} without network loopback: {out}");
    }

    let lo = confined(Sandbox::new().write(&work).network(Network::Loopback), &work).await;
    let expected = [
        "",
        "Connection refused",
        "Network is unreachable",
        "Network is unreachable",
        "Permission denied",
        "Permission denied",
    ];
    for ((command, target), refusal) in attempts.into_iter().zip(expected) {
        let (code, out) = attempt(&lo, command, target).await;
        if refusal.is_empty() {
            assert_eq!(code, 0, "{command} under network loopback: {out}");
        } else {
            assert_eq!(code, 1, "{command} {target} under network loopback: {out}");
            assert!(out.contains(refusal), "{command} {target}: {out}");
        }
    }
}

#[tokio::test]
#[ignore = "needs Landlock (Linux 6.2+, ABI 3) and seccomp"]
async fn sbx_3_network_none_alone_needs_no_landlock() {
    let (work, _) = dirs();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let tools = confined(Sandbox::new().network(Network::None), &work).await;
    let (code, out) = attempt(&tools, "tcp", &listener.local_addr().unwrap().to_string()).await;
    assert_eq!(code, 1, "{out}");
    // Without fs rules the files stay readable, but not the agent's own /proc files (its environment holds
    // credentials): the child is in a Landlock domain of its own all the same.
    let (code, out) = attempt(&tools, "read", "/etc/hostname").await;
    assert_eq!(code, 0, "{out}");
    let environ = format!("/proc/{}/environ", std::process::id());
    let unconfined = tools_of(ChildEnv::new().with_working_dir(&work)).await;
    let (code, out) = attempt(&unconfined, "read", &environ).await;
    assert_eq!(code, 0, "the control reads the agent's environment: {out}");
    let (code, out) = attempt(&tools, "read", &environ).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Permission denied"), "{out}");
}

#[tokio::test]
#[ignore = "needs Landlock (Linux 6.2+, ABI 3) and seccomp"]
async fn sbx_4_limits_stop_a_cpu_spinner_a_memory_hog_a_big_file_and_a_descriptor_leak() {
    let (work, _) = dirs();
    let limits = Limits::new().cpu_seconds(1).file_size(1 << 20).files(64);
    let tools = confined(Sandbox::new().write(&work).limits(limits), &work).await;

    let (code, out) = attempt(&tools, "spin", "120").await;
    assert_eq!(code, -1, "{out}");
    assert!(out.contains("stopped at its CPU limit (1s, limits.cpu)"), "{out}");

    let (code, out) = attempt(&tools, "big", "4").await;
    assert_eq!(code, -1, "{out}");
    assert!(out.contains("stopped at its file size limit (1048576 bytes, limits.file_size)"), "{out}");
    assert_eq!(std::fs::metadata(work.join("4.out")).unwrap().len(), 1 << 20);

    let (code, out) = attempt(&tools, "files", "200").await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Too many open files"), "{out}");

    // Apart from the CPU limit, which a debug build touching memory may reach first.
    let limits = Limits::new().memory(256 << 20);
    let tools = confined(Sandbox::new().write(&work).limits(limits), &work).await;
    let (code, out) = attempt(&tools, "hog", "1024").await;
    if cgroup_memory(&limits) {
        // A per-call memory cgroup (root here): the kernel kills the hog at the limit.
        assert_eq!(code, -1, "{out}");
        assert!(out.contains("[sandbox: it was killed at its memory limit (limits.memory)]"), "{out}");
    } else {
        // The address-space rlimit: the allocation fails.
        assert_eq!(code, 1, "{out}");
        assert!(out.contains("allocation failed"), "{out}");
    }
    let (code, out) = attempt(&tools, "hog", "16").await;
    assert_eq!(code, 0, "a small allocation still works: {out}");
}

/// Whether `pid` is a live process (not gone, not a zombie).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
}

/// Whether `limits`' memory limit is a per-call cgroup here.
fn cgroup_memory(limits: &Limits) -> bool {
    Confinement::new(Sandbox::new().limits(*limits)).unwrap().cgroup_limits().contains(&"memory")
}

#[test]
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
fn sbx_9_children_start_through_the_confinement_step_unless_the_hook_is_asked_for() {
    let c = Confinement::new(Sandbox::new().limits(Limits::new().files(64))).unwrap();
    assert!(c.spawns_through_step(), "built with a C compiler, on a system that executes memory files");
    assert!(!c.with_post_fork_hook().spawns_through_step());
}

#[tokio::test]
#[ignore = "needs root and the cgroup v1 pids controller (RLIMIT_NPROC does not bind root)"]
async fn sbx_4_a_fork_loop_stops_at_the_process_limit_and_leaves_nothing_behind() {
    let (work, _) = dirs();
    let limits = Limits::new().processes(8);
    let confinement = Confinement::new(Sandbox::new().limits(limits)).unwrap();
    assert_eq!(confinement.cgroup_limits(), ["processes"], "root gets a per-call pids cgroup");
    let tools = confined(Sandbox::new().limits(limits), &work).await;

    let (code, out) = attempt(&tools, "fork", "50").await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("then: Resource temporarily unavailable"), "{out}");
    let started: usize = out.split("started ").nth(1).and_then(|s| s.split(',').next()).unwrap().parse().unwrap();
    assert!(started < 8, "the limit counts the app itself: {out}");
    assert!(out.contains("[sandbox: it reached its process limit (limits.processes)"), "{out}");

    // The parked children were killed with the call, and the agent goes on.
    let parked = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| std::fs::read(e.unwrap().path().join("cmdline")).ok())
            .filter(|c| c.ends_with(b"park\0") && c.windows(11).any(|w| w == b"sandbox_app"))
            .count()
    };
    for _ in 0..100 {
        if parked() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(parked(), 0, "no parked process outlives its call");
    let (code, out) = attempt(&tools, "read", "/etc/hostname").await;
    assert_eq!(code, 0, "{out}");
    // A process that leaves the session, clears its environment and closes its output, then is orphaned: only
    // the call's cgroup still ties it to the call, and it ends with it. The control, unconfined, survives its call.
    let escaped =
        |out: &str| out.trim().strip_prefix("ok started ").unwrap().split(' ').next().unwrap().parse().unwrap();
    let unconfined = tools_of(ChildEnv::new().with_working_dir(&work)).await;
    let (_, out) = attempt(&unconfined, "vanish", "-").await;
    let survivor = escaped(&out);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(alive(survivor), "the control's escapee outlives its call: {out}");
    let _ = std::process::Command::new("kill").args(["-9", &survivor.to_string()]).status();
    let (code, out) = attempt(&tools, "vanish", "-").await;
    assert_eq!(code, 0, "{out}");
    let escapee = escaped(&out);
    // Killed and reaped: a zombie left behind (this process is its subreaper) fails too.
    procs::wait_gone(escapee, "the confined call's escapee").await;

    // A call within the limit is not blamed for the last one's.
    let (code, out) = attempt(&tools, "fork", "2").await;
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("[sandbox:"), "{out}");
}

#[tokio::test]
#[ignore = "needs root and the cgroup v1 memory controller"]
async fn sbx_4_a_group_its_child_could_change_is_never_reused() {
    let (work, _) = dirs();
    let limits = Limits::new().memory(256 << 20);
    assert!(cgroup_memory(&limits), "root gets a per-call memory cgroup");
    let group = |out: &str| out.split(' ').nth(1).unwrap_or_default().to_owned();
    // Without `fs` rules a root child can write its group's settings, here turning its OOM killer off: that group
    // is removed with the call, and the next call gets a fresh one, OOM killer on.
    let open = confined(Sandbox::new().limits(limits), &work).await;
    let (code, first) = attempt(&open, "cgroup", "tamper").await;
    assert_eq!(code, 0, "{first}");
    assert!(first.contains("oom_kill_disable=1"), "{first}");
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (code, next) = attempt(&open, "cgroup", "look").await;
        assert_eq!(code, 0, "{next}");
        assert!(next.contains("oom_kill_disable=0"), "a tampered group came back: {first} then {next}");
        assert_ne!(group(&first), group(&next));
    }
    // With rules that grant no write to cgroupfs, the child cannot change it, and its emptied group is reused.
    let ruled = confined(Sandbox::new().read("/proc").read("/sys/fs/cgroup").write(&work).limits(limits), &work).await;
    let (code, out) = attempt(&ruled, "cgroup", "tamper").await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Permission denied"), "{out}");
    let mut seen = Vec::new();
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (code, out) = attempt(&ruled, "cgroup", "look").await;
        assert_eq!(code, 0, "{out}");
        seen.push(group(&out));
    }
    seen.sort();
    seen.dedup();
    assert!(seen.len() < 4, "emptied groups are reused: {seen:?}");

    // A pooled group that something else changed while it waited (here this test, as root) is not reused.
    let (_, out) = attempt(&ruled, "cgroup", "look").await;
    let pooled = group(&out);
    tokio::time::sleep(Duration::from_millis(100)).await;
    std::fs::write(Path::new(&pooled).join("memory.oom_control"), "1").unwrap();
    for _ in 0..3 {
        let (code, next) = attempt(&ruled, "cgroup", "look").await;
        assert_eq!(code, 0, "{next}");
        assert!(next.contains("oom_kill_disable=0"), "a changed pooled group came back: {next}");
        assert_ne!(group(&next), pooled);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
#[ignore = "needs root and the cgroup v1 memory controller"]
async fn sbx_4_a_reused_group_still_ends_what_its_call_left_behind() {
    let (work, _) = dirs();
    let limits = Limits::new().memory(256 << 20);
    assert!(cgroup_memory(&limits), "root gets a per-call memory cgroup");
    // `fs` rules that grant no write to cgroupfs: emptied groups are pooled, and calls in quick succession reuse
    // them. Each call leaves a process that left its session; the call's end must find it in the group and kill it.
    // /proc readable, for the app to name its group.
    let tools = confined(Sandbox::new().read("/proc").write(&work).limits(limits), &work).await;
    let mut groups = Vec::new();
    for round in 0..4 {
        let (code, out) = attempt(&tools, "vanish", "-").await;
        assert_eq!(code, 0, "{out}");
        let (escapee, group) = out.trim().strip_prefix("ok started ").unwrap().split_once(" in ").unwrap();
        let escapee: i32 = escapee.parse().unwrap();
        procs::wait_gone(escapee, &format!("round {round}: the escapee")).await;
        groups.push(group.to_owned());
        // Time for the emptied group to go back to the pool, so the next call reuses it.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    groups.sort();
    groups.dedup();
    assert!(groups.len() < 4, "the calls ran in reused groups: {groups:?}");
}

#[test]
fn sbx_6_a_landlock_abi_above_the_kernels_fails_the_build_unless_best_effort() {
    let readable = fresh_dir("sbx-readable");
    let detected = Confinement::new(Sandbox::new().read(&readable).best_effort(true)).unwrap().landlock_abi();
    let above = detected + 1;
    let err = Confinement::new(Sandbox::new().read(&readable).landlock_abi(above)).unwrap_err();
    assert_eq!(err.key(), Some("harness.sandbox.landlock_abi"));
    let message = err.to_string();
    assert!(message.contains(&format!("needs Landlock ABI {above}, and this kernel's is {detected}")), "{message}");

    let kept = Confinement::new(Sandbox::new().read(&readable).landlock_abi(above).best_effort(true)).unwrap();
    let parts: Vec<String> = kept.unenforced().iter().map(ToString::to_string).collect();
    assert_eq!(parts.len(), 1, "{parts:?}");
    assert!(parts[0].starts_with("harness.sandbox.landlock_abi is not enforced"), "{parts:?}");
}

#[test]
fn sbx_6_a_missing_path_is_refused_naming_the_setting() {
    let err = Confinement::new(Sandbox::new().read("/no/such/dir").best_effort(true)).unwrap_err();
    assert_eq!(err.key(), Some("harness.sandbox.fs.read"));
    assert!(err.to_string().contains("/no/such/dir"), "{err}");
}

/// `name` on PATH.
fn which(name: &str) -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} is not on PATH"))
}

#[tokio::test]
#[ignore = "needs Landlock (Linux 6.2+, ABI 3) and seccomp"]
async fn sbx_7_confinement_tags_narrow_with_or_without_a_profile_and_never_widen() {
    let (work, _) = dirs();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp = listener.local_addr().unwrap().to_string();

    // No profile at all: the command's own tags confine it; a behaviour tag confines nothing.
    let tools = tools_of(ChildEnv::new().with_working_dir(&work)).await;
    let (code, out) = attempt(&tools, "write_ro", &path(&work.join("a"))).await;
    assert_eq!(code, 1, "ai:sandbox=readonly must stop the write: {out}");
    assert!(out.contains("Permission denied"), "{out}");
    assert!(!work.join("a").exists());
    let (code, out) = attempt(&tools, "read", "/etc/hostname").await;
    assert_eq!(code, 0, "untagged commands stay unconfined: {out}");
    let (code, out) = attempt(&tools, "write_behavior", &path(&work.join("b"))).await;
    assert_eq!(code, 0, "ai:read_only describes, never confines: {out}");
    let (code, out) = attempt(&tools, "tcp_nonet", &tcp).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Permission denied"), "{out}");
    // ai:net=loopback: the command's own loopback works, the host's listener is out of reach.
    let (code, out) = attempt(&tools, "tcp_lo", &tcp).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Connection refused"), "{out}");
    let (code, out) = attempt(&tools, "loop_lo", "-").await;
    assert_eq!(code, 0, "{out}");
    let (code, out) = attempt(&tools, "tcp", &tcp).await;
    assert_eq!(code, 0, "{out}");

    // A profile that allows writing to work: the readonly tag still narrows it.
    let tools = confined(Sandbox::new().write(&work), &work).await;
    let (code, out) = attempt(&tools, "write", &path(&work.join("c"))).await;
    assert_eq!(code, 0, "{out}");
    let (code, out) = attempt(&tools, "write_ro", &path(&work.join("d"))).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Permission denied"), "{out}");

    // A profile with network none: the loopback tag cannot widen it.
    let tools = confined(Sandbox::new().network(Network::None), &work).await;
    let (code, out) = attempt(&tools, "loop_lo", "-").await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Permission denied"), "{out}");
}

#[tokio::test]
#[ignore = "needs root, which makes a setuid binary of another user"]
async fn sbx_5_no_new_privs_keeps_a_setuid_binary_from_changing_user() {
    use std::os::unix::fs::PermissionsExt;
    let (work, _) = dirs();
    let bin = fresh_dir("sbx-setuid");
    let id = bin.join("id");
    std::fs::copy(which("id"), &id).unwrap();
    std::os::unix::fs::chown(&id, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&id, std::fs::Permissions::from_mode(0o4755)).unwrap();

    // The control: unconfined, the setuid bit takes effect.
    let (code, out) = attempt(&tools_of(ChildEnv::new().with_working_dir(&work)).await, "exec", &path(&id)).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("euid=65534"), "the setuid copy must work unconfined: {out}");

    // Any setting turns on no_new_privs: here only a limit.
    let tools = confined(Sandbox::new().limits(Limits::new().files(256)), &work).await;
    let (code, out) = attempt(&tools, "exec", &path(&id)).await;
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("euid=65534") && out.contains("uid=0("), "{out}");

    // And a root agent's confined child keeps uid 0 but none of its capabilities.
    let (_, open) = attempt(&tools_of(ChildEnv::new().with_working_dir(&work)).await, "caps", "-").await;
    assert!(open.contains("CapEff:") && !open.contains("CapEff:\t0000000000000000"), "the control: {open}");
    let (code, out) = attempt(&tools, "caps", "-").await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("CapEff:\t0000000000000000"), "{out}");
}

#[test]
fn sbx_6_config_errors_name_the_key_and_its_line() {
    let yaml = |body: &str| format!("identity: a\nharness:\n  sandbox:\n{body}");
    // Every value of `network` is built (loopback was refused, with its line, before it was).
    let loopback = fisk_ai::Config::from_yaml_str(&yaml("    network: loopback\n")).unwrap();
    loopback.check_supported().unwrap();
    let err = fisk_ai::Config::from_yaml_str(&yaml("    network: lo\n")).unwrap_err();
    assert_eq!(err.location().map(|l| l.line), Some(4), "{err}");
    assert!(err.to_string().contains("harness.sandbox.network: unknown variant `lo`"), "{err}");

    let err = fisk_ai::Config::from_yaml_str(&yaml("    limits:\n      memory: 12 parsecs\n")).unwrap_err();
    assert_eq!(err.location().map(|l| l.line), Some(5), "{err}");
    assert!(err.to_string().contains("unknown unit"), "{err}");
    let err = fisk_ai::Config::from_yaml_str(&yaml("    limits:\n      files: many\n")).unwrap_err();
    assert_eq!(err.location().map(|l| l.line), Some(5), "{err}");
    let err = fisk_ai::Config::from_yaml_str(&yaml("    fss: {}\n")).unwrap_err();
    assert!(err.to_string().contains("fss"), "{err}");
    let err = fisk_ai::Config::from_yaml_str("harness:\n  env:\n    inherit: some\n").unwrap_err();
    assert!(err.to_string().contains("harness.env.inherit: unknown variant `some`"), "{err}");

    let ok = fisk_ai::Config::from_yaml_str(&yaml("    limits: {memory: 512MiB, cpu: 1500ms, files: 64}\n")).unwrap();
    let limits = ok.harness.sandbox.profile(None).limit_settings();
    assert_eq!((limits.memory, limits.cpu, limits.files), (Some(512 << 20), Some(2), Some(64)));
}

#[tokio::test]
#[ignore = "needs Landlock (Linux 6.2+, ABI 3) and seccomp"]
async fn sbx_5_a_confined_child_inherits_no_descriptor_the_host_left_open() {
    use std::os::fd::AsRawFd;
    let (work, _) = dirs();
    // A descriptor without close-on-exec, as a host (or a C library it links) may leave one.
    let leaked = std::fs::File::open("/etc/hostname").unwrap();
    let flags = nix::fcntl::FdFlag::empty();
    nix::fcntl::fcntl(&leaked, nix::fcntl::FcntlArg::F_SETFD(flags)).unwrap();
    let fd = format!(" {}", leaked.as_raw_fd());

    let (_, open) = attempt(&tools_of(ChildEnv::new().with_working_dir(&work)).await, "fds", "-").await;
    assert!(open.split_whitespace().any(|f| f == fd.trim()), "the control inherits it: {open}");
    let tools = confined(Sandbox::new().limits(Limits::new().files(256)), &work).await;
    let (code, out) = attempt(&tools, "fds", "-").await;
    assert_eq!(code, 0, "{out}");
    assert!(!out.split_whitespace().any(|f| f == fd.trim()), "{out}");
    drop(leaked);
}
