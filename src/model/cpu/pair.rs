//! A second thread for long chains of GRU steps (the re-read after a far
//! edit: 64 steps one after the other, each bound by reading `gru.wh`).
//! Each step's hidden units are split in two halves: the calling thread
//! computes the first, the partner the second, each reading only its half
//! of the matrices (which then stays in its own core's cache).
//!
//! The caller never waits for a half the partner has not started: after its
//! own half it claims the other one if the partner has not (asleep, busy, or
//! without a core), and computes it itself. It waits only for a half the
//! partner is computing, and not for long (`LATE`). Both threads compute a
//! half with the same code on the same numbers (`Model::step_units`), so the
//! states do not depend on who computed what, only how fast they come.

use super::{Model, UnitScratch};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A half the partner started and has not delivered this long after the
/// caller finished its own is computed by the caller: the partner lost its
/// core, or shares the caller's.
const LATE: Duration = Duration::from_micros(60);

/// Waiting shorter than this is spinning alone; longer, it yields the core
/// now and then (to a partner placed on the caller's core, or the caller
/// on the partner's).
const SPIN: Duration = Duration::from_micros(10);

/// After this many late halves in a row the rest of the chain is the
/// caller's alone (and the partner sleeps).
const LATE_IN_A_ROW: u32 = 2;

/// What the two threads share. A step is numbered by `generation`; the
/// state to step from and the token are published before it, and the
/// partner's half is read only once `done` holds that step's number.
struct Shared {
    model: Arc<Model>,
    generation: AtomicU64,
    token: AtomicU32,
    /// The state to step from, as f32 bits.
    h: Box<[AtomicU32]>,
    /// The last step whose second half someone claimed (`fetch_max`: the
    /// first to raise it to a step's number computes that half).
    claimed: AtomicU64,
    /// The last step the partner delivered its half of, in `part`.
    done: AtomicU64,
    part: Box<[AtomicU32]>,
    /// A chain is being stepped: the partner waits for its steps awake;
    /// otherwise it sleeps.
    active: AtomicBool,
    /// The CPU the caller ran on when the chain began (-1: unknown).
    caller_cpu: std::sync::atomic::AtomicI32,
    sleeping: AtomicBool,
    quit: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
}

pub(super) struct Partner {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// Late halves in a row in this chain.
    late: u32,
}

fn lock(m: &Mutex<()>) -> MutexGuard<'_, ()> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Partner {
    /// Starts the thread; None when the machine has one core to give or no
    /// thread can be started.
    pub(super) fn start(model: Arc<Model>) -> Option<Partner> {
        if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
            return None;
        }
        let hd = model.wh.cols;
        let atoms = |n: usize| (0..n).map(|_| AtomicU32::new(0)).collect();
        let shared = Arc::new(Shared {
            model,
            generation: AtomicU64::new(0),
            token: AtomicU32::new(0),
            h: atoms(hd),
            claimed: AtomicU64::new(0),
            done: AtomicU64::new(0),
            part: atoms(hd - hd / 2),
            active: AtomicBool::new(false),
            caller_cpu: std::sync::atomic::AtomicI32::new(-1),
            sleeping: AtomicBool::new(false),
            quit: AtomicBool::new(false),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("laya-step-pair".into())
            .spawn(move || partner_loop(&s))
            .ok()?;
        Some(Partner {
            shared,
            thread: Some(thread),
            late: 0,
        })
    }

    /// A chain starts: wakes the partner.
    pub(super) fn begin(&mut self) {
        let s = &*self.shared;
        self.late = 0;
        s.caller_cpu.store(current_cpu(), Ordering::Relaxed);
        s.active.store(true, Ordering::SeqCst);
        if s.sleeping.load(Ordering::SeqCst) {
            let _held = lock(&s.lock);
            s.wake.notify_one();
        }
    }

    /// The chain is over (or the partner cannot keep up): it sleeps.
    pub(super) fn end(&mut self) {
        self.shared.active.store(false, Ordering::SeqCst);
    }

    /// Whether the partner still takes part in this chain.
    pub(super) fn taking_part(&self) -> bool {
        self.shared.active.load(Ordering::Relaxed)
    }

    /// One step of `h` over `token` into `out`, the second half of the
    /// units by the partner when it is there to take it.
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
        for (d, v) in s.h.iter().zip(h) {
            d.store(v.to_bits(), Ordering::Relaxed);
        }
        s.token.store(token, Ordering::Relaxed);
        let g = s.generation.load(Ordering::Relaxed) + 1;
        s.generation.store(g, Ordering::Release);
        model.step_units(scratch, h, token, 0..half, &mut out[..half]);
        let delivered = s.claimed.fetch_max(g, Ordering::AcqRel) >= g && {
            // The partner has it: wait for it, but not for one that lost
            // its core (yielding, for one that shares ours).
            let since = Instant::now();
            let mut spins = 0u32;
            loop {
                if s.done.load(Ordering::Acquire) == g {
                    break true;
                }
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(16) {
                    let waited = since.elapsed();
                    if waited > LATE {
                        break false;
                    }
                    if waited > SPIN {
                        std::thread::yield_now();
                    }
                }
                std::hint::spin_loop();
            }
        };
        if delivered {
            self.late = 0;
            for (o, p) in out[half..].iter_mut().zip(s.part.iter()) {
                *o = f32::from_bits(p.load(Ordering::Relaxed));
            }
        } else {
            model.step_units(scratch, h, token, half..hd, &mut out[half..]);
            if s.claimed.load(Ordering::Relaxed) >= g {
                self.late += 1;
                if self.late >= LATE_IN_A_ROW {
                    self.end();
                }
            }
        }
    }
}

/// The partner: waits for a step, claims its second half, computes it.
fn partner_loop(s: &Shared) {
    let model = &*s.model;
    let hd = model.wh.cols;
    let half = hd / 2;
    let mut scratch = UnitScratch::default();
    let mut h = vec![0.0f32; hd];
    let mut out = vec![0.0f32; hd - half];
    let mut seen = 0u64;
    let mut away_from = -1;
    loop {
        let Some(g) = next_step(s, seen) else {
            return;
        };
        seen = g;
        let caller = s.caller_cpu.load(Ordering::Relaxed);
        if caller != away_from {
            keep_off_cpu(caller);
            away_from = caller;
        }
        if s.claimed.fetch_max(g, Ordering::AcqRel) >= g {
            continue; // the caller took it over
        }
        let token = s.token.load(Ordering::Relaxed);
        for (d, v) in h.iter_mut().zip(s.h.iter()) {
            *d = f32::from_bits(v.load(Ordering::Relaxed));
        }
        if s.generation.load(Ordering::Acquire) != g {
            // The caller gave up on this half and moved on; what was read
            // may mix two steps. (Were it computed, `done` would name a
            // step the caller no longer reads.)
            continue;
        }
        model.step_units(&mut scratch, &h, token, half..hd, &mut out);
        for (d, v) in s.part.iter().zip(&out) {
            d.store(v.to_bits(), Ordering::Relaxed);
        }
        s.done.store(g, Ordering::Release);
    }
}

/// The next step after `seen`: polled for while a chain is being stepped
/// (yielding, so that a partner placed on the caller's core gives it way),
/// slept for between chains. None when the partner is to quit.
fn next_step(s: &Shared, seen: u64) -> Option<u64> {
    let mut spins = 0u32;
    let since = Instant::now();
    loop {
        if s.quit.load(Ordering::Relaxed) {
            return None;
        }
        let g = s.generation.load(Ordering::Acquire);
        if g != seen && s.active.load(Ordering::Relaxed) {
            return Some(g);
        }
        if !s.active.load(Ordering::SeqCst) {
            let held = lock(&s.lock);
            s.sleeping.store(true, Ordering::SeqCst);
            // Checked after saying so: a chain begun before it is seen
            // here, one begun after it finds `sleeping` and wakes us.
            if !s.active.load(Ordering::SeqCst) && !s.quit.load(Ordering::SeqCst) {
                drop(s.wake.wait(held).unwrap_or_else(|e| e.into_inner()));
            }
            s.sleeping.store(false, Ordering::SeqCst);
            continue;
        }
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(16) && since.elapsed() > SPIN {
            std::thread::yield_now();
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
/// where the two halves of a step would take turns instead of running
/// side by side.
fn keep_off_cpu(cpu: i32) {
    #[cfg(target_os = "linux")]
    {
        if cpu < 0 {
            return;
        }
        // SAFETY: cpu_set_t is plain data; the calls read and write the one
        // set we own, for the calling thread (pid 0).
        unsafe {
            let size = std::mem::size_of::<libc::cpu_set_t>();
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, size, &mut set) != 0 {
                return;
            }
            // The process's CPUs, not this thread's last choice.
            let mut all: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(libc::getpid(), size, &mut all) == 0 {
                set = all;
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
