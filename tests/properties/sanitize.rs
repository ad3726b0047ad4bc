//! GATE-8: whatever the model writes, the sanitized text shown to an operator holds no control character (Cc) and
//! no invisible format character (Cf), and is no longer than asked.

use fisk_ai::gate::sanitize;
use proptest::prelude::*;
use unicode_general_category::{GeneralCategory, get_general_category};

/// Text rich in what the sanitizer must remove: escape sequences, C0/C1 controls, bidi and zero-width characters.
fn text() -> impl Strategy<Value = String> {
    let nasty = prop::sample::select(vec![
        "\u{1b}[31m",
        "\u{1b}]0;title\u{7}",
        "\u{1b}P",
        "\u{1b}",
        "\u{9b}",
        "\u{7f}",
        "\r",
        "\n",
        "\t",
        "\u{0}",
        "\u{202e}",
        "\u{2066}",
        "\u{200b}",
        "\u{feff}",
        "\u{ad}",
        "\u{e0001}",
        "\u{85}",
        "\u{2028}",
        "  ",
        "rm -rf",
    ]);
    let piece = prop_oneof![
        3 => nasty.prop_map(str::to_owned),
        2 => any::<String>(),
        1 => any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|p| p.concat())
}

/// Runs the property over `cases` generated texts.
pub fn check(cases: u32) {
    super::run(cases, (text(), 0usize..300), |(input, limit)| {
        let out = sanitize(&input, limit);
        for c in out.chars() {
            let category = get_general_category(c);
            prop_assert!(
                category != GeneralCategory::Control && category != GeneralCategory::Format,
                "{c:?} ({category:?}) survived in {out:?} from {input:?}"
            );
        }
        // The limit counts characters, plus the `…` that marks a cut.
        prop_assert!(out.chars().count() <= limit + 1, "{} chars for limit {limit}: {out:?}", out.chars().count());
        Ok(())
    });
}
