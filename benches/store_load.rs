//! Loading the personal store at start: reading and checking a store of a
//! given size, and handing its counts to the engine (no model). Prints a table.
//!
//!     cargo bench --bench store_load [-- MB...]     (default: 1 10 16)

use laya::engine::{Engine, EngineOptions};
use laya::learn::store::{Forget, Store, DEFAULT_MAX_BYTES};
use laya::learn::Learnt;
use std::time::Instant;

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

fn main() {
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
    println!("| store MB | words | pairs | read + check ms | into engine ms | total ms |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: |");
    for mb in sizes {
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::new(&dir, DEFAULT_MAX_BYTES.max(mb << 20));
        let mut l = Learnt::default();
        let mut chunk = 0;
        while l.encoded_len() < mb << 20 {
            l.add_text(&text(200_000, 150_000 + chunk), chunk as u32);
            chunk += 1;
        }
        store.save(&l, &Forget::Nothing).expect("save");
        let t0 = Instant::now();
        let (loaded, report) = store.load().expect("load");
        let t1 = Instant::now();
        let mut engine = Engine::new(EngineOptions {
            neural: false,
            ..EngineOptions::default()
        });
        let t2 = Instant::now();
        engine.learn_counts(
            loaded.words.iter().map(|(w, e)| (&**w, e.count)),
            loaded
                .pairs
                .iter()
                .map(|((o, c, w), e)| (*o, &**c, &**w, e.count)),
        );
        let t3 = Instant::now();
        let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
        println!(
            "| {:.1} | {} | {} | {:.1} | {:.1} | {:.1} |",
            report.bytes as f64 / (1 << 20) as f64,
            report.words,
            report.pairs,
            ms(t0, t1),
            ms(t2, t3),
            ms(t0, t1) + ms(t2, t3)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
