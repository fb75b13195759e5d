//! The typing decision: text before the cursor → candidates and ghost text.
//!
//! Knows nothing of Neovim. `Engine::predict` is called by the RPC layer (and
//! by the CLI's protocol/eval/bench) once per keystroke.
//!
//! API contract (shared by rpc/ and cli): `Engine::new(EngineOptions)` never
//! fails (a model error falls back to the non-neural sources and is reported in
//! `EngineInfo::model_error`; a bad word list, in `words_error`; a bad kinds file, in `kinds_error`); `predict(&Request) -> Prediction`;
//! `accepted(buffer, text)`; `info() -> EngineInfo`.
//!
//! `Engine::predict` (engine.rs) is a list of steps:
//! 1. `context`: the buffer's tokens and model states brought to the text
//!    before the cursor (`text::tokenizer` splits off the typed prefix), and
//!    the model's distribution there (`dist`, with the neural cache's pointer);
//! 2. `give_way`: the top candidates of this word the user typed past;
//! 3. `rank`: the candidate sources (`rank/sources.rs`: vocabulary, buffer and
//!    user words, word list, pointer, bigrams) fill a pool, the mixer
//!    (`rank/mixer.rs`) weighs them with the `Tuning` table, merges spellings
//!    by `case` and keeps the best k; then the words typed past give way;
//! 4. `corrections` when no known word fits the prefix;
//! 5. `ghost`: the top candidate's rest and its continuation;
//! 6. what the next keystroke needs: give-way's memory and the word
//!    `next_keys` / `ahead_thread` think ahead over between keystrokes.

mod ahead_thread;
pub mod bigrams;
mod buffer;
pub mod case;
pub mod context;
pub mod corrections;
mod dist;
#[allow(clippy::module_inception)]
mod engine;
pub mod frozen;
pub mod gate;
mod ghost;
mod give_way;
pub mod kind;
pub mod kind_shares;
mod load;
mod load_error;
pub mod memory;
mod next_keys;
mod options;
pub mod personal;
mod rank;
pub mod rates;
pub mod rejected;
pub mod separator;
pub mod word_cache;
pub mod word_list;

pub use engine::Engine;
pub use load_error::LoadError;
pub use options::{EngineInfo, EngineOptions, GiveWay, Tuning, DEFAULT_THRESHOLD, REJECTED_KEEPS};
pub use rank::worth;

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

/// The most candidates one prediction gives.
pub const MAX_CANDIDATES: usize = 100;

/// Candidates every prediction ranks, however few it is asked for: the
/// Neovim host's (ghost + menu). What the ranking draws from grows with
/// the candidates ranked (spellings that merge by case add up, words typed
/// past found lower take their share along), and so can its first: ranked
/// from as many, `laya protocol`'s and `laya eval`'s ghost text (k = 3) is
/// the host's.
pub const HOST_CANDIDATES: usize = 8;

/// One keystroke's question.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// Identifies the document (Neovim buffer number); state is cached per buffer.
    pub buffer: u64,
    /// Text before the cursor (bounded by the caller, a few KB).
    pub before: &'a str,
    pub filetype: &'a str,
    /// Prose, comment, string or code at the cursor (the editor's syntax).
    pub kind: kind::TextKind,
    /// Number of candidates wanted (1 to `MAX_CANDIDATES`; 0 gets the top
    /// one, which the ghost text needs, a larger k gets `MAX_CANDIDATES`).
    pub k: usize,
    /// The user had seen the previous answer for this buffer when typing
    /// the key that led here: its top candidate, if typed past, gives way
    /// (`Tuning::give_way`). METRICS.md's user reads every answer; in
    /// Neovim the ghost text must have been on screen a while (`ghost.give_way`).
    pub seen_last: bool,
    /// The buffer may teach the user's history: what the user typed past
    /// in it is remembered as rejected (`Tuning::rejected`). False for
    /// buffers kept out of personal learning.
    pub learn: bool,
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
