//! The bigram cache with the real default model: a word that followed the
//! same previous word earlier in the buffer (or in text the user accepted) is
//! proposed again after it, where the model and the buffer's word frequencies
//! alone propose something else; a deleted pair leaves no trace.

use laya::engine::{Engine, Request};

#[path = "support/default_engine.rs"]
mod default_engine;
use default_engine::engine;

fn top(e: &mut Engine, before: &str) -> String {
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
        .first()
        .map_or(String::new(), |c| c.word.clone())
}

/// "grant" followed "mortgage" earlier; "green" is more frequent and more
/// recent in the buffer.
const TEXT: &str = "The bank offered a mortgage grant to the family last spring.\n\
    They painted the door green, the fence green and the shed green.\n\
    A green garden, a green gate, a green glass, a green gown.\n\
    Later the mortgage g";

#[test]
fn proposes_the_word_that_followed_the_same_previous_word() {
    let mut with = engine("");
    assert_eq!(top(&mut with, TEXT), "grant");
    // Without the bigram cache the same engine proposes another word: the
    // proposal above comes from the pair, not from frequency or the model.
    let mut without = engine("lambda_bigram=0");
    assert_ne!(top(&mut without, TEXT), "grant");
}

#[test]
fn a_deleted_pair_is_forgotten() {
    // The pair is typed, then deleted again (backspace): it must leave no trace.
    let base = TEXT.replacen("mortgage grant", "loan", 1);
    let base = base.strip_suffix("Later the mortgage g").unwrap();
    let typed = format!("{base}The mortgage grant is due. Later the mortgage g");
    let deleted = format!("{base}The mortgage g");
    let mut e = engine("");
    // Typed key by key after the buffer was read, so each word is undoable.
    for n in base.len()..typed.len() {
        top(&mut e, &typed[..n]);
    }
    assert_eq!(top(&mut e, &typed), "grant");
    for n in (deleted.len()..typed.len()).rev() {
        top(&mut e, &typed[..n]);
    }
    let mut fresh = engine("");
    let expected = top(&mut fresh, &deleted);
    assert_ne!(expected, "grant");
    assert_eq!(top(&mut e, &deleted), expected);
}

#[test]
fn accepted_text_teaches_pairs_to_every_buffer() {
    // Buffer 2 never saw "mortgage grant"; the user accepted it elsewhere.
    let text = TEXT.replacen("mortgage grant", "loan", 1);
    let mut e = engine("");
    assert_ne!(top(&mut e, &text), "grant");
    e.forget(1);
    e.accepted(7, "a mortgage grant");
    assert_eq!(top(&mut e, &text), "grant");
}

/// "parrot" followed "the red" four times, "parcel" twice, after "sent the red".
const LONGER: &str = "She sent the red parcel to her aunt. Tom sent the red parcel back.\n\
    He saw the red parrot. They fed the red parrot. We met the red parrot.\n\
    The red parrot flew.\n\
    Then she sent the red par";

#[test]
fn a_longer_context_decides_where_the_shorter_ones_agree() {
    let mut with = engine("");
    assert_eq!(top(&mut with, LONGER), "parcel");
    // Without the three- and four-word contexts the frequent follower of
    // "the red" wins: the proposal above comes from the longer context.
    let mut without = engine("lambda_4gram=0,lambda_5gram=0");
    assert_eq!(top(&mut without, LONGER), "parrot");
}
