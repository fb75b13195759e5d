//! The typing decision: text before the cursor → candidates.
//!
//! Knows nothing of Neovim. `Engine::predict` is called by the RPC layer (and
//! by the CLI's protocol/eval/bench) once per keystroke.
//!
//! API contract (shared by rpc/ and cli): `Engine::new(EngineOptions)` never
//! fails (a model error falls back to the non-neural sources and is reported in
//! `EngineInfo::model_error`; a bad word list, in `words_error`); `predict(&Request) -> Prediction`;
//! `accepted(buffer, text)`; `info() -> EngineInfo`.
//!
//! Path of a keystroke: `tokenizer` (context + prefix) → `context` (per-buffer
//! tokens and model states) → `decision` (model distribution, `words` cache
//! model, word list, `lexicon` (words beyond the vocabulary), `corrections`,
//! `case` adaptation → ranking and ghost).

pub mod bigrams;
pub mod case;
pub mod context;
pub mod corrections;
mod decision;
mod dist;
mod helper;
pub mod lexicon;
pub mod words;

pub use decision::{Engine, EngineInfo, EngineOptions, Tuning, DEFAULT_THRESHOLD};

/// Where a candidate came from (shown in the completion menu).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The neural language model.
    Model,
    /// Words of the open buffer / recently typed words (the cache model).
    Buffer,
    /// A built-in word list: the vocabulary's (without a model) or the
    /// list beyond the vocabulary (`<stem>.words.txt`).
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
    /// The user had seen the previous answer for this buffer when typing
    /// the key that led here: its top candidate, if typed past, gives way
    /// (`Tuning::typed_past`). METRICS.md's user reads every answer; in
    /// Neovim the ghost text must have been on screen a while (`ghost.give_way`).
    pub seen_last: bool,
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
