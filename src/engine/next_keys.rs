//! Work between keystrokes: thinking ahead over the likeliest word (on the
//! think-ahead thread, `ahead_thread`) and the answers to the likeliest next
//! keys, so that the editor can show them the moment a key is typed.

use super::ahead_thread::AheadJob;
use super::buffer::BufferEntry;
use super::rank::Ranked;
use super::{Engine, Prediction};
use crate::text::vocab::Vocab;

/// Words ranked to find the likeliest next keys (`Engine::next_keys`).
const NEXT_KEY_WORDS: usize = 32;

impl Engine {
    /// Between keystrokes: has the helper thread (`EngineOptions::think_ahead`)
    /// step the model over the last prediction's best candidate word in
    /// `buffer` and compute the output layer there, so that the keystroke
    /// after that word is completed (typed or accepted, then a blank) needs
    /// no model work. Returns at once; answers are the same with or without
    /// it, only faster when it guessed right.
    pub fn think_ahead(&mut self, buffer: u64) {
        let (Some(helper), Some(backend)) = (&self.ahead, &self.backend) else {
            return;
        };
        let Some(entry) = self.buffers.get(&buffer) else {
            return;
        };
        let Some((version, token)) = entry.best.filter(|b| b.0 == entry.ctx.version) else {
            return;
        };
        let same =
            |j: &AheadJob| j.serial == entry.serial && j.version == version && j.tokens == [token];
        if helper.current().is_some_and(|j| same(&j)) {
            return;
        }
        let start = entry.ctx.state(backend.hidden_dim()).to_vec();
        helper.post(AheadJob::new(
            entry.serial,
            version,
            vec![token],
            start,
            backend.vocab_size(),
            self.rates.shared(),
        ));
    }

    /// The answers `predict` would give to the likeliest next keys in
    /// `buffer`, worked out between keystrokes so that the editor can show
    /// them the moment a key is typed. `last` is the last answer for that
    /// buffer; for each of the `max_keys` likeliest characters to come
    /// after its prefix (letters, digits, `_`: keys that keep the word
    /// going), likeliest first, the prediction for the same text plus that
    /// character, as `predict` would answer it with `seen_last` false (`k`
    /// candidates). Changes nothing a later `predict` sees. `stop` is asked
    /// before each key (true: a keystroke is waiting, give up).
    pub fn next_keys(
        &mut self,
        buffer: u64,
        last: &Prediction,
        k: usize,
        max_keys: usize,
        stop: &dyn Fn() -> bool,
    ) -> Vec<(char, Prediction)> {
        let Some(entry) = self.buffers.remove(&buffer) else {
            return Vec::new();
        };
        self.keeping_entry(buffer, entry, |engine, entry| {
            engine.next_keys_in(entry, last, k, max_keys, stop)
        })
    }

    fn next_keys_in(
        &mut self,
        entry: &mut BufferEntry,
        last: &Prediction,
        k: usize,
        max_keys: usize,
        stop: &dyn Fn() -> bool,
    ) -> Vec<(char, Prediction)> {
        // The likeliest next characters: the probability of the words of a
        // wider ranking, summed by the character each continues with.
        let mut mass: Vec<(char, f32)> = Vec::new();
        for c in self.rank(entry, &last.prefix, NEXT_KEY_WORDS).candidates {
            let Some(ch) = c.insert.chars().next() else {
                continue;
            };
            if !(ch.is_ascii_alphanumeric() || ch == '_') {
                continue;
            }
            match mass.iter_mut().find(|m| m.0 == ch) {
                Some(m) => m.1 += c.score,
                None => mass.push((ch, c.score)),
            }
        }
        mass.sort_by(|a, b| b.1.total_cmp(&a.1));
        let keys: Vec<char> = mass.iter().take(max_keys).map(|m| m.0).collect();
        // Only from the state `last` was answered in.
        let current = entry
            .typed_past
            .as_ref()
            .is_some_and(|t| t.version == entry.ctx.version && t.prefix == last.prefix);
        let mut out = Vec::new();
        for ch in keys {
            if !current || stop() {
                break;
            }
            let prefix = format!("{}{ch}", last.prefix);
            if let Some(p) = self.next_key(entry, &prefix, k.max(1)) {
                out.push((ch, p));
            }
        }
        out
    }

    /// Blocks until the helper thread has done the work given to it
    /// (tests and benchmarks that want it done between keystrokes).
    pub fn wait_ahead(&self) {
        if let Some(h) = &self.ahead {
            h.wait();
        }
    }

    /// What `predict` answers when one more character of the word is typed
    /// after the last request of `buffer` (`seen_last` false): the same
    /// ranking, words typed past and ghost, from the context and
    /// distribution already there. None when that answer would search for
    /// corrections (work a keystroke does, not a guess).
    fn next_key(&mut self, entry: &mut BufferEntry, prefix: &str, k: usize) -> Option<Prediction> {
        let passed = self.words_typed_past(entry, prefix, false);
        let (
            Ranked {
                candidates,
                listed,
                mass_known,
            },
            _,
        ) = self.rank_giving_way(entry, prefix, k, &passed);
        if self.wants_corrections(entry, prefix, &listed, mass_known) {
            return None;
        }
        let ghost = self.ghost(entry, prefix, &candidates);
        Some(Prediction {
            prefix: prefix.to_string(),
            candidates,
            ghost,
        })
    }
}

/// The word to think ahead over: `best` (the top candidate's token), or the
/// typed prefix itself when it is a vocabulary word the model finds likelier
/// (candidates are always longer than the prefix, but a word typed out in
/// full ends right here: "the" rather than its top candidate "then").
pub(crate) fn word_ending_here(entry: &BufferEntry, vocab: &Vocab, prefix: &str, best: u32) -> u32 {
    let (Some(dist), Some(typed)) = (&entry.dist, vocab.word_id(prefix)) else {
        return best;
    };
    if dist.version != entry.ctx.version {
        return best;
    }
    let p = |id: u32| dist.probs.get(id as usize).copied().unwrap_or(0.0);
    if p(typed) > p(best) {
        typed
    } else {
        best
    }
}

/// True for a single word token (what `vocab.word_id` can name).
pub(crate) fn is_one_word(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}
