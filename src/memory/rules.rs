//! The limits every backend shares (MEM-8..11, MEM-12).

use super::MemoryError;

/// The longest key, in characters (MEM-8).
pub const MAX_KEY_CHARS: usize = 200;
/// The longest stored description, in characters, after normalization (MEM-9).
pub const MAX_DESCRIPTION_CHARS: usize = 500;
/// The largest content, in bytes (MEM-10).
pub const MAX_CONTENT_BYTES: usize = 65536;
/// The most entries a store holds (MEM-11).
pub const MAX_ENTRIES: usize = 1024;
/// The longest description shown in the memory index, in characters (MEM-15).
pub const MAX_INDEX_DESCRIPTION_CHARS: usize = 200;

const KEY_RULE: &str =
    "keys are 1 to 200 characters from A-Z a-z 0-9 . _ = -, must not start or end with '.', and must not contain '..'";

/// Check a key against MEM-8: 1 to [`MAX_KEY_CHARS`] characters from `A-Z a-z 0-9 . _ = -`, not starting or ending
/// with `.`, without `..`. The error names the rule and what broke it.
///
/// # Errors
///
/// [`MemoryError`] naming the rule and what broke it.
///
/// ```
/// use fisk_ai::memory::validate_key;
///
/// assert!(validate_key("deploy.region_v2=eu-1").is_ok());
/// assert!(validate_key("../etc/passwd").is_err());
/// assert!(validate_key("a..b").unwrap_err().to_string().contains(".."));
/// ```
pub fn validate_key(key: &str) -> Result<(), MemoryError> {
    let problem = if key.is_empty() {
        "it is empty".to_owned()
    } else if let Some(c) = key.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '=' | '-'))) {
        format!("it contains {c:?}")
    } else if key.len() > MAX_KEY_CHARS {
        // Only ASCII is left, so bytes are characters.
        format!("it is {} characters long", key.len())
    } else if key.starts_with('.') || key.ends_with('.') {
        "it starts or ends with '.'".to_owned()
    } else if key.contains("..") {
        "it contains '..'".to_owned()
    } else {
        return Ok(());
    };
    Err(MemoryError::InvalidKey(format!("invalid memory key {}: {problem}; {KEY_RULE}", shown_key(key))))
}

/// Whether `key` is valid per MEM-8.
pub(crate) fn is_valid_key(key: &str) -> bool {
    validate_key(key).is_ok()
}

/// A key quoted for a message, cut so a huge key cannot flood it.
pub(crate) fn shown_key(key: &str) -> String {
    const SHOWN: usize = 80;
    match key.char_indices().nth(SHOWN) {
        None => format!("{key:?}"),
        Some((cut, _)) => format!("{:?}…", &key[..cut]),
    }
}

/// Normalize a description per MEM-9: control characters become spaces, whitespace runs collapse to one space,
/// the ends are trimmed, and the result is cut to [`MAX_DESCRIPTION_CHARS`] characters. An empty result is an
/// error.
///
/// # Errors
///
/// [`MemoryError`] when nothing is left once whitespace and control characters are folded.
///
/// ```
/// use fisk_ai::memory::normalize_description;
///
/// assert_eq!(normalize_description("  Build\tflags\r\n for\u{7} CI ").unwrap(), "Build flags for CI");
/// assert!(normalize_description("\n\t ").is_err());
/// ```
pub fn normalize_description(description: &str) -> Result<String, MemoryError> {
    let mut out = String::with_capacity(description.len().min(MAX_DESCRIPTION_CHARS * 4));
    let mut count = 0;
    let mut pending_space = false;
    for c in description.chars() {
        if c.is_control() || c.is_whitespace() {
            pending_space = count > 0;
            continue;
        }
        if pending_space {
            if count == MAX_DESCRIPTION_CHARS {
                break;
            }
            out.push(' ');
            count += 1;
            pending_space = false;
        }
        if count == MAX_DESCRIPTION_CHARS {
            break;
        }
        out.push(c);
        count += 1;
    }
    // A cut right after a space leaves it at the end.
    let trimmed_len = out.trim_end().len();
    out.truncate(trimmed_len);
    if out.is_empty() {
        return Err(MemoryError::InvalidDescription(
            "the description is empty after normalization (control characters and surrounding whitespace are \
             removed); give a short one-line summary of the entry"
                .to_owned(),
        ));
    }
    Ok(out)
}

/// Check MEM-10.
pub(crate) fn check_content(content: &str) -> Result<(), MemoryError> {
    if content.len() > MAX_CONTENT_BYTES {
        return Err(MemoryError::TooLarge { size: content.len(), limit: MAX_CONTENT_BYTES });
    }
    Ok(())
}
