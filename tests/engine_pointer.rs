//! The neural cache with the real default model: a word that followed a
//! similar model state earlier in the buffer gains probability when that
//! state comes back, beyond what the model and the word caches give it.

use laya::engine::{Engine, Request};

#[path = "support/default_engine.rs"]
mod default_engine;
use default_engine::engine;

/// The candidates at the end of `before`, with their scores.
fn candidates(e: &mut Engine, before: &str) -> Vec<(String, f32)> {
    let p = e.predict(&Request {
        buffer: 1,
        before,
        filetype: "",
        kind: Default::default(),
        k: 3,
        seen_last: false,
        learn: false,
    });
    p.candidates
        .into_iter()
        .map(|c| (c.word, c.score))
        .collect()
}

fn score(cands: &[(String, f32)], word: &str) -> f32 {
    cands.iter().find(|c| c.0 == word).map_or(0.0, |c| c.1)
}

/// A sentence whose last word the model alone does not expect, read once,
/// then begun again. The pair caches (every order) are off so that only the pointer
/// ties the repeated context to the word that followed it.
const TEXT: &str = "Before the upgrade, stop the server and copy the archive to the mirror.\n\
    Check the logs for errors after that.\n\
    Before the upgrade, stop the server and copy the archive to the ";

/// With the pointer on, `word` (the last word of TEXT's first sentence)
/// leads after the repeated context, with over twice the score it has
/// with the pointer off.
fn assert_brought_back(word: &str) {
    let text = TEXT.replace("mirror", word);
    let caches_off = "lambda_bigram=0,lambda_trigram=0,lambda_4gram=0,lambda_5gram=0";
    let with = candidates(&mut engine(&format!("{caches_off},pointer=0.3")), &text);
    let without = candidates(&mut engine(&format!("{caches_off},pointer=0")), &text);
    assert_eq!(with.first().map(|c| c.0.as_str()), Some(word), "{with:?}");
    assert!(
        score(&with, word) > 2.0 * score(&without, word),
        "with {with:?}, without {without:?}"
    );
}

#[test]
fn a_repeated_context_brings_back_the_word_that_followed_it() {
    assert_brought_back("mirror");
}

/// The same with a word outside the vocabulary ("vault"): it gets the
/// pointer's share itself, not `<unk>`.
#[test]
fn an_out_of_vocabulary_word_is_pointed_to_by_name() {
    assert_brought_back("vault");
}
