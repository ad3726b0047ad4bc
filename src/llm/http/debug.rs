//! The HTTP debug dump (PROV-17): every request and response, pretty-printed, in a private file.

use crate::config::format_duration;
use crate::llm::observe::{WireError, WireObserver, WireRequest, WireResponse, WireRetry};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Writes the wire traffic to a file created for this run only.
#[derive(Debug)]
pub(crate) struct HttpDebugLog {
    path: PathBuf,
    file: Mutex<File>,
    failed: AtomicBool,
}

impl HttpDebugLog {
    /// Remove whatever is at `path` (a symlink itself, never its target), then create a new file exclusively with
    /// mode 0600. `create_new` is `O_CREAT|O_EXCL`, which refuses to follow a symlink, so one planted between the
    /// two steps makes creation fail instead of writing the conversation elsewhere.
    pub(crate) fn create(path: &Path) -> io::Result<Self> {
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(path)?;
        Ok(HttpDebugLog { path: path.to_path_buf(), file: Mutex::new(file), failed: AtomicBool::new(false) })
    }

    fn write(&self, text: &str) {
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = file.write_all(text.as_bytes()).and_then(|()| file.flush()) {
            // A debug aid must not end the run; say so once.
            if !self.failed.swap(true, Ordering::Relaxed) {
                tracing::warn!(path = %self.path.display(), error = %e, "cannot write the HTTP debug log");
            }
        }
    }
}

impl WireObserver for HttpDebugLog {
    fn on_request(&self, r: &WireRequest<'_>) {
        let retry = if r.attempt > 0 { format!(" (retry {})", r.attempt) } else { String::new() };
        self.write(&format!("==> {} {}{retry}\n{}\n\n", r.method, r.url, pretty(r.body)));
    }

    fn on_response(&self, r: &WireResponse<'_>) {
        let mut head = format!("<== HTTP {}", r.status);
        if let Some(id) = r.request_id {
            head.push_str(&format!(" request-id {id}"));
        }
        head.push_str(&format!(" after {}", format_duration(r.elapsed)));
        if r.streamed {
            head.push_str(" (streamed; the message it accumulated to)");
        }
        self.write(&format!("{head}\n{}\n\n", pretty(r.body)));
    }

    fn on_error(&self, e: &WireError<'_>) {
        let then = if e.will_retry { "will retry" } else { "giving up" };
        self.write(&format!("<!! {} ({then})\n\n", e.error));
    }

    fn on_retry(&self, r: &WireRetry<'_>) {
        self.write(&format!("... retry {} in {}\n\n", r.attempt, format_duration(r.wait)));
    }
}

/// Indent a JSON document two spaces per level, keeping key order and every string byte as it was. Anything that
/// is not JSON (an HTML error page) is returned as lossy text.
pub(crate) fn pretty(body: &[u8]) -> String {
    if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_err() {
        return String::from_utf8_lossy(body).into_owned();
    }
    let mut out: Vec<u8> = Vec::with_capacity(body.len() + body.len() / 2);
    let mut depth = 0usize;
    let (mut in_string, mut escaped) = (false, false);
    let newline = |out: &mut Vec<u8>, depth: usize| {
        out.push(b'\n');
        out.extend(std::iter::repeat_n(b' ', depth * 2));
    };
    let mut i = 0;
    while i < body.len() {
        let c = body[i];
        i += 1;
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_string = false;
            }
            continue;
        }
        match c {
            b'"' => {
                in_string = true;
                out.push(c);
            }
            b'{' | b'[' => {
                out.push(c);
                let close = if c == b'{' { b'}' } else { b']' };
                let next = body[i..].iter().position(|b| !b.is_ascii_whitespace()).map(|p| i + p);
                if let Some(n) = next.filter(|&n| body[n] == close) {
                    // An empty container stays on one line.
                    out.push(close);
                    i = n + 1;
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            b',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            b':' => out.extend_from_slice(b": "),
            c if c.is_ascii_whitespace() => {}
            _ => out.push(c),
        }
    }
    // Only whole UTF-8 sequences were copied, so this never replaces anything.
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::pretty;

    #[test]
    fn pretty_printing_keeps_order_and_string_bytes() {
        let body = r#"{"z":1,"a":[],"s":"x, {y}: \"q\" \u00e9 é","o":{"k":[1,{}]}}"#.as_bytes();
        let out = pretty(body);
        assert_eq!(
            out,
            "{\n  \"z\": 1,\n  \"a\": [],\n  \"s\": \"x, {y}: \\\"q\\\" \\u00e9 é\",\n  \"o\": {\n    \"k\": [\n      1,\n      {}\n    ]\n  }\n}"
        );
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v, serde_json::from_slice::<serde_json::Value>(body).unwrap());
        assert_eq!(pretty(b"<html>bad gateway</html>"), "<html>bad gateway</html>");
    }
}
