//! Rejections: words the user was shown as the top candidate after a
//! context (the previous word and the punctuation after it, the key of
//! `bigrams::keys_before`) and typed past, finishing another word there.
//! Within the word the give-way (`give_way`) already steps aside; this is
//! the user's: it outlives the buffer (and, through the personal store,
//! the session) and moves the word down where that context comes back
//! (`Tuning::rejected`), until the user writes the word there.

use super::bigrams::{context_starts, keys_before, Key};
use super::buffer::BufferEntry;
use super::memory::{self, CacheMemory};
use super::rank::Ranked;
use super::Engine;
use crate::text::hash::FastMap;
use crate::text::tokenizer::{is_word_char, tokenize, TokenKind};

/// Contexts kept (the least recently used half goes beyond it): a few
/// hundred bytes each, a few MB at the bound.
pub const MAX_REJECTED_KEYS: usize = 20_000;
/// Words kept per context (the least rejected go beyond it).
const MAX_WORDS: usize = 8;

/// What the user did that the personal store keeps (`Engine::take_rejections`):
/// `ctx` is the text from the previous word up to the word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RejectionEvent {
    /// `word` was shown after `ctx` and typed past.
    Rejected { ctx: String, word: String },
    /// `word`, rejected there before, was written after `ctx` (its
    /// rejections there are taken back).
    Written { ctx: String, word: String },
}

#[derive(Debug, Default)]
struct Rejected {
    /// The context's text: what the store keeps, where `forget` looks.
    ctx: Box<str>,
    /// (word, rejections), first rejected first.
    words: Vec<(Box<str>, u32)>,
    /// Clock of the last change (for pruning).
    last: u64,
}

/// The user's rejections by context.
#[derive(Debug, Default)]
pub struct Rejections {
    keys: FastMap<Key, Rejected>,
    clock: u64,
    /// (context, word) pairs held, kept as they change (status asks for
    /// it after every keystroke).
    remembered: usize,
}

impl Rejections {
    /// Contexts held.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// (context, word) pairs held: what `status` shows.
    pub fn remembered(&self) -> usize {
        self.remembered
    }

    /// Counts the pairs held again, after a change of many at once.
    fn recount(&mut self) {
        self.remembered = self.keys.values().map(|r| r.words.len()).sum();
    }

    /// `n` rejections of `word` after `ctx` (the text from the previous
    /// word up to the word); a context with no previous word is ignored.
    pub fn add(&mut self, ctx: &str, word: &str, n: u32) {
        let Some(key) = keys_before(ctx)[0] else {
            return;
        };
        if n == 0 {
            return;
        }
        if self.keys.len() >= MAX_REJECTED_KEYS && !self.keys.contains_key(&key) {
            self.prune();
        }
        self.clock += 1;
        let r = self.keys.entry(key).or_default();
        if r.ctx.is_empty() {
            r.ctx = ctx.into();
        }
        r.last = self.clock;
        match r.words.iter_mut().find(|(w, _)| &**w == word) {
            Some(e) => e.1 = e.1.saturating_add(n),
            None => {
                if r.words.len() >= MAX_WORDS {
                    let (i, _) = r
                        .words
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, (_, c))| *c)
                        .expect("full list");
                    r.words.remove(i);
                    self.remembered -= 1;
                }
                r.words.push((word.into(), n));
                self.remembered += 1;
            }
        }
    }

    /// Rejections of `word` after `key`.
    pub fn count(&self, key: Key, word: &str) -> u32 {
        self.at(key).find(|(w, _)| *w == word).map_or(0, |(_, n)| n)
    }

    /// The words rejected after `key`, with their rejections.
    pub fn at(&self, key: Key) -> impl Iterator<Item = (&str, u32)> {
        self.keys
            .get(&key)
            .into_iter()
            .flat_map(|r| r.words.iter().map(|(w, n)| (&**w, *n)))
    }

    /// `word` was written after `key`: its rejections there are taken
    /// back; true if it had any.
    pub fn written(&mut self, key: Key, word: &str) -> bool {
        let Some(r) = self.keys.get_mut(&key) else {
            return false;
        };
        let Some(i) = r.words.iter().position(|(w, _)| &**w == word) else {
            return false;
        };
        r.words.remove(i);
        self.remembered -= 1;
        if r.words.is_empty() {
            self.keys.remove(&key);
        }
        true
    }

    /// Forgets the rejections of `word` and those after a context holding it.
    pub fn forget_word(&mut self, word: &str) {
        self.keys.retain(|_, r| {
            r.words.retain(|(w, _)| &**w != word);
            !r.words.is_empty()
                && !tokenize(&r.ctx).any(|t| t.kind == TokenKind::Word && t.text == word)
        });
        self.recount();
    }

    /// Every (context, word, rejections) held.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str, u32)> {
        self.keys
            .values()
            .flat_map(|r| r.words.iter().map(|(w, n)| (&*r.ctx, &**w, *n)))
    }

    /// The contexts held and their estimated heap bytes.
    pub fn memory(&self) -> CacheMemory {
        let lists: usize = self
            .keys
            .values()
            .map(|r| memory::alloc(r.ctx.len()) + memory::counted_words(&r.words))
            .sum();
        CacheMemory {
            entries: self.keys.len(),
            bytes: memory::table::<Key, Rejected>(self.keys.capacity()) + lists,
        }
    }

    /// Drops the least recently changed half of the contexts.
    fn prune(&mut self) {
        let mut lasts: Vec<u64> = self.keys.values().map(|r| r.last).collect();
        let mid = lasts.len() / 2;
        let (_, &mut cut, _) = lasts.select_nth_unstable(mid);
        self.keys.retain(|_, r| r.last > cut);
        self.recount();
    }
}

/// The word that ends `context` (just before its gap) and the text before
/// it, if a word with a previous word is there.
fn last_word(context: &str) -> Option<(&str, &str)> {
    let start = context_starts(context)[0]?;
    let rest = &context[start..];
    let end = rest.find(|c: char| !is_word_char(c)).unwrap_or(rest.len());
    Some((&context[..start], &rest[..end]))
}

impl Engine {
    /// The top candidates of the word being typed that the user saw and
    /// typed past, for the next keystroke (`TypedPast::tops`). When the
    /// word has just ended (`context` now holds it) and it is not one of
    /// them, they are rejected after its context, and the word written
    /// there takes its own rejections there back (only where the buffer
    /// may teach the user's history, `learn`).
    pub(crate) fn tops_typed_past(
        &mut self,
        entry: &BufferEntry,
        context: &str,
        prefix: &str,
        seen: bool,
        learn: bool,
    ) -> Vec<String> {
        let Some(t) = &entry.typed_past else {
            return Vec::new();
        };
        let mut tops = t.tops.clone();
        let passed = t.top.as_ref().filter(|w| seen && !tops.contains(w));
        if t.version == entry.ctx.version {
            if !prefix.starts_with(&t.prefix) {
                return Vec::new();
            }
            if prefix.len() > t.prefix.len() {
                tops.extend(passed.cloned());
            }
            return tops;
        }
        if learn && self.opts.tuning.rejected < 1.0 {
            tops.extend(passed.cloned());
            self.word_ended(t.key, &t.prefix, &tops, context);
        }
        Vec::new()
    }

    /// Records the rejections of the word that ends `context`, if it is the
    /// word typed after `key` from `prefix` on.
    fn word_ended(&mut self, key: Option<Key>, prefix: &str, tops: &[String], context: &str) {
        let Some((before, word)) = last_word(context) else {
            return;
        };
        let Some(key) = key.filter(|k| keys_before(before)[0] == Some(*k)) else {
            return;
        };
        let Some(start) = context_starts(before)[0].filter(|_| word.starts_with(prefix)) else {
            return;
        };
        let ctx = &before[start..];
        for top in tops {
            if !top.eq_ignore_ascii_case(word) {
                self.rejections.add(ctx, top, 1);
                self.log_rejection(RejectionEvent::Rejected {
                    ctx: ctx.to_string(),
                    word: top.clone(),
                });
            }
        }
        if self.rejections.written(key, word) {
            self.log_rejection(RejectionEvent::Written {
                ctx: ctx.to_string(),
                word: word.to_string(),
            });
        }
    }

    fn log_rejection(&mut self, e: RejectionEvent) {
        if let Some(log) = &mut self.rejection_log {
            log.push(e);
        }
    }

    /// Keeps what the user rejects (and writes where it was rejected) for
    /// `take_rejections` (the host's personal store), from now on.
    pub fn keep_rejections(&mut self) {
        self.rejection_log.get_or_insert_with(Vec::new);
    }

    /// What was rejected and written since the last call (empty unless
    /// `keep_rejections` was called).
    pub fn take_rejections(&mut self) -> Vec<RejectionEvent> {
        self.rejection_log
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Rejections from the user's store: `n` of `word` after `ctx`.
    pub fn learn_rejections(&mut self, ctx: &str, word: &str, n: u32) {
        self.rejections.add(ctx, word, n);
    }

    /// Takes back the rejections of `word` after `ctx` (written there
    /// while the store was loading, `RejectionEvent::Written`).
    pub fn take_back_rejections(&mut self, ctx: &str, word: &str) {
        if let Some(k) = keys_before(ctx)[0] {
            self.rejections.written(k, word);
        }
    }

    /// The (context, word) pairs of rejections the engine remembers (from
    /// the store and this session), None when they are not learnt
    /// (`Tuning::rejected` 1: they would move nothing down).
    pub fn rejections_remembered(&self) -> Option<usize> {
        (self.opts.tuning.rejected < 1.0).then(|| self.rejections.remembered())
    }

    /// Rejections of `word` after the text `before` (0 when there is no
    /// previous word).
    pub fn rejections_after(&self, before: &str, word: &str) -> u32 {
        keys_before(before)[0].map_or(0, |k| self.rejections.count(k, word))
    }

    /// The words to move down after the buffer's context, each with what it
    /// keeps of its score: rejected there `rejected_min` times or more and
    /// never written there (in the buffer or the user's history).
    pub(crate) fn rejected_here(&self, entry: &BufferEntry) -> Vec<(String, f32)> {
        let t = &self.opts.tuning;
        let Some(key) = entry.ctx.keys[0].filter(|_| t.rejected < 1.0) else {
            return Vec::new();
        };
        self.rejections
            .at(key)
            .filter(|&(w, n)| {
                n as f32 >= t.rejected_min
                    && entry.ctx.bigrams.count(key, w) == 0
                    && self.user_bigrams.count(key, w) == 0
            })
            .map(|(w, _)| (w.to_string(), t.rejected.max(0.0)))
            .collect()
    }
}

/// The best `k` of `ranked` once each rejected word's score is times what
/// it keeps (`rejected`: word, factor) and every score renormalised by what
/// that took away: the rejected words move down past the candidates that
/// now score more, the others keep their order.
pub(crate) fn demote(ranked: Ranked, rejected: &[(String, f32)], k: usize) -> Ranked {
    if rejected.is_empty() {
        return ranked;
    }
    let mut gone = 0.0;
    let (mut keep, mut down) = (Vec::new(), Vec::new());
    let (pairs, mass_known) = ranked.into_pairs();
    for (mut c, l) in pairs {
        match rejected.iter().find(|(w, _)| *w == c.word) {
            Some((_, f)) => {
                gone += c.score * (1.0 - f);
                c.score *= f;
                down.push((c, l));
            }
            None => keep.push((c, l)),
        }
    }
    if gone < 1.0 && !down.is_empty() {
        for (c, _) in keep.iter_mut().chain(down.iter_mut()) {
            c.score = (c.score / (1.0 - gone)).min(1.0);
        }
    }
    for d in down {
        let at = keep
            .iter()
            .position(|(c, _)| c.score < d.0.score)
            .unwrap_or(keep.len());
        keep.insert(at, d);
    }
    keep.truncate(k);
    Ranked::from_pairs(keep, mass_known)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Candidate, EngineOptions, Request, Source};
    use std::path::PathBuf;

    #[test]
    fn rejections_count_by_context_and_writing_takes_them_back() {
        let mut r = Rejections::default();
        r.add("of ", "that", 1);
        r.add("of ", "that", 2);
        r.add("to ", "that", 1);
        let of = keys_before("of ")[0].unwrap();
        assert_eq!(r.count(of, "that"), 3);
        assert_eq!(r.count(keys_before("so ")[0].unwrap(), "that"), 0);
        assert_eq!(r.remembered(), 2);
        assert!(r.written(of, "that"));
        assert_eq!(r.remembered(), 1);
        assert!(!r.written(of, "that"));
        assert_eq!(r.count(of, "that"), 0);
        r.add("zorb ", "this", 1);
        r.add("of ", "zorb", 1);
        assert_eq!(r.remembered(), 3);
        r.forget_word("zorb");
        assert_eq!(r.entries().collect::<Vec<_>>(), [("to ", "that", 1)]);
        assert_eq!(r.remembered(), 1);
        // No previous word, no context.
        r.add("", "that", 1);
        r.add("  (", "that", 1);
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn memory_is_bounded() {
        let mut r = Rejections::default();
        for i in 0..(MAX_REJECTED_KEYS + 10) {
            r.add(&format!("w{i} "), "x", 1);
        }
        assert!(r.len() <= MAX_REJECTED_KEYS);
        assert_eq!(r.remembered(), r.len());
        assert_eq!(
            r.count(
                keys_before(&format!("w{MAX_REJECTED_KEYS} "))[0].unwrap(),
                "x"
            ),
            1
        );
        for i in 0..(MAX_WORDS + 3) {
            r.add("k ", &format!("v{i}"), 1 + (i == 0) as u32);
        }
        let k = keys_before("k ")[0].unwrap();
        assert_eq!(r.at(k).count(), MAX_WORDS);
        assert_eq!(r.count(k, "v0"), 2);
        assert_eq!(r.remembered(), r.entries().count());
    }

    fn ranked(words: &[(&str, f32)]) -> Ranked {
        Ranked {
            candidates: words
                .iter()
                .map(|&(w, s)| Candidate {
                    word: w.into(),
                    insert: w.into(),
                    replace: 0,
                    source: Source::Model,
                    score: s,
                })
                .collect(),
            listed: vec![false; words.len()],
            mass_known: 1.0,
        }
    }

    #[test]
    fn a_rejected_word_moves_down_and_the_scores_stay_probabilities() {
        let r = ranked(&[
            ("then", 0.5),
            ("there", 0.2),
            ("these", 0.1),
            ("they", 0.05),
        ]);
        let d = demote(r, &[("then".into(), 0.3)], 3);
        let words: Vec<_> = d.candidates.iter().map(|c| c.word.as_str()).collect();
        assert_eq!(words, ["there", "then", "these"]);
        // 0.35 of the mass went: the rest share what is left.
        assert!((d.candidates[0].score - 0.2 / 0.65).abs() < 1e-6);
        assert!((d.candidates[1].score - 0.15 / 0.65).abs() < 1e-6);
        let sum: f32 = d.candidates.iter().map(|c| c.score).sum();
        assert!(sum <= 1.0 + 1e-6);
        let none = demote(ranked(&[("a", 0.5), ("b", 0.2)]), &[("c".into(), 0.0)], 2);
        assert_eq!(none.candidates[0].score, 0.5);
        let gone = demote(ranked(&[("a", 0.5), ("b", 0.2)]), &[("a".into(), 0.0)], 1);
        assert_eq!(gone.candidates[0].word, "b");
        assert_eq!(gone.listed.len(), 1);
    }

    fn engine(tune: &str) -> Engine {
        let mut opts = EngineOptions {
            model_path: Some(PathBuf::from("/nonexistent/laya-test.safetensors")),
            ..EngineOptions::default()
        };
        opts.tuning.set(tune).unwrap();
        Engine::new(opts)
    }

    /// The top candidate after `before` in `buffer`.
    fn top(e: &mut Engine, buffer: u64, before: &str, seen: bool, learn: bool) -> String {
        let p = e.predict(&Request {
            buffer,
            before,
            filetype: "",
            kind: Default::default(),
            k: 3,
            seen_last: seen,
            learn,
        });
        p.candidates
            .first()
            .map_or(String::new(), |c| c.word.clone())
    }

    const TEXT: &str = "zygote zymurgy zygote zygote\n";

    /// Types "alpha WORD " in `buffer` after TEXT key by key; the top
    /// candidates after each key.
    fn type_word(e: &mut Engine, buffer: u64, word: &str, seen: bool, learn: bool) -> Vec<String> {
        (1..=word.len())
            .map(|n| format!("{TEXT}alpha {}", &word[..n]))
            .chain([format!("{TEXT}alpha {word} ")])
            .map(|before| top(e, buffer, &before, seen, learn))
            .collect()
    }

    /// Types "alpha zymurgy " in `buffer` after TEXT, reading every answer.
    fn type_past(e: &mut Engine, buffer: u64, learn: bool) {
        assert_eq!(type_word(e, buffer, "zymurgy", true, learn)[0], "zygote");
    }

    #[test]
    fn a_word_typed_past_moves_down_in_other_buffers_once_rejected_enough() {
        let mut e = engine("rejected=0,rejected_min=2");
        type_past(&mut e, 1, true);
        assert_eq!(e.rejections_after("alpha ", "zygote"), 1);
        assert_eq!(
            top(&mut e, 2, &format!("{TEXT}alpha zy"), false, true),
            "zygote"
        );
        type_past(&mut e, 3, true);
        assert_eq!(e.rejections_after("alpha ", "zygote"), 2);
        assert_eq!(
            top(&mut e, 4, &format!("{TEXT}alpha zy"), false, true),
            "zymurgy"
        );
        // Another context is another matter.
        assert_eq!(
            top(&mut e, 4, &format!("{TEXT}beta zy"), false, true),
            "zygote"
        );
        // Written there, it is back.
        type_word(&mut e, 5, "zygote", false, true);
        assert_eq!(e.rejections_after("alpha ", "zygote"), 0);
        assert_eq!(
            top(&mut e, 6, &format!("{TEXT}alpha zy"), false, true),
            "zygote"
        );
    }

    #[test]
    fn nothing_is_rejected_unseen_off_or_where_the_buffer_may_not_teach() {
        for (tune, learn) in [("rejected=0", false), ("rejected=1", true)] {
            let mut e = engine(tune);
            e.keep_rejections();
            type_past(&mut e, 1, learn);
            assert_eq!(e.rejections_after("alpha ", "zygote"), 0, "{tune} {learn}");
            assert!(e.take_rejections().is_empty());
        }
        let mut e = engine("rejected=0");
        type_word(&mut e, 1, "zymurgy", false, true);
        assert_eq!(e.rejections_after("alpha ", "zygote"), 0);
        // What the store is handed: the rejection, then the writing that
        // took it back.
        e.keep_rejections();
        type_past(&mut e, 2, true);
        type_word(&mut e, 3, "zygote", false, true);
        let rejected = |w: &str| RejectionEvent::Rejected {
            ctx: "alpha ".into(),
            word: w.into(),
        };
        let log = e.take_rejections();
        assert_eq!(log[0], rejected("zygote"));
        assert_eq!(
            log.last(),
            Some(&RejectionEvent::Written {
                ctx: "alpha ".into(),
                word: "zygote".into()
            })
        );
        assert!(e.take_rejections().is_empty());
    }
}
