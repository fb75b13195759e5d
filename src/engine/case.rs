//! Case adaptation: a candidate found case-insensitively is written the way
//! the user started typing it (`Th` + `the` → `The`, `TH` + `the` → `THE`).

use std::borrow::Cow;

/// The rest of `word` after the typed `prefix` (same length in bytes,
/// matched case-insensitively), adapted to the prefix's case: an all-capitals
/// prefix (2+ letters) gives capitals, an all-capitals word after a
/// lowercase prefix (2+ letters) small letters (`enviro` + `ENVIRONMENT` →
/// `environment`, not `enviroNMENT`); otherwise the word's own letters.
pub fn adapted_rest<'a>(prefix: &str, word: &'a str) -> Cow<'a, str> {
    let rest = &word[prefix.len()..];
    if shouts(prefix) {
        Cow::Owned(rest.to_ascii_uppercase())
    } else if shouts(word) && whispers(prefix) {
        Cow::Owned(rest.to_ascii_lowercase())
    } else {
        Cow::Borrowed(rest)
    }
}

/// True when the typed prefix is capitals only (at least two letters), as in `HTTP`.
pub fn shouts(prefix: &str) -> bool {
    one_case(prefix, true)
}

/// True when the typed prefix is small letters only (at least two letters).
fn whispers(prefix: &str) -> bool {
    one_case(prefix, false)
}

/// At least two letters, all capitals (`upper`) or all small.
fn one_case(s: &str, upper: bool) -> bool {
    let mut letters = 0;
    for b in s.bytes() {
        if b.is_ascii_alphabetic() {
            if b.is_ascii_uppercase() != upper {
                return false;
            }
            letters += 1;
        }
    }
    letters >= 2
}

/// How well the candidate's own spelling agrees with what was typed: 1 for an
/// exact-case match, less when only the case-insensitive match holds (so a
/// buffer identifier typed in its own case wins over a re-cased one).
pub fn case_agreement(prefix: &str, word: &str) -> f32 {
    let typed = &word.as_bytes()[..prefix.len()];
    if typed == prefix.as_bytes() {
        return 1.0;
    }
    // Sentence case (`The`/`the`) and shouting are ordinary re-casings; making
    // `valueError` of `ValueError` is not.
    let rest_plain = !word.bytes().skip(1).any(|b| b.is_ascii_uppercase());
    if (rest_plain && typed[1..] == prefix.as_bytes()[1..]) || shouts(prefix) {
        0.9
    } else {
        0.05
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adapts_to_the_typed_case() {
        assert_eq!(adapted_rest("Th", "the"), "e");
        assert_eq!(adapted_rest("TH", "the"), "E");
        assert_eq!(adapted_rest("th", "The"), "e");
        assert_eq!(adapted_rest("hash", "HashMap"), "Map");
        assert_eq!(adapted_rest("X", "xs"), "s");
        assert_eq!(adapted_rest("enviro", "ENVIRONMENT"), "nment");
        assert_eq!(adapted_rest("e", "EOF"), "OF");
        assert_eq!(adapted_rest("ht", "HTTP_2"), "tp_2");
        assert!(shouts("HTTP_2"));
        assert!(!shouts("H2"));
    }

    #[test]
    fn exact_case_agrees_best() {
        assert_eq!(case_agreement("myV", "myVar"), 1.0);
        assert!(case_agreement("Th", "the") > case_agreement("myv", "myVar"));
    }
}
