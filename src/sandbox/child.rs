//! The one place the crate runs code between `fork` and `exec` (SBX-5), and its one `unsafe` block.
//!
//! Everything the child installs is prepared in the parent, before the fork: the limit values, the Landlock ruleset
//! (its own file descriptor, duplicated for this child) and the compiled seccomp filter. The hook only makes system
//! calls through wrappers that neither allocate nor take locks (`write(2)` on an open `File`, nix 0.31's `setrlimit` and `prctl`,
//! rustix 1.1's `setns`, securebits, ambient-set and `capset` calls,
//! landlock 0.4.8's `RulesetCreated::restrict_self` and seccompiler 0.5.0's `apply_filter`; their errors are
//! `errno` values, built without allocating), so it is async-signal-safe in a child forked from a multi-threaded
//! process. No maintained crate installs Landlock and seccomp in another process's child without such a hook, and
//! none marks inherited descriptors close-on-exec: that one call (`close_range`) is made directly.
#![allow(unsafe_code)]

use landlock::RulesetCreated;
use nix::sys::resource::{Resource, setrlimit};
use seccompiler::BpfProgram;
use std::io;
use std::os::unix::process::CommandExt;
use std::sync::Arc;

/// What one child installs.
pub(crate) struct Armed {
    /// `(resource, soft, hard)`, set first, while the child may still lower its own limits.
    pub(crate) limits: Arc<[(Resource, u64, u64)]>,
    /// This child's copy of the ruleset.
    pub(crate) ruleset: Option<RulesetCreated>,
    /// The filter, installed last: after it nothing else needs a denied call.
    pub(crate) filter: Option<Arc<BpfProgram>>,
    /// The `cgroup.procs` files of the call's cgroups, joined first, so everything after is accounted to them.
    pub(crate) cgroups: Vec<std::fs::File>,
    /// Drop every capability (the agent runs as root, or the child joins a user namespace, which gives it every
    /// capability there): uid 0 stays, its privileges go, and `execve` cannot give them back.
    pub(crate) drop_capabilities: bool,
    /// The loopback-only network namespace of `network: loopback`, joined after the cgroups.
    pub(crate) loopback: Option<Arc<super::netns::Loopback>>,
}

/// Arm `cmd`: its child installs `armed` right before `exec`. A failure there fails the spawn with the `errno`.
pub(crate) fn arm(cmd: &mut std::process::Command, armed: Armed) {
    let mut armed = armed;
    // SAFETY: the closure runs in the forked child, before exec, where only async-signal-safe work is sound. It
    // reads memory prepared before the fork and makes system calls through the allocation-free, lock-free wrappers
    // named in the module docs; `Option::take` moves the ruleset out of the child's own copy of the closure.
    unsafe {
        cmd.pre_exec(move || install(&mut armed));
    }
}

fn install(armed: &mut Armed) -> io::Result<()> {
    super::cgroup::join(&armed.cgroups)?;
    if let Some(loopback) = &armed.loopback {
        loopback.join()?;
    }
    close_inherited()?;
    for &(resource, soft, hard) in armed.limits.iter() {
        setrlimit(resource, soft, hard).map_err(errno)?;
    }
    nix::sys::prctl::set_no_new_privs().map_err(errno)?;
    if armed.drop_capabilities {
        drop_capabilities()?;
    }
    if let Some(ruleset) = armed.ruleset.take() {
        // `restrict_self` reports failure as a value; the errno is still the failing call's. A ruleset built as a
        // hard requirement is fully enforced or refused; anything else is refused here too.
        match ruleset.restrict_self() {
            Ok(status) if status.ruleset == landlock::RulesetStatus::FullyEnforced => {}
            Ok(_) => return Err(io::Error::from_raw_os_error(libc::EPERM)),
            Err(_) => return Err(io::Error::last_os_error()),
        }
    }
    if let Some(filter) = &armed.filter
        && seccompiler::apply_filter(filter).is_err()
    {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Every descriptor above stderr is marked close-on-exec, so the command inherits only its stdin, stdout and
/// stderr, whatever the host left open without the flag (a listening socket would otherwise outlive
/// `network: none`). Marking, not closing: the descriptors this hook still uses stay open until `exec`.
fn close_inherited() -> io::Result<()> {
    // SAFETY: `close_range` takes three integers and touches no memory; with CLOSE_RANGE_CLOEXEC it closes nothing.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC) };
    match rc {
        0 => Ok(()),
        // Linux before 5.11 lacks it (and Landlock ABI 3, so no `fs` rule runs there anyway).
        _ if matches!(io::Error::last_os_error().raw_os_error(), Some(libc::ENOSYS | libc::EINVAL)) => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// No capability survives: with `NO_ROOT` (locked) `execve` does not give uid 0 the full set, with no_new_privs
/// file capabilities are ignored, and the ambient, inheritable, permitted and effective sets are emptied.
fn drop_capabilities() -> io::Result<()> {
    use rustix::thread::{CapabilitiesSecureBits as Bits, CapabilitySet, CapabilitySets};
    let raw = |e: rustix::io::Errno| io::Error::from_raw_os_error(e.raw_os_error());
    rustix::thread::set_capabilities_secure_bits(Bits::from_bits_retain(securebits())).map_err(raw)?;
    rustix::thread::clear_ambient_capability_set().map_err(raw)?;
    let none = CapabilitySet::empty();
    rustix::thread::set_capabilities(None, CapabilitySets { effective: none, permitted: none, inheritable: none })
        .map_err(raw)
}

/// The securebits a root child sets (the confinement step sets the same ones).
pub(crate) fn securebits() -> u32 {
    use rustix::thread::CapabilitiesSecureBits as Bits;
    (Bits::NO_ROOT
        | Bits::NO_ROOT_LOCKED
        | Bits::NO_SETUID_FIXUP
        | Bits::NO_SETUID_FIXUP_LOCKED
        | Bits::NO_CAP_AMBIENT_RAISE
        | Bits::NO_CAP_AMBIENT_RAISE_LOCKED)
        .bits()
}

fn errno(e: nix::errno::Errno) -> io::Error {
    io::Error::from_raw_os_error(e as i32)
}
