//! Benchmark of the MLX backend: load and first-call (kernel build) time,
//! step / logits / fused / decision latency p50-p99 per weight type, and the
//! top-1 / top-3 agreement of reduced-precision weights with f32. Prints
//! tables (BENCHMARKS.md records them); no assertions.
//!
//! cargo bench --features mlx --bench mlx_bench -- [--model F.safetensors]
//!   [--vocab F.vocab.txt --text F.txt] [--device gpu|cpu|auto] [--steps N]
//!   [--compute f32,bf16,f16,q8,q4] [--variants] [--reference] [--json OUT]
//!   [--kernel-cache DIR] [--load-only] [--cpu-backend] [--group 32|64|128]
//!
//! --cpu-backend also times the engine's pure-Rust cpu backend on the same
//! file and tokens (f32 view, and the file's own dtype), for the comparison.
//! --group sets q8/q4's quantization group size (default 64, the engine's).

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use laya::model::cpu::CpuBackend;
use laya::model::mlx::{self, MlxBackend, MlxCompute, MlxDevice, MlxOptions};
use laya::model::reference::{self, OwnedWeights};
use laya::model::weights::{WeightType, Weights};
use laya::model::{vocab_path_for, Backend};
use laya::text::vocab::Vocab;
use safetensors::{Dtype, SafeTensors};

struct Args {
    model: Option<PathBuf>,
    vocab: Option<PathBuf>,
    text: Option<PathBuf>,
    device: MlxDevice,
    steps: usize,
    computes: Vec<MlxCompute>,
    variants: bool,
    reference: bool,
    cpu_backend: bool,
    json: Option<PathBuf>,
    kernel_cache: Option<PathBuf>,
    load_only: bool,
    group_size: u32,
}

fn parse_args() -> Result<Args> {
    let mut a = Args {
        model: None,
        vocab: None,
        text: None,
        device: MlxDevice::Auto,
        steps: 3000,
        computes: vec![
            MlxCompute::F32,
            MlxCompute::Bf16,
            MlxCompute::F16,
            MlxCompute::Q8,
            MlxCompute::Q4,
        ],
        variants: false,
        reference: false,
        cpu_backend: false,
        json: None,
        kernel_cache: None,
        load_only: false,
        group_size: 64,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--model" => a.model = Some(val()?.into()),
            "--vocab" => a.vocab = Some(val()?.into()),
            "--text" => a.text = Some(val()?.into()),
            "--steps" => a.steps = val()?.parse()?,
            "--json" => a.json = Some(val()?.into()),
            "--kernel-cache" => a.kernel_cache = Some(val()?.into()),
            "--device" => {
                a.device = match val()?.as_str() {
                    "gpu" => MlxDevice::Gpu,
                    "cpu" => MlxDevice::Cpu,
                    "auto" => MlxDevice::Auto,
                    d => bail!("unknown device {d}"),
                }
            }
            "--compute" => {
                a.computes = val()?
                    .split(',')
                    .map(MlxCompute::parse)
                    .collect::<Result<_>>()?
            }
            "--variants" => a.variants = true,
            "--reference" => a.reference = true,
            "--cpu-backend" => a.cpu_backend = true,
            "--load-only" => a.load_only = true,
            "--group" => a.group_size = val()?.parse()?,
            "--bench" => {} // added by `cargo bench`
            f => bail!("unknown argument {f}"),
        }
    }
    Ok(a)
}

/// Reads a models/FORMAT.md weights file (f32, bf16 or int8) as f32.
fn load_weights(path: &PathBuf) -> Result<OwnedWeights> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let st =
        SafeTensors::deserialize(&bytes).with_context(|| format!("parsing {}", path.display()))?;
    let get = |name: &str| -> Result<(Vec<usize>, Vec<f32>)> {
        let t = st
            .tensor(name)
            .with_context(|| format!("{}: tensor {name}", path.display()))?;
        let d = t.data();
        let vals: Vec<f32> = match t.dtype() {
            Dtype::F32 => d
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            Dtype::BF16 => d
                .chunks_exact(2)
                .map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32())
                .collect(),
            Dtype::I8 => {
                let scale = st.tensor(&format!("{name}.scale"))?;
                let s: Vec<f32> = scale
                    .data()
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect();
                let cols = t.shape()[1];
                d.iter()
                    .enumerate()
                    .map(|(i, &q)| q as i8 as f32 * s[i / cols])
                    .collect()
            }
            other => bail!("{name}: unsupported dtype {other:?}"),
        };
        Ok((t.shape().to_vec(), vals))
    };
    let (es, embed_w) = get("embed")?;
    let (ws, gru_wh) = get("gru.wh")?;
    Ok(OwnedWeights {
        vocab: es[0],
        embed: es[1],
        hidden: ws[1],
        embed_w,
        gru_wx: get("gru.wx")?.1,
        gru_wh,
        gru_b: get("gru.b")?.1,
        gru_bhn: get("gru.bhn")?.1,
        proj_w: get("proj.w")?.1,
        proj_b: get("proj.b")?.1,
        out_b: get("out.b")?.1,
    })
}

/// models/FORMAT.md's laya-tok-1, enough for a benchmark token stream.
fn tokenize(text: &str, vocab: &HashMap<String, u32>) -> Vec<u32> {
    let id = |s: &str| *vocab.get(s).unwrap_or(&0);
    let mut out = vec![1];
    let mut word = String::new();
    for ch in text.chars() {
        if ch.is_ascii_alphanumeric() || ch == '_' {
            word.push(ch);
            continue;
        }
        if !word.is_empty() {
            out.push(id(&word));
            word.clear();
        }
        match ch {
            '\n' => out.push(id("<nl>")),
            ' ' | '\t' | '\r' | '\x0b' | '\x0c' => {}
            c => out.push(id(c.encode_utf8(&mut [0; 4]))),
        }
    }
    if !word.is_empty() {
        out.push(id(&word));
    }
    out
}

fn token_stream(a: &Args, vocab_size: usize) -> Result<(Vec<u32>, String)> {
    if let (Some(v), Some(t)) = (&a.vocab, &a.text) {
        let vocab: HashMap<String, u32> = std::fs::read_to_string(v)?
            .lines()
            .enumerate()
            .map(|(i, w)| (w.to_string(), i as u32))
            .collect();
        let toks = tokenize(&std::fs::read_to_string(t)?, &vocab);
        let toks: Vec<u32> = toks
            .into_iter()
            .filter(|&t| (t as usize) < vocab_size)
            .collect();
        return Ok((toks, format!("text {}", t.display())));
    }
    let mut rng = laya::model::testgen::Rng::new(0x9E37_79B9_7F4A_7C15);
    let mut out = vec![1u32];
    while out.len() < a.steps {
        out.push(rng.below(vocab_size) as u32);
    }
    Ok((out, "random token ids".into()))
}

#[derive(Default)]
struct Stats(laya::cli::percentiles::Latencies);

impl Stats {
    fn pct(&self, p: f64) -> f64 {
        if p >= 1.0 {
            self.0.max_us()
        } else {
            self.0.us(p * 100.0)
        }
    }
    fn json(&self) -> serde_json::Value {
        serde_json::json!({"n": self.0.len(), "p50_us": self.pct(0.5), "p90_us": self.pct(0.9),
            "p99_us": self.pct(0.99), "max_us": self.pct(1.0)})
    }
}

fn time_us<F: FnMut() -> Result<()>>(mut f: F) -> Result<f64> {
    let t = Instant::now();
    f()?;
    Ok(t.elapsed().as_secs_f64() * 1e6)
}

/// The top-8 ids, as the engine's ranking needs them (host-side selection).
fn top8(logits: &[f32]) -> [u32; 8] {
    let mut best = [(f32::NEG_INFINITY, 0u32); 8];
    for (i, &v) in logits.iter().enumerate() {
        if v > best[7].0 {
            let mut j = 7;
            while j > 0 && best[j - 1].0 < v {
                best[j] = best[j - 1];
                j -= 1;
            }
            best[j] = (v, i as u32);
        }
    }
    best.map(|b| b.1)
}

/// One timed call: (backend, state in, token, state out).
type StepFn<'a> = dyn FnMut(&mut MlxBackend, &[f32], u32, &mut [f32]) -> Result<()> + 'a;

struct Row {
    label: String,
    stats: Stats,
}

fn print_rows(rows: &[Row]) {
    println!("| path | n | p50 us | p90 us | p99 us | max us |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for r in rows {
        let s = &r.stats;
        println!(
            "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} |",
            r.label,
            s.0.len(),
            s.pct(0.5),
            s.pct(0.9),
            s.pct(0.99),
            s.pct(1.0)
        );
    }
}

fn main() -> Result<()> {
    let a = parse_args()?;
    let t_read = Instant::now();
    let (w, model_name) = match &a.model {
        Some(p) => (load_weights(p)?, p.display().to_string()),
        None => (
            OwnedWeights::synthetic(16384, 256, 512, 7),
            "synthetic 16384/256/512".into(),
        ),
    };
    let read_ms = t_read.elapsed().as_secs_f64() * 1e3;
    let (tokens, token_src) = token_stream(&a, w.vocab)?;
    let n = a.steps.min(tokens.len()).max(2);
    eprintln!(
        "mlx {} | model {model_name} ({read_ms:.0} ms to read) | {n} steps over {token_src}",
        mlx::version()
    );
    let mut json = serde_json::Map::new();
    json.insert("mlx_version".into(), mlx::version().into());
    json.insert("model".into(), model_name.clone().into());
    json.insert("steps".into(), n.into());

    if a.load_only {
        let l = load(&a, &w, a.computes[0])?;
        println!(
            "| {} | {} | load {:.1} ms | first calls {:.1} ms | next calls {:.2} ms |",
            l.b.device(),
            a.kernel_cache
                .as_ref()
                .map_or("default cache".into(), |p| p.display().to_string()),
            l.load_ms,
            l.first,
            l.second
        );
        json.insert("load".into(), serde_json::json!({"device": l.b.device(), "load_ms": l.load_ms, "first_calls_ms": l.first, "next_calls_ms": l.second}));
        return write_json(&a, json);
    }

    let mut r = Report {
        json,
        ..Report::default()
    };
    let mut f32_tops = Vec::new();
    for &compute in &a.computes {
        bench_compute(&a, &w, &tokens[..], n, compute, &mut f32_tops, &mut r)?;
    }
    if a.cpu_backend {
        cpu_backend(&a, &w, &tokens[..], n, &mut r)?;
    }
    if a.reference {
        reference_floor(&w, &tokens[..n], &mut r)?;
    }
    print_tables(&r, n, &token_src);
    write_json(&a, r.json)
}

/// What a run reports: the JSON record and the printed tables' rows.
#[derive(Default)]
struct Report {
    json: serde_json::Map<String, serde_json::Value>,
    rows: Vec<Row>,
    load_rows: Vec<String>,
    parity: Vec<String>,
    agreement: Vec<String>,
}

/// A backend just built, with its load time and its first and second
/// calls' times (ms).
struct Loaded {
    b: MlxBackend,
    load_ms: f64,
    first: f64,
    second: f64,
}

/// Load + first calls: the first evaluation of each compiled function
/// traces, compiles and (on a GPU) JIT-builds its kernels.
fn load(a: &Args, w: &OwnedWeights, compute: MlxCompute) -> Result<Loaded> {
    let opts = MlxOptions {
        device: a.device,
        compute,
        warmup: 0,
        kernel_cache_dir: a.kernel_cache.clone(),
        group_size: a.group_size,
        ..MlxOptions::default()
    };
    let t = Instant::now();
    let mut b = MlxBackend::from_f32(&w.view(), &opts)?;
    let load_ms = t.elapsed().as_secs_f64() * 1e3;
    let (h, mut h2, mut l) = (
        vec![0f32; w.hidden],
        vec![0f32; w.hidden],
        vec![0f32; w.vocab],
    );
    let first = time_us(|| {
        b.step(&h, 1, &mut h2)?;
        b.logits(&h2, &mut l)?;
        b.step_logits(&h, 1, &mut h2, &mut l)
    })? / 1e3;
    let second = time_us(|| {
        b.step(&h, 1, &mut h2)?;
        b.logits(&h2, &mut l)?;
        b.step_logits(&h, 1, &mut h2, &mut l)
    })? / 1e3;
    Ok(Loaded {
        b,
        load_ms,
        first,
        second,
    })
}

/// Every timed path of one weight type on MLX, its parity with the
/// reference, its agreement with f32 (whose top-8s it keeps in `f32_tops`),
/// and with --variants the f32 variants.
fn bench_compute(
    a: &Args,
    w: &OwnedWeights,
    tokens: &[u32],
    n: usize,
    compute: MlxCompute,
    f32_tops: &mut Vec<[u32; 8]>,
    r: &mut Report,
) -> Result<()> {
    let Loaded {
        mut b,
        load_ms,
        first,
        second,
    } = load(a, w, compute)?;
    r.load_rows.push(format!(
        "| {} | {load_ms:.1} | {first:.1} | {second:.2} |",
        b.device()
    ));
    let dev = b.device();
    let toks = &tokens[..n];
    let p = time_paths(&mut b, w, toks)?;
    let miss = state_uploaded(&mut b, w, toks)?;
    let worst = parity(&mut b, w, toks)?;
    r.parity
        .push(format!("| {} | 50 | {worst:.3e} |", b.device()));
    let (resident, resident_nocopy) = resident(&mut b, w, toks)?;
    let c = compute.as_str();
    let shown = weights_label(compute, a.group_size);
    let mut entry = serde_json::Map::new();
    for (name, s) in [
        ("step", &p.step),
        ("logits", &p.logits),
        ("step_logits", &p.fused),
        ("decision", &p.decision),
        ("trait_step_then_logits", &p.trait_pair),
        ("step_logits_state_uploaded", &miss),
        ("decision_device_topk", &p.device_topk),
        ("resident_step_logits", &resident),
        ("resident_step_logits_no_copy", &resident_nocopy),
    ] {
        entry.insert(name.into(), s.json());
    }
    entry.insert("device".into(), dev.clone().into());
    entry.insert("load_ms".into(), load_ms.into());
    entry.insert("group_size".into(), a.group_size.into());
    entry.insert("first_calls_ms".into(), first.into());
    r.json.insert(c.into(), entry.into());
    for (label, stats) in [
        ("step (h in/out)", p.step),
        ("logits", p.logits),
        ("step+logits fused", p.fused),
        ("trait step, then trait logits", p.trait_pair),
        ("step+logits fused, state uploaded", miss),
        ("decision: fused + host top-8", p.decision),
        ("decision: step+top-8, device stage 1", p.device_topk),
        ("resident step+logits", resident),
        ("resident step+logits, nothing copied back", resident_nocopy),
    ] {
        r.rows.push(Row {
            label: format!("{shown} {label}"),
            stats,
        });
    }

    if compute == MlxCompute::F32 {
        *f32_tops = p.tops;
    } else if !f32_tops.is_empty() {
        let (r1, r3) = agreement(&p.tops, f32_tops, n);
        r.agreement.push(format!(
            "| {shown} | {n} | {:.2}% | {:.2}% |",
            r1 * 100.0,
            r3 * 100.0
        ));
        r.json.insert(
            format!("{c}_agreement"),
            serde_json::json!({"top1": r1, "top3_set": r3, "n": n}),
        );
    }

    if a.variants && compute == MlxCompute::F32 {
        variants(a, w, toks, r)?;
    }
    Ok(())
}

/// A weight type as the tables name it: q8/q4 with their group size.
fn weights_label(compute: MlxCompute, group_size: u32) -> String {
    match compute {
        MlxCompute::Q8 | MlxCompute::Q4 => format!("{} g{group_size}", compute.as_str()),
        _ => compute.as_str().to_string(),
    }
}

/// One path's latencies over `toks`, as a sequential chain of states as the
/// engine would run it (each call starts from the state the previous one
/// returned).
fn chain(b: &mut MlxBackend, hidden: usize, toks: &[u32], f: &mut StepFn<'_>) -> Result<Stats> {
    let (mut h, mut h2) = (vec![0f32; hidden], vec![0f32; hidden]);
    let mut s = Stats::default();
    for &t in toks {
        s.0.record_us(time_us(|| f(b, &h, t, &mut h2))?);
        std::mem::swap(&mut h, &mut h2);
    }
    Ok(s)
}

/// The latencies of the backend's calls, each path its own chain, and the
/// host-side top-8 of each step (the device top-k is checked against them).
struct Paths {
    step: Stats,
    logits: Stats,
    fused: Stats,
    trait_pair: Stats,
    decision: Stats,
    device_topk: Stats,
    tops: Vec<[u32; 8]>,
}

fn time_paths(b: &mut MlxBackend, w: &OwnedWeights, toks: &[u32]) -> Result<Paths> {
    let hidden = w.hidden;
    let step = chain(b, hidden, toks, &mut |b, h, t, h2| b.step(h, t, h2))?;
    let mut l2 = vec![0f32; w.vocab];
    let logits = chain(b, hidden, toks, &mut |b, h, t, h2| {
        h2.copy_from_slice(h); // same state each call: logits alone
        let _ = t;
        b.logits(h, &mut l2)
    })?;
    let fused = chain(b, hidden, toks, &mut |b, h, t, h2| {
        b.step_logits(h, t, h2, &mut l2)
    })?;
    let trait_pair = chain(b, hidden, toks, &mut |b, h, t, h2| {
        b.step(h, t, h2)?;
        b.logits(h2, &mut l2)
    })?;
    let mut tops = Vec::with_capacity(toks.len());
    let decision = chain(b, hidden, toks, &mut |b, h, t, h2| {
        b.step_logits(h, t, h2, &mut l2)?;
        tops.push(top8(&l2));
        Ok(())
    })?;
    let (mut ids, mut vals) = ([0u32; 8], [0f32; 8]);
    let mut i = 0;
    let device_topk = chain(b, hidden, toks, &mut |b, h, t, h2| {
        b.step_topk(h, t, h2, &mut ids, &mut vals)?;
        if ids != tops[i] {
            bail!("device top-k {ids:?} differs from host top-8 {:?}", tops[i]);
        }
        i += 1;
        Ok(())
    })?;
    Ok(Paths {
        step,
        logits,
        fused,
        trait_pair,
        decision,
        device_topk,
        tops,
    })
}

/// Two interleaved chains: every call's state differs from the last one
/// handed back, so it is uploaded (a state-cache hit in the engine).
fn state_uploaded(b: &mut MlxBackend, w: &OwnedWeights, toks: &[u32]) -> Result<Stats> {
    let (mut h, mut h2, mut l) = (
        vec![0f32; w.hidden],
        vec![0f32; w.hidden],
        vec![0f32; w.vocab],
    );
    let mut miss = Stats::default();
    let mut other = vec![0.5f32; w.hidden];
    for &t in toks {
        miss.0
            .record_us(time_us(|| b.step_logits(&h, t, &mut h2, &mut l))?);
        std::mem::swap(&mut h, &mut h2);
        std::mem::swap(&mut h, &mut other);
    }
    Ok(miss)
}

/// Parity on this device: the largest |delta logit| of the trait path
/// against the FORMAT.md reference over the first 50 steps.
fn parity(b: &mut MlxBackend, w: &OwnedWeights, toks: &[u32]) -> Result<f32> {
    let (mut rh, mut rh2, mut rl) = (
        vec![0f32; w.hidden],
        vec![0f32; w.hidden],
        vec![0f32; w.vocab],
    );
    let (mut bh, mut bh2, mut l) = (
        vec![0f32; w.hidden],
        vec![0f32; w.hidden],
        vec![0f32; w.vocab],
    );
    let mut worst = 0f32;
    for &t in toks.iter().take(50) {
        reference::step(w, &rh, t, &mut rh2);
        reference::logits(w, &rh2, &mut rl);
        b.step(&bh, t, &mut bh2)?;
        b.logits(&bh2, &mut l)?;
        worst = l
            .iter()
            .zip(&rl)
            .map(|(x, y)| (x - y).abs())
            .fold(worst, f32::max);
        std::mem::swap(&mut rh, &mut rh2);
        std::mem::swap(&mut bh, &mut bh2);
    }
    Ok(worst)
}

/// The state kept on the device: (logits copied back, nothing copied back).
fn resident(b: &mut MlxBackend, w: &OwnedWeights, toks: &[u32]) -> Result<(Stats, Stats)> {
    let mut l = vec![0f32; w.vocab];
    let mut resident = Stats::default();
    b.reset()?;
    let mut resident_nocopy = Stats::default();
    for &t in toks {
        resident_nocopy
            .0
            .record_us(time_us(|| b.step_resident(t, None))?);
    }
    b.reset()?;
    for &t in toks {
        resident
            .0
            .record_us(time_us(|| b.step_resident(t, Some(&mut l)))?);
    }
    Ok((resident, resident_nocopy))
}

/// The share of steps whose top-1 equals f32's, and whose top-3 is the same set.
fn agreement(tops: &[[u32; 8]], f32_tops: &[[u32; 8]], n: usize) -> (f64, f64) {
    let top1 = tops
        .iter()
        .zip(f32_tops)
        .filter(|(x, y)| x[0] == y[0])
        .count();
    let top3 = tops
        .iter()
        .zip(f32_tops)
        .filter(|(x, y)| {
            let (mut p, mut q) = (x[..3].to_vec(), y[..3].to_vec());
            p.sort();
            q.sort();
            p == q
        })
        .count();
    (top1 as f64 / n as f64, top3 as f64 / n as f64)
}

/// The f32 fused step and decision under other backend options.
fn variants(a: &Args, w: &OwnedWeights, toks: &[u32], r: &mut Report) -> Result<()> {
    let (mut h, mut h2, mut l) = (
        vec![0f32; w.hidden],
        vec![0f32; w.hidden],
        vec![0f32; w.vocab],
    );
    for (label, opts) in [
        (
            "f32 step+logits, blocking wait",
            MlxOptions {
                poll: Some(false),
                ..MlxOptions::default()
            },
        ),
        (
            "f32 step+logits, polling",
            MlxOptions {
                poll: Some(true),
                ..MlxOptions::default()
            },
        ),
        (
            "f32 step+logits, not compiled",
            MlxOptions {
                compile: false,
                ..MlxOptions::default()
            },
        ),
        (
            "f32 step+logits, results read by MLX's array::data()",
            MlxOptions {
                mlx_copy: true,
                ..MlxOptions::default()
            },
        ),
    ] {
        let opts = MlxOptions {
            device: a.device,
            ..opts
        };
        let mut v = MlxBackend::from_f32(&w.view(), &opts)?;
        let (mut s, mut k) = (Stats::default(), Stats::default());
        h.fill(0.0);
        for &t in toks {
            s.0.record_us(time_us(|| v.step_logits(&h, t, &mut h2, &mut l))?);
            std::mem::swap(&mut h, &mut h2);
        }
        h.fill(0.0);
        let (mut ids, mut vals) = ([0u32; 8], [0f32; 8]);
        for &t in toks {
            k.0.record_us(time_us(|| {
                v.step_topk(&h, t, &mut h2, &mut ids, &mut vals)
            })?);
            std::mem::swap(&mut h, &mut h2);
        }
        r.json.insert(label.into(), s.json());
        r.json.insert(format!("{label} (top-8 decision)"), k.json());
        r.rows.push(Row {
            label: label.into(),
            stats: s,
        });
        r.rows.push(Row {
            label: format!("{label}, decision step+top-8"),
            stats: k,
        });
    }
    Ok(())
}

/// The engine's pure-Rust cpu backend on the same file and tokens (f32 view,
/// and the file's own dtype).
fn cpu_backend(a: &Args, w: &OwnedWeights, tokens: &[u32], n: usize, r: &mut Report) -> Result<()> {
    let path = a.model.as_ref().context("--cpu-backend needs --model")?;
    let vocab = Vocab::load(&vocab_path_for(path))?;
    let file_dtype = Weights::open(path, Some(&vocab))?.config.dtype;
    let mut kinds = vec![WeightType::F32];
    if file_dtype != WeightType::F32 {
        kinds.push(file_dtype);
    }
    for dtype in kinds {
        let mut cpu = CpuBackend::new(Weights::open(path, Some(&vocab))?, Some(dtype));
        let (mut h, mut h2, mut l) = (
            vec![0f32; w.hidden],
            vec![0f32; w.hidden],
            vec![0f32; w.vocab],
        );
        let (mut step, mut fused, mut decision) =
            (Stats::default(), Stats::default(), Stats::default());
        for &t in &tokens[..n] {
            step.0.record_us(time_us(|| cpu.step(&h, t, &mut h2))?);
            fused.0.record_us(time_us(|| {
                cpu.step(&h, t, &mut h2)?;
                cpu.logits(&h2, &mut l)
            })?);
            decision.0.record_us(time_us(|| {
                cpu.step(&h, t, &mut h2)?;
                cpu.logits(&h2, &mut l)?;
                std::hint::black_box(top8(&l));
                Ok(())
            })?);
            std::mem::swap(&mut h, &mut h2);
        }
        let d = cpu.device();
        r.json.insert(format!("{d} step"), step.json());
        r.json.insert(format!("{d} step+logits"), fused.json());
        r.json.insert(format!("{d} decision"), decision.json());
        r.rows.push(Row {
            label: format!("rust {d}: step"),
            stats: step,
        });
        r.rows.push(Row {
            label: format!("rust {d}: step+logits"),
            stats: fused,
        });
        r.rows.push(Row {
            label: format!("rust {d}: decision (step+logits+top-8)"),
            stats: decision,
        });
    }
    Ok(())
}

/// The FORMAT.md reference in plain Rust (naive loops, f64 sums): a floor
/// for what any CPU code should beat, not the cpu backend.
fn reference_floor(w: &OwnedWeights, toks: &[u32], r: &mut Report) -> Result<()> {
    let (mut h, mut h2, mut l) = (
        vec![0f32; w.hidden],
        vec![0f32; w.hidden],
        vec![0f32; w.vocab],
    );
    let mut s = Stats::default();
    for &t in toks.iter().take(500) {
        s.0.record_us(time_us(|| {
            reference::step(w, &h, t, &mut h2);
            reference::logits(w, &h2, &mut l);
            Ok(())
        })?);
        std::mem::swap(&mut h, &mut h2);
    }
    r.json.insert("rust_reference_step_logits".into(), s.json());
    r.rows.push(Row {
        label: "rust reference (naive, f64 sums) step+logits".into(),
        stats: s,
    });
    Ok(())
}

fn print_tables(r: &Report, n: usize, token_src: &str) {
    println!("\nload and first calls (step, logits, step+logits):\n");
    println!("| device | load ms | first calls ms | next calls ms |");
    println!("| --- | ---: | ---: | ---: |");
    for row in &r.load_rows {
        println!("{row}");
    }
    println!("\nlatency per call ({n} calls each; {token_src}):\n");
    print_rows(&r.rows);
    println!("\nmax |delta logit| against the FORMAT.md reference (f64 sums):\n");
    println!("| device | steps | max abs delta |");
    println!("| --- | ---: | ---: |");
    for row in &r.parity {
        println!("{row}");
    }
    if !r.agreement.is_empty() {
        println!("\nagreement with mlx f32 (top-1 equal; top-3 same set):\n");
        println!("| weights | steps | top-1 | top-3 |");
        println!("| --- | ---: | ---: | ---: |");
        for row in &r.agreement {
            println!("{row}");
        }
    }
}

fn write_json(a: &Args, json: serde_json::Map<String, serde_json::Value>) -> Result<()> {
    if let Some(p) = &a.json {
        let mut f = std::fs::File::create(p)?;
        writeln!(f, "{}", serde_json::Value::Object(json))?;
    }
    Ok(())
}
