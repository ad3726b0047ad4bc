/// The longest text shown in an approval prompt (GATE-8).
pub const PROMPT_LIMIT: usize = 2000;

/// Make model-influenced text safe to show an operator (GATE-8): terminal escape sequences (CSI, OSC and any other
/// ESC-introduced sequence) removed, remaining control characters replaced by spaces, whitespace runs collapsed to
/// one space, and the result cut to `max_chars` characters with `…` appended when cut. Escapes go before the cut.
///
/// ```
/// use fisk_ai::gate::sanitize;
///
/// assert_eq!(sanitize("rm \u{1b}[31m-rf\u{1b}[0m\n\t/tmp\u{7}", 100), "rm -rf /tmp");
/// assert_eq!(sanitize("abcdef", 3), "abc…");
/// ```
pub fn sanitize(text: &str, max_chars: usize) -> String {
    let stripped = strip_ansi_escapes::strip_str(separate_controls(text));
    let mut out = String::with_capacity(stripped.len().min(max_chars * 4));
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
        if count == max_chars {
            out.push('…');
            return out;
        }
        out.push(c);
        count += 1;
    }
    out
}

/// strip-ansi-escapes drops every control character except LF instead of leaving a gap, so `rm\t-rf` would read
/// `rm-rf`. Turn each control that is not part of escape syntax into LF, which it keeps and the whitespace collapse
/// then turns into one space. BEL, CAN and SUB also end (or cancel) sequences, so they stay, followed by an LF.
/// Inside an OSC or DCS string the added LF is ignored, so nothing of a payload leaks out.
fn separate_controls(text: &str) -> std::borrow::Cow<'_, str> {
    let is_gap = |c: char| c.is_control() && !matches!(c, '\u{1b}' | '\n' | '\u{7f}');
    if !text.chars().any(is_gap) {
        return std::borrow::Cow::Borrowed(text);
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
    std::borrow::Cow::Owned(out)
}
