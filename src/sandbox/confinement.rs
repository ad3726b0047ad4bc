//! A profile checked against the running kernel (SBX-6), ready to arm children.

use super::Sandbox;
#[cfg(target_os = "linux")]
use super::{Network, child, filter, kernel, rules};
use crate::error::{Error, Result};
use std::fmt;
use std::path::{Path, PathBuf};
#[cfg(target_os = "linux")]
use std::sync::{Arc, Mutex};

/// A setting the kernel cannot enforce, kept under `best_effort` (SBX-6).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Unenforced {
    /// The setting, as its configuration key under `harness.sandbox` (`fs`, `network`, `limits.processes`, ...).
    pub setting: String,
    /// The missing kernel feature or privilege.
    pub why: String,
}

impl fmt::Display for Unenforced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "harness.sandbox.{} is not enforced: {}", self.setting, self.why)
    }
}

/// A path the confinement adds for a program on its own (SBX-1), as `info` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Automatic {
    /// The path.
    pub path: PathBuf,
    /// `read`, `write` or `exec`.
    pub grant: &'static str,
    /// Why it is added (`the application`, `its interpreter`, `shared libraries`, ...).
    pub why: &'static str,
}

/// Rulesets kept per program and form, so a spawn only duplicates a descriptor; bounded, oldest out.
#[cfg(target_os = "linux")]
const CACHED: usize = 32;

/// A [`Sandbox`] checked against the running kernel, ready to confine children (SBX-6).
///
/// Built once, when the harness is built; [`ChildEnv::with_confinement`](crate::exec::ChildEnv::with_confinement)
/// hands it to every child.
///
/// ```no_run
/// use fisk_ai::sandbox::{Confinement, Network, Sandbox};
///
/// let confinement = Confinement::new(Sandbox::new().read("/etc/ssl").network(Network::None))?;
/// for part in confinement.unenforced() {
///     eprintln!("warning: {part}");
/// }
/// # Ok::<(), fisk_ai::Error>(())
/// ```
pub struct Confinement {
    profile: Sandbox,
    abi: u8,
    unenforced: Vec<Unenforced>,
    #[cfg(target_os = "linux")]
    armed: Armed,
}

#[cfg(target_os = "linux")]
struct Armed {
    landlock: Option<landlock::ABI>,
    filter: Option<Arc<seccompiler::BpfProgram>>,
    limits: Arc<[(nix::sys::resource::Resource, u64, u64)]>,
    cache: Mutex<Vec<(PathBuf, bool, landlock::RulesetCreated)>>,
}

impl fmt::Debug for Confinement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Confinement")
            .field("profile", &self.profile)
            .field("landlock_abi", &self.abi)
            .field("unenforced", &self.unenforced)
            .finish_non_exhaustive()
    }
}

fn refuse(setting: &str, why: impl fmt::Display) -> Error {
    Error::config_key(format!("harness.sandbox.{setting}"), format!("harness.sandbox.{setting}: {why}"))
}

impl Confinement {
    /// Check `profile` against the running kernel.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Config`](crate::ErrorKind::Config), naming the setting: `network: loopback` (not built yet), a
    /// listed path that cannot be opened, and, unless `best_effort`, any setting the kernel cannot enforce (with
    /// the missing feature: Landlock absent or below the required ABI, no seccomp filters, `limits.processes` as
    /// root).
    pub fn new(profile: Sandbox) -> Result<Confinement> {
        if profile.network == super::Network::Loopback {
            return Err(refuse(
                "network",
                "`loopback` is not built yet (a seccomp filter cannot read connect targets); use `none` or `any`",
            ));
        }
        Self::check(profile)
    }

    #[cfg(not(target_os = "linux"))]
    fn check(profile: Sandbox) -> Result<Confinement> {
        let unenforced: Vec<Unenforced> = profile
            .is_enabled()
            .then(|| Unenforced { setting: "fs".into(), why: "confinement needs Linux".into() })
            .into_iter()
            .collect();
        if let (Some(first), false) = (unenforced.first(), profile.best_effort) {
            return Err(refuse(&first.setting, &first.why));
        }
        Ok(Confinement { profile, abi: 0, unenforced })
    }

    #[cfg(target_os = "linux")]
    fn check(profile: Sandbox) -> Result<Confinement> {
        let abi = if profile.has_fs() || profile.landlock_abi.is_some() { kernel::landlock_abi() } else { 0 };
        let mut unenforced = Vec::new();
        let mut gap = |setting: &str, why: String| unenforced.push(Unenforced { setting: setting.into(), why });
        if let Some(required) = profile.required_abi()
            && abi < required
        {
            let setting = if profile.landlock_abi.is_some() { "landlock_abi" } else { "fs" };
            gap(setting, format!("it needs Landlock ABI {required}, and this kernel's is {abi}"));
        }
        let network_none = profile.network == Network::None;
        if network_none && !(filter::SUPPORTED && kernel::seccomp_filters()) {
            gap("network", "`none` needs seccomp filters (CONFIG_SECCOMP_FILTER) on x86-64 or aarch64".into());
        }
        if profile.limits.processes.is_some() && kernel::is_root() {
            gap(
                "limits.processes",
                "this agent runs as root, where RLIMIT_NPROC does not bind, and per-call cgroups are not built yet"
                    .into(),
            );
        }
        if !profile.best_effort
            && let Some(first) = unenforced.first()
        {
            return Err(refuse(&first.setting, &first.why));
        }
        for (key, paths) in [("fs.read", &profile.read), ("fs.write", &profile.write), ("fs.exec", &profile.exec)] {
            for path in paths {
                landlock::PathFd::new(path).map_err(|e| refuse(key, format!("cannot open {}: {e}", path.display())))?;
            }
        }
        let landlock = (profile.has_fs() && abi > 0).then(|| kernel::abi(abi));
        let filter =
            (network_none && unenforced.iter().all(|u| u.setting != "network")).then(|| Arc::new(filter::no_sockets()));
        let armed = Armed { landlock, filter, limits: limits(&profile, &unenforced)?.into(), cache: Mutex::default() };
        Ok(Confinement { profile, abi, unenforced, armed })
    }

    /// The profile.
    pub fn profile(&self) -> &Sandbox {
        &self.profile
    }

    /// The running kernel's Landlock ABI (0 without Landlock, or when no setting needed it).
    pub fn landlock_abi(&self) -> u8 {
        self.abi
    }

    /// The settings left unenforced under `best_effort`; empty otherwise.
    pub fn unenforced(&self) -> &[Unenforced] {
        &self.unenforced
    }

    /// The paths added for `program` on its own (empty without `fs` rules).
    pub fn automatic(&self, program: &Path) -> Vec<Automatic> {
        #[cfg(target_os = "linux")]
        if self.armed.landlock.is_some() {
            return rules::automatic(program)
                .into_iter()
                .map(|(path, grant, why)| Automatic { path, grant: grant.as_str(), why })
                .collect();
        }
        let _ = program;
        Vec::new()
    }

    /// What a child ended by `signal` ran into, as a line for its tool result: the limit whose signal it is (`cpu`
    /// sends SIGXCPU, then SIGKILL; `file_size` SIGXFSZ), or, for a crash under a `memory` limit, that limit.
    pub fn explain_signal(&self, signal: i32) -> Option<String> {
        use nix::sys::signal::Signal;
        let l = self.profile.limits;
        let sig = Signal::try_from(signal).ok()?;
        let why = match (sig, l.cpu, l.file_size, l.memory) {
            (Signal::SIGXCPU, Some(cpu), _, _) => format!("it was stopped at its CPU limit ({cpu}s, limits.cpu)"),
            (Signal::SIGKILL, Some(cpu), _, _) => {
                format!("it was killed; past its CPU limit ({cpu}s, limits.cpu) a process that goes on is killed")
            }
            (Signal::SIGXFSZ, _, Some(size), _) => {
                format!("it was stopped at its file size limit ({size} bytes, limits.file_size)")
            }
            (Signal::SIGSEGV | Signal::SIGABRT | Signal::SIGBUS, _, _, Some(memory)) => {
                format!("it died of {sig}; its address space is limited to {memory} bytes (limits.memory)")
            }
            _ => return None,
        };
        Some(format!("\n[sandbox: {why}]\n"))
    }

    /// Arm `cmd`, which will run `program`, so its child confines itself before `exec`; `read_only` uses the
    /// read-only form of the profile (introspection's).
    pub(crate) fn arm(&self, cmd: &mut std::process::Command, program: &Path, read_only: bool) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            let ruleset = match self.armed.landlock {
                Some(abi) => Some(self.ruleset(program, read_only, abi)?),
                None => None,
            };
            let armed =
                child::Armed { limits: Arc::clone(&self.armed.limits), ruleset, filter: self.armed.filter.clone() };
            // An empty profile (everything unenforced) still sets no_new_privs: it costs the spawn path nothing.
            child::arm(cmd, armed);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (cmd, program, read_only);
        Ok(())
    }

    /// This child's copy of `program`'s ruleset, built on first use.
    #[cfg(target_os = "linux")]
    fn ruleset(
        &self,
        program: &Path,
        read_only: bool,
        abi: landlock::ABI,
    ) -> std::io::Result<landlock::RulesetCreated> {
        let mut cache = self.armed.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, _, rs)) = cache.iter().find(|(p, ro, _)| p == program && *ro == read_only) {
            return rs.try_clone();
        }
        let profile = if read_only { self.profile.read_only() } else { self.profile.clone() };
        let built = rules::ruleset(&profile, program, abi).map_err(std::io::Error::other)?;
        let copy = built.try_clone()?;
        if cache.len() == CACHED {
            cache.remove(0);
        }
        cache.push((program.to_path_buf(), read_only, built));
        Ok(copy)
    }
}

/// The limits as `(resource, soft, hard)`, each capped at this process's own hard limit (which a child could not
/// exceed anyway, and which an unprivileged child could not be given).
#[cfg(target_os = "linux")]
fn limits(profile: &Sandbox, unenforced: &[Unenforced]) -> Result<Vec<(nix::sys::resource::Resource, u64, u64)>> {
    use nix::sys::resource::{Resource, getrlimit};
    let l = profile.limits;
    let wanted = [
        ("limits.memory", Resource::RLIMIT_AS, l.memory, 0),
        // SIGXCPU at the limit, SIGKILL a second later for a child that ignores it.
        ("limits.cpu", Resource::RLIMIT_CPU, l.cpu, 1),
        ("limits.files", Resource::RLIMIT_NOFILE, l.files, 0),
        ("limits.processes", Resource::RLIMIT_NPROC, l.processes, 0),
        ("limits.file_size", Resource::RLIMIT_FSIZE, l.file_size, 0),
    ];
    let mut out = Vec::new();
    for (key, resource, value, grace) in wanted {
        let Some(value) = value else { continue };
        if unenforced.iter().any(|u| u.setting == key) {
            continue;
        }
        if value == 0 {
            return Err(refuse(key, "must be at least 1"));
        }
        let (_, hard) = getrlimit(resource).map_err(|e| refuse(key, format!("cannot read the current limit: {e}")))?;
        let soft = value.min(hard);
        out.push((resource, soft, soft.saturating_add(grace).min(hard)));
    }
    Ok(out)
}
