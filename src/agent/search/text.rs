//! The words `search_tools` indexes and matches: one analysis for tool text and queries alike, so the two meet.
//!
//! CLI trees make tool names long and alike (`stream_info` against `consumer_info`) and their descriptions short,
//! so every word counts: names split at `_`, `-` and case changes, words lose their inflection (a light suffix
//! stemmer: `streams` finds `stream`, `deleting` finds `delete`), filler words are dropped, and the common CLI
//! abbreviations in a command's name (`rm`, `ls`) also index the words they stand for.

/// Words too common in requests to tell tools apart; dropped from queries and documents alike.
const STOP: [&str; 40] = [
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "have", "how", "i", "in",
    "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "please", "so", "that", "the", "their", "then",
    "there", "this", "to", "we", "what", "with", "you",
];

/// CLI abbreviations and verbs in command names, with the plain words a request uses for them. Only names are
/// expanded: a request saying `remove` then finds a command named `rm`.
const NAME_WORDS: [(&str, &str); 31] = [
    ("rm", "remove delete"),
    ("del", "delete remove"),
    ("ls", "list"),
    ("mv", "move rename"),
    ("cp", "copy duplicate clone"),
    ("copy", "duplicate clone"),
    ("gen", "generate"),
    ("add", "create new make"),
    ("edit", "change modify update"),
    ("info", "information details status"),
    ("config", "configuration"),
    ("pub", "publish send"),
    ("sub", "subscribe listen"),
    ("kv", "key value"),
    ("mem", "memory"),
    ("passwd", "password"),
    ("stats", "statistics"),
    // Verbs a request says in other words.
    ("view", "browse"),
    ("purge", "wipe clear empty"),
    ("backup", "back save"),
    ("restore", "recover"),
    ("resume", "unpause continue"),
    ("pause", "suspend"),
    ("increment", "increase"),
    ("decrement", "decrease"),
    ("seal", "lock readonly"),
    ("select", "switch choose"),
    ("find", "search locate"),
    ("report", "summary overview table"),
    ("graph", "chart plot"),
    ("ping", "reachable alive"),
];

/// Append the analysed words of `text` to `out`.
pub(super) fn words_into(text: &str, out: &mut Vec<String>) {
    for raw in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        for part in split_case(raw) {
            let lower = part.to_lowercase();
            if !STOP.contains(&lower.as_str()) {
                out.push(stem(&lower));
            }
        }
    }
}

/// Append the analysed words of a request to `out`: as [`words_into`], except that a word written in capitals
/// (three letters or more: `ORDERS`, `WORKER`) is taken for what it almost always is in a request to a CLI, the
/// name of a resource, and left out. A name says which stream, not which command: kept, `ORDERS` finds the
/// `ordered` of an unrelated command's path.
pub(super) fn query_words_into(text: &str, out: &mut Vec<String>) {
    for raw in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        if !is_resource_name(raw) {
            words_into(raw, out);
        }
    }
}

/// `ORDERS`, `LOGS2`: three letters or more, every letter a capital.
fn is_resource_name(word: &str) -> bool {
    word.chars().filter(|c| c.is_alphabetic()).count() >= 3 && !word.chars().any(char::is_lowercase)
}

/// The analysed words of a command name or path, each followed by the words its abbreviation stands for.
pub(super) fn name_words_into(name: &str, out: &mut Vec<String>) {
    let mut own = Vec::new();
    words_into(name, &mut own);
    for w in own {
        let expansion = NAME_WORDS.iter().find(|(abbr, _)| stem(abbr) == w).map(|(_, words)| *words);
        out.push(w);
        if let Some(words) = expansion {
            words_into(words, out);
        }
    }
}

/// `streamInfo` is `stream` and `Info`; `HTTPServer` is `HTTP` and `Server`; an all-lower or all-upper word stays
/// whole.
fn split_case(word: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut parts = Vec::new();
    let mut start = 0;
    for i in 1..chars.len() {
        let (at, c) = chars[i];
        let prev = chars[i - 1].1;
        let next_lower = chars.get(i + 1).is_some_and(|(_, n)| n.is_lowercase());
        if c.is_uppercase() && (prev.is_lowercase() || (prev.is_uppercase() && next_lower)) {
            parts.push(&word[start..at]);
            start = at;
        }
    }
    parts.push(&word[start..]);
    parts
}

/// A light suffix stemmer for English: plurals, `-ing`, `-ed` and a final `e` (`creates`, `creating`, `created`
/// and `create` all become `creat`). Short words and numbers are left alone; it only has to map a word's forms to
/// one key, not to a real word.
pub(super) fn stem(word: &str) -> String {
    if word.len() <= 3 || !word.is_ascii() || word.bytes().any(|b| b.is_ascii_digit()) {
        return word.to_owned();
    }
    let mut w = word.to_owned();
    if let Some(base) = w.strip_suffix("ies").filter(|b| b.len() >= 2) {
        w = format!("{base}y");
    } else if w.ends_with("sses") || w.ends_with("xes") || w.ends_with("ches") || w.ends_with("shes") {
        w.truncate(w.len() - 2);
    } else if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        w.pop();
    }
    for suffix in ["ing", "ed"] {
        if let Some(base) = w.strip_suffix(suffix).filter(|b| b.len() >= 3 && b.bytes().any(is_vowel)) {
            w = undouble(base);
            break;
        }
    }
    if w.len() > 3 && w.ends_with('e') {
        w.pop();
    }
    w
}

fn is_vowel(b: u8) -> bool {
    matches!(b, b'a' | b'e' | b'i' | b'o' | b'u' | b'y')
}

/// `mapp` (from `mapping`) is `map`; `pull` and `pass` keep their double letter.
fn undouble(base: &str) -> String {
    let b = base.as_bytes();
    let n = b.len();
    if n >= 2 && b[n - 1] == b[n - 2] && !matches!(b[n - 1], b'l' | b's' | b'z') && !is_vowel(b[n - 1]) {
        base[..n - 1].to_owned()
    } else {
        base.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        words_into(text, &mut out);
        out
    }

    #[test]
    fn searchq_3_forms_of_a_word_share_a_stem() {
        for group in [
            &["create", "creates", "creating", "created"][..],
            &["stream", "streams"],
            &["delete", "deleted", "deleting"],
            &["subscribe", "subscribing", "subscribed"],
            &["mapping", "mappings"],
            &["key", "keys"],
            &["entry", "entries"],
        ] {
            let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
            assert!(stems.iter().all(|s| *s == stems[0]), "{group:?} -> {stems:?}");
        }
        assert_eq!(stem("ls"), "ls");
        assert_eq!(stem("pull"), "pull");
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("10059"), "10059");
    }

    #[test]
    fn searchq_4_names_split_at_underscores_dashes_and_case_and_drop_filler() {
        assert_eq!(words("stream_cluster_step-down"), ["stream", "cluster", "step", "down"]);
        assert_eq!(words("consumerInfo HTTPServer"), ["consumer", "info", "http", "server"]);
        assert_eq!(words("Show the state of a stream"), ["show", "stat", "stream"]);
    }

    #[test]
    fn searchq_8_a_request_word_in_capitals_is_a_resource_name_and_left_out() {
        let mut out = Vec::new();
        query_words_into("purge stream ORDERS into ORDERS_COPY via KV and LOGS2", &mut out);
        assert_eq!(out, ["purg", "stream", "via", "kv"]);
        // Documents keep their capitals: a description's `JSON` is a word.
        assert_eq!(words("Print JSON"), ["print", "json"]);
    }

    #[test]
    fn searchq_5_cli_abbreviations_in_names_also_index_their_words() {
        let mut out = Vec::new();
        name_words_into("stream_rm", &mut out);
        assert_eq!(out, ["stream", "rm", "remov", "delet"]);
        let mut out = Vec::new();
        name_words_into("stream_purge", &mut out);
        assert_eq!(out, ["stream", "purg", "wip", "clear", "empty"]);
        // A request's own words are never expanded.
        assert_eq!(words("rm"), ["rm"]);
    }
}
