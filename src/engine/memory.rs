//! What the engine's caches hold and about how many heap bytes they take,
//! so memory over a long session can be told apart from the allocator's
//! own overhead (the host's `status` reports both).
//!
//! The bytes are estimates from lengths and capacities: a hash table costs
//! its buckets (capacity rounded up to a power of two, one control byte
//! each), a string or vector its allocation rounded up the way a malloc
//! chunk is (8 bytes of header, 16-byte steps, 32 at least).

use super::engine::Engine;
use std::mem::size_of;

/// Asks the allocator to return freed blocks to the system: after a cache
/// moved many small entries into flat arrays, glibc keeps the blocks in
/// the process until asked.
pub fn give_back_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Entries of one kind of cache and their estimated heap bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheMemory {
    pub entries: usize,
    pub bytes: usize,
}

impl CacheMemory {
    pub fn add(&mut self, other: CacheMemory) {
        self.entries += other.entries;
        self.bytes += other.bytes;
    }
}

/// The engine's caches, summed over buffers where per buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineMemory {
    /// Buffers whose context is kept.
    pub buffers: usize,
    /// Cached tokens and the model states after them.
    pub tokens: CacheMemory,
    /// Hashes of the lines learnt (so a re-read line is not counted twice).
    pub seen_lines: CacheMemory,
    /// Words learnt from the buffers' text.
    pub buffer_words: CacheMemory,
    /// (previous words → word) keys learnt from the buffers' text.
    pub buffer_pairs: CacheMemory,
    /// The user's words (typed, accepted, learnt) across buffers.
    pub user_words: CacheMemory,
    /// The user's (previous words → word) keys.
    pub user_pairs: CacheMemory,
    /// The contexts of the user's rejections.
    pub user_rejections: CacheMemory,
}

impl EngineMemory {
    /// All the estimated bytes.
    pub fn bytes(&self) -> usize {
        [
            self.tokens,
            self.seen_lines,
            self.buffer_words,
            self.buffer_pairs,
            self.user_words,
            self.user_pairs,
            self.user_rejections,
        ]
        .iter()
        .map(|c| c.bytes)
        .sum()
    }
}

impl Engine {
    /// What the caches hold and their estimated heap bytes (walks every
    /// cached word: call it now and then, not per keystroke).
    pub fn memory(&self) -> EngineMemory {
        let mut m = EngineMemory {
            buffers: self.buffers.len(),
            user_words: self.user_words.memory(),
            user_pairs: self.user_bigrams.memory(),
            user_rejections: self.rejections.memory(),
            ..EngineMemory::default()
        };
        for b in self.buffers.values() {
            let (tokens, seen) = b.ctx.memory();
            m.tokens.add(tokens);
            m.seen_lines.add(seen);
            m.buffer_words.add(b.ctx.words.memory());
            m.buffer_pairs.add(b.ctx.bigrams.memory());
        }
        m
    }
}

/// Bytes a heap allocation of `n` bytes takes (0 for none).
pub fn alloc(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        (n + 8).div_ceil(16).max(2) * 16
    }
}

/// Bytes of a Vec<T> of capacity `cap`.
pub fn vec<T>(cap: usize) -> usize {
    alloc(cap * size_of::<T>())
}

/// Bytes of a list of counted words: the Vec and each word's allocation.
pub fn counted_words(words: &Vec<(Box<str>, u32)>) -> usize {
    vec::<(Box<str>, u32)>(words.capacity())
        + words.iter().map(|(w, _)| alloc(w.len())).sum::<usize>()
}

/// Bytes of a hash table of (K, V) entries that can hold `cap` of them.
pub fn table<K, V>(cap: usize) -> usize {
    if cap == 0 {
        return 0;
    }
    let buckets = (cap * 8 / 7).max(4).next_power_of_two();
    alloc(buckets * (size_of::<(K, V)>() + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_round_up_like_malloc_chunks() {
        assert_eq!(alloc(0), 0);
        assert_eq!(alloc(1), 32);
        assert_eq!(alloc(24), 32);
        assert_eq!(alloc(25), 48);
        assert_eq!(vec::<u64>(4), 48);
        // 7 entries fit 8 buckets of 16 + 1 bytes.
        assert_eq!(table::<u64, u64>(7), alloc(8 * 17));
    }

    #[test]
    fn caches_report_their_entries_and_grow_with_them() {
        use crate::engine::bigrams::BigramCache;
        use crate::engine::word_cache::WordCache;
        let mut words = WordCache::new();
        let mut pairs = BigramCache::new();
        let empty = (words.memory(), pairs.memory());
        for i in 0..1000u64 {
            let w = format!("word{i}");
            words.add(&w);
            words.add(&w);
            pairs.add(i, &w);
        }
        let (w, p) = (words.memory(), pairs.memory());
        assert_eq!((w.entries, p.entries), (1000, 1000));
        // Each word: its text twice (entry and index) at 32 bytes at least,
        // its index slot and a table entry.
        assert!(w.bytes >= 1000 * (2 * 32 + 30 + 40), "{w:?}");
        assert!(p.bytes >= 1000 * (32 + 48), "{p:?}");
        assert_eq!(empty.0.entries + empty.1.entries, 0);
    }
}
