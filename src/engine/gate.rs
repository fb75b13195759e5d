//! The inputs of the ghost text's show/hide decision, for measuring
//! decisions other than the one `Engine::ghost` makes (the top candidate's
//! score against `EngineOptions::threshold`): `laya protocol --explain`
//! adds them to each answer and `scripts/fit-ghost-gate.py` fits and plays
//! a logistic decision on them. On the development split none it tried
//! (the score's and runner-up's log-odds, their margin, typed and left
//! lengths, source; weighted by the keystrokes a ghost saves or not) saved
//! more keystrokes at the same precision than the score alone.

use super::{Candidate, Source};
/// What the decision looks at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Features {
    /// The top candidate's score.
    pub p1: f32,
    /// The second candidate's score (0 without one).
    pub p2: f32,
    /// Characters of the word typed already.
    pub typed: usize,
    /// Characters the ghost would complete (its word's rest).
    pub rest: usize,
    pub source: Source,
}

impl Features {
    /// The decision's inputs for `candidates` (best first) completing
    /// `prefix`; None when there is nothing to show as ghost text.
    pub fn of(prefix: &str, candidates: &[Candidate]) -> Option<Features> {
        let top = candidates.first().filter(|c| c.replace == 0)?;
        let typed = prefix.chars().count();
        Some(Features {
            p1: top.score,
            p2: candidates.get(1).map_or(0.0, |c| c.score),
            typed,
            rest: top.word.chars().count().saturating_sub(typed),
            source: top.source,
        })
    }

    /// The model's inputs: a bias, the scores' log-odds and their margin,
    /// the typed and left lengths, and the source.
    pub fn vector(&self) -> [f32; 8] {
        let logit = |p: f32| {
            let p = p.clamp(1e-4, 1.0 - 1e-4);
            (p / (1.0 - p)).ln()
        };
        [
            1.0,
            logit(self.p1),
            (self.p1.max(1e-4) / self.p2.max(1e-4)).ln().min(8.0),
            (self.typed as f32).ln_1p(),
            (self.rest as f32).ln_1p(),
            (self.typed == 0) as u8 as f32,
            (self.source == Source::Buffer) as u8 as f32,
            (self.source == Source::Words) as u8 as f32,
        ]
    }
}
