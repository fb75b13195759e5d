//! Spelling corrections for a typed prefix that fits no known word: known
//! words whose beginning is within a small, keyboard-aware edit distance
//! (a slip to a neighbouring key costs less than any other substitution),
//! and the step of `Engine::predict` that offers them.

use super::buffer::BufferEntry;
use super::rank::Ranked;
use super::word_cache::WordCache;
use super::{Candidate, Engine, Source};
use crate::text::vocab::Vocab;

/// Vocabulary words considered (the most frequent; rare words make poor fixes).
const VOCAB_WORDS: usize = 4000;
const ROWS: [&str; 3] = ["qwertyuiop", "asdfghjkl", "zxcvbnm"];
const ROW_SHIFT: [f32; 3] = [0.0, 0.25, 0.75];

fn key_pos(c: u8) -> Option<(f32, f32)> {
    let c = c.to_ascii_lowercase();
    ROWS.iter().enumerate().find_map(|(r, row)| {
        row.bytes()
            .position(|k| k == c)
            .map(|col| (r as f32, col as f32 + ROW_SHIFT[r]))
    })
}

/// True for keys next to each other on a QWERTY keyboard.
pub fn neighbours(a: u8, b: u8) -> bool {
    match (key_pos(a), key_pos(b)) {
        (Some((ra, ca)), Some((rb, cb))) => {
            let (dr, dc) = (ra - rb, ca - cb);
            a != b && dr * dr + dc * dc < 1.7
        }
        _ => false,
    }
}

/// Longest typed prefix considered for corrections (longer ones are left alone).
const MAX_TYPED: usize = 32;

/// Edit costs in half units: a slip to a neighbouring key costs 1, any other
/// substitution, insertion, deletion or transposition 2.
fn substitution(a: u8, b: u8) -> u8 {
    if a.eq_ignore_ascii_case(&b) {
        0
    } else if neighbours(a, b) {
        1
    } else {
        2
    }
}

/// Smallest edit distance between `typed` and any beginning of `word`
/// (insertions, deletions, keyboard-weighted substitutions, transpositions);
/// gives up (None) once it must exceed `max`.
pub fn prefix_distance(typed: &[u8], word: &[u8], max: f32) -> Option<f32> {
    let n = typed.len();
    if n > MAX_TYPED {
        return None;
    }
    let max = (max * 2.0) as u8;
    // Rolling rows over the word's letters: distance between typed[..i] and word[..j].
    let mut prev2 = [0u8; MAX_TYPED + 1];
    let mut prev = [0u8; MAX_TYPED + 1];
    let mut cur = [0u8; MAX_TYPED + 1];
    for (i, p) in prev.iter_mut().enumerate().take(n + 1) {
        *p = (2 * i).min(255) as u8;
    }
    let mut best = prev[n];
    for j in 1..=word.len() {
        cur[0] = (2 * j).min(255) as u8;
        let mut row_min = cur[0];
        for i in 1..=n {
            let mut d = prev[i].saturating_add(2).min(cur[i - 1].saturating_add(2));
            d = d.min(prev[i - 1].saturating_add(substitution(typed[i - 1], word[j - 1])));
            if i > 1 && j > 1 && typed[i - 1] == word[j - 2] && typed[i - 2] == word[j - 1] {
                d = d.min(prev2[i - 2].saturating_add(2));
            }
            cur[i] = d;
            row_min = row_min.min(d);
        }
        best = best.min(cur[n]);
        if row_min > max {
            break;
        }
        prev2 = prev;
        prev = cur;
    }
    (best <= max).then_some(best as f32 / 2.0)
}

/// Every known word within the allowed distance of a typed prefix, with its
/// prior. Kept between keystrokes: the words within reach of `prefix + c` are
/// among those within reach of `prefix` (the distance can only grow as the
/// prefix grows), so typing on narrows this list instead of searching again.
pub struct Fixes {
    prefix: String,
    max: f32,
    /// (word, prior, distance)
    found: Vec<(String, f32, f32)>,
}

fn max_distance(prefix: &str) -> f32 {
    if prefix.len() >= 6 {
        2.0
    } else {
        1.0
    }
}

impl Fixes {
    /// Searches the most frequent vocabulary words and the buffer's words.
    pub fn search(prefix: &str, vocab: &Vocab, buffer: &WordCache) -> Fixes {
        let typed = prefix.as_bytes();
        let max = max_distance(prefix);
        let first = typed[0];
        let plausible = |w: &str| {
            let b = w.as_bytes();
            b.len() + 1 >= typed.len()
                && (b[0].eq_ignore_ascii_case(&first)
                    || neighbours(b[0], first)
                    || b.get(1).is_some_and(|c| c.eq_ignore_ascii_case(&first)))
        };
        let mut found: Vec<(String, f32, f32)> = Vec::new();
        let mut consider = |word: &str, prior: f32| {
            if !plausible(word) || found.iter().any(|f| f.0 == word) {
                return;
            }
            if let Some(d) = prefix_distance(typed, word.as_bytes(), max) {
                found.push((word.to_string(), prior, d));
            }
        };
        for (rank, id) in vocab.words_by_rank().take(VOCAB_WORDS).enumerate() {
            consider(vocab.text(id), 1.0 / (rank as f32 + 10.0));
        }
        for word in buffer.words() {
            consider(word, buffer.prob(word));
        }
        Fixes {
            prefix: prefix.to_string(),
            max,
            found,
        }
    }

    /// The fixes for `prefix` if it extends this one (same distance bound).
    pub fn narrow(&self, prefix: &str) -> Option<Fixes> {
        if !prefix.starts_with(&self.prefix) || max_distance(prefix) != self.max {
            return None;
        }
        let typed = prefix.as_bytes();
        let found = self
            .found
            .iter()
            .filter_map(|(w, prior, _)| {
                prefix_distance(typed, w.as_bytes(), self.max).map(|d| (w.clone(), *prior, d))
            })
            .collect();
        Some(Fixes {
            prefix: prefix.to_string(),
            max: self.max,
            found,
        })
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Up to `k` corrections (whole replacement words), best first.
    pub fn candidates(&self, k: usize) -> Vec<Candidate> {
        let mut best: Vec<(&str, f32)> = self
            .found
            .iter()
            .filter(|f| f.2 > 0.0)
            .map(|(w, prior, d)| (w.as_str(), prior * 0.05f32.powf(*d)))
            .collect();
        best.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        best.truncate(k);
        let total: f32 = best.iter().map(|f| f.1).sum();
        let replace = self.prefix.chars().count();
        best.into_iter()
            .map(|(word, s)| Candidate {
                insert: word.to_string(),
                word: word.to_string(),
                replace,
                source: Source::Correction,
                score: (s / total.max(1e-9)) * 0.5,
            })
            .collect()
    }
}

impl Engine {
    /// Adds spelling corrections to `candidates` (at most `k` in all) when
    /// the prefix fits nothing well (`wants_corrections`); the search is kept
    /// in the buffer's entry and narrowed as the unknown word is typed on.
    pub(crate) fn offer_corrections(
        &self,
        entry: &mut BufferEntry,
        prefix: &str,
        k: usize,
        ranked: &mut Ranked,
    ) {
        let Some(vocab) = self.vocab.as_deref() else {
            return;
        };
        if !self.wants_corrections(entry, prefix, &ranked.listed, ranked.mass_known) {
            return;
        }
        let narrowed = entry.fixes.as_ref().and_then(|f| f.narrow(prefix));
        let fixes = narrowed.unwrap_or_else(|| Fixes::search(prefix, vocab, &entry.ctx.words));
        let found = fixes.candidates(k);
        entry.fixes = Some(fixes);
        let candidates = &mut ranked.candidates;
        // Listed words filling the menu leave its last slot to a correction.
        if !found.is_empty() && candidates.len() >= k && ranked.listed.last() == Some(&true) {
            candidates.truncate(k - 1);
        }
        for c in found {
            if candidates.len() < k && !candidates.iter().any(|x| x.word == c.word) {
                candidates.push(c);
            }
        }
    }

    /// "Fits nothing well": no known word starts with the prefix (or almost
    /// no probability does) and the prefix is not itself a known word. The
    /// word list beyond the vocabulary is left out: it holds misspellings
    /// seen twice in the corpus too, and one must still get corrections.
    pub(crate) fn wants_corrections(
        &self,
        entry: &BufferEntry,
        prefix: &str,
        listed: &[bool],
        mass_known: f32,
    ) -> bool {
        let known = |w: &str| {
            self.vocab.as_ref().is_some_and(|v| v.word_id(w).is_some())
                || entry.ctx.words.prob(w) > 0.0
                || self.user_words.prob(w) > 0.0
        };
        self.opts.corrections
            && looks_like_a_word(prefix)
            && prefix.len() >= 3
            && (listed.iter().all(|&l| l) || mass_known < 1e-6)
            && !known(prefix)
            && !known(&prefix.to_ascii_lowercase())
    }
}

/// A prefix a spelling correction can help with: letters only, capitalised
/// at most on the first letter (not `CMP011`, `DJANGO_`, `uWSGI`: identifiers).
fn looks_like_a_word(prefix: &str) -> bool {
    let b = prefix.as_bytes();
    b.iter().all(u8::is_ascii_alphabetic) && !b.iter().skip(1).any(u8::is_ascii_uppercase)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyboard_neighbours() {
        assert!(neighbours(b'e', b'r'));
        assert!(neighbours(b'e', b'd'));
        assert!(!neighbours(b'e', b'p'));
        assert!(!neighbours(b'e', b'e'));
    }

    #[test]
    fn distance_to_a_word_beginning() {
        assert_eq!(prefix_distance(b"teh", b"the", 2.0), Some(1.0));
        assert_eq!(prefix_distance(b"thw", b"there", 2.0), Some(0.5));
        assert_eq!(prefix_distance(b"ther", b"therefore", 2.0), Some(0.0));
        assert_eq!(prefix_distance(b"xyz", b"the", 1.0), None);
        assert_eq!(prefix_distance(b"recieve", b"receive", 2.0), Some(1.0));
    }

    #[test]
    fn suggests_known_words() {
        let v = Vocab::from_lines("<unk>\n<s>\n<nl>\nthe\nreceive\nrecipe\nhouse".lines()).unwrap();
        let got = Fixes::search("recie", &v, &WordCache::new()).candidates(3);
        assert_eq!(got[0].word, "receive");
        assert_eq!(got[0].replace, 5);
        assert_eq!(got[0].source, Source::Correction);
    }
}
