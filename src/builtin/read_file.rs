//! `read_file` (BUILTIN-5..13): read one text file confined to a root directory (DESIGN §6, invariant 7).
//!
//! Confinement is race-free rather than check-then-open. The requested path is normalized lexically (a `..` that
//! would climb above the root is refused), then resolved one component at a time from an open handle of the root:
//! every component is opened relative to the directory handle before it with `O_NOFOLLOW`, so the kernel never
//! follows a symlink or a `..` on our behalf. A symlink met on the way is read with `readlinkat`; an absolute
//! target is refused, a relative one is joined lexically to the link's directory (the physical path walked so far)
//! and refused if it climbs above the root. The final file is opened without following links and without
//! blocking, and every check that matters (regular file, size) is made on the open descriptor, so a path swapped
//! for a symlink, a FIFO or a larger file between any check and the open is still refused.

use super::{BuiltinEnv, BuiltinFactory, reject_unknown_options};
use crate::error::{Error, Result};
use crate::gate::{PROMPT_LIMIT, sanitize};
use crate::tool::{CallContext, Exposure, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use async_trait::async_trait;
use nix::errno::Errno;
use nix::fcntl::{AT_FDCWD, AtFlags, OFlag, openat, readlinkat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, fstatat};
use serde_json::{Map, Value, json};
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::sync::Arc;

const NAME: &str = "read_file";

/// The default (and the meaning of `0`) for `max_bytes`: 1 MiB (BUILTIN-7).
const DEFAULT_MAX_BYTES: u64 = 1_048_576;

/// The most symlinks one call follows (BUILTIN-9); a loop ends here.
const MAX_SYMLINKS: usize = 40;

/// The `read_file` factory (BUILTIN-5..13): read a UTF-8 text file under a root directory, never outside it.
///
/// Enable it under `harness.tools`; both options are optional:
///
/// ```yaml
/// harness:
///   tools:
///     - name: read_file
///       confirm: false         # true gates every call (BUILTIN-3)
///       options:
///         root: docs           # default: root_directory, else the working directory;
///                              # a relative root resolves under root_directory (else the working directory)
///         max_bytes: 262144    # default (and 0): 1048576; larger files are refused, never truncated
/// ```
///
/// The root must exist and be a directory when the tool is built; it is canonicalized then, so a root that is a
/// symlink confines reads to the directory it points to. The model passes `{"path": "..."}` relative to the root
/// (a leading `/` is ignored) and gets `{"path": "<normalized>", "size": <bytes>, "content": "<text>"}`. Refused,
/// each as an error result naming the path and the reason: a path that leaves the root through `..`; a symlink
/// with an absolute target or a relative target that leaves the root; more than 40 symlinks in one call; anything
/// but a regular file (directory, device, socket, FIFO); a file larger than `max_bytes`; a file that is not valid
/// UTF-8. A hard link inside the root is read even when the same file is also linked outside it: it is the same
/// inode, and whoever made the link put it inside.
///
/// ```
/// use fisk_ai::builtin::{BuiltinEnv, BuiltinRegistry};
/// use fisk_ai::operator::NoOperator;
/// use fisk_ai::Config;
/// use std::sync::Arc;
///
/// let dir = std::env::temp_dir();
/// let yaml = format!("harness:\n  tools:\n    - name: read_file\n      options: {{root: {:?}}}\n", dir);
/// let config = Config::from_yaml_str(&yaml)?;
/// let env = BuiltinEnv::new(&config, Arc::new(NoOperator))?;
/// let tools = BuiltinRegistry::with_defaults().build_enabled(&config, &env)?;
/// assert_eq!(tools[0].spec().name(), "read_file");
/// # Ok::<(), fisk_ai::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadFileFactory;

impl BuiltinFactory for ReadFileFactory {
    fn name(&self) -> &str {
        NAME
    }

    fn build(&self, options: &Map<String, Value>, env: &BuiltinEnv) -> Result<Arc<dyn Tool>> {
        reject_unknown_options(NAME, options, &["root", "max_bytes"])?;
        let max_bytes = max_bytes_option(options)?;
        let root = root_option(options, env)?;
        let schema = json!({
            "type": "object",
            "properties": {"path": {
                "type": "string",
                "description": "The file to read, relative to the root directory (a leading / is ignored), \
                                for example docs/intro.md"
            }},
            "required": ["path"],
            "additionalProperties": false
        });
        let description = format!(
            "Read one UTF-8 text file from the configured root directory. The path is relative to the root; reads \
             never leave it: a path climbing out with .., a symlink with an absolute target or one pointing \
             outside the root is refused. Only regular files are read (not directories, devices, sockets or \
             FIFOs). Files larger than {max_bytes} bytes are refused, never truncated; files that are not valid \
             UTF-8 are refused. Returns {{\"path\": \"<path relative to the root>\", \"size\": <bytes>, \
             \"content\": \"<text>\"}}."
        );
        let spec = ToolSpec::new(NAME, ToolKind::Builtin, schema)
            .with_exposure(Exposure::Servable)
            .with_output_schema(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The path relative to the root"},
                    "size": {"type": "integer", "minimum": 0, "description": "The file's size in bytes"},
                    "content": {"type": "string", "description": "The file's text"}
                },
                "required": ["path", "size", "content"],
                "additionalProperties": false
            }))
            .with_description(description);
        Ok(Arc::new(ReadFile { spec, jail: Arc::new(Jail { root, max_bytes }) }))
    }
}

fn option_key(key: &str) -> String {
    format!("harness.tools.{NAME}.options.{key}")
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

/// `max_bytes` (BUILTIN-7): unset, null or 0 → the default; negative or not an integer → an error.
fn max_bytes_option(options: &Map<String, Value>) -> Result<u64> {
    let bad = |msg: String| Error::config_key(option_key("max_bytes"), format!("harness.tools entry {NAME}: {msg}"));
    match options.get("max_bytes") {
        None | Some(Value::Null) => Ok(DEFAULT_MAX_BYTES),
        Some(Value::Number(n)) => match (n.as_u64(), n.as_i64()) {
            (Some(0), _) => Ok(DEFAULT_MAX_BYTES),
            (Some(v), _) => Ok(v),
            (None, Some(v)) => Err(bad(format!("option \"max_bytes\" must not be negative, got {v}"))),
            (None, None) => Err(bad(format!("option \"max_bytes\" must be an integer, got {n}"))),
        },
        Some(other) => Err(bad(format!("option \"max_bytes\" must be an integer, got {}", json_type(other)))),
    }
}

/// `root` (BUILTIN-6, CFG-6): resolved, checked to be an existing directory, and canonicalized once.
fn root_option(options: &Map<String, Value>, env: &BuiltinEnv) -> Result<PathBuf> {
    let (key, path) = match options.get("root") {
        None | Some(Value::Null) => match &env.root_directory {
            Some(dir) => ("root_directory".to_owned(), dir.clone()),
            None => (option_key("root"), env.working_dir.clone()),
        },
        Some(Value::String(s)) if s.is_empty() => {
            return Err(Error::config_key(
                option_key("root"),
                format!("harness.tools entry {NAME}: option \"root\" must not be empty"),
            ));
        }
        Some(Value::String(s)) => (option_key("root"), env.base_dir().join(s)),
        Some(other) => {
            return Err(Error::config_key(
                option_key("root"),
                format!("harness.tools entry {NAME}: option \"root\" must be a string, got {}", json_type(other)),
            ));
        }
    };
    let fail = |what: String| Error::config_key(key.clone(), format!("harness.tools entry {NAME}: root {what}"));
    let canonical = std::fs::canonicalize(&path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            fail(format!("{} does not exist", path.display())).with_source(e)
        } else {
            fail(format!("{} cannot be resolved: {e}", path.display())).with_source(e)
        }
    })?;
    match std::fs::metadata(&canonical) {
        Ok(meta) if meta.is_dir() => Ok(canonical),
        Ok(_) => Err(fail(format!("{} is not a directory", path.display()))),
        Err(e) => Err(fail(format!("{} cannot be read: {e}", path.display())).with_source(e)),
    }
}

/// The built tool.
#[derive(Debug)]
struct ReadFile {
    spec: ToolSpec,
    jail: Arc<Jail>,
}

#[derive(serde::Deserialize)]
struct Args {
    path: String,
}

#[async_trait]
impl Tool for ReadFile {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn display(&self, input: &ToolInput) -> String {
        let shown = match input.parse::<Args>() {
            Ok(args) => sanitize(&args.path, PROMPT_LIMIT),
            Err(_) => sanitize(input.as_str(), PROMPT_LIMIT),
        };
        if shown.is_empty() { format!("{NAME} \"\"") } else { format!("{NAME} {shown}") }
    }

    async fn call(&self, input: &ToolInput, ctx: &CallContext) -> ToolOutput {
        // The dispatch path validated the input against the schema.
        let path = match input.parse::<Args>() {
            Ok(args) => args.path,
            Err(e) => return ToolOutput::error(format!("{NAME}: {e}")),
        };
        let shown = Value::String(path.clone()).to_string();
        let jail = Arc::clone(&self.jail);
        let result = match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                let task = handle.spawn_blocking(move || jail.read(&path));
                tokio::select! {
                    joined = task => match joined {
                        Ok(result) => result,
                        Err(e) => Err(format!("the read failed: {e}")),
                    },
                    () = ctx.cancel_token().cancelled() => Err("cancelled".to_owned()),
                }
            }
            // Not inside a Tokio runtime (a bare executor): read inline.
            Err(_) => jail.read(&path),
        };
        match result {
            Ok(read) => ToolOutput::json(&json!({"path": read.path, "size": read.size, "content": read.content})),
            Err(reason) => ToolOutput::error(format!("{NAME} {shown}: {reason}")),
        }
    }
}

/// The canonical root and the size limit.
#[derive(Debug)]
struct Jail {
    root: PathBuf,
    max_bytes: u64,
}

/// A successful read.
#[derive(Debug)]
struct FileText {
    path: String,
    size: usize,
    content: String,
}

/// What a directory entry is, from its mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Regular,
    Directory,
    Symlink,
    Fifo,
    Socket,
    CharDevice,
    BlockDevice,
    Other,
}

impl Kind {
    fn of(stat: &FileStat) -> Kind {
        let ty = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
        if ty == SFlag::S_IFREG {
            Kind::Regular
        } else if ty == SFlag::S_IFDIR {
            Kind::Directory
        } else if ty == SFlag::S_IFLNK {
            Kind::Symlink
        } else if ty == SFlag::S_IFIFO {
            Kind::Fifo
        } else if ty == SFlag::S_IFSOCK {
            Kind::Socket
        } else if ty == SFlag::S_IFCHR {
            Kind::CharDevice
        } else if ty == SFlag::S_IFBLK {
            Kind::BlockDevice
        } else {
            Kind::Other
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Kind::Regular => "a regular file",
            Kind::Directory => "a directory",
            Kind::Symlink => "a symlink",
            Kind::Fifo => "a FIFO",
            Kind::Socket => "a socket",
            Kind::CharDevice => "a character device",
            Kind::BlockDevice => "a block device",
            Kind::Other => "not a regular file",
        }
    }
}

fn dir_flags() -> OFlag {
    OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC
}

fn file_flags() -> OFlag {
    OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC
}

/// Whether `openat(.., O_NOFOLLOW)` failed because the entry is a symlink (ELOOP; EMLINK on the BSDs).
fn maybe_symlink(e: Errno) -> bool {
    matches!(e, Errno::ELOOP | Errno::EMLINK)
}

/// Lexical normalization (BUILTIN-8): leading `/` ignored, empty and `.` components dropped, `..` removes the
/// previous component; `None` when a `..` would climb above the root.
fn normalize(path: &str) -> Option<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            name => out.push(name.to_owned()),
        }
    }
    Some(out)
}

/// The walk's position: the physical path below the root (no `.`, `..` or symlink in it) and a handle of the
/// directory it names.
struct Walk {
    root: OwnedFd,
    /// The directory `names` leads to; `None` is the root itself.
    current: Option<OwnedFd>,
    names: Vec<OsString>,
    symlinks: usize,
}

impl Walk {
    fn dir(&self) -> BorrowedFd<'_> {
        self.current.as_ref().unwrap_or(&self.root).as_fd()
    }

    /// The physical path of `name` in the current directory, for messages.
    fn shown(&self, name: &OsStr) -> String {
        let mut parts: Vec<&OsStr> = self.names.iter().map(OsString::as_os_str).collect();
        parts.push(name);
        let joined: Vec<u8> = parts.iter().map(|p| p.as_bytes()).collect::<Vec<_>>().join(&b'/');
        String::from_utf8_lossy(&joined).into_owned()
    }

    fn descend(&mut self, fd: OwnedFd, name: OsString) {
        self.current = Some(fd);
        self.names.push(name);
    }

    /// Go back up to the first `depth` names, reopening that directory from the root without following anything.
    fn truncate(&mut self, depth: usize) -> std::result::Result<(), String> {
        if depth >= self.names.len() {
            return Ok(());
        }
        self.names.truncate(depth);
        let mut current: Option<OwnedFd> = None;
        for name in &self.names {
            let dir = current.as_ref().unwrap_or(&self.root).as_fd();
            let fd = openat(dir, name.as_os_str(), dir_flags(), Mode::empty()).map_err(|e| {
                format!("the directory {} changed while the path was resolved ({e}); try again", lossy(name))
            })?;
            current = Some(fd);
        }
        self.current = current;
        Ok(())
    }

    /// Follow the symlink `name` in the current directory (BUILTIN-9): its target replaces it at the front of
    /// `pending`, joined lexically to the link's directory; an absolute target, one climbing above the root, or
    /// one link too many is refused.
    fn follow(&mut self, name: &OsStr, pending: &mut Vec<OsString>) -> std::result::Result<(), String> {
        let shown = self.shown(name);
        self.symlinks += 1;
        if self.symlinks > MAX_SYMLINKS {
            return Err(format!("refused: more than {MAX_SYMLINKS} symlinks followed (a symlink loop?) at {shown}"));
        }
        let target = match readlinkat(self.dir(), name) {
            Ok(t) => t,
            Err(Errno::EINVAL) => return Err(format!("{shown} changed while the path was resolved; try again")),
            Err(Errno::ENOENT) => return Err(format!("not found: {shown} does not exist")),
            Err(e) => return Err(format!("cannot read the symlink {shown}: {e}")),
        };
        let bytes = target.as_bytes();
        if bytes.is_empty() {
            return Err(format!("refused: the symlink {shown} has an empty target"));
        }
        if bytes.starts_with(b"/") {
            return Err(format!("refused: the symlink {shown} has an absolute target"));
        }
        let mut joined = self.names.clone();
        for part in bytes.split(|b| *b == b'/') {
            match part {
                b"" | b"." => {}
                b".." => {
                    if joined.pop().is_none() {
                        return Err(format!("refused: the symlink {shown} points outside the root"));
                    }
                }
                name => joined.push(OsString::from_vec(name.to_vec())),
            }
        }
        let common = self.names.iter().zip(&joined).take_while(|(a, b)| a == b).count();
        self.truncate(common)?;
        // `pending` is a stack: its last element is resolved next.
        pending.extend(joined.drain(common..).rev());
        Ok(())
    }
}

fn lossy(name: &OsStr) -> String {
    String::from_utf8_lossy(name.as_bytes()).into_owned()
}

impl Jail {
    /// Read `requested` under the root, or say why not.
    fn read(&self, requested: &str) -> std::result::Result<FileText, String> {
        if requested.contains('\0') {
            return Err("refused: the path contains a NUL character".to_owned());
        }
        let Some(parts) = normalize(requested) else {
            return Err("refused: the path leaves the root directory".to_owned());
        };
        let normalized = parts.join("/");
        let root = openat(AT_FDCWD, self.root.as_path(), dir_flags(), Mode::empty())
            .map_err(|e| format!("the root directory cannot be opened: {e}"))?;
        let mut walk = Walk { root, current: None, names: Vec::new(), symlinks: 0 };
        // A stack: the next component to resolve is the last element.
        let mut pending: Vec<OsString> = parts.into_iter().rev().map(OsString::from).collect();
        loop {
            let Some(name) = pending.pop() else {
                return Err("refused: a directory, not a regular file".to_owned());
            };
            let last = pending.is_empty();
            let stat = match fstatat(walk.dir(), name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
                Ok(stat) => stat,
                Err(Errno::ENOENT) => return Err(format!("not found: {} does not exist", walk.shown(&name))),
                Err(e) => return Err(format!("cannot look up {}: {e}", walk.shown(&name))),
            };
            let kind = Kind::of(&stat);
            if kind == Kind::Symlink {
                walk.follow(&name, &mut pending)?;
                continue;
            }
            if !last {
                if kind != Kind::Directory {
                    return Err(format!("not found: {} is not a directory", walk.shown(&name)));
                }
                match openat(walk.dir(), name.as_os_str(), dir_flags(), Mode::empty()) {
                    Ok(fd) => walk.descend(fd, name),
                    Err(e) if maybe_symlink(e) => walk.follow(&name, &mut pending)?,
                    Err(Errno::ENOENT) => return Err(format!("not found: {} does not exist", walk.shown(&name))),
                    Err(Errno::ENOTDIR) => {
                        return Err(format!("not found: {} is not a directory", walk.shown(&name)));
                    }
                    Err(e) => return Err(format!("cannot open {}: {e}", walk.shown(&name))),
                }
                continue;
            }
            // The final component. Refuse what is not a regular file before opening it (opening a device can
            // have effects), then decide on the open descriptor.
            if kind != Kind::Regular {
                return Err(format!("refused: {} is {}, not a regular file", walk.shown(&name), kind.describe()));
            }
            let fd = match openat(walk.dir(), name.as_os_str(), file_flags(), Mode::empty()) {
                Ok(fd) => fd,
                Err(e) if maybe_symlink(e) => {
                    walk.follow(&name, &mut pending)?;
                    continue;
                }
                Err(Errno::ENOENT) => return Err(format!("not found: {} does not exist", walk.shown(&name))),
                Err(e) => return Err(format!("cannot open {}: {e}", walk.shown(&name))),
            };
            return self.read_open(fd, normalized, &walk.shown(&name));
        }
    }

    /// Read an opened final component: a regular file no larger than the limit, holding UTF-8 text.
    fn read_open(&self, fd: OwnedFd, path: String, shown: &str) -> std::result::Result<FileText, String> {
        let stat = fstat(&fd).map_err(|e| format!("cannot inspect {shown}: {e}"))?;
        let kind = Kind::of(&stat);
        if kind != Kind::Regular {
            return Err(format!("refused: {shown} is {}, not a regular file", kind.describe()));
        }
        let limit = self.max_bytes;
        let size = u64::try_from(stat.st_size).unwrap_or(0);
        if size > limit {
            return Err(format!(
                "refused: the file is {size} bytes, larger than the limit of {limit} bytes (max_bytes)"
            ));
        }
        let file = std::fs::File::from(fd);
        let mut content = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        // One byte past the limit tells a file that grew since fstat from one that is exactly at the limit.
        file.take(limit.saturating_add(1))
            .read_to_end(&mut content)
            .map_err(|e| format!("cannot read {shown}: {e}"))?;
        if content.len() as u64 > limit {
            return Err(format!(
                "refused: the file grew past the limit of {limit} bytes (max_bytes) while it was read"
            ));
        }
        let size = content.len();
        match String::from_utf8(content) {
            Ok(content) => Ok(FileText { path, size, content }),
            Err(_) => Err(format!("refused: {shown} is not text (it is not valid UTF-8)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn normalize_is_lexical_and_refuses_climbing_above_the_root() {
        assert_eq!(normalize("/a/./b//c/").unwrap(), ["a", "b", "c"]);
        assert_eq!(normalize("a/b/../c").unwrap(), ["a", "c"]);
        assert_eq!(normalize("....//x").unwrap(), ["....", "x"]);
        assert!(normalize("").unwrap().is_empty());
        assert!(normalize("a/..").unwrap().is_empty());
        for escape in ["..", "../x", "a/../../x", "./..", "/../x", "a/b/../../.."] {
            assert!(normalize(escape).is_none(), "{escape}");
        }
    }
}
