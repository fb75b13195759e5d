//! The frozen part of the user's caches: what the personal store held at
//! start, in flat sorted arrays built in one pass over the store's entries
//! (no allocation per word or pair), so that a large store is in use within
//! tens of milliseconds. `WordCache` and `BigramCache` keep what was learnt
//! since in their maps (the live part) and look a word or key up there
//! first; an entry changed or removed later moves to the live part or is
//! marked gone here, so both parts together hold exactly what building the
//! maps entry by entry in the store's order would have held.
//!
//! The store's writer puts words in prefix-index order and pairs in key
//! order, so that loading only checks the order; entries in any other order
//! (an older store) are sorted here first.

use super::bigrams::{keys_before, Key, MAX_FOLLOWERS};
use rustc_hash::FxBuildHasher;
use std::cmp::Ordering;
use std::hash::BuildHasher;

/// Compares two words the way the word cache's prefix index orders them:
/// by their ASCII-lowercase spelling, then a NUL, then the word itself.
pub fn index_cmp(a: &str, b: &str) -> Ordering {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    if x.len() == y.len() {
        // The usual case, without walking the keys byte by byte: spellings
        // of one length, compared lowercase, then as written.
        let lower = x
            .iter()
            .zip(y)
            .map(|(p, q)| p.to_ascii_lowercase().cmp(&q.to_ascii_lowercase()))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal);
        return lower.then_with(|| x.cmp(y));
    }
    index_bytes(a).cmp(index_bytes(b))
}

/// Compares a prefix-index key (`lowercase\0word`) with `w`'s.
pub fn key_cmp(key: &str, w: &str) -> Ordering {
    key.bytes().cmp(index_bytes(w))
}

fn index_bytes(w: &str) -> impl Iterator<Item = u8> + '_ {
    w.bytes()
        .map(|b| b.to_ascii_lowercase())
        .chain(std::iter::once(0))
        .chain(w.bytes())
}

/// Where `w`'s index key stands against `lower_prefix`: Less before the
/// words that start with it, Equal for those words, Greater after them.
pub fn prefix_cmp(w: &str, lower_prefix: &str) -> Ordering {
    let mut key = index_bytes(w);
    for p in lower_prefix.bytes() {
        match key.next() {
            None => return Ordering::Less,
            Some(k) if k != p => return k.cmp(&p),
            Some(_) => {}
        }
    }
    Ordering::Equal
}

#[derive(Debug, Clone, Copy)]
struct Word {
    start: u32,
    len: u32,
    count: u32,
    /// What the vocabulary said of it (`VOCAB_UNKNOWN`, `VOCAB_OOV`, or its
    /// id): loaded words do not say; compacted ones keep what they knew.
    vocab: u32,
    /// Its recency weight when loaded (its count: loaded words share one time).
    weight: f64,
}

/// `Word::vocab` of a word no vocabulary was asked about.
pub const VOCAB_UNKNOWN: u32 = u32::MAX;
/// `Word::vocab` of a word out of the vocabulary.
pub const VOCAB_OOV: u32 = u32::MAX - 1;

/// The user's words at start, in prefix-index order.
#[derive(Debug, Default)]
pub struct FrozenWords {
    text: String,
    words: Vec<Word>,
    /// Open addressing on the word's hash: index into `words` + 1 (0: empty).
    table: Vec<u32>,
    gone: Vec<bool>,
    live: usize,
    /// Factors the live part's weights were multiplied by since (applied in
    /// order, as the maps would have, so the weights are the same bits).
    factors: Vec<f64>,
    total: u64,
    total_weight: f64,
}

impl FrozenWords {
    /// Entries held and not gone.
    pub fn live(&self) -> usize {
        self.live
    }

    /// The sums of the counts and weights held at start.
    pub fn totals(&self) -> (u64, f64) {
        (self.total, self.total_weight)
    }

    fn word(&self, i: usize) -> &str {
        let w = &self.words[i];
        &self.text[w.start as usize..(w.start + w.len) as usize]
    }

    /// The entry of `word`, if held and not gone.
    pub fn find(&self, word: &str) -> Option<usize> {
        if self.live == 0 {
            return None;
        }
        let mask = self.table.len() - 1;
        let mut slot = FxBuildHasher.hash_one(word) as usize & mask;
        loop {
            match self.table[slot] {
                0 => return None,
                n if self.word(n as usize - 1) == word => {
                    let i = n as usize - 1;
                    return (!self.gone[i]).then_some(i);
                }
                _ => slot = (slot + 1) & mask,
            }
        }
    }

    /// Entry `i`: its word, count and current recency weight.
    pub fn get(&self, i: usize) -> (&str, u32, f64) {
        let w = &self.words[i];
        let weight = self.factors.iter().fold(w.weight, |x, f| x * f);
        (self.word(i), w.count, weight)
    }

    /// Entry `i`: what the vocabulary said of it (`VOCAB_UNKNOWN`,
    /// `VOCAB_OOV` or its id).
    pub fn vocab(&self, i: usize) -> u32 {
        self.words[i].vocab
    }

    /// The words `(word, count, weight, vocab)`, sorted as the prefix index
    /// sorts them, each once, as one frozen part (its totals theirs);
    /// `text` bytes of words in all.
    pub fn from_sorted<'a>(
        entries: impl ExactSizeIterator<Item = (&'a str, u32, f64, u32)>,
        text: usize,
    ) -> FrozenWords {
        let mut f = FrozenWords::default();
        f.words.reserve_exact(entries.len());
        f.text.reserve_exact(text);
        for (word, count, weight, vocab) in entries {
            if f.text.len() + word.len() > u32::MAX as usize {
                break;
            }
            f.total += count as u64;
            f.total_weight += weight;
            f.words.push(Word {
                start: f.text.len() as u32,
                len: word.len() as u32,
                count,
                vocab,
                weight,
            });
            f.text.push_str(word);
        }
        f.text.shrink_to_fit();
        f.index();
        f
    }

    /// The hash table, gone flags and count of `words`.
    fn index(&mut self) {
        let slots = (self.words.len() * 2).next_power_of_two().max(2);
        self.table = vec![0; slots];
        for i in 0..self.words.len() {
            let mut slot = FxBuildHasher.hash_one(self.word(i)) as usize & (slots - 1);
            while self.table[slot] != 0 {
                slot = (slot + 1) & (slots - 1);
            }
            self.table[slot] = i as u32 + 1;
        }
        self.gone = vec![false; self.words.len()];
        self.live = self.words.len();
    }

    /// Marks entry `i` gone (moved to the live part, or removed).
    pub fn take(&mut self, i: usize) {
        if !self.gone[i] {
            self.gone[i] = true;
            self.live -= 1;
        }
    }

    /// The live part's weights were multiplied by `factor`.
    pub fn scale(&mut self, factor: f64) {
        if self.live > 0 {
            self.factors.push(factor);
        }
    }

    /// The entries not gone, in prefix-index order.
    pub fn entries(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.words.len()).filter(|&i| !self.gone[i])
    }

    /// The first entry whose index key is not before `lower_prefix` (where
    /// the words that start with it begin).
    pub fn prefix_start(&self, lower_prefix: &str) -> usize {
        self.words.partition_point(|w| {
            let text = &self.text[w.start as usize..(w.start + w.len) as usize];
            prefix_cmp(text, lower_prefix) == Ordering::Less
        })
    }

    /// The entries whose index key starts with `lower_prefix` (gone ones
    /// included): a contiguous range, as the index is sorted.
    pub fn prefix_range(&self, lower_prefix: &str) -> std::ops::Range<usize> {
        self.prefix_range_within(lower_prefix, 0..self.words.len())
    }

    /// `prefix_range`, searched only `within` (which holds it: the range
    /// of a shorter start of the prefix).
    pub fn prefix_range_within(
        &self,
        lower_prefix: &str,
        within: std::ops::Range<usize>,
    ) -> std::ops::Range<usize> {
        let text = |w: &Word| &self.text[w.start as usize..(w.start + w.len) as usize];
        let words = &self.words[within.clone()];
        let start = words.partition_point(|w| prefix_cmp(text(w), lower_prefix) == Ordering::Less);
        let len = words[start..]
            .partition_point(|w| prefix_cmp(text(w), lower_prefix) == Ordering::Equal);
        within.start + start..within.start + start + len
    }

    /// Entry `i`'s count and current recency weight (`get` without the
    /// word's text).
    pub fn count_and_weight(&self, i: usize) -> (u32, f64) {
        let w = &self.words[i];
        (w.count, self.factors.iter().fold(w.weight, |x, f| x * f))
    }

    /// Entries held, gone ones included (`prefix_start`'s indexes run to it).
    pub fn slots(&self) -> usize {
        self.words.len()
    }

    pub fn is_gone(&self, i: usize) -> bool {
        self.gone[i]
    }

    /// Estimated heap bytes.
    pub fn bytes(&self) -> usize {
        self.text.capacity()
            + self.words.capacity() * std::mem::size_of::<Word>()
            + self.table.capacity() * 4
            + self.gone.capacity()
    }
}

#[derive(Debug, Clone, Copy)]
struct Span {
    start: u32,
    len: u32,
    total: u32,
    last: u64,
}

/// The user's pairs at start: per key (sorted) its followers in order, as
/// counting the store's pairs one by one would have left them.
#[derive(Debug, Default)]
pub struct FrozenPairs {
    text: String,
    keys: Vec<Key>,
    spans: Vec<Span>,
    /// (start, len) of the word in `text`, count.
    followers: Vec<(u32, u32, u32)>,
    gone: Vec<bool>,
    live: usize,
}

impl FrozenPairs {
    /// Entries held and not gone.
    pub fn live(&self) -> usize {
        self.live
    }

    /// The entry of `key`, if held and not gone.
    pub fn find(&self, key: Key) -> Option<usize> {
        let i = self.keys.binary_search(&key).ok()?;
        (!self.gone[i]).then_some(i)
    }

    /// Entry `i`'s total and the clock of its last pair.
    pub fn total_last(&self, i: usize) -> (u32, u64) {
        (self.spans[i].total, self.spans[i].last)
    }

    pub fn key(&self, i: usize) -> Key {
        self.keys[i]
    }

    /// Entry `i`'s followers in order with their counts.
    pub fn followers(&self, i: usize) -> impl Iterator<Item = (&str, u32)> {
        let s = self.spans[i];
        self.followers[s.start as usize..(s.start + s.len) as usize]
            .iter()
            .map(|&(at, len, n)| (&self.text[at as usize..(at + len) as usize], n))
    }

    /// Marks entry `i` gone (moved to the live part, or removed).
    pub fn take(&mut self, i: usize) {
        if !self.gone[i] {
            self.gone[i] = true;
            self.live -= 1;
        }
    }

    /// The entries not gone.
    pub fn entries(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.keys.len()).filter(|&i| !self.gone[i])
    }

    /// Appends an entry, keys in increasing order: `key`'s followers in
    /// order with their counts, its total and the clock of its last pair
    /// (`BigramCache::compact`).
    pub fn push<'a>(
        &mut self,
        key: Key,
        total: u32,
        last: u64,
        followers: impl Iterator<Item = (&'a str, u32)>,
    ) {
        debug_assert!(self.keys.last().is_none_or(|&k| k < key), "keys in order");
        let start = self.followers.len() as u32;
        for (w, n) in followers {
            let at = self.text.len() as u32;
            self.text.push_str(w);
            self.followers.push((at, w.len() as u32, n));
        }
        self.keys.push(key);
        self.spans.push(Span {
            start,
            len: self.followers.len() as u32 - start,
            total,
            last,
        });
        self.gone.push(false);
        self.live += 1;
    }

    /// An empty part with room for `keys` keys, `followers` followers and
    /// `text` bytes of their words: filled by `push` without growing (a
    /// vector that doubles holds up to twice its bytes while it copies).
    pub fn with_capacity(keys: usize, followers: usize, text: usize) -> FrozenPairs {
        FrozenPairs {
            text: String::with_capacity(text),
            keys: Vec::with_capacity(keys),
            spans: Vec::with_capacity(keys),
            followers: Vec::with_capacity(followers),
            gone: Vec::with_capacity(keys),
            live: 0,
        }
    }

    /// Followers and bytes of their words held, gone keys' included
    /// (bounds for `with_capacity`).
    pub fn sizes(&self) -> (usize, usize) {
        (self.followers.len(), self.text.len())
    }

    /// Gives back the room `push` reserved beyond what is held.
    pub fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.keys.shrink_to_fit();
        self.spans.shrink_to_fit();
        self.followers.shrink_to_fit();
        self.gone.shrink_to_fit();
    }

    /// Estimated heap bytes.
    pub fn bytes(&self) -> usize {
        self.text.capacity()
            + self.keys.capacity() * 8
            + self.spans.capacity() * std::mem::size_of::<Span>()
            + self.followers.capacity() * 12
            + self.gone.capacity()
    }
}

/// Collects the store's words and pairs (in the store's order) and builds
/// the frozen parts from them.
#[derive(Debug, Default)]
pub struct FrozenBuilder {
    words: FrozenWords,
    pair_text: String,
    /// (key, clock, word start, word len, count) per counted pair.
    pairs: Vec<(Key, u64, u32, u32, u32)>,
    clock: u64,
}

impl FrozenBuilder {
    /// Room for about `words` words and `pairs` pairs of `bytes` of text.
    pub fn with_capacity(words: usize, pairs: usize, bytes: usize) -> FrozenBuilder {
        let mut b = FrozenBuilder::default();
        b.words.words.reserve(words);
        b.words.text.reserve(bytes / 4);
        b.pairs.reserve(pairs);
        b.pair_text.reserve(bytes / 4);
        b
    }

    /// `n` occurrences of `word`.
    pub fn add_word(&mut self, word: &str, n: u32) {
        if n == 0 || self.words.text.len() + word.len() > u32::MAX as usize {
            return;
        }
        // Summed in the store's order, as the maps sum them.
        self.words.total += n as u64;
        self.words.total_weight += n as f64;
        let start = self.words.text.len() as u32;
        self.words.text.push_str(word);
        self.words.words.push(Word {
            start,
            len: word.len() as u32,
            count: n,
            vocab: VOCAB_UNKNOWN,
            weight: n as f64,
        });
    }

    /// `n` occurrences of `word` after `ctx` (the text from the previous
    /// word, order 0, or the order + 1 previous words, up to the word).
    pub fn add_pair(&mut self, order: u8, ctx: &str, word: &str, n: u32) {
        let Some(Some(key)) = keys_before(ctx).get(order as usize).copied() else {
            return;
        };
        if n == 0 || self.pair_text.len() + word.len() > u32::MAX as usize {
            return;
        }
        self.clock += 1;
        let start = self.pair_text.len() as u32;
        self.pair_text.push_str(word);
        self.pairs
            .push((key, self.clock, start, word.len() as u32, n));
    }

    /// The frozen words and pairs, and the pairs' clock; None when they
    /// hold more than `max_words` words or `max_keys` keys (the caches
    /// would have pruned while loading: build them entry by entry instead).
    pub fn finish(
        mut self,
        max_words: usize,
        max_keys: usize,
    ) -> Option<(FrozenWords, FrozenPairs, u64)> {
        let words = self.finish_words(max_words)?;
        let pairs = self.finish_pairs(max_keys)?;
        Some((words, pairs, self.clock))
    }

    fn finish_words(&mut self, max_words: usize) -> Option<FrozenWords> {
        let mut f = std::mem::take(&mut self.words);
        let text = std::mem::take(&mut f.text);
        let word = |w: &Word| &text[w.start as usize..(w.start + w.len) as usize];
        let sorted = f
            .words
            .windows(2)
            .all(|p| index_cmp(word(&p[0]), word(&p[1])) == Ordering::Less);
        if !sorted {
            // Stable: of a word given twice, the counts add up in order.
            f.words.sort_by(|a, b| index_cmp(word(a), word(b)));
            f.words.dedup_by(|b, a| {
                let same = word(a) == word(b);
                if same {
                    a.count = a.count.saturating_add(b.count);
                    a.weight += b.weight;
                }
                same
            });
        }
        if f.words.len() > max_words {
            return None;
        }
        f.text = text;
        f.index();
        Some(f)
    }

    fn finish_pairs(&mut self, max_keys: usize) -> Option<FrozenPairs> {
        let mut pairs = std::mem::take(&mut self.pairs);
        if !pairs.windows(2).all(|p| p[0].0 <= p[1].0) {
            // The clock keeps each key's pairs in the store's order.
            pairs.sort_unstable_by_key(|p| (p.0, p.1));
        }
        let mut f = FrozenPairs {
            text: std::mem::take(&mut self.pair_text),
            ..FrozenPairs::default()
        };
        let mut group: Vec<(u32, u32, u32)> = Vec::with_capacity(MAX_FOLLOWERS);
        let mut at = 0;
        while at < pairs.len() {
            let key = pairs[at].0;
            let end = at + pairs[at..].iter().take_while(|p| p.0 == key).count();
            if f.keys.len() == max_keys {
                return None;
            }
            group.clear();
            let mut total: u32 = 0;
            for &(_, _, start, len, n) in &pairs[at..end] {
                total = total.saturating_add(n);
                let text = &f.text;
                let word = |s: u32, l: u32| &text[s as usize..(s + l) as usize];
                match group
                    .iter_mut()
                    .find(|(s, l, _)| word(*s, *l) == word(start, len))
                {
                    Some(e) => e.2 = e.2.saturating_add(n),
                    None => {
                        if group.len() >= MAX_FOLLOWERS {
                            // As `BigramCache::add_count`: the rarest, first of equals.
                            let (i, _) = group
                                .iter()
                                .enumerate()
                                .min_by_key(|(_, e)| e.2)
                                .expect("full list");
                            total = total.saturating_sub(group.remove(i).2);
                        }
                        group.push((start, len, n));
                    }
                }
            }
            f.keys.push(key);
            f.spans.push(Span {
                start: f.followers.len() as u32,
                len: group.len() as u32,
                total,
                last: pairs[end - 1].1,
            });
            f.followers.extend_from_slice(&group);
            at = end;
        }
        f.gone = vec![false; f.keys.len()];
        f.live = f.keys.len();
        Some(f)
    }
}

#[cfg(test)]
#[path = "frozen_tests.rs"]
mod tests;
