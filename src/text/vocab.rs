//! The vocabulary (models/FORMAT.md `<stem>.vocab.txt`): token ↔ id, and a
//! lowercase-sorted index of the word tokens so that a typed prefix is one
//! contiguous range. Ids are in descending training frequency, so the file is
//! also the built-in frequency word list.

use super::digest::sha256_hex;
use super::hash::FastMap;
use super::tokenizer::{is_word_char, Token, TokenKind};
use crate::math::partition;
use anyhow::{bail, Context, Result};
use std::path::Path;

pub const UNK: u32 = 0;
pub const BOS: u32 = 1;

pub struct Vocab {
    tokens: Vec<Box<str>>,
    ids: FastMap<Box<str>, u32>,
    newline: u32,
    /// Word-token ids sorted by (lowercase text, text).
    sorted: Vec<u32>,
    /// `sorted_pos[id]` = the position of word token `id` in `sorted` (u32::MAX: not a word).
    sorted_pos: Vec<u32>,
    /// The texts of `sorted`, one after another (the i-th ends at
    /// `sorted_end[i]`), and the same lowercase: a prefix's words are one run
    /// of memory, not thousands of separate allocations.
    sorted_text: String,
    sorted_lower: String,
    sorted_end: Vec<u32>,
    /// Positions in `sorted` by the first byte of the lowercase text: byte b
    /// starts `first[b]..first[b + 1]`.
    first: Vec<u32>,
    /// `rank_of[id]` = rank among word tokens by frequency (0 = most frequent), or u32::MAX.
    rank_of: Vec<u32>,
    /// Word-token ids by descending frequency.
    by_rank: Vec<u32>,
    word_count: usize,
    /// 1 / H(word_count): the Zipf word-list probability of rank r is zipf_norm / (r + 1).
    zipf_norm: f32,
    /// SHA-256 (hex) of the file's bytes.
    pub sha256: String,
}

impl Vocab {
    /// Reads a vocabulary file; errors name the file and the line.
    pub fn load(path: &Path) -> Result<Vocab> {
        let bytes = std::fs::read(path)
            .with_context(|| format!("vocabulary file {}: cannot read", path.display()))?;
        let sha256 = sha256_hex(&bytes);
        let text = std::str::from_utf8(&bytes)
            .with_context(|| format!("vocabulary file {}: not UTF-8", path.display()))?;
        let mut v = Vocab::from_lines(text.lines())
            .with_context(|| format!("vocabulary file {}", path.display()))?;
        v.sha256 = sha256;
        Ok(v)
    }

    /// Builds a vocabulary from its lines (line number = id).
    pub fn from_lines<'a>(lines: impl Iterator<Item = &'a str>) -> Result<Vocab> {
        let tokens: Vec<Box<str>> = lines.map(Box::from).collect();
        if tokens.len() < 3 || &*tokens[0] != "<unk>" || &*tokens[1] != "<s>" {
            bail!(
                "must start with the lines <unk> and <s> (found {} lines)",
                tokens.len()
            );
        }
        let mut ids = FastMap::with_capacity_and_hasher(tokens.len(), Default::default());
        for (i, t) in tokens.iter().enumerate() {
            if t.is_empty() || t.chars().any(char::is_whitespace) {
                bail!(
                    "line {}: token {:?} is empty or contains whitespace",
                    i + 1,
                    t
                );
            }
            if ids.insert(t.clone(), i as u32).is_some() {
                bail!("line {}: token {:?} appears twice", i + 1, t);
            }
        }
        let newline = *ids.get("<nl>").unwrap_or(&UNK);
        let mut rank_of = vec![u32::MAX; tokens.len()];
        let mut word_ids = Vec::new();
        for (i, t) in tokens.iter().enumerate() {
            if t.chars().all(is_word_char) {
                rank_of[i] = word_ids.len() as u32;
                word_ids.push(i as u32);
            }
        }
        let word_count = word_ids.len();
        let by_rank = word_ids.clone();
        let mut keyed: Vec<(String, u32)> = word_ids
            .into_iter()
            .map(|id| (tokens[id as usize].to_ascii_lowercase(), id))
            .collect();
        keyed.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| tokens[a.1 as usize].cmp(&tokens[b.1 as usize]))
        });
        let sorted: Vec<u32> = keyed.iter().map(|k| k.1).collect();
        let sorted_text: String = sorted.iter().map(|&id| &*tokens[id as usize]).collect();
        // Word tokens are ASCII, so lowercase texts have the same lengths.
        let sorted_lower = sorted_text.to_ascii_lowercase();
        let mut sorted_end = Vec::with_capacity(sorted.len());
        let mut end = 0;
        for &id in &sorted {
            end += tokens[id as usize].len();
            sorted_end.push(end as u32);
        }
        let mut sorted_pos = vec![u32::MAX; tokens.len()];
        for (i, &id) in sorted.iter().enumerate() {
            sorted_pos[id as usize] = i as u32;
        }
        let mut first = vec![0u32; 257];
        for k in &keyed {
            first[k.0.as_bytes()[0] as usize + 1] += 1;
        }
        for b in 1..first.len() {
            first[b] += first[b - 1];
        }
        Ok(Vocab {
            tokens,
            ids,
            newline,
            sorted,
            sorted_pos,
            sorted_text,
            sorted_lower,
            sorted_end,
            first,
            rank_of,
            by_rank,
            word_count,
            zipf_norm: 1.0 / (1..=word_count.max(1)).map(|r| 1.0 / r as f64).sum::<f64>() as f32,
            sha256: String::new(),
        })
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Normaliser of the Zipf word-list probabilities (see `zipf_norm` field).
    pub fn zipf_norm(&self) -> f32 {
        self.zipf_norm
    }

    pub fn word_count(&self) -> usize {
        self.word_count
    }

    pub fn text(&self, id: u32) -> &str {
        &self.tokens[id as usize]
    }

    /// The model's id of a token (`<unk>` when not in the vocabulary).
    pub fn id(&self, tok: &Token) -> u32 {
        if tok.kind == TokenKind::Newline {
            return self.newline;
        }
        self.ids.get(tok.text).copied().unwrap_or(UNK)
    }

    pub fn word_id(&self, word: &str) -> Option<u32> {
        self.ids.get(word).copied()
    }

    /// Frequency rank among word tokens (0 = most frequent).
    pub fn word_rank(&self, id: u32) -> Option<u32> {
        self.rank_of
            .get(id as usize)
            .copied()
            .filter(|&r| r != u32::MAX)
    }

    pub fn is_word(&self, id: u32) -> bool {
        self.word_rank(id).is_some()
    }

    /// Range of `sorted_ids()` whose lowercase text starts with `lower_prefix`.
    pub fn prefix_range(&self, lower_prefix: &str) -> std::ops::Range<usize> {
        let Some(&b) = lower_prefix.as_bytes().first() else {
            return 0..self.sorted.len();
        };
        let (lo, hi) = (
            self.first[b as usize] as usize,
            self.first[b as usize + 1] as usize,
        );
        let lower = |i: usize| &self.sorted_lower[self.start(i)..self.sorted_end[i] as usize];
        let at = |n: usize| lo + n;
        let from = at(partition(hi - lo, |n| lower(at(n)) < lower_prefix));
        let len = partition(hi - from, |n| lower(from + n).starts_with(lower_prefix));
        from..from + len
    }

    fn start(&self, i: usize) -> usize {
        if i == 0 {
            0
        } else {
            self.sorted_end[i - 1] as usize
        }
    }

    /// The text of `sorted_ids()[i]`.
    pub fn sorted_text(&self, i: usize) -> &str {
        &self.sorted_text[self.start(i)..self.sorted_end[i] as usize]
    }

    /// Word-token ids, most frequent first (the built-in word list).
    pub fn words_by_rank(&self) -> impl Iterator<Item = u32> + '_ {
        self.by_rank.iter().copied()
    }

    /// Word-token ids in (lowercase, text) order.
    pub fn sorted_ids(&self) -> &[u32] {
        &self.sorted
    }

    /// Where word token `id` is in `sorted_ids` (None: not a word token).
    pub fn sorted_position(&self, id: u32) -> Option<usize> {
        match self.sorted_pos.get(id as usize) {
            Some(&p) if p != u32::MAX => Some(p as usize),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::tokenizer::tokenize;

    fn vocab() -> Vocab {
        let lines = "<unk>\n<s>\n<nl>\nthe\n.\nThe\nof\nthen\nTheory\n(\nthere\nx1";
        Vocab::from_lines(lines.lines()).unwrap()
    }

    #[test]
    fn ids_ranks_and_newline() {
        let v = vocab();
        let ids: Vec<u32> = tokenize("the\n. zzz").map(|t| v.id(&t)).collect();
        assert_eq!(ids, vec![3, 2, 4, UNK]);
        assert_eq!(v.word_rank(3), Some(0));
        assert_eq!(v.word_rank(5), Some(1));
        assert_eq!(v.word_rank(4), None);
        assert_eq!(v.word_count(), 7);
    }

    #[test]
    fn prefix_is_a_case_insensitive_range() {
        let v = vocab();
        let r = v.prefix_range("the");
        let mut words: Vec<&str> = v.sorted_ids()[r].iter().map(|&i| v.text(i)).collect();
        words.sort();
        assert_eq!(words, vec!["The", "Theory", "the", "then", "there"]);
        assert!(v.prefix_range("q").is_empty());
        assert!(v.prefix_range("thez").is_empty());
        assert_eq!(v.prefix_range("").len(), v.word_count());
        assert_eq!(v.prefix_range("x").len(), 1);
        for (i, &id) in v.sorted_ids().iter().enumerate() {
            assert_eq!(v.sorted_text(i), v.text(id));
        }
    }

    #[test]
    fn rejects_bad_files() {
        assert!(Vocab::from_lines("<s>\n<unk>\nx".lines()).is_err());
        assert!(Vocab::from_lines("<unk>\n<s>\nx\nx".lines()).is_err());
    }
}
