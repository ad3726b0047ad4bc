//! What the running kernel can enforce, detected rather than assumed (SBX-6).

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, RestrictSelfAttr, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope,
};

/// The ABIs this crate probes, newest first, with their numbers.
const PROBED: [(u8, ABI); 9] = [
    (9, ABI::V9),
    (8, ABI::V8),
    (7, ABI::V7),
    (6, ABI::V6),
    (5, ABI::V5),
    (4, ABI::V4),
    (3, ABI::V3),
    (2, ABI::V2),
    (1, ABI::V1),
];

/// The Landlock ABI of the running kernel (0 when Landlock is absent or disabled), capped at the newest this crate
/// knows. The landlock crate keeps the version query private, so each ABI is probed, newest first, by asking for
/// what it added as a hard requirement: its access rights and scopes, and for ABIs 7 and 8 (which added only
/// restriction flags) the flag.
pub(super) fn landlock_abi() -> u8 {
    PROBED.iter().find(|(_, abi)| supports(*abi)).map_or(0, |(n, _)| *n)
}

/// The ABI value for `n` (capped at the newest probed).
pub(super) fn abi(n: u8) -> ABI {
    PROBED.iter().find(|(m, _)| *m <= n).map_or(ABI::V1, |(_, abi)| *abi)
}

fn supports(abi: ABI) -> bool {
    let probe = || -> Result<bool, landlock::RulesetError> {
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(abi))?;
        if !AccessNet::from_all(abi).is_empty() {
            ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
        }
        if !Scope::from_all(abi).is_empty() {
            ruleset = ruleset.scope(Scope::from_all(abi))?;
        }
        let created = ruleset.create()?;
        Ok(match abi {
            ABI::V8 => created.all_threads(true).is_ok(),
            ABI::V7 => created.log_new_exec(true).is_ok(),
            _ => true,
        })
    };
    probe().unwrap_or(false)
}

/// Whether seccomp filters can be installed: the kernel reports a `Seccomp` mode for this process only when it is
/// built with `CONFIG_SECCOMP` (filters, `CONFIG_SECCOMP_FILTER`, come with it on every distribution kernel; a
/// kernel without them fails the child's install, which fails the call rather than running it unfiltered).
pub(super) fn seccomp_filters() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| s.lines().any(|l| l.starts_with("Seccomp:")))
}

/// Whether this process runs as root (effective uid 0), where `RLIMIT_NPROC` does not bind.
pub(super) fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}
