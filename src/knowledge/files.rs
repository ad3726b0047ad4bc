//! Which files an index reads (KNOW-9): the configured roots, walked without following links out of them, regular
//! files only, each under a size cap, UTF-8 text only.

use std::fs::OpenOptions;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The largest file indexed; a larger one is skipped and reported.
pub const MAX_FILE_BYTES: u64 = 4 << 20;
/// The most files one index holds; beyond it files are skipped and reported.
pub const MAX_FILES: usize = 100_000;
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

/// Every indexable file under `roots`, sorted by citation path; what was left out goes to `skipped`.
pub(crate) fn discover(roots: &[Root], skipped: &mut Vec<Skipped>) -> Vec<Found> {
    let mut out = Vec::new();
    for root in roots {
        let Ok(meta) = std::fs::metadata(&root.abs) else {
            skipped.push(Skipped { path: root.abs.clone(), reason: "cannot be read".into() });
            continue;
        };
        if meta.is_file() {
            out.push(found(root.label.clone(), root.abs.clone(), &meta));
        } else if meta.is_dir() {
            walk(root, &mut out, skipped);
        } else {
            skipped.push(Skipped { path: root.abs.clone(), reason: "not a regular file or directory".into() });
        }
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    out.dedup_by(|a, b| a.rel == b.rel);
    if out.len() > MAX_FILES {
        for f in out.drain(MAX_FILES..) {
            skipped.push(Skipped { path: f.abs, reason: format!("over the limit of {MAX_FILES} files") });
        }
    }
    out
}

fn found(rel: String, abs: PathBuf, meta: &std::fs::Metadata) -> Found {
    Found { rel, abs, size: meta.len(), mtime_ns: meta.mtime().saturating_mul(1_000_000_000) + meta.mtime_nsec() }
}

fn walk(root: &Root, out: &mut Vec<Found>, skipped: &mut Vec<Skipped>) {
    let mut stack = vec![root.abs.clone()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            skipped.push(Skipped { path: dir, reason: "cannot be listed".into() });
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            // Hidden files and directories (.git, editors' swap files) are not documents.
            if name.to_string_lossy().starts_with('.') {
                continue;
            }
            // symlink_metadata: a link is never followed, so nothing outside the roots is reached through one.
            let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
            let kind = meta.file_type();
            if kind.is_symlink() {
                skipped.push(Skipped { path, reason: "a symbolic link (links are not followed)".into() });
            } else if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() && has_text_extension(&path) {
                let rel = path.strip_prefix(&root.abs).map(slashed).unwrap_or_default();
                out.push(found(format!("{}/{rel}", root.label), path, &meta));
            }
        }
    }
}

fn has_text_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| TEXT_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// Read a found file: not through a link, only a regular file, under the cap, UTF-8 without NUL bytes.
pub(crate) fn read_text(path: &Path) -> std::result::Result<String, String> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| format!("cannot be opened: {e}"))?;
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
