//! Reading a model file (models/FORMAT.md): the safetensors header through
//! the `safetensors` crate over a read-only memory map (so several Neovim
//! instances share the pages), the configuration from its metadata, and a
//! check of every tensor's name, dtype and shape and of the vocabulary hash.
//! Every problem is an error that names the file and what was expected.

use crate::text::vocab::Vocab;
use anyhow::{anyhow, bail, Context, Result};
use memmap2::Mmap;
use safetensors::{Dtype, SafeTensors};
use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Weight dtype of a model file (metadata `dtype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightType {
    F32,
    Bf16,
    Int8,
}

impl WeightType {
    pub fn parse(s: &str) -> Result<WeightType> {
        match s {
            "f32" => Ok(WeightType::F32),
            "bf16" => Ok(WeightType::Bf16),
            "int8" => Ok(WeightType::Int8),
            other => bail!("unknown dtype {other:?} (expected f32, bf16 or int8)"),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            WeightType::F32 => "f32",
            WeightType::Bf16 => "bf16",
            WeightType::Int8 => "int8",
        }
    }
}

/// The model's shape and identity, from the file's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelConfig {
    pub vocab_size: usize,
    pub embed_dim: usize,
    pub hidden_dim: usize,
    pub dtype: WeightType,
    pub vocab_sha256: String,
}

/// The 2-D tensors (int8 files store them as I8 plus a per-row `.scale`).
pub const MATRICES: [&str; 4] = ["embed", "gru.wx", "gru.wh", "proj.w"];
/// The 1-D tensors (F32 in int8 files).
pub const VECTORS: [&str; 4] = ["gru.b", "gru.bhn", "proj.b", "out.b"];

impl ModelConfig {
    /// Every tensor the format requires for this configuration: (name, dtype, shape).
    pub fn expected_tensors(&self) -> Vec<(String, Dtype, Vec<usize>)> {
        let (v, e, h) = (self.vocab_size, self.embed_dim, self.hidden_dim);
        let shapes: [(&str, Vec<usize>); 8] = [
            ("embed", vec![v, e]),
            ("gru.wx", vec![3 * h, e]),
            ("gru.wh", vec![3 * h, h]),
            ("proj.w", vec![e, h]),
            ("gru.b", vec![3 * h]),
            ("gru.bhn", vec![h]),
            ("proj.b", vec![e]),
            ("out.b", vec![v]),
        ];
        let mut out = Vec::new();
        for (name, shape) in shapes {
            let matrix = shape.len() == 2;
            let dtype = match (self.dtype, matrix) {
                (WeightType::F32, _) | (WeightType::Int8, false) => Dtype::F32,
                (WeightType::Bf16, _) => Dtype::BF16,
                (WeightType::Int8, true) => Dtype::I8,
            };
            if self.dtype == WeightType::Int8 && matrix {
                out.push((format!("{name}.scale"), Dtype::F32, vec![shape[0]]));
            }
            out.push((name.to_string(), dtype, shape));
        }
        out
    }
}

/// A validated, memory-mapped model file.
pub struct Weights {
    pub path: PathBuf,
    pub config: ModelConfig,
    map: Mmap,
    /// Byte range in `map` of each tensor.
    ranges: HashMap<String, Range<usize>>,
}

impl Weights {
    /// Opens and validates `path`; with `vocab`, also checks that it is the
    /// vocabulary the weights were trained with.
    pub fn open(path: &Path, vocab: Option<&Vocab>) -> Result<Weights> {
        let shown = path.display();
        let file = std::fs::File::open(path)
            .with_context(|| format!("model file {shown}: cannot open"))?;
        // SAFETY: the map is read-only and private to this process; the model
        // file is not written while Laya runs (a file truncated underneath a
        // running host is outside what any mmap reader can guard against).
        let map = unsafe { Mmap::map(&file) }
            .with_context(|| format!("model file {shown}: cannot map"))?;
        let (config, ranges) = parse(&map).with_context(|| format!("model file {shown}"))?;
        if let Some(v) = vocab {
            if v.len() != config.vocab_size {
                bail!(
                    "model file {shown}: vocab_size is {} but the vocabulary file has {} tokens \
                     (the two files must come from the same export)",
                    config.vocab_size,
                    v.len()
                );
            }
            if !v.sha256.is_empty() && !v.sha256.eq_ignore_ascii_case(&config.vocab_sha256) {
                bail!(
                    "model file {shown}: vocabulary hash mismatch: the weights expect sha256 {} but \
                     the vocabulary file has {} (use the .vocab.txt exported with these weights)",
                    config.vocab_sha256,
                    v.sha256
                );
            }
        }
        Ok(Weights {
            path: path.to_path_buf(),
            config,
            map,
            ranges,
        })
    }

    /// The raw little-endian bytes of a tensor (validated at open).
    pub fn bytes(&self, name: &str) -> &[u8] {
        &self.map[self.ranges[name].clone()]
    }

    /// A tensor's byte range within `all_bytes()`.
    pub fn range(&self, name: &str) -> Range<usize> {
        self.ranges[name].clone()
    }

    /// The whole mapped file.
    pub fn all_bytes(&self) -> &[u8] {
        &self.map
    }

    /// A tensor of F32 as f32 values: borrowed from the map when aligned, else copied.
    pub fn f32s(&self, name: &str) -> std::borrow::Cow<'_, [f32]> {
        let bytes = self.bytes(name);
        // SAFETY: every bit pattern is a valid f32; align_to only reinterprets
        // the aligned middle part, which we use only when it is the whole slice.
        let (head, mid, tail) = unsafe { bytes.align_to::<f32>() };
        if head.is_empty() && tail.is_empty() && cfg!(target_endian = "little") {
            std::borrow::Cow::Borrowed(mid)
        } else {
            std::borrow::Cow::Owned(
                bytes
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            )
        }
    }
}

fn meta<'a>(m: &'a HashMap<String, String>, key: &str) -> Result<&'a str> {
    m.get(key)
        .map(String::as_str)
        .ok_or_else(|| anyhow!("metadata key `{key}` is missing"))
}

fn meta_dim(m: &HashMap<String, String>, key: &str) -> Result<usize> {
    let s = meta(m, key)?;
    match s.parse::<usize>() {
        Ok(n) if n > 0 && n <= 1 << 24 => Ok(n),
        _ => bail!("metadata `{key}` = {s:?}: expected a positive integer"),
    }
}

fn expect_meta(m: &HashMap<String, String>, key: &str, want: &str) -> Result<()> {
    let got = meta(m, key)?;
    if got != want {
        bail!(
            "metadata `{key}` is {got:?}, expected {want:?} (a file for another version of Laya?)"
        );
    }
    Ok(())
}

/// Parses and validates the header; returns the config and tensor byte ranges.
fn parse(buf: &[u8]) -> Result<(ModelConfig, HashMap<String, Range<usize>>)> {
    let (header_len, metadata) = SafeTensors::read_metadata(buf)
        .map_err(|e| anyhow!("not a valid safetensors file (corrupt or truncated?): {e}"))?;
    let data_start = 8 + header_len;
    let m = metadata
        .metadata()
        .as_ref()
        .ok_or_else(|| anyhow!("no __metadata__ (not a Laya model file?)"))?;
    expect_meta(m, "laya.format", "1")?;
    expect_meta(m, "arch", "gru-tied")?;
    expect_meta(m, "tokenizer", "laya-tok-1")?;
    let config = ModelConfig {
        vocab_size: meta_dim(m, "vocab_size")?,
        embed_dim: meta_dim(m, "embed_dim")?,
        hidden_dim: meta_dim(m, "hidden_dim")?,
        dtype: WeightType::parse(meta(m, "dtype")?).context("metadata `dtype`")?,
        vocab_sha256: meta(m, "vocab_sha256")?.to_string(),
    };
    if config.vocab_sha256.len() != 64
        || !config.vocab_sha256.bytes().all(|b| b.is_ascii_hexdigit())
    {
        bail!(
            "metadata `vocab_sha256` = {:?}: expected 64 hex digits",
            config.vocab_sha256
        );
    }
    let present = metadata.tensors();
    let expected = config.expected_tensors();
    let (v, e, h) = (config.vocab_size, config.embed_dim, config.hidden_dim);
    let mut ranges = HashMap::new();
    for (name, dtype, shape) in &expected {
        let info = present.get(name).ok_or_else(|| {
            anyhow!(
                "tensor `{name}` is missing (expected {dtype:?} {shape:?} for V={v}, E={e}, H={h})"
            )
        })?;
        if info.dtype != *dtype {
            bail!(
                "tensor `{name}` has dtype {:?}, expected {dtype:?} (metadata says dtype {})",
                info.dtype,
                config.dtype.as_str()
            );
        }
        if info.shape != *shape {
            bail!(
                "tensor `{name}` has shape {:?}, expected {shape:?} (V={v}, E={e}, H={h})",
                info.shape
            );
        }
        let (a, b) = info.data_offsets;
        ranges.insert(name.clone(), data_start + a..data_start + b);
    }
    if let Some(extra) = present
        .keys()
        .find(|k| !expected.iter().any(|x| &x.0 == *k))
    {
        bail!(
            "unexpected tensor `{extra}` for a {} model",
            config.dtype.as_str()
        );
    }
    Ok((config, ranges))
}
