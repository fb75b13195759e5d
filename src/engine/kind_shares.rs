//! Where the model's words are written (models/FORMAT.md `<stem>.kinds.txt`):
//! for each word, how often the training split has it in prose, in the
//! comments and strings of code, and in the rest of code. The ranking uses
//! it to prefer words of prose in prose, comments and strings
//! (`Tuning::prose_weight`) and, if asked, words of code in code
//! (`Tuning::code_weight`); where the editor does not say what the text is,
//! it tells whether the words before the cursor read as prose or as code
//! (`KindShares::reads_as`).

use super::kind::TextKind;
use crate::text::tokenizer::{tokenize, TokenKind};
use anyhow::{bail, Context, Result};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;

/// Words before the cursor that `KindShares::reads_as` weighs.
const GUESS_WORDS: usize = 40;
/// Bytes before the cursor it looks through for them.
const GUESS_BYTES: usize = 512;

/// For each word (by a 64-bit hash of its text: two of the file's words
/// sharing one would swap shares, which a file of 100k words never does),
/// its shares in 1/255: prose against code, comments and strings against
/// code; and how frequent it is.
pub struct KindShares {
    words: HashMap<u64, Row, BuildHasherDefault<Identity>>,
}

/// What the table keeps of a word.
struct Row {
    /// Shares in 1/255: prose against code, comments and strings against code.
    shares: [u8; 2],
    /// Occurrences per word token of the training split: in prose, and in
    /// all of it.
    freq: [f32; 2],
}

/// The words' hashes are already well mixed.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys")
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// FNV-1a, then a final mix so that the low bits the table uses depend on
/// every byte.
fn hash(word: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in word.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

/// A word's share of one class against code: its rate per word token in
/// the class over the sum of both rates, one occurrence added to each count
/// so that a word never seen in code is not certain prose.
fn share(n: u64, total: u64, code: u64, code_total: u64) -> u8 {
    let a = (n as f64 + 1.0) / total as f64;
    let b = (code as f64 + 1.0) / code_total as f64;
    (255.0 * a / (a + b)).round() as u8
}

impl KindShares {
    /// Reads a kinds file; errors name the file and the line.
    pub fn load(path: &Path) -> Result<KindShares> {
        let bytes = std::fs::read(path)
            .with_context(|| format!("kinds file {}: cannot read", path.display()))?;
        let text = std::str::from_utf8(&bytes)
            .with_context(|| format!("kinds file {}: not UTF-8", path.display()))?;
        KindShares::parse(text).with_context(|| format!("kinds file {}", path.display()))
    }

    /// Builds the table from the file's text (FORMAT.md).
    pub fn parse(text: &str) -> Result<KindShares> {
        if !text.is_empty() && !text.ends_with('\n') {
            bail!("does not end with a newline (a truncated file?)");
        }
        let mut lines = text.lines();
        let totals = lines
            .next()
            .and_then(|l| l.strip_prefix("<unk>\t"))
            .and_then(counts)
            .filter(|t| t.iter().all(|&n| n > 0));
        let Some([prose, note, code]) = totals else {
            bail!("line 1 must be <unk> and three positive counts, tab-separated");
        };
        let mut words =
            HashMap::with_capacity_and_hasher(text.len() / 20, BuildHasherDefault::default());
        let all = (prose + note + code) as f64;
        for (i, line) in lines.enumerate() {
            let row = line.split_once('\t').and_then(|(w, rest)| {
                let ok = !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
                ok.then_some(w).zip(counts(rest))
            });
            let Some((word, [p, n, c])) = row else {
                let head: String = line.chars().take(60).collect();
                bail!(
                    "line {}: expected word and three counts, found {head:?}",
                    i + 2
                );
            };
            let row = Row {
                shares: [share(p, prose, c, code), share(n, note, c, code)],
                freq: [
                    (p as f64 / prose as f64) as f32,
                    ((p + n + c) as f64 / all) as f32,
                ],
            };
            if words.insert(hash(word), row).is_some() {
                bail!("the word {word:?} is listed twice");
            }
        }
        Ok(KindShares { words })
    }

    pub fn len(&self) -> usize {
        self.words.len()
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// How often the training split has `word` (as written) per word token:
    /// in prose for prose, else in all of it. None for a word it lacks.
    pub fn frequency(&self, kind: TextKind, word: &str) -> Option<f32> {
        let column = usize::from(kind != TextKind::Prose);
        self.words.get(&hash(word)).map(|r| r.freq[column])
    }

    /// The share of `word` in text of `kind` against code, in [0, 1]: how
    /// much more often the training split has it in prose (for prose) or in
    /// comments and strings (for those and for code) than in code. A word
    /// proposed with a capital the file has only in small letters is looked
    /// up in small letters; a word it lacks has none.
    pub fn share(&self, kind: TextKind, word: &str) -> Option<f32> {
        let column = usize::from(kind != TextKind::Prose);
        let r = self.words.get(&hash(word)).or_else(|| {
            let lower = word.to_lowercase();
            (lower != word)
                .then(|| self.words.get(&hash(&lower)))
                .flatten()
        })?;
        Some(r.shares[column] as f32 / 255.0)
    }

    /// Whether the text before the cursor reads as code or as prose, where
    /// the editor did not say: by the mean log-odds of its last words'
    /// shares of prose against code (each bounded, so that one rare word
    /// does not decide). Unknown when none of them is in the table.
    pub fn reads_as(&self, before: &str) -> TextKind {
        let mut start = before.len().saturating_sub(GUESS_BYTES);
        while !before.is_char_boundary(start) {
            start += 1;
        }
        let mut sum = 0.0;
        let mut n = 0;
        let words: Vec<&str> = tokenize(&before[start..])
            .filter(|t| t.kind == TokenKind::Word)
            .map(|t| t.text)
            .collect();
        for word in words.iter().rev().take(GUESS_WORDS) {
            if let Some(r) = self.words.get(&hash(word)) {
                let s = (r.shares[0] as f32 / 255.0).clamp(0.05, 0.95);
                sum += (s / (1.0 - s)).ln();
                n += 1;
            }
        }
        match n {
            0 => TextKind::Unknown,
            _ if sum >= 0.0 => TextKind::Prose,
            _ => TextKind::Code,
        }
    }

    /// What a candidate `word` keeps of its worth in text of `kind`: in
    /// prose, comments and strings min(1, 2s)^prose_weight for its share s
    /// of that kind of text (a word at least as frequent there as in code
    /// keeps its score); in code min(1, 2(1 - s))^code_weight for its share
    /// of comments and strings. 1 for a word the file lacks and where the
    /// editor did not say.
    pub fn factor(&self, kind: TextKind, word: &str, prose_weight: f32, code_weight: f32) -> f32 {
        let weight = match kind {
            TextKind::Unknown => return 1.0,
            TextKind::Code => code_weight,
            _ => prose_weight,
        };
        if weight == 0.0 {
            return 1.0;
        }
        let Some(s) = self.share(kind, word) else {
            return 1.0;
        };
        let s = if kind == TextKind::Code { 1.0 - s } else { s };
        (2.0 * s).min(1.0).powf(weight)
    }
}

/// Three tab-separated counts.
fn counts(s: &str) -> Option<[u64; 3]> {
    let mut it = s.split('\t').map(|n| n.parse::<u64>().ok());
    let c = [it.next()??, it.next()??, it.next()??];
    it.next().is_none().then_some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str =
        "<unk>\t1000\t1000\t1000\nweather\t50\t10\t0\nisprint\t0\t5\t80\nthe\t100\t100\t20\n";

    #[test]
    fn shares_come_from_the_counts() {
        let k = KindShares::parse(FILE).unwrap();
        assert_eq!(k.len(), 3);
        let s = |kind, w| k.share(kind, w).unwrap();
        assert!(s(TextKind::Prose, "weather") > 0.95);
        assert!(s(TextKind::Prose, "isprint") < 0.02);
        assert!(s(TextKind::Comment, "isprint") < 0.1);
        assert!(s(TextKind::Prose, "The") > 0.8);
        assert_eq!(k.share(TextKind::Prose, "THEweather"), None);
    }

    #[test]
    fn the_factor_spares_words_as_frequent_in_prose_as_in_code() {
        let k = KindShares::parse(FILE).unwrap();
        let f = |kind, w, p, c| k.factor(kind, w, p, c);
        assert_eq!(f(TextKind::Prose, "weather", 1.0, 0.0), 1.0);
        assert!(f(TextKind::Prose, "isprint", 1.0, 0.0) < 0.05);
        assert_eq!(f(TextKind::Prose, "isprint", 0.0, 0.0), 1.0);
        assert_eq!(f(TextKind::Code, "isprint", 1.0, 0.0), 1.0);
        assert_eq!(f(TextKind::Code, "isprint", 0.0, 1.0), 1.0);
        assert!(f(TextKind::Code, "weather", 0.0, 1.0) < 0.2);
        assert_eq!(f(TextKind::Unknown, "isprint", 1.0, 1.0), 1.0);
        assert_eq!(f(TextKind::String, "unlisted", 1.0, 1.0), 1.0);
    }

    #[test]
    fn bad_files_are_refused_naming_the_line() {
        for (text, says) in [
            ("", "line 1"),
            ("<unk>\t1\t2\n", "line 1"),
            ("<unk>\t0\t2\t3\n", "line 1"),
            ("<unk>\t1\t2\t3\nweather\t1\t2\n", "line 2"),
            ("<unk>\t1\t2\t3\nwea ther\t1\t2\t3\n", "line 2"),
            ("<unk>\t1\t2\t3\nw\t1\t2\t3\nx\t-1\t2\t3\n", "line 3"),
            ("<unk>\t1\t2\t3\nw\t1\t2\t3\nw\t1\t2\t3\n", "twice"),
            ("<unk>\t1\t2\t3\nw\t1\t2\t3", "newline"),
        ] {
            let e = KindShares::parse(text).err().expect(text);
            assert!(format!("{e:#}").contains(says), "{text:?}: {e:#}");
        }
    }

    #[test]
    fn text_reads_as_prose_or_code_by_its_last_words() {
        let k = KindShares::parse(FILE).unwrap();
        assert_eq!(k.reads_as("the weather, the weather "), TextKind::Prose);
        assert_eq!(k.reads_as("if (isprint(c) && isprint(d)) "), TextKind::Code);
        // The last words decide: code after a long stretch of prose.
        let long = format!("{} {}", "weather ".repeat(100), "isprint(c); ".repeat(40));
        assert_eq!(k.reads_as(&long), TextKind::Code);
        assert_eq!(k.reads_as("zq xv "), TextKind::Unknown);
        assert_eq!(k.reads_as(""), TextKind::Unknown);
        // A cut inside a character is moved past it.
        let multi = format!("{}weather", "é".repeat(300));
        assert_eq!(k.reads_as(&multi), TextKind::Prose);
    }
}
