//! The model's next-token distribution at one buffer's cursor context, and
//! what the ranking reads from it.

use super::vocab::Vocab;
use crate::model::kernels::{softmax, Simd};

pub(crate) struct Dist {
    /// The context version it was computed for.
    pub version: u64,
    /// Softmax probabilities by token id (logits until `finish`).
    pub probs: Vec<f32>,
    /// The most probable word tokens, best first.
    pub top_words: Vec<(u32, f32)>,
    /// `probs` in the order of `Vocab::sorted_ids` (empty unless made off
    /// the keystroke's path), so a typed prefix's words are read in one run.
    pub by_text: Vec<f32>,
}

impl Dist {
    pub fn empty() -> Dist {
        Dist {
            version: 0,
            probs: Vec::new(),
            top_words: Vec::new(),
            by_text: Vec::new(),
        }
    }

    /// Logits → probabilities and the most probable words; `by_text` too
    /// when asked (work for a helper thread, ~15 us).
    pub fn finish(&mut self, simd: Simd, vocab: &Vocab, by_text: bool) {
        softmax(simd, &mut self.probs);
        self.top_words.clear();
        top_words(&self.probs, vocab, 16, &mut self.top_words);
        self.by_text.clear();
        if by_text {
            let probs = &self.probs;
            self.by_text
                .extend(vocab.sorted_ids().iter().map(|&id| probs[id as usize]));
        }
    }
}

/// Keeps the `n` best (id, score) pairs, best first.
pub(crate) fn push_top(top: &mut Vec<(u32, f32)>, item: (u32, f32), n: usize) {
    if top.len() == n && top.last().is_some_and(|l| l.1 >= item.1) {
        return;
    }
    let at = top.partition_point(|x| x.1 >= item.1);
    top.insert(at, item);
    top.truncate(n);
}

fn top_words(probs: &[f32], vocab: &Vocab, n: usize, out: &mut Vec<(u32, f32)>) {
    for (id, &p) in probs.iter().enumerate() {
        if (out.len() < n || out.last().is_some_and(|l| l.1 < p)) && vocab.is_word(id as u32) {
            push_top(out, (id as u32, p), n);
        }
    }
}
