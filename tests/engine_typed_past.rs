//! A proposed word the user typed past (kept typing the same word instead of
//! accepting it) gives way: for the rest of that word the next best takes
//! the top, and the word typed past moves to the menu's last entry
//! (`Tuning::give_way`). Real default model, cpu backend.

use laya::engine::{Engine, Prediction};

#[path = "support/default_engine.rs"]
mod default_engine;
use default_engine::{engine, request};

/// Every answer read (as by METRICS.md's user).
fn ask(e: &mut Engine, before: &str) -> Prediction {
    e.predict(&request(1, before, true))
}

fn words(p: &Prediction) -> Vec<&str> {
    p.candidates.iter().map(|c| c.word.as_str()).collect()
}

/// The context before the word, the word proposed there, and the same
/// context with the word's first letter typed.
fn typed_one_letter(e: &mut Engine, context: &str) -> (String, String) {
    let first = ask(e, context);
    let top = first.candidates[0].word.clone();
    assert!(
        top.len() >= 3,
        "{context:?}: top {top:?} too short to type past"
    );
    (top.clone(), format!("{context}{}", &top[..1]))
}

const CONTEXT: &str = "The function returns the number of bytes written to the ";

#[test]
fn a_word_typed_past_leaves_the_top_for_the_rest_of_that_word() {
    // Without the rule, the word proposed before typing is still the top
    // after its first letter (so the rule is what changes it below).
    let mut off = engine("typed_past=0");
    let (top, typed) = typed_one_letter(&mut off, CONTEXT);
    assert_eq!(ask(&mut off, &typed).candidates[0].word, top);

    // Moved to the last entry (the default, 2).
    let mut e = engine("");
    let (same, typed) = typed_one_letter(&mut e, CONTEXT);
    assert_eq!(same, top);
    let p = ask(&mut e, &typed);
    let w = words(&p);
    assert_ne!(w[0], top, "{w:?}");
    assert_eq!(w.last(), Some(&top.as_str()), "{w:?}");
    assert!(w.iter().all(|c| c.starts_with(&typed[CONTEXT.len()..])));
    assert!(p.ghost.is_empty() || !top.ends_with(&p.ghost));
    // Still given way after the next letter too (the same word).
    let two = format!("{CONTEXT}{}", &top[..2]);
    assert_ne!(words(&ask(&mut e, &two))[0], top);

    // Left out altogether with 1.
    let mut drop = engine("typed_past=1");
    typed_one_letter(&mut drop, CONTEXT);
    assert!(!words(&ask(&mut drop, &typed)).contains(&top.as_str()));
}

#[test]
fn a_new_word_or_another_context_starts_afresh() {
    let mut e = engine("");
    let (top, typed) = typed_one_letter(&mut e, CONTEXT);
    assert_ne!(ask(&mut e, &typed).candidates[0].word, top);
    // The word finished and a blank typed: nothing is typed past any more,
    // and the same context asked afresh proposes the word again.
    ask(&mut e, &format!("{typed}x "));
    assert_eq!(ask(&mut e, CONTEXT).candidates[0].word, top);
    // Asking the same position twice is not typing past it.
    assert_eq!(ask(&mut e, CONTEXT).candidates[0].word, top);
    // Deleting back to before the word and typing its letter again: the
    // context is the one it was, so the letter is typed past the word again.
    assert_ne!(ask(&mut e, &typed).candidates[0].word, top);
}
