//! The host's memory as `status` reports it: resident size, what the
//! allocator holds (in use and free), and what the engine's caches hold.
//! A resident size that grows while the allocator's bytes in use stay flat
//! is the allocator's overhead; one that grows with the caches is data.

use super::decide::map;
use crate::engine::memory::{CacheMemory, EngineMemory};
use rmpv::Value;

/// Engine snapshots are taken every this many answers (the walk over every
/// cached word costs up to a millisecond with the user's caches full).
pub const SNAPSHOT_EVERY: u64 = 1000;

/// The `memory` table of `status`.
pub fn value(engine: Option<EngineMemory>) -> Value {
    let mut fields = vec![("rss_kb", opt(rss_kb()))];
    if let Some(m) = malloc() {
        fields.push((
            "malloc",
            map(vec![
                ("in_use", Value::from(m.in_use)),
                ("free", Value::from(m.free)),
                ("mmapped", Value::from(m.mmapped)),
            ]),
        ));
    }
    if let Some(e) = engine {
        fields.push(("engine", engine_value(&e)));
    }
    map(fields)
}

fn opt(v: Option<u64>) -> Value {
    v.map_or(Value::Nil, Value::from)
}

fn cache(c: CacheMemory) -> Value {
    map(vec![
        ("entries", Value::from(c.entries as u64)),
        ("bytes", Value::from(c.bytes as u64)),
    ])
}

fn engine_value(e: &EngineMemory) -> Value {
    map(vec![
        ("estimated_bytes", Value::from(e.bytes() as u64)),
        ("buffers", Value::from(e.buffers as u64)),
        ("tokens", cache(e.tokens)),
        ("seen_lines", cache(e.seen_lines)),
        ("buffer_words", cache(e.buffer_words)),
        ("buffer_pairs", cache(e.buffer_pairs)),
        ("user_words", cache(e.user_words)),
        ("user_pairs", cache(e.user_pairs)),
        ("user_rejections", cache(e.user_rejections)),
    ])
}

/// VmRSS of this process in KB (Linux).
fn rss_kb() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Bytes the C allocator holds, over all its arenas.
struct Malloc {
    /// Allocated and not freed (mmapped blocks included).
    in_use: u64,
    /// Freed but kept by the allocator.
    free: u64,
    /// Of `in_use`: large blocks mapped on their own.
    mmapped: u64,
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn malloc() -> Option<Malloc> {
    // SAFETY: mallinfo2 takes no arguments and only reads the allocator's
    // bookkeeping (under its locks).
    let m = unsafe { libc::mallinfo2() };
    Some(Malloc {
        in_use: (m.uordblks + m.hblkhd) as u64,
        free: m.fordblks as u64,
        mmapped: m.hblkhd as u64,
    })
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn malloc() -> Option<Malloc> {
    None
}
