//! Thinking ahead (`EngineOptions::think_ahead`, `Engine::think_ahead`): the
//! helper thread's model work, with the default model's real weights, gives
//! exactly the answers of an engine without it, whether it finished its work
//! before the next keystroke, is still at it, or guessed wrong; and a right
//! guess spares the keystroke its model step, also for a word that gave way
//! when typed past.

use laya::engine::{Engine, EngineOptions, Request};
use std::path::Path;

#[path = "support/default_engine.rs"]
mod default_engine;
use default_engine::request;

fn engine(think_ahead: bool) -> Engine {
    let e = Engine::new(EngineOptions {
        model_path: Some(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("models/laya-default.safetensors"),
        ),
        backend: laya::model::BackendChoice::Cpu,
        ghost_words: 0,
        corrections: false,
        think_ahead,
        ..EngineOptions::default()
    });
    assert_eq!(e.info().model_error, None);
    e
}

/// The text before the cursor wherever a word character comes next (where
/// ../shared/eval/ksr.py asks), in the first 1500 characters of the prose
/// and of the code held-out samples: (buffer, text before the cursor).
fn keystrokes() -> Vec<(u64, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut out = Vec::new();
    for (buffer, file) in [(1, "heldout-prose.txt"), (2, "heldout-code.txt")] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        let text = &text[..text.char_indices().nth(1500).map_or(text.len(), |c| c.0)];
        for (i, c) in text.char_indices() {
            if c.is_ascii_alphanumeric() || c == '_' {
                out.push((buffer, text[i.saturating_sub(1024)..i].to_string()));
            }
        }
    }
    out
}

/// Candidates with their scores to the bit: identical model numbers give
/// identical scores.
fn ask(e: &mut Engine, buffer: u64, before: &str) -> Vec<(String, u32)> {
    e.predict(&Request {
        buffer,
        before,
        filetype: "",
        kind: Default::default(),
        k: 3,
        seen_last: false,
        learn: false,
    })
    .candidates
    .into_iter()
    .map(|c| (c.word, c.score.to_bits()))
    .collect()
}

#[test]
fn thinking_ahead_gives_the_same_answers_and_spares_model_steps() {
    let mut plain = engine(false);
    let mut waited = engine(true);
    let mut raced = engine(true);
    assert!(
        waited.info().device.contains("helper"),
        "{}",
        waited.info().device
    );
    let (mut spared, mut word_starts) = (0, 0);
    for (buffer, before) in keystrokes() {
        let want = ask(&mut plain, buffer, &before);
        // The helper finished its work before this keystroke...
        assert_eq!(ask(&mut waited, buffer, &before), want, "at {before:?}");
        let word_start = !before.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        if word_start && plain.last_cost().steps > 0 {
            word_starts += 1;
            spared += (waited.last_cost().steps < plain.last_cost().steps) as usize;
        }
        waited.think_ahead(buffer);
        waited.wait_ahead();
        // ...or is at it while the keystroke comes (whatever it has done
        // by then is used; timing only changes how long answers take).
        assert_eq!(ask(&mut raced, buffer, &before), want, "at {before:?}");
        raced.think_ahead(buffer);
    }
    // The best candidate is often the word typed next: its step was taken.
    assert!(
        spared * 2 > word_starts,
        "steps spared at {spared} of {word_starts} word starts"
    );
}

#[test]
fn a_forgotten_buffer_does_not_inherit_work_done_for_its_old_text() {
    let mut plain = engine(false);
    let mut e = engine(true);
    // The work done ahead after "x t" starts from the state after "x"
    // (the next miss's own job replaces it today; the job also names the
    // context it belongs to, which this checks whatever the order)...
    let top = ask(&mut e, 7, "x t")[0].0.clone();
    ask(&mut plain, 7, "x t");
    e.think_ahead(7);
    e.wait_ahead();
    // ...and must not be taken when the buffer, forgotten and read anew,
    // reaches the same context version and types the same word.
    e.forget(7);
    plain.forget(7);
    for before in ["y t".to_string(), format!("y {top} q")] {
        assert_eq!(ask(&mut e, 7, &before), ask(&mut plain, 7, &before));
        assert_eq!(e.last_cost(), plain.last_cost());
    }
}

#[test]
fn a_word_that_gave_way_is_still_the_one_thought_ahead() {
    let mut e = engine(true);
    let ctx = "The function returns the number of bytes written to the ";
    let ask = |e: &mut Engine, before: &str| e.predict(&request(3, before, true));
    let top = ask(&mut e, ctx).candidates[0].word.clone();
    // Typed past (read): another word is on top now...
    let typed = format!("{ctx}{}", &top[..1]);
    assert_ne!(ask(&mut e, &typed).candidates[0].word, top);
    e.think_ahead(3);
    e.wait_ahead();
    // ...but the user finished it anyway: its step was taken ahead.
    ask(&mut e, &format!("{ctx}{top} "));
    assert_eq!(e.last_cost().steps, 0, "{top:?} was not stepped ahead");
}

#[test]
fn a_word_typed_out_in_full_is_the_one_thought_ahead() {
    let mut e = engine(true);
    let ask = |e: &mut Engine, before: &str| e.predict(&request(4, before, false));
    // "the" typed in full: every candidate is longer ("then", "there"...),
    // yet "the" is the likeliest word to end here.
    let before = "The function returns the number of bytes written to the";
    let p = ask(&mut e, before);
    assert!(
        p.candidates.iter().all(|c| c.word != "the"),
        "{:?}",
        p.candidates
    );
    e.think_ahead(4);
    e.wait_ahead();
    ask(&mut e, &format!("{before} "));
    assert_eq!(e.last_cost().steps, 0, "\"the\" was not stepped ahead");
}
