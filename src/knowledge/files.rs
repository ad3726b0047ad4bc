//! Which files an index reads (KNOW-9): the configured roots, walked without following links out of them, regular
//! files only, each under a size cap, UTF-8 text only.

use nix::fcntl::{AT_FDCWD, OFlag, openat};
use nix::sys::stat::Mode;
use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// The largest file indexed; a larger one is skipped and reported.
pub const MAX_FILE_BYTES: u64 = 4 << 20;
/// The most files one index holds; beyond it files are skipped and reported.
pub const MAX_FILES: usize = 100_000;
/// The most directory entries one index run looks at; a walk past it stops, and says so.
pub const MAX_WALK_ENTRIES: usize = 1_000_000;
/// The most skipped files a report lists by name; the rest are counted.
pub const MAX_SKIPPED_LISTED: usize = 1_000;

/// The extensions a directory walk indexes. A file named in `paths` itself is read whatever its name.
pub const TEXT_EXTENSIONS: &[&str] = &["md", "markdown", "mdown", "mdx", "txt", "text", "rst", "adoc", "asciidoc"];

/// One configured path, resolved.
#[derive(Debug, Clone)]
pub(crate) struct Root {
    /// Canonical: the operator chose it, so a link named in `paths` is followed once, here.
    pub(crate) abs: PathBuf,
    /// How its files are cited: its path from the configuration's directory, or its own name when it lies outside.
    pub(crate) label: String,
}

impl Root {
    pub(crate) fn new(configured: &Path, base: &Path) -> std::result::Result<Root, String> {
        let joined = if configured.is_absolute() { configured.to_path_buf() } else { base.join(configured) };
        let abs = joined.canonicalize().map_err(|e| format!("{}: {e}", joined.display()))?;
        let base = base.canonicalize().unwrap_or_else(|_| base.to_path_buf());
        let label = match abs.strip_prefix(&base) {
            Ok(rel) if !rel.as_os_str().is_empty() => slashed(rel),
            _ => abs.file_name().map_or_else(|| "root".to_owned(), |n| n.to_string_lossy().into_owned()),
        };
        Ok(Root { abs, label })
    }
}

/// A file found under a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) rel: String,
    pub(crate) abs: PathBuf,
    /// The directory the file is opened beneath, one component at a time (its root, or a file root's parent).
    pub(crate) beneath: Arc<Path>,
    pub(crate) size: u64,
    pub(crate) mtime_ns: i64,
}

/// A file left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The file.
    pub path: PathBuf,
    /// Why it was not indexed.
    pub reason: String,
}

fn slashed(p: &Path) -> String {
    p.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

/// Files left out: the first [`MAX_SKIPPED_LISTED`] by name, the rest counted, so a tree of a million unreadable
/// files cannot grow a report without bound.
#[derive(Debug, Default)]
pub(crate) struct Skips {
    pub(crate) listed: Vec<Skipped>,
    pub(crate) more: usize,
    /// The walk stopped before it saw every file: what it did not reach must not be taken for deleted.
    pub(crate) truncated: bool,
}

impl Skips {
    pub(crate) fn push(&mut self, path: PathBuf, reason: impl Into<String>) {
        if self.listed.len() < MAX_SKIPPED_LISTED {
            self.listed.push(Skipped { path, reason: reason.into() });
        } else {
            self.more += 1;
        }
    }
}

/// Every indexable file under `roots`, sorted by citation path; what was left out goes to `skipped`. The walk
/// stops at [`MAX_FILES`] files or [`MAX_WALK_ENTRIES`] entries, whichever comes first.
pub(crate) fn discover(roots: &[Root], skipped: &mut Skips) -> Vec<Found> {
    discover_within(roots, skipped, MAX_WALK_ENTRIES)
}

fn discover_within(roots: &[Root], skipped: &mut Skips, max_entries: usize) -> Vec<Found> {
    let mut out = Vec::new();
    let mut budget = Budget { entries: 0, max_entries, stopped: false };
    for root in roots {
        let Ok(meta) = std::fs::metadata(&root.abs) else {
            skipped.push(root.abs.clone(), "cannot be read");
            continue;
        };
        if meta.is_file() {
            let parent: Arc<Path> = root.abs.parent().unwrap_or(Path::new("/")).into();
            out.push(found(root.label.clone(), root.abs.clone(), &parent, &meta));
        } else if meta.is_dir() {
            walk(root, &mut out, skipped, &mut budget);
        } else {
            skipped.push(root.abs.clone(), "not a regular file or directory");
        }
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    out.dedup_by(|a, b| a.rel == b.rel);
    if out.len() > MAX_FILES {
        for f in out.drain(MAX_FILES..) {
            skipped.push(f.abs, format!("over the limit of {MAX_FILES} files"));
        }
    }
    out
}

/// How much of the trees one run has looked at.
struct Budget {
    entries: usize,
    max_entries: usize,
    stopped: bool,
}

fn found(rel: String, abs: PathBuf, beneath: &Arc<Path>, meta: &std::fs::Metadata) -> Found {
    // Saturating: a file can claim any mtime.
    let mtime_ns = meta.mtime().saturating_mul(1_000_000_000).saturating_add(meta.mtime_nsec());
    Found { rel, abs, beneath: beneath.clone(), size: meta.len(), mtime_ns }
}

fn walk(root: &Root, out: &mut Vec<Found>, skipped: &mut Skips, budget: &mut Budget) {
    let beneath: Arc<Path> = root.abs.as_path().into();
    let mut stack = vec![root.abs.clone()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            skipped.push(dir, "cannot be listed");
            continue;
        };
        for entry in entries.flatten() {
            budget.entries += 1;
            if budget.entries > budget.max_entries || out.len() > MAX_FILES {
                if !std::mem::replace(&mut budget.stopped, true) {
                    let why = format!(
                        "the walk stopped here, past {MAX_FILES} files or {MAX_WALK_ENTRIES} entries; files it did \
                         not reach are neither indexed nor removed"
                    );
                    // Listed whatever the cap: it explains every file missing from this run.
                    skipped.listed.push(Skipped { path: dir, reason: why });
                    skipped.truncated = true;
                }
                return;
            }
            let path = entry.path();
            // Hidden files and directories (.git, editors' swap files) are not documents.
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            // symlink_metadata: a link is never followed, so nothing outside the roots is reached through one.
            let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
            let kind = meta.file_type();
            if kind.is_symlink() {
                skipped.push(path, "a symbolic link (links are not followed)");
            } else if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() && has_text_extension(&path) {
                let rel = path.strip_prefix(&root.abs).map(slashed).unwrap_or_default();
                out.push(found(format!("{}/{rel}", root.label), path, &beneath, &meta));
            }
        }
    }
}

fn has_text_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| TEXT_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// Open `abs` one component at a time beneath the directory `beneath`, never following a link: a directory swapped
/// for a link between the walk and the read cannot lead out of the configured roots.
fn open_beneath(beneath: &Path, abs: &Path) -> std::result::Result<File, String> {
    let rel = abs.strip_prefix(beneath).map_err(|_| "lies outside its root".to_owned())?;
    let dir_flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut dir: OwnedFd =
        openat(AT_FDCWD, beneath, dir_flags, Mode::empty()).map_err(|e| format!("its root cannot be opened: {e}"))?;
    let mut parts = rel.components().peekable();
    while let Some(part) = parts.next() {
        let Component::Normal(name) = part else { return Err("has an unexpected path component".into()) };
        if parts.peek().is_none() {
            let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
            let fd = openat(&dir, name, flags, Mode::empty()).map_err(|e| format!("cannot be opened: {e}"))?;
            return Ok(File::from(fd));
        }
        dir = openat(&dir, name, dir_flags, Mode::empty())
            .map_err(|e| format!("cannot be opened: {} is no longer a directory here ({e})", name.to_string_lossy()))?;
    }
    Err("is a directory".into())
}

/// Read a found file: beneath its root without following links, only a regular file, under the cap, UTF-8 without
/// NUL bytes.
pub(crate) fn read_text(f: &Found) -> std::result::Result<String, String> {
    let file = open_beneath(&f.beneath, &f.abs)?;
    let meta = file.metadata().map_err(|e| format!("cannot be inspected: {e}"))?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!("{} bytes, over the cap of {MAX_FILE_BYTES}", meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // One byte over the cap proves a file that grew while being read is too large.
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot be read: {e}"))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("over the cap of {MAX_FILE_BYTES} bytes"));
    }
    if bytes.contains(&0) {
        return Err("not text (it holds NUL bytes)".into());
    }
    String::from_utf8(bytes).map_err(|e| format!("not UTF-8 (invalid byte at offset {})", e.utf8_error().valid_up_to()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_past_its_entry_limit_stops_says_where_and_marks_itself_truncated() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..20 {
            std::fs::write(dir.path().join(format!("f{i:02}.md")), "x").unwrap();
        }
        let root = Root::new(Path::new("."), dir.path()).unwrap();
        let mut skips = Skips::default();
        let found = discover_within(std::slice::from_ref(&root), &mut skips, 5);
        assert_eq!(found.len(), 5);
        assert!(skips.truncated);
        assert!(skips.listed[0].reason.contains("walk stopped"), "{:?}", skips.listed);
        let mut whole = Skips::default();
        assert_eq!(discover_within(&[root], &mut whole, 1000).len(), 20);
        assert!(!whole.truncated);
    }
}
