//! Model weights and the backends that run them.
//!
//! `weights` reads a safetensors file (format in models/FORMAT.md); a
//! `Backend` runs one recurrent step and the output layer. The engine holds
//! the recurrent state itself (a plain `Vec<f32>` of `hidden_dim`), so a
//! backend is stateless between calls and states can be cached per buffer.

use anyhow::Result;

/// What the engine needs from a model backend (cpu, mlx).
pub trait Backend: Send {
    /// "cpu" or "mlx".
    fn name(&self) -> &'static str;
    /// Where it runs, in words ("cpu f32 (avx2)", "mlx cuda NVIDIA H200").
    fn device(&self) -> String;
    fn vocab_size(&self) -> usize;
    fn hidden_dim(&self) -> usize;
    /// Advance `h` (len hidden_dim) by one token: `h_out` = GRU(h, token).
    fn step(&mut self, h: &[f32], token: u32, h_out: &mut [f32]) -> Result<()>;
    /// Full-vocabulary logits for state `h` into `logits` (len vocab_size).
    fn logits(&mut self, h: &[f32], logits: &mut [f32]) -> Result<()>;
}

#[cfg(feature = "mlx")]
pub mod mlx;
