//! `laya agree FILE --dtype int8|bf16 [--other PATH]`: how often a quantized
//! model proposes what the f32 model proposes (top-1 equal, top-3 equal as a
//! set), over the positions `laya eval` asks about, typing the file.

use super::eval::documents;
use super::EngineArgs;
use crate::engine::{Engine, EngineOptions, Request};
use crate::text::tokenizer::is_word_char;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct AgreeArgs {
    /// Text file to type
    pub file: String,
    /// Compare another model file (in its own dtype) instead of --dtype
    #[arg(long, value_name = "PATH")]
    pub other: Option<PathBuf>,
    /// Most positions compared
    #[arg(long, default_value_t = 20_000)]
    pub positions: usize,
    /// Most characters of text before the cursor per request
    #[arg(long, default_value_t = 1024)]
    pub window: usize,
    /// The model (--model) and the dtype compared with f32 (--dtype)
    #[command(flatten)]
    pub engine: EngineArgs,
}

pub(crate) fn run(a: &AgreeArgs) -> i32 {
    let path = &a.file;
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            log::error!("laya agree: {path}: {e}");
            return 1;
        }
    };
    let (max_positions, window) = (a.positions, a.window);
    let compared = a.engine.options();
    let reference_opts = EngineOptions {
        dtype: Some(crate::model::weights::WeightType::F32),
        ..compared.clone()
    };
    let mut other_opts = compared;
    if let Some(p) = &a.other {
        other_opts.model_path = Some(p.clone());
        other_opts.dtype = None;
    }
    let mut reference = Engine::new(reference_opts);
    let mut other = Engine::new(other_opts);
    for (name, e) in [("reference", &reference), ("compared", &other)] {
        super::describe(name, e);
    }
    if reference.info().model_error.is_some() || other.info().model_error.is_some() {
        log::error!("laya agree: both models must load");
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
                    filetype: "",
                    kind: Default::default(),
                    k: 3,
                    seen_last: false,
                    learn: false,
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
    // The device names what runs (e.g. "cpu f32 of 4-bit group-32 weights"
    // for a 4-bit file the cpu backend runs in f32), where the dtype alone
    // would say only "f32".
    println!(
        "| {} vs f32 | {n} | {:.2}% | {:.2}% | {:.2}% ({next_n}) |",
        other.info().device,
        pct(top1, n),
        pct(top3, n),
        pct(next1, next_n)
    );
    0
}
