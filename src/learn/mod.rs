//! Personal learning: what the user wrote, counted (`Learnt`), and the
//! personal store on disk that keeps it between sessions (`store`).
//!
//! The engine learns in memory (`Engine::learn`); the host also counts the
//! same text here and hands the counts to the store now and then, off the
//! keystroke path. Knows nothing of Neovim.

pub mod format;
pub mod learning;
pub mod privacy;
pub mod store;

use crate::engine::bigrams::{context_starts, keys_before};
use crate::text::tokenizer::{tokenize, TokenKind};
use std::collections::{HashMap, HashSet};

/// How often and how lately something was learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Entry {
    pub count: u32,
    /// Unix time (seconds) of the latest occurrence: the oldest go first
    /// when the store is full.
    pub last: u32,
}

impl Entry {
    fn merge(&mut self, other: Entry) {
        self.count = self.count.saturating_add(other.count);
        self.last = self.last.max(other.last);
    }
}

/// A pair: its order, the text of its context (from the previous word,
/// order 0, or from the order + 1 previous words, up to the word) and the
/// word (`engine::bigrams::ORDERS`).
pub type Pair = (u8, Box<str>, Box<str>);

/// A rejection: the text from the previous word up to the word, and the
/// word the user was shown there and typed past (`engine::rejected`).
pub type Rejection = (Box<str>, Box<str>);

/// A token's counts for the user's rates (`engine::rates`): how often the
/// user wrote it and how often the model expected it there.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Rate {
    pub count: f32,
    pub expected: f32,
}

/// Counted words and word pairs of the user's writing, the user's
/// rejections, and the user's rates by token text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Learnt {
    pub words: HashMap<Box<str>, Entry>,
    pub pairs: HashMap<Pair, Entry>,
    pub rejections: HashMap<Rejection, Entry>,
    pub rates: HashMap<Box<str>, Rate>,
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub fn now() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs().min(u32::MAX as u64) as u32)
}

impl Learnt {
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
            && self.pairs.is_empty()
            && self.rejections.is_empty()
            && self.rates.is_empty()
    }

    /// One rejection of `word` after `ctx`.
    pub fn add_rejection(&mut self, ctx: &str, word: &str, now: u32) {
        let one = Entry {
            count: 1,
            last: now,
        };
        let key = (ctx.into(), word.into());
        self.rejections.entry(key).or_default().merge(one);
    }

    /// Takes back the rejections of each (context, word) of `written`: the
    /// word was written there. A stored rejection goes whatever its
    /// context's text, if its key is the same (`keys_before`: blanks are
    /// not part of it), as the engine takes it back in memory.
    pub fn take_back(&mut self, written: &[Rejection]) {
        let written: HashSet<_> = written
            .iter()
            .filter_map(|(c, w)| Some((keys_before(c)[0]?, &**w)))
            .collect();
        if written.is_empty() {
            return;
        }
        self.rejections
            .retain(|(c, w), _| keys_before(c)[0].is_none_or(|k| !written.contains(&(k, &**w))));
    }

    /// Counts the words of `text` and the pairs the engine's pair caches use.
    pub fn add_text(&mut self, text: &str, now: u32) {
        let one = Entry {
            count: 1,
            last: now,
        };
        for t in tokenize(text).filter(|t| t.kind == TokenKind::Word) {
            self.words.entry(t.text.into()).or_default().merge(one);
            for (order, start) in context_starts(&text[..t.start]).into_iter().enumerate() {
                if let Some(s) = start {
                    let key = (order as u8, text[s..t.start].into(), t.text.into());
                    self.pairs.entry(key).or_default().merge(one);
                }
            }
        }
    }

    /// Adds a token's rate counts (text as `engine::Engine::rate_entries`
    /// gives it).
    pub fn add_rate(&mut self, token: &str, count: f32, expected: f32) {
        if token.len() > format::MAX_TEXT {
            return;
        }
        let r = self.rates.entry(token.into()).or_default();
        r.count += count;
        r.expected += expected;
    }

    /// Adds `other`'s counts.
    pub fn merge(&mut self, other: &Learnt) {
        for (t, r) in &other.rates {
            self.add_rate(t, r.count, r.expected);
        }
        for (w, e) in &other.words {
            self.words.entry(w.clone()).or_default().merge(*e);
        }
        for (p, e) in &other.pairs {
            self.pairs.entry(p.clone()).or_default().merge(*e);
        }
        for (r, e) in &other.rejections {
            self.rejections.entry(r.clone()).or_default().merge(*e);
        }
    }

    /// Forgets `word` and every pair and rejection it ends or appears in
    /// the context of.
    pub fn forget_word(&mut self, word: &str) {
        self.words.remove(word);
        self.rates.remove(word);
        self.pairs
            .retain(|(_, ctx, w), _| &**w != word && !has_word(ctx, word));
        self.rejections
            .retain(|(ctx, w), _| &**w != word && !has_word(ctx, word));
    }

    /// The encoded size (`format::encode`).
    pub fn encoded_len(&self) -> usize {
        format::HEADER_LEN
            + format::TRAILER_LEN
            + self
                .words
                .keys()
                .map(|w| format::word_len(w))
                .sum::<usize>()
            + self
                .pairs
                .keys()
                .map(|(_, c, w)| format::pair_len(c, w))
                .sum::<usize>()
            + format::REJECTIONS_HEADER_LEN
            + self
                .rejections
                .keys()
                .map(|(c, w)| format::rejection_len(c, w))
                .sum::<usize>()
            + format::RATES_HEADER_LEN
            + self
                .rates
                .keys()
                .map(|t| format::rate_len(t))
                .sum::<usize>()
    }

    /// Drops the least used, then oldest, entries until the encoded size is
    /// at most `max_bytes`.
    pub fn evict_to(&mut self, max_bytes: usize) {
        let mut size = self.encoded_len();
        if size <= max_bytes {
            return;
        }
        // Pairs and words alike, weakest first: (count, last).
        enum Item {
            Word(Box<str>),
            Pair(Pair),
            Rejection(Rejection),
        }
        let mut order: Vec<(u32, u32, usize, Item)> = self
            .words
            .iter()
            .map(|(w, e)| (e.count, e.last, format::word_len(w), Item::Word(w.clone())))
            .chain(self.pairs.iter().map(|(p, e)| {
                let len = format::pair_len(&p.1, &p.2);
                (e.count, e.last, len, Item::Pair(p.clone()))
            }))
            .chain(self.rejections.iter().map(|(r, e)| {
                let len = format::rejection_len(&r.0, &r.1);
                (e.count, e.last, len, Item::Rejection(r.clone()))
            }))
            .collect();
        order.sort_by_key(|x| (x.0, x.1));
        for (_, _, len, item) in order {
            if size <= max_bytes {
                break;
            }
            size -= len;
            match item {
                Item::Word(w) => self.words.remove(&w),
                Item::Pair(p) => self.pairs.remove(&p),
                Item::Rejection(r) => self.rejections.remove(&r),
            };
        }
    }
}

/// Whether `text` holds `word` as a whole word.
fn has_word(text: &str, word: &str) -> bool {
    tokenize(text).any(|t| t.kind == TokenKind::Word && t.text == word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words_and_pairs_and_forgets_a_word() {
        let mut l = Learnt::default();
        l.add_text("call zorb now; call zorb later", 7);
        assert_eq!(l.words["zorb"], Entry { count: 2, last: 7 });
        assert_eq!(l.pairs[&(0, "call ".into(), "zorb".into())].count, 2);
        assert!(l
            .pairs
            .contains_key(&(1, "now; call ".into(), "zorb".into())));
        l.add_rejection("call ", "zorb", 7);
        l.add_rejection("zorb ", "now", 7);
        l.add_rejection("call ", "later", 7);
        l.forget_word("zorb");
        assert!(!l.words.contains_key("zorb"));
        let left: Vec<_> = l.rejections.keys().collect();
        assert_eq!(left, [&("call ".into(), "later".into())]);
        assert!(l
            .pairs
            .keys()
            .all(|(_, c, w)| &**w != "zorb" && !c.contains("zorb")));
        assert!(l.words.contains_key("call"));
    }

    #[test]
    fn taking_back_a_rejection_matches_its_context_by_key() {
        let mut l = Learnt::default();
        l.add_rejection("the ", "zorb", 7);
        l.add_rejection("the\t", "zorb", 7);
        l.add_rejection("the ", "plonk", 7);
        l.add_rejection("a ", "zorb", 7);
        l.add_rejection("(", "zorb", 7);
        l.take_back(&[("the  ".into(), "zorb".into()), ("".into(), "zorb".into())]);
        let mut left: Vec<_> = l.rejections.keys().map(|(c, w)| (&**c, &**w)).collect();
        left.sort();
        assert_eq!(left, [("(", "zorb"), ("a ", "zorb"), ("the ", "plonk")]);
    }

    #[test]
    fn eviction_keeps_the_most_used_within_the_cap() {
        let mut l = Learnt::default();
        l.add_text(&"often ".repeat(50), 1);
        for i in 0..200 {
            l.add_text(&format!("rare{i}"), 2);
        }
        let cap = l.encoded_len() / 2;
        l.evict_to(cap);
        assert!(l.encoded_len() <= cap);
        assert_eq!(l.words["often"].count, 50);
    }
}
