//! The kind of text at the cursor in the ranking: in prose, comments and
//! strings, identifier-shaped words from the model and the word list keep
//! only part of their score (`Tuning::code_in_words`, `kind::prior`), and
//! words the training text has mostly in code move down the menu below its
//! first entry (`Tuning::prose_weight`, `KindShares::factor`); in code,
//! words it has mostly in prose when `Tuning::code_weight` asks.

use super::Ranked;
use crate::engine::kind::{self, TextKind};
use crate::engine::kind_shares::KindShares;
use crate::engine::{Candidate, Source, Tuning};

/// Candidates ranked beyond `k` where the kind of text reranks, from which
/// words move up when others lose their score.
pub const WORDY_EXTRA: usize = 8;

/// Does the kind of text change the ranking in text of `kind`?
pub fn reranks(kind: TextKind, t: &Tuning, kinds: Option<&KindShares>) -> bool {
    let shares = kinds.is_some();
    match kind {
        TextKind::Unknown => false,
        TextKind::Code => shares && t.code_weight > 0.0,
        _ => t.code_in_words < 1.0 || (shares && t.prose_weight > 0.0),
    }
}

/// `ranked` with `kind::prior` and `KindShares::factor` applied to each
/// score (the buffer's own words keep theirs: an identifier the user wrote
/// is one they use), ranked again the way the mixer ranks (by expected
/// keystrokes saved, `length_weight`) and cut to `k`.
pub fn prefer_words(
    ranked: Ranked,
    kind: TextKind,
    t: &Tuning,
    kinds: Option<&KindShares>,
    k: usize,
) -> Ranked {
    let alpha = t.length_weight;
    let worth = |c: &Candidate| {
        let n = c.insert.len() as f32;
        c.score
            * if alpha > 0.0 {
                (n - 1.0).max(0.25).powf(alpha)
            } else {
                1.0
            }
    };
    // (worth, worth with the kinds factor, candidate, listed)
    let (pairs, mass_known) = ranked.into_pairs();
    let mut all: Vec<(f32, f32, Candidate, bool)> = pairs
        .map(|(mut c, l)| {
            let mut f = 1.0;
            if c.source != Source::Buffer {
                c.score *= kind::prior(kind, &c.word, t.code_in_words);
                if let Some(s) = kinds {
                    f = s.factor(kind, &c.word, t.prose_weight, t.code_weight);
                }
            }
            let w = worth(&c);
            (w, w * f, c, l)
        })
        .collect();
    // Stable: equal worth keeps the mixer's order. The first stays first
    // whatever the kinds file says, and every score stays: the ghost is
    // the model's, the rest of the menu prefers the kind of text's words
    // (scaling scores, or moving the first, cost KSR@1 on the development
    // split at every weight tried: technical prose names code).
    all.sort_by(|a, b| b.0.total_cmp(&a.0));
    if all.len() > 1 {
        all[1..].sort_by(|a, b| b.1.total_cmp(&a.1));
    }
    all.truncate(k);
    Ranked::from_pairs(all.into_iter().map(|(_, _, c, l)| (c, l)), mass_known)
}
