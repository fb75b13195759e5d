//! Spelling corrections for a typed prefix that fits no known word: known
//! words whose beginning is within a small, keyboard-aware edit distance
//! (a slip to a neighbouring key costs less than any other substitution).

use super::vocab::Vocab;
use super::words::WordCache;
use super::{Candidate, Source};

/// Vocabulary words considered (the most frequent; rare words make poor fixes).
const VOCAB_WORDS: usize = 5000;
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

fn substitution(a: u8, b: u8) -> f32 {
    if a.eq_ignore_ascii_case(&b) {
        0.0
    } else if neighbours(a, b) {
        0.5
    } else {
        1.0
    }
}

/// Smallest edit distance between `typed` and any beginning of `word`
/// (insertions, deletions, keyboard-weighted substitutions, transpositions);
/// gives up (None) once it must exceed `max`.
pub fn prefix_distance(typed: &[u8], word: &[u8], max: f32) -> Option<f32> {
    let n = typed.len();
    // rows[i][j]: distance between typed[..i] and word[..j]; three rolling rows over j.
    let mut prev2 = vec![0.0f32; n + 1];
    let mut prev: Vec<f32> = (0..=n).map(|i| i as f32).collect();
    let mut cur = vec![0.0f32; n + 1];
    let mut best = prev[n];
    for j in 1..=word.len() {
        cur[0] = j as f32;
        let mut row_min = cur[0];
        for i in 1..=n {
            let mut d = (prev[i] + 1.0).min(cur[i - 1] + 1.0);
            d = d.min(prev[i - 1] + substitution(typed[i - 1], word[j - 1]));
            if i > 1 && j > 1 && typed[i - 1] == word[j - 2] && typed[i - 2] == word[j - 1] {
                d = d.min(prev2[i - 2] + 1.0);
            }
            cur[i] = d;
            row_min = row_min.min(d);
        }
        best = best.min(cur[n]);
        if row_min > max {
            break;
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    (best <= max).then_some(best)
}

/// Up to `k` corrections of `prefix` (whole replacement words), best first.
pub fn suggest(prefix: &str, vocab: &Vocab, buffer: &WordCache, k: usize) -> Vec<Candidate> {
    let typed = prefix.as_bytes();
    let max = if typed.len() >= 6 { 2.0 } else { 1.0 };
    let first = typed[0];
    let plausible = |w: &str| {
        let b = w.as_bytes();
        b.len() + 1 >= typed.len()
            && (b[0].eq_ignore_ascii_case(&first)
                || neighbours(b[0], first)
                || b.get(1).is_some_and(|c| c.eq_ignore_ascii_case(&first)))
    };
    let mut found: Vec<(String, f32)> = Vec::new();
    let mut consider = |word: &str, prior: f32| {
        if !plausible(word) {
            return;
        }
        if let Some(d) = prefix_distance(typed, word.as_bytes(), max) {
            if d > 0.0 {
                let score = prior * 0.05f32.powf(d);
                match found.iter_mut().find(|f| f.0 == word) {
                    Some(f) => f.1 = f.1.max(score),
                    None => found.push((word.to_string(), score)),
                }
            }
        }
    };
    for (rank, id) in vocab.words_by_rank().take(VOCAB_WORDS).enumerate() {
        consider(vocab.text(id), 1.0 / (rank as f32 + 10.0));
    }
    for word in buffer.words() {
        if plausible(word) {
            consider(word, buffer.prob(word));
        }
    }
    found.sort_by(|a, b| b.1.total_cmp(&a.1));
    found.truncate(k);
    let total: f32 = found.iter().map(|f| f.1).sum();
    found
        .into_iter()
        .map(|(word, s)| Candidate {
            insert: word.clone(),
            word,
            replace: prefix.chars().count(),
            source: Source::Correction,
            score: (s / total.max(1e-9)) * 0.5,
        })
        .collect()
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
        let got = suggest("recie", &v, &WordCache::new(), 3);
        assert_eq!(got[0].word, "receive");
        assert_eq!(got[0].replace, 5);
        assert_eq!(got[0].source, Source::Correction);
    }
}
