//! The Porter stemmer exactly as SQLite's FTS5 `porter` tokenizer applies it (`fts5PorterCb` in `fts5_tokenize.c`),
//! so the lexical index stems as the FTS5 one it replaced did: tokens of 3 to 64 bytes, stemmed byte by byte (ported
//! from SQLite, which is in the public domain).
//! Bytes outside ASCII count as consonants, as there.

/// FTS5's `FTS5_PORTER_MAX_TOKEN`: longer tokens pass through unstemmed.
const MAX_TOKEN: usize = 64;

/// Stem `token` (already folded to lower case) in place.
pub(crate) fn stem(token: &mut Vec<u8>) {
    if token.len() < 3 || token.len() > MAX_TOKEN {
        return;
    }
    step_1a(token);
    if step_1b(token) && !step_1b2(token) {
        let n = token.len();
        let c = token[n - 1];
        if !is_vowel(c, false) && !matches!(c, b'l' | b's' | b'z') && c == token[n - 2] {
            token.pop();
        } else if m_eq1(token) && o_star(token) {
            token.push(b'e');
        }
    }
    // Step 1c.
    let n = token.len();
    if token[n - 1] == b'y' && has_vowel(&token[..n - 1]) {
        token[n - 1] = b'i';
    }
    replace(token, STEP_2, m_gt0);
    replace(token, STEP_3, m_gt0);
    step_4(token);
    // Step 5a.
    let n = token.len();
    if token[n - 1] == b'e' {
        let stem = &token[..n - 1];
        if m_gt1(stem) || (m_eq1(stem) && !o_star(stem)) {
            token.pop();
        }
    }
    // Step 5b.
    let n = token.len();
    if n > 1 && token[n - 1] == b'l' && token[n - 2] == b'l' && m_gt1(&token[..n - 1]) {
        token.pop();
    }
}

fn is_vowel(c: u8, y_is_vowel: bool) -> bool {
    matches!(c, b'a' | b'e' | b'i' | b'o' | b'u') || (y_is_vowel && c == b'y')
}

/// `fts5PorterGobbleVC`: the length of the first vowel-consonant sequence, or 0 when there is none.
fn gobble_vc(stem: &[u8], prev_consonant: bool) -> usize {
    let mut consonant = prev_consonant;
    let mut i = 0;
    while i < stem.len() {
        consonant = !is_vowel(stem[i], consonant);
        if !consonant {
            break;
        }
        i += 1;
    }
    i += 1;
    while i < stem.len() {
        consonant = !is_vowel(stem[i], consonant);
        if consonant {
            return i + 1;
        }
        i += 1;
    }
    0
}

fn m_gt0(stem: &[u8]) -> bool {
    gobble_vc(stem, false) != 0
}

fn m_gt1(stem: &[u8]) -> bool {
    let n = gobble_vc(stem, false);
    n != 0 && gobble_vc(&stem[n..], true) != 0
}

fn m_eq1(stem: &[u8]) -> bool {
    let n = gobble_vc(stem, false);
    n != 0 && gobble_vc(&stem[n..], true) == 0
}

/// `*o`: the stem ends consonant-vowel-consonant, the last not `w`, `x` or `y`.
fn o_star(stem: &[u8]) -> bool {
    let Some(&last) = stem.last() else { return false };
    if matches!(last, b'w' | b'x' | b'y') {
        return false;
    }
    let mut mask = 0u8;
    let mut consonant = false;
    for &c in stem {
        consonant = !is_vowel(c, consonant);
        mask = ((mask << 1) + u8::from(consonant)) & 0x07;
    }
    mask == 0x05
}

fn has_vowel(stem: &[u8]) -> bool {
    stem.iter().enumerate().any(|(i, &c)| is_vowel(c, i > 0))
}

fn m_gt1_and_s_or_t(stem: &[u8]) -> bool {
    matches!(stem.last(), Some(b's' | b't')) && m_gt1(stem)
}

fn step_1a(t: &mut Vec<u8>) {
    let n = t.len();
    if t[n - 1] != b's' {
        return;
    }
    if t[n - 2] == b'e' {
        let sses = n > 4 && t[n - 4] == b's' && t[n - 3] == b's';
        let ies = n > 3 && t[n - 3] == b'i';
        t.truncate(if sses || ies { n - 2 } else { n - 1 });
    } else if t[n - 2] != b's' {
        t.truncate(n - 1);
    }
}

/// Step 1b's first part; true when `-ed` or `-ing` came off.
fn step_1b(t: &mut Vec<u8>) -> bool {
    let n = t.len();
    if n > 3 && t.ends_with(b"eed") {
        if m_gt0(&t[..n - 3]) {
            t.truncate(n - 1);
        }
        false
    } else if n > 2 && t.ends_with(b"ed") && has_vowel(&t[..n - 2]) {
        t.truncate(n - 2);
        true
    } else if n > 3 && t.ends_with(b"ing") && has_vowel(&t[..n - 3]) {
        t.truncate(n - 3);
        true
    } else {
        false
    }
}

/// `at` -> `ate`, `bl` -> `ble`, `iz` -> `ize`; true when one applied.
fn step_1b2(t: &mut Vec<u8>) -> bool {
    let n = t.len();
    for suffix in [&b"at"[..], b"bl", b"iz"] {
        if n > 2 && t.ends_with(suffix) {
            t.push(b'e');
            return true;
        }
    }
    false
}

/// Suffix, replacement. In FTS5 the rules are grouped by the suffix's second-to-last letter and only the first
/// suffix that matches in a group is tried; no two suffixes here share an ending, so the order within a group is
/// kept as FTS5 lists it and the first match across the table is the same rule.
type Rule = (&'static [u8], &'static [u8]);

const STEP_2: &[Rule] = &[
    (b"ational", b"ate"),
    (b"tional", b"tion"),
    (b"enci", b"ence"),
    (b"anci", b"ance"),
    (b"izer", b"ize"),
    (b"logi", b"log"),
    (b"bli", b"ble"),
    (b"alli", b"al"),
    (b"entli", b"ent"),
    (b"eli", b"e"),
    (b"ousli", b"ous"),
    (b"ization", b"ize"),
    (b"ation", b"ate"),
    (b"ator", b"ate"),
    (b"alism", b"al"),
    (b"iveness", b"ive"),
    (b"fulness", b"ful"),
    (b"ousness", b"ous"),
    (b"aliti", b"al"),
    (b"iviti", b"ive"),
    (b"biliti", b"ble"),
];

const STEP_3: &[Rule] = &[
    (b"ical", b"ic"),
    (b"ness", b""),
    (b"icate", b"ic"),
    (b"iciti", b"ic"),
    (b"ful", b""),
    (b"ative", b""),
    (b"alize", b"al"),
];

const STEP_4: &[&[u8]] = &[
    b"al", b"ance", b"ence", b"er", b"ic", b"able", b"ible", b"ant", b"ement", b"ment", b"ent", b"ion", b"ou", b"ism",
    b"ate", b"iti", b"ous", b"ive", b"ize",
];

/// The first rule whose suffix the token ends with (longer than the suffix) decides: its replacement is made if
/// the condition holds of the stem, and nothing else is tried either way.
fn replace(t: &mut Vec<u8>, rules: &[Rule], condition: fn(&[u8]) -> bool) {
    let n = t.len();
    let Some((suffix, with)) = rules.iter().find(|(s, _)| n > s.len() && t.ends_with(s)) else { return };
    let stem = n - suffix.len();
    if condition(&t[..stem]) {
        t.truncate(stem);
        t.extend_from_slice(with);
    }
}

fn step_4(t: &mut Vec<u8>) {
    let n = t.len();
    let Some(suffix) = STEP_4.iter().find(|s| n > s.len() && t.ends_with(s)) else { return };
    let stem = n - suffix.len();
    let ok = if *suffix == b"ion" { m_gt1_and_s_or_t(&t[..stem]) } else { m_gt1(&t[..stem]) };
    if ok {
        t.truncate(stem);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stemmed(word: &str) -> String {
        let mut t = word.as_bytes().to_vec();
        stem(&mut t);
        String::from_utf8(t).unwrap()
    }

    /// Porter's own examples (M.F. Porter, "An algorithm for suffix stripping", 1980), step by step.
    #[test]
    fn porter_paper_examples() {
        for (word, want) in [
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("ties", "ti"),
            ("caress", "caress"),
            ("cats", "cat"),
            ("feed", "feed"),
            ("agreed", "agre"),
            ("plastered", "plaster"),
            ("bled", "bled"),
            ("motoring", "motor"),
            ("sing", "sing"),
            ("conflated", "conflat"),
            ("troubled", "troubl"),
            ("sized", "size"),
            ("hopping", "hop"),
            ("tanned", "tan"),
            ("falling", "fall"),
            ("hissing", "hiss"),
            ("fizzed", "fizz"),
            ("failing", "fail"),
            ("filing", "file"),
            ("happy", "happi"),
            ("relational", "relat"),
            ("conditional", "condit"),
            ("valenci", "valenc"),
            ("digitizer", "digit"),
            ("radically", "radic"),
            ("electriciti", "electr"),
            ("hopeful", "hope"),
            ("goodness", "good"),
            ("revival", "reviv"),
            ("allowance", "allow"),
            ("airliner", "airlin"),
            ("adjustable", "adjust"),
            ("adoption", "adopt"),
            ("communism", "commun"),
            ("activate", "activ"),
            ("effective", "effect"),
            ("probate", "probat"),
            ("rate", "rate"),
            ("cease", "ceas"),
            ("controlling", "control"),
            ("roll", "roll"),
            ("generalization", "gener"),
            ("configuration", "configur"),
            ("restarting", "restart"),
        ] {
            assert_eq!(stemmed(word), want, "{word}");
        }
    }

    #[test]
    fn short_and_long_tokens_pass_through() {
        assert_eq!(stemmed("is"), "is");
        let long = "s".repeat(65) + "ing";
        assert_eq!(stemmed(&long), long);
    }
}
