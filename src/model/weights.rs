//! Reading a model file (models/FORMAT.md): the file is read into memory
//! once, then the safetensors header through the `safetensors` crate, the
//! configuration from its metadata, a check of every tensor's name, dtype
//! and shape and of the vocabulary hash, and a scan of every value for NaN
//! and infinity. Every problem is an error that names the file and what was
//! expected.
//!
//! The bytes are a private copy, not a memory map: a map of a file that is
//! truncated or rewritten while the host runs kills the process (SIGBUS) or
//! silently changes the weights under it, and a model file is replaced by
//! hand, by a package manager or by a training run. The copy costs each
//! host the file's size in private memory (the pages a map would share).

use super::quant::{affine_dequantized, from_bf16};
use crate::text::vocab::Vocab;
use anyhow::{anyhow, bail, Context, Result};
use safetensors::{Dtype, SafeTensors};
use std::collections::HashMap;
use std::io::Read;
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
    /// Metadata `quant_bits` / `quant_group` (and `quant_bits.<matrix>`):
    /// the matrices are meant to run through MLX's affine quantization (the
    /// model was trained with it).
    pub quant: Option<AffineQuant>,
}

/// MLX's affine quantization of the matrices along their rows: `bits[i]` per
/// weight of `MATRICES[i]`, a scale and a bias per `group` consecutive
/// weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AffineQuant {
    pub bits: [u32; 4],
    pub group: usize,
}

impl AffineQuant {
    /// The bits of matrix `name`; None for a tensor that is not a matrix.
    pub fn bits_of(&self, name: &str) -> Option<u32> {
        MATRICES
            .iter()
            .position(|m| *m == name)
            .map(|i| self.bits[i])
    }

    /// The bits most matrices have (a tie: the fewer bits).
    pub fn main_bits(&self) -> u32 {
        let count = |b: u32| self.bits.iter().filter(|&&x| x == b).count();
        self.bits
            .into_iter()
            .max_by_key(|&b| (count(b), std::cmp::Reverse(b)))
            .unwrap_or(self.bits[0])
    }

    /// "4-bit group-32 weights", or where a matrix has other bits than
    /// `main_bits` "4-bit group-32 weights (embed 8-bit)".
    pub fn describe(&self) -> String {
        let main = self.main_bits();
        let others: Vec<String> = MATRICES
            .iter()
            .zip(self.bits)
            .filter(|&(_, b)| b != main)
            .map(|(name, b)| format!("{name} {b}-bit"))
            .collect();
        let mut s = format!("{main}-bit group-{} weights", self.group);
        if !others.is_empty() {
            s += &format!(" ({})", others.join(", "));
        }
        s
    }
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

/// A validated model file, held in memory.
pub struct Weights {
    pub path: PathBuf,
    pub config: ModelConfig,
    bytes: AlignedBytes,
    /// Byte range in `bytes` of each tensor.
    ranges: HashMap<String, Range<usize>>,
}

/// The file's bytes in 8-byte aligned storage, so f32 and bf16 tensors at
/// aligned offsets are read in place as the file stores them.
struct AlignedBytes {
    words: Vec<u64>,
    len: usize,
}

impl AlignedBytes {
    fn zeroed(len: usize) -> AlignedBytes {
        AlignedBytes {
            words: vec![0; len.div_ceil(8)],
            len,
        }
    }

    fn as_slice(&self) -> &[u8] {
        // SAFETY: `words` holds at least `len` initialised bytes, and u8 has
        // no alignment or validity requirement.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.len) }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, borrowed mutably through `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast::<u8>(), self.len) }
    }
}

/// Opens `path` for reading if it is a regular file. Opened without blocking,
/// so a FIFO (which would wait for a writer forever) is refused at once.
fn open_regular(path: &Path) -> Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path).context("cannot open")?;
    let kind = file
        .metadata()
        .context("cannot read its metadata")?
        .file_type();
    if kind.is_dir() {
        bail!("is a directory, not a model file (point it at a .safetensors file)");
    }
    if !kind.is_file() {
        bail!("is not a regular file (a FIFO, socket or device cannot hold a model)");
    }
    Ok(file)
}

/// The whole file, read once. A file that changes size while it is read is
/// an error rather than a mix of two files.
fn read_all(path: &Path) -> Result<AlignedBytes> {
    let mut file = open_regular(path)?;
    let len = file.metadata().context("cannot read its metadata")?.len();
    let len = usize::try_from(len).context("too large for this machine")?;
    let mut bytes = AlignedBytes::zeroed(len);
    file.read_exact(bytes.as_mut_slice())
        .context("cannot read (did it shrink while being read?)")?;
    if file.read(&mut [0u8])? != 0 {
        bail!("grew while being read (is it being written?)");
    }
    Ok(bytes)
}

impl Weights {
    /// Reads and validates `path`; with `vocab`, also checks that it is the
    /// vocabulary the weights were trained with.
    pub fn open(path: &Path, vocab: Option<&Vocab>) -> Result<Weights> {
        let bytes = read_all(path).with_context(|| format!("model file {}", path.display()))?;
        Weights::from_bytes(path, bytes, vocab)
    }

    /// Validates a model file's `bytes` (read from `path`, which errors name).
    pub fn from_slice(path: &Path, bytes: &[u8], vocab: Option<&Vocab>) -> Result<Weights> {
        let mut own = AlignedBytes::zeroed(bytes.len());
        own.as_mut_slice().copy_from_slice(bytes);
        Weights::from_bytes(path, own, vocab)
    }

    fn from_bytes(path: &Path, bytes: AlignedBytes, vocab: Option<&Vocab>) -> Result<Weights> {
        let shown = path.display();
        let (config, ranges) =
            parse(bytes.as_slice()).with_context(|| format!("model file {shown}"))?;
        check_finite(&config, &ranges, bytes.as_slice())
            .with_context(|| format!("model file {shown}"))?;
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
            bytes,
            ranges,
        })
    }

    /// The raw little-endian bytes of a tensor (validated at open).
    pub fn bytes(&self, name: &str) -> &[u8] {
        &self.bytes.as_slice()[self.ranges[name].clone()]
    }

    /// A tensor's byte range within `all_bytes()`.
    pub fn range(&self, name: &str) -> Range<usize> {
        self.ranges[name].clone()
    }

    /// The whole file.
    pub fn all_bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    /// A tensor as the file stores it, as f32 values, whatever its dtype
    /// (int8 matrices times their row scales).
    pub fn stored_f32(&self, name: &str) -> Vec<f32> {
        let b = self.bytes(name);
        match self.config.dtype {
            WeightType::F32 => self.f32s(name).into_owned(),
            WeightType::Bf16 => b
                .chunks_exact(2)
                .map(|c| from_bf16(u16::from_le_bytes([c[0], c[1]])))
                .collect(),
            WeightType::Int8 if VECTORS.contains(&name) => self.f32s(name).into_owned(),
            WeightType::Int8 => {
                // FORMAT.md: W[i,j] = W.int8[i,j] * scale[i].
                let scales = self.f32s(&format!("{name}.scale"));
                let cols = b.len() / scales.len();
                b.chunks_exact(cols)
                    .zip(scales.iter())
                    .flat_map(|(row, s)| row.iter().map(move |&q| q as i8 as f32 * s))
                    .collect()
            }
        }
    }

    /// A tensor as the model computes with it: `stored_f32`, and for a
    /// matrix of a file with `quant`, quantized and dequantized as MLX does.
    pub fn model_f32(&self, name: &str) -> Vec<f32> {
        let vals = self.stored_f32(name);
        match self.config.quant {
            Some(q) => match q.bits_of(name) {
                Some(bits) => affine_dequantized(&vals, q.group, bits),
                None => vals,
            },
            None => vals,
        }
    }

    /// A tensor of F32 as f32 values: borrowed when aligned, else copied.
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

/// The optional `quant_bits` / `quant_group` pair (both or neither), and
/// the bits of a matrix of its own (`quant_bits.<matrix>`, only with them).
fn affine_quant(m: &HashMap<String, String>) -> Result<Option<AffineQuant>> {
    let bits = |key: &str, s: &str| match s {
        "4" => Ok(4),
        "8" => Ok(8),
        _ => bail!("metadata `{key}` = {s:?}: expected 4 or 8"),
    };
    // (matrix index, key, value) of each `quant_bits.<matrix>`; keys in
    // order, so that of two bad keys the same one is named every time.
    let mut keys: Vec<_> = m.iter().collect();
    keys.sort_unstable();
    let mut own = Vec::new();
    for (key, value) in keys {
        let Some(name) = key.strip_prefix("quant_bits.") else {
            continue;
        };
        let Some(i) = MATRICES.iter().position(|n| *n == name) else {
            bail!(
                "metadata `{key}`: unknown key (a matrix's own bits go under {})",
                MATRICES.map(|n| format!("`quant_bits.{n}`")).join(", ")
            );
        };
        own.push((i, key.as_str(), value.as_str()));
    }
    match (m.get("quant_bits"), m.get("quant_group")) {
        (None, None) => match own.first() {
            Some((_, key, _)) => {
                bail!("metadata `{key}` needs `quant_bits` and `quant_group` beside it")
            }
            None => Ok(None),
        },
        (Some(b), Some(g)) => {
            let mut all = [bits("quant_bits", b)?; 4];
            for (i, key, value) in own {
                all[i] = bits(key, value)?;
            }
            let group = match g.as_str() {
                "32" => 32,
                "64" => 64,
                _ => bail!("metadata `quant_group` = {g:?}: expected 32 or 64"),
            };
            Ok(Some(AffineQuant { bits: all, group }))
        }
        _ => bail!("metadata `quant_bits` and `quant_group` go together: one is missing"),
    }
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
        quant: affine_quant(m)?,
    };
    if let Some(q) = config.quant {
        if config.dtype == WeightType::Int8 {
            bail!("metadata `quant_bits`: an int8 file cannot also be affine-quantized");
        }
        let (e, h) = (config.embed_dim, config.hidden_dim);
        if e % q.group != 0 || h % q.group != 0 {
            bail!(
                "metadata `quant_group` = {}: embed_dim {e} and hidden_dim {h} must be multiples of it",
                q.group
            );
        }
    }
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

/// Refuses a file with a NaN, an infinity or a value beyond `LARGEST` in any
/// tensor: such a weight turns every prediction into NaN without any other
/// sign. Int8 values are small integers; their per-row scales are F32 and
/// scanned.
/// The largest weight magnitude accepted. Trained weights are below 100;
/// up to this bound every sum a step or the output layer computes stays
/// finite in f32 (a hidden size of 768 and an embedding of 256 included).
const LARGEST: f32 = 1e6;

fn check_finite(
    config: &ModelConfig,
    ranges: &HashMap<String, Range<usize>>,
    bytes: &[u8],
) -> Result<()> {
    for (name, dtype, shape) in config.expected_tensors() {
        let data = &bytes[ranges[&name].clone()];
        // bf16 is the upper half of an f32: both read as f32 bits.
        let bad = match dtype {
            Dtype::F32 => data
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .position(|v| v.is_nan() || v.abs() > LARGEST),
            Dtype::BF16 => data
                .chunks_exact(2)
                .map(|c| f32::from_bits((u16::from_le_bytes([c[0], c[1]]) as u32) << 16))
                .position(|v| v.is_nan() || v.abs() > LARGEST),
            _ => None,
        };
        if let Some(i) = bad {
            let at = match shape.as_slice() {
                [_, cols] => format!("row {}, column {}", i / cols, i % cols),
                _ => format!("index {i}"),
            };
            let v = match dtype {
                Dtype::F32 => f32::from_le_bytes(data[4 * i..4 * i + 4].try_into().expect("4")),
                _ => f32::from_bits(
                    (u16::from_le_bytes([data[2 * i], data[2 * i + 1]]) as u32) << 16,
                ),
            };
            bail!(
                "tensor `{name}` holds {v} at {at}: NaN, infinity or beyond ±{LARGEST:e} \
                 (a corrupt or badly exported file)"
            );
        }
    }
    Ok(())
}
