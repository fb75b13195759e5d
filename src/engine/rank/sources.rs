//! The candidate sources, each proposing the words it knows that complete
//! the prefix (see `CandidateSource`). `rank` asks them in the order below;
//! the order decides only which source names a word two of them propose.

use super::super::bigrams::{BigramCache, Key, ORDERS};
use super::super::case::case_agreement;
use super::super::word_cache::{Hit, WordCache};
use super::super::word_list::WordList;
use super::pool::{CandidateSource, Pool, Query, Scored};
use crate::math::push_top;

/// Listed words (beyond the vocabulary) of a prefix that join the ranking:
/// the most frequent few.
const LISTED_WORDS: usize = 4;

/// The cache model's words: this buffer's (`CacheWords::Buffer`) or the
/// user's from everywhere (`CacheWords::User`), each also scored by the
/// model. Their probabilities over the prefix add up to the cache's mass.
pub enum CacheWords {
    Buffer,
    User,
}

impl<'a> CandidateSource<'a> for CacheWords {
    fn gather(&self, q: &Query<'a>, pool: &mut Pool<'a>) {
        let (hits, mass, weight): (Vec<Hit<'a>>, f32, f32) = match self {
            CacheWords::Buffer => {
                let hits = buffer_hits(q);
                let mass = hits.iter().map(|h| h.1).sum();
                (hits, mass, q.buffer_weight)
            }
            CacheWords::User => {
                let (hits, mass) = user_hits(q);
                (hits, mass, q.user_weight)
            }
        };
        pool.mass.cache += weight * mass;
        for (word, p, id) in hits {
            if word.len() > q.prefix.len() && pool.first_time(word) {
                // A hit's own probability is its cache's `prob` (no second look-up).
                let (p_buffer, p_user) = match self {
                    CacheWords::Buffer => (p, user_prob(q.user_words, word)),
                    CacheWords::User => (q.buffer_words.prob(word), p),
                };
                let p_cache = q.buffer_weight * p_buffer + q.user_weight * p_user;
                // The id the cache recorded is the one `model_part` looks up.
                let (p_model, from_vocab) = match (id, q.vocab) {
                    (Some(id), Some(_)) => (q.p_vocab(id), true),
                    _ => q.model_part(word),
                };
                pool.scored.push(Scored {
                    word,
                    p_model,
                    p_cache,
                    from_vocab,
                    listed: false,
                });
            }
        }
    }
}

fn buffer_hits<'a>(q: &Query<'a>) -> Vec<Hit<'a>> {
    let words = q.buffer_words;
    if q.prefix.is_empty() {
        let (lambda, oov) = (q.lambda, q.tuning.oov_share * q.p_unk);
        words.top_scored(q.pool_size, |p, p_oov| {
            (1.0 - lambda) * p + lambda * oov * p_oov
        })
    } else {
        words.with_prefix(&q.lower).collect()
    }
}

/// The user's likeliest words of the prefix, and the mass of all those
/// weighed. A large history holds thousands of words of a short prefix;
/// a quarter of the pool is enough, as the user's words that matter also
/// come as the model's, the buffer's or followers (development split,
/// KSR@1 within 0.05 of taking four times the pool in spelling order, in
/// a quarter less time a keystroke: BENCHMARKS.md).
fn user_hits<'a>(q: &Query<'a>) -> (Vec<Hit<'a>>, f32) {
    if q.prefix.is_empty() {
        let hits = q.user_words.top(q.pool_size);
        let mass = hits.iter().map(|h| h.1).sum();
        (hits, mass)
    } else {
        q.user_words
            .best_with_prefix(&q.lower, q.pool_size.div_ceil(USER_HITS_PER_POOL))
    }
}

/// `user_hits` takes one word per this many of the pool.
const USER_HITS_PER_POOL: usize = 4;

fn user_prob(user_words: &WordCache, word: &str) -> f32 {
    if user_words.is_empty() {
        0.0
    } else {
        user_words.prob(word)
    }
}

/// The vocabulary's words (the model's distribution, or without a model the
/// frequency list): the best few of the prefix's range; the whole range's
/// probability is the vocabulary's mass.
pub struct VocabWords;

impl<'a> CandidateSource<'a> for VocabWords {
    fn gather(&self, q: &Query<'a>, pool: &mut Pool<'a>) {
        let Some(v) = q.vocab else {
            return;
        };
        let mut best: Vec<(u32, f32)> = Vec::with_capacity(q.pool_size + 1);
        if q.prefix.is_empty() {
            pool.mass.vocab = 1.0;
            match q.dist {
                Some(d) => best.extend(d.top_words.iter().take(q.pool_size).copied()),
                None => best.extend(
                    v.words_by_rank()
                        .take(q.pool_size)
                        .map(|id| (id, q.p_vocab(id))),
                ),
            }
        } else {
            let by_text = q.dist.map_or(&[][..], |d| &d.by_text[..]);
            let ids = v.sorted_ids();
            for i in v.prefix_range(&q.lower) {
                let id = ids[i];
                let p = if by_text.is_empty() {
                    q.p_vocab(id)
                } else {
                    by_text[i]
                };
                pool.mass.vocab += p;
                // The case factor is at most 1: a word that cannot beat the
                // pool's last as it is would be dropped by push_top anyway
                // (a one-letter prefix spans thousands of words).
                if best.len() == q.pool_size && best.last().is_some_and(|l| l.1 >= p) {
                    continue;
                }
                let word = v.sorted_text(i);
                if word.len() == q.prefix.len() {
                    continue;
                }
                push_top(
                    &mut best,
                    (id, p * case_agreement(q.prefix, word)),
                    q.pool_size,
                );
            }
        }
        for (id, _) in best {
            let word = v.text(id);
            if pool.first_time(word) {
                pool.scored.push(Scored {
                    word,
                    p_model: q.p_vocab(id),
                    p_cache: q.cache_part(word),
                    from_vocab: true,
                    listed: false,
                });
            }
        }
    }
}

/// The word list beyond the vocabulary, once a few characters are typed:
/// the most frequent listed words of the prefix, each with its share of the
/// model's `<unk>` (words of the buffer or the user's history are the cache
/// model's, proposed there).
pub struct ListedWords<'a>(pub Option<&'a WordList>);

impl<'a> CandidateSource<'a> for ListedWords<'a> {
    fn gather(&self, q: &Query<'a>, pool: &mut Pool<'a>) {
        let t = q.tuning;
        let Some(list) = self.0.filter(|_| {
            t.word_list_share > 0.0 && q.p_unk > 0.0 && q.prefix.len() as f32 >= t.word_list_chars
        }) else {
            return;
        };
        let mut best = Vec::with_capacity(LISTED_WORDS);
        let scale = t.word_list_share * q.p_unk;
        pool.mass.word_list = scale * list.best_with_prefix(&q.lower, LISTED_WORDS, &mut best);
        for i in best {
            let word = list.word(i);
            let in_vocab = q.vocab.is_some_and(|v| v.word_id(word).is_some());
            if word.len() > q.prefix.len() && !in_vocab && pool.first_time(word) {
                pool.scored.push(Scored {
                    word,
                    p_model: scale * list.share(i),
                    p_cache: 0.0,
                    from_vocab: false,
                    listed: true,
                });
            }
        }
    }
}

/// Out-of-vocabulary words the neural cache points to (for an empty prefix
/// the cache words may not hold them).
pub struct PointedWords;

impl<'a> CandidateSource<'a> for PointedWords {
    fn gather(&self, q: &Query<'a>, pool: &mut Pool<'a>) {
        for (word, _) in q.dist.map_or(&[][..], |d| &d.pointer_oov[..]) {
            let word: &'a str = word;
            if q.completes(word) && pool.first_time(word) {
                pool.scored.push(Scored {
                    word,
                    p_model: q.model_part(word).0,
                    p_cache: q.cache_part(word),
                    from_vocab: false,
                    listed: false,
                });
            }
        }
    }
}

/// The first order that `longer_first` puts before the others.
const LONGER: usize = 2;

/// The orders from `from` up take their weight first, the longest first,
/// and the rest (the shorter orders, the model and the cache) share what they
/// leave: a phrase of three or four words seen before decides where its
/// last words' followers disagree, which a weight added beside theirs
/// cannot.
fn longer_first(weights: &mut [f32; ORDERS], from: usize) {
    let mut left = 1.0;
    for w in weights[from..].iter_mut().rev() {
        *w *= left;
        left -= *w;
    }
    for w in weights[..from].iter_mut() {
        *w *= left;
    }
}

/// The words that followed the previous word (and the two, three and four
/// previous words, `bigrams::ORDERS`) before, in this buffer and in the
/// user's text, each context weighted by how much history it has (little
/// history, little trust).
pub struct Followers<'a> {
    /// The keys of the previous one, two, ... words.
    pub keys: [Option<Key>; ORDERS],
    pub buffer: &'a BigramCache,
    pub user: &'a BigramCache,
}

impl<'a> CandidateSource<'a> for Followers<'a> {
    fn gather(&self, q: &Query<'a>, pool: &mut Pool<'a>) {
        let t = q.tuning;
        let lambdas = t.lambda_orders();
        for (order, key) in self.keys.iter().enumerate() {
            let Some(key) = key.filter(|_| lambdas[order] > 0.0) else {
                continue;
            };
            let in_buffer = self.buffer.total(key);
            let up = if in_buffer > 0 {
                t.user_pairs
            } else {
                t.user_pairs_alone
            };
            let n = in_buffer as f32 + up * self.user.total(key) as f32;
            if n <= 0.0 {
                continue;
            }
            pool.bigram_weight[order] = lambdas[order] * n / (n + t.bigram_conf);
            let buffer = self.buffer.followers(key).map(|(w, c)| (w, c as f32));
            let user = self.user.followers(key).map(|(w, c)| (w, up * c as f32));
            for (word, c) in buffer.chain(user) {
                if word.len() < q.prefix.len()
                    || !word.as_bytes()[..q.prefix.len()].eq_ignore_ascii_case(q.lower.as_bytes())
                {
                    continue;
                }
                let p = c / n;
                pool.mass.bigram[order] += p;
                match pool.followers.iter_mut().find(|f| f.0 == word) {
                    Some(f) => f.1[order] += p,
                    None => {
                        let mut ps = [0.0; ORDERS];
                        ps[order] = p;
                        pool.followers.push((word, ps));
                    }
                }
            }
        }
        for order in 0..ORDERS {
            if q.prefix.is_empty() && pool.bigram_weight[order] > 0.0 {
                pool.mass.bigram[order] = 1.0;
            }
            if pool.mass.bigram[order] <= 0.0 {
                pool.bigram_weight[order] = 0.0;
            }
        }
        longer_first(&mut pool.bigram_weight, LONGER);
        for i in 0..pool.followers.len() {
            let word = pool.followers[i].0;
            if word.len() > q.prefix.len() && pool.first_time(word) {
                let (p_model, from_vocab) = q.model_part(word);
                pool.scored.push(Scored {
                    word,
                    p_model,
                    p_cache: q.cache_part(word),
                    from_vocab,
                    listed: false,
                });
            }
        }
    }
}
