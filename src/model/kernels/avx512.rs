//! The AVX-512 VNNI kernel: `avx2::matvec_i8` with 32 columns per instruction.

use super::*;

/// As `avx2::matvec_i8`, 32 columns per `vpdpwssd` (multiply i16 pairs and accumulate in i32).
///
/// # Safety
///
/// The CPU must support AVX-512F, AVX-512BW, AVX-512 VNNI, AVX2 and FMA
/// (checked at run time by `Simd::detect`). `q.len()` must be at least
/// `xq.len() * out.len()`: rows are read through raw pointers without
/// bounds checks. No alignment is required.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma")]
pub unsafe fn matvec_i8(q: &[i8], xq: &[i16], out: &mut [f32]) {
    let cols = xq.len();
    let body = cols / 32 * 32;
    let rows = out.len();
    let qp = q.as_ptr();
    let xp = xq.as_ptr();
    let tail = |i: usize, from: usize| -> i32 {
        (from..cols)
            .map(|j| *qp.add(i * cols + j) as i32 * xq[j] as i32)
            .sum()
    };
    let load = |p: *const i8| _mm512_cvtepi8_epi16(_mm256_loadu_si256(p as *const __m256i));
    let mut i = 0;
    while i + 4 <= rows {
        let r = [
            qp.add(i * cols),
            qp.add((i + 1) * cols),
            qp.add((i + 2) * cols),
            qp.add((i + 3) * cols),
        ];
        let mut a = [_mm512_setzero_si512(); 4];
        let mut j = 0;
        while j < body {
            let xv = _mm512_loadu_si512(xp.add(j) as *const _);
            a[0] = _mm512_dpwssd_epi32(a[0], load(r[0].add(j)), xv);
            a[1] = _mm512_dpwssd_epi32(a[1], load(r[1].add(j)), xv);
            a[2] = _mm512_dpwssd_epi32(a[2], load(r[2].add(j)), xv);
            a[3] = _mm512_dpwssd_epi32(a[3], load(r[3].add(j)), xv);
            j += 32;
        }
        for k in 0..4 {
            out[i + k] = (_mm512_reduce_add_epi32(a[k]) + tail(i + k, body)) as f32;
        }
        i += 4;
    }
    while i < rows {
        out[i] = tail(i, 0) as f32;
        i += 1;
    }
}
