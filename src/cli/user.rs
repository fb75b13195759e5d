//! The simulated user of METRICS.md as `laya protocol` and `laya eval` play
//! it: the engine is built as the Neovim host builds it (the same ghost
//! text, continuation included), and the user either reads every ghost text
//! shown (typing past one tells the engine it was not the word) or never
//! looks at them.

use super::EngineArgs;
use crate::engine::EngineOptions;
use std::collections::HashMap;

/// How the simulated user treats ghost text.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct UserArgs {
    /// The simulated user never reads the ghost text: typing on past one
    /// tells the engine nothing (in Neovim: `ghost.give_way = false`).
    /// By default the user reads every ghost text shown.
    #[arg(long)]
    pub never_looks: bool,
}

/// The engine options of a scoring run: the host's, but for corrections
/// (they replace typed text; the harness scores insertions only).
pub fn scoring_options(engine: &EngineArgs) -> EngineOptions {
    let mut opts = engine.options();
    opts.corrections = false;
    opts
}

/// What the user saw of the previous answer, per document.
#[derive(Default)]
pub struct Reader {
    never_looks: bool,
    shown: HashMap<u64, bool>,
}

impl Reader {
    pub fn new(a: &UserArgs) -> Reader {
        Reader {
            never_looks: a.never_looks,
            shown: HashMap::new(),
        }
    }

    /// A new document (`reset`): nothing was shown in it yet.
    pub fn forget(&mut self, doc: u64) {
        self.shown.remove(&doc);
    }

    /// Had the user read the previous answer's ghost text when typing the
    /// key that led here? (`Request::seen_last`.)
    pub fn seen_last(&self, doc: u64) -> bool {
        !self.never_looks && self.shown.get(&doc).copied().unwrap_or(false)
    }

    /// The answer shown now had this ghost text.
    pub fn showed(&mut self, doc: u64, ghost: &str) {
        self.shown.insert(doc, !ghost.is_empty());
    }
}

/// The ghost text's leading word run: what METRICS.md's user accepts.
pub fn ghost_word(ghost: &str) -> &str {
    let end = ghost
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(ghost.len());
    &ghost[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ghost_word_is_the_leading_run_of_ascii_word_characters() {
        assert_eq!(ghost_word("ing the"), "ing");
        assert_eq!(ghost_word(" as"), "");
        assert_eq!(ghost_word("x_1(y)"), "x_1");
        assert_eq!(ghost_word("é"), "");
        assert_eq!(ghost_word(""), "");
    }

    #[test]
    fn only_a_shown_ghost_is_seen_and_never_by_a_user_who_never_looks() {
        let mut r = Reader::new(&UserArgs::default());
        assert!(!r.seen_last(1));
        r.showed(1, "ing");
        assert!(r.seen_last(1) && !r.seen_last(2));
        r.showed(1, "");
        assert!(!r.seen_last(1));
        r.showed(1, "ing");
        r.forget(1);
        assert!(!r.seen_last(1));
        let mut blind = Reader::new(&UserArgs { never_looks: true });
        blind.showed(1, "ing");
        assert!(!blind.seen_last(1));
    }
}
