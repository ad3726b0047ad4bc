//! The last line a running command printed, kept for progress reports (PROG-2).

use std::sync::{Arc, Mutex};

/// The longest line kept, in bytes; the rest of a longer line is dropped. A progress message is one short line.
const KEEP: usize = 512;

/// The last non-blank line of a running call's output, shared between the call and whoever reports on it.
///
/// A command tool feeds it as output arrives when its [`CallContext`](super::CallContext) carries one; the MCP
/// server reads it once a second for a progress notification. Memory is bounded: at most two lines of
/// 512 bytes each, whatever the command prints.
///
/// ```
/// use fisk_ai::tool::OutputTail;
///
/// let tail = OutputTail::new();
/// tail.push(b"copying 1/3\ncopying 2/3\n\ncopy");
/// assert_eq!(tail.last_line().as_deref(), Some("copying 2/3"));
/// tail.push(b"ing 3/3\n");
/// assert_eq!(tail.last_line().as_deref(), Some("copying 3/3"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct OutputTail(Arc<Mutex<Lines>>);

#[derive(Debug, Default)]
struct Lines {
    /// The line being written, up to [`KEEP`] bytes.
    partial: Vec<u8>,
    /// The last complete non-blank line.
    last: Vec<u8>,
}

impl OutputTail {
    /// An empty tail.
    pub fn new() -> Self {
        Self::default()
    }

    /// Take in the next bytes of output.
    pub fn push(&self, data: &[u8]) {
        let mut lines = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let mut rest = data;
        while let Some(i) = memchr::memchr(b'\n', rest) {
            lines.extend(&rest[..i]);
            let line = std::mem::take(&mut lines.partial);
            if !line.trim_ascii().is_empty() {
                lines.last = line;
            }
            rest = &rest[i + 1..];
        }
        lines.extend(rest);
    }

    /// The last complete non-blank line, trimmed (as lossy UTF-8); `None` before there is one.
    pub fn last_line(&self) -> Option<String> {
        let lines = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let line = lines.last.trim_ascii();
        (!line.is_empty()).then(|| String::from_utf8_lossy(line).into_owned())
    }
}

impl Lines {
    fn extend(&mut self, bytes: &[u8]) {
        let room = KEEP.saturating_sub(self.partial.len());
        self.partial.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prog_2_a_long_line_is_bounded_and_blank_lines_are_skipped() {
        let tail = OutputTail::new();
        tail.push(&vec![b'x'; 10_000]);
        tail.push(b"\n   \r\n");
        assert_eq!(tail.last_line().map(|l| l.len()), Some(KEEP));
        tail.push(b"done\r\n");
        assert_eq!(tail.last_line().as_deref(), Some("done"));
    }
}
