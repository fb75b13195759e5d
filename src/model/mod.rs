//! Model weights and the backends that run them.
//!
//! `weights` reads a safetensors file (format in models/FORMAT.md); a
//! `Backend` runs one recurrent step and the output layer. The engine holds
//! the recurrent state itself (a plain `Vec<f32>` of `hidden_dim`), so a
//! backend is stateless between calls and states can be cached per buffer.

use crate::text::vocab::Vocab;
use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

/// What the engine needs from a model backend (cpu, mlx).
pub trait Backend: Send {
    /// "cpu" or "mlx".
    fn name(&self) -> &'static str;
    /// Where it runs, in words ("cpu f32 (avx2)", "mlx cuda <GPU name>").
    fn device(&self) -> String;
    fn vocab_size(&self) -> usize;
    fn hidden_dim(&self) -> usize;
    /// Advance `h` (len hidden_dim) by one token: `h_out` = GRU(h, token).
    fn step(&mut self, h: &[f32], token: u32, h_out: &mut [f32]) -> Result<()>;
    /// Steps `h` over `tokens` in turn: `out` (len tokens.len() ·
    /// hidden_dim) receives the state after each, the same states as
    /// `step` one token at a time. A long chain (the re-read after a far
    /// edit) is where a backend may use a second core (`set_threads`).
    fn steps(&mut self, h: &[f32], tokens: &[u32], out: &mut [f32]) -> Result<()> {
        let hd = self.hidden_dim();
        if h.len() != hd || out.len() != tokens.len() * hd {
            bail!(
                "steps: state of length {} and {} values for {} tokens (hidden {hd})",
                h.len(),
                out.len(),
                tokens.len()
            );
        }
        for (k, &token) in tokens.iter().enumerate() {
            let (done, rest) = out.split_at_mut(k * hd);
            let prev = if k == 0 { h } else { &done[(k - 1) * hd..] };
            self.step(prev, token, &mut rest[..hd])?;
        }
        Ok(())
    }
    /// At most this many threads for one computation (at least 1). The cpu
    /// backend shares steps, chains of them and output layers with a second
    /// thread when allowed; others ignore it.
    fn set_threads(&mut self, threads: usize) {
        let _ = threads;
    }
    /// Threads one computation uses (see `set_threads`).
    fn threads(&self) -> usize {
        1
    }
    /// Full-vocabulary logits for state `h` into `logits` (len vocab_size).
    fn logits(&mut self, h: &[f32], logits: &mut [f32]) -> Result<()>;
    /// Logits of the tokens `rows` only (ids in that range) into `out`
    /// (len rows.len()). The default computes all logits and copies the
    /// range, so a backend needs it only to be faster.
    fn logits_rows(
        &mut self,
        h: &[f32],
        rows: std::ops::Range<usize>,
        out: &mut [f32],
    ) -> Result<()> {
        let mut all = vec![0.0; self.vocab_size()];
        self.logits(h, &mut all)?;
        match all.get(rows.clone()) {
            Some(part) if part.len() == out.len() => {
                out.copy_from_slice(part);
                Ok(())
            }
            _ => bail!(
                "logits_rows: rows {rows:?} / output length {} do not fit the vocabulary",
                out.len()
            ),
        }
    }
    /// Another backend on the same weights (own scratch, nothing copied),
    /// for a helper thread; None when the backend cannot share them. A
    /// backend that forks computes `logits_rows` in proportion to the rows
    /// and exactly as `logits` does for them (the output layer is split in
    /// pieces between threads).
    fn fork(&self) -> Option<Box<dyn Backend>> {
        None
    }
    /// The weight dtype it computes with ("f32", "bf16", "int8").
    fn dtype(&self) -> &'static str {
        "f32"
    }
    /// `step` then `logits` of the new state. A GPU backend overrides it to
    /// do both in one evaluation and one device-to-host copy (on an NVIDIA
    /// GPU the mlx backend measured ~150-170 us fused against ~210 us as two
    /// calls; BENCHMARKS.md).
    fn step_logits(
        &mut self,
        h: &[f32],
        token: u32,
        h_out: &mut [f32],
        logits: &mut [f32],
    ) -> Result<()> {
        self.step(h, token, h_out)?;
        self.logits(h_out, logits)
    }
}

pub mod cpu;
pub mod kernels;
#[cfg(feature = "mlx")]
pub mod mlx;
pub mod quant;
pub mod reference;
pub mod testgen;
pub mod weights;

/// Stem suffixes of a model stored in another dtype (`laya-default-bf16`):
/// the same model, so the same vocabulary and word list.
const DTYPE_SUFFIXES: [&str; 4] = ["-bf16", "-int8", "-f32", "-q4"];

/// A file that goes with a weights file: `<stem><ext>` beside it, or when
/// there is none and the stem ends in a dtype suffix, the undecorated stem's
/// (`laya-default-bf16.safetensors` reads `laya-default.vocab.txt`): the
/// lists are stored once for all dtypes of a model.
fn beside(weights: &Path, ext: &str) -> PathBuf {
    let name = weights.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let stem = name.strip_suffix(".safetensors").unwrap_or(name);
    let own = weights.with_file_name(format!("{stem}{ext}"));
    if own.exists() {
        return own;
    }
    DTYPE_SUFFIXES
        .iter()
        .find_map(|s| stem.strip_suffix(s))
        .map(|base| weights.with_file_name(format!("{base}{ext}")))
        .filter(|p| p.exists())
        .unwrap_or(own)
}

/// The vocabulary file that goes with a weights file (see `beside`).
pub fn vocab_path_for(weights: &Path) -> PathBuf {
    beside(weights, ".vocab.txt")
}

/// The word list beyond the vocabulary that goes with a weights file (see
/// `beside`); it need not exist.
pub fn words_path_for(weights: &Path) -> PathBuf {
    beside(weights, ".words.txt")
}

/// Where the words of a weights file's model are written (see `beside`);
/// it need not exist.
pub fn kinds_path_for(weights: &Path) -> PathBuf {
    beside(weights, ".kinds.txt")
}

/// The default model: $LAYA_MODEL, else models/laya-default.safetensors next
/// to the binary (../../models from target/release/laya) or in the source tree
/// the binary was built from.
pub fn default_model_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("LAYA_MODEL") {
        return Some(PathBuf::from(p));
    }
    const FILE: &str = "models/laya-default.safetensors";
    let mut tries = Vec::new();
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        tries.push(dir.join("../..").join(FILE));
        tries.push(dir.join("..").join(FILE));
        tries.push(dir.join(FILE));
    }
    tries.push(Path::new(env!("CARGO_MANIFEST_DIR")).join(FILE));
    tries
        .into_iter()
        .find(|p| p.exists())
        .map(|p| p.canonicalize().unwrap_or(p))
}

/// Which backend runs the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// MLX when built with it and a GPU is there, else the CPU.
    #[default]
    Auto,
    Cpu,
    Mlx,
}

impl BackendChoice {
    /// "auto" | "cpu" | "mlx".
    pub fn parse(s: &str) -> Result<BackendChoice> {
        match s {
            "auto" => Ok(BackendChoice::Auto),
            "cpu" => Ok(BackendChoice::Cpu),
            "mlx" => Ok(BackendChoice::Mlx),
            other => bail!("unknown backend {other:?} (expected auto, cpu or mlx)"),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Cpu => "cpu",
            BackendChoice::Mlx => "mlx",
        }
    }
}

/// Loads the weights at `path` (checked against `vocab`) on the chosen backend,
/// optionally converted to `dtype` (see `load_backend_noting`).
pub fn load_backend(
    path: &Path,
    vocab: &Vocab,
    backend: BackendChoice,
    dtype: Option<weights::WeightType>,
) -> Result<Box<dyn Backend>> {
    load_backend_noting(path, vocab, backend, dtype).map(|l| l.backend)
}

/// A loaded backend, and why it is not the one asked for when it is not.
pub struct LoadedBackend {
    pub backend: Box<dyn Backend>,
    /// Why the cpu backend runs instead of MLX: MLX's startup self-check
    /// failed, or MLX did not load under "auto". Logged once; `status`
    /// shows it.
    pub fallback: Option<String>,
}

/// `load_backend`, saying why the backend fell back to the cpu one. An MLX
/// backend whose self-check fails (it computes something else than the cpu
/// backend) is never used, whatever was asked for: the cpu backend runs the
/// model instead.
pub fn load_backend_noting(
    path: &Path,
    vocab: &Vocab,
    backend: BackendChoice,
    dtype: Option<weights::WeightType>,
) -> Result<LoadedBackend> {
    #[allow(unused_mut)] // assigned only with the mlx feature
    let mut fallback = None;
    match backend {
        BackendChoice::Cpu => {}
        // "auto" takes MLX only when built with it and a GPU is there; an MLX
        // failure then falls back to the cpu backend rather than no model.
        BackendChoice::Auto =>
        {
            #[cfg(feature = "mlx")]
            if mlx::gpu_available() {
                match mlx::open(path, vocab, dtype) {
                    Ok(b) => return Ok(LoadedBackend::new(Box::new(b))),
                    Err(e) => fallback = Some(mlx_fell_back(e)),
                }
            }
        }
        #[cfg(feature = "mlx")]
        BackendChoice::Mlx => match mlx::open(path, vocab, dtype) {
            Ok(b) => return Ok(LoadedBackend::new(Box::new(b))),
            Err(e) if e.is::<mlx::Mismatch>() => fallback = Some(mlx_fell_back(e)),
            Err(e) => return Err(e),
        },
        #[cfg(not(feature = "mlx"))]
        BackendChoice::Mlx => {
            bail!("backend \"mlx\": this build has no MLX support (build with --features mlx)")
        }
    }
    let w = weights::Weights::open(path, Some(vocab))?;
    Ok(LoadedBackend {
        backend: Box::new(cpu::CpuBackend::new(w, dtype)),
        fallback,
    })
}

#[cfg(feature = "mlx")]
impl LoadedBackend {
    fn new(backend: Box<dyn Backend>) -> LoadedBackend {
        LoadedBackend {
            backend,
            fallback: None,
        }
    }
}

/// Logs why MLX is not used (once, at load) and gives the message.
#[cfg(feature = "mlx")]
fn mlx_fell_back(e: anyhow::Error) -> String {
    if e.is::<mlx::Mismatch>() {
        log::error!("{e:#}");
        format!("{e:#}")
    } else {
        let msg =
            format!("the mlx backend failed to load, so the cpu backend runs the model: {e:#}");
        log::warn!("{msg}");
        msg
    }
}
