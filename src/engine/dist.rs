//! The model's next-token distribution at one buffer's cursor context, and
//! what the ranking reads from it.

use crate::math::push_top;
use crate::model::kernels::{softmax, Simd};
use crate::text::vocab::Vocab;

/// Words kept in `Dist::top_words`.
const TOP_WORDS: usize = 16;

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
    /// Out-of-vocabulary words with their share of the probability from the
    /// neural cache (already weighted; not part of `probs`).
    pub pointer_oov: Vec<(Box<str>, f32)>,
}

impl Dist {
    pub fn empty() -> Dist {
        Dist {
            version: 0,
            probs: Vec::new(),
            top_words: Vec::new(),
            by_text: Vec::new(),
            pointer_oov: Vec::new(),
        }
    }

    /// Logits → probabilities, rescaled by `factors` when given (the user's
    /// rates, `engine::rates`), and the most probable words; `by_text` too
    /// when asked (work for a helper thread, ~15 us).
    pub fn finish(&mut self, simd: Simd, vocab: &Vocab, by_text: bool, factors: Option<&[f32]>) {
        softmax(simd, &mut self.probs);
        if let Some(f) = factors {
            self.scale(f);
        }
        self.top_words.clear();
        top_words(&self.probs, vocab, TOP_WORDS, &mut self.top_words);
        self.by_text.clear();
        if by_text {
            let probs = &self.probs;
            self.by_text
                .extend(vocab.sorted_ids().iter().map(|&id| probs[id as usize]));
        }
    }

    /// Mixes a sparse distribution into the probabilities with weight
    /// `lambda`: `other` over token ids, and the out-of-vocabulary words
    /// already in `pointer_oov` (their votes, weighted here). Keeps
    /// `top_words` and `by_text` in step without rescanning them: scaling
    /// keeps their order, so only `other`'s tokens can move.
    pub fn mix(&mut self, other: &[(u32, f32)], lambda: f32, vocab: &Vocab) {
        if (other.is_empty() && self.pointer_oov.is_empty()) || lambda <= 0.0 {
            return;
        }
        for w in self.pointer_oov.iter_mut() {
            w.1 *= lambda;
        }
        let keep = 1.0 - lambda;
        self.probs.iter_mut().for_each(|p| *p *= keep);
        self.by_text.iter_mut().for_each(|p| *p *= keep);
        for &(id, q) in other {
            let p = &mut self.probs[id as usize];
            *p += lambda * q;
            let p = *p;
            let Some(pos) = vocab.sorted_position(id) else {
                continue;
            };
            if let Some(b) = self.by_text.get_mut(pos) {
                *b = p;
            }
            // `top_words` holds unscaled values until the end (p / keep);
            // removing and re-inserting keeps it sorted for `push_top`.
            if let Some(at) = self.top_words.iter().position(|t| t.0 == id) {
                self.top_words.remove(at);
            }
            push_top(&mut self.top_words, (id, p / keep), TOP_WORDS);
        }
        for t in self.top_words.iter_mut() {
            t.1 *= keep;
        }
    }

    /// Multiplies each token's probability by its factor and renormalizes.
    fn scale(&mut self, factors: &[f32]) {
        if factors.len() != self.probs.len() {
            return;
        }
        // Eight running sums, so that the loop vectorizes.
        let mut lanes = [0.0f32; 8];
        let mut probs = self.probs.chunks_exact_mut(8);
        let mut fs = factors.chunks_exact(8);
        for (p, f) in (&mut probs).zip(&mut fs) {
            for i in 0..8 {
                p[i] *= f[i];
                lanes[i] += p[i];
            }
        }
        let mut sum: f32 = lanes.iter().sum();
        for (p, f) in probs.into_remainder().iter_mut().zip(fs.remainder()) {
            *p *= f;
            sum += *p;
        }
        if sum > 0.0 {
            let inv = 1.0 / sum;
            self.probs.iter_mut().for_each(|p| *p *= inv);
        }
    }
}

fn top_words(probs: &[f32], vocab: &Vocab, n: usize, out: &mut Vec<(u32, f32)>) {
    for (id, &p) in probs.iter().enumerate() {
        if (out.len() < n || out.last().is_some_and(|l| l.1 < p)) && vocab.is_word(id as u32) {
            push_top(out, (id as u32, p), n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A vocabulary of 40 tokens (ids 3.. are words, 10 and 20 punctuation).
    fn vocab() -> Vocab {
        let mut lines = vec!["<unk>".to_string(), "<s>".into(), "<nl>".into()];
        for i in 3..40 {
            lines.push(if i % 10 == 0 {
                format!("{}", ['.', ',', ';', ':'][i / 10])
            } else {
                format!("w{}", (i * 7919) % 1000)
            });
        }
        Vocab::from_lines(lines.iter().map(String::as_str)).unwrap()
    }

    fn dist(v: &Vocab) -> Dist {
        let mut d = Dist::empty();
        d.probs = (0..v.len()).map(|i| ((i * 37) % 11) as f32 * 0.3).collect();
        d.finish(Simd::detect(), v, true, None);
        d
    }

    #[test]
    fn mixing_keeps_top_words_and_by_text_as_a_full_rescan_would() {
        let v = vocab();
        let mut d = dist(&v);
        // A low word pushed to the top, one already on top, punctuation, <unk>.
        let other = [(5u32, 0.6f32), (d.top_words[0].0, 0.2), (20, 0.1), (0, 0.1)];
        d.mix(&other, 0.3, &v);
        let sum: f32 = d.probs.iter().sum();
        assert!((sum - 1.0).abs() < 1e-4, "still a distribution: {sum}");
        let mut want = Vec::new();
        top_words(&d.probs, &v, TOP_WORDS, &mut want);
        assert_eq!(d.top_words.len(), want.len());
        for (got, want) in d.top_words.iter().zip(&want) {
            assert!((got.1 - want.1).abs() < 1e-6, "{got:?} vs {want:?}");
        }
        assert_eq!(d.top_words[0].0, 5, "the pointer's word leads");
        let by_text: Vec<f32> = v
            .sorted_ids()
            .iter()
            .map(|&id| d.probs[id as usize])
            .collect();
        assert_eq!(d.by_text, by_text);
    }

    #[test]
    fn factors_rescale_the_distribution_before_its_top_words_are_read() {
        let v = vocab();
        let logits: Vec<f32> = (0..v.len()).map(|i| ((i * 37) % 11) as f32 * 0.3).collect();
        let mut plain = Dist::empty();
        plain.probs = logits.clone();
        plain.finish(Simd::detect(), &v, true, None);
        // The last of the plain top words made 50 times as likely.
        let low = plain.top_words.last().unwrap().0;
        let mut factors = vec![1.0; v.len()];
        factors[low as usize] = 50.0;
        let mut d = Dist::empty();
        d.probs = logits;
        d.finish(Simd::detect(), &v, true, Some(&factors));
        let sum: f32 = d.probs.iter().sum();
        assert!((sum - 1.0).abs() < 1e-4, "still a distribution: {sum}");
        let want = 50.0 * plain.probs[low as usize] / (1.0 + 49.0 * plain.probs[low as usize]);
        assert!((d.probs[low as usize] - want).abs() < 1e-5);
        assert_eq!(d.top_words[0].0, low, "read after the rescaling");
        assert_eq!(
            d.by_text[v.sorted_position(low).unwrap()],
            d.probs[low as usize]
        );
    }

    #[test]
    fn out_of_vocabulary_votes_alone_still_keep_one_distribution() {
        let v = vocab();
        let mut d = dist(&v);
        d.pointer_oov = vec![("zebra_mode".into(), 0.75), ("qux".into(), 0.25)];
        d.mix(&[], 0.2, &v);
        let total: f32 =
            d.probs.iter().sum::<f32>() + d.pointer_oov.iter().map(|w| w.1).sum::<f32>();
        assert!((total - 1.0).abs() < 1e-4, "one distribution: {total}");
        assert!(
            (d.pointer_oov[0].1 - 0.15).abs() < 1e-6,
            "{:?}",
            d.pointer_oov
        );
    }
}
