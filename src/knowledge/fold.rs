//! SQLite FTS5 `unicode61`'s case folding and diacritic removal (`sqlite3Fts5UnicodeFold` with
//! `remove_diacritics=1`, `fts5_remove_diacritic`, `sqlite3Fts5UnicodeIsdiacritic` in `fts5_unicode2.c`): the tables
//! are SQLite's, copied (SQLite is in the public domain), so a word folds here exactly as it did in the FTS5 index.

/// Folding rules: (first code point, flags, range length). Flags' low bit: the rule applies to every second code
/// point from the first; the rest index [`OFFSETS`].
#[rustfmt::skip]
const RULES: &[(u16, u8, u8)] = &[
    (65, 14, 26), (181, 64, 1), (192, 14, 23), (216, 14, 7), (256, 1, 48), (306, 1, 6),
    (313, 1, 16), (330, 1, 46), (376, 116, 1), (377, 1, 6), (383, 104, 1), (385, 50, 1),
    (386, 1, 4), (390, 44, 1), (391, 0, 1), (393, 42, 2), (395, 0, 1), (398, 32, 1),
    (399, 38, 1), (400, 40, 1), (401, 0, 1), (403, 42, 1), (404, 46, 1), (406, 52, 1),
    (407, 48, 1), (408, 0, 1), (412, 52, 1), (413, 54, 1), (415, 56, 1), (416, 1, 6),
    (422, 60, 1), (423, 0, 1), (425, 60, 1), (428, 0, 1), (430, 60, 1), (431, 0, 1),
    (433, 58, 2), (435, 1, 4), (439, 62, 1), (440, 0, 1), (444, 0, 1), (452, 2, 1),
    (453, 0, 1), (455, 2, 1), (456, 0, 1), (458, 2, 1), (459, 1, 18), (478, 1, 18),
    (497, 2, 1), (498, 1, 4), (502, 122, 1), (503, 134, 1), (504, 1, 40), (544, 110, 1),
    (546, 1, 18), (570, 70, 1), (571, 0, 1), (573, 108, 1), (574, 68, 1), (577, 0, 1),
    (579, 106, 1), (580, 28, 1), (581, 30, 1), (582, 1, 10), (837, 36, 1), (880, 1, 4),
    (886, 0, 1), (902, 18, 1), (904, 16, 3), (908, 26, 1), (910, 24, 2), (913, 14, 17),
    (931, 14, 9), (962, 0, 1), (975, 4, 1), (976, 140, 1), (977, 142, 1), (981, 146, 1),
    (982, 144, 1), (984, 1, 24), (1008, 136, 1), (1009, 138, 1), (1012, 130, 1), (1013, 128, 1),
    (1015, 0, 1), (1017, 152, 1), (1018, 0, 1), (1021, 110, 3), (1024, 34, 16), (1040, 14, 32),
    (1120, 1, 34), (1162, 1, 54), (1216, 6, 1), (1217, 1, 14), (1232, 1, 88), (1329, 22, 38),
    (4256, 66, 38), (4295, 66, 1), (4301, 66, 1), (7680, 1, 150), (7835, 132, 1), (7838, 96, 1),
    (7840, 1, 96), (7944, 150, 8), (7960, 150, 6), (7976, 150, 8), (7992, 150, 8), (8008, 150, 6),
    (8025, 151, 8), (8040, 150, 8), (8072, 150, 8), (8088, 150, 8), (8104, 150, 8), (8120, 150, 2),
    (8122, 126, 2), (8124, 148, 1), (8126, 100, 1), (8136, 124, 4), (8140, 148, 1), (8152, 150, 2),
    (8154, 120, 2), (8168, 150, 2), (8170, 118, 2), (8172, 152, 1), (8184, 112, 2), (8186, 114, 2),
    (8188, 148, 1), (8486, 98, 1), (8490, 92, 1), (8491, 94, 1), (8498, 12, 1), (8544, 8, 16),
    (8579, 0, 1), (9398, 10, 26), (11264, 22, 47), (11360, 0, 1), (11362, 88, 1), (11363, 102, 1),
    (11364, 90, 1), (11367, 1, 6), (11373, 84, 1), (11374, 86, 1), (11375, 80, 1), (11376, 82, 1),
    (11378, 0, 1), (11381, 0, 1), (11390, 78, 2), (11392, 1, 100), (11499, 1, 4), (11506, 0, 1),
    (42560, 1, 46), (42624, 1, 24), (42786, 1, 14), (42802, 1, 62), (42873, 1, 4), (42877, 76, 1),
    (42878, 1, 10), (42891, 0, 1), (42893, 74, 1), (42896, 1, 4), (42912, 1, 10), (42922, 72, 1),
    (65313, 14, 26),
];

/// What a folded code point adds (modulo 2^16).
#[rustfmt::skip]
const OFFSETS: &[u16] = &[
    1, 2, 8, 15, 16, 26, 28, 32, 37, 38, 40, 48,
    63, 64, 69, 71, 79, 80, 116, 202, 203, 205, 206, 207,
    209, 210, 211, 213, 214, 217, 218, 219, 775, 7264, 10792, 10795,
    23228, 23256, 30204, 54721, 54753, 54754, 54756, 54787, 54793, 54809, 57153, 57274,
    57921, 58019, 58363, 61722, 65268, 65341, 65373, 65406, 65408, 65410, 65415, 65424,
    65436, 65439, 65450, 65462, 65472, 65476, 65478, 65480, 65482, 65488, 65506, 65511,
    65514, 65521, 65527, 65528, 65529,
];

/// Diacritic ranges: (first code point << 3) | (range length - 1), sorted.
#[rustfmt::skip]
const DIACRITIC_RANGES: &[u16] = &[
    0, 1797, 1848, 1859, 1891, 1928, 1940, 1995, 2024, 2040, 2060, 2110,
    2168, 2206, 2264, 2286, 2344, 2383, 2472, 2488, 2516, 2596, 2668, 2732,
    2782, 2842, 2894, 2954, 2984, 3000, 3028, 3336, 3456, 3696, 3712, 3728,
    3744, 3766, 3832, 3896, 3912, 3928, 3944, 3968, 4008, 4040, 4056, 4106,
    4138, 4170, 4202, 4234, 4266, 4296, 4312, 4344, 4408, 4424, 4442, 4472,
    4488, 4504, 6148, 6198, 6264, 6280, 6360, 6429, 6505, 6529, 61448, 61468,
    61512, 61534, 61592, 61610, 61642, 61672, 61688, 61704, 61726, 61784, 61800, 61816,
    61836, 61880, 61896, 61914, 61948, 61998, 62062, 62122, 62154, 62184, 62200, 62218,
    62252, 62302, 62364, 62410, 62442, 62478, 62536, 62554, 62584, 62604, 62640, 62648,
    62656, 62664, 62730, 62766, 62830, 62890, 62924, 62974, 63032, 63050, 63082, 63118,
    63182, 63242, 63274, 63310, 63368, 63390,
];

/// The base letter of each range in [`DIACRITIC_RANGES`]; the high bit marks a "complex" one, left alone by the
/// simple removal FTS5 applies by default; 0 is no letter.
#[rustfmt::skip]
const BASE_LETTERS: &[u8] = &[
    0x00, 0x61, 0x63, 0x65, 0x69, 0x6e, 0x6f, 0x75, 0x79, 0x79, 0x61, 0x63,
    0x64, 0x65, 0x65, 0x67, 0x68, 0x69, 0x6a, 0x6b, 0x6c, 0x6e, 0x6f, 0x72,
    0x73, 0x74, 0x75, 0x75, 0x77, 0x79, 0x7a, 0x6f, 0x75, 0x61, 0x69, 0x6f,
    0x75, 0xf5, 0xe1, 0x67, 0x6b, 0x6f, 0xef, 0x6a, 0x67, 0x6e, 0xe1, 0x61,
    0x65, 0x69, 0x6f, 0x72, 0x75, 0x73, 0x74, 0x68, 0x61, 0x65, 0xef, 0x6f,
    0xef, 0x79, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x61, 0x62,
    0xe3, 0x64, 0x64, 0xe5, 0x65, 0xe5, 0x66, 0x67, 0x68, 0x68, 0x69, 0xe9,
    0x6b, 0x6c, 0xec, 0x6c, 0x6d, 0x6e, 0xef, 0x70, 0x72, 0xf2, 0x72, 0x73,
    0xf3, 0x74, 0x75, 0xf5, 0x76, 0x77, 0x77, 0x78, 0x79, 0x7a, 0x68, 0x74,
    0x77, 0x79, 0x61, 0xe1, 0xe1, 0xe1, 0x65, 0xe5, 0xe5, 0x69, 0x6f, 0xef,
    0xef, 0xef, 0x75, 0xf5, 0xf5, 0x79,
];

/// `sqlite3Fts5UnicodeFold(c, 1)`: lower case, Latin diacritics removed; 0 means the character is dropped.
pub(crate) fn fold(c: u32) -> u32 {
    if c < 128 {
        return if (65..=90).contains(&c) { c + 32 } else { c };
    }
    if c >= 65536 {
        // Deseret, the one rule past the Basic Multilingual Plane.
        return if (66560..66600).contains(&c) { c + 40 } else { c };
    }
    // The last rule starting at or before `c` (the first starts at 65, below every `c` here).
    let i = RULES.partition_point(|r| u32::from(r.0) <= c).saturating_sub(1);
    let (code, flags, range) = RULES[i];
    let (code, flags) = (u32::from(code), u32::from(flags));
    let mut folded = c;
    if c < code + u32::from(range) && 0 == (1 & flags & (code ^ c)) {
        folded = (c + u32::from(OFFSETS[(flags >> 1) as usize])) & 0xFFFF;
    }
    remove_diacritic(folded)
}

/// `fts5_remove_diacritic(c, 0)`: the simple removal `unicode61` applies by default.
fn remove_diacritic(c: u32) -> u32 {
    let key = (c << 3) | 7;
    // The last range starting at or before `c` (the first starts at 0).
    let i = DIACRITIC_RANGES.partition_point(|d| u32::from(*d) <= key).saturating_sub(1);
    let (d, base) = (u32::from(DIACRITIC_RANGES[i]), BASE_LETTERS[i]);
    if base & 0x80 != 0 || c > (d >> 3) + (d & 7) { c } else { u32::from(base & 0x7f) }
}

/// `sqlite3Fts5UnicodeIsdiacritic`: the combining marks that continue a word (and are dropped from it).
pub(crate) fn is_diacritic(c: u32) -> bool {
    const LOW: u32 = 0x0802_9FDF;
    const HIGH: u32 = 0x0003_61F8;
    match c {
        768..=799 => LOW & (1 << (c - 768)) != 0,
        800..=817 => HIGH & (1 << (c - 800)) != 0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(s: &str) -> String {
        s.chars().filter_map(|c| char::from_u32(fold(c as u32)).filter(|c| *c != '\0')).collect()
    }

    #[test]
    fn folds_case_and_removes_latin_diacritics_as_fts5_does() {
        assert_eq!(folded("ABCxyz"), "abcxyz");
        assert_eq!(folded("ÉCOLE Café"), "ecole cafe");
        // Greek final sigma folds to sigma, micro sign to mu, long s to s; Romanian and Vietnamese letters lose
        // their mark; ones FTS5 calls complex (two marks: ế; or none to take off: ø) keep it.
        assert_eq!(folded("ΟΔΟΣ οδος"), "οδοσ οδοσ");
        assert_eq!(folded("\u{b5}\u{17f}"), "\u{3bc}s");
        assert_eq!(folded("ȘȚ ơư ạ ế"), "st ou a ế");
        assert_eq!(folded("Ø"), "ø");
        assert_eq!(folded("\u{10400}"), "\u{10428}");
        // A combining acute accent is dropped.
        assert_eq!(fold(0x301), 0);
        assert!(is_diacritic(0x301) && !is_diacritic(0x34f) && !is_diacritic(0x41));
    }
}
