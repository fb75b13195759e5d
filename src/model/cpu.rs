//! The `cpu` backend: the GRU step and the tied output layer of FORMAT.md in
//! pure Rust, on f32, bf16 or int8 weights, on one thread or sharing steps
//! and output layers with a second (`pair`). Matrices are read in place from the model
//! file's bytes (held by `Weights`) when its dtype is the one asked for;
//! otherwise converted once.

mod pair;

use super::kernels::{gru_update, matvec_bf16, matvec_f32, matvec_i8, quantize_i16, Simd};
use super::quant::{from_bf16, quantize_rows, to_bf16};
use super::weights::{AffineQuant, WeightType, Weights};
use super::Backend;
use anyhow::{bail, Result};
use std::ops::Range;
use std::sync::{Arc, OnceLock};

/// Tokens (the most frequent: ids are by training frequency) whose input
/// gates `gru.wx · embed[t]` are kept once computed. They depend on the
/// token alone, and reading a kept row (~9 KB) instead of `gru.wx` (3H × E
/// int8, ~0.6 MB) takes a quarter off a step, which streams its matrices
/// from memory. Ids below 512 are ~78% of prose tokens, ~88% of code;
/// all 512 kept cost 512 · 3H · 4 bytes (4.7 MB at H = 768).
const KEPT_INPUT_GATES: usize = 512;

/// Output layers of at least this many rows are shared with the partner
/// (`pair`), when the backend may use two threads.
const PAIRED_ROWS: usize = 1024;

/// Matrix storage: a byte range of the model file, or owned (converted) values.
enum Buf<T> {
    InFile(Range<usize>),
    Owned(Vec<T>),
}

enum MatrixData {
    F32(Buf<f32>),
    Bf16(Buf<u16>),
    Int8(Buf<i8>, Vec<f32>),
}

struct Matrix {
    rows: usize,
    cols: usize,
    data: MatrixData,
}

/// Reinterprets the file's bytes as `T`. Only used for f32, u16 and i8 (every bit
/// pattern valid), on ranges whose alignment was checked at load.
fn cast<T: Copy>(bytes: &[u8]) -> &[T] {
    // SAFETY: T is one of f32/u16/i8 (all bit patterns valid); `Buf::InFile`
    // is only built for ranges that align_to leaves with no head or tail.
    let (head, mid, tail) = unsafe { bytes.align_to::<T>() };
    assert!(
        head.is_empty() && tail.is_empty(),
        "tensor in the file lost its alignment"
    );
    mid
}

fn view<'a, T: Copy>(buf: &'a Buf<T>, map: &'a [u8]) -> &'a [T] {
    match buf {
        Buf::InFile(r) => cast(&map[r.clone()]),
        Buf::Owned(v) => v,
    }
}

fn aligned_for<T>(bytes: &[u8]) -> bool {
    (bytes.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>())
        && cfg!(target_endian = "little")
}

/// The file's bytes for a tensor as the matrix data of `target` dtype.
fn load_matrix(w: &Weights, name: &str, target: WeightType) -> Matrix {
    let cfg = &w.config;
    let (rows, cols) = match name {
        "embed" => (cfg.vocab_size, cfg.embed_dim),
        "gru.wx" => (3 * cfg.hidden_dim, cfg.embed_dim),
        "gru.wh" => (3 * cfg.hidden_dim, cfg.hidden_dim),
        _ => (cfg.embed_dim, cfg.hidden_dim),
    };
    let bytes = w.bytes(name);
    let range = w.range(name);
    let data = match (cfg.dtype, target) {
        // A file with affine quantization is read through it (below).
        _ if cfg.quant.is_some() => load_converted(w, name, cols, target),
        (WeightType::F32, WeightType::F32) if aligned_for::<f32>(bytes) => {
            MatrixData::F32(Buf::InFile(range))
        }
        (WeightType::Bf16, WeightType::Bf16) if aligned_for::<u16>(bytes) => {
            MatrixData::Bf16(Buf::InFile(range))
        }
        (WeightType::Int8, WeightType::Int8) => MatrixData::Int8(
            Buf::InFile(range),
            w.f32s(&format!("{name}.scale")).into_owned(),
        ),
        _ => load_converted(w, name, cols, target),
    };
    Matrix { rows, cols, data }
}

/// A matrix as the model computes with it, converted to `target`.
fn load_converted(w: &Weights, name: &str, cols: usize, target: WeightType) -> MatrixData {
    let vals = w.model_f32(name);
    match target {
        WeightType::F32 => MatrixData::F32(Buf::Owned(vals)),
        WeightType::Bf16 => {
            MatrixData::Bf16(Buf::Owned(vals.iter().map(|&v| to_bf16(v)).collect()))
        }
        WeightType::Int8 => {
            let (q, s) = quantize_rows(&vals, cols);
            MatrixData::Int8(Buf::Owned(q), s)
        }
    }
}

/// A 1-D tensor as f32 (copied: small).
fn vector(w: &Weights, name: &str) -> Vec<f32> {
    w.stored_f32(name)
}

/// The weights, read-only once loaded (shared by `fork`ed backends).
struct Model {
    /// The model file while any matrix is read from it; dropped when
    /// everything was converted, so its bytes are freed.
    weights: Option<Weights>,
    dtype: WeightType,
    /// The file's affine quantization, which the matrices went through.
    quant: Option<AffineQuant>,
    simd: Simd,
    embed: Matrix,
    wx: Matrix,
    wh: Matrix,
    proj: Matrix,
    gru_b: Vec<f32>,
    bhn: Vec<f32>,
    proj_b: Vec<f32>,
    out_b: Vec<f32>,
    /// `gru.wx · embed[t]` of the tokens below KEPT_INPUT_GATES, computed on
    /// first use by whichever backend (engine or helper) steps over them:
    /// the same kernel on the same values, so the same numbers every time.
    input_gates: Vec<OnceLock<Box<[f32]>>>,
}

pub struct CpuBackend {
    m: Arc<Model>,
    // Scratch, so a step allocates nothing.
    scratch: StepScratch,
    y: Vec<f32>,
    /// The state `y` was projected from, so the output layer computed in
    /// pieces (`logits_rows` on the same state) projects it once.
    y_of: Vec<f32>,
    /// `y` quantized for an int8 output layer, once for all its pieces
    /// (scale None until the first piece of a new `y`).
    yq: (Vec<i16>, Option<f32>),
    /// The thread sharing steps and output layers (`pair`), started on
    /// first use when `threads` allows it.
    partner: Option<pair::Partner>,
    /// Threads one computation may use (`Backend::set_threads`; 1 unless
    /// set: a `fork`, the think-ahead thread's, keeps to one).
    threads: usize,
    units: UnitScratch,
}

/// Scratch of a whole step.
struct StepScratch {
    x: Vec<f32>,
    gx: Vec<f32>,
    gh: Vec<f32>,
    q16: Vec<i16>,
}

/// Scratch for one band of hidden units' share of a step (`Model::step_units`).
#[derive(Default)]
struct UnitScratch {
    x: Vec<f32>,
    xq: Vec<i16>,
    hq: Vec<i16>,
    gx: Vec<f32>,
    gh: Vec<f32>,
    b: Vec<f32>,
}

impl CpuBackend {
    /// Runs `weights` in `dtype` (None = the file's own dtype, or f32 for a
    /// file with affine quantization: its dequantized values exactly).
    pub fn new(weights: Weights, dtype: Option<WeightType>) -> CpuBackend {
        let own = match weights.config.quant {
            Some(_) => WeightType::F32,
            None => weights.config.dtype,
        };
        let dtype = dtype.unwrap_or(own);
        let m = Model {
            embed: load_matrix(&weights, "embed", dtype),
            wx: load_matrix(&weights, "gru.wx", dtype),
            wh: load_matrix(&weights, "gru.wh", dtype),
            proj: load_matrix(&weights, "proj.w", dtype),
            gru_b: vector(&weights, "gru.b"),
            bhn: vector(&weights, "gru.bhn"),
            proj_b: vector(&weights, "proj.b"),
            out_b: vector(&weights, "out.b"),
            simd: Simd::detect(),
            dtype,
            quant: weights.config.quant,
            input_gates: (0..KEPT_INPUT_GATES.min(weights.config.vocab_size))
                .map(|_| OnceLock::new())
                .collect(),
            weights: Some(weights),
        }
        .drop_file_if_unused();
        CpuBackend::with_scratch(Arc::new(m))
    }

    fn with_scratch(m: Arc<Model>) -> CpuBackend {
        let (e, h) = (m.proj.rows, m.wh.cols);
        CpuBackend {
            scratch: StepScratch {
                x: vec![0.0; e],
                gx: vec![0.0; 3 * h],
                gh: vec![0.0; 3 * h],
                q16: Vec::with_capacity(h.max(e)),
            },
            y: vec![0.0; e],
            y_of: Vec::new(),
            yq: (Vec::with_capacity(e), None),
            partner: None,
            threads: 1,
            units: UnitScratch::default(),
            m,
        }
    }
}

impl CpuBackend {
    /// The partner thread, started now if the backend may use two threads
    /// and has none yet.
    fn partner(&mut self) -> Option<&mut pair::Partner> {
        if self.threads < 2 {
            return None;
        }
        if self.partner.as_ref().is_some_and(|p| !p.alive()) {
            log::warn!("cpu backend: the model's second thread stopped; one thread from now on");
            self.partner = None;
            self.threads = 1;
            return None;
        }
        if self.partner.is_none() {
            self.partner = pair::Partner::start(self.m.clone());
            if self.partner.is_none() {
                // No thread to be had: one from now on.
                self.threads = 1;
            }
        }
        self.partner.as_mut()
    }

    /// One step, arguments checked, half of it by the partner (started).
    fn paired_step(&mut self, h: &[f32], token: u32, h_out: &mut [f32]) {
        // Kept gates are computed once, whole, as `step_alone` does.
        let _ = self
            .m
            .kept_gates(token, &mut self.scratch.x, &mut self.scratch.q16);
        if let Some(p) = self.partner.as_mut() {
            p.step(&self.m, &mut self.units, h, token, h_out);
        }
    }
}

/// A step's arguments checked against the model.
fn check_step(m: &Model, h: &[f32], token: u32, h_out: &[f32]) -> Result<()> {
    let hd = m.wh.cols;
    if h.len() != hd || h_out.len() != hd {
        bail!(
            "cpu backend: state has length {} / {}, expected {hd}",
            h.len(),
            h_out.len()
        );
    }
    if token as usize >= m.embed.rows {
        bail!(
            "cpu backend: token id {token} out of range (vocabulary has {})",
            m.embed.rows
        );
    }
    Ok(())
}

/// One whole step on this thread: `h_out` = GRU(h, token), arguments
/// checked (`check_step`).
fn step_alone(m: &Model, s: &mut StepScratch, h: &[f32], token: u32, h_out: &mut [f32]) {
    let map = m.map();
    let gx: &[f32] = match m.kept_gates(token, &mut s.x, &mut s.q16) {
        Some(kept) => kept,
        None => {
            row(&m.embed, map, token as usize, &mut s.x);
            apply(m.simd, &m.wx, map, &s.x, &mut s.q16, &mut s.gx);
            &s.gx
        }
    };
    apply(m.simd, &m.wh, map, h, &mut s.q16, &mut s.gh);
    gru_update(m.simd, gx, &s.gh, &m.gru_b, &m.bhn, h, h_out);
}

/// `out = m · x` for any matrix storage.
fn apply(simd: Simd, m: &Matrix, map: &[u8], x: &[f32], q16: &mut Vec<i16>, out: &mut [f32]) {
    debug_assert_eq!((x.len(), out.len()), (m.cols, m.rows));
    match &m.data {
        MatrixData::F32(b) => matvec_f32(simd, view(b, map), x, out),
        MatrixData::Bf16(b) => matvec_bf16(simd, view(b, map), x, out),
        MatrixData::Int8(b, scale) => {
            let xs = quantize_i16(x, q16);
            matvec_i8(simd, view(b, map), scale, q16, xs, out)
        }
    }
}

/// `out = m[rows] · x`: the same as `apply` for a band of rows. For an int8
/// matrix `x` is quantized into `xq` on the first band (`xq.1` None) and
/// read from there by the next bands of the same `x`.
fn apply_rows(
    simd: Simd,
    m: &Matrix,
    map: &[u8],
    rows: Range<usize>,
    x: &[f32],
    xq: (&mut Vec<i16>, &mut Option<f32>),
    out: &mut [f32],
) {
    let span = rows.start * m.cols..rows.end * m.cols;
    match &m.data {
        MatrixData::F32(b) => matvec_f32(simd, &view(b, map)[span], x, out),
        MatrixData::Bf16(b) => matvec_bf16(simd, &view(b, map)[span], x, out),
        MatrixData::Int8(b, scale) => {
            let (q16, xs) = xq;
            let xs = *xs.get_or_insert_with(|| quantize_i16(x, q16));
            matvec_i8(simd, &view(b, map)[span], &scale[rows], q16, xs, out)
        }
    }
}

/// Row `r` of a matrix as f32 into `out`.
fn row(m: &Matrix, map: &[u8], r: usize, out: &mut [f32]) {
    let span = r * m.cols..(r + 1) * m.cols;
    match &m.data {
        MatrixData::F32(b) => out.copy_from_slice(&view(b, map)[span]),
        MatrixData::Bf16(b) => {
            for (o, &v) in out.iter_mut().zip(&view(b, map)[span]) {
                *o = from_bf16(v);
            }
        }
        MatrixData::Int8(b, scale) => {
            let s = scale[r];
            for (o, &q) in out.iter_mut().zip(&view(b, map)[span]) {
                *o = q as f32 * s;
            }
        }
    }
}

impl Model {
    fn map(&self) -> &[u8] {
        self.weights.as_ref().map_or(&[][..], Weights::all_bytes)
    }

    /// The kept input gates of `token` (computed now if not yet), None for
    /// a token whose gates are not kept.
    fn kept_gates(&self, token: u32, x: &mut Vec<f32>, q16: &mut Vec<i16>) -> Option<&[f32]> {
        let kept = self.input_gates.get(token as usize)?;
        Some(kept.get_or_init(|| {
            let mut v = vec![0.0; self.wx.rows];
            x.resize(self.wx.cols, 0.0);
            row(&self.embed, self.map(), token as usize, x);
            apply(self.simd, &self.wx, self.map(), x, q16, &mut v);
            v.into_boxed_slice()
        }))
    }

    /// Whether the hidden units split in two bands that compute exactly
    /// what one step does: every band of gate rows starts and ends on the
    /// kernels' row groups (4) and the update's vector width (8).
    fn splits_in_two(&self) -> bool {
        self.wh.cols.is_multiple_of(16)
    }

    /// The new values of hidden units `units` only (into `out`, one per
    /// unit) after stepping `h` over `token`: the rows of those units'
    /// three gates and their update. Each row is computed alone by the same
    /// kernels as `step`'s, so any split of the units gives `step`'s numbers
    /// (`splits_in_two`).
    fn step_units(
        &self,
        s: &mut UnitScratch,
        h: &[f32],
        token: u32,
        units: Range<usize>,
        out: &mut [f32],
    ) {
        let (map, hd, m) = (self.map(), h.len(), units.len());
        let band = |g: usize| g * hd + units.start..g * hd + units.end;
        s.gx.resize(3 * m, 0.0);
        s.gh.resize(3 * m, 0.0);
        s.b.clear();
        for g in 0..3 {
            s.b.extend_from_slice(&self.gru_b[band(g)]);
        }
        let kept = self.input_gates.get(token as usize).and_then(OnceLock::get);
        match kept {
            Some(gates) => {
                for g in 0..3 {
                    s.gx[g * m..(g + 1) * m].copy_from_slice(&gates[band(g)]);
                }
            }
            None => {
                s.x.resize(self.wx.cols, 0.0);
                row(&self.embed, map, token as usize, &mut s.x);
                self.gate_rows(&self.wx, &s.x, &mut s.xq, &units, hd, &mut s.gx);
            }
        }
        self.gate_rows(&self.wh, h, &mut s.hq, &units, hd, &mut s.gh);
        gru_update(
            self.simd,
            &s.gx,
            &s.gh,
            &s.b,
            &self.bhn[units.clone()],
            &h[units],
            out,
        );
    }

    /// `out` = the rows of `units` in each of `matrix`'s three gate bands
    /// (of `hd` rows each) times `x`, band after band.
    fn gate_rows(
        &self,
        matrix: &Matrix,
        x: &[f32],
        xq: &mut Vec<i16>,
        units: &Range<usize>,
        hd: usize,
        out: &mut [f32],
    ) {
        let (m, mut xs) = (units.len(), None);
        for g in 0..3 {
            let rows = g * hd + units.start..g * hd + units.end;
            let out = &mut out[g * m..(g + 1) * m];
            apply_rows(self.simd, matrix, self.map(), rows, x, (xq, &mut xs), out);
        }
    }

    fn drop_file_if_unused(mut self) -> Model {
        let in_file = |m: &Matrix| {
            matches!(
                m.data,
                MatrixData::F32(Buf::InFile(_))
                    | MatrixData::Bf16(Buf::InFile(_))
                    | MatrixData::Int8(Buf::InFile(_), _)
            )
        };
        if ![&self.embed, &self.wx, &self.wh, &self.proj]
            .into_iter()
            .any(in_file)
        {
            self.weights = None;
        }
        self
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn device(&self) -> String {
        let of = match self.m.quant {
            Some(q) => format!(" of {}", q.describe()),
            None => String::new(),
        };
        let threads = match self.threads {
            1 => "1 thread".to_string(),
            n => format!("{n} threads"),
        };
        format!(
            "cpu {}{of} ({}, {threads})",
            self.m.dtype.as_str(),
            self.m.simd.as_str()
        )
    }

    fn vocab_size(&self) -> usize {
        self.m.embed.rows
    }

    fn hidden_dim(&self) -> usize {
        self.m.wh.cols
    }

    fn dtype(&self) -> &'static str {
        self.m.dtype.as_str()
    }

    fn fork(&self) -> Option<Box<dyn Backend>> {
        // A fork (the think-ahead thread's) keeps to one thread.
        Some(Box::new(CpuBackend::with_scratch(self.m.clone())))
    }

    fn step(&mut self, h: &[f32], token: u32, h_out: &mut [f32]) -> Result<()> {
        check_step(&self.m, h, token, h_out)?;
        let splits = self.m.splits_in_two();
        match self.partner() {
            // Awake (from this keystroke's last task): half each.
            Some(p) if splits && p.awake() => self.paired_step(h, token, h_out),
            // Asleep: up for the output layer that usually follows.
            Some(p) => {
                p.wake();
                step_alone(&self.m, &mut self.scratch, h, token, h_out);
            }
            None => step_alone(&self.m, &mut self.scratch, h, token, h_out),
        }
        Ok(())
    }

    fn steps(&mut self, h: &[f32], tokens: &[u32], out: &mut [f32]) -> Result<()> {
        let hd = self.hidden_dim();
        if out.len() != tokens.len() * hd {
            bail!(
                "cpu backend: {} values for the states after {} tokens (hidden {hd})",
                out.len(),
                tokens.len()
            );
        }
        let splits = self.m.splits_in_two();
        if let Some(p) = self.partner() {
            p.new_chain();
            p.wake();
        }
        for (k, &token) in tokens.iter().enumerate() {
            let (done, rest) = out.split_at_mut(k * hd);
            let prev = if k == 0 { h } else { &done[(k - 1) * hd..] };
            let next = &mut rest[..hd];
            check_step(&self.m, prev, token, next)?;
            match &self.partner {
                Some(p) if splits && p.keeping_up() => self.paired_step(prev, token, next),
                _ => step_alone(&self.m, &mut self.scratch, prev, token, next),
            }
        }
        Ok(())
    }

    fn threads(&self) -> usize {
        match &self.partner {
            Some(p) if !p.alive() => 1,
            _ => self.threads,
        }
    }

    fn set_threads(&mut self, threads: usize) {
        // No more than the process may run at once (a partner without a
        // core of its own would only take turns with the caller).
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        self.threads = threads.clamp(1, cores.max(1));
        if self.threads < 2 {
            self.partner = None;
        }
    }

    fn logits(&mut self, h: &[f32], logits: &mut [f32]) -> Result<()> {
        let v = self.vocab_size();
        self.logits_rows(h, 0..v, logits)
    }

    fn logits_rows(&mut self, h: &[f32], rows: Range<usize>, out: &mut [f32]) -> Result<()> {
        if h.len() != self.hidden_dim() || rows.end > self.vocab_size() || rows.len() != out.len() {
            bail!(
                "cpu backend: logits for rows {rows:?} into {} values (vocabulary {}, state {})",
                out.len(),
                self.vocab_size(),
                h.len()
            );
        }
        let map = self.m.weights.as_ref().map_or(&[][..], Weights::all_bytes);
        let same = |a: &[f32], b: &[f32]| {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
        };
        if !same(&self.y_of, h) {
            apply(
                self.m.simd,
                &self.m.proj,
                map,
                h,
                &mut self.scratch.q16,
                &mut self.y,
            );
            for (y, b) in self.y.iter_mut().zip(&self.m.proj_b) {
                *y += b;
            }
            self.y_of.clear();
            self.y_of.extend_from_slice(h);
            self.yq.1 = None;
        }
        let yq = (&mut self.yq.0, &mut self.yq.1);
        match self.partner.as_mut().filter(|_| rows.len() >= PAIRED_ROWS) {
            Some(p) => p.rows(&self.m, &self.y, yq, rows.clone(), out),
            None => apply_rows(
                self.m.simd,
                &self.m.embed,
                map,
                rows.clone(),
                &self.y,
                yq,
                out,
            ),
        }
        for (l, b) in out.iter_mut().zip(&self.m.out_b[rows]) {
            *l += b;
        }
        Ok(())
    }
}
