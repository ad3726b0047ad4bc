//! A profile checked against the running kernel (SBX-6), ready to arm children.

use super::CallGroup;
#[cfg(target_os = "linux")]
use super::cgroup::Cgroups;
#[cfg(target_os = "linux")]
use super::netns::Loopback;
use super::{Narrowing, Sandbox};
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

/// The namespace of a command tagged `ai:net=loopback` under a wider profile: made on first use, or why not.
#[cfg(target_os = "linux")]
#[derive(Debug, Default)]
enum Tagged {
    #[default]
    Untried,
    Made(Arc<Loopback>),
    Failed(std::time::Instant, String),
}

/// How long a failure to make a tag's namespace is reported without trying again.
#[cfg(target_os = "linux")]
const RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(10);

/// Which ruleset a child gets.
#[cfg(target_os = "linux")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// The profile's `fs` rules.
    Full,
    /// The profile's, writable paths readable only.
    ReadOnly,
    /// No `fs` profile, a read-only tag: nothing writable but `/dev/null`.
    WritesOnly,
    /// No `fs` profile: the domain alone (no device nodes, no reach into processes outside it).
    Minimal,
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
    /// The ABI the `fs` profile is enforced at, when it has rules and the kernel has Landlock.
    landlock: Option<landlock::ABI>,
    /// The kernel's ABI, for the read-only narrowing of a profile without `fs` rules.
    detected: Option<landlock::ABI>,
    /// The no-socket filter, when the kernel can install it.
    nosock: Option<Arc<seccompiler::BpfProgram>>,
    /// Whether `network: none` is enforced for every child.
    network_none: bool,
    /// The filter of `network: loopback` (INET sockets only), when the kernel can install it.
    inet: Option<Arc<seccompiler::BpfProgram>>,
    /// The namespace of `network: loopback`, when the profile asks for it and it could be made.
    loopback: Option<Arc<Loopback>>,
    /// The namespace of a command tagged `ai:net=loopback` under a wider profile, made on first use.
    tagged_loopback: Mutex<Tagged>,
    /// The per-call cgroups of `processes` and `memory`, where they can be made.
    cgroups: Option<Cgroups>,
    /// Whether a write path of the profile is beneath or above a cgroup mount, so its children could change their
    /// group's settings (and their groups are never reused).
    writes_cgroupfs: bool,
    limits: Arc<[(nix::sys::resource::Resource, u64, u64)]>,
    /// Whether the agent runs as root, so children drop their capabilities.
    root: bool,
    /// The operator's paths, opened once, here.
    opened: Vec<rules::Opened>,
    cache: Mutex<Vec<(PathBuf, Form, landlock::RulesetCreated)>>,
    /// Whether children start through the confinement step (SBX-9) rather than the post-fork hook.
    #[cfg(fisk_confine)]
    step: bool,
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
    /// [`ErrorKind::Config`](crate::ErrorKind::Config), naming the setting: a listed path that cannot be opened,
    /// and, unless `best_effort`, any setting the kernel cannot enforce (with the missing feature: Landlock absent
    /// or below the required ABI, no seccomp filters, no network namespace for `network: loopback`,
    /// `limits.processes` as root).
    pub fn new(profile: Sandbox) -> Result<Confinement> {
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
        let abi = kernel::landlock_abi();
        let mut unenforced = Vec::new();
        let mut gap = |setting: &str, why: String| unenforced.push(Unenforced { setting: setting.into(), why });
        if let Some(required) = profile.required_abi()
            && abi < required
        {
            let setting = if profile.landlock_abi.is_some() { "landlock_abi" } else { "fs" };
            gap(setting, format!("it needs Landlock ABI {required}, and this kernel's is {abi}"));
        }
        let network_none = profile.network == Network::None;
        let seccomp = filter::SUPPORTED && kernel::seccomp_filters();
        if network_none && !seccomp {
            gap("network", "`none` needs seccomp filters (CONFIG_SECCOMP_FILTER) on x86-64 or aarch64".into());
        }
        // Landlock too: its domain keeps a child from tracing (and taking sockets from) processes outside it, which
        // as root, with no user namespace between them, nothing else would.
        let loopback = (profile.network == Network::Loopback)
            .then(|| match (seccomp, abi > 0) {
                (true, true) => {
                    loopback().map(Arc::new).map_err(|why| format!("`loopback` needs a network namespace: {why}"))
                }
                (false, _) => {
                    Err("`loopback` needs seccomp filters (CONFIG_SECCOMP_FILTER) on x86-64 or aarch64".into())
                }
                (_, false) => Err("`loopback` needs Landlock (Linux 5.13+), whose domain keeps children apart".into()),
            })
            .and_then(|made| made.map_err(|why| gap("network", why)).ok());
        let l = profile.limits;
        let cgroups = (l.processes.is_some() || l.memory.is_some()).then(|| Cgroups::new(l.processes, l.memory));
        if l.processes.is_some() && kernel::is_root() && !matches!(&cgroups, Some(Ok(c)) if c.has_pids()) {
            let why = cgroups.as_ref().and_then(|c| c.as_ref().err()).cloned().unwrap_or_default();
            gap(
                "limits.processes",
                format!(
                    "this agent runs as root, where RLIMIT_NPROC does not bind, and a per-call cgroup cannot be made ({why})"
                ),
            );
        }
        let cgroups = cgroups.and_then(std::result::Result::ok);
        if !profile.best_effort
            && let Some(first) = unenforced.first()
        {
            return Err(refuse(&first.setting, &first.why));
        }
        let opened = rules::open(&profile).map_err(|(key, why)| refuse(key, why))?;
        let detected = (abi > 0).then(|| kernel::abi(abi));
        let landlock = detected.filter(|_| profile.has_fs());
        let nosock = seccomp.then(|| Arc::new(filter::no_sockets()));
        let armed = Armed {
            landlock,
            detected,
            network_none: network_none && nosock.is_some(),
            nosock,
            inet: seccomp.then(|| Arc::new(filter::inet_only())),
            // A user namespace gives its members every capability there: they are dropped as root's are.
            root: kernel::is_root(),
            loopback,
            tagged_loopback: Mutex::default(),
            limits: limits(&profile, &unenforced, cgroups.as_ref())?.into(),
            writes_cgroupfs: cgroups.is_some() && writes_cgroupfs(&profile),
            cgroups,
            opened,
            cache: Mutex::default(),
            #[cfg(fisk_confine)]
            step: super::step::path().is_some(),
        };
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

    /// Which limits a per-call cgroup enforces, as their setting names (`processes`, `memory`); the others are
    /// rlimits.
    pub fn cgroup_limits(&self) -> Vec<&'static str> {
        #[cfg(target_os = "linux")]
        if let Some(c) = &self.armed.cgroups {
            return [("processes", c.has_pids()), ("memory", c.has_memory())]
                .into_iter()
                .filter_map(|(name, on)| on.then_some(name))
                .collect();
        }
        Vec::new()
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

    /// Arm `cmd`, which will run `program`, so its child confines itself before `exec`, narrowed by `narrowing`.
    ///
    /// # Errors
    ///
    /// A tag's narrowing the kernel cannot enforce (it fails the call, never runs it wider), or a ruleset that
    /// cannot be built (a path gone since the build).
    pub(crate) fn arm(
        &self,
        cmd: &mut std::process::Command,
        program: &Path,
        narrowing: Narrowing,
    ) -> std::io::Result<Option<CallGroup>> {
        #[cfg(target_os = "linux")]
        {
            let (armed, group) = self.armed(program, narrowing)?;
            child::arm(cmd, armed);
            Ok(group)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (cmd, program);
            if narrowing.tagged {
                return Err(std::io::Error::other("the command's confinement tags need Linux"));
            }
            Ok(None)
        }
    }

    /// Whether children are started through the confinement step (SBX-9): it was built, this system executes it,
    /// and [`with_post_fork_hook`](Self::with_post_fork_hook) was not asked for. Otherwise a post-fork hook
    /// confines them, which enforces the same at a higher cost per spawn.
    pub fn spawns_through_step(&self) -> bool {
        #[cfg(all(target_os = "linux", fisk_confine))]
        {
            self.armed.step
        }
        #[cfg(not(all(target_os = "linux", fisk_confine)))]
        {
            false
        }
    }

    /// Confine children through the post-fork hook even where the confinement step could start them: both
    /// enforce the same, and this is the slower one (`benches/sandbox.rs` compares them).
    #[must_use]
    pub fn with_post_fork_hook(mut self) -> Self {
        #[cfg(all(target_os = "linux", fisk_confine))]
        {
            self.armed.step = false;
        }
        self
    }

    /// Arm `cmd`, which runs the confinement step with `program` as its first argument (SBX-9): the prepared
    /// rules go to the child through its stdin, and the returned launch reports whether it executed `program`.
    ///
    /// # Errors
    ///
    /// As [`arm`](Self::arm), and a socket that cannot be made.
    #[cfg(all(target_os = "linux", fisk_confine))]
    pub(crate) fn arm_step(
        &self,
        cmd: &mut std::process::Command,
        program: &Path,
        narrowing: Narrowing,
    ) -> std::io::Result<(Option<CallGroup>, super::step::Launch)> {
        let (armed, group) = self.armed(program, narrowing)?;
        let (stdin, launch) = super::step::prepare(armed)?;
        cmd.stdin(stdin);
        Ok((group, launch))
    }

    /// What one child of `program` installs, narrowed by `narrowing`, and its call's cgroups.
    #[cfg(target_os = "linux")]
    fn armed(&self, program: &Path, narrowing: Narrowing) -> std::io::Result<(child::Armed, Option<CallGroup>)> {
        let unsupported = |what: &str| std::io::Error::other(format!("{what}, which this kernel lacks"));
        let tagged_read_only = narrowing.read_only && narrowing.tagged;
        let form = match (self.armed.landlock, self.armed.detected) {
            (Some(abi), _) => Some((if narrowing.read_only { Form::ReadOnly } else { Form::Full }, abi)),
            // Truncation is controlled from ABI 3: below it a read-only tag could not stop `O_TRUNC`.
            (None, Some(abi)) if tagged_read_only && abi >= landlock::ABI::V3 => Some((Form::WritesOnly, abi)),
            (None, _) if tagged_read_only => {
                return Err(unsupported("the command's tag ai:sandbox=readonly needs Landlock ABI 3"));
            }
            (None, Some(abi)) => Some((Form::Minimal, abi)),
            (None, None) => None,
        };
        let ruleset = form.map(|(form, abi)| self.ruleset(program, form, abi)).transpose()?;
        // The narrower of the profile's network and the command's tag.
        let none = self.armed.network_none || narrowing.no_network;
        let loopback = match (&self.armed.loopback, narrowing.loopback) {
            _ if none => None,
            (Some(l), _) => Some(Arc::clone(l)),
            (None, true) => Some(self.tagged_loopback()?),
            (None, false) => None,
        };
        let filter = match (none, &loopback, &self.armed.nosock, &self.armed.inet) {
            (true, _, Some(f), _) | (false, Some(_), _, Some(f)) => Some(Arc::clone(f)),
            (true, _, None, _) | (false, Some(_), _, None) => {
                return Err(unsupported("the command's tag ai:net needs seccomp filters"));
            }
            (false, None, _, _) => None,
        };
        // Groups are reused only where no child of this confinement can write to cgroupfs (SBX-4): with `fs` rules
        // (every child gets them, or their read-only form) that grant no write there. Decided for the confinement,
        // not the call: a child that could write reaches a sibling's group by path as easily as its own.
        let poolable = self.armed.landlock.is_some() && !self.armed.writes_cgroupfs;
        let mut group = self.armed.cgroups.as_ref().map(|c| c.call(poolable)).transpose()?;
        let cgroups = group.as_mut().map(CallGroup::take_procs).unwrap_or_default();
        // A profile with everything unenforced still sets no_new_privs: it costs the spawn nothing.
        let drop_capabilities = self.armed.root || loopback.as_ref().is_some_and(|l| l.user().is_some());
        let limits = Arc::clone(&self.armed.limits);
        Ok((child::Armed { limits, ruleset, filter, cgroups, drop_capabilities, loopback }, group))
    }

    /// The namespace of a command tagged `ai:net=loopback` under a profile wider than that, made once.
    #[cfg(target_os = "linux")]
    ///
    /// A failure is kept for [`RETRY_AFTER`], then tried again (the cause may pass, as a namespace limit reached);
    /// the lock is not held while the namespace is made.
    fn tagged_loopback(&self) -> std::io::Result<Arc<Loopback>> {
        let fail = |why: &str| std::io::Error::other(format!("the command's tag ai:net=loopback needs {why}"));
        if self.armed.detected.is_none() {
            return Err(fail("Landlock (Linux 5.13+), whose domain keeps children apart"));
        }
        let lock = || self.armed.tagged_loopback.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match &*lock() {
            Tagged::Made(l) => return Ok(Arc::clone(l)),
            Tagged::Failed(at, why) if at.elapsed() < RETRY_AFTER => return Err(fail(why)),
            _ => {}
        }
        let made = loopback().map(Arc::new).map_err(|why| format!("a network namespace: {why}"));
        let mut state = lock();
        match (made, &*state) {
            // Another call made one meanwhile: that one is kept.
            (_, Tagged::Made(l)) => Ok(Arc::clone(l)),
            (Ok(l), _) => {
                *state = Tagged::Made(Arc::clone(&l));
                Ok(l)
            }
            (Err(why), _) => {
                *state = Tagged::Failed(std::time::Instant::now(), why.clone());
                Err(fail(&why))
            }
        }
    }

    /// This child's copy of `program`'s ruleset, built on first use.
    #[cfg(target_os = "linux")]
    fn ruleset(&self, program: &Path, form: Form, abi: landlock::ABI) -> std::io::Result<landlock::RulesetCreated> {
        // The forms without an `fs` profile do not depend on the program.
        let key = if matches!(form, Form::Full | Form::ReadOnly) { program } else { Path::new("") };
        let mut cache = self.armed.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, _, rs)) = cache.iter().find(|(p, f, _)| p == key && *f == form) {
            return rs.try_clone();
        }
        let opened = &self.armed.opened;
        let built = match form {
            Form::Full => rules::ruleset(opened, false, program, abi),
            Form::ReadOnly => rules::ruleset(opened, true, program, abi),
            Form::WritesOnly => rules::writes_only(abi),
            Form::Minimal => rules::minimal(abi),
        };
        let built = built.map_err(std::io::Error::other)?;
        let copy = built.try_clone()?;
        if cache.len() == CACHED {
            cache.remove(0);
        }
        cache.push((key.to_path_buf(), form, built));
        Ok(copy)
    }
}

/// The limits as `(resource, soft, hard)`, each capped at this process's own hard limit (which a child could not
/// exceed anyway, and which an unprivileged child could not be given).
#[cfg(target_os = "linux")]
fn limits(
    profile: &Sandbox,
    unenforced: &[Unenforced],
    cgroups: Option<&Cgroups>,
) -> Result<Vec<(nix::sys::resource::Resource, u64, u64)>> {
    use nix::sys::resource::{Resource, getrlimit};
    let l = profile.limits;
    // What a cgroup enforces needs no rlimit (and the address space is a poorer measure of memory).
    let (pids, memory) = cgroups.map_or((false, false), |c| (c.has_pids(), c.has_memory()));
    let wanted = [
        ("limits.memory", Resource::RLIMIT_AS, l.memory.filter(|_| !memory), 0),
        // SIGXCPU at the limit, SIGKILL a second later for a child that ignores it.
        ("limits.cpu", Resource::RLIMIT_CPU, l.cpu, 1),
        ("limits.files", Resource::RLIMIT_NOFILE, l.files, 0),
        ("limits.processes", Resource::RLIMIT_NPROC, l.processes.filter(|_| !pids), 0),
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

/// Whether a write path of `profile` is beneath or above a cgroup mount (a path that cannot be resolved counts as
/// one that is).
#[cfg(target_os = "linux")]
fn writes_cgroupfs(profile: &Sandbox) -> bool {
    let mounts = super::cgroup::mounts();
    profile.write_paths().iter().any(|p| {
        std::fs::canonicalize(p).map_or(true, |p| mounts.iter().any(|m| p.starts_with(m) || m.starts_with(&p)))
    })
}

/// The loopback-only network namespace: as root, owned by this process's user namespace; otherwise (or when root
/// lacks `CAP_SYS_ADMIN`, as in a container) inside a user namespace of its own.
#[cfg(target_os = "linux")]
fn loopback() -> std::result::Result<Loopback, String> {
    if kernel::is_root() {
        match Loopback::new(false) {
            Ok(made) => return Ok(made),
            Err(as_root) => {
                return Loopback::new(true).map_err(|own| format!("{as_root}; in a user namespace of its own: {own}"));
            }
        }
    }
    Loopback::new(true)
        .map_err(|e| format!("{e} (an agent that is not root needs unprivileged user namespaces for it)"))
}
