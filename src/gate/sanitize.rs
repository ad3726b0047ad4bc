use std::borrow::Cow;
use unicode_general_category::{GeneralCategory, get_general_category};

/// The longest text shown in an approval prompt (GATE-8).
pub const PROMPT_LIMIT: usize = 2000;

/// Make model-influenced text safe to show an operator (GATE-8): terminal escape sequences (CSI, OSC and any other
/// ESC-introduced sequence) removed, remaining control characters replaced by spaces, whitespace runs collapsed to
/// one space, invisible format characters shown as escapes (see [`escape_invisible`]), and the result cut to
/// `max_chars` characters with `…` appended when cut. Escapes go before the cut, and the cut never splits a
/// `\u{…}` escape: one that does not fit is left out whole, so the text may end a few characters short.
///
/// ```
/// use fisk_ai::gate::sanitize;
///
/// assert_eq!(sanitize("rm \u{1b}[31m-rf\u{1b}[0m\n\t/tmp\u{7}", 100), "rm -rf /tmp");
/// assert_eq!(sanitize("abcdef", 3), "abc…");
/// // A right-to-left override would make `txt.exe` read `exe.txt`.
/// assert_eq!(sanitize("cat \u{202e}txt.exe", 100), r"cat \u{202e}txt.exe");
/// // No limit at all is fine too.
/// assert_eq!(sanitize("a\tb", usize::MAX), "a b");
/// ```
pub fn sanitize(text: &str, max_chars: usize) -> String {
    // Printable ASCII whose spaces are single and inside (peer names, request ids, most command lines) has nothing
    // to remove, collapse or escape: it is only cut. Spares the escape parser on every served call.
    if is_plain(text) {
        return match text.get(..max_chars) {
            Some(kept) if kept.len() < text.len() => format!("{kept}…"),
            _ => text.to_owned(),
        };
    }
    sanitize_any(text, max_chars)
}

/// Printable ASCII, with no space leading, trailing or beside another: what [`sanitize`] leaves as it is.
fn is_plain(text: &str) -> bool {
    let bytes = text.as_bytes();
    let edges = |b: Option<&u8>| b.is_none_or(|b| *b != b' ');
    edges(bytes.first())
        && edges(bytes.last())
        && bytes.iter().all(|b| b.is_ascii_graphic() || *b == b' ')
        && !bytes.windows(2).any(|w| w == b"  ")
}

/// [`sanitize`] for any text: escape sequences parsed out, then every character judged.
fn sanitize_any(text: &str, max_chars: usize) -> String {
    let stripped = strip_ansi_escapes::strip_str(separate_controls(text));
    let mut out = String::with_capacity(stripped.len().min(max_chars.saturating_mul(4)));
    let mut count = 0;
    let mut pending_space = false;
    for c in stripped.chars() {
        // C0, DEL and C1 controls (U+009B is an 8-bit CSI some terminals honour) become spaces.
        let c = if c.is_control() { ' ' } else { c };
        if c.is_whitespace() {
            pending_space = count > 0;
            continue;
        }
        if pending_space {
            if count == max_chars {
                out.push('…');
                return out;
            }
            out.push(' ');
            count += 1;
            pending_space = false;
        }
        // An escape is ASCII, so its byte length is its character count; it is kept or cut whole.
        let escaped = is_invisible(c).then(|| escape(c));
        let width = escaped.as_ref().map_or(1, String::len);
        if count + width > max_chars {
            out.push('…');
            return out;
        }
        match escaped {
            Some(e) => out.push_str(&e),
            None => out.push(c),
        }
        count += width;
    }
    out
}

/// Show every invisible format character as a Rust-style escape such as `\u{202e}` (lowercase hex), leaving all
/// other text, line breaks and layout as they are (GATE-8).
///
/// "Invisible" is Unicode general category Cf (format), per the Unicode 16 tables of the
/// `unicode-general-category` crate: the bidirectional embeddings, overrides and isolates (U+202A..U+202E,
/// U+2066..U+2069) and marks (U+200E, U+200F, U+061C), zero-width characters (U+200B..U+200D, U+2060..U+2064,
/// U+FEFF), the soft hyphen U+00AD, U+180E, the tag characters (U+E0001, U+E0020..U+E007F) and the rest. They
/// change how a line reads (reordering it, hiding or joining characters) without being seen, so an operator could
/// approve something other than what they read. [`sanitize`] applies this too; use this alone for multi-line text
/// such as narration, after removing terminal escapes.
///
/// ```
/// use fisk_ai::gate::escape_invisible;
///
/// assert_eq!(escape_invisible("a\u{200b}b\nc\u{feff}"), "a\\u{200b}b\nc\\u{feff}");
/// assert_eq!(escape_invisible("plain"), "plain");
/// ```
pub fn escape_invisible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_invisible) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_invisible(c) {
            out.push_str(&escape(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Make text an imported tool brings with it (its description, its schema's descriptions, a server's
/// instructions) safe to hand to a model, keeping its layout: terminal escape sequences (CSI, OSC, DCS and the other
/// ESC- or C1-introduced sequences, payload included) are removed, every other C0 and C1 control and DEL is dropped
/// except newline and tab, and invisible format characters are shown as escapes (see [`escape_invisible`]).
/// Unlike [`sanitize`] nothing is collapsed or cut. Text with nothing to clean is returned borrowed.
///
/// ```
/// use fisk_ai::gate::clean_text;
///
/// assert_eq!(clean_text("List\tfiles\n\u{1b}]8;;http://evil\u{7}here\u{1b}]8;;\u{7}"), "List\tfiles\nhere");
/// assert_eq!(clean_text("a\u{1b}[2Jb\u{9b}31mc\u{85}d"), "abcd");
/// assert_eq!(clean_text("read \u{202e}txt"), "read \\u{202e}txt");
/// ```
pub fn clean_text(text: &str) -> Cow<'_, str> {
    let dirty = |c: char| (c.is_control() && c != '\n' && c != '\t') || is_invisible(c);
    if !text.chars().any(dirty) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut state = Seq::Text;
    for c in text.chars() {
        state = match state {
            Seq::Text => match c {
                '\u{1b}' => Seq::Escape,
                '\u{9b}' => Seq::Csi,
                // DCS, SOS, OSC, PM and APC: strings ended by ST (or BEL).
                '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => Seq::Str,
                '\n' | '\t' => {
                    out.push(c);
                    Seq::Text
                }
                c if c.is_control() => Seq::Text,
                c if is_invisible(c) => {
                    out.push_str(&escape(c));
                    Seq::Text
                }
                c => {
                    out.push(c);
                    Seq::Text
                }
            },
            Seq::Escape => match c {
                '[' => Seq::Csi,
                ']' | 'P' | 'X' | '^' | '_' => Seq::Str,
                // Intermediate bytes (ESC ( B and the like) take one more character.
                '\u{20}'..='\u{2f}' => Seq::Escape,
                _ => Seq::Text,
            },
            // Parameters and intermediates until the final byte (0x40..=0x7e); a control ends it too.
            Seq::Csi => match c {
                '\u{40}'..='\u{7e}' => Seq::Text,
                c if c.is_control() => Seq::Text,
                _ => Seq::Csi,
            },
            Seq::Str => match c {
                '\u{7}' | '\u{9c}' => Seq::Text,
                '\u{1b}' => Seq::StrEscape,
                _ => Seq::Str,
            },
            // ESC \\ is the string terminator; any other ESC inside the string is swallowed with it.
            Seq::StrEscape => match c {
                '\\' => Seq::Text,
                _ => Seq::Str,
            },
        };
    }
    Cow::Owned(out)
}

/// Where [`clean_text`] is: in text, or inside an escape sequence being removed.
#[derive(Clone, Copy)]
enum Seq {
    Text,
    Escape,
    Csi,
    Str,
    StrEscape,
}

/// Whether `c` is a format character (general category Cf).
fn is_invisible(c: char) -> bool {
    // ASCII is never Cf; skipping the lookup keeps the common case cheap.
    !c.is_ascii() && get_general_category(c) == GeneralCategory::Format
}

/// `\u{202e}`: the form Rust and JSON-minded readers recognise, unambiguous about which code point it was.
fn escape(c: char) -> String {
    format!("\\u{{{:x}}}", u32::from(c))
}

/// strip-ansi-escapes drops every control character except LF instead of leaving a gap, so `rm\t-rf` would read
/// `rm-rf`. Turn each control that is not part of escape syntax into LF, which it keeps and the whitespace collapse
/// then turns into one space. BEL, CAN and SUB also end (or cancel) sequences, so they stay, followed by an LF.
/// Inside an OSC or DCS string the added LF is ignored, so nothing of a payload leaks out.
fn separate_controls(text: &str) -> Cow<'_, str> {
    let is_gap = |c: char| c.is_control() && !matches!(c, '\u{1b}' | '\n' | '\u{7f}');
    if !text.chars().any(is_gap) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\u{7}' | '\u{18}' | '\u{1a}' => {
                out.push(c);
                out.push('\n');
            }
            c if is_gap(c) => out.push('\n'),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GATE-8: the shortcut for printable ASCII gives what the full path gives, cuts included, whatever the spaces.
    #[test]
    fn gate_8_printable_ascii_takes_the_shortcut_to_the_same_text() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..2000 {
            let len = (next() % 40) as usize;
            // One in eight a space, so single, double, leading and trailing spaces all occur.
            let text: String =
                (0..len).map(|_| if next() % 8 == 0 { ' ' } else { char::from(b'!' + (next() % 94) as u8) }).collect();
            for limit in 0..len + 3 {
                assert_eq!(super::sanitize(&text, limit), super::sanitize_any(&text, limit), "{text:?} at {limit}");
            }
        }
        assert_eq!(super::sanitize("abc", 2), "ab…");
        assert_eq!(super::sanitize("ab  c ", 9), "ab c");
        assert!(is_plain("a b") && !is_plain(" a") && !is_plain("a ") && !is_plain("a  b") && !is_plain("a\tb"));
    }

    #[test]
    fn gate_8_bidi_controls_are_shown_escaped() {
        // Embeddings and overrides U+202A..U+202E, isolates U+2066..U+2069, and the marks.
        for c in ('\u{202a}'..='\u{202e}').chain('\u{2066}'..='\u{2069}').chain(['\u{200e}', '\u{200f}', '\u{61c}']) {
            let shown = sanitize(&format!("rm {c}x"), PROMPT_LIMIT);
            assert_eq!(shown, format!("rm \\u{{{:x}}}x", u32::from(c)));
            assert!(!shown.contains(c), "{c:?} reached the operator");
        }
        assert_eq!(sanitize("cat \u{202e}txt.exe", 100), r"cat \u{202e}txt.exe");
    }

    #[test]
    fn gate_8_zero_width_and_other_format_characters_are_shown_escaped() {
        let cases = [
            ('\u{200b}', r"\u{200b}"),
            ('\u{200c}', r"\u{200c}"),
            ('\u{200d}', r"\u{200d}"),
            ('\u{2060}', r"\u{2060}"),
            ('\u{2064}', r"\u{2064}"),
            ('\u{feff}', r"\u{feff}"),
            ('\u{ad}', r"\u{ad}"),
            ('\u{180e}', r"\u{180e}"),
            ('\u{e0001}', r"\u{e0001}"),
            ('\u{e0041}', r"\u{e0041}"),
            ('\u{e007f}', r"\u{e007f}"),
            ('\u{fff9}', r"\u{fff9}"),
            ('\u{600}', r"\u{600}"),
        ];
        for (c, escaped) in cases {
            assert_eq!(sanitize(&format!("a{c}b"), 100), format!("a{escaped}b"), "{c:?}");
        }
    }

    #[test]
    fn gate_8_visible_text_is_untouched_by_the_escaping() {
        let text = "stream rm ORDERS --force 日本語 🦀 café";
        assert_eq!(sanitize(text, 100), text);
        assert_eq!(escape_invisible(text), text);
        assert!(matches!(escape_invisible(text), Cow::Borrowed(_)));
    }

    #[test]
    fn gate_8_an_escape_is_never_split_by_the_cut() {
        // "ab" + 8-character escape does not fit in 5: the escape is left out whole.
        assert_eq!(sanitize("ab\u{202e}cd", 5), "ab…");
        assert_eq!(sanitize("ab\u{202e}cd", 10), r"ab\u{202e}…");
        assert_eq!(sanitize("ab\u{202e}cd", 12), r"ab\u{202e}cd");
        let once = sanitize(&"\u{200b}x".repeat(500), PROMPT_LIMIT);
        assert!(once.chars().count() <= PROMPT_LIMIT + 1 && once.ends_with('…'), "{}", once.chars().count());
        assert_eq!(sanitize(&once, PROMPT_LIMIT), once, "sanitizing twice changes nothing");
    }

    #[test]
    fn gate_8_escaping_keeps_the_other_rules() {
        let hostile = "\u{1b}[31mrm\u{1b}[0m\n\t\u{202e}-rf\u{200b}  /tmp\u{7}";
        assert_eq!(sanitize(hostile, 100), r"rm \u{202e}-rf\u{200b} /tmp");
        // Layout-preserving form: only the format characters change.
        assert_eq!(escape_invisible("one\u{200b}\n  two\u{feff}"), "one\\u{200b}\n  two\\u{feff}");
    }

    #[test]
    fn clean_text_removes_sequences_and_controls_but_keeps_layout() {
        assert_eq!(clean_text("plain\n\ttext"), "plain\n\ttext");
        assert!(matches!(clean_text("plain\n\ttext"), Cow::Borrowed(_)));
        // CSI with parameters, OSC ended by BEL and by ST, DCS, a two-byte escape with an intermediate.
        let hostile = "a\u{1b}[1;31mb\u{1b}]0;title\u{7}c\u{1b}]8;;x\u{1b}\\d\u{1b}Pq#0\u{1b}\\e\u{1b}(Bf";
        assert_eq!(clean_text(hostile), "abcdef");
        // C1 forms, other C0 controls, DEL, carriage returns.
        assert_eq!(clean_text("a\u{9b}2Kb\u{9d}osc\u{9c}c\u{0}\u{8}\u{7f}\r\nd\u{85}"), "abc\nd");
        // Format characters are escaped, never dropped silently.
        assert_eq!(clean_text("x\u{200b}y\u{e0041}"), r"x\u{200b}y\u{e0041}");
        // An unterminated OSC swallows the rest: nothing of its payload reaches the model.
        assert_eq!(clean_text("ok\u{1b}]52;c;payload"), "ok");
        for s in ["\u{1b}", "\u{1b}[", "\u{9b}", "\u{1b}]", "\u{1b}]\u{1b}"] {
            assert_eq!(clean_text(s), "", "{s:?}");
        }
        let once = clean_text(hostile).into_owned();
        assert_eq!(clean_text(&once), once, "cleaning twice changes nothing");
    }
}
