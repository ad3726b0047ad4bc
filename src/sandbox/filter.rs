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
/// BPF_ALU 0x04 | BPF_AND 0x50 | BPF_K 0x00.
const ALU_AND_K: u16 = 0x54;
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
/// The low 32 bits of the second argument (`socketpair`'s type, flags included).
#[cfg(target_endian = "little")]
const ARG1_LOW: u32 = 24;
#[cfg(target_endian = "big")]
const ARG1_LOW: u32 = 28;

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

/// The filter of `network: none`: a system call of another architecture kills the process; `socket`, the
/// [`DENIED`] calls and (x86-64) any x32 call fail with `EACCES`; `socketpair` only makes stream and seqpacket
/// pairs (see [`programme`]); everything else is allowed.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) fn no_sockets() -> BpfProgram {
    programme(&[])
}

/// The filter of `network: loopback`, beside its network namespace: as [`no_sockets`], except that `socket`
/// succeeds for `AF_INET` and `AF_INET6` (confined to that namespace's `lo`), so no Unix socket reaches a host
/// service by path and no family outside the namespace's reach (`AF_VSOCK`, `AF_UNIX`, ...) is made.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) fn inet_only() -> BpfProgram {
    programme(&[libc::AF_INET as u32, libc::AF_INET6 as u32])
}

/// Calls refused (`EACCES`) whatever the network setting: `io_uring_setup` (io_uring makes and connects sockets
/// without `socket(2)`), and the ways of reaching into another process (`ptrace`, `pidfd_getfd`,
/// `process_vm_readv`, `process_vm_writev`), which would let a child take a socket from, or act through, a process
/// outside its confinement (the agent among them) where neither Landlock's domain nor Yama stops it.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const DENIED: [libc::c_long; 5] = [
    libc::SYS_io_uring_setup,
    libc::SYS_ptrace,
    libc::SYS_pidfd_getfd,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
];

/// Where an instruction of [`programme`] jumps.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[derive(Clone, Copy, PartialEq)]
enum Label {
    Next,
    Socket,
    Pair,
    Deny,
    Allow,
}

/// The filter, with `socket` allowed for `families` only, and the [`DENIED`] calls refused. `socketpair` is allowed
/// for `AF_UNIX` (no other family's module is loaded on demand) with `SOCK_STREAM` and `SOCK_SEQPACKET` only: a datagram pair's ends can `sendto` any path (the kernel uses the address given, not the
/// pair's peer), which would reach a host's datagram services (`/dev/log`, the journal, `chronyd`), while a
/// connected stream end refuses a new address (`EISCONN`) and a seqpacket end ignores it.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn programme(families: &[u32]) -> BpfProgram {
    use Label::{Allow, Deny, Next, Pair, Socket};
    // The architecture check: anything else is killed.
    let mut prog = vec![stmt(LD_W_ABS, ARCH), jump(JMP_JEQ_K, AUDIT_ARCH, 1, 0), stmt(RET_K, RET_KILL_PROCESS)];
    // Then (label of the block it starts, code, k, jump if true, jump if false); both `Next` for a statement.
    let mut code: Vec<(Option<Label>, u16, u32, Label, Label)> = vec![(None, LD_W_ABS, NR, Next, Next)];
    if cfg!(target_arch = "x86_64") {
        code.push((None, JMP_JGE_K, 0x4000_0000, Deny, Next));
    }
    for nr in DENIED {
        code.push((None, JMP_JEQ_K, nr as u32, Deny, Next));
    }
    code.push((None, JMP_JEQ_K, libc::SYS_socket as u32, if families.is_empty() { Deny } else { Socket }, Next));
    code.push((None, JMP_JEQ_K, libc::SYS_socketpair as u32, Pair, Allow));
    if !families.is_empty() {
        code.push((Some(Socket), LD_W_ABS, ARG0_LOW, Next, Next));
        for (i, &af) in families.iter().enumerate() {
            code.push((None, JMP_JEQ_K, af, Allow, if i + 1 == families.len() { Deny } else { Next }));
        }
    }
    code.push((Some(Pair), LD_W_ABS, ARG0_LOW, Next, Next));
    code.push((None, JMP_JEQ_K, libc::AF_UNIX as u32, Next, Deny));
    code.push((None, LD_W_ABS, ARG1_LOW, Next, Next));
    code.push((None, ALU_AND_K, 0xf, Next, Next));
    code.push((None, JMP_JEQ_K, libc::SOCK_STREAM as u32, Allow, Next));
    code.push((None, JMP_JEQ_K, libc::SOCK_SEQPACKET as u32, Allow, Deny));
    code.push((Some(Deny), RET_K, RET_ERRNO | libc::EACCES as u32, Next, Next));
    code.push((Some(Allow), RET_K, RET_ALLOW, Next, Next));
    // Every jump is forward, to a block placed after it (a label with no block would be a bug here: checked below).
    let at = |label: Label| code.iter().position(|c| c.0 == Some(label)).unwrap_or(0);
    debug_assert!(
        code.iter().enumerate().all(|(i, c)| [c.3, c.4].iter().all(|&l| l == Next || at(l) > i)),
        "a seccomp filter jump without a block after it"
    );
    for (i, &(_, op, k, jt, jf)) in code.iter().enumerate() {
        let to = |l: Label| if l == Next { 0 } else { offset(at(l).saturating_sub(i + 1)) };
        prog.push(if op == JMP_JEQ_K || op == JMP_JGE_K { jump(op, k, to(jt), to(jf)) } else { stmt(op, k) });
    }
    prog
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(super) fn no_sockets() -> BpfProgram {
    Vec::new()
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(super) fn inet_only() -> BpfProgram {
    Vec::new()
}

/// A jump distance; the filter has a handful of instructions, so it always fits.
fn offset(n: usize) -> u8 {
    debug_assert!(n <= usize::from(u8::MAX), "a seccomp filter jump of {n} does not fit a byte");
    u8::try_from(n).unwrap_or(u8::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the filter over one `seccomp_data` (nr, arch, the first two arguments' low words) the way the kernel
    /// does, for the few opcodes it uses.
    fn verdict_of(prog: &[sock_filter], nr: u32, arch: u32, args: [u32; 2]) -> u32 {
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let i = &prog[pc];
            match i.code {
                LD_W_ABS => {
                    acc = match i.k {
                        NR => nr,
                        ARCH => arch,
                        ARG0_LOW => args[0],
                        ARG1_LOW => args[1],
                        other => panic!("unexpected offset {other}"),
                    }
                }
                ALU_AND_K => acc &= i.k,
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

    fn verdict(prog: &[sock_filter], nr: u32, arch: u32) -> u32 {
        verdict_of(prog, nr, arch, [0, 0])
    }

    fn verdict_with(prog: &[sock_filter], nr: u32, arch: u32, arg0: u32) -> u32 {
        verdict_of(prog, nr, arch, [arg0, 0])
    }

    /// `socketpair(AF_UNIX, ty, 0)` under `prog`.
    fn pair(prog: &[sock_filter], ty: i32) -> u32 {
        pair_of(prog, libc::AF_UNIX, ty)
    }

    fn pair_of(prog: &[sock_filter], family: i32, ty: i32) -> u32 {
        verdict_of(prog, libc::SYS_socketpair as u32, AUDIT_ARCH, [family as u32, ty as u32])
    }

    /// Both filters: stream and seqpacket pairs (with their flags) are made, datagram and raw pairs are not.
    fn check_pairs(prog: &[sock_filter]) {
        let deny = RET_ERRNO | libc::EACCES as u32;
        for ty in
            [libc::SOCK_STREAM, libc::SOCK_SEQPACKET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK]
        {
            assert_eq!(pair(prog, ty), RET_ALLOW, "type {ty:#x}");
        }
        for ty in [libc::SOCK_DGRAM, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, libc::SOCK_RAW, libc::SOCK_RDM, 0] {
            assert_eq!(pair(prog, ty), deny, "type {ty:#x}");
        }
        for family in [libc::AF_TIPC, libc::AF_INET, libc::AF_NETLINK, 0] {
            assert_eq!(pair_of(prog, family, libc::SOCK_STREAM), deny, "family {family}");
        }
        for nr in DENIED {
            assert_eq!(verdict(prog, nr as u32, AUDIT_ARCH), deny, "call {nr}");
        }
    }

    #[test]
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn sbx_3_filter_denies_sockets_datagram_pairs_and_foreign_calls_only() {
        let prog = no_sockets();
        let deny = RET_ERRNO | libc::EACCES as u32;
        assert_eq!(verdict(&prog, libc::SYS_socket as u32, AUDIT_ARCH), deny);
        assert_eq!(verdict(&prog, libc::SYS_io_uring_setup as u32, AUDIT_ARCH), deny);
        check_pairs(&prog);
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
        check_pairs(&prog);
        assert_eq!(verdict(&prog, libc::SYS_connect as u32, AUDIT_ARCH), RET_ALLOW);
        assert_eq!(verdict(&prog, socket, 3 | 0x4000_0000), RET_KILL_PROCESS);
        if cfg!(target_arch = "x86_64") {
            assert_eq!(verdict_with(&prog, 0x4000_0000 | socket, AUDIT_ARCH, libc::AF_INET as u32), deny);
        }
    }
}
