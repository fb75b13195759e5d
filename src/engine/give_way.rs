//! Give-way: a top candidate of two or more characters that the user saw,
//! did not accept and typed on past is not the word being typed (or the user
//! does not want it), so the next best takes its place for the rest of that
//! word (`GiveWay`).

use super::bigrams::Key;
use super::buffer::BufferEntry;
use super::options::GiveWay;
use super::rank::by_kind::{prefer_words, reranks, WORDY_EXTRA};
use super::rank::Ranked;
use super::rejected::demote;
use super::{Candidate, Engine, Prediction, HOST_CANDIDATES};

/// The top candidates answered while one word was typed.
pub(crate) struct TypedPast {
    /// Context version and typed prefix of the last answer.
    pub version: u64,
    pub prefix: String,
    /// That answer's top candidate (the whole word), if accepting it would
    /// have saved a keystroke.
    pub top: Option<String>,
    /// Earlier top candidates of this word the user typed past.
    pub words: Vec<String>,
    /// The previous word's key of the word's context (`bigrams::keys_before`).
    pub key: Option<Key>,
    /// Every top candidate of this word the user saw and typed past, those
    /// the typed prefix contradicts too (rejected if the word ends otherwise).
    pub tops: Vec<String>,
}

impl TypedPast {
    /// What an answer leaves for the next keystroke of the same word.
    pub fn after(
        entry: &BufferEntry,
        pred: &Prediction,
        passed: Vec<String>,
        tops: Vec<String>,
    ) -> TypedPast {
        TypedPast {
            version: entry.ctx.version,
            key: entry.ctx.keys[0],
            tops,
            prefix: pred.prefix.clone(),
            top: pred
                .candidates
                .first()
                .filter(|c| c.replace == 0 && c.insert.chars().nth(1).is_some())
                .map(|c| c.word.clone()),
            words: passed,
        }
    }
}

impl Engine {
    /// The top candidates of the word being typed that the user saw and
    /// typed past; empty when the word or the context changed.
    pub(crate) fn words_typed_past(
        &self,
        entry: &BufferEntry,
        prefix: &str,
        seen: bool,
    ) -> Vec<String> {
        let Some(t) = &entry.typed_past else {
            return Vec::new();
        };
        if self.opts.tuning.give_way == GiveWay::Off
            || t.version != entry.ctx.version
            || !prefix.starts_with(&t.prefix)
        {
            return Vec::new();
        }
        let mut words = t.words.clone();
        if seen && prefix.len() > t.prefix.len() {
            words.extend(
                t.top
                    .clone()
                    .filter(|w| w.starts_with(prefix) && w.len() > prefix.len()),
            );
        }
        words
    }

    /// The best `k` completing `prefix` once the words typed past
    /// (`passed`) gave way, and the ranking's first before they did (None:
    /// the same).
    pub(crate) fn rank_giving_way(
        &self,
        entry: &BufferEntry,
        prefix: &str,
        k: usize,
        passed: &[String],
    ) -> (Ranked, Option<Candidate>) {
        // In prose, comments and strings words of code lose most of their
        // score (in code, words of prose if asked): a few more are ranked
        // so that others can move up.
        let t = &self.opts.tuning;
        let rerank = reranks(entry.kind, t, self.kinds.as_ref());
        // Words the user rejected in this context move down.
        let rejected = self.rejected_here(entry);
        let more = passed.len() + rejected.len();
        // Ranked as the host ranks whatever k is (`HOST_CANDIDATES`), cut to k last.
        let n = k.max(HOST_CANDIDATES);
        let mut ranked = self.rank(
            entry,
            prefix,
            n + more + if rerank { WORDY_EXTRA } else { 0 },
        );
        if rerank {
            ranked = prefer_words(ranked, entry.kind, t, self.kinds.as_ref(), n + more);
        }
        ranked = demote(ranked, &rejected, n + passed.len());
        let likeliest = (!passed.is_empty())
            .then(|| ranked.candidates.first().cloned())
            .flatten();
        let move_last = self.opts.tuning.give_way == GiveWay::MovedLast;
        let mut ranked = give_way(ranked, passed, k, move_last);
        ranked.truncate(k);
        (ranked, likeliest)
    }
}

/// The best `k` of `ranked` without the words typed past (`passed`), the
/// first of those last when `move_last`; the others' scores become their
/// share of what is left (the word typed past is known not to be wanted,
/// and the ghost threshold applies to that share).
pub(crate) fn give_way(ranked: Ranked, passed: &[String], k: usize, move_last: bool) -> Ranked {
    if passed.is_empty() {
        return ranked;
    }
    let (mut keep, mut moved) = (Vec::new(), Vec::new());
    let (pairs, mass_known) = ranked.into_pairs();
    for (c, l) in pairs {
        if passed.contains(&c.word) {
            moved.push((c, l));
        } else {
            keep.push((c, l));
        }
    }
    keep.truncate(k);
    let gone: f32 = moved.iter().map(|(c, _)| c.score).sum();
    if gone < 1.0 {
        for (c, _) in keep.iter_mut() {
            c.score = (c.score / (1.0 - gone)).min(1.0);
        }
    }
    if move_last && !moved.is_empty() {
        keep.truncate(k - 1);
        keep.push(moved.swap_remove(0));
    }
    Ranked::from_pairs(keep, mass_known)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Source;

    fn ranked(words: &[(&str, f32)]) -> Ranked {
        Ranked {
            candidates: words
                .iter()
                .map(|&(w, s)| Candidate {
                    word: w.into(),
                    insert: w[2..].into(),
                    replace: 0,
                    source: Source::Model,
                    score: s,
                })
                .collect(),
            listed: vec![false; words.len()],
            mass_known: 1.0,
        }
    }

    fn words(r: &Ranked) -> Vec<&str> {
        r.candidates.iter().map(|c| c.word.as_str()).collect()
    }

    #[test]
    fn nothing_typed_past_changes_nothing() {
        let r = give_way(ranked(&[("then", 0.5), ("there", 0.2)]), &[], 2, true);
        assert_eq!(words(&r), ["then", "there"]);
        assert_eq!(r.candidates[0].score, 0.5);
    }

    #[test]
    fn a_word_typed_past_is_left_out_and_the_rest_renormalised() {
        let all = [
            ("then", 0.5),
            ("there", 0.2),
            ("these", 0.1),
            ("they", 0.05),
        ];
        let r = give_way(ranked(&all), &["then".into()], 3, false);
        assert_eq!(words(&r), ["there", "these", "they"]);
        assert!((r.candidates[0].score - 0.4).abs() < 1e-6);
        assert!(r.candidates.iter().all(|c| (0.0..=1.0).contains(&c.score)));
        let sum: f32 = r.candidates.iter().map(|c| c.score).sum();
        assert!(sum <= 1.0 + 1e-6);
    }

    #[test]
    fn moved_last_keeps_the_word_typed_past_as_the_last_entry() {
        let all = [
            ("then", 0.5),
            ("there", 0.2),
            ("these", 0.1),
            ("they", 0.05),
        ];
        let r = give_way(ranked(&all), &["then".into()], 3, true);
        assert_eq!(words(&r), ["there", "these", "then"]);
    }
}
