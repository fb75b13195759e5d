//! `laya agree FILE --dtype int8|bf16 [--other PATH]`: how often a quantized
//! model proposes what the f32 model proposes (top-1 equal, top-3 equal as a
//! set), over the positions `laya eval` asks about, typing the file.

use super::eval::documents;
use super::EngineArgs;
use crate::engine::{worth, Engine, EngineOptions, Request};
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
    /// Also tell top-1 agreement by how close the reference's runner-up
    /// came to its first candidate (where do the two disagree?)
    #[arg(long)]
    pub margins: bool,
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
    let length_weight = compared.tuning.length_weight;
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
    let mut by_margin = [(0u64, 0u64); MARGIN_BINS.len()];
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
            let ask = |e: &mut Engine| -> Vec<(String, f32)> {
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
                    .map(|c| (c.insert, c.score))
                    .collect()
            };
            let (scored, b) = (ask(&mut reference), ask(&mut other));
            let bin = margin_bin(&scored, length_weight);
            let a: Vec<String> = scored.into_iter().map(|c| c.0).collect();
            let b: Vec<String> = b.into_iter().map(|c| c.0).collect();
            n += 1;
            let same = a.first() == b.first();
            top1 += same as u64;
            by_margin[bin].0 += 1;
            by_margin[bin].1 += same as u64;
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
    if a.margins {
        println!();
        println!("| reference's runner-up / first (worth) | positions | top-1 agreement | of all disagreements |");
        println!("|---|---|---|---|");
        for (i, &(m, agreed)) in by_margin.iter().enumerate() {
            println!(
                "| {} | {m} | {:.2}% | {:.1}% |",
                MARGIN_NAMES[i],
                pct(agreed, m),
                pct(m - agreed, n - top1)
            );
        }
    }
    0
}

/// Upper bounds of the runner-up's worth over the first's (`--margins`;
/// `engine::worth`, what the ranking orders by): the last bin holds
/// near-ties, where either order is almost as good.
const MARGIN_BINS: [f32; 5] = [0.25, 0.5, 0.8, 0.95, f32::INFINITY];
const MARGIN_NAMES: [&str; 5] = [
    "below 0.25 (or alone)",
    "0.25-0.5",
    "0.5-0.8",
    "0.8-0.95",
    "0.95 and above (near-ties)",
];

/// The bin of a reference answer's runner-up/first worth ratio.
fn margin_bin(candidates: &[(String, f32)], length_weight: f32) -> usize {
    let w = |(rest, score): &(String, f32)| worth(*score, rest.len(), length_weight);
    let ratio = match candidates {
        [first, second, ..] if w(first) > 0.0 => w(second) / w(first),
        _ => 0.0,
    };
    MARGIN_BINS
        .iter()
        .position(|&b| ratio < b)
        .unwrap_or(MARGIN_BINS.len() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(rest: &str, score: f32) -> (String, f32) {
        (rest.to_string(), score)
    }

    #[test]
    fn a_lone_candidate_or_a_clear_first_is_no_tie() {
        assert_eq!(margin_bin(&[], 0.5), 0);
        assert_eq!(margin_bin(&[c("ello", 0.9)], 0.5), 0);
        assert_eq!(margin_bin(&[c("ello", 0.9), c("elp", 0.1)], 0.0), 0);
    }

    #[test]
    fn bins_follow_the_runner_ups_worth_over_the_firsts() {
        // By score alone (length_weight 0): 0.3 / 0.5 = 0.6.
        assert_eq!(margin_bin(&[c("ab", 0.5), c("cd", 0.3)], 0.0), 2);
        assert_eq!(margin_bin(&[c("ab", 0.5), c("cd", 0.49)], 0.0), 4);
        assert_eq!(margin_bin(&[c("ab", 0.5), c("cd", 0.45)], 0.0), 3);
        // The same scores, the runner-up's rest longer: its worth, what the
        // ranking orders by, reaches the first's (3^0.5 * 0.3 > 0.5).
        assert_eq!(margin_bin(&[c("ab", 0.5), c("cdef", 0.3)], 0.5), 4);
    }
}
