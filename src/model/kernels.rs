//! Matrix-vector kernels of the CPU backend: row-major f32, bf16 and int8
//! (per-row scale) matrices times an f32 vector. AVX2+FMA versions chosen at
//! run time (`Simd::detect`), with portable loops everywhere else; the binary
//! is not built for a specific CPU.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;
use std::sync::atomic::{AtomicU8, Ordering};

static CEILING: AtomicU8 = AtomicU8::new(2);

/// The widest instruction set `Simd::detect` may choose from now on
/// (`laya serve --simd`, for A/B measurements of the kernels).
pub fn set_simd_ceiling(widest: Simd) {
    CEILING.store(widest.rank(), Ordering::Relaxed);
}

/// The instruction set the kernels use, detected once.
///
/// The safe entry points below trust it: a value other than `Portable`
/// must come from `Simd::detect` (or a test that checked the CPU), never
/// be built by hand on a CPU that may lack the features.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Simd {
    /// AVX2 + FMA, and for int8 matrices AVX-512 VNNI (`vpdpwssd`).
    Avx512Vnni,
    Avx2Fma,
    Portable,
}

impl Simd {
    /// True when the AVX2+FMA kernels may run.
    fn avx2(self) -> bool {
        self != Simd::Portable
    }

    /// The best the CPU has, no wider than the ceiling (`set_simd_ceiling`).
    pub fn detect() -> Simd {
        #[cfg(target_arch = "x86_64")]
        {
            let ceiling = CEILING.load(Ordering::Relaxed);
            let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
            let vnni = avx2
                && is_x86_feature_detected!("avx512bw")
                && is_x86_feature_detected!("avx512vnni");
            if vnni && ceiling >= Simd::Avx512Vnni.rank() {
                return Simd::Avx512Vnni;
            }
            if avx2 && ceiling >= Simd::Avx2Fma.rank() {
                return Simd::Avx2Fma;
            }
        }
        Simd::Portable
    }

    fn rank(self) -> u8 {
        match self {
            Simd::Portable => 0,
            Simd::Avx2Fma => 1,
            Simd::Avx512Vnni => 2,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Simd::Avx512Vnni => "avx512-vnni",
            Simd::Avx2Fma => "avx2+fma",
            Simd::Portable => "portable",
        }
    }
}

/// `out[i] = w[i,:] · x` for a row-major f32 matrix of `out.len()` rows.
pub fn matvec_f32(simd: Simd, w: &[f32], x: &[f32], out: &mut [f32]) {
    let cols = x.len();
    assert_eq!(w.len(), cols * out.len());
    #[cfg(target_arch = "x86_64")]
    if simd.avx2() {
        // SAFETY: AVX2 and FMA were detected at run time; lengths checked above.
        unsafe { avx2::matvec_f32(w, x, out) };
        return;
    }
    let _ = simd;
    for (o, row) in out.iter_mut().zip(w.chunks_exact(cols)) {
        *o = row.iter().zip(x).map(|(a, b)| a * b).sum();
    }
}

/// `out[i] = w[i,:] · x` for a bf16 matrix (raw bits, row-major).
pub fn matvec_bf16(simd: Simd, w: &[u16], x: &[f32], out: &mut [f32]) {
    let cols = x.len();
    assert_eq!(w.len(), cols * out.len());
    #[cfg(target_arch = "x86_64")]
    if simd.avx2() {
        // SAFETY: AVX2 and FMA were detected at run time; lengths checked above.
        unsafe { avx2::matvec_bf16(w, x, out) };
        return;
    }
    let _ = simd;
    for (o, row) in out.iter_mut().zip(w.chunks_exact(cols)) {
        *o = row
            .iter()
            .zip(x)
            .map(|(&a, b)| f32::from_bits((a as u32) << 16) * b)
            .sum();
    }
}

/// Quantizes `x` to i16 with one scale (`x ≈ q · scale`) for `matvec_i8`.
/// (Its scalar `round` calls were ~1% of a protocol run; the AVX2 version
/// computes the same values.)
pub fn quantize_i16(x: &[f32], q: &mut Vec<i16>) -> f32 {
    q.clear();
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        // SAFETY: AVX2 and FMA were detected at run time.
        return unsafe { avx2::quantize_i16(x, q) };
    }
    let max = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let scale = if max > 0.0 { max / 32767.0 } else { 1.0 };
    let inv = 1.0 / scale;
    q.extend(x.iter().map(|v| (v * inv).round() as i16));
    scale
}

/// `out[i] = scale[i] · xscale · (q[i,:] · xq)`: int8 weights (per-row
/// scale) times an i16-quantized vector, accumulated exactly in i32.
pub fn matvec_i8(simd: Simd, q: &[i8], scale: &[f32], xq: &[i16], xscale: f32, out: &mut [f32]) {
    let cols = xq.len();
    assert_eq!(q.len(), cols * out.len());
    assert_eq!(scale.len(), out.len());
    #[cfg(target_arch = "x86_64")]
    if simd.avx2() {
        // SAFETY: AVX2 and FMA (and for `Avx512Vnni` the AVX-512 features)
        // were detected at run time; lengths checked above.
        unsafe {
            if simd == Simd::Avx512Vnni {
                avx512::matvec_i8(q, xq, out)
            } else {
                avx2::matvec_i8(q, xq, out)
            }
        };
        for (o, s) in out.iter_mut().zip(scale) {
            *o *= s * xscale;
        }
        return;
    }
    let _ = simd;
    for ((o, row), s) in out.iter_mut().zip(q.chunks_exact(cols)).zip(scale) {
        let dot: i32 = row.iter().zip(xq).map(|(&a, &b)| a as i32 * b as i32).sum();
        *o = dot as f32 * s * xscale;
    }
}

/// `v = softmax(v)` in place (the vector exp is a polynomial, ~1e-7 relative error).
pub fn softmax(simd: Simd, v: &mut [f32]) {
    // The scalar fold is not vectorized (NaN rules): ~4 us of ~9 at 16k.
    #[cfg(target_arch = "x86_64")]
    let max = if simd.avx2() {
        // SAFETY: AVX2 was detected at run time.
        unsafe { avx2::max(v) }
    } else {
        v.iter().copied().fold(f32::NEG_INFINITY, f32::max)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let max = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if !max.is_finite() {
        let u = 1.0 / v.len().max(1) as f32;
        v.iter_mut().for_each(|x| *x = u);
        return;
    }
    #[cfg(target_arch = "x86_64")]
    let sum = if simd.avx2() {
        // SAFETY: AVX2 and FMA were detected at run time.
        unsafe { avx2::exp_shifted(v, max) }
    } else {
        exp_shifted_portable(v, max)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let sum = {
        let _ = simd;
        exp_shifted_portable(v, max)
    };
    let inv = 1.0 / sum;
    v.iter_mut().for_each(|x| *x *= inv);
}

/// One GRU state update (FORMAT.md) from the gate pre-activations
/// `gx` (input side, without bias), `gh` (hidden side), biases `b` and
/// `bhn`: `h_out = (1 − z) ⊙ n + z ⊙ h`. The vector version's sigmoid and
/// tanh use the polynomial exp of `softmax` (~1e-7 error against the
/// library's; the scalar library calls took ~15 us of a ~90 us step at H = 768).
pub fn gru_update(
    simd: Simd,
    gx: &[f32],
    gh: &[f32],
    b: &[f32],
    bhn: &[f32],
    h: &[f32],
    h_out: &mut [f32],
) {
    let hd = h.len();
    assert!(gx.len() == 3 * hd && gh.len() == 3 * hd && b.len() == 3 * hd);
    assert!(bhn.len() == hd && h_out.len() == hd);
    #[cfg(target_arch = "x86_64")]
    if simd.avx2() {
        // SAFETY: AVX2 and FMA were detected at run time; lengths checked above.
        unsafe { avx2::gru_update(gx, gh, b, bhn, h, h_out) };
        return;
    }
    let _ = simd;
    gru_update_portable(gx, gh, b, bhn, h, h_out, 0);
}

/// The scalar GRU update from element `from` on.
fn gru_update_portable(
    gx: &[f32],
    gh: &[f32],
    b: &[f32],
    bhn: &[f32],
    h: &[f32],
    h_out: &mut [f32],
    from: usize,
) {
    let hd = h.len();
    let sigmoid = |x: f32| 1.0 / (1.0 + (-x).exp());
    for i in from..hd {
        let r = sigmoid(gx[i] + b[i] + gh[i]);
        let z = sigmoid(gx[hd + i] + b[hd + i] + gh[hd + i]);
        let n = (gx[2 * hd + i] + b[2 * hd + i] + r * (gh[2 * hd + i] + bhn[i])).tanh();
        h_out[i] = (1.0 - z) * n + z * h[i];
    }
}

/// `v[i] = exp(v[i] - max)`; returns the sum.
fn exp_shifted_portable(v: &mut [f32], max: f32) -> f32 {
    let mut sum = 0.0;
    for x in v.iter_mut() {
        *x = (*x - max).exp();
        sum += *x;
    }
    sum
}

// Index loops mirror the pointer arithmetic of the vector loops beside them.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::needless_range_loop)]
mod avx2 {
    use super::*;

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn hsum_ps(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
        _mm_cvtss_f32(s)
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn hsum_epi32(v: __m256i) -> i32 {
        let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b01_00_11_10));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b10_11_00_01));
        _mm_cvtsi128_si32(s)
    }

    /// exp(x) for x <= 0: 2^n · p(r) with n = round(x / ln 2), |r| <= ln2 / 2,
    /// p a degree-6 polynomial; inputs below -87 give 0.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn exp_ps(x: __m256) -> __m256 {
        let x = _mm256_max_ps(x, _mm256_set1_ps(-87.0));
        let n = _mm256_round_ps(
            _mm256_mul_ps(x, _mm256_set1_ps(std::f32::consts::LOG2_E)),
            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC,
        );
        let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693_145_75), x);
        let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428_606_8e-6), r);
        let mut p = _mm256_set1_ps(1.0 / 720.0);
        for c in [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
            p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
        }
        let pow2 = _mm256_slli_epi32(
            _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)),
            23,
        );
        _mm256_mul_ps(p, _mm256_castsi256_ps(pow2))
    }

    /// sigmoid(x), from exp(−|x|) (an argument exp_ps takes).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn sigmoid_ps(x: __m256) -> __m256 {
        let sign = _mm256_set1_ps(-0.0);
        let e = exp_ps(_mm256_or_ps(x, sign));
        let one = _mm256_set1_ps(1.0);
        let inv = _mm256_div_ps(one, _mm256_add_ps(one, e));
        // x >= 0: 1 / (1 + e); x < 0: e / (1 + e).
        let neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
        _mm256_blendv_ps(inv, _mm256_mul_ps(e, inv), neg)
    }

    /// tanh(x) = sign(x) · (1 − e) / (1 + e), e = exp(−2|x|).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn tanh_ps(x: __m256) -> __m256 {
        let sign = _mm256_set1_ps(-0.0);
        let ax = _mm256_andnot_ps(sign, x);
        let e = exp_ps(_mm256_mul_ps(ax, _mm256_set1_ps(-2.0)));
        let one = _mm256_set1_ps(1.0);
        let t = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
        _mm256_or_ps(t, _mm256_and_ps(x, sign))
    }

    /// # Safety
    ///
    /// The CPU must support AVX2 and FMA (checked at run time with
    /// `is_x86_feature_detected!`, as `Simd::detect` does); otherwise the
    /// instructions are undefined behaviour.
    /// `gx`, `gh` and `b` must hold `3 * h.len()` elements and `bhn` and
    /// `h_out` `h.len()`: the vector loads are not bounds-checked. No
    /// alignment is required (unaligned loads and stores).
    pub unsafe fn gru_update(
        gx: &[f32],
        gh: &[f32],
        b: &[f32],
        bhn: &[f32],
        h: &[f32],
        h_out: &mut [f32],
    ) {
        gru_update_inner(gx, gh, b, bhn, h, h_out)
    }

    #[target_feature(enable = "avx2,fma")]
    fn gru_update_inner(
        gx: &[f32],
        gh: &[f32],
        b: &[f32],
        bhn: &[f32],
        h: &[f32],
        h_out: &mut [f32],
    ) {
        let hd = h.len();
        let body = hd / 8 * 8;
        // SAFETY: every load and store is at i + 8 <= body <= hd within
        // slices of length hd or 3·hd (checked by the caller).
        unsafe {
            let ld = |s: &[f32], at: usize| _mm256_loadu_ps(s.as_ptr().add(at));
            let mut i = 0;
            while i < body {
                let r = sigmoid_ps(_mm256_add_ps(_mm256_add_ps(ld(gx, i), ld(b, i)), ld(gh, i)));
                let (j, k) = (hd + i, 2 * hd + i);
                let z = sigmoid_ps(_mm256_add_ps(_mm256_add_ps(ld(gx, j), ld(b, j)), ld(gh, j)));
                let hn = _mm256_mul_ps(r, _mm256_add_ps(ld(gh, k), ld(bhn, i)));
                let n = tanh_ps(_mm256_add_ps(_mm256_add_ps(ld(gx, k), ld(b, k)), hn));
                // (1 − z) · n + z · h = n + z · (h − n)
                let out = _mm256_fmadd_ps(z, _mm256_sub_ps(ld(h, i), n), n);
                _mm256_storeu_ps(h_out.as_mut_ptr().add(i), out);
                i += 8;
            }
        }
        gru_update_portable(gx, gh, b, bhn, h, h_out, body);
    }

    /// # Safety
    ///
    /// The CPU must support AVX2 and FMA (checked at run time with
    /// `is_x86_feature_detected!`, as `Simd::detect` does); otherwise the
    /// instructions are undefined behaviour.
    /// Any lengths are fine (every vector load is of an 8-element chunk);
    /// no alignment is required.
    pub unsafe fn quantize_i16(x: &[f32], q: &mut Vec<i16>) -> f32 {
        quantize_i16_inner(x, q)
    }

    /// As the portable `quantize_i16`, value for value: the largest |x|
    /// (NaNs skipped), then `round` (half away from zero) as trunc(t) ± 1
    /// where |t − trunc(t)| >= 0.5 (both exact in f32), converted to i16
    /// by the same saturating `as`.
    #[target_feature(enable = "avx2,fma")]
    fn quantize_i16_inner(x: &[f32], q: &mut Vec<i16>) -> f32 {
        let sign = _mm256_set1_ps(-0.0);
        let mut acc = _mm256_setzero_ps();
        let mut chunks = x.chunks_exact(8);
        for c in &mut chunks {
            // SAFETY: c has exactly 8 elements.
            let v = unsafe { _mm256_loadu_ps(c.as_ptr()) };
            acc = _mm256_max_ps(_mm256_andnot_ps(sign, v), acc);
        }
        let mut lanes = [0.0f32; 8];
        // SAFETY: lanes has 8 elements.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc) };
        let max = lanes
            .into_iter()
            .chain(chunks.remainder().iter().map(|v| v.abs()))
            .fold(0.0f32, f32::max);
        let scale = if max > 0.0 { max / 32767.0 } else { 1.0 };
        let inv = 1.0 / scale;
        let vinv = _mm256_set1_ps(inv);
        let half = _mm256_set1_ps(0.5);
        let one = _mm256_set1_ps(1.0);
        let mut chunks = x.chunks_exact(8);
        for c in &mut chunks {
            // SAFETY: c has exactly 8 elements.
            let t = _mm256_mul_ps(unsafe { _mm256_loadu_ps(c.as_ptr()) }, vinv);
            let tr = _mm256_round_ps(t, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
            let frac = _mm256_andnot_ps(sign, _mm256_sub_ps(t, tr));
            let up = _mm256_cmp_ps(frac, half, _CMP_GE_OQ);
            let step = _mm256_and_ps(up, _mm256_or_ps(one, _mm256_and_ps(t, sign)));
            // SAFETY: lanes has 8 elements.
            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), _mm256_add_ps(tr, step)) };
            q.extend(lanes.iter().map(|&r| r as i16));
        }
        q.extend(chunks.remainder().iter().map(|v| (v * inv).round() as i16));
        scale
    }

    /// The largest value, NaNs ignored (as `f32::max` does); -inf if none.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2 (checked at run time with
    /// `is_x86_feature_detected!`, as `Simd::detect` does); otherwise the
    /// instructions are undefined behaviour.
    /// Any length is fine; no alignment is required.
    pub unsafe fn max(v: &[f32]) -> f32 {
        max_inner(v)
    }

    #[target_feature(enable = "avx2,fma")]
    fn max_inner(v: &[f32]) -> f32 {
        let mut acc = _mm256_set1_ps(f32::NEG_INFINITY);
        let mut chunks = v.chunks_exact(8);
        for c in &mut chunks {
            // SAFETY: c has exactly 8 elements. max_ps returns its second
            // operand when the first is NaN, so a NaN is skipped.
            acc = _mm256_max_ps(unsafe { _mm256_loadu_ps(c.as_ptr()) }, acc);
        }
        let mut lanes = [0.0f32; 8];
        // SAFETY: lanes has 8 elements.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc) };
        lanes
            .into_iter()
            .chain(chunks.remainder().iter().copied())
            .fold(f32::NEG_INFINITY, f32::max)
    }

    /// `v[i] = exp(v[i] - max)` in place; returns the sum.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2 and FMA (checked at run time with
    /// `is_x86_feature_detected!`, as `Simd::detect` does); otherwise the
    /// instructions are undefined behaviour.
    /// Any length is fine; no alignment is required.
    pub unsafe fn exp_shifted(v: &mut [f32], max: f32) -> f32 {
        exp_shifted_inner(v, max)
    }

    #[target_feature(enable = "avx2,fma")]
    fn exp_shifted_inner(v: &mut [f32], max: f32) -> f32 {
        let m = _mm256_set1_ps(max);
        let mut acc = _mm256_setzero_ps();
        let mut chunks = v.chunks_exact_mut(8);
        for c in &mut chunks {
            // SAFETY: c has exactly 8 elements.
            unsafe {
                let e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(c.as_ptr()), m));
                _mm256_storeu_ps(c.as_mut_ptr(), e);
                acc = _mm256_add_ps(acc, e);
            }
        }
        let mut sum = hsum_ps(acc);
        for x in chunks.into_remainder() {
            *x = (*x - max).exp();
            sum += *x;
        }
        sum
    }

    /// `out = w · x` for rows of element type `$t`, read 8 at a time as f32
    /// by `$load` and one at a time by `$scalar`. Rows four at a time so each
    /// load of `x` feeds four FMAs. A macro, not a generic, so that every
    /// kernel is compiled inside its own `target_feature` function.
    macro_rules! matvec_kernel {
        ($name:ident, $t:ty, $load:expr, $scalar:expr) => {
            /// `out[i] = w[i,:] · x`, `w` row-major with `x.len()` columns.
            ///
            /// # Safety
            ///
            /// The CPU must support AVX2 and FMA (checked at run time).
            /// `w.len()` must be at least `x.len() * out.len()`: rows are
            /// read through raw pointers without bounds checks. No
            /// alignment is required.
            #[target_feature(enable = "avx2,fma")]
            pub unsafe fn $name(w: &[$t], x: &[f32], out: &mut [f32]) {
                let cols = x.len();
                let body = cols / 8 * 8;
                let rows = out.len();
                let wp = w.as_ptr();
                let xp = x.as_ptr();
                let mut i = 0;
                while i + 4 <= rows {
                    let (r0, r1, r2, r3) = (
                        wp.add(i * cols),
                        wp.add((i + 1) * cols),
                        wp.add((i + 2) * cols),
                        wp.add((i + 3) * cols),
                    );
                    let (mut a0, mut a1, mut a2, mut a3) = (
                        _mm256_setzero_ps(),
                        _mm256_setzero_ps(),
                        _mm256_setzero_ps(),
                        _mm256_setzero_ps(),
                    );
                    let mut j = 0;
                    while j < body {
                        let xv = _mm256_loadu_ps(xp.add(j));
                        a0 = _mm256_fmadd_ps($load(r0.add(j)), xv, a0);
                        a1 = _mm256_fmadd_ps($load(r1.add(j)), xv, a1);
                        a2 = _mm256_fmadd_ps($load(r2.add(j)), xv, a2);
                        a3 = _mm256_fmadd_ps($load(r3.add(j)), xv, a3);
                        j += 8;
                    }
                    let mut s = [hsum_ps(a0), hsum_ps(a1), hsum_ps(a2), hsum_ps(a3)];
                    for j in body..cols {
                        for (r, sr) in s.iter_mut().enumerate() {
                            *sr += $scalar(*wp.add((i + r) * cols + j)) * x[j];
                        }
                    }
                    out[i..i + 4].copy_from_slice(&s);
                    i += 4;
                }
                while i < rows {
                    let r = wp.add(i * cols);
                    let mut a = _mm256_setzero_ps();
                    let mut j = 0;
                    while j < body {
                        a = _mm256_fmadd_ps($load(r.add(j)), _mm256_loadu_ps(xp.add(j)), a);
                        j += 8;
                    }
                    let mut s = hsum_ps(a);
                    for j in body..cols {
                        s += $scalar(*r.add(j)) * x[j];
                    }
                    out[i] = s;
                    i += 1;
                }
            }
        };
    }

    /// Eight bf16 values at `p`, widened to f32.
    ///
    /// # Safety
    ///
    /// AVX2 and FMA as for the kernels; `p` must be valid for reading 8
    /// `u16` (16 bytes), with any alignment.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn load_bf16(p: *const u16) -> __m256 {
        let v = _mm256_cvtepu16_epi32(_mm_loadu_si128(p as *const __m128i));
        _mm256_castsi256_ps(_mm256_slli_epi32(v, 16))
    }

    /// Eight f32 values at `p`.
    ///
    /// # Safety
    ///
    /// AVX2 and FMA as for the kernels; `p` must be valid for reading 8
    /// `f32` (32 bytes), with any alignment.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn load_f32(p: *const f32) -> __m256 {
        _mm256_loadu_ps(p)
    }

    #[inline(always)]
    fn f32_of_f32(v: f32) -> f32 {
        v
    }

    #[inline(always)]
    fn f32_of_bf16(v: u16) -> f32 {
        f32::from_bits((v as u32) << 16)
    }

    matvec_kernel!(matvec_f32, f32, load_f32, f32_of_f32);
    matvec_kernel!(matvec_bf16, u16, load_bf16, f32_of_bf16);

    /// Raw i32 dot products (as f32) of int8 rows with an i16 vector; the
    /// caller applies the scales. 16 columns per madd.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2 and FMA (checked at run time with
    /// `is_x86_feature_detected!`, as `Simd::detect` does); otherwise the
    /// instructions are undefined behaviour.
    /// `q.len()` must be at least `xq.len() * out.len()`: rows are read
    /// through raw pointers without bounds checks. No alignment is
    /// required.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn matvec_i8(q: &[i8], xq: &[i16], out: &mut [f32]) {
        let cols = xq.len();
        let body = cols / 16 * 16;
        let rows = out.len();
        let qp = q.as_ptr();
        let xp = xq.as_ptr();
        let row_dot_tail = |i: usize, from: usize| -> i32 {
            (from..cols)
                .map(|j| *qp.add(i * cols + j) as i32 * xq[j] as i32)
                .sum()
        };
        let mut i = 0;
        while i + 4 <= rows {
            let (r0, r1, r2, r3) = (
                qp.add(i * cols),
                qp.add((i + 1) * cols),
                qp.add((i + 2) * cols),
                qp.add((i + 3) * cols),
            );
            let (mut a0, mut a1, mut a2, mut a3) = (
                _mm256_setzero_si256(),
                _mm256_setzero_si256(),
                _mm256_setzero_si256(),
                _mm256_setzero_si256(),
            );
            let mut j = 0;
            while j < body {
                let xv = _mm256_loadu_si256(xp.add(j) as *const __m256i);
                let w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(r0.add(j) as *const __m128i));
                let w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128(r1.add(j) as *const __m128i));
                let w2 = _mm256_cvtepi8_epi16(_mm_loadu_si128(r2.add(j) as *const __m128i));
                let w3 = _mm256_cvtepi8_epi16(_mm_loadu_si128(r3.add(j) as *const __m128i));
                a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(w0, xv));
                a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(w1, xv));
                a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(w2, xv));
                a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(w3, xv));
                j += 16;
            }
            out[i] = (hsum_epi32(a0) + row_dot_tail(i, body)) as f32;
            out[i + 1] = (hsum_epi32(a1) + row_dot_tail(i + 1, body)) as f32;
            out[i + 2] = (hsum_epi32(a2) + row_dot_tail(i + 2, body)) as f32;
            out[i + 3] = (hsum_epi32(a3) + row_dot_tail(i + 3, body)) as f32;
            i += 4;
        }
        while i < rows {
            out[i] = row_dot_tail(i, 0) as f32;
            i += 1;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::quant::{quantize_rows, to_bf16};
    use crate::model::testgen::Rng;

    fn reference(w: &[f32], x: &[f32]) -> Vec<f32> {
        w.chunks_exact(x.len())
            .map(|r| {
                r.iter()
                    .zip(x)
                    .map(|(a, b)| *a as f64 * *b as f64)
                    .sum::<f64>() as f32
            })
            .collect()
    }

    #[test]
    fn vector_softmax_matches_the_plain_one() {
        let mut rng = Rng::new(9);
        let x: Vec<f32> = (0..1003)
            .map(|i| rng.uniform(30.0) - if i == 5 { 200.0 } else { 0.0 })
            .collect();
        let mut a = x.clone();
        let mut b = x.clone();
        softmax(Simd::detect(), &mut a);
        softmax(Simd::Portable, &mut b);
        for (p, q) in a.iter().zip(&b) {
            assert!((p - q).abs() <= 1e-6 * q.max(1e-30) + 1e-12, "{p} {q}");
        }
        assert!((a.iter().sum::<f32>() - 1.0).abs() < 1e-4);
    }

    #[test]
    fn vector_quantization_matches_the_plain_one() {
        let mut rng = Rng::new(11);
        let mut x: Vec<f32> = (0..1003).map(|_| rng.uniform(3.0)).collect();
        // Halves after scaling (x = 1 scales to 32767), a NaN, an exact zero.
        x.extend([
            1.0,
            -1.0,
            0.5 / 32767.0,
            -1.5 / 32767.0,
            2.5 / 32767.0,
            0.0,
            f32::NAN,
        ]);
        let mut q = Vec::new();
        let s = quantize_i16(&x, &mut q);
        let max = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let scale = max / 32767.0;
        let want: Vec<i16> = x
            .iter()
            .map(|v| (v * (1.0 / scale)).round() as i16)
            .collect();
        assert_eq!((s, q), (scale, want));
    }

    #[test]
    fn vector_gru_update_matches_the_plain_one() {
        let mut rng = Rng::new(5);
        let hd = 37; // a vector body and a scalar tail
        let mut v = |n: usize, s: f32| (0..n).map(|_| rng.uniform(s)).collect::<Vec<f32>>();
        let (gx, gh, b) = (v(3 * hd, 12.0), v(3 * hd, 12.0), v(3 * hd, 1.0));
        let (bhn, h) = (v(hd, 1.0), v(hd, 1.0));
        let (mut a, mut p) = (vec![0.0; hd], vec![0.0; hd]);
        gru_update(Simd::detect(), &gx, &gh, &b, &bhn, &h, &mut a);
        gru_update(Simd::Portable, &gx, &gh, &b, &bhn, &h, &mut p);
        for (x, y) in a.iter().zip(&p) {
            assert!((x - y).abs() <= 1e-6, "{x} {y}");
        }
    }

    #[test]
    fn simd_and_portable_kernels_agree_with_the_reference() {
        let mut rng = Rng::new(3);
        // Odd sizes exercise the tails of every loop.
        for &(rows, cols) in &[(7usize, 37usize), (64, 256), (5, 16), (1, 3)] {
            let w: Vec<f32> = (0..rows * cols).map(|_| rng.uniform(1.0)).collect();
            let x: Vec<f32> = (0..cols).map(|_| rng.uniform(1.0)).collect();
            let want = reference(&w, &x);
            let bf: Vec<u16> = w.iter().map(|&v| to_bf16(v)).collect();
            let (q, s) = quantize_rows(&w, cols);
            let mut xq = Vec::new();
            let xs = quantize_i16(&x, &mut xq);
            for simd in [Simd::detect(), Simd::Avx2Fma, Simd::Portable] {
                if simd == Simd::Avx2Fma && Simd::detect() == Simd::Portable {
                    continue;
                }
                let mut out = vec![0.0; rows];
                matvec_f32(simd, &w, &x, &mut out);
                for (a, b) in out.iter().zip(&want) {
                    assert!((a - b).abs() < 1e-4, "f32 {simd:?} {a} {b}");
                }
                matvec_bf16(simd, &bf, &x, &mut out);
                for (a, b) in out.iter().zip(&want) {
                    assert!(
                        (a - b).abs() < 0.02 * (cols as f32).sqrt(),
                        "bf16 {simd:?} {a} {b}"
                    );
                }
                matvec_i8(simd, &q, &s, &xq, xs, &mut out);
                for (a, b) in out.iter().zip(&want) {
                    assert!(
                        (a - b).abs() < 0.01 * (cols as f32).sqrt(),
                        "int8 {simd:?} {a} {b}"
                    );
                }
            }
        }
    }
}
