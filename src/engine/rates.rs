//! The user's rates: how much more or less often the user writes each token
//! than the model expects. The model is run over the user's earlier writing
//! (what is learnt); a token's count there against the sum of the model's
//! probabilities of it at every position (its expected count) says whether
//! this user favours it beyond what the context already explains. The
//! model's distribution is then rescaled by
//! `((count + PRIOR) / (expected + PRIOR))^Tuning::user_rates`, bounded by
//! `Tuning::user_rates_cap` either way. Unlike word counts against the
//! training split's (`Tuning::user_boost`), this asks the model what it
//! expected where the user wrote, so a word common in such contexts is not
//! favoured again. Development split: prose KSR@1 with history +0.18,
//! Python +0.09, Rust +0.02 (BENCHMARKS.md).
//!
//! Measuring costs the model's step and output layer at every learnt token
//! (~0.13 ms on the 2-vCPU machine), so the host does it on a thread of its
//! own (`RatesWorker`, on a forked backend, or the same weights on the cpu
//! backend where the engine's cannot be forked); `laya protocol` and `laya eval`
//! measure at once (`Engine::learn_rates`), which is where the host ends up
//! once its thread is done.

use crate::model::kernels::{softmax, Simd};
use crate::model::Backend;
use crate::text::tokenizer::tokenize;
use crate::text::vocab::{Vocab, BOS};
use anyhow::Result;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};

/// Most tokens of one text measured (the rest of a longer text is learnt
/// as words and pairs only): about 25 s of one core.
pub const MAX_TOKENS: usize = 200_000;
/// Most bytes of text waiting for the host's thread: beyond it a text is
/// learnt as words and pairs only (a large project learnt at once).
pub const MAX_QUEUED_BYTES: usize = 4 << 20;
/// Counts added to both sides of the ratio: a token seen once, or expected
/// a little, moves little.
const PRIOR: f32 = 2.0;
/// Expected counts below this (and no occurrence) are not stored: their
/// factor is within a percent of 1.
pub const MIN_STORED: f32 = 0.05;

/// Token counts of learnt text and the model's expected counts there, by
/// token id (empty: nothing measured).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RateCounts {
    pub counts: Vec<f32>,
    pub expected: Vec<f32>,
}

impl RateCounts {
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &RateCounts) {
        let n = self.counts.len().max(other.counts.len());
        self.counts.resize(n, 0.0);
        self.expected.resize(n, 0.0);
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        for (a, b) in self.expected.iter_mut().zip(&other.expected) {
            *a += b;
        }
    }

    /// One token's counts (from the store).
    pub fn add_token(&mut self, id: u32, count: f32, expected: f32, vocab_size: usize) {
        let i = id as usize;
        if i >= vocab_size {
            return;
        }
        if self.counts.len() < vocab_size {
            self.counts.resize(vocab_size, 0.0);
            self.expected.resize(vocab_size, 0.0);
        }
        self.counts[i] += count;
        self.expected[i] += expected;
    }

    /// The tokens worth storing, as (id, count, expected).
    pub fn entries(&self) -> impl Iterator<Item = (u32, f32, f32)> + '_ {
        self.counts
            .iter()
            .zip(&self.expected)
            .enumerate()
            .filter(|(_, (&c, &e))| c > 0.0 || e >= MIN_STORED)
            .map(|(i, (&c, &e))| (i as u32, c, e))
    }
}

/// Runs the model over `text` from `<s>` (its first MAX_TOKENS tokens):
/// each token's count and the model's expected counts.
pub fn measure(
    backend: &mut dyn Backend,
    vocab: &Vocab,
    simd: Simd,
    text: &str,
) -> Result<RateCounts> {
    measure_unless(backend, vocab, simd, text, &|| false)
}

/// `measure`, given up (Ok of nothing) as soon as `stop` says so.
fn measure_unless(
    backend: &mut dyn Backend,
    vocab: &Vocab,
    simd: Simd,
    text: &str,
    stop: &dyn Fn() -> bool,
) -> Result<RateCounts> {
    let n = backend.vocab_size();
    let hidden = backend.hidden_dim();
    let mut m = RateCounts {
        counts: vec![0.0; n],
        expected: vec![0.0; n],
    };
    let mut h = vec![0.0; hidden];
    backend.step(&vec![0.0; hidden], BOS, &mut h)?;
    let mut next = vec![0.0; hidden];
    let mut probs = vec![0.0; n];
    for (i, t) in tokenize(text).take(MAX_TOKENS).enumerate() {
        if i % 256 == 255 && stop() {
            return Ok(RateCounts::default());
        }
        let id = vocab.id(&t) as usize;
        backend.logits(&h, &mut probs)?;
        softmax(simd, &mut probs);
        for (e, p) in m.expected.iter_mut().zip(&probs) {
            *e += p;
        }
        if let Some(c) = m.counts.get_mut(id) {
            *c += 1.0;
        }
        backend.step(&h, id as u32, &mut next)?;
        std::mem::swap(&mut h, &mut next);
    }
    Ok(m)
}

/// What the engine holds: the sum of everything measured and the factors
/// it gives.
#[derive(Default)]
pub(crate) struct Rates {
    sum: RateCounts,
    /// Shared with the think-ahead thread's jobs (`AheadJob`).
    factors: Option<Arc<Vec<f32>>>,
}

impl Rates {
    pub fn add(&mut self, m: &RateCounts, exponent: f32, cap: f32) {
        if m.is_empty() {
            return;
        }
        self.sum.add(m);
        self.update(exponent, cap);
    }

    fn update(&mut self, exponent: f32, cap: f32) {
        let cap = cap.max(1.0);
        let f = Arc::make_mut(self.factors.get_or_insert_with(Default::default));
        f.clear();
        f.extend(
            self.sum
                .counts
                .iter()
                .zip(&self.sum.expected)
                .map(|(c, e)| {
                    ((c + PRIOR) / (e + PRIOR))
                        .powf(exponent)
                        .clamp(1.0 / cap, cap)
                }),
        );
    }

    /// Tokens measured (their counts' sum).
    pub fn tokens(&self) -> u64 {
        self.sum.counts.iter().map(|&c| c as f64).sum::<f64>() as u64
    }

    /// The model's distribution is multiplied by these (None: nothing learnt).
    pub fn factors(&self) -> Option<&[f32]> {
        self.factors.as_deref().map(Vec::as_slice)
    }

    /// The same, for another thread.
    pub fn shared(&self) -> Option<Arc<Vec<f32>>> {
        self.factors.clone()
    }

    /// Forgets one token's counts.
    pub fn forget(&mut self, id: u32) {
        let i = id as usize;
        if let (Some(c), Some(e)) = (self.sum.counts.get_mut(i), self.sum.expected.get_mut(i)) {
            *c = 0.0;
            *e = 0.0;
        }
        if let Some(f) = self
            .factors
            .as_mut()
            .and_then(|f| Arc::make_mut(f).get_mut(i))
        {
            *f = 1.0;
        }
    }

    pub fn clear(&mut self) {
        *self = Rates::default();
    }
}

/// The host's thread that measures learnt text on a backend of its own
/// (`Backend::fork`, sharing the weights), so that learning never holds up
/// a keystroke. Results are collected with `take`.
pub struct RatesWorker {
    tx: Sender<(u64, String)>,
    rx: Receiver<(u64, Result<RateCounts, String>)>,
    queued: Arc<AtomicUsize>,
    /// Texts posted and not yet answered.
    pending: Mutex<usize>,
    /// Bumped by `discard`: answers to texts posted before are dropped
    /// (and their measuring given up).
    epoch: Arc<AtomicU64>,
}

impl RatesWorker {
    /// Starts the thread; `backend` makes its backend there (None: the
    /// thread measures nothing and every text's answer is empty).
    pub fn start(
        backend: impl FnOnce() -> Option<Box<dyn Backend>> + Send + 'static,
        vocab: Arc<Vocab>,
        simd: Simd,
    ) -> Option<Self> {
        let (tx, jobs) = mpsc::channel::<(u64, String)>();
        let (done, rx) = mpsc::channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let epoch = Arc::new(AtomicU64::new(0));
        let (q, now) = (queued.clone(), epoch.clone());
        // Not joined: when the host goes, a measurement in progress goes
        // with it (its text is learnt as words and pairs already).
        std::thread::Builder::new()
            .name("laya-rates".into())
            .spawn(move || {
                // Like the think-ahead thread, it must not take the CPU
                // from the keystrokes' thread.
                super::ahead_thread::low_priority();
                let mut backend = backend();
                for (posted, text) in jobs {
                    let stale = || now.load(Ordering::Relaxed) != posted;
                    let r = match backend.as_mut() {
                        Some(b) => measure_unless(&mut **b, &vocab, simd, &text, &stale)
                            .map_err(|e| format!("{e:#}")),
                        None => Ok(RateCounts::default()),
                    };
                    q.fetch_sub(text.len(), Ordering::Relaxed);
                    if done.send((posted, r)).is_err() {
                        break;
                    }
                }
            })
            .ok()?;
        Some(RatesWorker {
            tx,
            rx,
            queued,
            pending: Mutex::new(0),
            epoch,
        })
    }

    /// Queues `text`; false when too much is waiting already (the text is
    /// then not measured).
    pub fn post(&self, text: &str) -> bool {
        if text.is_empty() || self.queued.load(Ordering::Relaxed) + text.len() > MAX_QUEUED_BYTES {
            return false;
        }
        // Counted before it is sent: the answer may come before `send` returns.
        self.queued.fetch_add(text.len(), Ordering::Relaxed);
        *self.pending.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        let epoch = self.epoch.load(Ordering::Relaxed);
        if self.tx.send((epoch, text.to_string())).is_err() {
            self.queued.fetch_sub(text.len(), Ordering::Relaxed);
            let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            *p = p.saturating_sub(1);
            return false;
        }
        true
    }

    /// Drops what is being measured and waiting (`:Laya forget`): its
    /// answers never come.
    pub fn discard(&self) {
        self.epoch.fetch_add(1, Ordering::Relaxed);
    }

    /// Bytes of text waiting to be measured (or being measured).
    pub fn waiting_bytes(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }

    /// Whether texts posted are still being measured.
    pub fn busy(&self) -> bool {
        *self.pending.lock().unwrap_or_else(|e| e.into_inner()) > 0
    }

    /// Everything measured since the last call, summed (None: nothing
    /// new); a failed measurement is logged and dropped.
    pub fn take(&self) -> Option<RateCounts> {
        self.collect(|rx| rx.try_recv().ok())
    }

    /// Waits for every posted text (tests, and the host's exit).
    pub fn wait(&self) -> Option<RateCounts> {
        self.collect(|rx| {
            let waiting = *self.pending.lock().unwrap_or_else(|e| e.into_inner());
            (waiting > 0).then(|| rx.recv().ok()).flatten()
        })
    }

    fn collect(
        &self,
        mut next: impl FnMut(&Receiver<Answer>) -> Option<Answer>,
    ) -> Option<RateCounts> {
        let mut sum: Option<RateCounts> = None;
        while let Some((posted, r)) = next(&self.rx) {
            {
                let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
                *p = p.saturating_sub(1);
            }
            if posted != self.epoch.load(Ordering::Relaxed) {
                continue;
            }
            match r {
                Ok(m) => sum.get_or_insert_with(RateCounts::default).add(&m),
                Err(e) => log::warn!("measuring learnt text failed: {e}"),
            }
        }
        sum
    }
}

/// The thread's answer to a text: the epoch it was posted in and its counts.
type Answer = (u64, Result<RateCounts, String>);

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(c: &[f32], e: &[f32]) -> RateCounts {
        RateCounts {
            counts: c.to_vec(),
            expected: e.to_vec(),
        }
    }

    #[test]
    fn factors_follow_written_against_expected_within_the_cap() {
        let mut r = Rates::default();
        assert!(r.factors().is_none(), "nothing learnt, nothing changed");
        // Written 18 times where 2 were expected; 0 where 98 were; as expected.
        r.add(&counts(&[18.0, 0.0, 5.0], &[2.0, 98.0, 5.0]), 0.5, 10.0);
        let f = r.factors().unwrap();
        assert!((f[0] - (20.0f32 / 4.0).sqrt()).abs() < 1e-5, "{f:?}");
        assert!((f[1] - (2.0f32 / 100.0).sqrt()).abs() < 1e-5, "{f:?}");
        assert!((f[2] - 1.0).abs() < 1e-6, "{f:?}");
        r.add(&counts(&[0.0, 0.0, 0.0], &[0.0, 1e6, 0.0]), 0.5, 10.0);
        assert!(
            (r.factors().unwrap()[1] - 0.1).abs() < 1e-6,
            "bounded by the cap"
        );
        r.forget(0);
        assert_eq!(r.factors().unwrap()[0], 1.0);
        r.clear();
        assert!(r.factors().is_none());
    }

    #[test]
    fn the_thread_takes_at_most_its_queue_and_answers_every_text() {
        let vocab = Arc::new(Vocab::from_lines(["<unk>", "<s>", "<nl>", "a"].into_iter()).unwrap());
        // The thread waits for the gate before it measures anything.
        let (open, gate) = mpsc::channel::<()>();
        let w = RatesWorker::start(
            move || {
                let _ = gate.recv();
                None
            },
            vocab,
            Simd::detect(),
        )
        .expect("a thread");
        assert!(w.post(&"a ".repeat(MAX_QUEUED_BYTES / 2)));
        assert!(!w.post(""), "nothing to measure");
        assert!(
            !w.post(&"a ".repeat(MAX_QUEUED_BYTES / 4 + 1)),
            "beyond the queue"
        );
        assert!(w.busy());
        assert!(w.take().is_none(), "nothing measured yet");
        open.send(()).unwrap();
        assert!(
            w.wait().is_some_and(|m| m.is_empty()),
            "no backend, no counts"
        );
        assert!(!w.busy());
        assert!(w.post("a a"), "room again");
        w.discard();
        assert!(w.wait().is_none(), "a discarded text's answer is dropped");
    }

    #[test]
    fn counts_add_up_and_only_telling_entries_are_kept() {
        let mut a = counts(&[1.0, 0.0, 0.0], &[0.5, 0.01, 0.2]);
        a.add(&counts(&[1.0, 0.0], &[0.5, 0.01]));
        assert_eq!(a.counts, vec![2.0, 0.0, 0.0]);
        let kept: Vec<u32> = a.entries().map(|e| e.0).collect();
        assert_eq!(
            kept,
            vec![0, 2],
            "a token neither written nor expected is left out"
        );
        let mut b = RateCounts::default();
        b.add_token(2, 1.0, 0.5, 3);
        b.add_token(9, 1.0, 0.5, 3);
        assert_eq!(
            b.counts,
            vec![0.0, 0.0, 1.0],
            "ids beyond the vocabulary are dropped"
        );
    }
}
