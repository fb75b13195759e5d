//! Writes model files in the format of models/FORMAT.md with random weights:
//! for tests of the loader's errors and of the backends, and for development
//! before a trained model exists. Not used on the prediction path.

use super::quant::{quantize_rows, to_bf16};
use super::weights::{WeightType, MATRICES};
use crate::text::digest::sha256_hex;
use anyhow::{Context, Result};
use safetensors::tensor::TensorView;
use safetensors::Dtype;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A small deterministic generator (xorshift64*), so tests are reproducible.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E3779B97F4A7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }

    /// Uniform in 0..n.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Uniform in [-a, a).
    pub fn uniform(&mut self, a: f32) -> f32 {
        let u = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        (2.0 * u - 1.0) * a
    }
}

/// One tensor to write: name, dtype, shape, little-endian bytes.
pub struct RawTensor {
    pub name: String,
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    pub data: Vec<u8>,
}

/// Random f32 weights of a model: (name, shape, values), in FORMAT.md's names.
pub fn random_f32_tensors(
    v: usize,
    e: usize,
    h: usize,
    seed: u64,
) -> Vec<(String, Vec<usize>, Vec<f32>)> {
    let mut rng = Rng::new(seed);
    let mut t = |name: &str, shape: Vec<usize>, a: f32| {
        let n = shape.iter().product();
        let vals = (0..n).map(|_| rng.uniform(a)).collect();
        (name.to_string(), shape, vals)
    };
    let hs = 1.0 / (h as f32).sqrt();
    vec![
        t("embed", vec![v, e], 0.5),
        t("gru.wx", vec![3 * h, e], hs),
        t("gru.wh", vec![3 * h, h], hs),
        t("gru.b", vec![3 * h], hs),
        t("gru.bhn", vec![h], hs),
        t("proj.w", vec![e, h], hs * 2.0),
        t("proj.b", vec![e], 0.1),
        t("out.b", vec![v], 0.5),
    ]
}

/// Encodes f32 tensors in a file dtype (int8 adds `.scale` tensors).
pub fn encode(tensors: &[(String, Vec<usize>, Vec<f32>)], dtype: WeightType) -> Vec<RawTensor> {
    let mut out = Vec::new();
    for (name, shape, vals) in tensors {
        let matrix = MATRICES.contains(&name.as_str());
        let f32_bytes = |x: &[f32]| x.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>();
        match (dtype, matrix) {
            (WeightType::F32, _) | (WeightType::Int8, false) => out.push(RawTensor {
                name: name.clone(),
                dtype: Dtype::F32,
                shape: shape.clone(),
                data: f32_bytes(vals),
            }),
            (WeightType::Bf16, _) => out.push(RawTensor {
                name: name.clone(),
                dtype: Dtype::BF16,
                shape: shape.clone(),
                data: vals
                    .iter()
                    .flat_map(|&f| to_bf16(f).to_le_bytes())
                    .collect(),
            }),
            (WeightType::Int8, true) => {
                let (q, scales) = quantize_rows(vals, shape[1]);
                out.push(RawTensor {
                    name: name.clone(),
                    dtype: Dtype::I8,
                    shape: shape.clone(),
                    data: q.iter().map(|&b| b as u8).collect(),
                });
                out.push(RawTensor {
                    name: format!("{name}.scale"),
                    dtype: Dtype::F32,
                    shape: vec![shape[0]],
                    data: f32_bytes(&scales),
                });
            }
        }
    }
    out
}

/// The metadata FORMAT.md asks for.
pub fn metadata(
    v: usize,
    e: usize,
    h: usize,
    dtype: WeightType,
    vocab_sha256: &str,
) -> HashMap<String, String> {
    [
        ("laya.format", "1".to_string()),
        ("arch", "gru-tied".into()),
        ("tokenizer", "laya-tok-1".into()),
        ("vocab_size", v.to_string()),
        ("embed_dim", e.to_string()),
        ("hidden_dim", h.to_string()),
        ("vocab_sha256", vocab_sha256.to_string()),
        ("dtype", dtype.as_str().to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Writes a safetensors file of `tensors` with `meta`.
pub fn write_safetensors(
    path: &Path,
    tensors: &[RawTensor],
    meta: HashMap<String, String>,
) -> Result<()> {
    let views: Vec<(String, TensorView)> = tensors
        .iter()
        .map(|t| {
            Ok((
                t.name.clone(),
                TensorView::new(t.dtype, t.shape.clone(), &t.data)?,
            ))
        })
        .collect::<Result<_, safetensors::SafeTensorError>>()?;
    let bytes = safetensors::serialize(views, Some(meta))?;
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// Writes `<dir>/<stem>.vocab.txt` (the given tokens after `<unk>`, `<s>`,
/// `<nl>`) and `<dir>/<stem>.safetensors` with random weights; returns the
/// weights path.
pub fn write_random_model(
    dir: &Path,
    stem: &str,
    tokens: &[&str],
    embed_dim: usize,
    hidden_dim: usize,
    dtype: WeightType,
    seed: u64,
) -> Result<PathBuf> {
    let mut vocab = String::from("<unk>\n<s>\n<nl>\n");
    for t in tokens {
        vocab.push_str(t);
        vocab.push('\n');
    }
    let weights = dir.join(format!("{stem}.safetensors"));
    write_random_weights(&vocab, &weights, embed_dim, hidden_dim, dtype, seed)?;
    Ok(weights)
}

/// A vocabulary text of the special tokens and `n` more, `t0` to `t{n-1}`.
pub fn numbered_vocab(n: usize) -> String {
    let mut vocab = String::from("<unk>\n<s>\n<nl>\n");
    for i in 0..n {
        vocab.push_str(&format!("t{i}\n"));
    }
    vocab
}

/// Writes random weights for an existing vocabulary text to `weights`, and
/// the vocabulary beside it (`<stem>.vocab.txt`).
pub fn write_random_weights(
    vocab: &str,
    weights: &Path,
    embed_dim: usize,
    hidden_dim: usize,
    dtype: WeightType,
    seed: u64,
) -> Result<()> {
    let v = vocab.lines().count();
    let vocab_path = super::vocab_path_for(weights);
    std::fs::write(&vocab_path, vocab)
        .with_context(|| format!("writing {}", vocab_path.display()))?;
    let tensors = encode(&random_f32_tensors(v, embed_dim, hidden_dim, seed), dtype);
    let meta = metadata(
        v,
        embed_dim,
        hidden_dim,
        dtype,
        &sha256_hex(vocab.as_bytes()),
    );
    write_safetensors(weights, &tensors, meta)
}
