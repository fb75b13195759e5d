//! Fuzzing of `Engine::predict` itself on the real default model: documents
//! of arbitrary UTF-8 edited anywhere and read at arbitrary cursors, in a
//! few buffers at once (short, middling and long documents), keystrokes
//! and backspaces at the end between the edits, with any number of
//! candidates asked for, accepted words and forgotten buffers in between.
//! Every answer is well formed (at most k candidates (one for k = 0), a
//! prefix that ends the text before the cursor, scores in [0, 1]) and
//! nothing panics. See support/fuzz.rs for the runs.

#[path = "support/default_engine.rs"]
mod default_engine;
#[path = "support/fuzz.rs"]
mod fuzz;

use laya::engine::kind::TextKind;
use laya::engine::{Engine, Request};
use proptest::prelude::*;
use std::sync::{Mutex, OnceLock};

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => any::<String>(),
        3 => "[a-zA-Z0-9_ \t\n.,;(){}'\"\u{e9}\u{2014}\u{201c}\u{201d}\u{ab}\u{2026}\u{1f389}\u{4eca}]{0,120}",
        3 => prop::collection::vec(
            prop_oneof![
                3 => "[a-z]{1,9}",
                3 => prop::sample::select(vec!["the", "of", "and", "to", " ", " ", "\n", ". ", "\u{2014}", "caf\u{e9}", "fn", "(", "{"]).prop_map(String::from),
            ],
            0..60
        )
        .prop_map(|v| v.concat()),
        1 => ("[a-z ]{0,20}", 200usize..3000).prop_map(|(s, n)| s.repeat(n / s.len().max(1)).chars().take(n).collect()),
    ]
}

#[derive(Debug, Clone)]
enum Step {
    /// Insert text at a fraction of the buffer's length, then read at a cursor.
    Type {
        buffer: u64,
        at: f64,
        text: String,
        cursor: f64,
        k: usize,
        kind: u8,
        seen: bool,
    },
    /// Delete the last `n` characters (backspace), then read at the end.
    Backspace {
        buffer: u64,
        n: usize,
        k: usize,
        kind: u8,
        seen: bool,
    },
    /// Accept a word into the buffer.
    Accept { buffer: u64, word: String },
    /// Forget the buffer.
    Forget { buffer: u64 },
}

fn step() -> impl Strategy<Value = Step> {
    let cursor = prop_oneof![3 => Just(1.0), 1 => 0.0..=1.0f64];
    let k = || prop_oneof![8 => 0usize..12, 1 => any::<usize>()];
    // A keystroke or two at the end, as most requests are: they take the
    // engine's cheap paths (inside a word, one new word) right after
    // whatever the edits before left.
    let keys = prop_oneof![
        6 => "[a-z]{1,2}",
        2 => "[ .,\n'(\u{e9}\u{2014}\u{201c}]",
        1 => any::<char>().prop_map(String::from),
    ];
    prop_oneof![
        12 => (1u64..4, prop_oneof![3 => Just(1.0), 1 => 0.0..=1.0f64], text(), cursor, k(), 0u8..6, prop::bool::ANY)
            .prop_map(|(buffer, at, text, cursor, k, kind, seen)| Step::Type { buffer, at, text, cursor, k, kind, seen }),
        12 => (1u64..4, keys, k(), 0u8..6, prop::bool::ANY)
            .prop_map(|(buffer, text, k, kind, seen)| Step::Type { buffer, at: 1.0, text, cursor: 1.0, k, kind, seen }),
        3 => (1u64..4, 1usize..4, k(), 0u8..6, prop::bool::ANY)
            .prop_map(|(buffer, n, k, kind, seen)| Step::Backspace { buffer, n, k, kind, seen }),
        1 => (1u64..4, any::<String>()).prop_map(|(buffer, word)| Step::Accept { buffer, word }),
        1 => (1u64..4).prop_map(|buffer| Step::Forget { buffer }),
    ]
}

fn boundary(s: &str, frac: f64) -> usize {
    let mut at = ((s.len() as f64 * frac) as usize).min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn kind(k: u8) -> TextKind {
    match k {
        1 => TextKind::Prose,
        2 => TextKind::Comment,
        3 => TextKind::String,
        4 => TextKind::Code,
        _ => TextKind::Unknown,
    }
}

/// The longest document of each buffer (1..=3), in bytes.
const CAPS: [usize; 4] = [0, 256, 2048, 8192];

/// One engine for the whole run, as a host keeps one: buffers' state
/// carries over from case to case.
fn engine() -> &'static Mutex<(Engine, [String; 4])> {
    static E: OnceLock<Mutex<(Engine, [String; 4])>> = OnceLock::new();
    E.get_or_init(|| Mutex::new((default_engine::engine(""), Default::default())))
}

/// One request with the text before the cursor `before`, and the checks
/// of its answer.
fn answer(
    engine: &mut Engine,
    buffer: u64,
    before: &str,
    (k, kd, seen): (usize, u8, bool),
) -> Result<(), TestCaseError> {
    let req = Request {
        buffer,
        before,
        filetype: if kd % 2 == 0 { "rust" } else { "markdown" },
        kind: kind(kd),
        k,
        seen_last: seen,
        learn: seen,
    };
    let p = engine.predict(&req);
    // k = 0 still gets the top candidate (the ghost text's).
    let most = k.clamp(1, laya::engine::MAX_CANDIDATES);
    prop_assert!(
        p.candidates.len() <= most,
        "{} candidates for k = {}",
        p.candidates.len(),
        k
    );
    prop_assert!(
        before.ends_with(&p.prefix),
        "prefix {:?} does not end {:?}",
        p.prefix,
        before
    );
    let typed = p.prefix.chars().count();
    for c in &p.candidates {
        prop_assert!(
            c.score.is_finite() && (0.0..=1.0).contains(&c.score),
            "{:?}",
            c
        );
        prop_assert!(
            c.replace <= typed,
            "{:?} replaces more than the prefix {:?}",
            c,
            p.prefix
        );
        // A completion inserts the rest of its word (after the separator a
        // next word brings, such as a space).
        prop_assert!(
            c.replace > 0 || c.word.ends_with(c.insert.trim_start()),
            "{:?}",
            c
        );
    }
    Ok(())
}

fn check(steps: &[Step]) -> Result<(), TestCaseError> {
    let mut guard = engine().lock().unwrap_or_else(|p| p.into_inner());
    let (engine, docs) = &mut *guard;
    let mut input = 0;
    let (result, peak) = fuzz::peak_bytes(|| -> Result<(), TestCaseError> {
        for s in steps {
            match s {
                Step::Type {
                    buffer,
                    at,
                    text,
                    cursor,
                    k,
                    kind,
                    seen,
                } => {
                    let doc = &mut docs[*buffer as usize];
                    let at = boundary(doc, *at);
                    doc.insert_str(at, text);
                    input += text.len();
                    // The host sends a few KB before the cursor at most; the
                    // buffers keep short, middling and long documents, so
                    // that the cheaper short ones make more cases in the time
                    // while the long ones keep the engine's bounds in play.
                    let cap = CAPS[*buffer as usize];
                    while doc.len() > cap {
                        let cut = boundary(doc, 0.5);
                        doc.replace_range(..cut, "");
                    }
                    let c = boundary(doc, *cursor);
                    answer(engine, *buffer, &doc[..c], (*k, *kind, *seen))?;
                }
                Step::Backspace {
                    buffer,
                    n,
                    k,
                    kind,
                    seen,
                } => {
                    let doc = &mut docs[*buffer as usize];
                    for _ in 0..*n {
                        doc.pop();
                    }
                    answer(engine, *buffer, doc, (*k, *kind, *seen))?;
                }
                Step::Accept { buffer, word } => engine.accepted(*buffer, word),
                Step::Forget { buffer } => {
                    engine.forget(*buffer);
                    docs[*buffer as usize].clear();
                }
            }
        }
        Ok(())
    });
    result?;
    fuzz::within(peak, 64 << 20, &format!("predict over {input} bytes typed"))
}

/// One step per case: the engine and the documents carry over from case to
/// case, so a run is one long editing session (a case is one keystroke's
/// work, and the long run's count is that of predictions).
fn case() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(step(), 1..=1)
}

#[test]
fn predict() {
    fuzz::run("predict", fuzz::QUICK, case(), |s| check(&s));
}

#[test]
#[ignore = "long run: LAYA_FUZZ_CASES (default 1M) cases"]
fn predict_long() {
    fuzz::run("predict", fuzz::long_cases(), case(), |s| check(&s));
}
