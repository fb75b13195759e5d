//! The hash of the engine's maps (words, token texts, bigram keys, buffers).
//!
//! The standard SipHash resists keys chosen to collide, which these maps do
//! not face (their keys come from the user's own text and a fixed
//! vocabulary), and it costs several times more than this per short word; a
//! keystroke looks up dozens of words.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<WordHasher>>;
pub type FastSet<K> = HashSet<K, BuildHasherDefault<WordHasher>>;

/// Multiply-xor over 8-byte words, with a final mix so that both the low
/// bits (the table index) and the high bits (the control tag) depend on
/// every input byte.
#[derive(Default, Clone, Copy)]
pub struct WordHasher(u64);

const K: u64 = 0x9e37_79b9_7f4a_7c15;

impl WordHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0 ^ w).wrapping_mul(K).rotate_left(23);
    }
}

impl Hasher for WordHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            self.add(u64::from_le_bytes(b));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            // The length keeps "a" and "a\0" apart.
            self.add(u64::from_le_bytes(b) ^ ((rest.len() as u64) << 59));
        }
    }

    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.add(n as u64 | 1 << 63);
    }

    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.add(n as u64);
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 32;
        h = h.wrapping_mul(K);
        h ^ (h >> 29)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn spreads_similar_words_over_the_table() {
        let b = BuildHasherDefault::<WordHasher>::default();
        // Words that differ in one late letter land in different low bits.
        let mut buckets = HashSet::new();
        for i in 0..1000 {
            let w = format!("identifier_{i:04}");
            buckets.insert(b.hash_one(w.as_str()) & 0x3ff);
        }
        assert!(buckets.len() > 500, "{} of 1024 buckets", buckets.len());
        assert_ne!(b.hash_one("a"), b.hash_one("a\0"));
        let mut m: FastMap<Box<str>, u32> = FastMap::default();
        m.insert("word".into(), 1);
        assert_eq!(m.get("word"), Some(&1));
    }
}
