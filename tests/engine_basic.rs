//! The engine without a neural model: buffer words (cache model), the word
//! list from a vocabulary file, case adaptation, corrections, feedback, and
//! the shared tokenizer vectors.

use laya::engine::{Engine, EngineOptions, Request, Source};
use laya::text::tokenizer::tokenize;
use std::path::PathBuf;

#[path = "support/default_engine.rs"]
mod default_engine;

/// A request for 3 candidates (see `default_engine::request`).
fn req(buffer: u64, before: &str) -> Request<'_> {
    default_engine::request(buffer, before, false)
}

fn inserts(e: &mut Engine, buffer: u64, before: &str) -> Vec<String> {
    e.predict(&req(buffer, before))
        .candidates
        .into_iter()
        .map(|c| c.insert)
        .collect()
}

/// An engine whose model path does not exist and has no vocabulary: buffer words only.
fn buffer_only() -> Engine {
    Engine::new(EngineOptions {
        model_path: Some(PathBuf::from("/nonexistent/laya-test.safetensors")),
        ..EngineOptions::default()
    })
}

/// An engine with a vocabulary file (word list) but no usable weights.
fn with_word_list(words: &[&str]) -> (Engine, tempdir::Dir) {
    let dir = tempdir::Dir::new("wordlist");
    let mut text = String::from("<unk>\n<s>\n<nl>\n");
    for w in words {
        text.push_str(w);
        text.push('\n');
    }
    std::fs::write(dir.path.join("m.vocab.txt"), text).unwrap();
    let e = Engine::new(EngineOptions {
        model_path: Some(dir.path.join("m.safetensors")),
        ..EngineOptions::default()
    });
    (e, dir)
}

#[path = "support/scratch.rs"]
mod tempdir;

#[test]
fn buffer_words_complete_the_prefix_by_frequency() {
    let mut e = buffer_only();
    assert!(e.info().model_error.is_some());
    assert_eq!(e.info().backend, "none");
    let text = "let parser = Parser::new(); parser.parse(); parser.finish(); let part = 1; pa";
    let got = inserts(&mut e, 1, text);
    assert_eq!(got[0], "rser", "{got:?}");
    assert!(got.contains(&"rt".to_string()), "{got:?}");
    // Candidates are only the rest of the word: no spaces, no punctuation.
    for c in &got {
        assert!(
            c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'),
            "{c:?}"
        );
    }
}

#[test]
fn recency_breaks_frequency_ties() {
    let mut e = buffer_only();
    let mut text = String::from("alpha ");
    for i in 0..200 {
        text.push_str(&format!("x{i} "));
    }
    text.push_str("alpine al");
    assert_eq!(inserts(&mut e, 1, &text)[0], "pine");
}

#[test]
fn case_follows_what_was_typed() {
    let mut e = buffer_only();
    let got = inserts(&mut e, 1, "the weather is fine. the weather. We");
    assert_eq!(got[0], "ather");
    let p = e.predict(&req(2, "the weather is fine. WE"));
    assert_eq!(p.candidates[0].insert, "ATHER");
    assert_eq!(p.candidates[0].word, "WEATHER");
    assert_eq!(p.prefix, "WE");
}

#[test]
fn incremental_typing_matches_a_fresh_engine() {
    // Learning from the text must not depend on how it arrived (keystroke by
    // keystroke with a sliding window, or all at once).
    let doc =
        " one two three two one four two five two six seven two eight nine two ten".repeat(20);
    let mut live = buffer_only();
    for end in 1..doc.len() {
        let start = end.saturating_sub(300);
        live.predict(&req(7, &doc[start..end]));
    }
    let mut fresh = buffer_only();
    let tail = &doc[doc.len() - 300..];
    let whole = inserts(&mut fresh, 7, &format!("{doc} t"));
    assert_eq!(inserts(&mut live, 7, &format!("{tail} t")), whole);
    assert_eq!(whole[0], "wo", "{whole:?}");
}

#[test]
fn forget_drops_a_buffer_and_accepted_words_are_learnt() {
    let mut e = buffer_only();
    assert_eq!(
        inserts(&mut e, 1, "frobnicate the widget; fro")[0],
        "bnicate"
    );
    e.forget(1);
    assert!(inserts(&mut e, 1, "fro").is_empty());
    // Buffers are separate...
    assert!(inserts(&mut e, 2, "zzz fro").is_empty());
    // ...but what the user accepted is proposed everywhere.
    e.accepted(1, "frobnicate(");
    assert_eq!(inserts(&mut e, 3, "x fro")[0], "bnicate");
}

#[test]
fn word_list_from_the_vocabulary_file() {
    let (mut e, _dir) = with_word_list(&[
        "the", ",", "of", "and", "to", "there", "The", "receive", "house",
    ]);
    let info = e.info();
    assert_eq!(info.vocab_size, 12);
    assert!(
        info.model_error.is_some(),
        "no weights file: the model is reported missing"
    );
    let p = e.predict(&req(1, "Th"));
    assert_eq!(p.candidates[0].insert, "e");
    assert_eq!(p.candidates[0].word, "The");
    assert_eq!(p.candidates[0].source, Source::Words);
    assert_eq!(inserts(&mut e, 1, "in the"), vec!["re"]);
    // At a word boundary the most frequent words are proposed.
    assert_eq!(inserts(&mut e, 5, " "), vec!["the", "of", "and"]);
    // Buffer words are interpolated with the list: a repeated identifier wins.
    assert_eq!(
        inserts(&mut e, 1, "theorem_a theorem_a theorem_a the")[0],
        "orem_a"
    );
}

#[test]
fn corrections_when_nothing_fits() {
    let (mut e, _dir) = with_word_list(&["the", "receive", "house", "recipe"]);
    let p = e.predict(&req(1, "I will recieve"));
    let c = &p.candidates[0];
    assert_eq!(
        (c.word.as_str(), c.replace, c.source),
        ("receive", 7, Source::Correction)
    );
    assert!(p.ghost.is_empty(), "a correction is not ghost text");
}

#[test]
fn ghost_text_respects_the_threshold() {
    let mut e = Engine::new(EngineOptions {
        model_path: Some(PathBuf::from("/nonexistent/laya-test.safetensors")),
        threshold: Some(0.3),
        ..EngineOptions::default()
    });
    let p = e.predict(&req(
        1,
        "unique words: banana bandana bandit bangle band ba",
    ));
    assert!(p.candidates.len() == 3 && p.ghost.is_empty(), "{p:?}");
    // Another buffer: in buffer 1 "bandana" was followed by "bandit" (bigram cache).
    let p = e.predict(&req(2, "unique words: banana banana banana bandana ba"));
    assert_eq!(p.ghost, "nana");
    let mut eager = Engine::new(EngineOptions {
        model_path: Some(PathBuf::from("/nonexistent.safetensors")),
        threshold: Some(0.0),
        ..EngineOptions::default()
    });
    assert!(!eager
        .predict(&req(1, "unique words: banana bandana ba"))
        .ghost
        .is_empty());
}

#[test]
fn odd_input_never_panics() {
    let mut e = buffer_only();
    let big = "x".repeat(1 << 20);
    let weird = "é\u{0}\u{FFFF}😀\r\n\t\u{0b}\u{0c}";
    for before in ["", " ", "\n", "_", "9", weird, &big, "a\u{300}b", "😀ab"] {
        let p = e.predict(&req(9, before));
        assert!(p.candidates.len() <= 3);
    }
    let p = e.predict(&Request {
        k: 0,
        seen_last: false,
        learn: false,
        ..req(9, "xx xxy xx")
    });
    assert!(p.candidates.len() <= 1);
    e.accepted(9, weird);
    e.forget(12345);
}

#[test]
fn tokenizer_matches_the_shared_vectors() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/tokenizer_vectors.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let cases: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    assert!(!cases.is_empty());
    for case in cases {
        let input = case["text"].as_str().unwrap();
        let want: Vec<&str> = case["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        let got: Vec<&str> = tokenize(input).map(|t| t.text).collect();
        assert_eq!(got, want, "text {input:?}");
    }
}

#[test]
fn deleted_text_leaves_no_trace_in_the_word_cache() {
    // A typo typed, deleted and retyped: the typo is not proposed afterwards,
    // and the word is counted once, as in a fresh reading of the final text.
    let mut e = buffer_only();
    let typed = "we parse the tokens; teh parsed ";
    for end in 1..=typed.len() {
        e.predict(&req(1, &typed[..end]));
    }
    for end in (typed.len() - 11..typed.len()).rev() {
        e.predict(&req(1, &typed[..end]));
    }
    let fixed = "we parse the tokens; the parser te";
    for end in typed.len() - 11..=fixed.len() {
        e.predict(&req(1, &fixed[..end]));
    }
    let live = inserts(&mut e, 1, fixed);
    assert!(!live.contains(&"h".to_string()), "{live:?}");
    let mut fresh = buffer_only();
    assert_eq!(live, inserts(&mut fresh, 1, fixed));
}
