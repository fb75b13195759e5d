//! The word list beyond the vocabulary (models/FORMAT.md `<stem>.words.txt`):
//! frequent training-corpus words the model can only call `<unk>`, with their
//! counts. Sorted case-insensitively like `Vocab`'s index, so a typed prefix
//! is one contiguous range; a listed word's share of the model's `<unk>` is
//! its count over the out-of-vocabulary total. A listed word that the
//! vocabulary has after all (a list from another vocabulary) is the ranking's
//! to skip: checking 100k words here would cost more start-up time than the
//! four words a keystroke reads.

use crate::math::partition;
use anyhow::{bail, Context, Result};
use std::cmp::Ordering;
use std::path::Path;

pub struct WordList {
    /// The words' texts one after another, sorted by (lowercase text, text):
    /// the i-th ends at `end[i]` (100k words are a few runs of memory, not
    /// 100k allocations).
    text: String,
    end: Vec<u32>,
    /// `count[i]` of the i-th word.
    count: Vec<u32>,
    /// Positions by the first byte of the lowercase text: byte b starts
    /// `first[b]..first[b + 1]`.
    first: Vec<u32>,
    /// Out-of-vocabulary word tokens in the training stream (the file's `<unk>` line).
    total: u64,
}

impl WordList {
    /// Reads a word-list file; errors name the file and the line.
    pub fn load(path: &Path) -> Result<WordList> {
        let bytes = std::fs::read(path)
            .with_context(|| format!("word list {}: cannot read", path.display()))?;
        let text = std::str::from_utf8(&bytes)
            .with_context(|| format!("word list {}: not UTF-8", path.display()))?;
        WordList::parse(text).with_context(|| format!("word list {}", path.display()))
    }

    /// Builds the list from the file's text (FORMAT.md). Loading is on the
    /// engine's start-up path: one pass over the bytes, one sort of numbers.
    pub fn parse(text: &str) -> Result<WordList> {
        if !text.is_empty() && !text.ends_with('\n') {
            bail!("does not end with a newline (a truncated file?)");
        }
        let (head, body) = text.split_once('\n').unwrap_or((text, ""));
        let total = head
            .strip_prefix("<unk>\t")
            .and_then(|n| n.parse::<u64>().ok())
            .filter(|&n| n > 0);
        let Some(total) = total else {
            bail!("line 1 must be <unk><TAB><total count> (a positive integer)");
        };
        let mut words: Vec<(&str, u32)> = Vec::with_capacity(body.len() / 12);
        let mut listed = 0u64;
        let mut at = 0;
        while at < body.len() {
            let Some((word, count, next)) = parse_line(body.as_bytes(), at) else {
                let n = 2 + body[..at].bytes().filter(|&b| b == b'\n').count();
                let line = body[at..].lines().next().unwrap_or("");
                // Only the line's head: a bad line can be any length.
                let head: String = line.chars().take(60).collect();
                let more = if head.len() < line.len() { "…" } else { "" };
                bail!("line {n}: expected word<TAB>count, found {head:?}{more}");
            };
            listed += count as u64;
            words.push((&body[at..word], count));
            at = next;
        }
        if listed > total {
            bail!("the listed words count {listed} tokens, more than the total {total} of line 1");
        }
        // Sorted by (lowercase, text): by the first 8 lowercase bytes as one
        // number (a radix sort, no string comparisons), then the few runs
        // with the same 8 bytes by their whole text.
        let key = |w: &str| {
            let mut k = [0u8; 8];
            for (d, s) in k.iter_mut().zip(w.bytes()) {
                *d = s.to_ascii_lowercase();
            }
            u64::from_be_bytes(k)
        };
        let mut order: Vec<(u64, u32)> = words
            .iter()
            .enumerate()
            .map(|(i, w)| (key(w.0), i as u32))
            .collect();
        radix_sort(&mut order);
        let mut run = 0;
        while run < order.len() {
            let mut end = run + 1;
            while end < order.len() && order[end].0 == order[run].0 {
                end += 1;
            }
            if end - run > 1 {
                order[run..end].sort_unstable_by(|a, b| {
                    let (x, y) = (words[a.1 as usize].0, words[b.1 as usize].0);
                    cmp_lower(x, y).then_with(|| x.cmp(y))
                });
            }
            run = end;
        }
        if let Some(w) = order
            .windows(2)
            .find(|w| words[w[0].1 as usize].0 == words[w[1].1 as usize].0)
        {
            bail!("the word {:?} is listed twice", words[w[0].1 as usize].0);
        }
        let mut lex = WordList {
            text: String::with_capacity(text.len()),
            end: Vec::with_capacity(words.len()),
            count: Vec::with_capacity(words.len()),
            first: vec![0; 257],
            total,
        };
        for &(_, i) in &order {
            let (w, n) = words[i as usize];
            lex.text.push_str(w);
            lex.end.push(lex.text.len() as u32);
            lex.count.push(n);
            lex.first[w.as_bytes()[0].to_ascii_lowercase() as usize + 1] += 1;
        }
        lex.text.shrink_to_fit();
        for b in 1..lex.first.len() {
            lex.first[b] += lex.first[b - 1];
        }
        Ok(lex)
    }

    pub fn len(&self) -> usize {
        self.count.len()
    }

    pub fn is_empty(&self) -> bool {
        self.count.is_empty()
    }

    /// The i-th word (in sorted order).
    pub fn word(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.end[i - 1] as usize };
        &self.text[start..self.end[i] as usize]
    }

    /// The i-th word's share of the out-of-vocabulary tokens (count / total).
    pub fn share(&self, i: usize) -> f32 {
        (self.count[i] as f64 / self.total as f64) as f32
    }

    /// Range of positions whose word starts with `lower_prefix` (lowercase),
    /// case-insensitively.
    pub fn prefix_range(&self, lower_prefix: &str) -> std::ops::Range<usize> {
        let Some(&b) = lower_prefix.as_bytes().first() else {
            return 0..self.len();
        };
        let (lo, hi) = (
            self.first[b as usize] as usize,
            self.first[b as usize + 1] as usize,
        );
        let p = lower_prefix.as_bytes();
        let from = lo
            + partition(hi - lo, |n| {
                cmp_lower(self.word(lo + n), lower_prefix).is_lt()
            });
        let len = partition(hi - from, |n| {
            let w = self.word(from + n).as_bytes();
            w.len() >= p.len() && w[..p.len()].eq_ignore_ascii_case(p)
        });
        from..from + len
    }

    /// The `n` most frequent words starting with `lower_prefix` (positions,
    /// most frequent first, ties by position), and the share of all the
    /// words with that prefix (Σ count / total).
    pub fn best_with_prefix(&self, lower_prefix: &str, n: usize, out: &mut Vec<usize>) -> f32 {
        out.clear();
        let range = self.prefix_range(lower_prefix);
        let mut sum = 0u64;
        for i in range {
            let c = self.count[i];
            sum += c as u64;
            if out.len() == n && self.count[out[n - 1]] >= c {
                continue;
            }
            let at = out.partition_point(|&j| self.count[j] >= c);
            out.insert(at, i);
            out.truncate(n);
        }
        (sum as f64 / self.total as f64) as f32
    }
}

/// The line of `text` at `at`, `word<TAB>count\n`: a word token (ASCII
/// letters, digits, `_`) and a positive count (at most u32::MAX). Returns
/// where the word ends, the count and where the next line starts. One pass
/// over the bytes: reading 100k lines is on the engine's start-up path.
fn parse_line(text: &[u8], at: usize) -> Option<(usize, u32, usize)> {
    let mut i = at;
    while i < text.len() && (text[i].is_ascii_alphanumeric() || text[i] == b'_') {
        i += 1;
    }
    let word = i;
    if word == at || text.get(i) != Some(&b'\t') {
        return None;
    }
    i += 1;
    let mut count = 0u64;
    let digits = i;
    while i < text.len() && text[i].is_ascii_digit() && i - digits < 10 {
        count = count * 10 + (text[i] - b'0') as u64;
        i += 1;
    }
    if text.get(i) != Some(&b'\n') || count == 0 || count > u32::MAX as u64 {
        return None;
    }
    Some((word, count as u32, i + 1))
}

/// Sorts by the key (stable; least significant byte first, 8 passes at most).
fn radix_sort(v: &mut Vec<(u64, u32)>) {
    let mut out = vec![(0u64, 0u32); v.len()];
    for shift in (0..64).step_by(8) {
        let mut start = [0usize; 257];
        for x in v.iter() {
            start[(x.0 >> shift & 0xff) as usize + 1] += 1;
        }
        if start.contains(&v.len()) {
            continue; // every key has the same byte here
        }
        for b in 1..start.len() {
            start[b] += start[b - 1];
        }
        for &x in v.iter() {
            let b = (x.0 >> shift & 0xff) as usize;
            out[start[b]] = x;
            start[b] += 1;
        }
        std::mem::swap(v, &mut out);
    }
}

/// `a` lowercased compared with `b` lowercased (ASCII), without allocating.
fn cmp_lower(a: &str, b: &str) -> Ordering {
    a.bytes()
        .map(|c| c.to_ascii_lowercase())
        .cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "<unk>\t1000\nkubectl\t40\nKubernetes\t30\nkube_proxy\t20\nkubelet\t20\nzebra\t5\nKubelet\t3\n";

    fn words(l: &WordList, r: std::ops::Range<usize>) -> Vec<&str> {
        r.map(|i| l.word(i)).collect()
    }

    #[test]
    fn prefix_ranges_are_case_insensitive() {
        let l = WordList::parse(FILE).unwrap();
        assert_eq!(l.len(), 6);
        assert_eq!(
            words(&l, l.prefix_range("kube")),
            vec!["kube_proxy", "kubectl", "Kubelet", "kubelet", "Kubernetes"]
        );
        assert_eq!(
            words(&l, l.prefix_range("kubel")),
            vec!["Kubelet", "kubelet"]
        );
        assert!(l.prefix_range("kx").is_empty());
        assert!(l.prefix_range("a").is_empty());
        assert_eq!(words(&l, l.prefix_range("zebra")), vec!["zebra"]);
        assert!(l.prefix_range("zebras").is_empty());
    }

    #[test]
    fn best_words_of_a_prefix_by_count() {
        let l = WordList::parse(FILE).unwrap();
        let mut best = Vec::new();
        let share = l.best_with_prefix("ku", 3, &mut best);
        assert_eq!(
            best.iter().map(|&i| l.word(i)).collect::<Vec<_>>(),
            vec!["kubectl", "Kubernetes", "kube_proxy"]
        );
        assert!((share - 113.0 / 1000.0).abs() < 1e-6, "{share}");
        assert!((l.share(best[0]) - 0.04).abs() < 1e-6);
        assert_eq!(l.best_with_prefix("q", 3, &mut best), 0.0);
        assert!(best.is_empty());
    }

    #[test]
    fn rejects_malformed_files() {
        for (text, says) in [
            ("kubectl\t4\n", "line 1"),
            ("<unk>\tmany\nkubectl\t4\n", "line 1"),
            ("<unk>\t100\nkubectl 4\n", "line 2"),
            ("<unk>\t100\nkubectl\t4\nkube ctl\t3\n", "line 3"),
            ("<unk>\t100\nkubectl\t0\n", "line 2"),
            ("<unk>\t100\nkubectl\t4\nkubectl\t3\n", "twice"),
            ("<unk>\t5\nkubectl\t4\nkubelet\t3\n", "more than the total"),
            ("<unk>\t100\nkubectl\t4", "newline"),
        ] {
            let err = format!("{:#}", WordList::parse(text).err().unwrap());
            assert!(err.contains(says), "{text:?}: {err}");
        }
    }
}
