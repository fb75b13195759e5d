//! A second thread for the model's work on a keystroke's critical path:
//!
//! * a step: the hidden units split in two halves, the caller computing the
//!   first and the partner the second, each reading only its half of the
//!   matrices (which then stays in its own core's cache). A re-read after a
//!   far edit is 64 steps one after the other, each bound by `gru.wh`;
//! * the output layer: rows in pieces, the caller taking them from the
//!   front and the partner from the back.
//!
//! The caller never waits for work the partner has not started: it takes
//! over whatever is left unclaimed (the partner asleep, busy, or without a
//! core), and waits only for work the partner is doing, and not for long
//! (`LATE`). Both threads compute with the same code on the same numbers
//! (`Model::step_units`, row by row for the output layer), so the results
//! do not depend on who computed what, only how fast they come.
//!
//! Woken by the first task of a keystroke, the partner stays awake for the
//! next one a little while (`LINGER`), then sleeps.

use super::{apply_rows, Model, UnitScratch};
use std::ops::Range;
use std::sync::atomic::{fence, AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Work the partner started and has not delivered this long after the
/// caller finished its own is done by the caller: the partner lost its
/// core, or shares the caller's.
const LATE: Duration = Duration::from_micros(60);

/// After this many late deliveries in a row, the caller works alone until
/// the next chain of steps.
const LATE_IN_A_ROW: u32 = 2;

/// Waiting shorter than this is spinning alone; longer, the waiter yields
/// its core now and then (to a partner placed on the caller's core, or the
/// caller on the partner's).
const SPIN: Duration = Duration::from_micros(10);

/// The partner stays awake this long after its last task: the next task
/// of the same keystroke (a step after an output layer, an output layer
/// after a step) finds it ready.
const LINGER: Duration = Duration::from_micros(150);

/// Output-layer rows per piece (a multiple of the kernels' row groups, so
/// that pieces compute exactly what one call over all the rows would).
const PIECE: usize = 512;

/// The kinds of task.
const STEP: u32 = 0;
const ROWS: u32 = 1;

/// What the two threads share. A task is numbered by `generation`, even
/// numbers only: the caller makes it odd before it writes a task's inputs
/// and the next even number once they are written, and the partner
/// checks after reading them that it is still the task's (a sequence
/// lock), so it never mixes two tasks' inputs. The partner's results are
/// read only once they are marked with that task's number.
struct Shared {
    model: Arc<Model>,
    generation: AtomicU64,
    kind: AtomicU32,
    token: AtomicU32,
    /// The input as f32 bits: the state to step from, or the output
    /// layer's projected state.
    input: Box<[AtomicU32]>,
    /// A step: the last task whose second half someone claimed
    /// (`fetch_max`: the first to raise it to a task's number has it).
    claimed: AtomicU64,
    /// A step: the last task the partner delivered its half of, in `half`.
    done: AtomicU64,
    half: Box<[AtomicU32]>,
    /// The output layer: its rows, and the pieces not yet claimed, the
    /// front for the caller and the back for the partner (packed
    /// `front << 32 | back`).
    rows: AtomicU64,
    ends: AtomicU64,
    /// Per piece, the last task the partner delivered it in, in `logits`.
    piece_done: Box<[AtomicU64]>,
    logits: Box<[AtomicU32]>,
    /// The CPU the caller ran on at its last task (-1: unknown).
    caller_cpu: AtomicI32,
    sleeping: AtomicBool,
    quit: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
}

pub(super) struct Partner {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// Late deliveries in a row.
    late: u32,
}

fn lock(m: &Mutex<()>) -> MutexGuard<'_, ()> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn atoms32(n: usize) -> Box<[AtomicU32]> {
    (0..n).map(|_| AtomicU32::new(0)).collect()
}

fn pack(front: usize, back: usize) -> u64 {
    (front as u64) << 32 | back as u64
}

fn unpack(v: u64) -> (usize, usize) {
    ((v >> 32) as usize, (v & 0xffff_ffff) as usize)
}

fn piece_rows(rows: &Range<usize>, p: usize) -> Range<usize> {
    rows.start + p * PIECE..(rows.start + (p + 1) * PIECE).min(rows.end)
}

impl Partner {
    /// Starts the thread; None when the machine has one core to give or no
    /// thread can be started.
    pub(super) fn start(model: Arc<Model>) -> Option<Partner> {
        if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
            return None;
        }
        let (hd, e, v) = (model.wh.cols, model.proj.rows, model.embed.rows);
        let shared = Arc::new(Shared {
            generation: AtomicU64::new(0),
            kind: AtomicU32::new(STEP),
            token: AtomicU32::new(0),
            input: atoms32(hd.max(e)),
            claimed: AtomicU64::new(0),
            done: AtomicU64::new(0),
            half: atoms32(hd - hd / 2),
            rows: AtomicU64::new(0),
            ends: AtomicU64::new(0),
            piece_done: (0..v.div_ceil(PIECE)).map(|_| AtomicU64::new(0)).collect(),
            logits: atoms32(v),
            caller_cpu: AtomicI32::new(-1),
            sleeping: AtomicBool::new(false),
            quit: AtomicBool::new(false),
            lock: Mutex::new(()),
            wake: Condvar::new(),
            model,
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("laya-model-pair".into())
            .spawn(move || partner_loop(&s))
            .ok()?;
        Some(Partner {
            shared,
            thread: Some(thread),
            late: 0,
        })
    }

    /// Whether the thread still runs (it ends only by a panic, a bug: the
    /// caller then works alone).
    pub(super) fn alive(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Whether the partner is awake (it lingers after a task).
    pub(super) fn awake(&self) -> bool {
        !self.shared.sleeping.load(Ordering::SeqCst)
    }

    /// Wakes the partner for the work that follows (a step is usually
    /// followed by an output layer).
    pub(super) fn wake(&self) {
        let s = &*self.shared;
        if s.sleeping.load(Ordering::SeqCst) {
            let _held = lock(&s.lock);
            s.wake.notify_one();
        }
    }

    /// Whether the partner delivers in time (a chain of steps starts afresh).
    pub(super) fn keeping_up(&self) -> bool {
        self.late < LATE_IN_A_ROW
    }

    pub(super) fn new_chain(&mut self) {
        self.late = 0;
    }

    /// Before a task's inputs are written: the partner, if still on the
    /// last task, sees the change and drops whatever it reads from now on.
    /// Returns the odd number `publish` takes.
    fn begin(&self) -> u64 {
        let s = &*self.shared;
        let odd = s.generation.load(Ordering::Relaxed) + 1;
        s.generation.store(odd, Ordering::Relaxed);
        // Every input written after this is seen only with the odd number.
        fence(Ordering::Release);
        odd
    }

    /// Once a task's inputs are written (after `begin`, whose number is
    /// `odd`): the task's number.
    fn publish(&self, odd: u64, kind: u32) -> u64 {
        pause(Pause::CallerBeforePublish);
        let s = &*self.shared;
        s.kind.store(kind, Ordering::Relaxed);
        s.caller_cpu.store(current_cpu(), Ordering::Relaxed);
        let g = odd + 1;
        s.generation.store(g, Ordering::SeqCst);
        self.wake();
        g
    }

    fn delivered(&mut self, on_time: bool) {
        self.late = if on_time { 0 } else { self.late + 1 };
    }

    /// One step of `h` over `token` into `out`, the second half of the
    /// units by the partner when it takes it in time.
    pub(super) fn step(
        &mut self,
        model: &Model,
        scratch: &mut UnitScratch,
        h: &[f32],
        token: u32,
        out: &mut [f32],
    ) {
        let s = &*self.shared;
        let (hd, half) = (h.len(), h.len() / 2);
        let odd = self.begin();
        for (d, v) in s.input.iter().zip(h) {
            d.store(v.to_bits(), Ordering::Relaxed);
        }
        s.token.store(token, Ordering::Relaxed);
        let g = self.publish(odd, STEP);
        model.step_units(scratch, h, token, 0..half, &mut out[..half]);
        if s.claimed.fetch_max(g, Ordering::AcqRel) < g {
            // Not started: ours.
            model.step_units(scratch, h, token, half..hd, &mut out[half..]);
            return;
        }
        let on_time = wait_for(|| s.done.load(Ordering::Acquire) == g);
        if on_time {
            for (o, p) in out[half..].iter_mut().zip(s.half.iter()) {
                *o = f32::from_bits(p.load(Ordering::Relaxed));
            }
        } else {
            model.step_units(scratch, h, token, half..hd, &mut out[half..]);
        }
        self.delivered(on_time);
    }

    /// The output layer's `rows` at the projected state `y` into `out`
    /// (before the output bias), pieces from the back by the partner.
    pub(super) fn rows(
        &mut self,
        model: &Model,
        y: &[f32],
        yq: (&mut Vec<i16>, &mut Option<f32>),
        rows: Range<usize>,
        out: &mut [f32],
    ) {
        let s = &*self.shared;
        let (map, (q16, xs)) = (model.map(), yq);
        let pieces = rows.len().div_ceil(PIECE);
        let odd = self.begin();
        for (d, v) in s.input.iter().zip(y) {
            d.store(v.to_bits(), Ordering::Relaxed);
        }
        s.rows.store(pack(rows.start, rows.end), Ordering::Relaxed);
        s.ends.store(pack(0, pieces), Ordering::Relaxed);
        let g = self.publish(odd, ROWS);
        let compute = |p: usize, q16: &mut Vec<i16>, xs: &mut Option<f32>, out: &mut [f32]| {
            let r = piece_rows(&rows, p);
            let at = r.start - rows.start..r.end - rows.start;
            apply_rows(model.simd, &model.embed, map, r, y, (q16, xs), &mut out[at]);
        };
        // Ours from the front while any is left.
        let first_theirs = loop {
            let v = s.ends.load(Ordering::Acquire);
            let (front, back) = unpack(v);
            if front >= back {
                break back;
            }
            if s.ends
                .compare_exchange(
                    v,
                    pack(front + 1, back),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
            {
                compute(front, q16, xs, out);
            }
        };
        if first_theirs >= pieces {
            return;
        }
        let on_time = wait_for(|| {
            (first_theirs..pieces).all(|p| s.piece_done[p].load(Ordering::Acquire) == g)
        });
        for p in first_theirs..pieces {
            if s.piece_done[p].load(Ordering::Acquire) == g {
                let r = piece_rows(&rows, p);
                for (o, l) in out[r.start - rows.start..r.end - rows.start]
                    .iter_mut()
                    .zip(&s.logits[r])
                {
                    *o = f32::from_bits(l.load(Ordering::Relaxed));
                }
            } else {
                compute(p, q16, xs, out);
            }
        }
        self.delivered(on_time);
    }
}

/// Waits until `ready`, spinning, then yielding, for at most `LATE`.
fn wait_for(ready: impl Fn() -> bool) -> bool {
    let since = Instant::now();
    let mut spins = 0u32;
    loop {
        if ready() {
            return true;
        }
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(16) {
            let waited = since.elapsed();
            if waited > LATE {
                return ready();
            }
            if waited > SPIN {
                std::thread::yield_now();
            }
        }
        std::hint::spin_loop();
    }
}

/// The partner: waits for a task, does its share.
fn partner_loop(s: &Shared) {
    let model = &*s.model;
    let hd = model.wh.cols;
    let half = hd / 2;
    let mut scratch = UnitScratch::default();
    let mut input = vec![0.0f32; s.input.len()];
    let mut out = vec![0.0f32; (hd - half).max(PIECE)];
    let mut q16 = Vec::new();
    let mut seen = 0u64;
    let mut away_from = -1;
    while let Some(g) = next_task(s, seen) {
        seen = g;
        let caller = s.caller_cpu.load(Ordering::Relaxed);
        if caller != away_from {
            keep_off_cpu(caller);
            away_from = caller;
        }
        let kind = s.kind.load(Ordering::Relaxed);
        if kind == STEP && s.claimed.fetch_max(g, Ordering::AcqRel) >= g {
            continue; // the caller took it over
        }
        let token = s.token.load(Ordering::Relaxed);
        let rows = unpack(s.rows.load(Ordering::Relaxed));
        let rows = rows.0..rows.1;
        for (d, v) in input.iter_mut().zip(s.input.iter()) {
            *d = f32::from_bits(v.load(Ordering::Relaxed));
        }
        // What was read above is seen before the number is read again.
        fence(Ordering::Acquire);
        if s.generation.load(Ordering::Relaxed) != g {
            // The caller moved on (it did this task's work itself); what
            // was read may mix two tasks.
            continue;
        }
        match kind {
            STEP => {
                let out = &mut out[..hd - half];
                model.step_units(&mut scratch, &input[..hd], token, half..hd, out);
                for (d, v) in s.half.iter().zip(out.iter()) {
                    d.store(v.to_bits(), Ordering::Relaxed);
                }
                s.done.store(g, Ordering::Release);
            }
            _ => rows_from_the_back(s, model, &input, &mut q16, rows, g, &mut out),
        }
    }
}

/// The partner's pieces of an output layer, from the back while any is left.
fn rows_from_the_back(
    s: &Shared,
    model: &Model,
    input: &[f32],
    q16: &mut Vec<i16>,
    rows: Range<usize>,
    g: u64,
    out: &mut [f32],
) {
    let y = &input[..model.proj.rows];
    let mut xs = None;
    loop {
        // Ends written for a later task come after its odd number (`begin`),
        // which the acquiring load then shows: such ends are never taken.
        let v = s.ends.load(Ordering::Acquire);
        let (front, back) = unpack(v);
        if front >= back || s.generation.load(Ordering::Relaxed) != g {
            return;
        }
        if s.ends
            .compare_exchange(
                v,
                pack(front, back - 1),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            continue;
        }
        let p = back - 1;
        let r = piece_rows(&rows, p);
        if r.start >= r.end || r.end > s.logits.len() {
            // Not a piece of this task's rows: never, by the sequence lock,
            // and were it ever, the caller computes the piece itself.
            return;
        }
        let piece = &mut out[..r.len()];
        apply_rows(
            model.simd,
            &model.embed,
            model.map(),
            r.clone(),
            y,
            (q16, &mut xs),
            piece,
        );
        for (d, v) in s.logits[r].iter().zip(piece.iter()) {
            d.store(v.to_bits(), Ordering::Relaxed);
        }
        s.piece_done[p].store(g, Ordering::Release);
        pause(Pause::PartnerAfterPiece);
    }
}

/// Where a test may hold a thread up, to play a slow core.
#[derive(Clone, Copy)]
enum Pause {
    CallerBeforePublish,
    PartnerAfterPiece,
}

#[cfg(test)]
static PAUSES_US: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

#[inline]
fn pause(at: Pause) {
    #[cfg(test)]
    {
        let us = PAUSES_US[at as usize].load(Ordering::Relaxed);
        if us > 0 {
            std::thread::sleep(Duration::from_micros(us));
        }
    }
    let _ = at;
}

/// The next task after `seen`: polled for a while after the last one
/// (yielding, so that a partner placed on the caller's core gives it way),
/// then slept for. None when the partner is to quit.
fn next_task(s: &Shared, seen: u64) -> Option<u64> {
    let mut spins = 0u32;
    let mut since = Instant::now();
    loop {
        if s.quit.load(Ordering::Relaxed) {
            return None;
        }
        let g = s.generation.load(Ordering::Acquire);
        if g != seen && g.is_multiple_of(2) {
            return Some(g);
        }
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(16) {
            let idle = since.elapsed();
            if idle > LINGER {
                let held = lock(&s.lock);
                s.sleeping.store(true, Ordering::SeqCst);
                // Checked after saying so: a task published before it is
                // seen here, one after it finds `sleeping` and wakes us.
                if s.generation.load(Ordering::SeqCst) == seen && !s.quit.load(Ordering::SeqCst) {
                    drop(s.wake.wait(held).unwrap_or_else(|e| e.into_inner()));
                }
                s.sleeping.store(false, Ordering::SeqCst);
                since = Instant::now();
            } else if idle > SPIN {
                std::thread::yield_now();
            }
        }
        std::hint::spin_loop();
    }
}

/// The CPU this thread runs on now (-1 where not known).
fn current_cpu() -> i32 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: a plain system call without arguments.
        unsafe { libc::sched_getcpu() }
    }
    #[cfg(not(target_os = "linux"))]
    {
        -1
    }
}

/// Keeps this thread off `cpu` (when the process may run on others): woken
/// by the caller, the scheduler tends to place it on the caller's CPU,
/// where the two shares of a task would take turns instead of running
/// side by side.
fn keep_off_cpu(cpu: i32) {
    #[cfg(target_os = "linux")]
    {
        if cpu < 0 {
            return;
        }
        // SAFETY: cpu_set_t is plain data; the calls read and write sets we
        // own, for the process's and the calling thread's affinity.
        unsafe {
            let size = std::mem::size_of::<libc::cpu_set_t>();
            // The process's CPUs, not this thread's last choice.
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(libc::getpid(), size, &mut set) != 0 {
                return;
            }
            let cpu = cpu as usize;
            if libc::CPU_COUNT(&set) < 2 || !libc::CPU_ISSET(cpu, &set) {
                return;
            }
            libc::CPU_CLR(cpu, &mut set);
            libc::sched_setaffinity(0, size, &set);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cpu;
}

impl Drop for Partner {
    fn drop(&mut self) {
        let s = &*self.shared;
        s.quit.store(true, Ordering::SeqCst);
        {
            let _held = lock(&s.lock);
            s.wake.notify_one();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::CpuBackend;
    use super::*;
    use crate::model::testgen::{numbered_vocab, write_random_weights};
    use crate::model::weights::{WeightType, Weights};
    use crate::model::Backend;
    use crate::text::vocab::Vocab;

    /// The partner a piece behind when the caller, held up, has written the
    /// next task's inputs and not yet published it: what the partner reads
    /// then belongs to no task it may do. It once took the next task's
    /// pieces with the last task's rows, and panicked on a range that ran
    /// backwards (after 140,000 keystrokes of `laya bench`).
    #[test]
    fn a_partner_a_task_behind_never_mixes_two_tasks() {
        if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
            return; // no partner on one core
        }
        let dir = std::env::temp_dir().join(format!("laya-pair-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.safetensors");
        let vocab = numbered_vocab(4100);
        let v = vocab.lines().count();
        // Wide rows: a piece takes long enough for the partner to claim one.
        write_random_weights(&vocab, &path, 512, 32, WeightType::Int8, 3).unwrap();
        let open = || {
            let vocab = Vocab::load(&crate::model::vocab_path_for(&path)).unwrap();
            CpuBackend::new(Weights::open(&path, Some(&vocab)).unwrap(), None)
        };
        let (mut paired, mut single) = (open(), open());
        paired.set_threads(2);
        let mut h = vec![0.25f32; 32];
        paired.step(&h.clone(), 5, &mut h).unwrap();
        assert_eq!(paired.threads(), 2);
        let set = |at: Pause, us: u64| PAUSES_US[at as usize].store(us, Ordering::Relaxed);
        let (small, large) = (0..2048, 0..v);
        let (mut a, mut b) = (vec![0.0; v], vec![0.0; v]);
        for _ in 0..20 {
            // Four pieces, the partner (awake) claiming the last and then
            // held up; the caller goes on to nine pieces, held up before
            // publishing them. A partner reading the nine with the four's
            // rows reaches past them.
            set(Pause::CallerBeforePublish, 0);
            set(Pause::PartnerAfterPiece, 400);
            paired
                .logits_rows(&h, small.clone(), &mut a[..2048])
                .unwrap();
            set(Pause::CallerBeforePublish, 2000);
            paired.logits_rows(&h, large.clone(), &mut a).unwrap();
            set(Pause::PartnerAfterPiece, 0);
            single.logits_rows(&h, large.clone(), &mut b).unwrap();
            assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
        }
        PAUSES_US.iter().for_each(|p| p.store(0, Ordering::Relaxed));
        // A panicking partner may still be unwinding.
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(paired.threads(), 2, "the partner is still there");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
