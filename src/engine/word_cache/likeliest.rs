//! The user's likeliest words of a prefix (`WordCache::best_with_prefix`):
//! what the ranking takes of a large history at every keystroke inside a
//! word, weighed cheaply over the frozen arrays and remembered by prefix
//! until the words change.

use super::super::frozen::index_cmp;
use super::{Hit, WordCache};
use crate::math::push_top;
use std::cmp::Ordering;

/// The most frozen words of a prefix `best_with_prefix` weighs (about 3 ns
/// each), and the most of the map's words (a look-up each).
const FROZEN_SCAN: usize = 4_096;
const LIVE_SCAN: usize = 256;

/// `best_with_prefix`'s running answer: the best `n` so far, in one order
/// whatever order they come in, and the probability of all weighed.
struct Best<'a> {
    n: usize,
    hits: Vec<Hit<'a>>,
    mass: f64,
}

impl<'a> Best<'a> {
    fn new(n: usize) -> Best<'a> {
        Best {
            n,
            hits: Vec::with_capacity(n + 1),
            mass: 0.0,
        }
    }

    /// Counts a word of probability `p`; true if it may be among the best.
    fn weighs(&mut self, p: f32) -> bool {
        self.mass += p as f64;
        self.n > 0 && !(self.hits.len() == self.n && self.hits[self.n - 1].1 > p)
    }

    /// Places a word `weighs` let in: by probability, equal ones in the
    /// index's order.
    fn push(&mut self, hit: Hit<'a>) {
        let at = self.hits.partition_point(|b| {
            b.1 > hit.1 || (b.1 == hit.1 && index_cmp(b.0, hit.0) == Ordering::Less)
        });
        self.hits.insert(at, hit);
        self.hits.truncate(self.n);
    }
}

/// The likeliest of the frozen part's words of a prefix, as (entry,
/// probability), and the probability of all it weighed.
#[derive(Clone, Default)]
pub(super) struct FrozenBest {
    /// How many were asked for (fewer are held where the prefix has fewer).
    n: usize,
    best: Vec<(u32, f32)>,
    mass: f64,
    /// The prefix's entries (where a longer prefix's are).
    range: std::ops::Range<usize>,
}

/// Prefixes whose `frozen_best` answers are kept at most (then all are
/// dropped): about 100 bytes each.
const MEMO_PREFIXES: usize = 4_096;

impl WordCache {
    /// The `n` likeliest of the words `with_prefix` lists, best first
    /// (equal ones in the index's order), and the probability of them all.
    ///
    /// The frozen part's words of a prefix are one range of flat arrays, a
    /// count and a weight an entry: weighing them all costs less than
    /// looking up the few dozen that `with_prefix` lists first, and a short
    /// prefix of a large history has thousands. The map's words are few
    /// (`COMPACT_WORDS`). Both parts weigh a word alike, so that a history
    /// loaded frozen ranks as the same history learnt into the map. Only
    /// the first `FROZEN_SCAN` and `LIVE_SCAN` of a part's words of the
    /// prefix (in the index's order) are weighed: the bound on a keystroke's
    /// time with the largest history (`MAX_USER_WORDS`).
    pub fn best_with_prefix(&self, lower_prefix: &str, n: usize) -> (Vec<Hit<'_>>, f32) {
        let mut best = Best::new(n);
        let frozen = self.frozen_best(lower_prefix, n);
        best.mass = frozen.mass;
        for &(i, p) in frozen.best.iter().take(n) {
            let i = i as usize;
            best.push((self.frozen.get(i).0, p, self.frozen_stat(i).id));
        }
        let start: Box<str> = lower_prefix.into();
        let live = self
            .index
            .range::<str, _>((
                std::ops::Bound::Included(&*start),
                std::ops::Bound::Unbounded,
            ))
            .map(|(k, _)| k)
            .take_while(|k| k.starts_with(lower_prefix))
            .take(LIVE_SCAN)
            .filter_map(|k| k.find('\0').and_then(|at| self.hit(&k[at + 1..])));
        for hit in live {
            if best.weighs(hit.1) {
                best.push(hit);
            }
        }
        (best.hits, best.mass as f32)
    }

    /// The `n` likeliest frozen words of the prefix (equal ones in the
    /// index's order) and the mass weighed, remembered by prefix (the best
    /// `n` of a longer answer are the answer for `n`) until the words change.
    fn frozen_best(&self, lower_prefix: &str, n: usize) -> FrozenBest {
        // Typing a word asks for each of its prefixes in turn: the range of
        // the one before narrows the search for this one.
        let shorter = lower_prefix
            .char_indices()
            .next_back()
            .map(|(at, _)| &lower_prefix[..at]);
        let within = {
            let memo = self.frozen_memo.borrow();
            if let Some(m) = memo.get(lower_prefix) {
                if m.n >= n || m.best.len() < m.n {
                    return m.clone();
                }
            }
            shorter.and_then(|s| memo.get(s)).map(|m| m.range.clone())
        };
        let range = match within {
            Some(w) => self.frozen.prefix_range_within(lower_prefix, w),
            None => self.frozen.prefix_range(lower_prefix),
        };
        let mut best: Vec<(u32, f32)> = Vec::with_capacity(n + 1);
        let mut mass = 0.0f64;
        for i in range.clone().take(FROZEN_SCAN) {
            if self.frozen.is_gone(i) {
                continue;
            }
            let (count, weight) = self.frozen.count_and_weight(i);
            let p = self.prob_of(count, weight);
            mass += p as f64;
            // Entries come in the index's order: an equal one goes after.
            push_top(&mut best, (i as u32, p), n);
        }
        let answer = FrozenBest {
            n,
            best,
            mass,
            range,
        };
        let mut memo = self.frozen_memo.borrow_mut();
        if memo.len() >= MEMO_PREFIXES {
            memo.clear();
        }
        memo.insert(lower_prefix.into(), answer.clone());
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_likeliest_of_a_prefix_are_the_likeliest_it_lists() {
        let mut rng = crate::model::testgen::Rng::new(5);
        let mut c = WordCache::new();
        // A frozen part, words learnt since (live, fewer than `LIVE_SCAN`
        // of a prefix), and words of both.
        for step in 0..6_000 {
            let w = format!(
                "{}{}",
                ["ab", "Ab", "ac", "b"][rng.below(4)],
                rng.below(400)
            );
            c.add_count(&w, 1 + rng.below(5) as u32);
            if step == 5_700 {
                c.compact();
            }
        }
        let check = |c: &WordCache| {
            for prefix in ["a", "ab", "ab1", "b", "b39", "zz"] {
                let mut all: Vec<_> = c.with_prefix(prefix).collect();
                let mass: f32 = all.iter().map(|h| h.1).sum();
                all.sort_by(|x, y| y.1.total_cmp(&x.1).then_with(|| index_cmp(x.0, y.0)));
                // Asked for more, then fewer (the short prefixes' answers
                // are remembered), then more again.
                for n in [0, 1, 4, 16, 4, 1, 0, 24] {
                    let (best, m) = c.best_with_prefix(prefix, n);
                    assert_eq!(best, all[..n.min(all.len())], "{prefix} {n}");
                    assert!(
                        (m - mass).abs() <= 1e-4 * mass.max(1e-3),
                        "{prefix}: {m} {mass}"
                    );
                }
            }
        };
        check(&c);
        assert!(c.frozen.live() > 100 && c.stats.len() > 100);
        // What is remembered follows the changes: frozen words moved to the
        // map, new words, words removed, and a compaction.
        for i in 0..40 {
            c.add_count(&format!("ab{i}"), 50);
            c.add_count(&format!("b{}", 1000 + i), 1);
            c.remove(&format!("ac{i}"));
        }
        check(&c);
        c.compact();
        check(&c);
    }
}
