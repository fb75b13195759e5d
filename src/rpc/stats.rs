//! The host's clock and counters, reported by the `status` request and
//! stamped into every answer so benchmarks can split latency into stages.

use crate::engine::memory::EngineMemory;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

static START: OnceLock<Instant> = OnceLock::new();

/// Monotonic microseconds since the host started (the host-side clock).
pub fn now_us() -> u64 {
    START.get_or_init(Instant::now).elapsed().as_micros() as u64
}

/// CLOCK_MONOTONIC (µs) at the host clock's zero, where it can be read:
/// `clock_origin_us + t` is then on the same clock as Neovim's
/// `vim.uv.hrtime()`, so :LayaBench can split a keystroke into stages.
///
/// Brackets one CLOCK_MONOTONIC read between two host-clock reads and keeps
/// the tightest of a few tries, so a preemption between reads cannot skew it.
pub fn clock_origin_us() -> Option<u64> {
    let mut best: Option<(u64, u64)> = None; // (bracket width, origin)
    for _ in 0..5 {
        let before = START.get_or_init(Instant::now).elapsed().as_nanos() as u64;
        let mono = clock_monotonic_ns()?;
        let after = START.get_or_init(Instant::now).elapsed().as_nanos() as u64;
        let width = after - before;
        let origin = mono.checked_sub((before + after) / 2)?;
        if best.is_none_or(|(w, _)| width < w) {
            best = Some((width, origin));
        }
    }
    best.map(|(_, origin)| origin / 1000)
}

#[cfg(target_os = "linux")]
fn clock_monotonic_ns() -> Option<u64> {
    use std::os::raw::{c_int, c_long};
    #[repr(C)]
    struct Timespec {
        tv_sec: c_long,
        tv_nsec: c_long,
    }
    extern "C" {
        fn clock_gettime(clock: c_int, ts: *mut Timespec) -> c_int;
    }
    const CLOCK_MONOTONIC: c_int = 1;
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec we pass it.
    let rc = unsafe { clock_gettime(CLOCK_MONOTONIC, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

#[cfg(not(target_os = "linux"))]
fn clock_monotonic_ns() -> Option<u64> {
    None
}

/// How many recent decision latencies `status` summarises.
const RECENT: usize = 1024;

#[derive(Default)]
pub struct Stats {
    pub predict_received: AtomicU64,
    pub predict_superseded: AtomicU64,
    /// Taken up by the decision thread (answered once the engine is done).
    pub predict_started: AtomicU64,
    pub predict_answered: AtomicU64,
    pub accepted: AtomicU64,
    /// `echo` notifications (the benchmark floor) received and answered.
    pub echo_received: AtomicU64,
    pub echo_answered: AtomicU64,
    /// Answers to the next keys sent (see `Engine::next_keys`).
    pub next_keys_sent: AtomicU64,
    /// Bad messages of every kind, oversized ones included.
    pub bad_input: AtomicU64,
    /// Messages over the size cap, skipped.
    pub oversized: AtomicU64,
    /// Events dropped because the inbox's event queue was full.
    pub events_dropped: AtomicU64,
    pub engine_panics: AtomicU64,
    /// Receive → decision done, µs, newest last.
    recent_us: Mutex<VecDeque<u64>>,
    /// The engine's caches as last measured by the decision thread.
    pub engine_memory: Mutex<Option<EngineMemory>>,
}

/// Percentiles over the recent latencies.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LatencySummary {
    pub n: usize,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    pub last_us: u64,
}

impl Stats {
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    pub fn record_latency(&self, us: u64) {
        let mut r = self.recent_us.lock().unwrap_or_else(|e| e.into_inner());
        if r.len() == RECENT {
            r.pop_front();
        }
        r.push_back(us);
    }

    pub fn latency(&self) -> LatencySummary {
        let r = self.recent_us.lock().unwrap_or_else(|e| e.into_inner());
        let last_us = r.back().copied().unwrap_or(0);
        let mut v: Vec<u64> = r.iter().copied().collect();
        drop(r);
        if v.is_empty() {
            return LatencySummary::default();
        }
        v.sort_unstable();
        let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        LatencySummary {
            n: v.len(),
            p50_us: at(0.5),
            p90_us: at(0.9),
            p99_us: at(0.99),
            max_us: v[v.len() - 1],
            last_us,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_over_recent_latencies() {
        let s = Stats::default();
        assert_eq!(s.latency().n, 0);
        for us in 1..=100 {
            s.record_latency(us);
        }
        let l = s.latency();
        assert_eq!(
            (l.n, l.p50_us, l.p99_us, l.max_us, l.last_us),
            (100, 51, 99, 100, 100)
        );
    }

    #[test]
    fn clock_origin_is_on_the_monotonic_clock() {
        if let (Some(origin), Some(now)) = (clock_origin_us(), clock_monotonic_ns()) {
            let now = now / 1000;
            // origin + now_us() and a fresh CLOCK_MONOTONIC read are the same
            // clock: they differ by the few µs between the reads, not by hours.
            let ours = origin + now_us();
            assert!(ours.abs_diff(now) < 1_000_000, "{ours} vs {now}");
        }
    }

    #[test]
    fn clock_is_monotonic() {
        let a = now_us();
        let b = now_us();
        assert!(b >= a);
    }
}
