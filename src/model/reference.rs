//! A plain, unoptimised GRU step and output layer written straight from
//! models/FORMAT.md (f64 accumulation): the one yardstick the backends are
//! measured against (tests/engine_model.rs for the CPU backend,
//! tests/mlx_parity.rs and benches/mlx_bench.rs for MLX). Not used on the
//! prediction path.

use super::testgen::random_f32_tensors;

/// Owned f32 weights in models/FORMAT.md's layout.
#[derive(Clone, Debug)]
pub struct OwnedWeights {
    pub vocab: usize,
    pub embed: usize,
    pub hidden: usize,
    pub embed_w: Vec<f32>,
    pub gru_wx: Vec<f32>,
    pub gru_wh: Vec<f32>,
    pub gru_b: Vec<f32>,
    pub gru_bhn: Vec<f32>,
    pub proj_w: Vec<f32>,
    pub proj_b: Vec<f32>,
    pub out_b: Vec<f32>,
}

impl OwnedWeights {
    /// Random weights from `seed` (testgen's generator, the one every test
    /// and benchmark writes model files with).
    pub fn synthetic(vocab: usize, embed: usize, hidden: usize, seed: u64) -> Self {
        Self::from_tensors(
            vocab,
            embed,
            hidden,
            &random_f32_tensors(vocab, embed, hidden, seed),
        )
    }

    /// The weights of `tensors` (FORMAT.md's names, as testgen makes them).
    pub fn from_tensors(
        vocab: usize,
        embed: usize,
        hidden: usize,
        tensors: &[(String, Vec<usize>, Vec<f32>)],
    ) -> Self {
        let get = |name: &str| {
            tensors
                .iter()
                .find(|t| t.0 == name)
                .map(|t| t.2.clone())
                .unwrap_or_else(|| panic!("no tensor {name}"))
        };
        OwnedWeights {
            vocab,
            embed,
            hidden,
            embed_w: get("embed"),
            gru_wx: get("gru.wx"),
            gru_wh: get("gru.wh"),
            gru_b: get("gru.b"),
            gru_bhn: get("gru.bhn"),
            proj_w: get("proj.w"),
            proj_b: get("proj.b"),
            out_b: get("out.b"),
        }
    }
}

/// One GRU step (FORMAT.md): `h_out` = GRU(h, token).
pub fn step(w: &OwnedWeights, h: &[f32], token: u32, h_out: &mut [f32]) {
    let (e, hd) = (w.embed, w.hidden);
    let x = &w.embed_w[token as usize * e..][..e];
    let dot = |row: &[f32], v: &[f32]| {
        row.iter()
            .zip(v)
            .map(|(a, b)| *a as f64 * *b as f64)
            .sum::<f64>()
    };
    let gx = |i: usize| dot(&w.gru_wx[i * e..][..e], x) + w.gru_b[i] as f64;
    let gh = |i: usize| dot(&w.gru_wh[i * hd..][..hd], h);
    let sigmoid = |v: f64| 1.0 / (1.0 + (-v).exp());
    for j in 0..hd {
        let r = sigmoid(gx(j) + gh(j));
        let z = sigmoid(gx(hd + j) + gh(hd + j));
        let n = (gx(2 * hd + j) + r * (gh(2 * hd + j) + w.gru_bhn[j] as f64)).tanh();
        h_out[j] = ((1.0 - z) * n + z * h[j] as f64) as f32;
    }
}

/// Logits (FORMAT.md): embed · (proj.w · h + proj.b) + out.b.
pub fn logits(w: &OwnedWeights, h: &[f32], out: &mut [f32]) {
    let (e, hd) = (w.embed, w.hidden);
    let p: Vec<f64> = (0..e)
        .map(|i| {
            w.proj_w[i * hd..][..hd]
                .iter()
                .zip(h)
                .map(|(a, b)| *a as f64 * *b as f64)
                .sum::<f64>()
                + w.proj_b[i] as f64
        })
        .collect();
    for (v, o) in out.iter_mut().enumerate().take(w.vocab) {
        let row = &w.embed_w[v * e..][..e];
        *o = (row.iter().zip(&p).map(|(a, b)| *a as f64 * b).sum::<f64>() + w.out_b[v] as f64)
            as f32;
    }
}

/// Indices of the `k` largest values, largest first (ties: lower index first).
pub fn top_k(values: &[f32], k: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..values.len()).collect();
    idx.sort_by(|&a, &b| values[b].total_cmp(&values[a]).then(a.cmp(&b)));
    idx.truncate(k);
    idx
}
