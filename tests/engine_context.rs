//! The kind of text at the cursor and the separator before a next word, on
//! the real default model: a next-word candidate after `)`, `=`, `,` or `:`
//! starts with the space it needs (the ghost text too), nothing is added
//! where a word attaches (`open(`), and in prose identifier-shaped words
//! give way to words.

use laya::engine::kind::TextKind;
use laya::engine::{Engine, Prediction, Request};

#[path = "support/default_engine.rs"]
mod default_engine;

fn ask(e: &mut Engine, buffer: u64, before: &str, kind: TextKind) -> Prediction {
    e.predict(&Request {
        kind,
        k: 5,
        ..default_engine::request(buffer, before, false)
    })
}

#[test]
fn next_words_after_closing_brackets_and_operators_start_with_a_space() {
    let mut e = default_engine::engine("");
    let cases = [
        "import os\n\nwith open(path)",
        "lines =",
        "int main(int argc,",
        "def f(x:",
        "if (ok) {\n  return x;\n}",
    ];
    for (i, before) in cases.into_iter().enumerate() {
        for kind in [TextKind::Code, TextKind::Comment] {
            let p = ask(&mut e, i as u64, before, kind);
            assert!(!p.candidates.is_empty(), "{before:?}: no candidates");
            for c in &p.candidates {
                assert!(
                    c.insert.starts_with(' ') && c.word == c.insert[1..],
                    "{before:?} {kind:?}: {c:?}"
                );
            }
            assert!(
                p.ghost.is_empty() || p.ghost.starts_with(' '),
                "{before:?}: ghost {:?}",
                p.ghost
            );
        }
    }
}

#[test]
fn nothing_is_added_where_a_word_attaches() {
    let mut e = default_engine::engine("");
    for (i, before) in ["foo = open(", "std::", "self.", "x = \"", "a = b\n"]
        .into_iter()
        .enumerate()
    {
        let p = ask(&mut e, i as u64, before, TextKind::Code);
        for c in &p.candidates {
            assert!(!c.insert.starts_with(' '), "{before:?}: {c:?}");
        }
        assert!(!p.ghost.starts_with(' '), "{before:?}: {:?}", p.ghost);
    }
}

#[test]
fn a_sentence_end_takes_a_space_in_prose_only() {
    let mut e = default_engine::engine("");
    let prose = ask(&mut e, 1, "It rained all day.", TextKind::Prose);
    assert!(prose.candidates.iter().all(|c| c.insert.starts_with(' ')));
    let code = ask(&mut e, 2, "It rained all day.", TextKind::Code);
    assert!(code.candidates.iter().all(|c| !c.insert.starts_with(' ')));
}

#[test]
fn in_prose_identifier_shaped_words_give_way_to_words() {
    let mut e = default_engine::engine("");
    let before = "The weather is";
    let words = |p: &Prediction| {
        p.candidates
            .iter()
            .map(|c| c.word.clone())
            .collect::<Vec<_>>()
    };
    let ask8 = |e: &mut Engine, buffer, kind| {
        e.predict(&Request {
            kind,
            k: 8,
            ..default_engine::request(buffer, before, false)
        })
    };
    let code = words(&ask8(&mut e, 1, TextKind::Code));
    // In code the model's top eight hold an identifier...
    assert!(code.iter().any(|w| kind_of(w)), "{code:?}");
    // ...which prose, comments and strings move below ordinary words.
    for kind in [TextKind::Prose, TextKind::Comment, TextKind::String] {
        let w = words(&ask8(&mut e, 2, kind));
        assert!(w.contains(&"issue".to_string()), "{kind:?}: {w:?}");
        assert!(!w.iter().any(|w| kind_of(w)), "{kind:?}: {w:?}");
    }
    // Unknown (no editor: laya eval, laya protocol): as the text reads,
    // here prose.
    assert_eq!(
        words(&ask8(&mut e, 3, TextKind::Unknown)),
        words(&ask8(&mut e, 5, TextKind::Prose))
    );
    // ...and text that reads as code ranks as code.
    let in_code = |e: &mut Engine, buffer, kind| {
        words(&e.predict(&Request {
            kind,
            k: 8,
            ..default_engine::request(buffer, "if (isprint(c) && isprint(d)) return ", false)
        }))
    };
    assert_eq!(
        in_code(&mut e, 6, TextKind::Unknown),
        in_code(&mut e, 7, TextKind::Code)
    );
    // The buffer's own identifiers stay: the user writes them.
    let own = ask(
        &mut e,
        4,
        "Call isFunction first. Then the weather is",
        TextKind::Prose,
    );
    assert!(
        words(&own).contains(&"isFunction".to_string()),
        "{:?}",
        words(&own)
    );
}

fn kind_of(w: &str) -> bool {
    laya::engine::kind::looks_like_code(w)
}

#[test]
fn a_client_that_does_not_say_the_kind_gets_the_words_alone() {
    let mut e = default_engine::engine("");
    let p = ask(&mut e, 1, "with open(path)", TextKind::Unknown);
    assert!(p.candidates.iter().all(|c| c.insert == c.word), "{p:?}");
}
