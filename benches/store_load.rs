//! Loading the personal store at start, for stores of a given size (no
//! model). Prints a table per run:
//! - the whole decode (`format::decode` into counted words and pairs) and
//!   handing the counts to the engine (`learn_counts`): the first way of
//!   loading, kept as the same-run baseline;
//! - the loading thread's work the second way, kept as a same-run
//!   baseline too: reading, checking and building the user's caches' maps
//!   entry by entry from the file's bytes (`build_history_by_entry`);
//! - the loading thread's work now: reading, checking and building the
//!   frozen arrays in one pass (`build_history`), for the store as written
//!   now (entries in the arrays' order) and as a writer before wrote it
//!   (entries unsorted: the first start after an update);
//! - what the host's start waits for (`Learning::load`: at most its
//!   WAIT_AT_START) and when the history is in use (adopted at a `poll`);
//! - the same in a fresh process that does nothing else (this program run
//!   again with `--load-once DIR`, five times): a host's start, whose heap
//!   no earlier load has warmed.
//!
//! ```text
//! cargo bench --bench store_load [-- MB...]     (default: 1 10 16)
//! LAYA_BENCH_KEEP=1 cargo bench --bench store_load -- 10   (keeps the store; then
//! target/release/deps/store_load-HASH --load-once DIR prints "waited in_use" ms)
//! ```

use laya::engine::{Engine, EngineOptions};
use laya::learn::format::{self, Item};
use laya::learn::learning::{build_history, build_history_by_entry, LearnStatus, Learning};
use laya::learn::store::{Forget, Store, DEFAULT_MAX_BYTES};
use laya::learn::Learnt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Deterministic text of `words` distinct words in sentences.
fn text(bytes: usize, words: usize) -> String {
    let mut rng = laya::model::testgen::Rng::new(0x2545_f491_4f6c_dd1d);
    let mut out = String::with_capacity(bytes + 64);
    while out.len() < bytes {
        let w = rng.below(words);
        // Zipf-like: small numbers often.
        let w = w * w / words;
        out.push_str(&format!("w{w}x "));
        if rng.below(11) == 0 {
            out.push_str(".\n");
        }
    }
    out
}

fn engine() -> Engine {
    Engine::new(EngineOptions {
        neural: false,
        ..EngineOptions::default()
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The first way: the whole decode into `Learnt`, then the engine's caches.
fn load_decoded(store: &Store) -> (Duration, usize, usize) {
    let mut e = engine();
    let t0 = Instant::now();
    let (l, _) = store.load().expect("load");
    e.learn_counts(
        l.words.iter().map(|(w, e)| (&**w, e.count)),
        l.pairs
            .iter()
            .map(|((o, c, w), e)| (*o, &**c, &**w, e.count)),
    );
    (t0.elapsed(), l.words.len(), l.pairs.len())
}

/// The loading thread's work: reading, checking and building with `build`.
fn load_with(
    store: &Store,
    build: fn(&[u8]) -> Result<laya::engine::personal::History, format::DecodeError>,
) -> (Duration, usize) {
    let t0 = Instant::now();
    let (h, _) = store.load_with(build).expect("load");
    let took = t0.elapsed();
    let words = h.expect("a history").words();
    (took, words)
}

/// The store's entries in reverse order (as unsorted as a writer that
/// kept no order left them), with a valid checksum.
fn reversed(bytes: &[u8]) -> Vec<u8> {
    let (mut words, mut pairs) = (Vec::new(), Vec::new());
    format::visit(bytes, |item| {
        let mut out = Vec::new();
        let text = |out: &mut Vec<u8>, s: &str| {
            out.extend_from_slice(&(s.len() as u16).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        };
        let e = match item {
            Item::Word(w, e) => {
                text(&mut out, w);
                e
            }
            Item::Pair(o, c, w, e) => {
                out.push(o);
                text(&mut out, c);
                text(&mut out, w);
                e
            }
            // None in these stores.
            Item::Rejection(..) | Item::Rate(..) => return,
        };
        out.extend_from_slice(&e.count.to_le_bytes());
        out.extend_from_slice(&e.last.to_le_bytes());
        match item {
            Item::Word(..) => words.push(out),
            Item::Pair(..) => pairs.push(out),
            Item::Rejection(..) | Item::Rate(..) => {}
        }
    })
    .expect("a store");
    let mut out = bytes[..format::HEADER_LEN].to_vec();
    for r in words.iter().rev().chain(pairs.iter().rev()) {
        out.extend_from_slice(r);
    }
    // No rejections, no rates.
    out.extend_from_slice(&[0; 8]);
    let sum = format::checksum(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// Now: what the start waits for, and when the history is in use.
fn load_now(store: &Store) -> (Duration, Duration, usize) {
    let mut e = engine();
    let status = Arc::new(Mutex::new(LearnStatus::default()));
    let mut learning = Learning::new(Some(Store::new(store.dir(), usize::MAX)), status.clone());
    let t0 = Instant::now();
    learning.load(&mut e);
    let waited = t0.elapsed();
    while learning.is_loading() {
        std::thread::sleep(Duration::from_micros(200));
        learning.poll(&mut e);
    }
    let words = status.lock().unwrap().words as usize;
    (waited, t0.elapsed(), words)
}

/// A fresh process's load (`--load-once DIR`): "waited in_use" in ms.
fn load_once(dir: &str) {
    let (waited, in_use, words) = load_now(&Store::new(dir, usize::MAX));
    assert!(words > 0, "no words in {dir}");
    println!("{:.1} {:.1}", ms(waited), ms(in_use));
}

/// Five fresh processes loading `store`: (waited, in use) in ms each.
fn load_cold(store: &Store) -> Vec<(f64, f64)> {
    let exe = std::env::current_exe().expect("this program");
    (0..5)
        .map(|_| {
            let out = std::process::Command::new(&exe)
                .arg("--load-once")
                .arg(store.dir())
                .output()
                .expect("run a fresh process");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let text = String::from_utf8_lossy(&out.stdout);
            let v: Vec<f64> = text
                .split_whitespace()
                .map(|x| x.parse().expect("ms"))
                .collect();
            (v[0], v[1])
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--load-once") {
        return load_once(&args[i + 1]);
    }
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![1, 10, 16]
    } else {
        sizes
    };
    let dir = std::env::temp_dir().join(format!("laya-store-bench-{}", std::process::id()));
    println!("| store MB | words | pairs | decode + learn_counts ms (first way) | maps entry by entry ms (second way) | frozen ms | frozen, entries unsorted ms | start waits ms | history in use after ms |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for mb in sizes {
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::new(&dir, DEFAULT_MAX_BYTES.max(mb << 20));
        let mut l = Learnt::default();
        let mut chunk = 0;
        while l.encoded_len() < mb << 20 {
            l.add_text(&text(200_000, 150_000 + chunk), chunk as u32);
            chunk += 1;
        }
        store.save(&l, &Forget::Nothing, &[]).expect("save");
        let bytes = std::fs::metadata(store.path()).expect("store").len();
        let unsorted_dir = dir.with_extension("unsorted");
        let _ = std::fs::remove_dir_all(&unsorted_dir);
        std::fs::create_dir_all(&unsorted_dir).expect("a folder");
        let unsorted = Store::new(&unsorted_dir, usize::MAX);
        let file = std::fs::read(store.path()).expect("store");
        std::fs::write(unsorted.path(), reversed(&file)).expect("write");
        // Alternating, three of each: the spread shows the machine's noise.
        for _ in 0..3 {
            let (first, words, pairs) = load_decoded(&store);
            let (second, second_words) = load_with(&store, build_history_by_entry);
            let (frozen, frozen_words) = load_with(&store, build_history);
            let (frozen_unsorted, unsorted_words) = load_with(&unsorted, build_history);
            let (waited, in_use, adopted_words) = load_now(&store);
            assert!(adopted_words > 0 && adopted_words <= words);
            assert_eq!((second_words, frozen_words), (adopted_words, adopted_words));
            assert_eq!(unsorted_words, adopted_words);
            println!(
                "| {:.1} | {words} | {pairs} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
                bytes as f64 / (1 << 20) as f64,
                ms(first),
                ms(second),
                ms(frozen),
                ms(frozen_unsorted),
                ms(waited),
                ms(in_use),
            );
        }
        let _ = std::fs::remove_dir_all(&unsorted_dir);
        let cold = load_cold(&store);
        let list = |f: fn(&(f64, f64)) -> f64| {
            cold.iter()
                .map(|c| format!("{:.1}", f(c)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        println!(
            "| {:.1} | fresh processes: | | | | | | {} | {} |",
            bytes as f64 / (1 << 20) as f64,
            list(|c| c.0),
            list(|c| c.1)
        );
    }
    // LAYA_BENCH_KEEP=1: the last store stays, for `--load-once DIR` runs
    // on a machine left quiet.
    if std::env::var_os("LAYA_BENCH_KEEP").is_some() {
        eprintln!("store kept in {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
