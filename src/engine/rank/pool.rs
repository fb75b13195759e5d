//! What every candidate source sees (`Query`: the typed prefix, the model's
//! distribution, the caches and the interpolation weights) and fills
//! (`Pool`: scored words and each component's probability mass), and the
//! interface a source implements (`CandidateSource`).

use super::super::bigrams::ORDERS;
use super::super::dist::Dist;
use super::super::kind::TextKind;
use super::super::kind_shares::KindShares;
use super::super::options::Tuning;
use super::super::word_cache::WordCache;
use crate::text::hash::FastSet;
use crate::text::vocab::{Vocab, UNK};

/// One source of candidate words (the model's vocabulary, the buffer's and
/// the user's words, the word list, the neural cache's pointer, bigrams):
/// it proposes the words completing the query's prefix that it knows, each
/// scored by the model and the cache (`Query::model_part`,
/// `Query::cache_part`) so that the mixer can weigh every word the same way,
/// and adds what it knows of the prefix's total probability to the pool's
/// masses. A word already proposed by an earlier source is not proposed
/// again (`Pool::first_time`).
pub trait CandidateSource<'a> {
    fn gather(&self, q: &Query<'a>, pool: &mut Pool<'a>);
}

/// One keystroke's ranking question, shared by all sources.
pub struct Query<'a> {
    /// The typed part of the word, and the same lowercase.
    pub prefix: &'a str,
    pub lower: String,
    /// Words each source keeps at most (the `k` wanted and a margin).
    pub pool_size: usize,
    /// The model's distribution at the cursor (None: no model, or not for
    /// this context).
    pub dist: Option<&'a Dist>,
    pub vocab: Option<&'a Vocab>,
    /// This buffer's words and the user's words from everywhere.
    pub buffer_words: &'a WordCache,
    pub user_words: &'a WordCache,
    pub tuning: &'a Tuning,
    /// The weight of the model (or, without one, of the vocabulary's
    /// frequency list) against the cache model.
    pub lambda: f32,
    /// Within the cache model: the buffer's and the user's shares.
    pub buffer_weight: f32,
    pub user_weight: f32,
    /// The model's probability of `<unk>` (0 without a model).
    pub p_unk: f32,
    zipf_norm: f32,
    /// The training split's word frequencies (`user_boost`) and the kind
    /// of text at the cursor.
    pub kinds: Option<&'a KindShares>,
    pub kind: TextKind,
}

impl<'a> Query<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        prefix: &'a str,
        k: usize,
        dist: Option<&'a Dist>,
        vocab: Option<&'a Vocab>,
        buffer_words: &'a WordCache,
        user_words: &'a WordCache,
        tuning: &'a Tuning,
    ) -> Query<'a> {
        let lambda = match (dist, vocab) {
            (Some(_), _) if !user_words.is_empty() => tuning.lambda_history,
            (Some(_), _) => tuning.lambda_model,
            (None, Some(_)) => tuning.lambda_words,
            (None, None) => 0.0,
        };
        let user_weight = if user_words.is_empty() {
            0.0
        } else {
            tuning.user_share
        };
        Query {
            prefix,
            lower: prefix.to_ascii_lowercase(),
            pool_size: k + 8,
            dist,
            vocab,
            buffer_words,
            user_words,
            tuning,
            lambda,
            buffer_weight: 1.0 - user_weight,
            user_weight,
            p_unk: dist.map_or(0.0, |d| d.probs[UNK as usize]),
            zipf_norm: vocab.map_or(1.0, |v| v.zipf_norm()),
            kinds: None,
            kind: TextKind::Unknown,
        }
    }

    /// A vocabulary word's probability: the model's, or without a model its
    /// Zipf probability by frequency rank.
    pub fn p_vocab(&self, id: u32) -> f32 {
        match (self.dist, self.vocab) {
            (Some(d), _) => d.probs[id as usize],
            (None, Some(v)) => v
                .word_rank(id)
                .map_or(0.0, |r| self.zipf_norm / (r as f32 + 1.0)),
            _ => 0.0,
        }
    }

    /// The factor on the model's probability of a vocabulary word the
    /// user writes more often than the training split does: that ratio
    /// (at most `user_boost_max`) to the power `user_boost`; 1 without
    /// history, in code, and for words the user writes no more often.
    pub fn user_boost(&self, word: &str) -> f32 {
        let beta = self.tuning.user_boost;
        if beta <= 0.0 || self.kind == TextKind::Code || self.user_words.is_empty() {
            return 1.0;
        }
        let p_user = self.user_words.prob(word);
        let Some(freq) = self.kinds.and_then(|k| k.frequency(self.kind, word)) else {
            return 1.0;
        };
        if p_user <= freq {
            return 1.0;
        }
        (p_user / freq.max(1e-9))
            .min(self.tuning.user_boost_max)
            .powf(beta)
    }

    /// The neural cache's probability of an out-of-vocabulary word.
    fn pointed(&self, word: &str) -> f32 {
        self.dist.map_or(0.0, |d| {
            d.pointer_oov
                .iter()
                .find(|x| &*x.0 == word)
                .map_or(0.0, |x| x.1)
        })
    }

    /// The model's part of a word and whether the vocabulary has it: a
    /// vocabulary word's own probability, an out-of-vocabulary word its
    /// share of the model's `<unk>` and what the neural cache points to it.
    pub fn model_part(&self, word: &str) -> (f32, bool) {
        match self.vocab.and_then(|v| v.word_id(word)) {
            Some(id) => (self.p_vocab(id), true),
            None => (
                self.p_unk
                    * (self.tuning.oov_share * self.buffer_words.prob_oov(word)
                        + self.tuning.user_oov * self.user_words.prob_oov(word))
                    + self.pointed(word),
                false,
            ),
        }
    }

    /// The cache model's probability of a word (buffer and user words).
    pub fn cache_part(&self, word: &str) -> f32 {
        self.buffer_weight * self.buffer_words.prob(word)
            + self.user_weight * self.user_words.prob(word)
    }

    /// A word that completes the prefix (longer, same letters ignoring case).
    pub fn completes(&self, word: &str) -> bool {
        word.len() > self.prefix.len()
            && word.as_bytes()[..self.prefix.len()].eq_ignore_ascii_case(self.lower.as_bytes())
    }
}

/// One word before mixing: its spelling, its model (or word-list)
/// probability and its cache-model probability.
pub struct Scored<'a> {
    pub word: &'a str,
    pub p_model: f32,
    pub p_cache: f32,
    pub from_vocab: bool,
    /// From the word list beyond the vocabulary (and nowhere else).
    pub listed: bool,
}

/// The total probability each component gives to everything the prefix
/// allows (the mixer's normaliser).
#[derive(Default)]
pub struct Masses {
    pub vocab: f32,
    pub cache: f32,
    pub word_list: f32,
    /// After one, two, ... previous words (`bigrams::ORDERS`).
    pub bigram: [f32; ORDERS],
}

/// The sources' answers, in the order they were proposed.
#[derive(Default)]
pub struct Pool<'a> {
    pub scored: Vec<Scored<'a>>,
    seen: FastSet<&'a str>,
    pub mass: Masses,
    /// Words that followed the previous one (two) before, with their
    /// probability after each (see `sources::Bigrams`).
    pub followers: Vec<(&'a str, [f32; ORDERS])>,
    /// The bigram and trigram weights this context earns.
    pub bigram_weight: [f32; ORDERS],
}

impl<'a> Pool<'a> {
    /// True the first time a word is offered (it is then the caller's to push).
    pub fn first_time(&mut self, word: &'a str) -> bool {
        self.seen.insert(word)
    }

    /// Keeps the best `n` words so far by their interpolated probability.
    pub fn keep_best(&mut self, n: usize, lambda: f32) {
        let estimate = |s: &Scored| lambda * s.p_model + (1.0 - lambda) * s.p_cache;
        self.scored
            .sort_by(|a, b| estimate(b).total_cmp(&estimate(a)));
        self.scored.truncate(n);
    }

    /// The bigram model's part of a word, weighted.
    pub fn p_bigram(&self, word: &str) -> f32 {
        let w = self.bigram_weight;
        self.followers
            .iter()
            .find(|f| f.0 == word)
            .map_or(0.0, |f| w.iter().zip(&f.1).map(|(w, p)| w * p).sum())
    }
}
