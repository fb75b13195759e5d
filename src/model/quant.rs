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
