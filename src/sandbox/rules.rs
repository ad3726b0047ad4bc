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
            // Never device nodes: a block device made in a writable directory would read the raw disk.
            Grant::Write => read | (AccessFs::from_write(abi) & !(AccessFs::MakeBlock | AccessFs::MakeChar)),
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

/// An operator path, opened once when the confinement is built (`O_PATH`): a rule built later from the
/// descriptor covers what the path named then, whatever a child has since put in its place.
#[derive(Debug)]
pub(crate) struct Opened {
    fd: PathFd,
    grant: Grant,
    dir: bool,
}

/// Opens the profile's paths; `Err` names the key and the path.
pub(crate) fn open(profile: &Sandbox) -> Result<Vec<Opened>, (&'static str, String)> {
    let listed = [
        ("fs.read", profile.read_paths(), Grant::Read),
        ("fs.write", profile.write_paths(), Grant::Write),
        ("fs.exec", profile.exec_paths(), Grant::Exec),
    ];
    let mut opened = Vec::new();
    for (key, paths, grant) in listed {
        for path in paths {
            let fd = PathFd::new(path).map_err(|e| (key, format!("cannot open {}: {e}", path.display())))?;
            let dir = std::fs::metadata(path).map(|m| m.is_dir()).unwrap_or(false);
            opened.push(Opened { fd, grant, dir });
        }
    }
    Ok(opened)
}

fn created(handled: BitFlags<AccessFs>, abi: ABI) -> Result<RulesetCreated, String> {
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(handled)
        .map_err(|e| format!("Landlock refused the file-system rights: {e}"))?;
    // A confined tool cannot signal processes outside its own domain (the agent among them): ABI 6.
    if Scope::from_all(abi).contains(Scope::Signal) {
        ruleset = ruleset.scope(Scope::Signal).map_err(|e| format!("Landlock refused the signal scope: {e}"))?;
    }
    ruleset.create().map_err(|e| format!("Landlock could not create a ruleset: {e}"))
}

/// The domain every confined child gets when the profile has no `fs` rules: no device node may be made, and,
/// being a Landlock domain, the child may not trace or read the memory and `/proc` files (the environment, with
/// the agent's credentials) of processes outside it, the agent among them.
pub(crate) fn minimal(abi: ABI) -> Result<RulesetCreated, String> {
    created(AccessFs::MakeBlock | AccessFs::MakeChar, abi)
}

/// The ruleset for `program` under the `opened` operator paths at `abi` (the detected one), every right of that
/// ABI handled, as a hard requirement; with `read_only`, writable paths are readable only. `Err` names the path
/// that cannot be opened or the right the kernel refused.
pub(crate) fn ruleset(opened: &[Opened], read_only: bool, program: &Path, abi: ABI) -> Result<RulesetCreated, String> {
    let handled = AccessFs::from_all(abi);
    let mut created = created(handled, abi)?;
    let file_rights = AccessFs::from_file(abi);
    for o in opened {
        let grant = if read_only && o.grant == Grant::Write { Grant::Read } else { o.grant };
        let access = grant.access(abi) & handled & if o.dir { handled } else { file_rights };
        created = created
            .add_rule(PathBeneath::new(&o.fd, access))
            .map_err(|e| format!("Landlock refused a rule of the profile: {e}"))?;
    }
    for (path, grant, _) in automatic(program) {
        let fd = PathFd::new(&path)
            .map_err(|e| format!("cannot open {} to grant {}: {e}", path.display(), grant.as_str()))?;
        let mut access = grant.access(abi) & handled;
        if !std::fs::metadata(&path).map(|m| m.is_dir()).unwrap_or(false) {
            access &= file_rights;
        }
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| format!("Landlock refused the rule for {}: {e}", path.display()))?;
    }
    Ok(created)
}
