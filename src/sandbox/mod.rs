//! Confining the processes this crate starts (SBX-1..): what a child may read, write and execute, whether it may
//! open sockets, and how much it may consume.
//!
//! A [`Sandbox`] is the operator's profile (`harness.sandbox`). [`Confinement::new`] checks it against the running
//! kernel once, when the harness is built, and fails closed: a setting the kernel cannot enforce is an error naming
//! the setting and the missing feature, unless [`Sandbox::best_effort`] is set, in which case each unenforced part
//! is listed by [`Confinement::unenforced`] (and becomes a warning). A [`ChildEnv`](crate::exec::ChildEnv) carrying
//! the confinement applies it to every child it starts: command tools, stdio MCP servers, and introspection (with
//! the read-only form of the profile, whose writable paths become readable only).
//!
//! # The layers, and what each stops
//!
//! - **Landlock** (`fs`): the child may read only beneath the `read` paths, write only beneath the `write` paths,
//!   and execute only what is beneath the `exec` paths. The application's own binary, its ELF interpreter (or a
//!   script's `#!` interpreter), the shared-library directories, `/etc/ld.so.cache` and `/dev/null` are added
//!   automatically ([`Confinement::automatic`] lists them). Landlock follows the final file, so a symlink out of
//!   a writable directory does not widen it. It does not stop the loader (granted so programs start) from running
//!   a readable binary, nor `connect` to a Unix socket by path before ABI 9. Every descriptor above stderr is
//!   marked close-on-exec in the child, so it inherits nothing else.
//! - **seccomp** (`network: none`): every `socket(2)` call fails with `EACCES`, whatever its family, so no TCP, UDP,
//!   raw, netlink or Unix socket can be made; `socketpair(2)` stays for Unix stream and seqpacket pairs, which
//!   reach nothing outside the child's own processes (a datagram pair's end could `sendto` any socket path, so
//!   those are refused). `ptrace`, `pidfd_getfd` and `process_vm_readv`/`writev` are refused too: where the kernel
//!   lacks Landlock, whose domain otherwise stops it, a child could take a socket from the agent with them. `io_uring_setup` is refused too (io_uring can create and connect sockets without `socket(2)`),
//!   and on x86-64 so is every x32 system call (numbers at or above `0x4000_0000`, which would otherwise bypass a
//!   filter written for x86-64 numbers); a system call of another architecture kills the process. A filter on
//!   families was chosen over a fresh network namespace because it needs no privilege and costs nothing per call.
//! - **A network namespace** (`network: loopback`): every child joins the confinement's own network namespace,
//!   which holds only `lo` (made once, by the confinement step, when the confinement is built, or at the first
//!   call of a tagged command; the `netns` module), and a seccomp filter lets it make only `AF_INET` and `AF_INET6`
//!   sockets (pairs as under `none`). It also needs Landlock: the child's domain keeps it from tracing processes
//!   outside it (as root, with no user namespace between them, nothing else would). A child reaches listeners it, or another child of the same
//!   confinement, made on that loopback, and nothing else: other addresses are unreachable, and the host's own
//!   loopback is not this one, so its services are out of reach too. Unix sockets are refused, since a pathname
//!   socket reaches a host service whatever the namespace. A namespace, because the alternative, a seccomp filter
//!   on connect targets, cannot read them (they are behind a pointer), and a supervisor reading them for the
//!   filter races the child's other threads. As root the namespace is made directly; otherwise (or without
//!   `CAP_SYS_ADMIN`) inside a user namespace of its own mapping only the agent's user, whose capabilities the
//!   children drop as a root agent's children do.
//! - **Resource limits** (`limits`): `cpu` the CPU seconds (`RLIMIT_CPU`: `SIGXCPU` at the limit, `SIGKILL` a
//!   second later), `files` the open descriptors (`RLIMIT_NOFILE`), `file_size` the largest file it may write
//!   (`RLIMIT_FSIZE`): hard limits the child cannot raise (except as root, where `CAP_SYS_RESOURCE` lets a child
//!   that tries). `processes` and `memory` get a **per-call cgroup** where one can be made (cgroup v1 `pids` and
//!   `memory` hierarchies writable by this process, as for root): every process and thread of the call counts,
//!   root included, the kernel kills at the memory limit, and when the call ends everything left in its cgroup is
//!   killed, whatever it did to leave the process group. Without one, `memory` falls back to the address space
//!   (`RLIMIT_AS`, so an allocation fails instead) and `processes` to `RLIMIT_NPROC` (the agent user's processes),
//!   which does not bind root: as root without a cgroup, `processes` is refused. cgroup v2 is not used yet (its
//!   "no internal processes" rule needs a delegated subtree), so a v2-only machine gets the fallbacks.
//! - **`no_new_privs`** is set whenever any setting is on, so a setuid or file-capability binary runs without the
//!   rights it would otherwise gain.
//! - **Tags** (SBX-7): a command tagged `ai:sandbox=readonly` writes nowhere (with an `fs` profile, its writable
//!   paths become readable only; without one, nothing but `/dev/null` is writable), one tagged `ai:net=none` opens
//!   no socket, and one tagged `ai:net=loopback` gets `network: loopback` (made on first use). Tags only narrow, with or
//!   without a profile, and fail the call when the kernel cannot enforce them; the behaviour tags
//!   (`ai:read_only`, ...) describe a command and never confine it.
//!
//! # Cost, and the two ways of installing
//!
//! Everything is prepared in the agent (the Landlock ruleset, the filter, the limit values, the cgroup files), and
//! installed in the child right before `exec`, with no shell, one of two ways:
//!
//! - **The confinement step** (SBX-9, the `step` module): a command tool's child starts with `posix_spawn` as a
//!   one-page program without libc (`src/sandbox/confine.c`, built by `build.rs`), which reads what to install
//!   from a socket made for that child, installs it in the order the hook does, and execs the command.
//!   `posix_spawn` shares the agent's memory until that `exec` instead of copying its page tables, so a confined
//!   spawn costs a fixed 0.1-0.3 ms more than an unconfined one, whatever the agent's size: the step's own
//!   `exec`, the kernel's compile of the seccomp filter, and the per-call cgroup's attach.
//! - **The post-fork hook** (the `child` module, the crate's one `unsafe` block): stdio MCP servers and
//!   introspection (started once), and every child where the step cannot run
//!   ([`Confinement::spawns_through_step`]). Any hook makes the standard library `fork`, which copies the
//!   agent's page tables: milliseconds in a large agent (`benches/sandbox.rs` measures both).
//!
//! ```
//! use fisk_ai::sandbox::{Limits, Network, Sandbox};
//!
//! let profile = Sandbox::new()
//!     .read("/etc/ssl")
//!     .write("/var/lib/app/out")
//!     .network(Network::None)
//!     .limits(Limits::new().cpu_seconds(30).files(256));
//! assert!(profile.is_enabled());
//! ```

#[cfg(target_os = "linux")]
mod cgroup;
#[cfg(target_os = "linux")]
mod child;
mod confinement;
#[cfg(target_os = "linux")]
mod elf;
#[cfg(target_os = "linux")]
mod filter;
#[cfg(target_os = "linux")]
mod kernel;
#[cfg(target_os = "linux")]
mod killed;
#[cfg(target_os = "linux")]
mod netns;
#[cfg(target_os = "linux")]
mod rules;
#[cfg(all(target_os = "linux", fisk_confine))]
pub(crate) mod step;

pub use confinement::{Automatic, Confinement, Unenforced};

#[cfg(target_os = "linux")]
pub(crate) use cgroup::CallGroup;

/// A call's cgroups (none elsewhere than Linux).
#[cfg(not(target_os = "linux"))]
#[derive(Debug, Default)]
pub(crate) struct CallGroup;

#[cfg(not(target_os = "linux"))]
impl CallGroup {
    pub(crate) fn explain(&self) -> Option<String> {
        None
    }

    pub(crate) fn spare(&mut self, _pid: u32) {}
}

use crate::tool::Tags;
use crate::tool::tags::{NET_LOOPBACK, NET_NONE, SANDBOX_READONLY};
use std::path::PathBuf;

/// How one child's confinement is narrowed from the profile's (SBX-7): by the command's tags, or, for
/// introspection, to the read-only form. Narrowing only ever removes rights.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Narrowing {
    /// Writable paths become readable only (no profile: nothing is writable but `/dev/null`).
    pub(crate) read_only: bool,
    /// No socket, whatever `network` says.
    pub(crate) no_network: bool,
    /// Loopback only (`ai:net=loopback`), where `network` is wider.
    pub(crate) loopback: bool,
    /// Asked for by the command's own tags, so enforced even without an `fs` profile, and failing the call when
    /// the kernel cannot (introspection's read-only form applies only to a profile with `fs` rules).
    pub(crate) tagged: bool,
}

impl Narrowing {
    /// Introspection's: read-only.
    pub(crate) const READ_ONLY: Narrowing =
        Narrowing { read_only: true, no_network: false, loopback: false, tagged: false };

    /// What a command's confinement tags ask for; behaviour tags (`ai:read_only`, ...) never confine. A
    /// confinement tag this version does not know (`ai:net=None`, `ai:sandbox=read-only`) narrows everything: its
    /// author asked for confinement, so a misspelling must not run the command wider.
    pub(crate) fn from_tags(tags: &Tags) -> Narrowing {
        let unknown = tags.iter().any(|t| {
            let confining = t.starts_with("ai:net=") || t.starts_with("ai:sandbox=");
            confining && ![SANDBOX_READONLY, NET_NONE, NET_LOOPBACK].contains(&t)
        });
        let read_only = unknown || tags.contains(SANDBOX_READONLY);
        let no_network = unknown || tags.contains(NET_NONE);
        let loopback = !no_network && tags.contains(NET_LOOPBACK);
        Narrowing { read_only, no_network, loopback, tagged: read_only || no_network || loopback }
    }
}

/// What a confined child may do on the network (`harness.sandbox.network`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Network {
    /// `any`: no network confinement (the default; today's behaviour).
    #[default]
    Any,
    /// `loopback`: a network of the confinement's own, holding only `lo` (a network namespace), reached by
    /// `AF_INET` and `AF_INET6` sockets only: a child can reach listeners it or another child of the same
    /// confinement made, and nothing else, the host's own loopback services included.
    Loopback,
    /// `none`: no socket at all (a seccomp filter; `socketpair` stays).
    None,
}

impl Network {
    /// The configuration spelling: `any`, `loopback` or `none`.
    pub fn as_str(self) -> &'static str {
        match self {
            Network::Any => "any",
            Network::Loopback => "loopback",
            Network::None => "none",
        }
    }
}

/// Resource limits of a confined child (`harness.sandbox.limits`). Unset means unlimited (inherited).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Limits {
    /// `memory`: address space in bytes.
    pub memory: Option<u64>,
    /// `cpu`: CPU time in seconds.
    pub cpu: Option<u64>,
    /// `files`: open file descriptors.
    pub files: Option<u64>,
    /// `processes`: processes of the call, in a per-call cgroup where one can be made; else of the agent's user.
    pub processes: Option<u64>,
    /// `file_size`: the largest file the child may write, in bytes.
    pub file_size: Option<u64>,
}

impl Limits {
    /// No limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// Limit the address space to `bytes`.
    #[must_use]
    pub fn memory(mut self, bytes: u64) -> Self {
        self.memory = Some(bytes);
        self
    }

    /// Limit CPU time to `seconds`.
    #[must_use]
    pub fn cpu_seconds(mut self, seconds: u64) -> Self {
        self.cpu = Some(seconds);
        self
    }

    /// Limit open file descriptors to `n`.
    #[must_use]
    pub fn files(mut self, n: u64) -> Self {
        self.files = Some(n);
        self
    }

    /// Limit the processes of a call to `n`: a per-call pids cgroup where one can be made, else `RLIMIT_NPROC` (the
    /// agent user's processes), which does not bind root, so root without a cgroup is refused (see the module docs).
    #[must_use]
    pub fn processes(mut self, n: u64) -> Self {
        self.processes = Some(n);
        self
    }

    /// Limit the size of any file the child writes to `bytes`.
    #[must_use]
    pub fn file_size(mut self, bytes: u64) -> Self {
        self.file_size = Some(bytes);
        self
    }

    /// Whether any limit is set.
    pub fn is_set(&self) -> bool {
        self.memory.is_some()
            || self.cpu.is_some()
            || self.files.is_some()
            || self.processes.is_some()
            || self.file_size.is_some()
    }
}

/// An operator's confinement profile (`harness.sandbox`): built by value, checked by [`Confinement::new`].
///
/// Paths are taken as given (the configuration resolves relative ones against its own directory); each must exist
/// when the confinement is built.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sandbox {
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
    exec: Vec<PathBuf>,
    network: Network,
    limits: Limits,
    best_effort: bool,
    landlock_abi: Option<u8>,
}

impl Sandbox {
    /// A profile that confines nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Allow reading files and listing directories beneath `path`.
    #[must_use]
    pub fn read(mut self, path: impl Into<PathBuf>) -> Self {
        self.read.push(path.into());
        self
    }

    /// Allow reading and writing (creating, removing, truncating) beneath `path`.
    #[must_use]
    pub fn write(mut self, path: impl Into<PathBuf>) -> Self {
        self.write.push(path.into());
        self
    }

    /// Allow executing (and reading) what is beneath `path`.
    #[must_use]
    pub fn exec(mut self, path: impl Into<PathBuf>) -> Self {
        self.exec.push(path.into());
        self
    }

    /// Confine the network.
    #[must_use]
    pub fn network(mut self, network: Network) -> Self {
        self.network = network;
        self
    }

    /// Set resource limits.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Enforce what the kernel can and report the rest ([`Confinement::unenforced`]) instead of failing.
    #[must_use]
    pub fn best_effort(mut self, yes: bool) -> Self {
        self.best_effort = yes;
        self
    }

    /// Require at least this Landlock ABI. By default the profile requires what its rules need: ABI 3 for any `fs`
    /// rule (the first that controls truncation).
    #[must_use]
    pub fn landlock_abi(mut self, abi: u8) -> Self {
        self.landlock_abi = Some(abi);
        self
    }

    /// Whether any setting is on (any path, a network other than `any`, any limit, or a required ABI).
    pub fn is_enabled(&self) -> bool {
        self.has_fs() || self.network != Network::Any || self.limits.is_set() || self.landlock_abi.is_some()
    }

    /// Whether any `fs` path is listed.
    pub fn has_fs(&self) -> bool {
        !(self.read.is_empty() && self.write.is_empty() && self.exec.is_empty())
    }

    /// The readable paths.
    pub fn read_paths(&self) -> &[PathBuf] {
        &self.read
    }

    /// The writable paths.
    pub fn write_paths(&self) -> &[PathBuf] {
        &self.write
    }

    /// The executable paths.
    pub fn exec_paths(&self) -> &[PathBuf] {
        &self.exec
    }

    /// The network setting.
    pub fn network_setting(&self) -> Network {
        self.network
    }

    /// The limits.
    pub fn limit_settings(&self) -> Limits {
        self.limits
    }

    /// Whether unenforceable settings are warnings rather than errors.
    pub fn is_best_effort(&self) -> bool {
        self.best_effort
    }

    /// The Landlock ABI the profile requires: the configured one, else 3 with any `fs` rule, else none.
    pub fn required_abi(&self) -> Option<u8> {
        self.landlock_abi.or(self.has_fs().then_some(3))
    }

    /// The read-only form (introspection's): writable paths become readable only.
    #[must_use]
    pub fn read_only(&self) -> Sandbox {
        let mut p = self.clone();
        p.read.append(&mut p.write);
        p
    }
}
