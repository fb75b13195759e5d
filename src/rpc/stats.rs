//! The host's clock and counters, reported by the `status` request and
//! stamped into every answer so benchmarks can split latency into stages.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

static START: OnceLock<Instant> = OnceLock::new();

/// Monotonic microseconds since the host started (the host-side clock).
pub fn now_us() -> u64 {
    START.get_or_init(Instant::now).elapsed().as_micros() as u64
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
    pub bad_input: AtomicU64,
    pub engine_panics: AtomicU64,
    /// Receive → decision done, µs, newest last.
    recent_us: Mutex<VecDeque<u64>>,
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
    fn clock_is_monotonic() {
        let a = now_us();
        let b = now_us();
        assert!(b >= a);
    }
}
