//! Latency percentiles for every program that prints p50 / p99 (`laya bench`,
//! `laya eval`, benches/): one HDR histogram (hdrhistogram), nanosecond
//! values kept to 3 significant digits, so a figure is the same whichever
//! program printed it.

use hdrhistogram::Histogram;
use serde_json::{json, Value};

/// Recorded durations.
pub struct Latencies(Histogram<u64>);

impl Default for Latencies {
    fn default() -> Self {
        Latencies::new()
    }
}

impl Latencies {
    pub fn new() -> Latencies {
        // 1 ns to an hour; anything longer is clamped to an hour.
        Latencies(Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds"))
    }

    pub fn record_ns(&mut self, ns: u64) {
        self.0.saturating_record(ns.max(1));
    }

    pub fn record_us(&mut self, us: f64) {
        self.record_ns((us * 1e3).round().max(0.0) as u64);
    }

    pub fn len(&self) -> u64 {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `q`th percentile (0..=100) in microseconds; NaN when empty.
    pub fn us(&self, q: f64) -> f64 {
        if self.is_empty() {
            return f64::NAN;
        }
        self.0.value_at_percentile(q) as f64 / 1e3
    }

    pub fn max_us(&self) -> f64 {
        if self.is_empty() {
            return f64::NAN;
        }
        self.0.max() as f64 / 1e3
    }

    /// `{n, p50, p90, p99, max}` in microseconds (null when empty).
    pub fn json(&self) -> Value {
        json!({"n": self.len(), "p50": self.us(50.0), "p90": self.us(90.0),
            "p99": self.us(99.0), "max": self.max_us()})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_known_values() {
        let mut l = Latencies::new();
        for us in 1..=1000 {
            l.record_us(us as f64);
        }
        let close = |a: f64, b: f64| (a - b).abs() <= b * 0.002;
        assert!(close(l.us(50.0), 500.0), "{}", l.us(50.0));
        assert!(close(l.us(99.0), 990.0), "{}", l.us(99.0));
        assert!(close(l.max_us(), 1000.0), "{}", l.max_us());
        assert_eq!(l.len(), 1000);
        assert!(Latencies::new().us(50.0).is_nan());
        assert!(Latencies::new().json()["p50"].is_null());
    }
}
