//! A plain, unoptimised Rust GRU step written straight from models/FORMAT.md
//! (f64 accumulation), and deterministic synthetic weights: the yardstick the
//! mlx parity test and benchmarks measure the MLX backend against.

use super::GruWeights;

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
    /// Random weights of a trained model's rough scale, from `seed`.
    pub fn synthetic(vocab: usize, embed: usize, hidden: usize, seed: u64) -> Self {
        let mut rng = SplitMix(seed);
        let mut fill =
            |n: usize, scale: f32| (0..n).map(|_| rng.uniform() * scale).collect::<Vec<f32>>();
        let se = 1.0 / (embed as f32).sqrt();
        let sh = 1.0 / (hidden as f32).sqrt();
        OwnedWeights {
            vocab,
            embed,
            hidden,
            embed_w: fill(vocab * embed, 0.5),
            gru_wx: fill(3 * hidden * embed, 4.0 * se),
            gru_wh: fill(3 * hidden * hidden, 2.0 * sh),
            gru_b: fill(3 * hidden, 0.1),
            gru_bhn: fill(hidden, 0.1),
            proj_w: fill(embed * hidden, 2.0 * sh),
            proj_b: fill(embed, 0.1),
            out_b: fill(vocab, 0.5),
        }
    }

    pub fn view(&self) -> GruWeights<'_, f32> {
        GruWeights {
            vocab: self.vocab,
            embed: self.embed,
            hidden: self.hidden,
            embed_w: &self.embed_w,
            gru_wx: &self.gru_wx,
            gru_wh: &self.gru_wh,
            gru_b: &self.gru_b,
            gru_bhn: &self.gru_bhn,
            proj_w: &self.proj_w,
            proj_b: &self.proj_b,
            out_b: &self.out_b,
        }
    }
}

/// One GRU step (FORMAT.md): `h_out` = GRU(h, token).
pub fn step(w: &GruWeights<'_, f32>, h: &[f32], token: u32, h_out: &mut [f32]) {
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
pub fn logits(w: &GruWeights<'_, f32>, h: &[f32], out: &mut [f32]) {
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

/// SplitMix64: small, fast, reproducible everywhere.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    fn uniform(&mut self) -> f32 {
        ((self.next() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}
