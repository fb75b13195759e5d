//! Weight conversions shared by the loader and the model-file writer:
//! symmetric per-row int8 (FORMAT.md) and bf16.

/// Quantizes a row-major [rows, cols] matrix to int8 with one scale per row:
/// `w[i][j] ≈ q[i][j] * scale[i]`.
pub fn quantize_rows(w: &[f32], cols: usize) -> (Vec<i8>, Vec<f32>) {
    let rows = w.len() / cols.max(1);
    let mut q = Vec::with_capacity(w.len());
    let mut scales = Vec::with_capacity(rows);
    for row in w.chunks_exact(cols) {
        let max = row.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
        scales.push(scale);
        q.extend(
            row.iter()
                .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8),
        );
    }
    (q, scales)
}

/// f32 → bf16 bits, rounding to nearest even.
pub fn to_bf16(x: f32) -> u16 {
    half::bf16::from_f32(x).to_bits()
}

pub fn from_bf16(bits: u16) -> f32 {
    half::bf16::from_bits(bits).to_f32()
}

/// MLX's affine quantization of a row-major matrix along its rows, then
/// dequantization, as f32: what `mx::quantize` then `mx::dequantize` (MLX
/// 0.32, mode "affine") give, value for value, so that every backend runs
/// the model a file with `quant_bits` / `quant_group` was trained as. Per
/// group of `group` weights, the extremum of larger magnitude (the edge)
/// becomes the bias and is hit exactly: the scale is adjusted so that
/// edge / scale is a whole number.
pub fn affine_dequantized(w: &[f32], group: usize, bits: u32) -> Vec<f32> {
    let n = ((1u32 << bits) - 1) as f32;
    let mut out = Vec::with_capacity(w.len());
    for g in w.chunks(group) {
        let wmax = g.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let wmin = g.iter().copied().fold(f32::INFINITY, f32::min);
        let from_min = wmin.abs() > wmax.abs();
        let mut scale = ((wmax - wmin) / n).max(1e-7);
        if !from_min {
            scale = -scale;
        }
        let edge = if from_min { wmin } else { wmax };
        let q0 = (edge / scale).round_ties_even();
        let (scale, bias) = if q0 == 0.0 {
            (scale, 0.0)
        } else {
            (edge / q0, edge)
        };
        out.extend(
            g.iter()
                .map(|&x| ((x - bias) / scale).round_ties_even().clamp(0.0, n) * scale + bias),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::affine_dequantized;

    /// tests/data/affine_vectors.json: what MLX itself computes (written
    /// and checked against MLX by training/tests/test_affine_vectors.py).
    #[test]
    fn affine_dequantization_is_mlx_s_value_for_value() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/affine_vectors.json"
        );
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let floats = |x: &serde_json::Value| -> Vec<f32> {
            x.as_array()
                .unwrap()
                .iter()
                .flat_map(|row| row.as_array().unwrap().iter())
                .map(|f| f.as_f64().unwrap() as f32)
                .collect()
        };
        let w = floats(&v["weights"]);
        let cases = v["cases"].as_array().unwrap();
        assert_eq!(cases.len(), 3);
        for c in cases {
            let (bits, group) = (c["bits"].as_u64().unwrap(), c["group"].as_u64().unwrap());
            let want = floats(&c["dequantized"]);
            let got = affine_dequantized(&w, group as usize, bits as u32);
            assert_eq!(got.len(), want.len());
            for (i, (g, x)) in got.iter().zip(&want).enumerate() {
                assert_eq!(
                    g.to_bits(),
                    x.to_bits(),
                    "{bits} bits, group {group}: value {i}: {g} vs MLX {x}"
                );
            }
        }
    }
}
