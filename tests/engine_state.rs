//! The per-buffer state cache with a real (random-weight) model: what each
//! kind of keystroke costs in model steps, and that cached states give the
//! same predictions as reading the text afresh.

use laya::engine::{Engine, EngineOptions, Request};
use laya::model::testgen::write_random_model;
use laya::model::weights::WeightType;
use std::path::PathBuf;

struct Fixture {
    dir: PathBuf,
    weights: PathBuf,
}

impl Fixture {
    fn new(tag: &str) -> Fixture {
        let dir = std::env::temp_dir().join(format!("laya-state-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut words: Vec<String> = [
            "the", "cat", "sat", "on", "mat", "and", "then", "it", "slept", ".", ",", "(", ")", "=",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        words.extend((0..100).map(|i| format!("word{i}")));
        let refs: Vec<&str> = words.iter().map(String::as_str).collect();
        let weights = write_random_model(&dir, "m", &refs, 16, 24, WeightType::F32, 3).unwrap();
        Fixture { dir, weights }
    }

    /// With `ghost_words` = 0 no step is ever taken ahead, so counts are exact.
    fn engine_with(&self, ghost_words: usize) -> Engine {
        let e = Engine::new(EngineOptions {
            model_path: Some(self.weights.clone()),
            threshold: Some(0.0),
            ghost_words,
            ..EngineOptions::default()
        });
        assert_eq!(e.info().model_error, None);
        e
    }
}

impl Fixture {
    fn engine(&self) -> Engine {
        self.engine_with(0)
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn ask(e: &mut Engine, buffer: u64, before: &str) -> (Vec<(String, u32)>, usize, bool) {
    let p = e.predict(&Request {
        buffer,
        before,
        filetype: "",
        kind: Default::default(),
        k: 5,
        seen_last: false,
        learn: false,
    });
    let c = e.last_cost();
    // Scores to 1e-4: identical states give identical numbers.
    let cands = p
        .candidates
        .into_iter()
        .map(|c| (c.word, (c.score * 1e4).round() as u32))
        .collect();
    (cands, c.steps, c.reread)
}

#[test]
fn each_kind_of_keystroke_costs_what_it_should() {
    let f = Fixture::new("costs");
    let mut e = f.engine();
    let (_, steps, reread) = ask(&mut e, 1, "the cat sat on the mat");
    assert!(reread, "a new buffer is read once");
    assert_eq!(
        steps, 5,
        "<s> is a separate start state; five tokens before the prefix `mat`"
    );
    // Inside a word: no model step.
    assert_eq!(
        ask(&mut e, 1, "the cat sat on the mat ").1,
        1,
        "the space completes `mat`: one step"
    );
    assert_eq!(ask(&mut e, 1, "the cat sat on the mat a").1, 0);
    assert_eq!(ask(&mut e, 1, "the cat sat on the mat an").1, 0);
    assert_eq!(ask(&mut e, 1, "the cat sat on the mat and ").1, 1);
    assert_eq!(ask(&mut e, 1, "the cat sat on the mat and, ").1, 1);
    // Backspace over the comma and the word: back to stored states, no steps.
    let (_, steps, reread) = ask(&mut e, 1, "the cat sat on the mat an");
    assert_eq!((steps, reread), (0, false));
    // A window that slid (the caller sends only the last characters): still aligned.
    let (_, steps, reread) = ask(&mut e, 1, "cat sat on the mat and then ");
    assert_eq!((steps, reread), (2, false));
    // A far edit: one bounded re-read (at most 64 tokens), whatever the text's length.
    let long: String = (0..400).map(|i| format!("word{} ", i % 100)).collect();
    let (_, steps, reread) = ask(&mut e, 1, &long);
    assert!(reread && steps <= 64, "{steps}");
    // Buffers are separate.
    assert_eq!(ask(&mut e, 2, "the cat").1, 1);
    assert_eq!(ask(&mut e, 1, &format!("{long}the ")).1, 1);
}

#[test]
fn the_ghost_continuation_steps_ahead_for_the_next_word() {
    let f = Fixture::new("ahead");
    let mut e = f.engine_with(2);
    // At a word boundary the ghost continuation steps the top next word...
    let (cands, _, _) = ask(&mut e, 1, "the cat sat on the mat and ");
    let top = &cands[0].0;
    // ...so typing it costs no step at the next boundary.
    let typed = format!("the cat sat on the mat and {top}");
    for end in "the cat sat on the mat and ".len() + 1..=typed.len() {
        assert_eq!(ask(&mut e, 1, &typed[..end]).1, 0);
    }
    assert_eq!(ask(&mut e, 1, &format!("{typed} ")).1, 0);
    // Another word costs its step as usual.
    let other = if top == "then" { "the" } else { "then" };
    ask(&mut e, 1, "the cat sat on the mat and ");
    assert_eq!(
        ask(&mut e, 1, &format!("the cat sat on the mat and {other} ")).1,
        1
    );
    // And the states agree with an engine that never stepped ahead.
    let text = format!("{typed} the");
    let mut fresh = f.engine();
    assert_eq!(ask(&mut e, 1, &text).0, ask(&mut fresh, 1, &text).0);
}

#[test]
fn cached_states_predict_like_a_fresh_read() {
    let f = Fixture::new("fresh");
    let text = "the cat sat on the mat, and then it slept. the cat sat (on the mat) = the word1 word2 and then the";
    let mut live = f.engine();
    for end in 1..=text.len() {
        ask(&mut live, 1, &text[..end]);
    }
    // Backspace and retype the last word.
    for end in (text.len() - 8..text.len()).rev() {
        ask(&mut live, 1, &text[..end]);
    }
    let (cands_live, _, _) = ask(&mut live, 1, text);
    let mut fresh = f.engine();
    let (cands_fresh, _, _) = ask(&mut fresh, 1, text);
    assert!(!cands_fresh.is_empty());
    // The buffer words were counted the same way, and the model state is the same.
    assert_eq!(cands_live, cands_fresh);
}

#[test]
fn a_far_edit_rereads_as_many_tokens_as_tuned() {
    let f = Fixture::new("reread");
    // 300 tokens of text: longer than any re-read below.
    let text: String = (0..150).map(|i| format!("word{} the ", i % 100)).collect();
    // Fewer than 32 (what an alignment compares) would make every later
    // keystroke re-read: 16 reads 32.
    for (reread, want) in [(None, 64), (Some(40), 40), (Some(16), 32), (Some(200), 200)] {
        let mut opts = EngineOptions {
            model_path: Some(f.weights.clone()),
            threshold: Some(0.0),
            ghost_words: 0,
            ..EngineOptions::default()
        };
        if let Some(n) = reread {
            opts.tuning.set(&format!("reread={n}")).unwrap();
        }
        let mut e = Engine::new(opts);
        let (_, steps, reread) = ask(&mut e, 1, &text);
        assert!(reread, "unknown text is re-read");
        assert_eq!(steps, want, "tokens stepped by a far edit");
        // The next word aligns with what was read: one step.
        let (_, steps, reread) = ask(&mut e, 1, &format!("{text}word7 "));
        assert_eq!((steps, reread), (1, false), "after reading {want} tokens");
    }
}
