//! The Landlock ruleset of a profile for one program (SBX-1): the operator's paths plus the automatic ones.

use super::{Sandbox, elf};
use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, Scope,
};
use std::path::{Path, PathBuf};

/// What a path is opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grant {
    /// Read files, list directories.
    Read,
    /// Read, and write, create, remove and truncate.
    Write,
    /// Read, and execute.
    Exec,
}

impl Grant {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Grant::Read => "read",
            Grant::Write => "write",
            Grant::Exec => "exec",
        }
    }

    fn access(self, abi: ABI) -> BitFlags<AccessFs> {
        let read = AccessFs::ReadFile | AccessFs::ReadDir;
        match self {
            Grant::Read => read,
            Grant::Write => read | AccessFs::from_write(abi),
            Grant::Exec => read | AccessFs::Execute,
        }
    }
}

/// Directories the dynamic loader reads shared libraries from, where they exist.
const LIBRARY_DIRS: &[&str] = &["/lib", "/lib64", "/lib32", "/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/local/lib"];

/// The file `program` names: as given when it holds a `/`, else the first match on this process's `PATH` (as
/// the standard library finds it when the child's `PATH` is this one's).
pub(crate) fn resolve(program: &Path) -> PathBuf {
    if program.as_os_str().as_encoded_bytes().contains(&b'/') {
        return program.to_path_buf();
    }
    std::env::var_os("PATH")
        .and_then(|path| std::env::split_paths(&path).map(|d| d.join(program)).find(|p| p.is_file()))
        .unwrap_or_else(|| program.to_path_buf())
}

/// The paths added for `program`, with why: the program, its interpreter, the loader's files, `/dev/null`.
pub(crate) fn automatic(program: &Path) -> Vec<(PathBuf, Grant, &'static str)> {
    let program = resolve(program);
    let mut paths = vec![(program.clone(), Grant::Exec, "the application")];
    // A script's interpreter is an ELF binary with a loader of its own; the kernel executes each in turn. Four
    // levels cover any real chain, and a loop of scripts cannot hold this up.
    let mut current = program;
    for _ in 0..4 {
        let Some(interp) = elf::interpreter(&current) else { break };
        if paths.iter().any(|(p, _, _)| *p == interp) {
            break;
        }
        paths.push((interp.clone(), Grant::Exec, "its interpreter"));
        current = interp;
    }
    for dir in LIBRARY_DIRS.iter().map(Path::new).filter(|d| d.exists()) {
        paths.push((dir.to_path_buf(), Grant::Read, "shared libraries"));
    }
    if Path::new("/etc/ld.so.cache").exists() {
        paths.push(("/etc/ld.so.cache".into(), Grant::Read, "the loader's cache"));
    }
    paths.push(("/dev/null".into(), Grant::Write, "the null device"));
    paths
}

/// The ruleset of a tag's read-only narrowing without an `fs` profile: the write rights of `abi` handled, and
/// granted on `/dev/null` only, so reads and executions stay as they are and nothing can be written.
pub(crate) fn writes_only(abi: ABI) -> Result<RulesetCreated, String> {
    let handled = AccessFs::from_write(abi);
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(handled)
        .and_then(|r| r.create())
        .map_err(|e| format!("Landlock could not create a ruleset: {e}"))?;
    let fd = PathFd::new("/dev/null").map_err(|e| format!("cannot open /dev/null: {e}"))?;
    created
        .add_rule(PathBeneath::new(fd, (AccessFs::WriteFile | AccessFs::Truncate) & handled))
        .map_err(|e| format!("Landlock refused the rule for /dev/null: {e}"))
}

/// The ruleset for `program` under `profile` at `abi` (the detected one), every right of that ABI handled, as a
/// hard requirement: `Err` names the path that cannot be opened or the right the kernel refused.
pub(crate) fn ruleset(profile: &Sandbox, program: &Path, abi: ABI) -> Result<RulesetCreated, String> {
    let handled = AccessFs::from_all(abi);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(handled)
        .map_err(|e| format!("Landlock refused the file-system rights: {e}"))?;
    // A confined tool cannot signal processes outside its own domain (the agent among them): ABI 6.
    if Scope::from_all(abi).contains(Scope::Signal) {
        ruleset = ruleset.scope(Scope::Signal).map_err(|e| format!("Landlock refused the signal scope: {e}"))?;
    }
    let mut created = ruleset.create().map_err(|e| format!("Landlock could not create a ruleset: {e}"))?;
    let listed = [
        (profile.read_paths(), Grant::Read),
        (profile.write_paths(), Grant::Write),
        (profile.exec_paths(), Grant::Exec),
    ];
    let operator = listed.iter().flat_map(|(paths, grant)| paths.iter().map(move |p| (p.clone(), *grant)));
    let automatic = automatic(program).into_iter().map(|(p, g, _)| (p, g));
    for (path, grant) in operator.chain(automatic) {
        let fd = PathFd::new(&path)
            .map_err(|e| format!("cannot open {} to grant {}: {e}", path.display(), grant.as_str()))?;
        let mut access = grant.access(abi) & handled;
        if !std::fs::metadata(&path).map(|m| m.is_dir()).unwrap_or(false) {
            access &= AccessFs::from_file(abi);
        }
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| format!("Landlock refused the rule for {}: {e}", path.display()))?;
    }
    Ok(created)
}
