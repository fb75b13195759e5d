//! `laya agree FILE --dtype int8|bf16 [--other PATH]`: how often a quantized
//! model proposes what the f32 model proposes (top-1 equal, top-3 equal as a
//! set), over the positions `laya eval` asks about, typing the file.

use super::eval::documents;
use super::Opts;
use crate::engine::{Engine, EngineOptions, Request};
use crate::text::tokenizer::is_word_char;

pub(crate) fn run(o: &Opts) -> i32 {
    let Some(path) = o.positional.first() else {
        eprintln!("usage: laya agree FILE [--model F32.safetensors] --dtype int8|bf16 [--other PATH] [--positions N] [--window W]");
        return 2;
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("laya agree: {path}: {e}");
            return 1;
        }
    };
    let max_positions = o.num("--positions", 20_000).unwrap_or(20_000);
    let window = o.num("--window", 1024).unwrap_or(1024);
    let reference_opts = EngineOptions {
        dtype: Some("f32".into()),
        ..o.engine.clone()
    };
    let mut other_opts = o.engine.clone();
    if let Some(p) = o.flags.iter().find_map(|f| f.strip_prefix("--other=")) {
        other_opts.model_path = Some(p.into());
        other_opts.dtype = None;
    }
    let mut reference = Engine::new(reference_opts);
    let mut other = Engine::new(other_opts);
    for (name, e) in [("reference", &reference), ("compared", &other)] {
        eprint!("{name}: ");
        super::describe(e);
    }
    if reference.info().model_error.is_some() || other.info().model_error.is_some() {
        eprintln!("laya agree: both models must load");
        return 1;
    }
    let (mut n, mut top1, mut top3, mut next_n, mut next1) = (0u64, 0u64, 0u64, 0u64, 0u64);
    'docs: for (d, doc) in documents(&text).into_iter().enumerate() {
        let chars: Vec<(usize, char)> = doc.char_indices().collect();
        reference.forget(d as u64);
        other.forget(d as u64);
        for p in 0..chars.len() {
            if !is_word_char(chars[p].1) {
                continue;
            }
            let start = chars[p.saturating_sub(window)].0;
            let before = &doc[start..chars[p].0];
            let ask = |e: &mut Engine| -> Vec<String> {
                let r = Request {
                    buffer: d as u64,
                    before,
                    after: "",
                    filetype: "",
                    k: 3,
                    seen_last: false,
                };
                e.predict(&r)
                    .candidates
                    .into_iter()
                    .filter(|c| c.replace == 0)
                    .map(|c| c.insert)
                    .collect()
            };
            let (a, b) = (ask(&mut reference), ask(&mut other));
            n += 1;
            top1 += (a.first() == b.first()) as u64;
            let (mut sa, mut sb) = (a.clone(), b.clone());
            sa.sort();
            sb.sort();
            top3 += (sa == sb) as u64;
            if p == 0 || !is_word_char(chars[p - 1].1) {
                next_n += 1;
                next1 += (a.first() == b.first()) as u64;
            }
            if n as usize >= max_positions {
                break 'docs;
            }
        }
    }
    let pct = |a: u64, b: u64| {
        if b == 0 {
            0.0
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    println!("| compared | positions | top-1 agreement | top-3 agreement (same set) | top-1 agreement at word starts |");
    println!("|---|---|---|---|---|");
    let info = other.info();
    println!(
        "| {} {} vs f32 | {n} | {:.2}% | {:.2}% | {:.2}% ({next_n}) |",
        info.backend,
        info.dtype,
        pct(top1, n),
        pct(top3, n),
        pct(next1, next_n)
    );
    0
}
