//! The hash of the engine's maps (words, token texts, bigram keys, buffers).
//!
//! The standard SipHash resists keys chosen to collide, which these maps do
//! not face (their keys come from the user's own text and a fixed
//! vocabulary), and it costs several times more than FxHash per short word;
//! a keystroke looks up dozens of words.

pub type FastMap<K, V> = rustc_hash::FxHashMap<K, V>;
pub type FastSet<K> = rustc_hash::FxHashSet<K>;
