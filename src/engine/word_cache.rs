//! The cache model: words seen in a buffer (or typed/accepted by the user),
//! scored by frequency and recency. Identifiers repeat within a file, so this
//! covers what the vocabulary does not (out-of-vocabulary names).

use super::frozen::{index_cmp, key_cmp, prefix_cmp, FrozenWords, VOCAB_OOV, VOCAB_UNKNOWN};
use super::memory::{self, CacheMemory};
use crate::text::hash::FastMap;
use std::cmp::Ordering;
use std::collections::BTreeMap;

mod likeliest;
use likeliest::FrozenBest;

/// Recency time constant in words: an occurrence's weight halves every ~350 words.
const TAU_WORDS: f64 = 500.0;
/// A bound on distinct words kept per cache; the weakest are dropped beyond it.
/// A word costs about 190 heap bytes (`memory`): 3.8 MB at the bound.
const MAX_WORDS: usize = 20_000;
/// The bound of the user's cache (`WordCache::with_limit`), which also holds
/// what was learnt from earlier writing: large enough for a project's words
/// (about 38 MB at the bound).
pub const MAX_USER_WORDS: usize = 200_000;

/// Words in the map beyond which `compact_if_large` moves them all to the
/// frozen part: a word in the map takes ~190 heap bytes (the table's entry,
/// its text, its prefix-index key), in the frozen arrays ~40, and a large
/// text learnt (a project) adds tens of thousands. The map's words of a
/// prefix also cost a keystroke a look-up each (`best_with_prefix`), the
/// frozen ones a few nanoseconds; compacting 20,000 words takes ~5 ms.
pub const COMPACT_WORDS: usize = 2_048;

#[derive(Debug, Clone, Copy)]
struct Stat {
    count: u32,
    /// Σ over occurrences of exp((t - base) / τ): the recency weight up to
    /// one factor shared by every word (so ranking needs no exp per word).
    weight: f64,
    last: u64,
    /// Not in the model's vocabulary (its share of the model's `<unk>`).
    oov: bool,
    /// Its vocabulary id, when known (so ranking needs no look-up).
    id: Option<u32>,
}

/// What the model's vocabulary says of a word (recorded at its first occurrence).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InVocab {
    /// No vocabulary asked (the user's words, no model).
    Unknown,
    Id(u32),
    /// Out of the vocabulary.
    Oov,
}

/// How to take back one `add` (see `WordCache::undo`).
#[derive(Debug, Clone)]
pub struct Undo {
    word: Box<str>,
    prev: Option<Stat>,
    clock: u64,
    total: u64,
    total_weight: f64,
    oov_total: u64,
    oov_weight: f64,
    base: u64,
}

/// Frequency + recency statistics of words.
#[derive(Default)]
pub struct WordCache {
    stats: FastMap<Box<str>, Stat>,
    /// Keys "lowercase\0word" for prefix ranges.
    index: BTreeMap<Box<str>, ()>,
    clock: u64,
    total: u64,
    /// Σ of every word's `weight`.
    total_weight: f64,
    /// The same totals over out-of-vocabulary words only.
    oov_total: u64,
    oov_weight: f64,
    /// Time origin of the weights (moved forward now and then so they stay finite).
    base: u64,
    /// Distinct words kept (0: MAX_WORDS).
    limit: usize,
    /// The words held at start (the personal store), less those moved to
    /// `stats` or removed since.
    frozen: FrozenWords,
    /// `top`'s answer for its largest `n` so far, until the words change
    /// (every `&mut` method clears it). The user's words are ranked at
    /// every word start, and with a large history that scan cost more than
    /// the rest of the keystroke (laya bench --learn: word boundary p50
    /// 339 against 188 µs without history).
    top_memo: std::cell::OnceCell<(usize, Vec<TopWord>)>,
    /// `frozen_best`'s answers by prefix, until the words change (as
    /// `top_memo`): the first character of every word would weigh
    /// thousands of words of a large history again, and each next one
    /// search the whole index for its range.
    frozen_memo: std::cell::RefCell<FastMap<Box<str>, FrozenBest>>,
}

/// A word of `WordCache::top`'s answer: the word, P_cache and its
/// vocabulary id when known.
type TopWord = (Box<str>, f32, Option<u32>);

fn index_key(word: &str) -> Box<str> {
    let mut k = word.to_ascii_lowercase();
    k.push('\0');
    k.push_str(word);
    k.into_boxed_str()
}

/// A word a look-up lists: its text, its probability in the cache and its
/// vocabulary id when known.
pub type Hit<'a> = (&'a str, f32, Option<u32>);

/// Weights are renormalised when exp((t - base)/τ) would exceed e^RENORM.
const RENORM: f64 = 300.0;

impl WordCache {
    pub fn new() -> WordCache {
        WordCache::default()
    }

    /// A cache that keeps up to `limit` distinct words.
    pub fn with_limit(limit: usize) -> WordCache {
        WordCache {
            limit: limit.max(2),
            ..WordCache::default()
        }
    }

    fn limit(&self) -> usize {
        if self.limit == 0 {
            MAX_WORDS
        } else {
            self.limit
        }
    }

    /// A cache of up to `limit` words that holds `frozen` (the words of
    /// the personal store, in use at once).
    pub fn with_frozen(limit: usize, frozen: FrozenWords) -> WordCache {
        let (total, total_weight) = frozen.totals();
        WordCache {
            total,
            total_weight,
            frozen,
            ..WordCache::with_limit(limit)
        }
    }

    pub fn len(&self) -> usize {
        self.stats.len() + self.frozen.live()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A word's statistics, wherever it is held.
    fn get(&self, word: &str) -> Option<Stat> {
        match self.stats.get(word) {
            Some(s) => Some(*s),
            None => self.frozen.find(word).map(|i| self.frozen_stat(i)),
        }
    }

    fn frozen_stat(&self, i: usize) -> Stat {
        let (_, count, weight) = self.frozen.get(i);
        let vocab = self.frozen.vocab(i);
        Stat {
            count,
            weight,
            last: 0,
            oov: vocab == VOCAB_OOV,
            id: (vocab < VOCAB_OOV).then_some(vocab),
        }
    }

    /// Moves the map's words to the frozen part once it holds
    /// `COMPACT_WORDS` (after learning a text): every look-up, prefix list,
    /// change and undo then sees what it saw before, in a fifth of the memory.
    pub fn compact_if_large(&mut self) {
        if self.stats.len() >= COMPACT_WORDS {
            self.compact();
        }
    }

    /// Both parts as one frozen part.
    pub fn compact(&mut self) {
        self.forget_memos();
        let mut live: Vec<(&str, Stat)> = self.stats.iter().map(|(w, s)| (&**w, *s)).collect();
        live.sort_unstable_by(|a, b| index_cmp(a.0, b.0));
        // The frozen part is in the index's order already: a merge. A word
        // is in one part or the other (thawing marks it gone).
        let mut all = Vec::with_capacity(self.len());
        {
            let mut frozen = self
                .frozen
                .entries()
                .map(|i| (self.frozen.get(i).0, self.frozen_stat(i)))
                .peekable();
            let mut live = live.into_iter().peekable();
            loop {
                let from_live = match (live.peek(), frozen.peek()) {
                    (None, None) => break,
                    (Some(l), Some(f)) => index_cmp(l.0, f.0) == Ordering::Less,
                    (l, _) => l.is_some(),
                };
                all.extend(if from_live {
                    live.next()
                } else {
                    frozen.next()
                });
            }
        }
        let text = all.iter().map(|(w, _)| w.len()).sum();
        let entries = all.into_iter().map(|(w, s)| {
            let vocab = match (s.id, s.oov) {
                (Some(id), _) => id.min(VOCAB_OOV - 1),
                (None, true) => VOCAB_OOV,
                (None, false) => VOCAB_UNKNOWN,
            };
            (w, s.count, s.weight, vocab)
        });
        self.frozen = FrozenWords::from_sorted(entries, text);
        self.stats = FastMap::default();
        self.index = BTreeMap::new();
        memory::give_back_freed();
    }

    /// Moves `word` from the frozen part to `stats` (before it changes).
    fn thaw(&mut self, word: &str) {
        if let Some(i) = self.frozen.find(word) {
            let stat = self.frozen_stat(i);
            self.frozen.take(i);
            self.stats.insert(word.into(), stat);
            self.index.insert(index_key(word), ());
        }
    }

    /// Moves every frozen word to `stats` (before pruning, which ranks them all).
    fn thaw_all(&mut self) {
        let all: Vec<usize> = self.frozen.entries().collect();
        for i in all {
            let stat = self.frozen_stat(i);
            let word = self.frozen.get(i).0;
            self.index.insert(index_key(word), ());
            self.stats.insert(word.into(), stat);
        }
        self.frozen = FrozenWords::default();
    }

    /// Records one occurrence of `word` (the newest).
    pub fn add(&mut self, word: &str) {
        self.add_undoable(word, InVocab::Unknown);
    }

    /// Records one occurrence and returns what undoes it exactly (`undo`),
    /// so text that is deleted again (backspace) leaves no trace.
    /// `vocab`: what the model's vocabulary says of the word (fixed at its
    /// first occurrence).
    pub fn add_undoable(&mut self, word: &str, vocab: InVocab) -> Undo {
        self.forget_memos();
        let undo = Undo {
            word: word.into(),
            prev: self.get(word),
            clock: self.clock,
            total: self.total,
            total_weight: self.total_weight,
            oov_total: self.oov_total,
            oov_weight: self.oov_weight,
            base: self.base,
        };
        self.clock += 1;
        let now = self.clock;
        if (now - self.base) as f64 / TAU_WORDS > RENORM {
            self.renormalise();
        }
        let w = ((now - self.base) as f64 / TAU_WORDS).exp();
        self.total += 1;
        self.total_weight += w;
        let oov = self.get(word).map_or(vocab == InVocab::Oov, |s| s.oov);
        if oov {
            self.oov_total += 1;
            self.oov_weight += w;
        }
        self.thaw(word);
        match self.stats.get_mut(word) {
            Some(s) => {
                s.weight += w;
                s.count = s.count.saturating_add(1);
                s.last = now;
            }
            None => {
                if self.len() >= self.limit() {
                    self.prune();
                }
                self.stats.insert(
                    word.into(),
                    Stat {
                        count: 1,
                        weight: w,
                        last: now,
                        oov,
                        id: match vocab {
                            InVocab::Id(id) => Some(id),
                            _ => None,
                        },
                    },
                );
                self.index.insert(index_key(word), ());
            }
        }
        undo
    }

    /// Records `count` occurrences of `word` at once, as if all made now
    /// (loading the user's store: the clock does not move, so the words
    /// loaded share one recency and none is favoured by its place in the file).
    pub fn add_count(&mut self, word: &str, count: u32) {
        self.forget_memos();
        if count == 0 {
            return;
        }
        let w = ((self.clock - self.base) as f64 / TAU_WORDS).exp() * count as f64;
        self.total += count as u64;
        self.total_weight += w;
        let now = self.clock;
        self.thaw(word);
        match self.stats.get_mut(word) {
            Some(s) => {
                s.count = s.count.saturating_add(count);
                s.weight += w;
                s.last = now;
                if s.oov {
                    self.oov_total += count as u64;
                    self.oov_weight += w;
                }
            }
            None => {
                if self.len() >= self.limit() {
                    self.prune();
                }
                let stat = Stat {
                    count,
                    weight: w,
                    last: now,
                    oov: false,
                    id: None,
                };
                self.stats.insert(word.into(), stat);
                self.index.insert(index_key(word), ());
            }
        }
    }

    /// Forgets `word` entirely.
    pub fn remove(&mut self, word: &str) {
        self.forget_memos();
        self.thaw(word);
        if let Some(s) = self.stats.remove(word) {
            self.index.remove(&index_key(word));
            self.total -= s.count as u64;
            self.total_weight = (self.total_weight - s.weight).max(0.0);
            if s.oov {
                self.oov_total -= s.count as u64;
                self.oov_weight = (self.oov_weight - s.weight).max(0.0);
            }
        }
    }

    /// Reverts an `add_undoable`; undos must be applied newest first.
    pub fn undo(&mut self, u: Undo) {
        self.forget_memos();
        if self.base != u.base {
            // A renormalisation happened since: bring the weights back to the old base.
            self.rebase_all(u.base);
        }
        self.clock = u.clock;
        self.total = u.total;
        self.total_weight = u.total_weight;
        self.oov_total = u.oov_total;
        self.oov_weight = u.oov_weight;
        if let Some(i) = self.frozen.find(&u.word) {
            self.frozen.take(i);
        }
        match u.prev {
            Some(prev) => {
                if self.stats.insert(u.word.clone(), prev).is_none() {
                    self.index.insert(index_key(&u.word), ());
                }
            }
            None => {
                self.stats.remove(&u.word);
                self.index.remove(&index_key(&u.word));
            }
        }
    }

    /// Drops the weaker half of the words (keeps memory bounded on huge buffers).
    fn prune(&mut self) {
        self.thaw_all();
        let mut scored: Vec<(f32, Box<str>)> = self
            .stats
            .keys()
            .map(|w| (self.prob(w), w.clone()))
            .collect();
        // Words of equal probability (loaded ones share one time) by
        // spelling: the same words stay however the maps were filled.
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        for (_, w) in scored.drain(..).skip(self.limit() / 2) {
            self.stats.remove(&w);
            self.index.remove(&index_key(&w));
        }
    }

    /// P_cache(word): half long-run frequency, half recency-weighted frequency.
    pub fn prob(&self, word: &str) -> f32 {
        match self.get(word) {
            Some(s) => self.stat_prob(&s),
            None => 0.0,
        }
    }

    /// P(word | an out-of-vocabulary word comes): the cache model within
    /// the words the model cannot name (0 for vocabulary words).
    pub fn prob_oov(&self, word: &str) -> f32 {
        self.get(word).map_or(0.0, |s| self.stat_prob_oov(&s))
    }

    fn stat_prob_oov(&self, s: &Stat) -> f32 {
        if !s.oov || self.oov_total == 0 {
            return 0.0;
        }
        let freq = s.count as f64 / self.oov_total as f64;
        let recent = s.weight / self.oov_weight.max(1e-300);
        (0.5 * freq + 0.5 * recent) as f32
    }

    fn stat_prob(&self, s: &Stat) -> f32 {
        self.prob_of(s.count, s.weight)
    }

    /// P_cache of a word counted `count` times, of recency weight `weight`.
    fn prob_of(&self, count: u32, weight: f64) -> f32 {
        if self.total == 0 {
            return 0.0;
        }
        let freq = count as f64 / self.total as f64;
        let recent = weight / self.total_weight.max(1e-300);
        (0.5 * freq + 0.5 * recent) as f32
    }

    /// Moves the weights' time origin to now (multiplies them all by one factor).
    fn renormalise(&mut self) {
        let factor = (-((self.clock - self.base) as f64) / TAU_WORDS).exp();
        for s in self.stats.values_mut() {
            s.weight *= factor;
        }
        self.frozen.scale(factor);
        self.total_weight *= factor;
        self.oov_weight *= factor;
        self.base = self.clock;
    }

    /// After an undo across a renormalisation: the restored totals are on
    /// `old_base`; bring everything to that base (exact up to rounding).
    fn rebase_all(&mut self, old_base: u64) {
        let factor = ((self.base as f64 - old_base as f64) / TAU_WORDS).exp();
        for s in self.stats.values_mut() {
            s.weight *= factor;
        }
        self.frozen.scale(factor);
        self.base = old_base;
    }

    /// Words whose lowercase form starts with `lower_prefix`, with P_cache
    /// and the vocabulary id when known.
    pub fn with_prefix<'a>(&'a self, lower_prefix: &str) -> impl Iterator<Item = Hit<'a>> + 'a {
        let start: Box<str> = lower_prefix.into();
        let lp = lower_prefix.to_string();
        let mut live = self
            .index
            .range::<str, _>((
                std::ops::Bound::Included(&*start),
                std::ops::Bound::Unbounded,
            ))
            .map(|(k, _)| k)
            .take_while({
                let lp = lp.clone();
                move |k| k.starts_with(&*lp)
            })
            .peekable();
        // The frozen words of the prefix, merged in the index's order.
        let mut at = self.frozen.prefix_start(&lp);
        std::iter::from_fn(move || loop {
            while at < self.frozen.slots() && self.frozen.is_gone(at) {
                at += 1;
            }
            let frozen = (at < self.frozen.slots())
                .then(|| self.frozen.get(at).0)
                .filter(|w| prefix_cmp(w, &lp) == Ordering::Equal);
            let from_live = match (live.peek(), frozen) {
                (None, None) => return None,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(k), Some(w)) => key_cmp(k, w) == Ordering::Less,
            };
            if from_live {
                let k = live.next().expect("peeked");
                if let Some(hit) = k.find('\0').and_then(|at| self.hit(&k[at + 1..])) {
                    return Some(hit);
                }
            } else {
                let word = self.frozen.get(at).0;
                at += 1;
                if !word.contains('\0') {
                    let stat = self.frozen_stat(at - 1);
                    return Some((word, self.stat_prob(&stat), stat.id));
                }
                // As the index has it: the word after its key's first NUL.
                let key = index_key(word);
                if let Some(hit) = key.find('\0').and_then(|at| self.hit(&key[at + 1..])) {
                    return Some(hit);
                }
            }
        })
    }

    /// Clears what is remembered of the words (they change).
    fn forget_memos(&mut self) {
        self.top_memo.take();
        self.frozen_memo.get_mut().clear();
    }

    /// `word` as a prefix look-up lists it, if held.
    fn hit(&self, word: &str) -> Option<Hit<'_>> {
        if let Some((w, s)) = self.stats.get_key_value(word) {
            return Some((&**w, self.stat_prob(s), s.id));
        }
        let i = self.frozen.find(word)?;
        let stat = self.frozen_stat(i);
        Some((self.frozen.get(i).0, self.stat_prob(&stat), stat.id))
    }

    /// The words kept and their estimated heap bytes: the table entry, the
    /// word's text, and its prefix-index key in a B-tree leaf (11 keys of a
    /// 16-byte pointer each, about two thirds full: ~30 bytes a key).
    pub fn memory(&self) -> CacheMemory {
        let text: usize = self
            .stats
            .keys()
            .map(|w| memory::alloc(w.len()) + memory::alloc(2 * w.len() + 1) + 30)
            .sum();
        CacheMemory {
            entries: self.len(),
            bytes: memory::table::<Box<str>, Stat>(self.stats.capacity())
                + text
                + self.frozen.bytes(),
        }
    }

    /// Every word, in no particular order (probabilities not computed).
    pub fn words(&self) -> impl Iterator<Item = &str> {
        self.stats
            .keys()
            .map(|w| &**w)
            .chain(self.frozen.entries().map(|i| self.frozen.get(i).0))
    }

    /// The `n` best words by `score(P_cache(word), P_oov(word))`, with
    /// P_cache and the vocabulary id when known.
    pub fn top_scored(&self, n: usize, score: impl Fn(f32, f32) -> f32) -> Vec<Hit<'_>> {
        let mut all: Vec<(&str, f32, f32, Option<u32>)> = self
            .stats
            .iter()
            .map(|(w, s)| (&**w, *s))
            .chain(
                self.frozen
                    .entries()
                    .map(|i| (self.frozen.get(i).0, self.frozen_stat(i))),
            )
            .map(|(w, s)| {
                let p = self.stat_prob(&s);
                (w, p, score(p, self.stat_prob_oov(&s)), s.id)
            })
            .collect();
        let n = n.min(all.len());
        if n == 0 {
            return Vec::new();
        }
        // Equal scores by spelling (loaded words share one time): the same
        // words come first however the maps were filled.
        let order = |a: &(&str, f32, f32, Option<u32>), b: &(&str, f32, f32, Option<u32>)| {
            b.2.total_cmp(&a.2).then_with(|| a.0.cmp(b.0))
        };
        all.select_nth_unstable_by(n - 1, order);
        all.truncate(n);
        all.sort_by(order);
        all.into_iter().map(|(w, p, _, id)| (w, p, id)).collect()
    }

    /// The `n` most probable words (remembered until the words change).
    pub fn top(&self, n: usize) -> Vec<Hit<'_>> {
        match self.top_memo.get() {
            // The first n of a longer answer are the answer for n (one
            // strict order), and a short answer holds every word.
            Some((m, v)) if *m >= n || v.len() < *m => {
                return v.iter().take(n).map(|(w, p, id)| (&**w, *p, *id)).collect()
            }
            Some(_) => return self.top_scored(n, |p, _| p),
            None => {}
        }
        let fresh = self.top_scored(n, |p, _| p);
        let owned = fresh
            .iter()
            .map(|(w, p, id)| ((*w).into(), *p, *id))
            .collect();
        let _ = self.top_memo.set((n, owned));
        fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_remembered_top_follows_every_change() {
        let fresh = |c: &WordCache, n| {
            c.top_scored(n, |p, _| p)
                .into_iter()
                .map(|x| x.0.to_string())
                .collect::<Vec<_>>()
        };
        let top = |c: &WordCache, n| {
            c.top(n)
                .into_iter()
                .map(|x| x.0.to_string())
                .collect::<Vec<_>>()
        };
        let mut c = WordCache::new();
        for w in ["alpha", "beta", "alpha", "gamma"] {
            c.add(w);
        }
        assert_eq!(top(&c, 3), fresh(&c, 3));
        assert_eq!(
            top(&c, 1),
            fresh(&c, 1),
            "a shorter answer from the longer one"
        );
        assert_eq!(top(&c, 9), fresh(&c, 9), "a longer one than remembered");
        let u = c.add_undoable("gamma", InVocab::Unknown);
        c.add("gamma");
        assert_eq!(top(&c, 3), fresh(&c, 3));
        assert_eq!(top(&c, 1), vec!["gamma"]);
        c.undo(u);
        assert_eq!(top(&c, 3), fresh(&c, 3));
        c.remove("alpha");
        assert_eq!(top(&c, 3), fresh(&c, 3));
        c.add_count("delta", 50);
        assert_eq!(top(&c, 1), vec!["delta"]);
    }

    /// Everything a caller can see of a cache: each word's probabilities and
    /// vocabulary id, the prefix lists and the top words.
    fn seen(c: &WordCache, words: &[String]) -> Vec<String> {
        let mut out: Vec<String> = words
            .iter()
            .map(|w| {
                let hit = c.hit(w).map(|h| (h.1.to_bits(), h.2));
                format!(
                    "{w} {} {} {hit:?}",
                    c.prob(w).to_bits(),
                    c.prob_oov(w).to_bits()
                )
            })
            .collect();
        for p in ["", "w", "w1", "W2", "x", "q"] {
            let list: Vec<_> = c
                .with_prefix(p)
                .map(|h| (h.0.to_string(), h.1.to_bits(), h.2))
                .collect();
            out.push(format!("{p}: {list:?}"));
        }
        out.push(format!("{:?}", c.top(7)));
        out.push(format!("{} {}", c.len(), c.is_empty()));
        out
    }

    #[test]
    fn compacting_changes_nothing_that_can_be_seen() {
        let mut rng = crate::model::testgen::Rng::new(17);
        // Capitals (one lowercase key for several spellings), words the
        // vocabulary names, words out of it, and words of no vocabulary.
        let words: Vec<String> = (0..300)
            .map(|i| match i % 4 {
                0 => format!("w{i}"),
                1 => format!("W{}", i - 1),
                2 => format!("x{i}"),
                _ => format!("q{}", i % 23),
            })
            .collect();
        let vocab = |w: &str| match w.as_bytes()[0] {
            b'w' => InVocab::Id(w.len() as u32 * 3),
            b'x' | b'W' => InVocab::Oov,
            _ => InVocab::Unknown,
        };
        let (mut plain, mut compacted) = (WordCache::with_limit(250), WordCache::with_limit(250));
        let mut undos = (Vec::new(), Vec::new());
        for step in 0..8_000 {
            let w = &words[rng.below(words.len())];
            match rng.below(12) {
                0 => {
                    plain.add_count(w, 3);
                    compacted.add_count(w, 3);
                }
                1 if !undos.0.is_empty() => {
                    plain.undo(undos.0.pop().unwrap());
                    compacted.undo(undos.1.pop().unwrap());
                }
                2 if step % 40 == 0 => {
                    plain.remove(w);
                    compacted.remove(w);
                }
                _ => {
                    undos.0.push(plain.add_undoable(w, vocab(w)));
                    undos.1.push(compacted.add_undoable(w, vocab(w)));
                }
            }
            if step % 89 == 0 {
                compacted.compact();
                assert_eq!(compacted.stats.len(), 0);
            }
            if step % 29 == 0 {
                assert_eq!(
                    seen(&plain, &words),
                    seen(&compacted, &words),
                    "step {step}"
                );
            }
        }
        assert_eq!(seen(&plain, &words), seen(&compacted, &words));
        compacted.compact();
        assert_eq!(seen(&plain, &words), seen(&compacted, &words));
        assert!(compacted.memory().bytes * 2 < plain.memory().bytes);
    }

    #[test]
    fn frequency_and_recency_rank_words() {
        let mut c = WordCache::new();
        for w in ["alpha", "beta", "alpha", "gamma", "alpha", "beta"] {
            c.add(w);
        }
        assert!(c.prob("alpha") > c.prob("beta"));
        assert!(c.prob("beta") > c.prob("gamma"));
        assert_eq!(c.prob("delta"), 0.0);
        let top: Vec<&str> = c.top(2).into_iter().map(|x| x.0).collect();
        assert_eq!(top, vec!["alpha", "beta"]);
        // Recency: a word used just now beats an older word of the same count.
        let mut c = WordCache::new();
        c.add("old");
        for i in 0..100 {
            c.add(&format!("w{i}"));
        }
        c.add("new");
        assert!(c.prob("new") > c.prob("old"));
    }

    #[test]
    fn undo_restores_exactly() {
        let mut c = WordCache::new();
        for w in ["a", "b", "a"] {
            c.add(w);
        }
        let before: Vec<f32> = ["a", "b", "c"].iter().map(|w| c.prob(w)).collect();
        let u1 = c.add_undoable("c", InVocab::Oov);
        let u2 = c.add_undoable("a", InVocab::Id(7));
        c.undo(u2);
        c.undo(u1);
        let after: Vec<f32> = ["a", "b", "c"].iter().map(|w| c.prob(w)).collect();
        assert_eq!(before, after);
        assert_eq!(c.with_prefix("a").next().map(|h| h.2), Some(None));
        assert_eq!(c.with_prefix("c").count(), 0);
    }

    #[test]
    fn prefix_lookup_is_case_insensitive() {
        let mut c = WordCache::new();
        for w in ["HashMap", "hasher", "heap", "Hash"] {
            c.add(w);
        }
        let mut found: Vec<&str> = c.with_prefix("has").map(|x| x.0).collect();
        found.sort();
        assert_eq!(found, vec!["Hash", "HashMap", "hasher"]);
    }
}
