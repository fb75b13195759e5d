//! Answers to the next keys (`Engine::next_keys`), with the default model's
//! real weights: replaying held-out text keystroke by keystroke, the answer
//! worked out in advance for the character typed next is exactly the answer
//! `predict` then gives, and working them out changes no later answer.

use laya::engine::{Engine, EngineOptions, Prediction};
use std::path::Path;

#[path = "support/default_engine.rs"]
mod default_engine;
use default_engine::request;

fn engine() -> Engine {
    let e = Engine::new(EngineOptions {
        model_path: Some(default_engine::models().join("laya-default.safetensors")),
        backend: laya::model::BackendChoice::Cpu,
        ..EngineOptions::default()
    });
    assert_eq!(e.info().model_error, None);
    e
}

/// The first `n` characters of a held-out sample.
fn sample(file: &str, n: usize) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(file);
    let text = std::fs::read_to_string(path).unwrap();
    text.chars().take(n).collect()
}

fn ask(e: &mut Engine, buffer: u64, before: &str) -> Prediction {
    ask_seen(e, buffer, before, false)
}

fn ask_seen(e: &mut Engine, buffer: u64, before: &str, seen: bool) -> Prediction {
    let mut r = request(buffer, before, seen);
    r.k = 8;
    e.predict(&r)
}

#[test]
fn the_answer_worked_out_for_the_next_key_is_the_answer_it_gets() {
    let mut with = engine();
    let mut without = engine();
    let (mut keys, mut unseen, mut answered_in_advance) = (0, 0, 0);
    for (buffer, file) in [(1, "heldout-prose.txt"), (2, "heldout-code.txt")] {
        let text = sample(file, 1200);
        let mut ahead: Vec<(char, Prediction)> = Vec::new();
        for (end, _) in text.char_indices() {
            let before = &text[..end];
            // Every third key typed past a ghost the user had read, so that
            // words give way (next keys are worked out as for a key that
            // was not: the editor does not use them after one that was).
            let seen = keys % 3 == 0;
            let p = ask_seen(&mut with, buffer, before, seen);
            // Working out the next keys changed nothing `predict` sees.
            assert_eq!(
                p,
                ask_seen(&mut without, buffer, before, seen),
                "at {before:?}"
            );
            if let Some(typed) = before.chars().last().filter(|_| !seen) {
                if let Some((_, q)) = ahead.iter().find(|(c, _)| *c == typed) {
                    assert_eq!(q, &p, "the answer worked out for {typed:?} at {before:?}");
                    answered_in_advance += 1;
                }
            }
            keys += 1;
            unseen += usize::from(!seen);
            ahead = with.next_keys(buffer, &p, 8, 12, &|| false);
            for (c, q) in &ahead {
                assert_eq!(q.prefix, format!("{}{c}", p.prefix));
            }
        }
    }
    // Most keys not typed past a read ghost were answered in advance.
    assert!(
        answered_in_advance * 2 > unseen,
        "{answered_in_advance} of {unseen} keys answered in advance"
    );
}

#[test]
fn a_waiting_keystroke_stops_the_work() {
    let mut e = engine();
    let p = ask(&mut e, 1, "The river town wakes slowly in w");
    assert!(!p.candidates.is_empty());
    assert!(!e.next_keys(1, &p, 8, 8, &|| false).is_empty());
    assert!(e.next_keys(1, &p, 8, 8, &|| true).is_empty());
}

#[test]
fn only_the_state_last_answered_is_worked_from() {
    let mut e = engine();
    let old = ask(&mut e, 1, "The river town wakes slowly in w");
    ask(&mut e, 1, "The river town wakes slowly in wi");
    // `old` is no longer the buffer's state: nothing is worked out from it.
    assert!(e.next_keys(1, &old, 8, 8, &|| false).is_empty());
    assert!(e.next_keys(7, &old, 8, 8, &|| false).is_empty());
}
