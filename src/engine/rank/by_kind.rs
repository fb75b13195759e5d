//! The kind of text at the cursor in the ranking: in prose, comments and
//! strings, identifier-shaped words from the model and the word list keep
//! only part of their score (`Tuning::code_in_words`, `kind::prior`).

use super::Ranked;
use crate::engine::kind::{self, TextKind};
use crate::engine::{Candidate, Source};

/// Candidates ranked beyond `k` in prose, comments and strings, from which
/// words move up when identifier-shaped ones lose their score.
pub const WORDY_EXTRA: usize = 8;

/// `ranked` with `kind::prior` applied to each score (the buffer's own
/// words keep theirs: an identifier the user wrote is one they use),
/// ranked again the way the mixer ranks (by expected keystrokes saved,
/// `length_weight` = `alpha`) and cut to `k`.
pub fn prefer_words(ranked: Ranked, kind: TextKind, weight: f32, alpha: f32, k: usize) -> Ranked {
    let worth = |c: &Candidate| {
        let n = c.insert.len() as f32;
        c.score
            * if alpha > 0.0 {
                (n - 1.0).max(0.25).powf(alpha)
            } else {
                1.0
            }
    };
    let mut both: Vec<(f32, Candidate, bool)> = ranked
        .candidates
        .into_iter()
        .zip(ranked.listed)
        .map(|(mut c, l)| {
            if c.source != Source::Buffer {
                c.score *= kind::prior(kind, &c.word, weight);
            }
            (worth(&c), c, l)
        })
        .collect();
    // Stable: equal worth keeps the mixer's order.
    both.sort_by(|a, b| b.0.total_cmp(&a.0));
    both.truncate(k);
    let (candidates, listed) = both.into_iter().map(|(_, c, l)| (c, l)).unzip();
    Ranked {
        candidates,
        listed,
        mass_known: ranked.mass_known,
    }
}
