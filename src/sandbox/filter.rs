//! The seccomp filters of `network: none` and `network: loopback` (SBX-3), assembled by hand: a filter generated per system call number (as
//! seccompiler's is) cannot say "every number at or above the x32 bit", and without that an x32 `socket` would
//! pass a filter written for x86-64 numbers.

use seccompiler::{BpfProgram, sock_filter};

// Classic BPF opcodes (linux/filter.h: BPF_LD 0x00 | BPF_W 0x00 | BPF_ABS 0x20; BPF_JMP 0x05 with BPF_JEQ 0x10 or
// BPF_JGE 0x30, BPF_K 0x00) and seccomp return values (linux/seccomp.h).
const LD_W_ABS: u16 = 0x20;
const JMP_JEQ_K: u16 = 0x05 | 0x10;
const JMP_JGE_K: u16 = 0x05 | 0x30;
const RET_K: u16 = 0x06;
const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const RET_ALLOW: u32 = 0x7fff_0000;
/// Offsets in `struct seccomp_data`.
const NR: u32 = 0;
const ARCH: u32 = 4;
/// The low 32 bits of the first argument (`args[0]` is at 16; both architectures here are little-endian, and a
/// socket's family is an `int`).
#[cfg(target_endian = "little")]
const ARG0_LOW: u32 = 16;
#[cfg(target_endian = "big")]
const ARG0_LOW: u32 = 20;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 62 | 0x8000_0000 | 0x4000_0000;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 183 | 0x8000_0000 | 0x4000_0000;

/// Whether this architecture has a filter.
pub(super) const SUPPORTED: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

fn stmt(code: u16, k: u32) -> sock_filter {
    sock_filter { code, jt: 0, jf: 0, k }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

/// The filter: a system call of another architecture kills the process; `socket`, `io_uring_setup` and (x86-64)
/// any x32 call fail with `EACCES`; everything else is allowed.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) fn no_sockets() -> BpfProgram {
    let denied = [libc::SYS_socket as u32, libc::SYS_io_uring_setup as u32];
    let x32 = cfg!(target_arch = "x86_64");
    // After the number is loaded: the x32 check (x86-64 only), one test per denied call, then allow, then deny.
    let tests = denied.len() + usize::from(x32);
    let mut prog = vec![
        stmt(LD_W_ABS, ARCH),
        jump(JMP_JEQ_K, AUDIT_ARCH, 1, 0),
        stmt(RET_K, RET_KILL_PROCESS),
        stmt(LD_W_ABS, NR),
    ];
    let mut remaining = tests;
    if x32 {
        remaining -= 1;
        // Jump over the remaining tests and the allow, to the deny.
        prog.push(jump(JMP_JGE_K, 0x4000_0000, offset(remaining + 1), 0));
    }
    for nr in denied {
        remaining -= 1;
        prog.push(jump(JMP_JEQ_K, nr, offset(remaining + 1), 0));
    }
    prog.push(stmt(RET_K, RET_ALLOW));
    prog.push(stmt(RET_K, RET_ERRNO | libc::EACCES as u32));
    prog
}

/// The filter of `network: loopback`, beside its network namespace: `socket` succeeds only for `AF_INET` and
/// `AF_INET6` (confined to that namespace's `lo`), so no Unix socket reaches a host service by path and no family
/// outside the namespace's reach (`AF_VSOCK`, `AF_PACKET`, ...) is made; `io_uring_setup` and (x86-64) x32 calls
/// fail with `EACCES` as in [`no_sockets`]; a system call of another architecture kills the process.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) fn inet_only() -> BpfProgram {
    let mut prog = vec![
        stmt(LD_W_ABS, ARCH),
        jump(JMP_JEQ_K, AUDIT_ARCH, 1, 0),
        stmt(RET_K, RET_KILL_PROCESS),
        stmt(LD_W_ABS, NR),
    ];
    // The instructions after the number is loaded, with the deny and allow returns at the end.
    let mut tests: Vec<(u16, u32, Target, Target)> = Vec::new();
    if cfg!(target_arch = "x86_64") {
        tests.push((JMP_JGE_K, 0x4000_0000, Target::Deny, Target::Next));
    }
    tests.push((JMP_JEQ_K, libc::SYS_io_uring_setup as u32, Target::Deny, Target::Next));
    tests.push((JMP_JEQ_K, libc::SYS_socket as u32, Target::Next, Target::Allow));
    let first = prog.len();
    let family = tests.len();
    // socket: load the family, then allow the two.
    let families = [libc::AF_INET as u32, libc::AF_INET6 as u32];
    let deny = first + family + 1 + families.len();
    let allow = deny + 1;
    for (i, (code, k, jt, jf)) in tests.into_iter().enumerate() {
        let at = first + i;
        let to = |t: Target| match t {
            Target::Next => 0,
            Target::Deny => offset(deny - at - 1),
            Target::Allow => offset(allow - at - 1),
        };
        prog.push(jump(code, k, to(jt), to(jf)));
    }
    prog.push(stmt(LD_W_ABS, ARG0_LOW));
    for (i, af) in families.into_iter().enumerate() {
        let at = prog.len();
        let last = i + 1 == families.len();
        prog.push(jump(JMP_JEQ_K, af, offset(allow - at - 1), if last { offset(deny - at - 1) } else { 0 }));
    }
    prog.push(stmt(RET_K, RET_ERRNO | libc::EACCES as u32));
    prog.push(stmt(RET_K, RET_ALLOW));
    prog
}

/// Where a test of [`inet_only`] goes.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[derive(Clone, Copy)]
enum Target {
    Next,
    Deny,
    Allow,
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(super) fn inet_only() -> BpfProgram {
    Vec::new()
}

/// A jump distance; the filter has a handful of instructions, so it always fits.
fn offset(n: usize) -> u8 {
    u8::try_from(n).unwrap_or(u8::MAX)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(super) fn no_sockets() -> BpfProgram {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the filter over one `seccomp_data` (nr, arch) the way the kernel does, for the few opcodes it uses.
    fn verdict(prog: &[sock_filter], nr: u32, arch: u32) -> u32 {
        verdict_with(prog, nr, arch, 0)
    }

    fn verdict_with(prog: &[sock_filter], nr: u32, arch: u32, arg0: u32) -> u32 {
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let i = &prog[pc];
            match i.code {
                LD_W_ABS => {
                    acc = match i.k {
                        NR => nr,
                        ARCH => arch,
                        ARG0_LOW => arg0,
                        other => panic!("unexpected offset {other}"),
                    }
                }
                RET_K => return i.k,
                JMP_JEQ_K | JMP_JGE_K => {
                    let hit = if i.code == JMP_JEQ_K { acc == i.k } else { acc >= i.k };
                    pc += usize::from(if hit { i.jt } else { i.jf });
                }
                other => panic!("unexpected opcode {other}"),
            }
            pc += 1;
        }
    }

    #[test]
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn sbx_3_filter_denies_sockets_and_foreign_calls_only() {
        let prog = no_sockets();
        let deny = RET_ERRNO | libc::EACCES as u32;
        assert_eq!(verdict(&prog, libc::SYS_socket as u32, AUDIT_ARCH), deny);
        assert_eq!(verdict(&prog, libc::SYS_io_uring_setup as u32, AUDIT_ARCH), deny);
        assert_eq!(verdict(&prog, libc::SYS_socketpair as u32, AUDIT_ARCH), RET_ALLOW);
        assert_eq!(verdict(&prog, libc::SYS_connect as u32, AUDIT_ARCH), RET_ALLOW);
        assert_eq!(verdict(&prog, libc::SYS_read as u32, AUDIT_ARCH), RET_ALLOW);
        assert_eq!(verdict(&prog, libc::SYS_socket as u32, 3 | 0x4000_0000), RET_KILL_PROCESS);
        if cfg!(target_arch = "x86_64") {
            assert_eq!(verdict(&prog, 0x4000_0000 | libc::SYS_socket as u32, AUDIT_ARCH), deny);
        }
    }

    #[test]
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn sbx_3_the_loopback_filter_allows_inet_sockets_only() {
        let prog = inet_only();
        let deny = RET_ERRNO | libc::EACCES as u32;
        let socket = libc::SYS_socket as u32;
        for af in [libc::AF_INET, libc::AF_INET6] {
            assert_eq!(verdict_with(&prog, socket, AUDIT_ARCH, af as u32), RET_ALLOW, "family {af}");
        }
        for af in [libc::AF_UNIX, libc::AF_NETLINK, libc::AF_PACKET, libc::AF_VSOCK, 0, u32::MAX as i32] {
            assert_eq!(verdict_with(&prog, socket, AUDIT_ARCH, af as u32), deny, "family {af}");
        }
        assert_eq!(verdict(&prog, libc::SYS_io_uring_setup as u32, AUDIT_ARCH), deny);
        assert_eq!(verdict(&prog, libc::SYS_socketpair as u32, AUDIT_ARCH), RET_ALLOW);
        assert_eq!(verdict(&prog, libc::SYS_connect as u32, AUDIT_ARCH), RET_ALLOW);
        assert_eq!(verdict(&prog, socket, 3 | 0x4000_0000), RET_KILL_PROCESS);
        if cfg!(target_arch = "x86_64") {
            assert_eq!(verdict_with(&prog, 0x4000_0000 | socket, AUDIT_ARCH, libc::AF_INET as u32), deny);
        }
    }
}
