//! The mixer: one score per word from the sources' pool, by linear
//! interpolation of the model (its words the user favours boosted,
//! `Query::user_boost`), the cache model and the bigram caches with
//! the tuning table's weights, normalised by the mass the prefix allows;
//! spellings that read the same after case adaptation merge; the best `k`
//! by expected keystrokes saved.

use super::super::bigrams::ORDERS;
use super::super::case::{adapted_rest, case_agreement};
use super::super::{Candidate, Source};
use super::pool::{Pool, Query};
use super::Ranked;
use std::borrow::Cow;

/// The components' weights for one query (they sum to at most 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    pub model: f32,
    pub cache: f32,
    pub bigram: [f32; ORDERS],
}

impl Weights {
    /// The model and cache share `lambda` / 1 - lambda of what the bigram
    /// caches leave; a component with no mass for the prefix gets nothing.
    pub fn new(q: &Query, pool: &Pool) -> Weights {
        let cache = if pool.mass.cache > 0.0 {
            1.0 - q.lambda
        } else {
            0.0
        };
        let model = if q.vocab.is_some() {
            q.lambda.max(1.0 - cache)
        } else {
            0.0
        };
        let b = pool.bigram_weight;
        let rest = (1.0 - b.iter().sum::<f32>()).max(0.0);
        Weights {
            model: model * rest,
            cache: cache * rest,
            bigram: b,
        }
    }
}

/// One spelling after case adaptation (the rest is borrowed from the word:
/// only the `k` kept are allocated).
struct Merged<'a> {
    rest: Cow<'a, str>,
    source: Source,
    score: f32,
    listed: bool,
}

/// Combines the pool into the best `k` (see the module's comment).
pub fn mix(q: &Query, pool: &Pool, k: usize) -> Ranked {
    let w = Weights::new(q, pool);
    let m = &pool.mass;
    let mass_known = w.model * m.vocab
        + w.cache * m.cache
        + w.bigram
            .iter()
            .zip(&m.bigram)
            .map(|(w, m)| w * m)
            .sum::<f32>();
    let (mut merged, extra) = merge_by_case(q, pool, &w);
    // The boost's extra probability and the model's part of the words
    // beyond its vocabulary (its `<unk>` shared out), of the pool's words
    // only: without them a project's own identifiers, out of the
    // vocabulary, score above 1 and tie at the clamp.
    let mass_known = mass_known + w.model * (extra.boosted + extra.unknown);
    let mass = mass_known + w.model * m.word_list;
    let norm = if mass > 0.0 { 1.0 / mass } else { 0.0 };
    for c in merged.iter_mut() {
        c.score = (c.score * norm).clamp(0.0, 1.0);
    }
    // Rank by expected keystrokes saved: accepting a rest of n characters
    // saves n - 1, so a likely one-letter rest is worth little (exponent
    // `length_weight`; 0 = by probability alone).
    let alpha = q.tuning.length_weight;
    let mut ranked: Vec<(f32, Merged)> = merged
        .into_iter()
        .map(|c| (worth(c.score, c.rest.len(), alpha), c))
        .collect();
    ranked.sort_by(|(wa, a), (wb, b)| wb.total_cmp(wa).then_with(|| a.rest.cmp(&b.rest)));
    ranked.truncate(k);
    let listed = ranked.iter().map(|(_, c)| c.listed).collect();
    let candidates = ranked
        .into_iter()
        .map(|(_, c)| Candidate {
            word: format!("{}{}", q.prefix, c.rest),
            insert: c.rest.into_owned(),
            replace: 0,
            source: c.source,
            score: c.score,
        })
        .collect();
    Ranked {
        candidates,
        listed,
        mass_known,
    }
}

/// What the ranking orders by: a candidate's score times (its rest's
/// length in bytes - 1)^length_weight (0 = by probability alone).
pub fn worth(score: f32, rest_len: usize, length_weight: f32) -> f32 {
    score
        * if length_weight > 0.0 {
            (rest_len as f32 - 1.0).max(0.25).powf(length_weight)
        } else {
            1.0
        }
}

/// The model probability the pool's words add beyond the masses: what the
/// user boost added, and the model's part of out-of-vocabulary words.
#[derive(Default)]
struct Extra {
    boosted: f32,
    unknown: f32,
}

/// Each word's interpolated (unnormalised) score, spellings that read the
/// same after case adaptation summed ("the" and "The" after "Th"), and the
/// model probability beyond the masses (`Extra`).
fn merge_by_case<'a>(q: &Query, pool: &'a Pool, w: &Weights) -> (Vec<Merged<'a>>, Extra) {
    let mut merged: Vec<Merged> = Vec::with_capacity(pool.scored.len());
    let mut extra = Extra::default();
    for s in &pool.scored {
        let agree = case_agreement(q.prefix, s.word);
        let p_model = if s.from_vocab {
            let p = s.p_model * q.user_boost(s.word);
            extra.boosted += p - s.p_model;
            p
        } else {
            // (Without a prefix the vocabulary's mass is all of the
            // model's, `<unk>` included.)
            if !s.listed && !q.prefix.is_empty() {
                extra.unknown += s.p_model;
            }
            s.p_model
        };
        let from_model = w.model * p_model * agree;
        let from_cache = (w.cache * s.p_cache + pool.p_bigram(s.word)) * agree;
        let score = from_model + from_cache;
        let rest = adapted_rest(q.prefix, s.word);
        let source = if s.listed {
            Source::Words
        } else if from_cache > from_model || !s.from_vocab {
            Source::Buffer
        } else if q.dist.is_some() {
            Source::Model
        } else {
            Source::Words
        };
        match merged.iter_mut().find(|c| c.rest == rest) {
            Some(c) => {
                c.score += score;
                c.listed &= s.listed;
            }
            None => merged.push(Merged {
                rest,
                source,
                score,
                listed: s.listed,
            }),
        }
    }
    (merged, extra)
}
