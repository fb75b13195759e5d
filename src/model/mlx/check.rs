//! The MLX backend's startup self-check: a few steps of the model on a
//! fixed input, on MLX and on the cpu backend over the same weights, compared
//! within a tolerance suited to MLX's compute dtype. The bridge reaches into
//! MLX (bridge.cpp) and a GPU runtime can misbehave, so a wrong result is
//! caught at load, before any answer is served, instead of showing up as
//! silently bad predictions.

use std::time::Instant;

use anyhow::Result;

use super::{MlxBackend, MlxCompute};
use crate::model::Backend;
use crate::text::vocab::BOS;

/// Tokens stepped, `<s>` first.
pub const STEPS: usize = 7;

/// What the check measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Report {
    /// Steps compared (each: the new state and the full logits).
    pub steps: usize,
    /// Largest |MLX logit - cpu logit| over all steps and tokens.
    pub max_logit_delta: f32,
    /// Largest |MLX state - cpu state|.
    pub max_state_delta: f32,
    /// The bound `max_logit_delta` had to stay within.
    pub logit_tolerance: f32,
    /// Steps whose top-1 token agreed.
    pub top1_agreed: usize,
    /// Time the check took, milliseconds.
    pub ms: f64,
    /// Of which the first step (MLX builds the graphs of `step` and
    /// `logits` on their first call, which the first keystroke would pay
    /// otherwise).
    pub first_ms: f64,
}

/// The self-check failed: MLX computes something else than the cpu backend.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "the mlx backend's self-check failed: {what} at step {step} of {steps} \
     against the cpu backend ({detail}); MLX {version} on {device} gives wrong \
     results, so the cpu backend runs the model instead"
)]
pub struct Mismatch {
    pub what: &'static str,
    pub step: usize,
    pub steps: usize,
    pub detail: String,
    pub version: String,
    pub device: String,
}

/// The fixed input: `<s>` then ids spread over the vocabulary (a frequent
/// word, the middle, the last id), the same on every start.
fn tokens(vocab: usize) -> Vec<u32> {
    let v = vocab as u64;
    let picks = [BOS as u64, 4, 57, v / 2, v - 1, v / 3, 9];
    picks
        .iter()
        .take(STEPS)
        .map(|&t| (t % v.max(1)) as u32)
        .collect()
}

/// Bounds on |MLX - cpu| for logits whose largest magnitude is `scale`, and
/// for states (in [-1, 1]). f32 on both sides differs only by summation
/// order (tests/mlx_parity.rs sees < 1e-4 over 300 steps); bf16, f16 and
/// 8-bit weights round every weight, so their bound is a share of the
/// logits' scale: several times what the default model shows, far below
/// what a wrong kernel or a misread buffer gives (differences of the order
/// of the logits themselves, or NaN).
fn tolerances(compute: MlxCompute, scale: f32) -> (f32, f32) {
    match compute {
        MlxCompute::F32 => (1e-3 + 1e-4 * scale, 1e-4),
        MlxCompute::Bf16 | MlxCompute::F16 | MlxCompute::Q8 => (0.05 + 0.02 * scale, 0.1),
        MlxCompute::Q4 => (0.5 + 0.15 * scale, 0.3),
    }
}

fn max_delta(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).fold(0.0, |m, (x, y)| {
        let d = (x - y).abs();
        // NaN compares false: make it the worst difference there is.
        if d.is_nan() {
            f32::INFINITY
        } else {
            m.max(d)
        }
    })
}

fn argmax(v: &[f32]) -> usize {
    v.iter()
        .enumerate()
        .fold((0, f32::NEG_INFINITY), |(bi, bv), (i, &x)| {
            if x > bv {
                (i, x)
            } else {
                (bi, bv)
            }
        })
        .0
}

/// Steps `mlx` and `cpu` (the same weights; the cpu one in f32) through the
/// fixed input from the zero state and compares every state and every
/// logit. An MLX error is returned as such; a difference beyond the
/// tolerance is a `Mismatch`.
pub fn run(mlx: &mut MlxBackend, cpu: &mut dyn Backend) -> Result<Report> {
    let t0 = Instant::now();
    let (v, hd) = (mlx.vocab_size(), mlx.hidden_dim());
    anyhow::ensure!(
        (cpu.vocab_size(), cpu.hidden_dim()) == (v, hd),
        "mlx self-check: the cpu backend has another shape"
    );
    let mut r = Report {
        steps: 0,
        max_logit_delta: 0.0,
        max_state_delta: 0.0,
        logit_tolerance: 0.0,
        top1_agreed: 0,
        ms: 0.0,
        first_ms: 0.0,
    };
    let (mut hm, mut hc) = (vec![0f32; hd], vec![0f32; hd]);
    let (mut hm2, mut hc2) = (vec![0f32; hd], vec![0f32; hd]);
    let (mut lm, mut lc) = (vec![0f32; v], vec![0f32; v]);
    let device = mlx.device();
    let fail = |what: &'static str, step: usize, detail: String| -> anyhow::Error {
        Mismatch {
            what,
            step,
            steps: STEPS,
            detail,
            version: super::version(),
            device: device.clone(),
        }
        .into()
    };
    for (i, &t) in tokens(v).iter().enumerate() {
        mlx.step(&hm, t, &mut hm2)?;
        cpu.step(&hc, t, &mut hc2)?;
        mlx.logits(&hm2, &mut lm)?;
        cpu.logits(&hc2, &mut lc)?;
        let scale = lc.iter().fold(1f32, |m, x| m.max(x.abs()));
        // The loosest bound of any matrix's weights (a file's own bits).
        let (tol_logit, tol_state) = std::iter::once(mlx.compute())
            .chain(mlx.matrix_compute())
            .map(|c| tolerances(c, scale))
            .fold((0f32, 0f32), |(a, b), (x, y)| (a.max(x), b.max(y)));
        let (dl, dh) = (max_delta(&lm, &lc), max_delta(&hm2, &hc2));
        r.steps = i + 1;
        r.max_logit_delta = r.max_logit_delta.max(dl);
        r.max_state_delta = r.max_state_delta.max(dh);
        r.logit_tolerance = r.logit_tolerance.max(tol_logit);
        r.top1_agreed += (argmax(&lm) == argmax(&lc)) as usize;
        if dh > tol_state {
            let detail = format!("max |delta state| {dh:.3e} > {tol_state:.1e}");
            return Err(fail("the state differs", i + 1, detail));
        }
        if dl > tol_logit {
            let detail = format!("max |delta logit| {dl:.3e} > {tol_logit:.3e}");
            return Err(fail("the logits differ", i + 1, detail));
        }
        if i == 0 {
            r.first_ms = t0.elapsed().as_secs_f64() * 1e3;
        }
        std::mem::swap(&mut hm, &mut hm2);
        std::mem::swap(&mut hc, &mut hc2);
    }
    r.ms = t0.elapsed().as_secs_f64() * 1e3;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_input_is_fixed_and_in_range() {
        assert_eq!(tokens(16384), vec![1, 4, 57, 8192, 16383, 5461, 9]);
        assert!(tokens(5).iter().all(|&t| t < 5));
    }

    #[test]
    fn nan_is_the_worst_difference() {
        assert_eq!(max_delta(&[0.0, f32::NAN], &[0.0, 1.0]), f32::INFINITY);
        assert_eq!(max_delta(&[1.0, 2.0], &[1.5, 2.0]), 0.5);
    }
}
