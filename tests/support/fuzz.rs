//! Property-based fuzzing of one decoder (proptest): a quick pass of a few
//! hundred cases in `cargo test`, and a long run of LAYA_FUZZ_CASES cases
//! (default 1,000,000) in the `#[ignore]`d test of each fuzz_*.rs file:
//! `LAYA_FUZZ_CASES=1000000 cargo test --release --test fuzz_NAME -- --ignored`
//! (LAYA_FUZZ_SECONDS stops it earlier, saying how many cases ran).
//! Each case checks the decoder's invariants (no panic, an error that names
//! the problem) and that the memory it allocated stays within a bound of
//! its input's size (counted by this binary's allocator, per thread).
//! Included with `#[path = "support/fuzz.rs"] mod fuzz;`.

#![allow(dead_code)] // each fuzz file uses part of it

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Instant;

/// Cases of the quick pass in `cargo test`.
pub const QUICK: u32 = 300;

/// Cases of the long run: LAYA_FUZZ_CASES, default 1,000,000.
pub fn long_cases() -> u32 {
    std::env::var("LAYA_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000)
}

/// Stop a long run after LAYA_FUZZ_SECONDS (unset: when all cases ran); the
/// count reached is printed either way.
fn budget() -> Option<f64> {
    std::env::var("LAYA_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
}

/// Runs `check` on `cases` inputs drawn from `strategy`, in batches of up
/// to 10,000 (a progress line after each batch of a long run). A failing
/// case (an Err or a panic) is shrunk to a smallest input, which the panic
/// shows. Prints the count and the time taken (the long runs' record).
pub fn run<S: Strategy>(
    name: &str,
    cases: u32,
    strategy: S,
    check: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let t0 = Instant::now();
    let mut done = 0u32;
    let mut result = Ok(());
    while done < cases && result.is_ok() {
        if budget().is_some_and(|b| t0.elapsed().as_secs_f64() > b) {
            break;
        }
        let batch = (cases - done).min(10_000);
        let config = Config {
            cases: batch,
            failure_persistence: None,
            max_shrink_iters: 4096,
            ..Config::default()
        };
        result = TestRunner::new(config)
            .run(&strategy, &check)
            .map_err(|e| e.to_string());
        done += batch;
        if cases > QUICK {
            eprintln!(
                "fuzz {name}: {done} cases, {:.0} s",
                t0.elapsed().as_secs_f64()
            );
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    eprintln!(
        "fuzz {name}: {done} cases in {secs:.1} s ({:.0} cases/s), peak {:.1} MB above start in one case, max RSS {:.1} MB: {}",
        done as f64 / secs.max(1e-9),
        MAX_PEAK.with(Cell::get) as f64 / 1e6,
        max_rss_mb(),
        if result.is_ok() { "ok" } else { "FAILED" }
    );
    if let Err(e) = result {
        panic!("fuzz {name}: {e}");
    }
}

/// Any JSON value, nested up to three levels, with object keys drawn from
/// the regex `key` (each fuzz file names keys shaped like its protocol's
/// field names, so that some of them hit real fields).
pub fn json_value(key: &'static str) -> impl Strategy<Value = serde_json::Value> {
    use proptest::prelude::*;
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        any::<String>().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(key, inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// The process's peak resident set (VmHWM), in MB.
fn max_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Runs `f` and returns what it gave and the most bytes it had allocated at
/// once on this thread beyond what was allocated when it started.
pub fn peak_bytes<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let start = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(start));
    let out = f();
    let peak = PEAK.with(Cell::get).saturating_sub(start).max(0) as usize;
    MAX_PEAK.with(|m| m.set(m.get().max(peak)));
    (out, peak)
}

/// Fails the case when `peak` is over `limit` bytes.
pub fn within(peak: usize, limit: usize, what: &str) -> Result<(), TestCaseError> {
    if peak > limit {
        return Err(TestCaseError::fail(format!(
            "{what}: allocated {peak} bytes at once, over the bound of {limit}"
        )));
    }
    Ok(())
}

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
    static MAX_PEAK: Cell<usize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
    });
}

/// The system allocator, counting live bytes per thread.
pub struct Counting;

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counting only touches const-initialised thread-locals (no allocation).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;
