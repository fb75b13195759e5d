//! The bigram cache: which words followed which previous word (and which
//! two, three, four previous words: `ORDERS`) earlier in a buffer (or in
//! the user's text). A document repeats its phrases ("self.items", "the word
//! cache"), so the word that followed the same previous words last time is
//! often the next one; the model forgets that beyond its context.

use super::frozen::FrozenPairs;
use super::memory::{self, CacheMemory};
use crate::text::hash::FastMap;
use crate::text::tokenizer::{is_word_byte, is_word_char};

/// Followers kept per previous word (the rarest, oldest go beyond it).
pub const MAX_FOLLOWERS: usize = 24;
/// Previous words kept per cache (the least recently used half goes beyond it).
/// A key with one follower costs about 180 heap bytes (`memory`), each
/// further follower about 56: 1.4 MB at the bound with one follower a key
/// (most keys have one), 12 MB if every key had MAX_FOLLOWERS.
const MAX_KEYS: usize = 8_000;
/// Non-word characters looked through between the previous word and the cursor.
const MAX_GAP: usize = 12;
/// Punctuation characters of the gap that are part of the key.
const MAX_PUNCT: usize = 3;

/// The context a word is predicted from: the previous word and the
/// punctuation between it and the word (`self.` and `self (` differ), hashed.
pub type Key = u64;

/// The key of the word that starts right after `before`, or None when no
/// word is close enough before it (start of the text, a long gap).
pub fn key_before(before: &str) -> Option<Key> {
    keys_before(before)[0]
}

/// Contexts a word is predicted from: the previous word (order 0), the
/// two previous words (order 1), and so on up to ORDERS previous words.
/// Code repeats whole phrases (`Poll::Ready(Err(e))`), which only a longer
/// context tells apart from the other followers of its last word.
pub const ORDERS: usize = 4;

/// The keys of the word that starts right after `before`, one per order
/// (see `ORDERS`); an order's key is None where fewer words are close enough.
pub fn keys_before(before: &str) -> [Option<Key>; ORDERS] {
    let mut keys = [None; ORDERS];
    let mut h: u64 = 0xcbf29ce484222325;
    let mut end = before.len();
    for (order, key) in keys.iter_mut().enumerate() {
        let Some(start) = mix_previous_word(&before[..end], &mut h) else {
            break;
        };
        if order > 0 {
            // The order joins the hash: "a b" as two words is not "b" after "a".
            mix(&mut h, order as u8 + 1);
        }
        *key = Some(h);
        end = start;
    }
    keys
}

/// Where the contexts of `keys_before(before)` begin: the previous word's
/// start, the word before it's, and so on, so that
/// `keys_before(&before[start..])` gives the same key of that order (a stored
/// pair keeps only its context's text).
pub fn context_starts(before: &str) -> [Option<usize>; ORDERS] {
    let mut starts = [None; ORDERS];
    let mut h = 0;
    let mut end = before.len();
    for start in starts.iter_mut() {
        let Some(s) = mix_previous_word(&before[..end], &mut h) else {
            break;
        };
        *start = Some(s);
        end = s;
    }
    starts
}

/// FNV-1a step.
fn mix(h: &mut u64, b: u8) {
    *h ^= b as u64;
    *h = h.wrapping_mul(0x100000001b3);
}

/// Mixes the gap at the end of `before` and the word before it into `h`;
/// returns where that word starts (None: no word close enough).
fn mix_previous_word(before: &str, h: &mut u64) -> Option<usize> {
    match mix_previous_word_ascii(before.as_bytes(), h) {
        Some(start) => start,
        None => mix_previous_word_chars(before, h),
    }
}

/// `mix_previous_word` where the gap is ASCII (word characters are), byte
/// by byte: the same hash without decoding characters (loading a store
/// hashes every pair's context). None, `h` untouched, where it is not.
fn mix_previous_word_ascii(b: &[u8], h: &mut u64) -> Option<Option<usize>> {
    let gap = b
        .iter()
        .rev()
        .take(MAX_GAP + 1)
        .take_while(|&&c| !is_word_byte(c));
    if gap.clone().any(|c| !c.is_ascii()) {
        return None;
    }
    let (mut at, mut gap, mut punct, mut last_newline) = (b.len(), 0, 0, false);
    while at > 0 && !is_word_byte(b[at - 1]) {
        let c = b[at - 1];
        gap += 1;
        if gap > MAX_GAP {
            return Some(None);
        }
        at -= 1;
        if c == b'\n' {
            if !last_newline && punct < MAX_PUNCT {
                mix(h, b'\n');
                punct += 1;
            }
            last_newline = true;
        } else if !(c as char).is_whitespace() {
            last_newline = false;
            if punct < MAX_PUNCT {
                mix(h, c);
                punct += 1;
            }
        }
    }
    if at == 0 {
        return Some(None);
    }
    let end = at;
    let start = b[..end]
        .iter()
        .rposition(|&c| !is_word_byte(c))
        .map_or(0, |i| i + 1);
    mix(h, 0);
    for &c in &b[start..end] {
        mix(h, c);
    }
    Some(Some(start))
}

/// `mix_previous_word` character by character (any gap).
fn mix_previous_word_chars(before: &str, h: &mut u64) -> Option<usize> {
    let mut chars = before.char_indices().rev().peekable();
    let mut gap = 0;
    let mut punct = 0;
    let mut last_newline = false;
    // The gap: blanks are ignored, newlines count once, punctuation up to MAX_PUNCT.
    while let Some(&(_, c)) = chars.peek() {
        if is_word_char(c) {
            break;
        }
        gap += 1;
        if gap > MAX_GAP {
            return None;
        }
        chars.next();
        if c == '\n' {
            if !last_newline && punct < MAX_PUNCT {
                mix(h, b'\n');
                punct += 1;
            }
            last_newline = true;
        } else if !c.is_whitespace() {
            last_newline = false;
            if punct < MAX_PUNCT {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    mix(h, b);
                }
                punct += 1;
            }
        }
    }
    let end = chars.peek()?.0 + 1;
    let start = before[..end]
        .char_indices()
        .rev()
        .take_while(|&(_, c)| is_word_char(c))
        .last()
        .map_or(end, |(i, _)| i);
    mix(h, 0);
    for b in before[start..end].bytes() {
        mix(h, b);
    }
    Some(start)
}

#[derive(Debug, Default)]
struct Followers {
    /// (word, count), in first-seen order.
    words: Vec<(Box<str>, u32)>,
    total: u32,
    /// Clock of the last occurrence (for pruning).
    last: u64,
}

impl Followers {
    /// Appends `word`, not yet among the followers, with `count`. A full list
    /// first drops its rarest follower (the oldest among equals), which is
    /// returned with its position so that an undo can put it back.
    fn push_new(&mut self, word: &str, count: u32) -> Option<(usize, Box<str>, u32)> {
        let evicted = (self.words.len() >= MAX_FOLLOWERS).then(|| {
            let (i, _) = self
                .words
                .iter()
                .enumerate()
                .min_by_key(|(_, (_, c))| *c)
                .expect("full list");
            let (w, c) = self.words.remove(i);
            self.total = self.total.saturating_sub(c);
            (i, w, c)
        });
        if self.words.is_empty() {
            // Most keys are followed by one word only: no room for four (a
            // grown list doubles as usual).
            self.words.reserve_exact(1);
        }
        self.words.push((word.into(), count));
        evicted
    }
}

/// How to take back one `add_undoable` (see `BigramCache::undo`).
#[derive(Debug, Clone)]
pub struct BigramUndo {
    key: Key,
    word: Box<str>,
    /// The pair's count and the key's total and clock before the add.
    count: u32,
    total: u32,
    last: u64,
    clock: u64,
    /// A follower dropped to make room: (position, word, count).
    evicted: Option<(usize, Box<str>, u32)>,
}

/// Counts of (previous word → word) pairs.
#[derive(Debug, Default)]
pub struct BigramCache {
    keys: FastMap<Key, Followers>,
    clock: u64,
    /// Keys kept (0: MAX_KEYS).
    limit: usize,
    /// The pairs held at start (the personal store), less the keys moved
    /// to `keys` or removed since.
    frozen: FrozenPairs,
}

/// The bound of the user's pairs (`BigramCache::with_limit`), which also
/// hold what was learnt from earlier writing (about 18 MB at the bound with
/// one follower a key, frozen: see `COMPACT_KEYS`; 67 MB in the map).
pub const MAX_USER_KEYS: usize = 300_000;

/// Keys in the map beyond which `compact_if_large` moves them all to the
/// frozen part: a key in the map with one follower takes ~225 heap bytes, in
/// the frozen arrays ~60, and a large text learnt (a project) adds tens of
/// thousands (2.8 MB of text: 186,000 keys, 42 MB in the map).
pub const COMPACT_KEYS: usize = 16_384;

impl BigramCache {
    pub fn new() -> BigramCache {
        BigramCache::default()
    }

    /// A cache that keeps up to `limit` keys.
    pub fn with_limit(limit: usize) -> BigramCache {
        BigramCache {
            limit: limit.max(2),
            ..BigramCache::default()
        }
    }

    /// A cache of up to `limit` keys that holds `frozen` (the pairs of
    /// the personal store, in use at once) counted up to `clock`.
    pub fn with_frozen(limit: usize, frozen: FrozenPairs, clock: u64) -> BigramCache {
        BigramCache {
            frozen,
            clock,
            ..BigramCache::with_limit(limit)
        }
    }

    pub fn len(&self) -> usize {
        self.keys.len() + self.frozen.live()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Moves `key` from the frozen part to `keys` (before it changes).
    fn thaw(&mut self, key: Key) {
        if let Some(i) = self.frozen.find(key) {
            self.thaw_entry(i);
        }
    }

    fn thaw_entry(&mut self, i: usize) {
        let (total, last) = self.frozen.total_last(i);
        let words = self.frozen.followers(i).map(|(w, n)| (w.into(), n));
        let f = Followers {
            words: words.collect(),
            total,
            last,
        };
        self.keys.insert(self.frozen.key(i), f);
        self.frozen.take(i);
    }

    /// The keys kept and their estimated heap bytes (the table, each key's
    /// list of followers and the followers' text).
    pub fn memory(&self) -> CacheMemory {
        let lists: usize = self
            .keys
            .values()
            .map(|f| memory::counted_words(&f.words))
            .sum();
        CacheMemory {
            entries: self.len(),
            bytes: memory::table::<Key, Followers>(self.keys.capacity())
                + lists
                + self.frozen.bytes(),
        }
    }

    /// Occurrences seen after `key`.
    pub fn total(&self, key: Key) -> u32 {
        match self.keys.get(&key) {
            Some(f) => f.total,
            None => self
                .frozen
                .find(key)
                .map_or(0, |i| self.frozen.total_last(i).0),
        }
    }

    /// count(key → word).
    pub fn count(&self, key: Key, word: &str) -> u32 {
        self.followers(key)
            .find(|(w, _)| *w == word)
            .map_or(0, |(_, c)| c)
    }

    /// The words seen after `key` with their counts.
    pub fn followers(&self, key: Key) -> impl Iterator<Item = (&str, u32)> {
        let live = self.keys.get(&key);
        let frozen = live.is_none().then(|| self.frozen.find(key)).flatten();
        let live = live
            .into_iter()
            .flat_map(|f| f.words.iter().map(|(w, c)| (&**w, *c)));
        live.chain(frozen.into_iter().flat_map(|i| self.frozen.followers(i)))
    }

    pub fn add(&mut self, key: Key, word: &str) {
        self.add_undoable(key, word);
    }

    /// Records one `key → word` and returns what undoes it exactly, so text
    /// that is deleted again leaves no trace.
    pub fn add_undoable(&mut self, key: Key, word: &str) -> BigramUndo {
        self.thaw(key);
        let (count, total, last) = match self.keys.get(&key) {
            Some(f) => (
                f.words
                    .iter()
                    .find(|(w, _)| &**w == word)
                    .map_or(0, |(_, c)| *c),
                f.total,
                f.last,
            ),
            None => (0, 0, 0),
        };
        let mut undo = BigramUndo {
            key,
            word: word.into(),
            count,
            total,
            last,
            clock: self.clock,
            evicted: None,
        };
        self.clock += 1;
        if total == 0
            && self.len()
                >= if self.limit == 0 {
                    MAX_KEYS
                } else {
                    self.limit
                }
        {
            self.prune();
        }
        let f = self.keys.entry(key).or_default();
        f.total = f.total.saturating_add(1);
        f.last = self.clock;
        match f.words.iter_mut().find(|(w, _)| &**w == word) {
            Some(e) => e.1 = e.1.saturating_add(1),
            None => undo.evicted = f.push_new(word, 1),
        }
        undo
    }

    /// Reverts an `add_undoable`; undos must be applied newest first.
    pub fn undo(&mut self, u: BigramUndo) {
        self.thaw(u.key);
        self.clock = u.clock;
        if u.total == 0 {
            self.keys.remove(&u.key);
            return;
        }
        let f = self.keys.entry(u.key).or_default();
        f.total = u.total;
        f.last = u.last;
        match f.words.iter().position(|(w, _)| *w == u.word) {
            Some(i) if u.count == 0 => {
                f.words.remove(i);
            }
            Some(i) => f.words[i].1 = u.count,
            // The key was pruned since: only this pair comes back.
            None if u.count > 0 => f.words.push((u.word, u.count)),
            None => {}
        }
        if let Some((i, w, c)) = u.evicted {
            f.words.insert(i.min(f.words.len()), (w, c));
        }
    }

    /// Records `count` occurrences of `key → word` at once (loading the
    /// user's store; nothing to undo, so nothing allocated for it).
    pub fn add_count(&mut self, key: Key, word: &str, count: u32) {
        if count == 0 {
            return;
        }
        let limit = if self.limit == 0 {
            MAX_KEYS
        } else {
            self.limit
        };
        self.thaw(key);
        if self.len() >= limit && !self.keys.contains_key(&key) {
            self.prune();
        }
        self.clock += 1;
        let f = self.keys.entry(key).or_default();
        f.total = f.total.saturating_add(count);
        f.last = self.clock;
        match f.words.iter_mut().find(|(w, _)| &**w == word) {
            Some(e) => e.1 = e.1.saturating_add(count),
            None => {
                f.push_new(word, count);
            }
        }
    }

    /// Drops every pair that `word` follows, and the pairs after `key`.
    pub fn remove_word(&mut self, word: &str, key: Option<Key>) {
        if let Some(k) = key {
            self.keys.remove(&k);
            if let Some(i) = self.frozen.find(k) {
                self.frozen.take(i);
            }
        }
        let holding: Vec<usize> = self
            .frozen
            .entries()
            .filter(|&i| {
                self.frozen.total_last(i).0 == 0 || self.frozen.followers(i).any(|(w, _)| w == word)
            })
            .collect();
        for i in holding {
            self.thaw_entry(i);
        }
        for f in self.keys.values_mut() {
            if let Some(i) = f.words.iter().position(|(w, _)| &**w == word) {
                let (_, c) = f.words.remove(i);
                f.total = f.total.saturating_sub(c);
            }
        }
        self.keys.retain(|_, f| f.total > 0);
    }

    /// Moves every key of the map into the frozen part with its followers
    /// (in order), total and clock, so that every lookup, add, undo, prune
    /// and removal sees what it saw before (they thaw a frozen key first).
    /// Costs one pass over everything held and a sort of the map's keys:
    /// 25-39 ms for 150,000-300,000 keys on a 2-vCPU VM, once per COMPACT_KEYS
    /// new keys (learning a large text; typing takes days to add as many).
    pub fn compact(&mut self) {
        self.frozen = self.merged();
        self.keys = FastMap::default();
        // The map's many small blocks are free now.
        memory::give_back_freed();
    }

    /// Both parts as one frozen part, keys in order.
    fn merged(&self) -> FrozenPairs {
        let mut live: Vec<(Key, &Followers)> = self.keys.iter().map(|(k, f)| (*k, f)).collect();
        live.sort_unstable_by_key(|e| e.0);
        let old = &self.frozen;
        // Room for both parts at once (gone keys' followers counted too).
        let (mut followers, mut text) = old.sizes();
        for (_, f) in &live {
            followers += f.words.len();
            text += f.words.iter().map(|(w, _)| w.len()).sum::<usize>();
        }
        let mut frozen = FrozenPairs::with_capacity(live.len() + old.live(), followers, text);
        let mut kept = old.entries().peekable();
        let mut live = live.into_iter().peekable();
        loop {
            // A key is in one part or the other (thawing marks it gone).
            let take_live = match (live.peek(), kept.peek()) {
                (Some(l), Some(&i)) => l.0 < old.key(i),
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            if take_live {
                let (k, f) = live.next().expect("peeked");
                let words = f.words.iter().map(|(w, n)| (&**w, *n));
                frozen.push(k, f.total, f.last, words);
            } else {
                let i = kept.next().expect("peeked");
                let (total, last) = old.total_last(i);
                frozen.push(old.key(i), total, last, old.followers(i));
            }
        }
        frozen.shrink_to_fit();
        frozen
    }

    /// `compact` once the map holds COMPACT_KEYS keys.
    pub fn compact_if_large(&mut self) {
        if self.keys.len() >= COMPACT_KEYS {
            self.compact();
        }
    }

    /// Drops the least recently used half of the keys.
    fn prune(&mut self) {
        let frozen = &self.frozen;
        let mut lasts: Vec<u64> = self
            .keys
            .values()
            .map(|f| f.last)
            .chain(frozen.entries().map(|i| frozen.total_last(i).1))
            .collect();
        let mid = lasts.len() / 2;
        let (_, &mut cut, _) = lasts.select_nth_unstable(mid);
        self.keys.retain(|_, f| f.last > cut);
        let old: Vec<usize> = frozen
            .entries()
            .filter(|&i| frozen.total_last(i).1 <= cut)
            .collect();
        for i in old {
            self.frozen.take(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Per key: its followers in order, and its total.
    type Snapshot = Vec<(Key, Vec<(String, u32)>, u32)>;

    fn snapshot(c: &BigramCache) -> Snapshot {
        let mut v: Vec<_> = c
            .keys
            .iter()
            .map(|(k, f)| {
                // In order: eviction picks the first of equals.
                let w: Vec<(String, u32)> =
                    f.words.iter().map(|(w, n)| (w.to_string(), *n)).collect();
                (*k, w, f.total)
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn keys_are_the_previous_word_and_its_punctuation() {
        let k = |s: &str| key_before(s);
        assert_eq!(k("let x = self."), k("y = self."));
        assert_ne!(k("self."), k("self "));
        assert_eq!(k("the  "), k("of the "));
        assert_ne!(k("the "), k("then "));
        assert_eq!(k(""), None);
        assert_eq!(k("  ("), None);
        assert_eq!(k(&format!("word{}", " ".repeat(MAX_GAP + 1))), None);
        // Non-ASCII characters in the gap are punctuation, not a panic.
        assert_ne!(k("café "), k("caf "));
        assert!(k("é ").is_none());
    }

    #[test]
    fn ascii_gaps_hash_as_characters_do() {
        let alphabet = [
            'a', 'Z', '_', '1', ' ', '\n', '\t', '\x0b', '.', '(', 'é', '\u{a0}', '—',
        ];
        let mut rng = crate::model::testgen::Rng::new(7);
        for _ in 0..20_000 {
            let n = rng.below(24);
            let s: String = (0..n)
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect();
            for end in (0..=s.len()).filter(|&e| s.is_char_boundary(e)) {
                let before = &s[..end];
                let (mut a, mut b) = (1u64, 1u64);
                let fast = mix_previous_word(before, &mut a);
                let chars = mix_previous_word_chars(before, &mut b);
                assert_eq!((fast, a), (chars, b), "{before:?}");
            }
        }
    }

    #[test]
    fn two_word_keys_need_both_words() {
        let k = |s: &str| keys_before(s);
        assert_eq!(k("so the cat ")[1], k("and the cat ")[1]);
        assert_ne!(k("the cat ")[1], k("a cat ")[1]);
        assert_eq!(k("the cat ")[0], k("a cat ")[0]);
        assert_ne!(k("the cat ")[1], k("the cat ")[0]);
        assert_eq!(k("cat "), [key_before("cat "), None, None, None]);
        assert_eq!(k(" "), [None; ORDERS]);
    }

    #[test]
    fn longer_keys_need_every_word_and_say_their_order() {
        let k = |s: &str| keys_before(s);
        let four = k("Poll::Ready(Err(e");
        assert!(four.iter().all(Option::is_some), "{four:?}");
        // The fourth word tells apart what three do not.
        assert_eq!(four[1], k("x Ready(Err(e")[1]);
        assert_eq!(four[2], k("Ok::Ready(Err(e")[2]);
        assert_ne!(four[3], k("Ok::Ready(Err(e")[3]);
        assert_eq!(four[3], k("Ok::Poll::Ready(Err(e")[3]);
        assert_eq!(k("Ready(Err(e")[3], None);
        // Every key differs from the others, and an order's key is that of
        // its own context (what a stored pair keeps).
        for i in 0..ORDERS {
            for j in 0..i {
                assert_ne!(four[i], four[j]);
            }
        }
        let before = "let x = Poll::Ready(Err(e";
        let starts = context_starts(before);
        for (order, start) in starts.iter().enumerate() {
            let s = start.expect("a start");
            assert_eq!(k(&before[s..])[order], k(before)[order], "order {order}");
        }
        assert_eq!(&before[starts[3].unwrap()..], "Poll::Ready(Err(e");
    }

    #[test]
    fn counts_followers() {
        let mut c = BigramCache::new();
        let the = key_before("the ").unwrap();
        let of = key_before("of ").unwrap();
        c.add(the, "cache");
        c.add(the, "model");
        c.add(the, "cache");
        c.add(of, "the");
        assert_eq!(c.total(the), 3);
        assert_eq!(c.count(the, "cache"), 2);
        assert_eq!(c.count(the, "model"), 1);
        assert_eq!(c.count(of, "cache"), 0);
        assert_eq!(c.followers(of).collect::<Vec<_>>(), vec![("the", 1)]);
    }

    #[test]
    fn undo_restores_exactly() {
        let mut c = BigramCache::new();
        let a = key_before("a ").unwrap();
        let b = key_before("b ").unwrap();
        c.add(a, "x");
        c.add(a, "y");
        let full = key_before("full ").unwrap();
        for i in 0..MAX_FOLLOWERS {
            c.add(full, &format!("w{i}"));
        }
        let before = snapshot(&c);
        // Evicts a follower of a full key; the undo brings it back.
        let u0 = c.add_undoable(full, "new");
        let u1 = c.add_undoable(a, "x");
        let u2 = c.add_undoable(a, "z");
        let u3 = c.add_undoable(b, "x");
        assert_ne!(snapshot(&c), before);
        c.undo(u3);
        c.undo(u2);
        c.undo(u1);
        c.undo(u0);
        assert_eq!(snapshot(&c), before);
        assert_eq!(c.total(b), 0);
    }

    #[test]
    fn loaded_counts_drop_the_rarest_follower_of_a_full_key() {
        let mut c = BigramCache::new();
        let k = key_before("k ").unwrap();
        for i in 0..MAX_FOLLOWERS {
            c.add_count(k, &format!("w{i}"), if i == 5 { 1 } else { 3 });
        }
        c.add_count(k, "new", 2);
        assert_eq!(c.followers(k).count(), MAX_FOLLOWERS);
        assert_eq!(c.count(k, "w5"), 0, "the rarest goes");
        assert_eq!(c.count(k, "new"), 2);
        let sum: u32 = c.followers(k).map(|(_, n)| n).sum();
        assert_eq!(c.total(k), sum);
    }

    #[test]
    fn memory_is_bounded() {
        let mut c = BigramCache::new();
        let k = key_before("k ").unwrap();
        for i in 0..(MAX_FOLLOWERS * 3) {
            c.add(k, &format!("w{i}"));
        }
        c.add(k, "w1000");
        c.add(k, "w1000");
        assert_eq!(c.followers(k).count(), MAX_FOLLOWERS);
        let sum: u32 = c.followers(k).map(|(_, n)| n).sum();
        assert_eq!(c.total(k), sum);
        assert_eq!(c.count(k, "w1000"), 2);
        for i in 0..(3 * MAX_KEYS) {
            c.add(i as Key, "w");
        }
        assert!(c.len() <= MAX_KEYS);
        // The most recent keys survive pruning.
        assert_eq!(c.count((3 * MAX_KEYS - 1) as Key, "w"), 1);
    }

    /// Every key's followers (in order) and total, over both parts.
    fn all(c: &BigramCache, keys: &[Key]) -> Snapshot {
        keys.iter()
            .map(|&k| {
                let f = c.followers(k).map(|(w, n)| (w.to_string(), n)).collect();
                (k, f, c.total(k))
            })
            .collect()
    }

    #[test]
    fn compacting_changes_nothing_that_can_be_seen() {
        let mut rng = crate::model::testgen::Rng::new(11);
        let keys: Vec<Key> = (0..400).map(|i| i * 7919).collect();
        let (mut plain, mut compacted) =
            (BigramCache::with_limit(300), BigramCache::with_limit(300));
        let mut undos = (Vec::new(), Vec::new());
        for step in 0..6_000 {
            let k = keys[rng.below(keys.len())];
            let w = format!("w{}", rng.below(40));
            match rng.below(10) {
                0 => {
                    plain.add_count(k, &w, 3);
                    compacted.add_count(k, &w, 3);
                }
                1 if !undos.0.is_empty() => {
                    plain.undo(undos.0.pop().unwrap());
                    compacted.undo(undos.1.pop().unwrap());
                }
                2 if step % 50 == 0 => {
                    plain.remove_word(&w, Some(k));
                    compacted.remove_word(&w, Some(k));
                    undos = (Vec::new(), Vec::new());
                }
                _ => {
                    undos.0.push(plain.add_undoable(k, &w));
                    undos.1.push(compacted.add_undoable(k, &w));
                }
            }
            if step % 97 == 0 {
                compacted.compact();
                assert_eq!(compacted.keys.len(), 0);
            }
            if step % 31 == 0 {
                assert_eq!(all(&plain, &keys), all(&compacted, &keys), "step {step}");
                assert_eq!(plain.len(), compacted.len(), "step {step}");
            }
        }
        assert_eq!(all(&plain, &keys), all(&compacted, &keys));
        assert!(compacted.memory().bytes < plain.memory().bytes);
    }
}
