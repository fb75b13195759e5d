//! Ghost text: the top candidate's rest when it is likely enough, continued
//! by the words the model is confident follow it.

use super::buffer::{BufferEntry, Continuation};
use super::context::Ahead;
use super::kind::TextKind;
use super::options::{DEFAULT_CODE_THRESHOLD, DEFAULT_THRESHOLD};
use super::{Candidate, Engine};
use crate::math::argmax;
use crate::model::kernels::softmax;

/// Further ghost words are added while the model gives the next word at least this.
const CONTINUE_THRESHOLD: f32 = 0.5;
/// Tokens (the most frequent) scored first when testing whether a ghost
/// continuation is confident. Frequent tokens are the usual continuations; a
/// rare one that would be confident on its own is missed (a shorter ghost).
const FREQUENT_ROWS: usize = 2048;

impl Engine {
    /// The ghost text for `candidates` (best first) completing `prefix`:
    /// the top one's rest when it is likely enough, continued by the words
    /// the model is confident follow it.
    pub(crate) fn ghost(
        &mut self,
        entry: &mut BufferEntry,
        prefix: &str,
        candidates: &[Candidate],
    ) -> String {
        let threshold = self.ghost_threshold(entry);
        let mut ghost = String::new();
        if let Some(top) = candidates.first() {
            if top.score >= threshold && top.replace == 0 {
                ghost.push_str(&top.insert);
                let word = top.word.clone();
                // Inside a word only a continuation computed earlier is shown:
                // computing one costs a step and an output layer, which the
                // keystroke-inside-a-word budget does not have.
                let may_compute = prefix.is_empty() || self.opts.ghost_inside_words;
                let more = self.continuation(entry, &word, may_compute);
                ghost.push_str(&more);
            }
        }
        ghost
    }

    /// The threshold of the text at the cursor: code's in code (as the
    /// editor says or, where it did not, as the words before the cursor
    /// read: `Engine::kind_at_cursor`), else prose's.
    fn ghost_threshold(&self, entry: &BufferEntry) -> f32 {
        match entry.kind {
            TextKind::Code => self.opts.code_threshold.unwrap_or(DEFAULT_CODE_THRESHOLD),
            _ => self.opts.threshold.unwrap_or(DEFAULT_THRESHOLD),
        }
    }

    /// The kind of text at the cursor: what the editor says (`told`) or,
    /// where it did not, how the words before the cursor read (once per
    /// context version), so that the ranking, what gives way and the ghost
    /// threshold treat text the same whether an editor or `laya eval` /
    /// `laya protocol` (which cannot tell) asks.
    pub(crate) fn kind_at_cursor(&self, entry: &mut BufferEntry, told: TextKind) -> TextKind {
        if told != TextKind::Unknown {
            return told;
        }
        let version = entry.ctx.version;
        match entry.reads_as {
            Some((v, kind)) if v == version => kind,
            _ => {
                let kind = self
                    .kinds
                    .as_ref()
                    .map_or(TextKind::Unknown, |k| k.reads_as(entry.ctx.last_context()));
                entry.reads_as = Some((version, kind));
                kind
            }
        }
    }

    /// Words the model expects after `word` completes, while it is confident
    /// (" and then"); cached per context so keystrokes inside a word reuse it.
    fn continuation(&mut self, entry: &mut BufferEntry, word: &str, may_compute: bool) -> String {
        if self.opts.ghost_words == 0 {
            return String::new();
        }
        if let Some(c) = &entry.continuation {
            if c.version == entry.ctx.version && c.word == word {
                return c.text.clone();
            }
        }
        if !may_compute {
            return String::new();
        }
        let (Some(backend), Some(vocab)) = (&mut self.backend, &self.vocab) else {
            return String::new();
        };
        let Some(mut id) = vocab.word_id(word) else {
            return String::new();
        };
        let hidden = backend.hidden_dim();
        let mut h = entry.ctx.state(hidden).to_vec();
        self.scratch_state.resize(hidden, 0.0);
        self.scratch_logits.resize(backend.vocab_size(), 0.0);
        let mut text = String::new();
        let frequent = FREQUENT_ROWS.min(backend.vocab_size());
        for _ in 0..self.opts.ghost_words {
            if backend.step(&h, id, &mut self.scratch_state).is_err() {
                break;
            }
            std::mem::swap(&mut h, &mut self.scratch_state);
            if text.is_empty() {
                // The state after the word itself: the next keystroke that
                // completes the word will not need this step again.
                entry.ctx.ahead = Some(Ahead {
                    version: entry.ctx.version,
                    steps: vec![(id, h.clone())],
                });
            }
            // Cheap test first: the most frequent tokens alone bound the best
            // one's probability from above (their normaliser is smaller); most
            // places are not confident and stop here at an eighth of the cost.
            let head = &mut self.scratch_logits[..frequent];
            if backend.logits_rows(&h, 0..frequent, head).is_err() {
                break;
            }
            softmax(self.simd, head);
            if argmax(head).1 < CONTINUE_THRESHOLD {
                break;
            }
            if backend.logits(&h, &mut self.scratch_logits).is_err() {
                break;
            }
            softmax(self.simd, &mut self.scratch_logits);
            let (best, p) = argmax(&self.scratch_logits);
            if p < CONTINUE_THRESHOLD || !vocab.is_word(best) {
                break;
            }
            text.push(' ');
            text.push_str(vocab.text(best));
            id = best;
        }
        entry.continuation = Some(Continuation {
            version: entry.ctx.version,
            word: word.to_string(),
            text: text.clone(),
        });
        text
    }
}
