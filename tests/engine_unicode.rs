//! Non-ASCII text through the real engine and the default model: every
//! keystroke of prose with em-dashes, curly quotes, accents, guillemets,
//! emoji and CJK gets an answer (no panic), in long contexts (the engine
//! treats contexts over 256 bytes as cut by the caller) and short ones.

#[path = "support/default_engine.rs"]
mod default_engine;
use default_engine::{engine, request};

/// Real prose, each piece ending in (or containing) multi-byte characters.
const ENDINGS: &[&str] = &[
    "and then it was over \u{2014}",
    "she said \u{201c}yes\u{201d}",
    "\u{2018}quoted\u{2019}",
    "we met at the caf\u{e9}",
    "\u{ab} Bonj",
    "the party was great \u{1f389}",
    "\u{4eca}\u{65e5}\u{306f}\u{826f}\u{3044}\u{5929}\u{6c17}",
    "na\u{ef}ve co\u{f6}perate \u{2026}",
];

/// A long plain-ASCII lead so that the context is over 256 bytes and holds
/// newlines before its last character.
fn lead() -> String {
    "the cat sat on the mat.\n".repeat(12)
}

#[test]
fn long_contexts_ending_in_multibyte_characters_get_an_answer() {
    let mut e = engine("");
    for (i, end) in ENDINGS.iter().enumerate() {
        let text = format!("{}{end}", lead());
        assert!(text.len() > 256);
        // Every cut of the ending, so the last character is each kind in turn.
        for (cut, _) in end.char_indices().skip(1).chain([(end.len(), ' ')]) {
            let before = &text[..lead().len() + cut];
            let p = e.predict(&request(i as u64 + 1, before, false));
            assert!(p.candidates.len() <= 3, "{before:?}");
        }
    }
}

/// The last `max` bytes of `s`, starting on a character boundary.
fn tail(s: &str, max: usize) -> &str {
    let mut at = s.len().saturating_sub(max);
    while !s.is_char_boundary(at) {
        at += 1;
    }
    &s[at..]
}

#[test]
fn typing_after_an_em_dash_answers_every_key() {
    let mut e = engine("");
    let start = format!("{}It was the best of times \u{2014} ", lead());
    // Each key in turn, the dashes and quotes typed too.
    let typed = "better \u{2014} than \u{201c}ever\u{201d} before";
    let mut answered = 0;
    for (n, _) in typed.char_indices().skip(1) {
        // The editor sends a window of the last bytes, cut on a character.
        let before = format!("{start}{}", &typed[..n]);
        let p = e.predict(&request(7, tail(&before, 300), false));
        assert!(p.candidates.len() <= 3);
        // And read cold, as after a jump or in a new window.
        let p = e.predict(&request(100 + n as u64, &before, false));
        assert!(p.candidates.len() <= 3);
        answered += 1;
    }
    assert_eq!(answered, typed.chars().count() - 1);
    // The buffer's state survived: the model's words still come after the dash.
    let p = e.predict(&request(7, &format!("{start}{typed}, and th"), false));
    assert!(
        !p.candidates.is_empty(),
        "no candidates for a common prefix"
    );
}

#[test]
fn every_prefix_of_mixed_script_prose_gets_an_answer() {
    let mut e = engine("");
    let prose = format!(
        "{}\u{201c}Caf\u{e9} au lait,\u{201d} she said \u{2014} \u{ab} Bonjour \u{bb} \u{1f600} \
         \u{4e2d}\u{6587} r\u{e9}sum\u{e9} na\u{ef}ve \u{2018}ok\u{2019} done",
        lead()
    );
    for (i, (at, _)) in prose.char_indices().skip(1).enumerate() {
        // Typed key by key in one buffer, and read cold (as after a jump).
        let p = e.predict(&request(3, &prose[..at], false));
        assert!(p.candidates.len() <= 3);
        let p = e.predict(&request(1000 + i as u64, &prose[..at], false));
        assert!(p.candidates.len() <= 3);
    }
}
