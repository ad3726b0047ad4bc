//! The stored record format (MEM-13), shared by every backend (MEM-12).

use serde_yaml::Value;

/// Encode a record: `---\n`, a YAML mapping with the single key `description` written by a real YAML encoder (so
/// colons, quotes, leading dashes and `---` are safe), `---\n`, a blank line, then `content` verbatim.
///
/// `description` should already be normalized ([`normalize_description`](super::normalize_description)); any
/// string still round-trips through [`decode`].
///
/// ```
/// use fisk_ai::memory::{decode, encode};
///
/// let stored = encode("a: b", "body\n");
/// assert_eq!(stored, "---\ndescription: 'a: b'\n---\n\nbody\n");
/// assert_eq!(decode(&stored), ("a: b".to_owned(), "body\n".to_owned()));
/// ```
pub fn encode(description: &str, content: &str) -> String {
    #[derive(serde::Serialize)]
    struct Header<'a> {
        description: &'a str,
    }
    let header = serde_yaml::to_string(&Header { description }).unwrap_or_else(|_| {
        // Unreachable for a string, but never panic: a JSON string is a valid YAML flow scalar.
        format!("description: {}\n", serde_json::Value::String(description.to_owned()))
    });
    let mut out = String::with_capacity(header.len() + content.len() + 9);
    out.push_str("---\n");
    out.push_str(&header);
    if !header.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("---\n\n");
    out.push_str(content);
    out
}

/// Decode a stored value into `(description, content)`, leniently (MEM-13).
///
/// A value that does not open with a complete frontmatter block (`---` line, header, `---` line), or whose header
/// is not a YAML mapping with a scalar `description`, is all body with an empty description. Only the first
/// closing `---` line ends the header; one blank line after it is part of the format and dropped.
///
/// ```
/// use fisk_ai::memory::decode;
///
/// assert_eq!(decode("---\ndescription: x\n---\n\nbody"), ("x".to_owned(), "body".to_owned()));
/// assert_eq!(decode("just text"), (String::new(), "just text".to_owned()));
/// assert_eq!(decode("---\n[oops\n---\n\nbody"), (String::new(), "---\n[oops\n---\n\nbody".to_owned()));
/// ```
pub fn decode(value: &str) -> (String, String) {
    if let Some((header, body)) = split(value)
        && let Some(description) = header_description(header)
    {
        return (description, body.to_owned());
    }
    (String::new(), value.to_owned())
}

/// The header text and body of a value that opens with a complete frontmatter block.
fn split(value: &str) -> Option<(&str, &str)> {
    let rest = value.strip_prefix("---\n").or_else(|| value.strip_prefix("---\r\n"))?;
    let mut start = 0;
    loop {
        let end = rest[start..].find('\n').map(|i| start + i);
        let line = &rest[start..end.unwrap_or(rest.len())];
        if line.strip_suffix('\r').unwrap_or(line) == "---" {
            let after = end.map_or("", |e| &rest[e + 1..]);
            let body = after.strip_prefix('\n').or_else(|| after.strip_prefix("\r\n")).unwrap_or(after);
            return Some((&rest[..start], body));
        }
        start = end? + 1;
    }
}

/// The description a header declares: empty for an empty header or a missing or null key; `None` when the header
/// does not parse as a mapping or the description is not a scalar.
fn header_description(header: &str) -> Option<String> {
    if header.trim().is_empty() {
        return Some(String::new());
    }
    let value: Value = serde_yaml::from_str(header).ok()?;
    let map = match value {
        Value::Null => return Some(String::new()),
        Value::Mapping(map) => map,
        _ => return None,
    };
    match map.get("description") {
        None | Some(Value::Null) => Some(String::new()),
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(Value::Bool(b)) => Some(b.to_string()),
        Some(_) => None,
    }
}

/// Whether `head`, a prefix of a stored value, is enough to decode its description: the value does not open a
/// frontmatter block, or the block closes within `head`.
pub(crate) fn header_complete(head: &str) -> bool {
    !(head.starts_with("---\n") || head.starts_with("---\r\n")) || split(head).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_finds_only_the_first_closing_line() {
        assert_eq!(split("---\na: 1\n---\n\nx\n---\ny"), Some(("a: 1\n", "x\n---\ny")));
        assert_eq!(split("---\n---"), Some(("", "")));
        assert_eq!(split("---\n--- \nbody"), None);
        assert_eq!(split("--- \n---\n"), None);
    }

    #[test]
    fn header_description_is_lenient_about_scalars() {
        assert_eq!(header_description("description: 42\n").as_deref(), Some("42"));
        assert_eq!(header_description("description: true\nother: x\n").as_deref(), Some("true"));
        assert_eq!(header_description("description: [a]\n"), None);
        assert_eq!(header_description("- a\n"), None);
        assert_eq!(header_description("other: x\n").as_deref(), Some(""));
    }
}
