//! Options shared by the subcommands that build an engine, and the typed
//! choices (backend, dtype, SIMD ceiling) as the command line spells them.

use crate::engine::{EngineOptions, Tuning};
use crate::model::weights::WeightType;
use crate::model::BackendChoice;
use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// Where the model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Backend {
    /// MLX when built with it and a GPU is there, else the CPU.
    #[default]
    Auto,
    Cpu,
    Mlx,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Auto => "auto",
            Backend::Cpu => "cpu",
            Backend::Mlx => "mlx",
        }
    }
}

/// The weights' number format at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Dtype {
    F32,
    Bf16,
    Int8,
}

impl Dtype {
    pub fn as_str(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::Bf16 => "bf16",
            Dtype::Int8 => "int8",
        }
    }
}

impl From<Backend> for BackendChoice {
    fn from(b: Backend) -> BackendChoice {
        match b {
            Backend::Auto => BackendChoice::Auto,
            Backend::Cpu => BackendChoice::Cpu,
            Backend::Mlx => BackendChoice::Mlx,
        }
    }
}

impl From<Dtype> for WeightType {
    fn from(d: Dtype) -> WeightType {
        match d {
            Dtype::F32 => WeightType::F32,
            Dtype::Bf16 => WeightType::Bf16,
            Dtype::Int8 => WeightType::Int8,
        }
    }
}

/// The widest instruction set the CPU kernels may use (A/B measurements);
/// the kernels never use one the CPU lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum SimdArg {
    /// The best the CPU has.
    #[default]
    Auto,
    /// AVX2+FMA, not AVX-512.
    Avx2,
    /// Plain loops.
    Portable,
}

impl SimdArg {
    /// Applies the ceiling to every backend built after this call.
    pub fn apply(self) {
        use crate::model::kernels::{set_simd_ceiling, Simd};
        set_simd_ceiling(match self {
            SimdArg::Auto => Simd::Avx512Vnni,
            SimdArg::Avx2 => Simd::Avx2Fma,
            SimdArg::Portable => Simd::Portable,
        });
    }
}

/// A `--tune` value is checked when parsed, so a typo is an error that names it.
pub fn tuning_value(s: &str) -> Result<String, String> {
    Tuning::default().set(s)?;
    Ok(s.to_string())
}

/// How to build the engine.
#[derive(Args, Debug, Clone, Default)]
pub struct EngineArgs {
    /// Weights file; its vocabulary is STEM.vocab.txt beside it [default: the shipped model]
    #[arg(long, value_name = "PATH")]
    pub model: Option<PathBuf>,
    /// Where the model runs
    #[arg(long, value_enum, default_value_t)]
    pub backend: Backend,
    /// Run the weights in this dtype instead of the file's
    #[arg(long, value_enum)]
    pub dtype: Option<Dtype>,
    /// No neural model: only the word list and the text's own words
    #[arg(long)]
    pub no_model: bool,
    /// Ghost text is shown when the top candidate's probability reaches
    /// this, in [0, 1] [default: 0.12]
    #[arg(long, value_name = "X")]
    pub threshold: Option<f32>,
    /// The same in code (as the text before the cursor reads: the protocol
    /// does not say) [default: 0.05]
    #[arg(long, value_name = "X")]
    pub code_threshold: Option<f32>,
    /// Most words of ghost text after the current one
    #[arg(long, value_name = "N")]
    pub ghost_words: Option<usize>,
    /// Ranking constants (see engine::Tuning); repeatable
    #[arg(long, value_name = "KEY=VALUE,...", value_parser = tuning_value)]
    pub tune: Vec<String>,
    /// Widest SIMD instruction set of the CPU kernels
    #[arg(long, value_enum, default_value_t)]
    pub simd: SimdArg,
    /// Threads the model may use for one computation: with 2 the cpu
    /// backend shares steps (a far edit's re-read) and output layers with a
    /// second thread
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=2))]
    pub model_threads: u32,
}

impl EngineArgs {
    /// The engine's options; also applies `--simd`.
    pub fn options(&self) -> EngineOptions {
        self.simd.apply();
        let mut o = EngineOptions {
            model_path: self.model.clone(),
            backend: self.backend.into(),
            dtype: self.dtype.map(Into::into),
            neural: !self.no_model,
            threshold: self.threshold,
            code_threshold: self.code_threshold,
            model_threads: self.model_threads as usize,
            ..EngineOptions::default()
        };
        if let Some(n) = self.ghost_words {
            o.ghost_words = n;
        }
        for t in &self.tune {
            // Checked when parsed.
            let _ = o.tuning.set(t);
        }
        o
    }

    /// The same options as arguments, but for backend, dtype and --no-model
    /// (a benchmark's child process gets those from its configuration).
    pub fn shared_args(&self) -> Vec<String> {
        let mut a = Vec::new();
        if let Some(m) = &self.model {
            a.extend(["--model".into(), m.display().to_string()]);
        }
        if let Some(t) = self.threshold {
            a.extend(["--threshold".into(), t.to_string()]);
        }
        if let Some(t) = self.code_threshold {
            a.extend(["--code-threshold".into(), t.to_string()]);
        }
        if let Some(n) = self.ghost_words {
            a.extend(["--ghost-words".into(), n.to_string()]);
        }
        for t in &self.tune {
            a.extend(["--tune".into(), t.clone()]);
        }
        if self.simd != SimdArg::Auto {
            let v = self.simd.to_possible_value().expect("no skipped values");
            a.extend(["--simd".into(), v.get_name().to_string()]);
        }
        a.extend(["--model-threads".into(), self.model_threads.to_string()]);
        a
    }
}
