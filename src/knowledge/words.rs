//! Words as the lexical index sees them: SQLite FTS5's `unicode61` rules (runs of letters, digits and private-use
//! characters; case folded; Latin diacritics removed) followed by its `porter` stemmer, so a passage indexed here
//! splits and stems as it did under the FTS5 table this index replaced.

use super::porter;
use unicode_general_category::{GeneralCategory as G, get_general_category};

/// The most words of a query searched; the rest are dropped.
pub(crate) const MAX_QUERY_WORDS: usize = 64;

/// English function words left out of a query (unless it has nothing else): they match nearly every passage, so
/// keeping them makes BM25 score the whole index for almost no change in the ranking.
pub(crate) const STOP_WORDS: &[&str] = &[
    "a", "about", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did", "do",
    "does", "for", "from", "get", "got", "had", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me",
    "my", "of", "on", "or", "our", "should", "so", "some", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "those", "to", "up", "us", "was", "we", "were", "what", "when", "where", "which", "while",
    "who", "why", "will", "with", "would", "you", "your",
];

/// A token character in `unicode61`'s default set: letters, numbers and private use (`L* N* Co`).
fn is_token_char(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric();
    }
    matches!(
        get_general_category(c),
        G::UppercaseLetter
            | G::LowercaseLetter
            | G::TitlecaseLetter
            | G::ModifierLetter
            | G::OtherLetter
            | G::DecimalNumber
            | G::LetterNumber
            | G::OtherNumber
            | G::PrivateUse
    )
}

/// A combining diacritic: inside a word it is dropped, as `unicode61` with `remove_diacritics` does.
fn is_diacritic(c: char) -> bool {
    ('\u{300}'..='\u{36f}').contains(&c)
}

/// The letter a lower-case Latin-1 or Latin Extended-A letter is written with, diacritic removed.
fn base_letter(c: char) -> char {
    match c {
        'à'..='å' | 'ā' | 'ă' | 'ą' => 'a',
        'ç' | 'ć' | 'ĉ' | 'ċ' | 'č' => 'c',
        'ď' => 'd',
        'è'..='ë' | 'ē' | 'ĕ' | 'ė' | 'ę' | 'ě' => 'e',
        'ĝ' | 'ğ' | 'ġ' | 'ģ' => 'g',
        'ĥ' => 'h',
        'ì'..='ï' | 'ĩ' | 'ī' | 'ĭ' | 'į' => 'i',
        'ĵ' => 'j',
        'ķ' => 'k',
        'ĺ' | 'ļ' | 'ľ' => 'l',
        'ñ' | 'ń' | 'ņ' | 'ň' => 'n',
        'ò'..='ö' | 'ō' | 'ŏ' | 'ő' => 'o',
        'ŕ' | 'ŗ' | 'ř' => 'r',
        'ś' | 'ŝ' | 'ş' | 'š' => 's',
        'ţ' | 'ť' => 't',
        'ù'..='ü' | 'ũ' | 'ū' | 'ŭ' | 'ů' | 'ű' | 'ų' => 'u',
        'ŵ' => 'w',
        'ý' | 'ÿ' | 'ŷ' => 'y',
        'ź' | 'ż' | 'ž' => 'z',
        c => c,
    }
}

/// Append `c`, folded, to `out`.
fn push_folded(out: &mut Vec<u8>, c: char) {
    if c.is_ascii() {
        out.push(c.to_ascii_lowercase() as u8);
        return;
    }
    // A letter whose lower case is several characters (`İ`) keeps its first; the rest is a combining mark.
    let lower = c.to_lowercase().next().unwrap_or(c);
    let mut buf = [0u8; 4];
    out.extend_from_slice(base_letter(lower).encode_utf8(&mut buf).as_bytes());
}

/// Call `each` with every folded, unstemmed word of `text`, in order. The buffer is reused between calls.
pub(crate) fn each_folded(text: &str, mut each: impl FnMut(&mut Vec<u8>)) {
    let mut word = Vec::with_capacity(32);
    for c in text.chars() {
        if is_token_char(c) {
            push_folded(&mut word, c);
        } else if is_diacritic(c) && !word.is_empty() {
            // Dropped; the word goes on.
        } else if !word.is_empty() {
            each(&mut word);
            word.clear();
        }
    }
    if !word.is_empty() {
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

/// The terms a natural-language query searches for (KNOW-2): its distinct words, function words left out when
/// anything else remains, at most [`MAX_QUERY_WORDS`], each stemmed. Two words that stem alike stay two terms, as
/// two FTS5 phrases did. Nothing in the text is an operator.
pub(crate) fn query_terms(text: &str) -> Vec<Vec<u8>> {
    let mut words: Vec<Vec<u8>> = Vec::new();
    each_folded(text, |w| {
        if words.len() < MAX_QUERY_WORDS && !words.contains(w) {
            words.push(w.clone());
        }
    });
    let stop = |w: &Vec<u8>| std::str::from_utf8(w).is_ok_and(|s| STOP_WORDS.contains(&s));
    if words.iter().any(|w| !stop(w)) {
        words.retain(|w| !stop(w));
    }
    for w in &mut words {
        porter::stem(w);
    }
    words
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
        // A combining accent continues the word and is dropped.
        assert_eq!(terms("cafe\u{301} x"), ["cafe", "x"]);
        assert_eq!(terms("日本語 テキスト"), ["日本語", "テキスト"]);
        assert_eq!(terms("a_b\u{2014}c"), ["a", "b", "c"]);
    }

    #[test]
    fn query_terms_drop_function_words_and_duplicates() {
        let show = |q: &str| query_terms(q).into_iter().map(|t| String::from_utf8(t).unwrap()).collect::<Vec<_>>();
        assert_eq!(show("How do I restart it? restart!"), ["restart"]);
        assert_eq!(show("what is it"), ["what", "is", "it"]);
        assert_eq!(show("title: NEAR(a* b2"), ["titl", "near", "b2"]);
        assert_eq!(show("streams stream"), ["stream", "stream"]);
        assert!(show("?!").is_empty());
        let many: String = (0..100).map(|i| format!("w{i} ")).collect();
        assert_eq!(query_terms(&many).len(), MAX_QUERY_WORDS);
    }
}
