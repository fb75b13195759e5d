//! `laya eval FILE`: the metrics of METRICS.md computed natively, calling the
//! engine directly: same documents, blocks, positions, windows and rules as
//! ../shared/eval/ksr.py (a test checks that both agree on a file).

use super::percentiles::Latencies;
use super::EngineArgs;
use crate::engine::{Engine, Request};
use crate::text::tokenizer::is_word_char;
use serde_json::json;
use std::collections::HashMap;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct EvalArgs {
    /// Text file; a line holding only a form feed separates documents
    pub file: String,
    /// Print the metrics as JSON (ksr.py's names) instead of a table
    #[arg(long)]
    pub json: bool,
    /// Candidates per position
    #[arg(short = 'k', long = "k", default_value_t = 3)]
    pub k: usize,
    /// Most characters of text before the cursor per request
    #[arg(long, default_value_t = 1024)]
    pub window: usize,
    /// Blocks of whole lines of at least this many characters
    #[arg(long, default_value_t = 1000)]
    pub block_chars: usize,
    /// Score every Nth block ...
    #[arg(long, default_value_t = 1)]
    pub every: usize,
    /// ... starting at this one
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Harness settings (ksr.py run's options).
pub(crate) struct Sampling {
    pub k: usize,
    pub window: usize,
    pub block_chars: usize,
    pub every: usize,
    pub offset: usize,
}

impl Sampling {
    fn of(a: &EvalArgs) -> Sampling {
        Sampling {
            k: a.k,
            window: a.window,
            block_chars: a.block_chars,
            every: a.every.max(1),
            offset: a.offset,
        }
    }
}

/// Splits a file into documents at lines holding a single form feed.
pub(crate) fn documents(text: &str) -> Vec<&str> {
    let mut docs = Vec::new();
    let mut start = 0;
    let mut line_start = 0;
    while line_start < text.len() {
        let line_end = text[line_start..]
            .find('\n')
            .map_or(text.len(), |i| line_start + i + 1);
        if &text[line_start..line_end] == "\u{c}\n" {
            docs.push(&text[start..line_start]);
            start = line_end;
        }
        line_start = line_end;
    }
    docs.push(&text[start..]);
    docs.retain(|d| !d.is_empty());
    docs
}

/// Blocks of whole lines of at least `block_chars` characters (char indices).
fn blocks(chars: &[char], block_chars: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let (mut start, mut pos) = (0, 0);
    let n = chars.len();
    while pos < n {
        let end = chars[pos..]
            .iter()
            .position(|&c| c == '\n')
            .map_or(n, |i| pos + i + 1);
        if end - start >= block_chars {
            out.push((start, end));
            start = end;
        }
        pos = end;
    }
    if start < n {
        out.push((start, n));
    }
    out
}

#[derive(Default)]
struct Hits {
    n: u64,
    top1: u64,
    top3: u64,
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| ((a as f64 / b as f64) * 1e4).round() / 1e4)
}

/// Runs the simulation; returns the metrics as ksr.py names them.
pub(crate) fn evaluate(engine: &mut Engine, text: &str, s: &Sampling) -> serde_json::Value {
    const SIMS: [&str; 3] = ["ksr1", "ksr3", "ksr3_rank"];
    let mut keys = [0u64; 3];
    let mut accepted = [0u64; 3];
    let (mut chars_total, mut nonword, mut words_total, mut queries) = (0u64, 0u64, 0u64, 0u64);
    let mut nw = Hits::default();
    let mut comp: [Hits; 3] = Default::default();
    let (mut shown, mut correct, mut queried) = (0u64, 0u64, 0u64);
    let mut lat = Latencies::new();
    let mut cpu = Latencies::new();
    let mut block_idx: i64 = -1;
    let mut docs_scored = 0;
    let (mut rereads, mut steps) = (0u64, 0u64);
    let t_start = Instant::now();
    for (d, doc) in documents(text).into_iter().enumerate() {
        let chars: Vec<char> = doc.chars().collect();
        let mut offs: Vec<usize> = doc.char_indices().map(|(i, _)| i).collect();
        offs.push(doc.len());
        let selected: Vec<(usize, usize)> = blocks(&chars, s.block_chars)
            .into_iter()
            .filter(|_| {
                block_idx += 1;
                block_idx as usize % s.every == s.offset % s.every
            })
            .collect();
        if selected.is_empty() {
            continue;
        }
        docs_scored += 1;
        let n = chars.len();
        let mut wend = vec![n; n + 1];
        for i in (0..n).rev() {
            wend[i] = if is_word_char(chars[i]) {
                wend[i + 1]
            } else {
                i
            };
        }
        let mut first = true;
        for (bs, be) in selected {
            chars_total += (be - bs) as u64;
            nonword += chars[bs..be].iter().filter(|&&c| !is_word_char(c)).count() as u64;
            let mut probes: HashMap<usize, usize> = HashMap::new(); // pos -> 0 (next word) or c
            for p in bs..be {
                if is_word_char(chars[p]) && (p == 0 || !is_word_char(chars[p - 1])) {
                    words_total += 1;
                    probes.insert(p, 0);
                    for c in 1..=3 {
                        if wend[p] - p > c {
                            probes.insert(p + c, c);
                        }
                    }
                }
            }
            let mut tpos = [bs; 3];
            let mut p = bs;
            while p < be {
                let at: Vec<usize> = (0..3).filter(|&t| tpos[t] == p).collect();
                let probe = probes.get(&p).copied();
                if at.is_empty() && probe.is_none() {
                    p += 1;
                    continue;
                }
                let end = wend[p];
                if end > p {
                    let target: String = chars[p..end].iter().collect();
                    if first {
                        engine.forget(d as u64);
                        first = false;
                    }
                    let before = &doc[offs[p.saturating_sub(s.window)]..offs[p]];
                    let c0 = super::bench::thread_cpu_us();
                    let t0 = Instant::now();
                    let pred = engine.predict(&Request {
                        buffer: d as u64,
                        before,
                        filetype: "",
                        kind: Default::default(),
                        k: s.k,
                        seen_last: true,
                    });
                    lat.record_ns(t0.elapsed().as_nanos() as u64);
                    cpu.record_us(super::bench::thread_cpu_us() - c0);
                    let cost = engine.last_cost();
                    rereads += cost.reread as u64;
                    steps += cost.steps as u64;
                    queries += 1;
                    let cands: Vec<&str> = pred
                        .candidates
                        .iter()
                        .filter(|c| c.replace == 0)
                        .map(|c| c.insert.as_str())
                        .take(s.k)
                        .collect();
                    let top1 = cands.first().copied().unwrap_or("");
                    let rank = cands
                        .iter()
                        .take(3)
                        .position(|c| *c == target)
                        .map(|i| i + 1);
                    if let Some(c) = probe {
                        let h = if c == 0 { &mut nw } else { &mut comp[c - 1] };
                        h.n += 1;
                        h.top1 += (rank == Some(1)) as u64;
                        h.top3 += rank.is_some() as u64;
                    }
                    let tlen = end - p;
                    for t in at {
                        let (ok, cost) = match t {
                            0 => {
                                queried += 1;
                                shown += !top1.is_empty() as u64;
                                correct += (top1 == target) as u64;
                                (top1 == target, 1)
                            }
                            1 => (rank.is_some(), 1),
                            _ => (rank.is_some(), rank.unwrap_or(0)),
                        };
                        if ok && cost < tlen {
                            keys[t] += cost as u64;
                            accepted[t] += 1;
                            tpos[t] = end;
                        } else {
                            keys[t] += 1;
                            tpos[t] = p + 1;
                        }
                    }
                } else {
                    for t in at {
                        keys[t] += 1;
                        tpos[t] = p + 1;
                    }
                }
                p += 1;
            }
        }
    }
    // Microseconds to 0.1, 0 when nothing was timed.
    let pct_of = |l: &Latencies, q: f64| -> f64 {
        if l.is_empty() {
            return 0.0;
        }
        (l.us(q) * 10.0).round() / 10.0
    };
    let saved = |k: u64| ratio(chars_total.saturating_sub(k), chars_total);
    let mut m = json!({
        "chars": chars_total,
        "words": words_total,
        "docs_scored": docs_scored,
        "queries": queries,
        "keystrokes": {SIMS[0]: keys[0], SIMS[1]: keys[1], SIMS[2]: keys[2]},
        "accepted": {SIMS[0]: accepted[0], SIMS[1]: accepted[1], SIMS[2]: accepted[2]},
        "KSR@1": saved(keys[0]),
        "KSR@3": saved(keys[1]),
        "KSR@3_rankcost": saved(keys[2]),
        "KSR_max": saved(nonword + words_total),
        "ghost_precision": ratio(correct, shown),
        "ghost_shown_rate": ratio(shown, queried),
        "nextword_top1": ratio(nw.top1, nw.n),
        "nextword_top3": ratio(nw.top3, nw.n),
        "nextword_n": nw.n,
        "wall_s": (t_start.elapsed().as_secs_f64() * 100.0).round() / 100.0,
        "predictor_errors": engine.errors(),
        "model_steps": steps,
        "rereads": rereads,
        "latency_self": {"n": lat.len(), "p50_us": pct_of(&lat, 50.0), "p90_us": pct_of(&lat, 90.0), "p99_us": pct_of(&lat, 99.0)},
        "latency_cpu": {"n": cpu.len(), "p50_us": pct_of(&cpu, 50.0), "p90_us": pct_of(&cpu, 90.0), "p99_us": pct_of(&cpu, 99.0)},
    });
    for (c, h) in comp.iter().enumerate() {
        m[format!("comp{}_top1", c + 1)] = json!(ratio(h.top1, h.n));
        m[format!("comp{}_top3", c + 1)] = json!(ratio(h.top3, h.n));
        m[format!("comp{}_n", c + 1)] = json!(h.n);
    }
    m
}

fn pct(x: &serde_json::Value) -> String {
    x.as_f64()
        .map_or("-".into(), |v| format!("{:.1}", v * 100.0))
}

pub(crate) fn run(a: &EvalArgs) -> i32 {
    let path = &a.file;
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            log::error!("laya eval: {path}: {e}");
            return 1;
        }
    };
    let sampling = Sampling::of(a);
    let mut opts = a.engine.options();
    // Only candidates are scored: the ghost text's continuation is not asked
    // for, and corrections (which replace typed text) are not scored.
    if a.engine.ghost_words.is_none() {
        opts.ghost_words = 0;
    }
    opts.corrections = false;
    let mut engine = Engine::new(opts);
    super::describe("laya", &engine);
    let m = evaluate(&mut engine, &text, &sampling);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&m).unwrap_or_default());
        return 0;
    }
    let info = engine.info();
    println!("| text | model | chars | KSR@1 | KSR@3 | KSR@3 rank-cost | ghost prec. | next top1 | next top3 | comp@1/2/3ch top1 | self p50 / p99 µs |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {} | {} {} | {} | {} | {} | {} | {} | {} | {} | {} / {} / {} | {} / {} |",
        path,
        info.backend,
        info.dtype,
        m["chars"],
        pct(&m["KSR@1"]),
        pct(&m["KSR@3"]),
        pct(&m["KSR@3_rankcost"]),
        pct(&m["ghost_precision"]),
        pct(&m["nextword_top1"]),
        pct(&m["nextword_top3"]),
        pct(&m["comp1_top1"]),
        pct(&m["comp2_top1"]),
        pct(&m["comp3_top1"]),
        m["latency_self"]["p50_us"],
        m["latency_self"]["p99_us"],
    );
    0
}
