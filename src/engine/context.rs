//! Per-buffer context cache: the tokens of the text before the word being
//! typed, the model state after each of them, and the buffer's word cache.
//! A request is aligned against the cached tokens so that typing inside a word
//! costs no model step, a new word one step, a backspace steps back to a stored
//! state, and anything else at most one bounded re-read of recent context.

use super::bigrams::{keys_before, BigramCache, BigramUndo, Key, ORDERS};
use super::memory::{self, CacheMemory};
use super::word_cache::{InVocab, Undo, WordCache};
use crate::model::kernels::{matvec_f32, Simd};
use crate::model::Backend;
use crate::text::hash::FastSet;
use crate::text::tokenizer::{tokenize, tokenize_tail, Token, TokenKind};
use crate::text::vocab::{Vocab, BOS};
use anyhow::Result;

/// Tokens compared to accept an alignment (the context that shapes the state).
const CHECK: usize = 32;
/// How far back from the end the alignment searches, in tokens.
const SEARCH: usize = 64;
/// The bounded re-read: at most this many recent tokens are stepped afresh.
pub const REREAD: usize = 64;
/// Tokens (and states) kept per buffer; the oldest are dropped beyond it.
/// With room for REREAD more, the states of a 768-wide model take 1 MB.
const KEEP: usize = 256;
/// Tokens of the context `sync` reads, from its end: every alignment it
/// tries compares the last CHECK tokens before at most SEARCH new ones, and
/// a re-read steps the last REREAD, so the tokens before make no difference
/// (a 1 KB context has ~250: tokenizing and hashing them was most of sync).
const TAIL: usize = SEARCH + CHECK + 1;
const _: () = assert!(REREAD <= TAIL);

/// Lines remembered per buffer as learnt (beyond it, re-read lines are learnt
/// again): a hash table of 1.2 MB at the bound.
const MAX_SEEN_LINES: usize = 100_000;

fn in_vocab(word: &str, vocab: Option<&Vocab>) -> InVocab {
    match vocab.map(|v| v.word_id(word)) {
        None => InVocab::Unknown,
        Some(Some(id)) => InVocab::Id(id),
        Some(None) => InVocab::Oov,
    }
}

/// FNV-1a, for token and line identity.
fn fnv(text: &str) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

fn token_hash(t: &Token) -> u64 {
    fnv(t.text)
}

fn line_hash(line: &str) -> u64 {
    fnv(line.trim_end_matches('\r'))
}

/// Model steps taken ahead of time from the end state at `version`: the
/// `(token, state after it)` of each of the next tokens, in order.
pub struct Ahead {
    pub version: u64,
    pub steps: Vec<(u32, Vec<f32>)>,
}

/// One or two token ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    One(u32),
    Two(u32, u32),
}

/// What `sync` did, for statistics and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncCost {
    /// Model steps taken.
    pub steps: usize,
    /// True when the cache could not be aligned and recent context was re-read.
    pub reread: bool,
    /// When the context grew at its end by one or two tokens (and nothing
    /// else changed): the version it grew from and the tokens, so work done
    /// ahead for exactly those steps applies.
    pub appended: Option<(u64, Appended)>,
}

/// The cached context of one buffer.
pub struct BufferContext {
    hashes: Vec<u64>,
    /// The model's token id of each cached token (UNK without a model).
    ids: Vec<u32>,
    /// The text of each cached out-of-vocabulary word token (None: any other).
    oov: Vec<Option<Box<str>>>,
    /// 1 / |state| of the first cached states (filled by `pointer`).
    inv_norms: Vec<f32>,
    /// `pointer`'s scratch: similarity per cached state.
    scores: Vec<f32>,
    /// Per cached token: how to take back its word from `words` if the text
    /// is deleted (None: not a word, or learnt before the cache was re-read),
    /// and its (previous words → word) pairs from `bigrams`.
    undo: Vec<Option<(Undo, [Option<BigramUndo>; ORDERS])>>,
    /// The state after one more token, computed ahead by the engine (ghost
    /// continuation); used if that token is the next one typed.
    pub ahead: Option<Ahead>,
    /// Hashes of lines whose words were learnt, so re-reading text after a
    /// jump does not count it twice.
    seen_lines: FastSet<u64>,
    /// `states[i*H..(i+1)*H]` = model state after tokens[..=i] (after `<s>` and them).
    states: Vec<f32>,
    /// State after `<s>` alone (the start of every re-read).
    start_state: Vec<f32>,
    /// Words learnt from this buffer's text.
    pub words: WordCache,
    /// (previous word → word) pairs learnt from this buffer's text.
    pub bigrams: BigramCache,
    /// The pair keys at the end of the context (the previous one to
    /// `ORDERS` words of the word being typed; see `bigrams::keys_before`).
    pub keys: [Option<Key>; ORDERS],
    /// Bumped whenever the context changes, so derived caches (logits) know.
    pub version: u64,
    /// The context text of the last request (quick check for keystrokes inside a word).
    last_context: String,
    pub last_used: u64,
}

impl BufferContext {
    /// The text before the current word at the last request.
    pub fn last_context(&self) -> &str {
        &self.last_context
    }

    pub fn new() -> BufferContext {
        BufferContext {
            hashes: Vec::new(),
            ids: Vec::new(),
            oov: Vec::new(),
            inv_norms: Vec::new(),
            scores: Vec::new(),
            undo: Vec::new(),
            seen_lines: FastSet::default(),
            ahead: None,
            states: Vec::new(),
            start_state: Vec::new(),
            words: WordCache::new(),
            bigrams: BigramCache::new(),
            keys: [None; ORDERS],
            version: 0,
            last_context: String::new(),
            last_used: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// The cached tokens with their states and undo records, and the learnt
    /// lines' hashes: entries and estimated heap bytes of each.
    pub fn memory(&self) -> (CacheMemory, CacheMemory) {
        // An undo record holds the word (twice: word and pair) and at most
        // one evicted follower; counted as three small strings.
        type UndoEntry = Option<(Undo, [Option<BigramUndo>; ORDERS])>;
        let undo_text: usize = self.undo.iter().flatten().count() * 3 * memory::alloc(8);
        let oov_text: usize = self
            .oov
            .iter()
            .flatten()
            .map(|w| memory::alloc(w.len()))
            .sum();
        let ahead = self.ahead.as_ref().map_or(0, |a| {
            memory::vec::<(u32, Vec<f32>)>(a.steps.capacity())
                + a.steps
                    .iter()
                    .map(|(_, s)| memory::vec::<f32>(s.capacity()))
                    .sum::<usize>()
        });
        let tokens = CacheMemory {
            entries: self.hashes.len(),
            bytes: memory::vec::<u64>(self.hashes.capacity())
                + memory::vec::<u32>(self.ids.capacity())
                + memory::vec::<Option<Box<str>>>(self.oov.capacity())
                + oov_text
                + memory::vec::<f32>(self.inv_norms.capacity())
                + memory::vec::<f32>(self.scores.capacity())
                + memory::vec::<UndoEntry>(self.undo.capacity())
                + undo_text
                + memory::vec::<f32>(self.states.capacity())
                + memory::vec::<f32>(self.start_state.capacity())
                + memory::alloc(self.last_context.capacity())
                + ahead,
        };
        let seen = CacheMemory {
            entries: self.seen_lines.len(),
            bytes: memory::table::<u64, ()>(self.seen_lines.capacity()),
        };
        (tokens, seen)
    }

    /// The model state after the whole cached context (empty without a model).
    pub fn state(&self, hidden: usize) -> &[f32] {
        let n = self.hashes.len();
        if n == 0 || hidden == 0 {
            &self.start_state
        } else {
            &self.states[(n - 1) * hidden..n * hidden]
        }
    }

    /// The neural cache (a pointer over this context): the tokens that
    /// followed earlier states like the current one, each with the share of
    /// `softmax(theta * cos(state, earlier state))` over the cached states.
    /// Document-specific words and phrases the model alone would not expect
    /// again get their probability from here.
    pub fn pointer(
        &mut self,
        simd: Simd,
        hidden: usize,
        (theta, memory): (f32, usize),
        out: &mut Vec<(u32, f32)>,
        out_oov: &mut Vec<(Box<str>, f32)>,
    ) {
        out.clear();
        out_oov.clear();
        let n = self.hashes.len();
        if hidden == 0 || n < 2 || self.states.len() < n * hidden {
            return;
        }
        // Each state's inverse norm, computed once (a one-row product).
        self.inv_norms.truncate(n);
        for i in self.inv_norms.len()..n {
            let s = &self.states[i * hidden..(i + 1) * hidden];
            let mut sq = [0.0f32];
            matvec_f32(simd, s, s, &mut sq);
            self.inv_norms.push(1.0 / sq[0].sqrt().max(1e-6));
        }
        let h = &self.states[(n - 1) * hidden..n * hidden];
        let scale = theta * self.inv_norms[n - 1];
        // The most recent `memory` states before the current one, as the
        // rows of one matrix-vector product.
        let first = (n - 1).saturating_sub(memory);
        self.scores.resize(n - 1 - first, 0.0);
        matvec_f32(
            simd,
            &self.states[first * hidden..(n - 1) * hidden],
            h,
            &mut self.scores,
        );
        for (s, inv) in self.scores.iter_mut().zip(&self.inv_norms[first..]) {
            *s *= scale * inv;
        }
        let max = self
            .scores
            .iter()
            .copied()
            .fold(f32::NEG_INFINITY, f32::max);
        let mut total = 0.0;
        for s in self.scores.iter_mut() {
            *s = (*s - max).exp();
            total += *s;
        }
        // An out-of-vocabulary word votes for itself, not for `<unk>`.
        for ((s, &id), oov) in self
            .scores
            .iter()
            .zip(&self.ids[first + 1..])
            .zip(&self.oov[first + 1..])
        {
            let p = s / total;
            match oov {
                Some(word) => match out_oov.iter_mut().find(|x| x.0 == *word) {
                    Some(x) => x.1 += p,
                    None => out_oov.push((word.clone(), p)),
                },
                None => out.push((id, p)),
            }
        }
        // One entry per token: sorted by id, equal ids summed.
        out.sort_unstable_by_key(|x| x.0);
        out.dedup_by(|next, kept| {
            let same = next.0 == kept.0;
            if same {
                kept.1 += next.1;
            }
            same
        });
    }

    /// Brings the cache in line with `context` (the text before the prefix),
    /// learning new words and stepping the model over new tokens.
    pub fn sync(
        &mut self,
        context: &str,
        vocab: Option<&Vocab>,
        mut model: Option<(&mut dyn Backend, &Vocab)>,
        reread: usize,
    ) -> Result<SyncCost> {
        // Inside a word the context is unchanged (or lost a few characters at
        // its start because the caller's window slid): nothing to do.
        if !self.hashes.is_empty()
            && self.last_context.len() >= context.len()
            && self.last_context.len() - context.len() <= 64
            && self.last_context.ends_with(context)
        {
            return Ok(SyncCost::default());
        }
        let hidden = model.as_ref().map_or(0, |(b, _)| b.hidden_dim());
        if let Some((backend, _)) = model.as_mut() {
            if self.start_state.len() != hidden {
                let zero = vec![0.0; hidden];
                self.start_state = vec![0.0; hidden];
                backend.step(&zero, BOS, &mut self.start_state)?;
            }
        }
        let mut toks: Vec<Token> = tokenize_tail(context, TAIL).collect();
        let mut new: Vec<u64> = toks.iter().map(token_hash).collect();
        let mut cost = SyncCost::default();
        // Steps computed ahead from the current end state.
        let mut ahead = self.ahead.take().filter(|a| a.version == self.version);
        let version = self.version;
        let mut at_end = false;
        let from = match align(&self.hashes, &new) {
            Some((m, j)) if new.len() - m <= REREAD => {
                if j != self.hashes.len() {
                    ahead = None;
                }
                at_end = j == self.hashes.len();
                self.truncate(j, hidden);
                m
            }
            _ => {
                // Unknown or far-away text: learn the words of lines not seen
                // yet, and re-read the tail for the model.
                let cold = self.words.is_empty();
                // The re-read starts from `<s>`, not from the end state the
                // step ahead was taken from.
                ahead = None;
                self.forget_tokens();
                self.learn_lines(context, cold, vocab);
                cost.reread = true;
                // Fewer than CHECK tokens could never be aligned with: every
                // later keystroke would re-read again.
                let reread = reread.max(CHECK);
                if reread > toks.len() {
                    // A longer re-read than the alignment's tail: its tokens.
                    toks = tokenize_tail(context, reread).collect();
                    new = toks.iter().map(token_hash).collect();
                }
                new.len().saturating_sub(reread)
            }
        };
        // Tokens stepped below: at most REREAD, or the tuned re-read.
        let stepping = toks.len() - from;
        for (i, t) in toks.iter().enumerate().skip(from) {
            let undo = self.learn_token(context, t, cost.reread, vocab);
            self.undo.push(undo);
            self.hashes.push(new[i]);
            let id = model
                .as_ref()
                .map_or(crate::text::vocab::UNK, |(_, v)| v.id(t));
            self.ids.push(id);
            self.oov.push(
                (model.is_some() && id == crate::text::vocab::UNK && t.kind == TokenKind::Word)
                    .then(|| t.text.into()),
            );
        }
        if let Some((backend, _)) = model.as_mut() {
            let n = self.hashes.len();
            let first = n - stepping;
            if self.states.capacity() < n * hidden {
                // Room for the most tokens held between two trims (KEEP,
                // then at most REREAD stepped), in one allocation: doubling
                // past KEEP would cost half as much again, a megabyte per
                // buffer, for nothing.
                let most = n.max(KEEP + REREAD.max(stepping)) * hidden;
                self.states.reserve_exact(most - self.states.len());
            }
            self.states.resize(n * hidden, 0.0);
            // The k-th new token can take the k-th step ahead while the
            // tokens so far were the ones stepped.
            let mut taken = 0;
            if let Some(a) = &ahead {
                for (k, (token, state)) in a.steps.iter().enumerate().take(stepping) {
                    if *token != self.ids[first + k] || state.len() != hidden {
                        break;
                    }
                    let at = (first + k) * hidden;
                    self.states[at..at + hidden].copy_from_slice(state);
                    taken += 1;
                }
            }
            let rest = first + taken;
            let (before, after) = self.states.split_at_mut(rest * hidden);
            let prev = match rest {
                0 => self.start_state.as_slice(),
                _ => &before[(rest - 1) * hidden..],
            };
            if let Err(e) = backend.steps(prev, &self.ids[rest..], after) {
                self.forget_tokens();
                self.last_context.clear();
                return Err(e);
            }
            cost.steps += n - rest;
        }
        if let (true, Some((_, v))) = (at_end, model.as_ref()) {
            cost.appended = match &toks[from..] {
                [a] => Some((version, Appended::One(v.id(a)))),
                [a, b] => Some((version, Appended::Two(v.id(a), v.id(b)))),
                _ => None,
            };
        }
        self.keep_recent(hidden);
        self.keys = keys_before(context);
        self.version += 1;
        self.last_context.clear();
        self.last_context.push_str(context);
        Ok(cost)
    }

    /// A new token's word joins the word and bigram caches (not while
    /// re-reading text already learnt), a newline marks its line as seen;
    /// returns how to take the word back out.
    fn learn_token(
        &mut self,
        context: &str,
        t: &Token,
        reread: bool,
        vocab: Option<&Vocab>,
    ) -> Option<(Undo, [Option<BigramUndo>; ORDERS])> {
        match t.kind {
            TokenKind::Word if !reread => {
                let pair = keys_before(&context[..t.start])
                    .map(|k| k.map(|k| self.bigrams.add_undoable(k, t.text)));
                Some((
                    self.words.add_undoable(t.text, in_vocab(t.text, vocab)),
                    pair,
                ))
            }
            TokenKind::Newline => {
                let line_start = context[..t.start].rfind('\n').map_or(0, |n| n + 1);
                self.seen_lines
                    .insert(line_hash(&context[line_start..t.start]));
                None
            }
            _ => None,
        }
    }

    /// Beyond `KEEP` tokens the oldest quarter is dropped.
    fn keep_recent(&mut self, hidden: usize) {
        if self.hashes.len() > KEEP {
            let drop = self.hashes.len() - KEEP + KEEP / 4;
            self.hashes.drain(..drop);
            self.ids.drain(..drop);
            self.oov.drain(..drop);
            self.inv_norms.drain(..drop.min(self.inv_norms.len()));
            self.undo.drain(..drop);
            if hidden > 0 {
                self.states.drain(..drop * hidden);
            }
        }
    }

    /// Drops the tokens after the first `n` (text deleted or replaced),
    /// taking their words back out of the word cache, newest first.
    fn truncate(&mut self, n: usize, hidden: usize) {
        while self.undo.len() > n {
            if let Some(Some((u, pair))) = self.undo.pop() {
                for p in pair.into_iter().rev().flatten() {
                    self.bigrams.undo(p);
                }
                self.words.undo(u);
            }
        }
        self.hashes.truncate(n);
        self.ids.truncate(n);
        self.oov.truncate(n);
        self.inv_norms.truncate(n);
        self.states.truncate(n * hidden);
    }

    /// After a failed keystroke: drops the token cache (the next sync
    /// re-reads its context) and marks derived caches stale, keeping the
    /// words and pairs learnt.
    pub fn recover(&mut self) {
        self.forget_tokens();
        self.ahead = None;
        self.keys = [None; ORDERS];
        self.last_context.clear();
        self.version += 1;
    }

    /// Drops every cached token, keeping what was learnt (the text still exists).
    fn forget_tokens(&mut self) {
        self.undo.clear();
        self.hashes.clear();
        self.ids.clear();
        self.oov.clear();
        self.inv_norms.clear();
        self.states.clear();
    }

    /// Learns the words of the lines of `context` not learnt before (all of
    /// them when `cold`: the buffer is new).
    fn learn_lines(&mut self, context: &str, cold: bool, vocab: Option<&Vocab>) {
        // A long context was probably cut by the caller: its first line is partial.
        let mut lines = context.split_inclusive('\n');
        let mut offset = 0;
        // (Bytes, not a str slice: the last character may be multi-byte.)
        let all_but_last = &context.as_bytes()[..context.len().saturating_sub(1)];
        if context.len() > 256 && all_but_last.contains(&b'\n') {
            offset += lines.next().map_or(0, str::len);
        }
        for line in lines {
            let line_start = offset;
            offset += line.len();
            // The unfinished last line counts as a line of its own: jumping
            // back into the middle of a known line re-learns only its start.
            let text = line.strip_suffix('\n').unwrap_or(line);
            let fresh = cold
                || self.seen_lines.len() >= MAX_SEEN_LINES
                || self.seen_lines.insert(line_hash(text));
            if cold {
                self.seen_lines.insert(line_hash(text));
            }
            if fresh {
                for t in tokenize(line) {
                    if t.kind == TokenKind::Word {
                        self.words.add_undoable(t.text, in_vocab(t.text, vocab));
                        for k in keys_before(&context[..line_start + t.start])
                            .into_iter()
                            .flatten()
                        {
                            self.bigrams.add(k, t.text);
                        }
                    }
                }
            }
        }
    }
}

impl Default for BufferContext {
    fn default() -> Self {
        BufferContext::new()
    }
}

/// Finds how much of `new` the cache `old` already covers: `(m, j)` such that
/// the last `min(m, CHECK)` tokens of `new[..m]` equal those of `old[..j]`,
/// with the least work (tokens dropped `o - j` plus tokens stepped `n - m`),
/// so repetitive text (blank lines, `}` runs) aligns to the nearest match.
/// Only the last SEARCH positions of each are tried.
fn align(old: &[u64], new: &[u64]) -> Option<(usize, usize)> {
    if new.is_empty() {
        return Some((0, 0));
    }
    let (n, o) = (new.len(), old.len());
    for cost in 0..=2 * SEARCH {
        for dropped in cost.saturating_sub(SEARCH)..=cost.min(SEARCH) {
            let stepped = cost - dropped;
            if dropped > o || stepped >= n {
                continue;
            }
            let (m, j) = (n - stepped, o - dropped);
            let len = m.min(CHECK);
            if j >= len && old[j - 1] == new[m - 1] && old[j - len..j] == new[m - len..m] {
                return Some((m, j));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(s: &str) -> Vec<u64> {
        tokenize(s).map(|t| token_hash(&t)).collect()
    }

    #[test]
    fn aligns_appends_slides_and_backspaces() {
        let old = h("a b c d e f");
        assert_eq!(align(&old, &h("a b c d e f")), Some((6, 6)));
        assert_eq!(align(&old, &h("a b c d e f g")), Some((6, 6)));
        assert_eq!(align(&old, &h("a b c d")), Some((4, 4)));
        assert_eq!(align(&[], &h("x")), None);
        assert_eq!(align(&old, &h("")), Some((0, 0)));
        // A window that slid: the new text starts later in the document.
        let long: String = (0..100).map(|i| format!("w{i} ")).collect();
        let old = h(&long);
        let slid: String = (10..101).map(|i| format!("w{i} ")).collect();
        assert_eq!(align(&old, &h(&slid)), Some((90, 100)));
    }

    #[test]
    fn learns_each_word_once() {
        let mut c = BufferContext::new();
        c.sync("alpha beta ", None, None, REREAD).unwrap();
        c.sync("alpha beta ", None, None, REREAD).unwrap();
        c.sync("alpha beta gamma ", None, None, REREAD).unwrap();
        c.sync("alpha beta gamma alpha ", None, None, REREAD)
            .unwrap();
        let mut w = WordCache::new();
        for x in ["alpha", "beta", "gamma", "alpha"] {
            w.add(x);
        }
        for x in ["alpha", "beta", "gamma"] {
            assert_eq!(c.words.prob(x), w.prob(x), "{x}");
        }
    }
}
