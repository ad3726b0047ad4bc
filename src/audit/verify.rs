//! Checking a trail's chain (AUD-7): every record in order, each linking to the one before, from the first.

use super::file::{MAX_LINE, rotated};
use super::record::Chain;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// A trail whose chain holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Verified {
    /// How many records.
    pub records: u64,
    /// The files read, oldest first (empty for a stream).
    pub files: Vec<PathBuf>,
    /// The hash of the last record: a later check that starts from it covers what was added since.
    pub head: String,
}

/// The first record that breaks the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Broken {
    /// Where it is: `FILE line N`, or `stream S message N`.
    pub at: String,
    /// The seq the chain expected there.
    pub expected_seq: u64,
    /// What is wrong.
    pub why: String,
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (record {}): {}", self.at, self.expected_seq, self.why)
    }
}

impl std::error::Error for Broken {}

/// Check the records in `reader` (JSON lines) against `chain`, moving it past each; how many there were.
///
/// # Errors
///
/// The first line that breaks the chain (`at` is `line N`), an incomplete last line, or a read failure.
pub fn verify_lines(reader: impl Read, chain: &mut Chain) -> Result<u64, Broken> {
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    let mut count = 0;
    loop {
        line.clear();
        let broken = |why: String, n: u64, chain: &Chain| Broken {
            at: format!("line {}", n + 1),
            expected_seq: chain.next_seq(),
            why,
        };
        let read = (&mut reader).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut line);
        match read {
            Ok(0) => return Ok(count),
            Ok(_) => {}
            Err(e) => return Err(broken(format!("cannot read it: {e}"), count, chain)),
        }
        let Some(body) = line.strip_suffix(b"\n") else {
            let why = if line.len() > MAX_LINE { "it is too long" } else { "it is incomplete (no newline)" };
            return Err(broken(why.to_owned(), count, chain));
        };
        chain.check(body).map_err(|why| broken(why, count, chain))?;
        count += 1;
    }
}

/// Check the trail at `path`: its rotated files (`PATH.<20 digits>`, oldest first), then `path`, as one chain that
/// starts at record 0.
///
/// # Errors
///
/// The first broken record, naming its file and line; a file that cannot be read; or no trail at all.
pub fn verify_file(path: impl AsRef<Path>) -> Result<Verified, Broken> {
    let path = path.as_ref();
    let broken = |at: &Path, why: String| Broken { at: at.display().to_string(), expected_seq: 0, why };
    let mut files = rotated(path).map_err(|why| broken(path, why))?;
    if path.exists() || files.is_empty() {
        files.push(path.to_owned());
    }
    let mut chain = Chain::genesis();
    let mut records = 0;
    for file in &files {
        let opened = std::fs::File::open(file).map_err(|e| broken(file, format!("cannot open it: {e}")))?;
        records +=
            verify_lines(opened, &mut chain).map_err(|b| Broken { at: format!("{} {}", file.display(), b.at), ..b })?;
    }
    Ok(Verified { records, files, head: chain.prev().to_owned() })
}
