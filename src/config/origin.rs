//! Where a configuration came from (its text and file), so errors found after parsing, by this module or by the
//! parts that consume the configuration, can still point at the file, line and column of their key.

use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::locate;
use crate::error::{Error, Location};

/// The text and file a configuration was parsed from, and where its first not-yet-built key is.
///
/// Where a key is written is not part of the configuration's value: two configurations that differ only in their
/// origin are equal.
#[derive(Clone, Default)]
pub(super) struct Origin {
    text: Option<Arc<str>>,
    pub(super) file: Option<PathBuf>,
    pub(super) unbuilt_at: Option<Location>,
}

impl PartialEq for Origin {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl fmt::Debug for Origin {
    // The text can be long and is the file's content anyway; the file is what a reader wants.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Origin").field("file", &self.file).field("unbuilt_at", &self.unbuilt_at).finish()
    }
}

impl Origin {
    /// The origin of a configuration parsed from `text`.
    pub(super) fn from_text(text: &str) -> Self {
        Origin { text: Some(Arc::from(text)), file: None, unbuilt_at: None }
    }

    /// Gives `err` the line and column of its key (or of the nearest enclosing block written in the text), then
    /// the file; an error already located keeps its position.
    pub(super) fn locate(&self, err: Error) -> Error {
        let err = match (&self.text, err.location().is_none(), err.key()) {
            (Some(text), true, Some(key)) => match locate_key(text, key) {
                Some((line, column)) => err.with_location(Location { file: None, line, column }),
                None => err,
            },
            _ => err,
        };
        match &self.file {
            Some(file) => err.in_file(file),
            None => err,
        }
    }
}

/// The position of `key` in `yaml`; a derived identity is reported at `application_path`, where it comes from.
pub(super) fn locate_key(yaml: &str, key: &str) -> Option<(usize, usize)> {
    locate::locate(yaml, key)
        .or_else(|| (key == "identity").then(|| locate::locate(yaml, "application_path")).flatten())
}

/// What is wrong with `app` as an `application_path`, if anything: missing, not a file, not executable. A bare name
/// (no `/`) is looked up on `PATH`, as starting it would.
pub(super) fn application_problem(app: &Path) -> Option<String> {
    if app.components().count() == 1 && !app.has_root() {
        let found = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).any(|dir| problem_with(&dir.join(app)).is_none()))
            .unwrap_or(false);
        return (!found).then(|| "is not an executable file in any PATH directory".to_owned());
    }
    problem_with(app)
}

fn problem_with(path: &Path) -> Option<String> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let relative = path.is_relative();
            match std::env::current_dir() {
                Ok(cwd) if relative => Some(format!(
                    "does not exist (a relative application_path resolves against the working directory {})",
                    cwd.display()
                )),
                _ => Some("does not exist".to_owned()),
            }
        }
        Err(e) => Some(format!("cannot be inspected ({e})")),
        Ok(m) if m.is_dir() => Some("is a directory, not an executable file".to_owned()),
        Ok(m) if m.permissions().mode() & 0o111 == 0 => Some("is not executable (no execute permission)".to_owned()),
        Ok(_) => None,
    }
}
