//! The operator-facing form of an argument vector: each element that a reader could misread is POSIX-shell-quoted,
//! so element boundaries survive the join (`--note='x --dry-run'` is one element, `--note=x --dry-run` two).

use std::borrow::Cow;

/// Show `argv` as one line for an operator: elements joined by single spaces, each one that is empty or holds
/// anything but plain characters shown POSIX-shell-quoted (see [`quote_arg`]).
///
/// Plain lines read exactly as `argv.join(" ")`; only the operator-facing display changes. The `command` of an
/// EXEC-13 result stays the plain join.
///
/// ```
/// use fisk_ai::gate::display_argv;
///
/// let argv = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
/// assert_eq!(display_argv(&argv(&["cow", "say", "--name=daisy", "--", "moo"])), "cow say --name=daisy -- moo");
/// assert_eq!(display_argv(&argv(&["note", "--note=x --dry-run"])), "note --note='x --dry-run'");
/// assert_eq!(display_argv(&argv(&["note", "--note=x", "--dry-run"])), "note --note=x --dry-run");
/// ```
pub fn display_argv<S: AsRef<str>>(argv: &[S]) -> String {
    let mut out = String::new();
    for (i, arg) in argv.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&quote_arg(arg.as_ref()));
    }
    out
}

/// One argv element as a POSIX shell word that means exactly that element.
///
/// An element made only of plain characters (ASCII letters and digits, `@%+=:,./_-`, and non-ASCII letters and
/// digits) is shown as is. Any other element is single-quoted, an embedded `'` written `'\''`. An empty element
/// shows as `''` and an empty flag value as `--name=''` (though `--name=` means the same). For a long flag with a
/// value (`--name=value` with a plain `name`) only the value is quoted, so the flag name stays readable:
/// `--note='x --dry-run'`, `--note='it'\''s'`.
///
/// Quoting only groups characters: control and invisible characters inside a quoted value are still shown through
/// [`sanitize`](super::sanitize), which every display passes through before an operator sees it.
///
/// ```
/// use fisk_ai::gate::quote_arg;
///
/// assert_eq!(quote_arg("ORDERS"), "ORDERS");
/// assert_eq!(quote_arg(""), "''");
/// assert_eq!(quote_arg("two words"), "'two words'");
/// assert_eq!(quote_arg("--note=it's"), r"--note='it'\''s'");
/// assert_eq!(quote_arg("$(reboot)"), "'$(reboot)'");
/// ```
pub fn quote_arg(arg: &str) -> Cow<'_, str> {
    // `--name=` is a plain word, but `--name=''` says at a glance that the value is empty.
    if !arg.is_empty() && !arg.ends_with('=') && arg.chars().all(is_plain) {
        return Cow::Borrowed(arg);
    }
    if let Some((name, value)) = arg.strip_prefix("--").and_then(|rest| rest.split_once('='))
        && !name.is_empty()
        && name.chars().all(is_plain)
    {
        return Cow::Owned(format!("--{name}={}", single_quoted(value)));
    }
    Cow::Owned(single_quoted(arg))
}

/// `'text'`, each `'` inside closed, escaped and reopened.
fn single_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Characters no POSIX shell treats specially anywhere in a word, and which never hide or move text.
fn is_plain(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(c, '@' | '%' | '+' | '=' | ':' | ',' | '.' | '/' | '_' | '-')
        || (!c.is_ascii() && c.is_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(argv: &[&str]) -> String {
        display_argv(argv)
    }

    #[test]
    fn exec_6_plain_elements_read_as_the_plain_join() {
        let argv = ["cow", "say", "--name=daisy", "--eyes=o.O", "--", "moo", "a/b:c,d@e%f+g_h"];
        assert_eq!(shown(&argv), argv.join(" "));
        assert_eq!(shown(&["feed", "--food=日本語"]), "feed --food=日本語");
    }

    #[test]
    fn gate_8_a_flag_inside_a_value_is_told_apart_from_a_second_argument() {
        let one = shown(&["note", "--note=x --dry-run"]);
        let two = shown(&["note", "--note=x", "--dry-run"]);
        assert_eq!(one, "note --note='x --dry-run'");
        assert_eq!(two, "note --note=x --dry-run");
        assert_ne!(one, two);
        // The same for a positional that holds a flag.
        assert_eq!(shown(&["say", "--", "moo --force"]), "say -- 'moo --force'");
    }

    #[test]
    fn gate_8_empty_elements_and_values_are_visible() {
        assert_eq!(shown(&["say", "--name=", "--", ""]), "say --name='' -- ''");
        assert_ne!(shown(&["say", "--", "", "x"]), shown(&["say", "--", "x"]));
    }

    #[test]
    fn gate_8_single_quotes_are_closed_escaped_and_reopened() {
        assert_eq!(shown(&["say", "--note=it's", "--", "'"]), r"say --note='it'\''s' -- ''\'''");
    }

    #[test]
    fn gate_8_metacharacters_whitespace_and_invisible_characters_force_quoting() {
        for v in ["a;b", "a|b", "a&b", "$x", "`x`", "a*", "~", "#c", "a\"b", "a\\b", "a\nb", "a\tb", "(x)", "{x}", "!x"]
        {
            assert_eq!(quote_arg(v), format!("'{v}'"), "{v:?}");
        }
        for v in ["\u{1b}[31mred", "x\u{202e}y", "x\u{200b}y", "x\u{feff}", "nbsp\u{a0}x"] {
            assert_eq!(quote_arg(v), format!("'{v}'"), "{v:?}");
        }
        // A flag whose name is not plain is quoted whole.
        assert_eq!(quote_arg("--a b=c"), "'--a b=c'");
        assert_eq!(quote_arg("--=x y"), "'--=x y'");
        // An object flag entry quotes everything after the first `=`.
        assert_eq!(quote_arg("--label=k=v w"), "--label='k=v w'");
    }

    #[test]
    fn gate_8_quoted_then_sanitized_keeps_boundaries_and_shows_hostile_characters() {
        use crate::gate::{PROMPT_LIMIT, sanitize};
        let argv = ["note", "--note=x\u{202e} --dry-run", "--tag=\u{1b}[31mred\u{1b}[0m\nz", "--", "\u{200b}"];
        assert_eq!(
            sanitize(&display_argv(&argv), PROMPT_LIMIT),
            r"note --note='x\u{202e} --dry-run' --tag='red z' -- '\u{200b}'"
        );
    }
}
