//! The typing decision: text before the cursor → candidates.
//!
//! Knows nothing of Neovim. `Engine::predict` is called by the RPC layer (and
//! by the CLI's protocol/eval/bench) once per keystroke.
//!
//! API contract (shared by rpc/ and cli): `Engine::new(EngineOptions)` never
//! fails (a model error falls back to the non-neural sources and is reported in
//! `EngineInfo::model_error`); `predict(&Request) -> Prediction`;
//! `accepted(buffer, text)`; `info() -> EngineInfo`.
//!
//! Path of a keystroke: `tokenizer` (context + prefix) → `context` (per-buffer
//! tokens and model states) → `decision` (model distribution, `words` cache
//! model, word list, `corrections`, `case` adaptation → ranking and ghost).

pub mod case;
pub mod context;
pub mod corrections;
mod decision;
pub mod tokenizer;
pub mod vocab;
pub mod words;

pub use decision::{softmax_in_place, Engine, EngineInfo, EngineOptions, DEFAULT_THRESHOLD};

/// Where a candidate came from (shown in the completion menu).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The neural language model.
    Model,
    /// Words of the open buffer / recently typed words (the cache model).
    Buffer,
    /// The built-in frequency word list.
    Words,
    /// A spelling correction of the typed prefix.
    Correction,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Model => "model",
            Source::Buffer => "buffer",
            Source::Words => "words",
            Source::Correction => "correction",
        }
    }
}

/// One keystroke's question.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// Identifies the document (Neovim buffer number); state is cached per buffer.
    pub buffer: u64,
    /// Text before the cursor (bounded by the caller, a few KB).
    pub before: &'a str,
    /// Rest of the cursor's line after the cursor.
    pub after: &'a str,
    pub filetype: &'a str,
    /// Number of candidates wanted.
    pub k: usize,
}

/// One proposal.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The whole word as it would read after accepting.
    pub word: String,
    /// Text to insert at the cursor after deleting `replace` characters
    /// before it (for completions `replace` = 0 and `insert` = rest of word).
    pub insert: String,
    /// Characters (code points) of the typed prefix this replaces (corrections).
    pub replace: usize,
    pub source: Source,
    /// Probability-like score in [0, 1]; higher is better.
    pub score: f32,
}

/// The answer to one keystroke.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prediction {
    /// The word part before the cursor that candidates complete.
    pub prefix: String,
    /// Best first.
    pub candidates: Vec<Candidate>,
    /// Ghost text to show after the cursor (top candidate's rest, possibly
    /// continued with following words); empty when not confident enough.
    pub ghost: String,
}

// ---- TEMPORARY LOCAL STUB (not committed): replaced by the engine owner's Engine ----
use std::collections::HashMap;
use std::path::PathBuf;

#[derive(Debug, Clone, Default)]
pub struct EngineOptions {
    pub model_path: Option<PathBuf>,
    pub backend: String,
    pub threshold: Option<f32>,
}

#[derive(Debug, Clone, Default)]
pub struct EngineInfo {
    pub backend: String,
    pub device: String,
    pub model_path: Option<PathBuf>,
    pub dtype: String,
    pub vocab_size: usize,
    pub load_ms: f64,
    pub model_error: Option<String>,
}

pub struct Engine {
    opts: EngineOptions,
}

impl Engine {
    pub fn new(opts: EngineOptions) -> Engine {
        Engine { opts }
    }
    pub fn predict(&mut self, req: &Request) -> Prediction {
        let is_word = |c: char| c.is_alphanumeric() || c == '_';
        let prefix: String = {
            let rev: String = req
                .before
                .chars()
                .rev()
                .take_while(|c| is_word(*c))
                .collect();
            rev.chars().rev().collect()
        };
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for w in req.before.split(|c: char| !is_word(c)) {
            if w.len() > prefix.len() && w.starts_with(prefix.as_str()) && !prefix.is_empty() {
                *counts.entry(w).or_default() += 1;
            }
        }
        let mut v: Vec<(&str, usize)> = counts.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let candidates: Vec<Candidate> = v
            .iter()
            .take(req.k)
            .map(|(w, n)| Candidate {
                word: w.to_string(),
                insert: w[prefix.len()..].to_string(),
                replace: 0,
                source: Source::Buffer,
                score: *n as f32 / 10.0,
            })
            .collect();
        let ghost = candidates
            .first()
            .map(|c| c.insert.clone())
            .unwrap_or_default();
        Prediction {
            prefix,
            candidates,
            ghost,
        }
    }
    pub fn accepted(&mut self, _buffer: u64, _text: &str) {}
    pub fn forget(&mut self, _buffer: u64) {}
    pub fn info(&self) -> EngineInfo {
        EngineInfo {
            backend: self.opts.backend.clone(),
            device: "stub".into(),
            ..Default::default()
        }
    }
}
