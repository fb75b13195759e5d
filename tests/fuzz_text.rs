//! Fuzzing of the tokenizer and the per-buffer context on arbitrary UTF-8
//! (src/text/tokenizer.rs, src/engine/context.rs). The tokenizer: tokens
//! are slices of the text at their offsets, in order, covering every
//! character that is not a blank; a tail is the end of the whole; the prefix
//! split gives back the text. The context: a document edited anywhere
//! (typing, deleting, jumping, pasting) and read at random cursors never
//! panics, and its model state stays a GRU state (finite, within [-1, 1]).
//! See support/fuzz.rs for the runs.

#[path = "support/fuzz.rs"]
mod fuzz;

use laya::engine::context::{BufferContext, REREAD};
use laya::model::cpu::CpuBackend;
use laya::model::kernels::Simd;
use laya::model::weights::{WeightType, Weights};
use laya::model::{testgen, Backend};
use laya::text::tokenizer::{
    is_word_char, split_prefix, tail_start, tokenize, tokenize_tail, TokenKind,
};
use laya::text::vocab::Vocab;
use proptest::prelude::*;
use std::path::Path;
use std::sync::OnceLock;

/// Text of every kind: anything, and prose/code with the characters that
/// matter to the tokenizer (blanks, newlines, word characters, multi-byte).
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-zA-Z0-9_ \t\r\n.,;(){}\u{e9}\u{2014}\u{201c}\u{201d}\u{1f389}\u{4eca}\u{0b}\u{0c}]{0,200}",
        prop::collection::vec(prop_oneof!["[a-z]{1,8}", prop::sample::select(vec![" ", "\n", "\u{2014}", "caf\u{e9}", "\u{1f389}"]).prop_map(String::from)], 0..80)
            .prop_map(|v| v.concat()),
    ]
}

fn check_tokenizer(text: &str, n: usize) -> Result<(), TestCaseError> {
    let all: Vec<_> = tokenize(text).collect();
    let mut end = 0;
    let mut covered = String::new();
    for t in &all {
        prop_assert!(t.start >= end, "tokens overlap or go back: {:?}", t);
        let between = &text[end..t.start];
        prop_assert!(
            between
                .chars()
                .all(|c| matches!(c, ' ' | '\t' | '\r' | '\u{0b}' | '\u{0c}')),
            "non-blank text skipped: {:?}",
            between
        );
        prop_assert_eq!(&text[t.start..t.start + t.text.len()], t.text);
        match t.kind {
            TokenKind::Word => prop_assert!(t.text.chars().all(is_word_char)),
            TokenKind::Newline => prop_assert_eq!(t.text, "\n"),
            TokenKind::Symbol => prop_assert_eq!(t.text.chars().count(), 1),
        }
        covered.push_str(t.text);
        end = t.start + t.text.len();
    }
    let trailing = &text[end..];
    prop_assert!(
        trailing
            .chars()
            .all(|c| matches!(c, ' ' | '\t' | '\r' | '\u{0b}' | '\u{0c}')),
        "non-blank text after the last token: {:?}",
        trailing
    );
    let tail: Vec<_> = tokenize_tail(text, n).collect();
    prop_assert_eq!(&tail[..], &all[all.len().saturating_sub(n)..]);
    let at = tail_start(text, n);
    prop_assert!(text.is_char_boundary(at));
    let rest: Vec<_> = tokenize(&text[at..])
        .map(|t| (t.text, t.start + at))
        .collect();
    let want: Vec<_> = tail.iter().map(|t| (t.text, t.start)).collect();
    prop_assert_eq!(rest, want);
    let (context, prefix) = split_prefix(text);
    prop_assert_eq!(format!("{context}{prefix}"), text);
    prop_assert!(prefix.chars().all(is_word_char));
    prop_assert!(!context.ends_with(is_word_char));
    Ok(())
}

fn tokenizer_case() -> impl Strategy<Value = (String, usize)> {
    (text(), 0usize..300)
}

/// One change to the document, then a read at a cursor.
#[derive(Debug, Clone)]
enum Edit {
    /// Insert text at a fraction of the document's length.
    Insert(f64, String),
    /// Delete up to n characters from a fraction of the document.
    Delete(f64, usize),
    /// Nothing changes; only the cursor moves.
    Jump,
}

fn edit() -> impl Strategy<Value = (Edit, f64)> {
    let e = prop_oneof![
        4 => (0.0..=1.0f64, text()).prop_map(|(at, t)| Edit::Insert(at, t)),
        4 => (prop::bool::ANY, "[a-z ]{1,3}|\u{e9}|\u{2014}").prop_map(|(_, t)| Edit::Insert(1.0, t)),
        2 => (0.0..=1.0f64, 1usize..40).prop_map(|(at, n)| Edit::Delete(at, n)),
        1 => Just(Edit::Jump),
    ];
    (e, prop_oneof![3 => Just(1.0), 1 => 0.0..=1.0f64])
}

/// The char boundary nearest below `frac` of `s`'s length.
fn boundary(s: &str, frac: f64) -> usize {
    let mut at = ((s.len() as f64) * frac) as usize;
    at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The real vocabulary and a small random model over it (the context's
/// work does not depend on the model's size; a step of the default model
/// would make each case slower, not different).
struct Model {
    vocab: Vocab,
    backend: CpuBackend,
}

fn model() -> &'static Model {
    static CELL: OnceLock<Model> = OnceLock::new();
    CELL.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("laya-fuzz-text-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/laya-default.vocab.txt");
        let text = std::fs::read_to_string(real).unwrap();
        let path = dir.join("tiny.safetensors");
        testgen::write_random_weights(&text, &path, 8, 16, WeightType::F32, 7).unwrap();
        let vocab = Vocab::load(&dir.join("tiny.vocab.txt")).unwrap();
        let backend = CpuBackend::new(Weights::open(&path, Some(&vocab)).unwrap(), None);
        let _ = std::fs::remove_dir_all(&dir);
        Model { vocab, backend }
    })
}

fn check_context(start: &str, edits: &[(Edit, f64)]) -> Result<(), TestCaseError> {
    let m = model();
    let mut backend = m.backend.fork().expect("the cpu backend forks");
    let hidden = backend.hidden_dim();
    let mut ctx = BufferContext::new();
    let mut doc = start.to_string();
    let (mut pointer, mut pointer_oov) = (Vec::new(), Vec::new());
    let (result, peak) = fuzz::peak_bytes(|| -> Result<(), TestCaseError> {
        for (e, cursor) in edits {
            match e {
                Edit::Insert(at, t) => {
                    let at = boundary(&doc, *at);
                    doc.insert_str(at, t);
                }
                Edit::Delete(at, n) => {
                    let from = boundary(&doc, *at);
                    let to = doc[from..]
                        .char_indices()
                        .nth(*n)
                        .map_or(doc.len(), |(i, _)| from + i);
                    doc.replace_range(from..to, "");
                }
                Edit::Jump => {}
            }
            let before = &doc[..boundary(&doc, *cursor)];
            let (context, _) = split_prefix(before);
            ctx.sync(
                context,
                Some(&m.vocab),
                Some((backend.as_mut(), &m.vocab)),
                REREAD,
            )
            .map_err(|e| TestCaseError::fail(format!("sync failed: {e:#}")))?;
            // A bounded window of tokens, whatever the document's length.
            prop_assert!(ctx.len() <= 512, "{} tokens kept", ctx.len());
            let state = ctx.state(hidden);
            prop_assert_eq!(state.len(), hidden);
            prop_assert!(
                state.iter().all(|v| v.is_finite() && v.abs() <= 1.0),
                "not a GRU state: {:?}",
                state
            );
            ctx.pointer(
                Simd::detect(),
                hidden,
                (10.0, 200),
                &mut pointer,
                &mut pointer_oov,
            );
            let total: f32 = pointer
                .iter()
                .map(|p| p.1)
                .chain(pointer_oov.iter().map(|p| p.1))
                .sum();
            prop_assert!(
                pointer.is_empty() && pointer_oov.is_empty() || (total - 1.0).abs() < 1e-3,
                "pointer shares sum to {}",
                total
            );
        }
        Ok(())
    });
    result?;
    // The context keeps a bounded window of tokens and states, whatever was typed.
    let typed: usize = start.len()
        + edits
            .iter()
            .map(|(e, _)| match e {
                Edit::Insert(_, t) => t.len(),
                _ => 0,
            })
            .sum::<usize>();
    fuzz::within(peak, 4096 * typed + (4 << 20), "context")
}

fn context_case() -> impl Strategy<Value = (String, Vec<(Edit, f64)>)> {
    (text(), prop::collection::vec(edit(), 1..12))
}

#[test]
fn tokenizer() {
    fuzz::run("tokenizer", fuzz::QUICK, tokenizer_case(), |(t, n)| {
        check_tokenizer(&t, n)
    });
}

#[test]
fn context() {
    fuzz::run("context", fuzz::QUICK, context_case(), |(s, e)| {
        check_context(&s, &e)
    });
}

#[test]
#[ignore = "long run: LAYA_FUZZ_CASES (default 1M) cases"]
fn tokenizer_long() {
    fuzz::run(
        "tokenizer",
        fuzz::long_cases(),
        tokenizer_case(),
        |(t, n)| check_tokenizer(&t, n),
    );
}

#[test]
#[ignore = "long run: LAYA_FUZZ_CASES (default 1M) cases"]
fn context_long() {
    fuzz::run("context", fuzz::long_cases(), context_case(), |(s, e)| {
        check_context(&s, &e)
    });
}
