//! Ranking the words that complete the typed prefix: candidate sources
//! (`sources`) fill a pool of scored words (`pool`), the mixer (`mixer`)
//! turns it into the best `k`.

pub mod by_kind;
mod mixer;
pub use mixer::worth;
pub mod pool;
mod sources;

use super::buffer::BufferEntry;
use super::{Candidate, Engine};
use pool::{CandidateSource, Pool, Query};
use sources::{CacheWords, Followers, ListedWords, PointedWords, VocabWords};

/// `rank`'s answer.
pub(crate) struct Ranked {
    /// The best k, best first.
    pub candidates: Vec<Candidate>,
    /// `listed[i]`: candidates[i] comes from the word list beyond the
    /// vocabulary alone.
    pub listed: Vec<bool>,
    /// Total (interpolated) probability of everything the prefix allows,
    /// the word list beyond the vocabulary left out.
    pub mass_known: f32,
}

impl Ranked {
    /// Each candidate with its `listed`, best first (to reorder or filter).
    pub fn into_pairs(self) -> (impl Iterator<Item = (Candidate, bool)>, f32) {
        let pairs = self.candidates.into_iter().zip(self.listed);
        (pairs, self.mass_known)
    }

    /// Keeps the best `k`.
    pub fn truncate(&mut self, k: usize) {
        self.candidates.truncate(k);
        self.listed.truncate(k);
    }

    /// The answer made of `pairs` (candidate, listed), in their order.
    pub fn from_pairs(
        pairs: impl IntoIterator<Item = (Candidate, bool)>,
        mass_known: f32,
    ) -> Ranked {
        let (candidates, listed) = pairs.into_iter().unzip();
        Ranked {
            candidates,
            listed,
            mass_known,
        }
    }
}

impl Engine {
    /// Ranks words completing `prefix`: the best `k` and the total
    /// (interpolated) probability of everything the prefix allows.
    pub(crate) fn rank(&self, entry: &BufferEntry, prefix: &str, k: usize) -> Ranked {
        let mut q = Query::new(
            prefix,
            k,
            entry.current_dist(),
            self.vocab.as_deref(),
            &entry.ctx.words,
            &self.user_words,
            &self.opts.tuning,
        );
        q.kinds = self.kinds.as_ref();
        q.kind = entry.kind;
        let mut pool = Pool::default();
        // The cache model's words compete for the pool first; the other
        // sources add theirs to the best of them.
        CacheWords::Buffer.gather(&q, &mut pool);
        CacheWords::User.gather(&q, &mut pool);
        if prefix.is_empty() {
            pool.mass.cache = 1.0;
        }
        pool.keep_best(q.pool_size, q.lambda);
        let followers = Followers {
            keys: entry.ctx.keys,
            buffer: &entry.ctx.bigrams,
            user: &self.user_bigrams,
        };
        let sources: [&dyn CandidateSource; 4] = [
            &VocabWords,
            &ListedWords(self.word_list.as_ref()),
            &PointedWords,
            &followers,
        ];
        for source in sources {
            source.gather(&q, &mut pool);
        }
        mixer::mix(&q, &pool, k)
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::{Engine, EngineOptions, Request};

    const TEXT: &str = "The theory of the thing. Then they went there, and then \
        THE END.\nfn main() {\n    let thing = theory_of_things(the_input);\n    ";

    /// The real default model on the cpu backend.
    fn engine() -> Engine {
        Engine::new(EngineOptions {
            backend: crate::model::BackendChoice::Cpu,
            ..EngineOptions::default()
        })
    }

    /// Rankings of `k` words after `TEXT` and each of the prefixes.
    fn rankings(e: &mut Engine, k: usize) -> Vec<(String, super::Ranked)> {
        let mut out = Vec::new();
        for prefix in [
            "", "t", "th", "The", "THE", "Th", "the", "xq", "thin", "Then", "theory_",
        ] {
            let before = format!("{TEXT}{prefix}");
            let req = Request {
                buffer: 1,
                before: &before,
                filetype: "",
                kind: Default::default(),
                k,
                seen_last: false,
                learn: false,
            };
            e.predict(&req);
            let entry = e.buffers.get(&1).unwrap();
            out.push((prefix.to_string(), e.rank(entry, prefix, k)));
        }
        out
    }

    #[test]
    fn scores_are_probabilities_and_their_mass_at_most_one() {
        let mut e = engine();
        assert!(e.info().model_error.is_none());
        for (prefix, r) in rankings(&mut e, 200) {
            // Out-of-vocabulary words ("theory_of_things") too: their model
            // part is in the normaliser.
            let sum: f32 = r.candidates.iter().map(|c| c.score).sum();
            let top = &r.candidates[..r.candidates.len().min(4)];
            assert!(sum <= 1.0 + 1e-3, "{prefix:?}: {sum} {top:?}");
            assert!(
                r.mass_known >= 0.0 && r.mass_known <= 1.0 + 1e-4,
                "{prefix:?}: {}",
                r.mass_known
            );
            for c in &r.candidates {
                assert!((0.0..=1.0).contains(&c.score), "{prefix:?} {c:?}");
                assert!(
                    c.word.starts_with(&prefix) && c.word.len() > prefix.len(),
                    "{c:?}"
                );
            }
            assert!(r.candidates.windows(2).all(|w| w[0].insert != w[1].insert));
        }
    }

    #[test]
    fn spellings_that_read_the_same_merge_into_one_candidate() {
        let mut e = engine();
        for (prefix, r) in rankings(&mut e, 50) {
            let mut rests: Vec<&str> = r.candidates.iter().map(|c| c.insert.as_str()).collect();
            let n = rests.len();
            rests.sort();
            rests.dedup();
            assert_eq!(rests.len(), n, "{prefix:?}: the same rest twice");
            // Typed in capitals, a word is proposed in capitals.
            if prefix == "THE" {
                assert!(r
                    .candidates
                    .iter()
                    .all(|c| c.insert == c.insert.to_uppercase()));
            }
        }
    }

    /// The score of `word` completing "The m" after the user wrote
    /// `history` (the default model, `tune` applied).
    fn score_after_history(tune: &str, kind: crate::engine::kind::TextKind, word: &str) -> f32 {
        let mut opts = EngineOptions {
            backend: crate::model::BackendChoice::Cpu,
            ..EngineOptions::default()
        };
        opts.tuning.set(tune).unwrap();
        let mut e = Engine::new(opts);
        e.learn(
            "Release notes: the maintainers merged the series, fixed the \
             build on older systems and documented the new options. Many \
             thanks to everybody who tested the release candidates.",
        );
        let before = "We looked again. The m";
        let req = Request {
            buffer: 1,
            before,
            filetype: "",
            kind,
            k: 20,
            seen_last: false,
            learn: false,
        };
        e.predict(&req);
        let entry = e.buffers.get(&1).unwrap();
        let r = e.rank(entry, "m", 20);
        r.candidates
            .iter()
            .find(|c| c.word == word)
            .map_or(0.0, |c| c.score)
    }

    #[test]
    fn words_the_user_favours_are_boosted_outside_code() {
        use crate::engine::kind::TextKind;
        let off = score_after_history("user_boost=0", TextKind::Prose, "maintainers");
        let on = score_after_history("user_boost=0.3", TextKind::Prose, "maintainers");
        let unknown = score_after_history("user_boost=0.3", TextKind::Unknown, "maintainers");
        let code = score_after_history("user_boost=0.3", TextKind::Code, "maintainers");
        let code_off = score_after_history("user_boost=0", TextKind::Code, "maintainers");
        assert!(off > 0.0, "{off}");
        assert!(on > 1.05 * off, "boosted {on} against {off}");
        assert!(
            unknown > 1.05 * off,
            "kind not told: {unknown} against {off}"
        );
        assert_eq!(code, code_off, "no boost in code");
    }

    #[test]
    fn without_a_model_the_sources_still_rank() {
        let mut e = Engine::new(EngineOptions {
            neural: false,
            ..EngineOptions::default()
        });
        for (prefix, r) in rankings(&mut e, 20) {
            let sum: f32 = r.candidates.iter().map(|c| c.score).sum();
            assert!(sum <= 1.0 + 1e-3, "{prefix:?}: {sum}");
            if prefix == "th" {
                assert!(!r.candidates.is_empty());
            }
        }
    }
}
