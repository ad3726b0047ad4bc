//! Words as the lexical index sees them: SQLite FTS5's `unicode61` rules (runs of word characters by SQLite's own
//! category table, folded by its case-folding and diacritic tables: `categories`, `fold`) followed by its `porter`
//! stemmer, so a passage indexed here splits and stems exactly as it did under the FTS5 table this index replaced.

use super::{categories, fold, porter};

/// The most words of a query searched; the rest are dropped.
const MAX_QUERY_WORDS: usize = 64;

/// English function words left out of a query (unless it has nothing else): they match nearly every passage, so
/// keeping them makes BM25 score the whole index for almost no change in the ranking.
const STOP_WORDS: &[&str] = &[
    "a", "about", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did", "do",
    "does", "for", "from", "get", "got", "had", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me",
    "my", "of", "on", "or", "our", "should", "so", "some", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "those", "to", "up", "us", "was", "we", "were", "what", "when", "where", "which", "while",
    "who", "why", "will", "with", "would", "you", "your",
];

/// A word character for `unicode61`: ASCII letters and digits, and beyond ASCII SQLite's own category table.
fn is_token_char(c: char) -> bool {
    if c.is_ascii() { c.is_ascii_alphanumeric() } else { categories::is_token_char(c) }
}

/// FTS5's `FTS5_MAX_TOKEN_SIZE`: longer words are cut to this many bytes, in passages and queries alike.
const MAX_TOKEN_BYTES: usize = 32768;

/// Append `c`, folded, to `out`; a character that folds to nothing (a combining mark) is dropped.
fn push_folded(out: &mut Vec<u8>, c: char) {
    if c.is_ascii() {
        out.push(c.to_ascii_lowercase() as u8);
        return;
    }
    if let Some(f) = char::from_u32(fold::fold(c as u32)).filter(|f| *f != '\0') {
        let mut buf = [0u8; 4];
        out.extend_from_slice(f.encode_utf8(&mut buf).as_bytes());
    }
}

/// Call `each` with every folded, unstemmed word of `text`, in order. The buffer is reused between calls.
pub(crate) fn each_folded(text: &str, mut each: impl FnMut(&mut Vec<u8>)) {
    let mut word = Vec::with_capacity(32);
    let mut within = false;
    for c in text.chars() {
        // SQLite's UTF-8 reader takes the noncharacters U+FFFE and U+FFFF as U+FFFD, a separator.
        let c = if matches!(c, '\u{fffe}' | '\u{ffff}') { '\u{fffd}' } else { c };
        // A combining mark continues a word (and folds to nothing); it never starts one.
        if is_token_char(c) || (within && fold::is_diacritic(c as u32)) {
            push_folded(&mut word, c);
            within = true;
        } else if within {
            word.truncate(MAX_TOKEN_BYTES);
            each(&mut word);
            word.clear();
            within = false;
        }
    }
    if within {
        word.truncate(MAX_TOKEN_BYTES);
        each(&mut word);
    }
}

/// Call `each` with every term (folded and stemmed) of `text`, in order.
pub(crate) fn each_term(text: &str, mut each: impl FnMut(&[u8])) {
    each_folded(text, |w| {
        porter::stem(w);
        each(w);
    });
}

/// The words of a query, as the FTS5 phrases were made (KNOW-2): split where letters and digits end, lower-cased,
/// distinct, at most [`MAX_QUERY_WORDS`], function words left out when anything else remains. Nothing in the text
/// is an operator.
pub(crate) fn query_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for w in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let w = w.to_lowercase();
        if !words.contains(&w) {
            words.push(w);
        }
        if words.len() == MAX_QUERY_WORDS {
            break;
        }
    }
    if words.iter().any(|w| !STOP_WORDS.contains(&w.as_str())) {
        words.retain(|w| !STOP_WORDS.contains(&w.as_str()));
    }
    words
}

/// The terms a query searches for: each of its [`query_words`] split, folded and stemmed as passages are, at most
/// [`MAX_QUERY_WORDS`] in all. Two words that fold or stem alike stay two terms, as two FTS5 phrases did. A word
/// the tokenizer splits further (a mark that is not a letter inside it) was a phrase in FTS5; here its pieces
/// count on their own, and count toward the bound, so a query of such words cannot read more postings.
pub(crate) fn query_terms(text: &str) -> Vec<Vec<u8>> {
    let mut terms = Vec::new();
    for w in query_words(text) {
        each_term(&w, |t| {
            if terms.len() < MAX_QUERY_WORDS {
                terms.push(t.to_vec());
            }
        });
    }
    terms
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        each_term(text, |t| out.push(String::from_utf8_lossy(t).into_owned()));
        out
    }

    #[test]
    fn words_split_fold_and_stem() {
        assert_eq!(terms("Restarting the NATS-server's streams"), ["restart", "the", "nat", "server", "s", "stream"]);
        assert_eq!(terms("Café naïve ÉCOLE"), ["cafe", "naiv", "ecol"]);
        assert_eq!(terms("ΟΔΟΣ"), ["οδοσ"]);
        let long = "x".repeat(40_000);
        assert_eq!(terms(&long), ["x".repeat(MAX_TOKEN_BYTES)]);
        // A combining accent continues the word and is dropped.
        assert_eq!(terms("cafe\u{301} x"), ["cafe", "x"]);
        assert_eq!(terms("日本語 テキスト"), ["日本語", "テキスト"]);
        assert_eq!(terms("a_b\u{2014}c"), ["a", "b", "c"]);
    }

    /// Every character of the Basic Multilingual Plane (and every 17th beyond it), alone and after a letter, splits
    /// and folds here as a real FTS5 `unicode61` table splits and folds it (read back through `fts5vocab`).
    #[test]
    fn every_bmp_character_splits_and_folds_as_fts5_unicode61() {
        let db = rusqlite::Connection::open_in_memory().unwrap();
        db.execute_batch(
            "CREATE VIRTUAL TABLE t USING fts5(x, tokenize = 'unicode61');
             CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance');",
        )
        .unwrap();
        let beyond = (0x10000u32..0x110000).step_by(17);
        let chars: Vec<char> = (0x80u32..0x10000).chain(beyond).filter_map(char::from_u32).collect();
        let tx = db.unchecked_transaction().unwrap();
        for c in &chars {
            let text = format!("{c} q{c}");
            tx.execute("INSERT INTO t (rowid, x) VALUES (?1, ?2)", rusqlite::params![*c as i64, text]).unwrap();
        }
        tx.commit().unwrap();
        let mut want: std::collections::HashMap<i64, Vec<(i64, Vec<u8>)>> = Default::default();
        let mut stmt = db.prepare("SELECT doc, offset, CAST(term AS BLOB) FROM v ORDER BY doc, offset").unwrap();
        let mut rows = stmt.query([]).unwrap();
        while let Some(r) = rows.next().unwrap() {
            want.entry(r.get(0).unwrap()).or_default().push((r.get(1).unwrap(), r.get(2).unwrap()));
        }
        let mut differ = Vec::new();
        for c in &chars {
            let mut got = Vec::new();
            each_folded(&format!("{c} q{c}"), |w| got.push(w.clone()));
            let fts: Vec<Vec<u8>> = want.remove(&(*c as i64)).unwrap_or_default().into_iter().map(|(_, t)| t).collect();
            if got != fts {
                differ.push(*c);
            }
        }
        assert!(
            differ.is_empty(),
            "{} of {} differ, e.g. {:?}",
            differ.len(),
            chars.len(),
            &differ[..differ.len().min(20)]
        );
    }

    #[test]
    fn query_terms_drop_function_words_and_duplicates() {
        let show = |q: &str| query_terms(q).into_iter().map(|t| String::from_utf8(t).unwrap()).collect::<Vec<_>>();
        assert_eq!(show("How do I restart it? restart!"), ["restart"]);
        assert_eq!(show("what is it"), ["what", "is", "it"]);
        assert_eq!(show("title: NEAR(a* b2"), ["titl", "near", "b2"]);
        assert_eq!(show("streams stream"), ["stream", "stream"]);
        assert_eq!(show("Café cafe"), ["cafe", "cafe"]);
        assert!(show("?!").is_empty());
        let many: String = (0..100).map(|i| format!("w{i} ")).collect();
        assert_eq!(query_terms(&many).len(), MAX_QUERY_WORDS);
        // One "word" to Rust (a Devanagari vowel sign is alphabetic) that unicode61 cuts at every sign.
        assert_eq!(query_words(&"कि".repeat(500)).len(), 1);
        assert_eq!(query_terms(&"कि".repeat(500)).len(), MAX_QUERY_WORDS);
    }
}
