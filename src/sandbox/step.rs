//! The confinement step (SBX-9): a confined child starts as `fisk-ai-confine`, a program of one page without libc
//! (`src/sandbox/confine.c`, built by `build.rs`), which installs what the parent prepared and then execs the
//! command. The child is started with `posix_spawn`, which does not copy the agent's page tables; the post-fork
//! hook (the `child` module) made the standard library `fork` the agent instead, which costs milliseconds in a
//! large, multi-threaded agent (`benches/sandbox.rs` measures both).
//!
//! The program is embedded in the library, and written once per process into a sealed memory file (`memfd`), so
//! nothing is installed on disk and nothing can change it after the seal. It is executed as `/proc/self/fd/N`.
//!
//! The parent hands the child what to install through one message on a socket pair made for that child alone: the
//! child's end is its stdin, placed there by `posix_spawn` in the child only, and close-on-exec in this process, so
//! no other process this one starts can read or forge the message. The message carries the limits, the compiled
//! seccomp filter and the securebits, and, as `SCM_RIGHTS`, the Landlock ruleset, the namespaces of
//! `network: loopback` and the call's `cgroup.procs` files. The same program, in a hold mode, makes those namespaces
//! once per confinement ([`hold`]). The same socket is then the step's report channel: an "armed" record `{0, 0}` then end-of-file means it
//! installed everything and executed the command; a record `{step, errno}` means it failed and exited without
//! executing it, and the call fails as a spawn error. The runner reads the channel once the child has exited, when
//! the answer is already there, so the spawn never waits for it.
//!
//! When the program was not built (no C compiler), or this system will not execute a memory file (`/proc` absent,
//! `vm.memfd_noexec = 2`), a one-time probe finds out and every confined child goes through the post-fork hook,
//! which enforces exactly the same.

use super::child::Armed;
use rustix::net::{
    AddressFamily, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};
use std::io::{self, IoSlice, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// The program, as `build.rs` compiled it.
static PROGRAM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/fisk-ai-confine"));

/// The message layout the program reads (`struct header`, `struct limit` and `struct sock_filter` in confine.c).
const MAGIC: u32 = 0x314b_4346;
const FLAG_RULESET: u32 = 1;
const FLAG_FILTER: u32 = 2;
const FLAG_NETNS: u32 = 4;
const FLAG_USERNS: u32 = 8;
const FLAG_HOLD: u32 = 16;
const FLAG_NEWUSER: u32 = 32;
/// The program's bounds on what one message carries.
const MAX_LIMITS: usize = 8;
const MAX_FILTER: usize = 4096;
const MAX_CGROUPS: usize = 4;

/// How long a read of the channel may wait: the runner reads it only once the child has exited, when everything is
/// there, so this only bounds a read made earlier (none today).
const REPORT_WAIT: Duration = Duration::from_secs(10);

/// The loaded program: its memory file (kept open for the process's lifetime), which file that is, and the path
/// that executes it.
struct Loaded {
    file: std::fs::File,
    id: (u64, u64),
    path: PathBuf,
}

/// The step's path, when this process can run it (loaded and probed once, and its descriptor still the sealed
/// file: a host that closed it, and put another file at that number, gets the post-fork hook, never that file).
pub(crate) fn path() -> Option<&'static Path> {
    static LOADED: OnceLock<Option<Loaded>> = OnceLock::new();
    let loaded = LOADED
        .get_or_init(|| {
            load().map_err(|why| tracing::warn!("confined children start through the post-fork hook: {why}")).ok()
        })
        .as_ref()?;
    let now = rustix::fs::fstat(&loaded.file).ok()?;
    ((now.st_dev as u64, now.st_ino as u64) == loaded.id).then_some(loaded.path.as_path())
}

/// Below the usual 1,024-descriptor limit, and above where a host's own descriptors usually are.
const HIGH_FD: i32 = 900;

fn load() -> Result<Loaded, String> {
    use rustix::fs::{MemfdFlags, SealFlags};
    let flags = MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING;
    // `MFD_EXEC` asks for an executable file where `vm.memfd_noexec` would otherwise deny it (Linux 6.3); older
    // kernels reject the flag, and their memory files are executable anyway.
    let fd = rustix::fs::memfd_create("fisk-ai-confine", flags | MemfdFlags::EXEC)
        .or_else(|_| rustix::fs::memfd_create("fisk-ai-confine", flags))
        .map_err(|e| format!("no memory file for the confinement step: {e}"))?;
    // Out of the way of descriptor numbers a host reuses; where the limit is lower, wherever it landed.
    let fd = rustix::io::fcntl_dupfd_cloexec(&fd, HIGH_FD).unwrap_or(fd);
    let mut file = std::fs::File::from(fd);
    file.write_all(PROGRAM).map_err(|e| format!("cannot write the confinement step: {e}"))?;
    rustix::fs::fcntl_add_seals(&file, SealFlags::WRITE | SealFlags::GROW | SealFlags::SHRINK | SealFlags::SEAL)
        .map_err(|e| format!("cannot seal the confinement step: {e}"))?;
    let stat = rustix::fs::fstat(&file).map_err(|e| format!("cannot stat the confinement step: {e}"))?;
    let path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
    // Started with no arguments, the program exits 2 at once. Anything else (no `/proc`, a memory file this
    // system will not execute) leaves confinement to the post-fork hook.
    let probe = std::process::Command::new(&path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("this system does not execute the confinement step from a memory file: {e}"))?;
    if probe.code() != Some(2) {
        return Err(format!("the confinement step's probe ended with {probe}"));
    }
    Ok(Loaded { file, id: (stat.st_dev as u64, stat.st_ino as u64), path })
}

/// The parent's end of one child's channel, read once the child has exited.
#[derive(Debug)]
pub(crate) struct Launch {
    channel: OwnedFd,
}

/// Prepare one child: the message with `armed` is sent at once (the socket holds it until the step reads it), and
/// the returned descriptor is the child's stdin.
pub(crate) fn prepare(armed: Armed) -> io::Result<(OwnedFd, Launch)> {
    let (ours, theirs) =
        rustix::net::socketpair(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None)?;
    let Armed { limits, ruleset, filter, cgroups, drop_capabilities, loopback } = armed;
    // As the hook does: a ruleset without its descriptor, or an empty filter, fails the spawn, never skips a layer.
    let ruleset: Option<OwnedFd> = match ruleset {
        Some(r) => Some(Option::<OwnedFd>::from(r).ok_or_else(|| io::Error::other("the Landlock ruleset is gone"))?),
        None => None,
    };
    let filter = match filter.as_deref() {
        Some(f) if f.is_empty() => return Err(io::Error::other("the seccomp filter is empty")),
        Some(f) => f.as_slice(),
        None => &[][..],
    };
    if limits.len() > MAX_LIMITS || filter.len() > MAX_FILTER || cgroups.len() > MAX_CGROUPS {
        return Err(io::Error::other("the confinement is larger than the confinement step takes"));
    }
    let flags = if ruleset.is_some() { FLAG_RULESET } else { 0 }
        | if filter.is_empty() { 0 } else { FLAG_FILTER }
        | loopback.as_ref().map_or(0, |l| FLAG_NETNS | if l.user().is_some() { FLAG_USERNS } else { 0 });
    let securebits = if drop_capabilities { super::child::securebits() } else { 0 };
    let mut msg = Vec::with_capacity(24 + limits.len() * 24 + filter.len() * 8);
    for word in [MAGIC, flags, limits.len() as u32, filter.len() as u32, cgroups.len() as u32, securebits] {
        msg.extend_from_slice(&word.to_ne_bytes());
    }
    for &(resource, soft, hard) in limits.iter() {
        msg.extend_from_slice(&(resource as u32).to_ne_bytes());
        msg.extend_from_slice(&0u32.to_ne_bytes());
        msg.extend_from_slice(&soft.to_ne_bytes());
        msg.extend_from_slice(&hard.to_ne_bytes());
    }
    for ins in filter {
        msg.extend_from_slice(&ins.code.to_ne_bytes());
        msg.extend_from_slice(&[ins.jt, ins.jf]);
        msg.extend_from_slice(&ins.k.to_ne_bytes());
    }
    // In the order confine.c takes them: the ruleset, the user and network namespaces, the cgroups.
    let namespaces = loopback.iter().flat_map(|l| l.user().into_iter().chain([l.net()]));
    let fds: Vec<BorrowedFd<'_>> =
        ruleset.iter().map(AsFd::as_fd).chain(namespaces).chain(cgroups.iter().map(AsFd::as_fd)).collect();
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(3 + MAX_CGROUPS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(io::Error::other("the confinement step's descriptors do not fit one message"));
    }
    rustix::net::sendmsg(&ours, &[IoSlice::new(&msg)], &mut control, SendFlags::NOSIGNAL)?;
    rustix::net::sockopt::set_socket_timeout(&ours, rustix::net::sockopt::Timeout::Recv, Some(REPORT_WAIT))?;
    Ok((theirs, Launch { channel: ours }))
}

/// Whether `net`, opened from the holder `pid`, is a namespace of its own holding only `lo`: not this process's
/// (as it would be had something else answered in the holder's place), and with no other interface.
fn made_here(pid: u32, net: &OwnedFd) -> Result<(), String> {
    let ours =
        std::fs::metadata("/proc/self/ns/net").map_err(|e| format!("cannot read this network namespace: {e}"))?;
    let theirs = rustix::fs::fstat(net).map_err(|e| format!("cannot stat the new network namespace: {e}"))?;
    if theirs.st_ino as u64 == std::os::unix::fs::MetadataExt::ino(&ours) {
        return Err("the holder stayed in this process's network namespace".to_owned());
    }
    let devices = std::fs::read_to_string(format!("/proc/{pid}/net/dev"))
        .map_err(|e| format!("cannot list the new namespace's interfaces: {e}"))?;
    // Two header lines, then one line per interface, `name:` first.
    let others: Vec<&str> = devices
        .lines()
        .skip(2)
        .filter_map(|l| l.split_once(':'))
        .map(|(n, _)| n.trim())
        .filter(|n| *n != "lo")
        .collect();
    match others.as_slice() {
        [] => Ok(()),
        some => Err(format!("the new network namespace has interfaces besides lo: {}", some.join(", "))),
    }
}

/// The steps of confine.c, by number, as a failure names them.
const STEPS: [&str; 11] = [
    "reading its message",
    "opening /dev/null as stdin",
    "joining the call's cgroup",
    "marking descriptors close-on-exec",
    "setting the resource limits",
    "setting no_new_privs",
    "dropping capabilities",
    "installing the Landlock ruleset",
    "installing the seccomp filter",
    "executing the command",
    "joining or making the loopback network namespace",
];

/// Make the namespaces of `network: loopback` (see the `netns` module): the step, started in its hold mode, makes
/// them and waits while their `/proc/<pid>/ns/` links are opened here. `own_user` makes them in a user namespace of
/// their own. Returns the user namespace (with `own_user`) and the network namespace.
pub(crate) fn hold(own_user: bool) -> Result<(Option<OwnedFd>, OwnedFd), String> {
    let path = path().ok_or("it is made by the confinement step, which cannot run on this system")?;
    let fail = |e: io::Error| format!("the confinement step could not make it: {e}");
    let (ours, theirs) =
        rustix::net::socketpair(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None)
            .map_err(|e| fail(e.into()))?;
    let flags = FLAG_HOLD | if own_user { FLAG_NEWUSER } else { 0 };
    let msg: Vec<u8> = [MAGIC, flags, 0, 0, 0, 0].iter().flat_map(|w| w.to_ne_bytes()).collect();
    rustix::net::send(&ours, &msg, SendFlags::NOSIGNAL).map_err(|e| fail(e.into()))?;
    rustix::net::sockopt::set_socket_timeout(&ours, rustix::net::sockopt::Timeout::Recv, Some(REPORT_WAIT))
        .map_err(|e| fail(e.into()))?;
    let mut cmd = std::process::Command::new(path);
    cmd.arg("hold").stdin(theirs).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().map_err(fail)?;
    drop(cmd);
    let launch = Launch { channel: ours };
    let opened = match launch.record() {
        Ok(Some([0, 0])) => {
            // The holder waits for end-of-file and is not reaped yet, so its pid names it.
            let link = |ns: &str| {
                std::fs::File::open(format!("/proc/{}/ns/{ns}", child.id()))
                    .map(OwnedFd::from)
                    .map_err(|e| format!("cannot open the holder's {ns} namespace: {e}"))
            };
            let user = if own_user { link("user").map(Some) } else { Ok(None) };
            user.and_then(|user| link("net").map(|net| (user, net)))
                .and_then(|(user, net)| made_here(child.id(), &net).map(|()| (user, net)))
        }
        Ok(Some(failure)) => Err(fail(failed(failure))),
        Ok(None) => Err("the confinement step ended before making it".to_owned()),
        Err(e) => Err(fail(e)),
    };
    // End-of-file releases the holder (or it has failed and exited).
    drop(launch);
    let _ = child.wait();
    opened
}

impl Launch {
    /// Whether the step executed the command (`Ok`) or failed (the error it reports, which fails the spawn; it
    /// has then exited without executing anything). Call it once the spawning `Command` is dropped (until then
    /// this process holds the child's end, and end-of-file cannot arrive); the runner calls it once the child has
    /// exited, when the answer is already there, so a spawn never waits for it.
    pub(crate) fn confirm(self) -> io::Result<()> {
        match self.record()? {
            Some([0, 0]) => {}
            Some(failure) => return Err(failed(failure)),
            None => return Err(io::Error::other("the confinement step ended before installing what it was sent")),
        }
        match self.record()? {
            None => Ok(()),
            Some(failure) => Err(failed(failure)),
        }
    }

    /// The next `{step, errno}` record, or `None` at end-of-file (or a reset: the child closed its end with the
    /// message unread).
    fn record(&self) -> io::Result<Option<[u32; 2]>> {
        let mut record = [0u8; 8];
        let n = loop {
            match rustix::net::recv(&self.channel, &mut record, RecvFlags::empty()) {
                Ok((n, _)) => break n,
                Err(rustix::io::Errno::INTR) => {}
                // The child closed its end with the message unread: it never installed anything.
                Err(rustix::io::Errno::CONNRESET) => return Ok(None),
                Err(rustix::io::Errno::AGAIN) => {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "the confinement step did not report"));
                }
                Err(e) => return Err(e.into()),
            }
        };
        match n {
            0 => Ok(None),
            8 => Ok(Some([
                u32::from_ne_bytes([record[0], record[1], record[2], record[3]]),
                u32::from_ne_bytes([record[4], record[5], record[6], record[7]]),
            ])),
            _ => Err(io::Error::other("the confinement step cut its report short")),
        }
    }
}

/// The error of a failure record: the step that failed, by name, and its errno.
fn failed([step, errno]: [u32; 2]) -> io::Error {
    let what = (step as usize).checked_sub(1).and_then(|i| STEPS.get(i)).copied().unwrap_or("at an unknown step");
    let os = io::Error::from_raw_os_error(errno as i32);
    io::Error::new(os.kind(), format!("the confinement step failed {what}: {os}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    /// Start the step on `target` with `stdin` as its channel; the exit status, once the launch is confirmed.
    fn start(stdin: OwnedFd, launch: Launch, target: &Path) -> (io::Result<()>, std::process::ExitStatus) {
        let mut cmd = Command::new(path().expect("the step runs on this machine"));
        cmd.arg(target).stdin(stdin).stdout(Stdio::null()).stderr(Stdio::null());
        let mut child = cmd.spawn().expect("the step starts");
        drop(cmd);
        let confirmed = launch.confirm();
        (confirmed, child.wait().unwrap())
    }

    fn armed() -> Armed {
        Armed {
            limits: Arc::new([]),
            ruleset: None,
            filter: None,
            cgroups: Vec::new(),
            drop_capabilities: false,
            loopback: None,
        }
    }

    use std::sync::Arc;

    /// A raw message on a fresh channel, as a forged or damaged parent would send it.
    fn raw(msg: &[u8]) -> (OwnedFd, Launch) {
        let (ours, theirs) =
            rustix::net::socketpair(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None).unwrap();
        rustix::net::send(&ours, msg, SendFlags::NOSIGNAL).unwrap();
        (theirs, Launch { channel: ours })
    }

    #[test]
    fn sbx_9_the_step_executes_the_command_with_its_limits() {
        let dir = tempfile::tempdir().unwrap();
        let mark = dir.path().join("ran");
        let mut a = armed();
        a.limits = Arc::new([(nix::sys::resource::Resource::RLIMIT_NOFILE, 64, 64)]);
        let (stdin, launch) = prepare(a).unwrap();
        // `touch` proves the command ran; the limit is read back below through a second command.
        let mut cmd = Command::new(path().unwrap());
        cmd.args([Path::new("/usr/bin/touch"), &mark]).stdin(stdin);
        let mut child = cmd.spawn().unwrap();
        drop(cmd);
        launch.confirm().unwrap();
        assert!(child.wait().unwrap().success());
        assert!(mark.exists());

        let mut a = armed();
        a.limits = Arc::new([(nix::sys::resource::Resource::RLIMIT_NOFILE, 64, 64)]);
        let (stdin, launch) = prepare(a).unwrap();
        let mut cmd = Command::new(path().unwrap());
        cmd.args(["/bin/cat", "/proc/self/limits"]).stdin(stdin).stdout(Stdio::piped());
        let child = cmd.spawn().unwrap();
        drop(cmd);
        launch.confirm().unwrap();
        let out = String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap();
        let line = out.lines().find(|l| l.starts_with("Max open files")).unwrap();
        assert_eq!(line.split_whitespace().collect::<Vec<_>>()[3..5], ["64", "64"], "{line}");
    }

    #[test]
    fn sbx_9_a_child_that_ends_without_arming_fails_the_spawn() {
        // Not the step: a program that never reads the message nor reports, as if the step had been killed.
        let (stdin, launch) = prepare(armed()).unwrap();
        let mut cmd = Command::new("/bin/true");
        cmd.stdin(stdin);
        let mut child = cmd.spawn().unwrap();
        drop(cmd);
        let err = launch.confirm().unwrap_err();
        assert!(err.to_string().contains("ended before installing"), "{err}");
        child.wait().unwrap();
    }

    #[test]
    fn sbx_9_a_command_that_cannot_be_executed_fails_the_spawn_with_its_errno() {
        let (stdin, launch) = prepare(armed()).unwrap();
        let (confirmed, status) = start(stdin, launch, Path::new("/no/such/program"));
        let err = confirmed.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
        assert!(err.to_string().contains("executing the command"), "{err}");
        assert_eq!(status.code(), Some(127));
    }

    #[test]
    fn sbx_9_a_damaged_or_forged_message_runs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mark = dir.path().join("ran");
        let good = {
            let mut m = Vec::new();
            for w in [MAGIC, 0, 0, 0, 0, 0] {
                m.extend_from_slice(&w.to_ne_bytes());
            }
            m
        };
        let mut bad_magic = good.clone();
        bad_magic[0] ^= 1;
        let mut longer = good.clone();
        longer.push(0);
        let mut claims_a_ruleset = good.clone();
        claims_a_ruleset[4..8].copy_from_slice(&FLAG_RULESET.to_ne_bytes());
        let mut too_many_limits = good.clone();
        too_many_limits[8..12].copy_from_slice(&u32::MAX.to_ne_bytes());
        let with_flags = |flags: u32| {
            let mut m = good.clone();
            m[4..8].copy_from_slice(&flags.to_ne_bytes());
            m
        };
        let netns_without_descriptor = with_flags(FLAG_NETNS);
        let userns_alone = with_flags(FLAG_USERNS);
        let newuser_without_hold = with_flags(FLAG_NEWUSER);
        let mut hold_with_limits = with_flags(FLAG_HOLD);
        hold_with_limits[8..12].copy_from_slice(&1u32.to_ne_bytes());
        // The limit itself (RLIMIT_CPU, 0, 0), so only the mode check can refuse it.
        hold_with_limits.extend_from_slice(&[0u8; 24]);
        let cases: [(&str, &[u8]); 10] = [
            ("empty", &[]),
            ("short", &good[..10]),
            ("bad magic", &bad_magic),
            ("a byte too long", &longer),
            ("a ruleset without its descriptor", &claims_a_ruleset),
            ("more limits than it takes", &too_many_limits),
            ("a network namespace without its descriptor", &netns_without_descriptor),
            ("a user namespace without a network namespace", &userns_alone),
            ("a new user namespace outside the hold mode", &newuser_without_hold),
            ("the hold mode with a limit", &hold_with_limits),
        ];
        for (name, msg) in cases {
            let (stdin, launch) = raw(msg);
            let mut cmd = Command::new(path().unwrap());
            cmd.args([Path::new("/usr/bin/touch"), &mark]).stdin(stdin);
            let mut child = cmd.spawn().unwrap();
            drop(cmd);
            let err = launch.confirm().unwrap_err();
            assert!(err.to_string().contains("reading its message"), "{name}: {err}");
            assert_eq!(child.wait().unwrap().code(), Some(127), "{name}");
            assert!(!mark.exists(), "{name}: the command ran");
        }
        // The well-formed empty message runs it.
        let (stdin, launch) = raw(&good);
        let (confirmed, status) = start(stdin, launch, Path::new("/bin/true"));
        confirmed.unwrap();
        assert!(status.success());
    }

    /// What `/proc/self/{net/dev,uid_map,status}` say in a child armed with `armed`, through the step or the hook.
    fn inside(armed: Armed, through_step: bool) -> String {
        let files = ["/proc/self/net/dev", "/proc/self/uid_map", "/proc/self/status"];
        let mut cmd = if through_step {
            let mut cmd = Command::new(path().unwrap());
            cmd.arg("/bin/cat");
            cmd
        } else {
            Command::new("/bin/cat")
        };
        cmd.args(files).stdout(Stdio::piped());
        let launch = if through_step {
            let (stdin, launch) = prepare(armed).unwrap();
            cmd.stdin(stdin);
            Some(launch)
        } else {
            super::super::child::arm(&mut cmd, armed);
            None
        };
        let child = cmd.spawn().unwrap();
        drop(cmd);
        if let Some(launch) = launch {
            launch.confirm().unwrap();
        }
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    }

    #[test]
    #[ignore = "needs user namespaces"]
    fn sbx_3_children_join_the_loopback_namespace_inside_a_user_namespace_of_its_own() {
        let loopback = Arc::new(super::super::netns::Loopback::new(true).expect("user namespaces here"));
        let host = std::fs::read_to_string("/proc/self/uid_map").unwrap();
        for through_step in [true, false] {
            let mut a = armed();
            a.loopback = Some(Arc::clone(&loopback));
            a.drop_capabilities = true;
            let out = inside(a, through_step);
            let interfaces: Vec<&str> =
                out.lines().filter_map(|l| l.split_once(':')).map(|(name, _)| name.trim()).collect();
            assert!(interfaces.contains(&"lo"), "{out}");
            assert!(!interfaces.iter().any(|i| ["eth0", "ens3", "enp0s3", "wlan0"].contains(i)), "{out}");
            // Only this user, mapped to itself, where the agent's map is the whole range.
            let uid = nix::unistd::getuid().as_raw();
            let map = out.lines().find(|l| l.split_whitespace().count() == 3 && !l.contains(':')).unwrap();
            assert_eq!(map.split_whitespace().collect::<Vec<_>>(), [uid.to_string(), uid.to_string(), "1".into()]);
            assert_ne!(map.trim(), host.trim());
            let caps = out.lines().find(|l| l.starts_with("CapEff:")).unwrap();
            assert!(caps.ends_with("0000000000000000"), "every capability the namespace gave is dropped: {caps}");
        }
    }
}
