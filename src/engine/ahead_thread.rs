//! A helper thread for model work, on a second backend that shares the
//! weights (`Backend::fork`):
//!
//! * between keystrokes (`Engine::think_ahead`) it steps the model over the
//!   best candidate word and computes the output layer there, so that if the
//!   word is completed the next keystroke finds its distribution ready; then
//!   the same after the most probable punctuation or newline after the word;
//! * when a keystroke needs an output layer now, it computes pieces of it
//!   alongside the engine.
//!
//! Its numbers are the ones the engine's own backend computes (same weights,
//! same kernels, same row pieces), and the engine never waits for it: what
//! the helper has not delivered when needed, the engine computes itself. So
//! answers do not depend on timing, only how long they take.

use super::dist::Dist;
use crate::model::kernels::Simd;
use crate::model::Backend;
use crate::text::vocab::{Vocab, BOS, UNK};
use anyhow::Result;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// Output-layer rows per piece (~8 us on the cpu backend; a multiple of
/// the kernels' row groups, so pieces compute exactly what one call would).
const PIECE_ROWS: usize = 1024;

/// One unit of work: the output layer after the state at `version` of a
/// buffer context stepped over `tokens` (none: the output layer there).
pub(crate) struct AheadJob {
    /// Which buffer context and version it starts from (see `BufferEntry::serial`).
    pub serial: u64,
    pub version: u64,
    pub tokens: Vec<u32>,
    /// The state before the last of `tokens` (with none, the state itself).
    start: Vec<f32>,
    rows: usize,
    /// Per piece: someone (helper or engine) computes it.
    taken: Vec<AtomicBool>,
    cancelled: AtomicBool,
    out: Mutex<Out>,
    /// Signalled when the helper stops working on the job.
    idle: Condvar,
    /// The job after this one and the most probable non-word token after
    /// it, which the helper does next (see `follow_up`).
    next: Mutex<Option<Arc<AheadJob>>>,
    /// The user's rates as the job was posted (`Dist::finish`).
    factors: Option<Arc<Vec<f32>>>,
}

#[derive(Default)]
struct Out {
    /// The state after the last of `tokens` (empty until stepped).
    state: Vec<f32>,
    /// The delivered pieces' logits (allocated by the helper, not the poster).
    logits: Vec<f32>,
    delivered: Vec<bool>,
    /// Everything done by the helper: the finished distribution.
    finished: Option<Dist>,
    /// The most probable non-word token there (for `follow_up`).
    then: Option<u32>,
    helper_idle: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere leaves the data as consistent as any piece copy.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl AheadJob {
    pub fn new(
        serial: u64,
        version: u64,
        tokens: Vec<u32>,
        start: Vec<f32>,
        rows: usize,
        factors: Option<Arc<Vec<f32>>>,
    ) -> Arc<AheadJob> {
        let pieces = rows.div_ceil(PIECE_ROWS);
        Arc::new(AheadJob {
            serial,
            version,
            tokens,
            start,
            rows,
            taken: (0..pieces).map(|_| AtomicBool::new(false)).collect(),
            cancelled: AtomicBool::new(false),
            out: Mutex::new(Out {
                delivered: vec![false; pieces],
                ..Out::default()
            }),
            idle: Condvar::new(),
            next: Mutex::new(None),
            factors,
        })
    }

    /// The job the helper made after this one (see `follow_up`).
    pub fn next(&self) -> Option<Arc<AheadJob>> {
        lock(&self.next).clone()
    }

    /// After a finished one-token job: the same after the most probable
    /// non-word token there (`word,` `word.` `word\n` are the other usual
    /// ends of a word than a blank).
    fn follow_up(&self) -> Option<Arc<AheadJob>> {
        if self.tokens.len() != 1 || self.cancelled.load(Ordering::Relaxed) {
            return None;
        }
        let (then, state) = {
            let out = lock(&self.out);
            (out.then?, out.state.clone())
        };
        let job = AheadJob::new(
            self.serial,
            self.version,
            vec![self.tokens[0], then],
            state,
            self.rows,
            self.factors.clone(),
        );
        *lock(&self.next) = Some(job.clone());
        Some(job)
    }

    fn factors(&self) -> Option<&[f32]> {
        self.factors.as_deref().map(Vec::as_slice)
    }

    fn piece(&self, p: usize) -> std::ops::Range<usize> {
        p * PIECE_ROWS..((p + 1) * PIECE_ROWS).min(self.rows)
    }

    /// The state after the last of `tokens`, if the helper has computed it.
    pub fn stepped(&self) -> Option<Vec<f32>> {
        let out = lock(&self.out);
        (!out.state.is_empty()).then(|| out.state.clone())
    }

    /// The distribution at `state` (the job's own state) into `dist`: the
    /// helper's finished one, or its delivered pieces plus the rest computed
    /// here with `backend` (pieces it is still working on included: no
    /// waiting). The helper stops working on the job.
    pub fn complete(
        &self,
        backend: &mut dyn Backend,
        state: &[f32],
        dist: &mut Dist,
        simd: Simd,
        vocab: &Vocab,
    ) -> Result<()> {
        if let Some(done) = lock(&self.out).finished.take() {
            self.cancelled.store(true, Ordering::Relaxed);
            *dist = done;
            return Ok(());
        }
        dist.probs.resize(self.rows, 0.0);
        let mut helpers = Vec::new();
        for (p, taken) in self.taken.iter().enumerate() {
            let r = self.piece(p);
            if taken.swap(true, Ordering::AcqRel) {
                helpers.push(p);
            } else {
                backend.logits_rows(state, r.clone(), &mut dist.probs[r])?;
            }
        }
        self.cancelled.store(true, Ordering::Relaxed);
        let mut missing = Vec::new();
        {
            let out = lock(&self.out);
            for p in helpers {
                let r = self.piece(p);
                if out.delivered[p] {
                    dist.probs[r.clone()].copy_from_slice(&out.logits[r]);
                } else {
                    missing.push(p);
                }
            }
        }
        for p in missing {
            let r = self.piece(p);
            backend.logits_rows(state, r.clone(), &mut dist.probs[r])?;
        }
        dist.finish(simd, vocab, false, self.factors());
        Ok(())
    }

    /// The helper's side.
    fn work(&self, backend: &mut dyn Backend, simd: Simd, vocab: &Vocab) -> Result<()> {
        if self.cancelled.load(Ordering::Relaxed) {
            return Ok(());
        }
        let mut state = self.start.clone();
        if let Some(&token) = self.tokens.last() {
            backend.step(&self.start, token, &mut state)?;
            lock(&self.out).state = state.clone();
        }
        let mut piece = Vec::new();
        for (p, taken) in self.taken.iter().enumerate() {
            if self.cancelled.load(Ordering::Relaxed) {
                return Ok(());
            }
            if taken.swap(true, Ordering::AcqRel) {
                continue;
            }
            let r = self.piece(p);
            piece.resize(r.len(), 0.0);
            backend.logits_rows(&state, r.clone(), &mut piece)?;
            let mut out = lock(&self.out);
            if out.logits.is_empty() {
                out.logits.resize(self.rows, 0.0);
            }
            out.logits[r].copy_from_slice(&piece);
            out.delivered[p] = true;
        }
        // Every piece was the helper's: finish the distribution too (a
        // job whose distribution is wanted now is finished by the engine).
        if !self.tokens.is_empty() && !self.cancelled.load(Ordering::Relaxed) {
            let mut dist = Dist::empty();
            {
                let out = lock(&self.out);
                if !out.delivered.iter().all(|&d| d) {
                    return Ok(());
                }
                dist.probs.extend_from_slice(&out.logits);
            }
            dist.finish(simd, vocab, true, self.factors());
            let then = (0..dist.probs.len() as u32)
                .filter(|&id| id != UNK && id != BOS && !vocab.is_word(id))
                .max_by(|&a, &b| dist.probs[a as usize].total_cmp(&dist.probs[b as usize]));
            let mut out = lock(&self.out);
            out.finished = Some(dist);
            out.then = then;
        }
        Ok(())
    }

    /// Stops the helper's work on this job (what it delivered stays).
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }
}

struct Slot {
    job: Option<Arc<AheadJob>>,
    quit: bool,
}

struct Shared {
    slot: Mutex<Slot>,
    wake: Condvar,
}

pub(crate) struct AheadThread {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl AheadThread {
    /// Starts the thread with its own `backend` (a fork of the engine's).
    pub fn start(
        mut backend: Box<dyn Backend>,
        vocab: Arc<Vocab>,
        simd: Simd,
    ) -> Option<AheadThread> {
        let shared = Arc::new(Shared {
            slot: Mutex::new(Slot {
                job: None,
                quit: false,
            }),
            wake: Condvar::new(),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("laya-helper".into())
            .spawn(move || {
                low_priority();
                let mut last: Option<Arc<AheadJob>> = None;
                loop {
                    let job = {
                        let mut slot = lock(&s.slot);
                        loop {
                            if slot.quit {
                                return;
                            }
                            match &slot.job {
                                Some(j) if !last.as_ref().is_some_and(|l| Arc::ptr_eq(l, j)) => {
                                    break j.clone()
                                }
                                _ => slot = s.wake.wait(slot).unwrap_or_else(|e| e.into_inner()),
                            }
                        }
                    };
                    // A failing backend leaves the work to the engine, which
                    // reports its own failures.
                    let _ = job.work(&mut *backend, simd, &vocab);
                    if let Some(next) = job.follow_up() {
                        let _ = next.work(&mut *backend, simd, &vocab);
                        lock(&next.out).helper_idle = true;
                    }
                    lock(&job.out).helper_idle = true;
                    job.idle.notify_all();
                    last = Some(job);
                }
            })
            .ok()?;
        Some(AheadThread {
            shared,
            thread: Some(thread),
        })
    }

    /// The job posted last.
    pub fn current(&self) -> Option<Arc<AheadJob>> {
        lock(&self.shared.slot).job.clone()
    }

    /// Hands `job` to the helper, in place of (and cancelling) the previous one.
    pub fn post(&self, job: Arc<AheadJob>) {
        let old = lock(&self.shared.slot).job.replace(job);
        if let Some(old) = old {
            old.cancel();
            if let Some(next) = old.next() {
                next.cancel();
            }
        }
        self.shared.wake.notify_one();
    }

    /// Blocks until the helper is done with the job posted last (tests and
    /// benchmarks that want every piece of work done between keystrokes).
    pub fn wait(&self) {
        if let Some(job) = self.current() {
            let mut out = lock(&job.out);
            while !out.helper_idle {
                out = job.idle.wait(out).unwrap_or_else(|e| e.into_inner());
            }
        }
    }
}

/// Guesswork must not take the CPU from the engine's own thread, or from
/// whatever else the machine runs: on Linux the helper runs at the lowest
/// ordinary priority (nice 19: a 1.5% share against a nice-0 thread when
/// they compete). (At nice 0, on a busy 2-core machine, it stretched the
/// requests it was meant to shorten: RTT p90 ~600 us against ~280 without
/// it.) Not SCHED_IDLE: the kernel counts a CPU that runs only SCHED_IDLE
/// threads as idle when it places a woken thread, so the engine's thread and
/// its client kept landing on the helper's CPU (under ksr.py on a 2-vCPU VM,
/// RTT mean 137-156 against 105-106 us at nice 19).
pub(crate) fn low_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain system call; `who` 0 with PRIO_PROCESS is the
        // calling thread on Linux (threads have their own nice value). A
        // failure leaves the normal priority.
        unsafe {
            libc::setpriority(libc::PRIO_PROCESS, 0, 19);
        }
    }
}

impl Drop for AheadThread {
    fn drop(&mut self) {
        lock(&self.shared.slot).quit = true;
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
