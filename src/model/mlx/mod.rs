//! The `mlx` backend: the model on a GPU (Metal, CUDA) or CPU through the
//! prebuilt MLX C++ library, reached by our C++ bridge (bridge.h/bridge.cpp,
//! compiled by build.rs). This module owns the FFI and its safe wrapper.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};

use super::cpu::CpuBackend;
use super::weights::{WeightType, Weights, MATRICES};
use super::Backend;
use crate::text::vocab::Vocab;

pub mod check;
pub use check::Mismatch;

#[repr(C)]
struct RawWeights {
    vocab: i32,
    embed: i32,
    hidden: i32,
    src_dtype: i32,
    embed_w: *const c_void,
    gru_wx: *const c_void,
    gru_wh: *const c_void,
    gru_b: *const c_void,
    gru_bhn: *const c_void,
    proj_w: *const c_void,
    proj_b: *const c_void,
    out_b: *const c_void,
}

#[repr(C)]
struct RawOptions {
    device: i32,
    compute: i32,
    compile: i32,
    poll: i32,
    group_size: i32,
    warmup: i32,
    mlx_copy: i32,
    matrix_compute: [i32; 4],
}

#[repr(C)]
struct RawModel {
    _private: [u8; 0],
}

extern "C" {
    fn laya_mlx_last_error() -> *const c_char;
    fn laya_mlx_version() -> *const c_char;
    fn laya_mlx_gpu_available() -> c_int;
    fn laya_mlx_set_kernel_cache_dir(dir: *const c_char) -> c_int;
    fn laya_mlx_create(
        w: *const RawWeights,
        o: *const RawOptions,
        out: *mut *mut RawModel,
    ) -> c_int;
    fn laya_mlx_destroy(m: *mut RawModel);
    fn laya_mlx_device_name(m: *const RawModel, buf: *mut c_char, len: usize) -> c_int;
    fn laya_mlx_step(m: *mut RawModel, h: *const f32, token: u32, h_out: *mut f32) -> c_int;
    fn laya_mlx_logits(m: *mut RawModel, h: *const f32, out: *mut f32) -> c_int;
    fn laya_mlx_step_logits(
        m: *mut RawModel,
        h: *const f32,
        token: u32,
        h_out: *mut f32,
        logits: *mut f32,
    ) -> c_int;
    fn laya_mlx_step_topk(
        m: *mut RawModel,
        h: *const f32,
        token: u32,
        h_out: *mut f32,
        k: i32,
        ids: *mut u32,
        vals: *mut f32,
    ) -> c_int;
    fn laya_mlx_reset(m: *mut RawModel) -> c_int;
}

/// The bridge's error for a non-zero return code.
fn check(code: c_int, what: &str) -> Result<()> {
    if code == 0 {
        return Ok(());
    }
    // SAFETY: the bridge returns a valid NUL-terminated thread-local string.
    let msg = unsafe { CStr::from_ptr(laya_mlx_last_error()) }
        .to_string_lossy()
        .into_owned();
    bail!("mlx {what} failed (code {code}): {msg}")
}

/// True when MLX sees a GPU (Metal or CUDA): what "auto" needs to pick mlx.
pub fn gpu_available() -> bool {
    // SAFETY: no arguments; the bridge catches every exception.
    unsafe { laya_mlx_gpu_available() == 1 }
}

/// The linked MLX library's version ("0.32.4").
pub fn version() -> String {
    // SAFETY: returns a static NUL-terminated string.
    unsafe { CStr::from_ptr(laya_mlx_version()) }
        .to_string_lossy()
        .into_owned()
}

/// Where the model runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MlxDevice {
    /// GPU when MLX has one, else CPU.
    Auto,
    Cpu,
    Gpu,
}

/// How the weights are held on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MlxCompute {
    F32,
    Bf16,
    F16,
    /// MLX affine quantization, 8 bits, group 64.
    Q8,
    /// MLX affine quantization, 4 bits (group 64 unless set). What a file
    /// with `quant_bits = 4` runs as (models/FORMAT.md, its own group): a
    /// model trained with it (`python -m training.qat`). Rounding another
    /// model's weights this way loses too much (top-1 agreement with f32
    /// 85-89 % for the model alone; BENCHMARKS.md), so no engine setting
    /// maps to it.
    Q4,
}

impl MlxCompute {
    pub fn parse(s: &str) -> Result<Self> {
        Ok(match s {
            "f32" => Self::F32,
            "bf16" => Self::Bf16,
            "f16" => Self::F16,
            "q8" | "int8" => Self::Q8,
            "q4" | "int4" => Self::Q4,
            _ => bail!("unknown mlx compute type {s:?} (f32, bf16, f16, q8, q4)"),
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::Bf16 => "bf16",
            Self::F16 => "f16",
            Self::Q8 => "q8",
            Self::Q4 => "q4",
        }
    }

    /// The bridge's LAYA_MLX_COMPUTE_* (bridge.h).
    fn code(self) -> i32 {
        match self {
            Self::F32 => 0,
            Self::Bf16 => 1,
            Self::F16 => 2,
            Self::Q8 => 3,
            Self::Q4 => 4,
        }
    }
}

#[derive(Clone, Debug)]
pub struct MlxOptions {
    pub device: MlxDevice,
    pub compute: MlxCompute,
    /// Fuse the step with mlx::core::compile.
    pub compile: bool,
    /// Poll for GPU results instead of MLX's blocking wait; None = on for a
    /// GPU, off for the CPU (spinning there would steal MLX's worker core).
    pub poll: Option<bool>,
    /// Steps run at load so the first keystroke does not pay kernel builds.
    pub warmup: u32,
    /// Read results through MLX's own array::data() on CUDA too (slow: a
    /// fresh managed allocation per call); false uses the bridge's pinned
    /// copy. Kept to measure the difference.
    pub mlx_copy: bool,
    /// Where MLX caches JIT-compiled GPU kernels (CUDA: MLX_PTX_CACHE_DIR);
    /// None keeps MLX's default. Takes effect before the first GPU kernel.
    pub kernel_cache_dir: Option<PathBuf>,
    /// Weights per scale and bias of q8/q4 (MLX takes 32, 64 or 128; embed
    /// and hidden must be multiples). Kept adjustable so that benchmarks can
    /// measure the accuracy each costs; the engine uses the default 64.
    pub group_size: u32,
    /// How each matrix of `MATRICES` (embed, gru.wx, gru.wh, proj.w) is
    /// held where it differs from `compute` (None: `compute`); activations
    /// follow `compute`. A file with bits of its own for a matrix
    /// (`quant_bits.embed`, models/FORMAT.md) runs it as those say.
    pub matrix_compute: [Option<MlxCompute>; 4],
}

impl Default for MlxOptions {
    fn default() -> Self {
        MlxOptions {
            device: MlxDevice::Auto,
            compute: MlxCompute::F32,
            compile: true,
            poll: None,
            warmup: 2,
            mlx_copy: false,
            kernel_cache_dir: None,
            group_size: 64,
            matrix_compute: [None; 4],
        }
    }
}

/// Borrowed weights in models/FORMAT.md's layout (row-major), one element
/// type for all tensors: `f32` or `half::bf16`.
#[derive(Clone, Copy, Debug)]
pub struct GruWeights<'a, T> {
    pub vocab: usize,
    pub embed: usize,
    pub hidden: usize,
    pub embed_w: &'a [T],
    pub gru_wx: &'a [T],
    pub gru_wh: &'a [T],
    pub gru_b: &'a [T],
    pub gru_bhn: &'a [T],
    pub proj_w: &'a [T],
    pub proj_b: &'a [T],
    pub out_b: &'a [T],
}

impl<T> GruWeights<'_, T> {
    fn check(&self) -> Result<()> {
        let (v, e, h) = (self.vocab, self.embed, self.hidden);
        ensure!(v > 0 && e > 0 && h > 0, "mlx: empty model dims {v}/{e}/{h}");
        ensure!(
            v <= i32::MAX as usize && 3 * h <= i32::MAX as usize,
            "mlx: model too large"
        );
        let shapes = [
            ("embed", self.embed_w.len(), v * e),
            ("gru.wx", self.gru_wx.len(), 3 * h * e),
            ("gru.wh", self.gru_wh.len(), 3 * h * h),
            ("gru.b", self.gru_b.len(), 3 * h),
            ("gru.bhn", self.gru_bhn.len(), h),
            ("proj.w", self.proj_w.len(), e * h),
            ("proj.b", self.proj_b.len(), e),
            ("out.b", self.out_b.len(), v),
        ];
        for (name, got, want) in shapes {
            ensure!(
                got == want,
                "mlx: tensor {name} has {got} values, expected {want}"
            );
        }
        Ok(())
    }

    fn raw(&self, src_dtype: i32) -> RawWeights {
        RawWeights {
            vocab: self.vocab as i32,
            embed: self.embed as i32,
            hidden: self.hidden as i32,
            src_dtype,
            embed_w: self.embed_w.as_ptr().cast(),
            gru_wx: self.gru_wx.as_ptr().cast(),
            gru_wh: self.gru_wh.as_ptr().cast(),
            gru_b: self.gru_b.as_ptr().cast(),
            gru_bhn: self.gru_bhn.as_ptr().cast(),
            proj_w: self.proj_w.as_ptr().cast(),
            proj_b: self.proj_b.as_ptr().cast(),
            out_b: self.out_b.as_ptr().cast(),
        }
    }
}

/// The model loaded into MLX. Stateless for the `Backend` trait (the state
/// travels in and out); `step_resident` keeps it on the device instead.
pub struct MlxBackend {
    raw: *mut RawModel,
    vocab: usize,
    hidden: usize,
    device: String,
    compute: MlxCompute,
    /// Each matrix's compute (`MATRICES` order): `compute` unless the
    /// options gave it its own.
    matrix_compute: [MlxCompute; 4],
    /// Test-only: added to every logit it hands back, in a pattern over the
    /// ids (LAYA_TEST_MLX_SKEW), to show that the self-check catches a
    /// backend computing wrong results. 0 otherwise.
    skew: f32,
}

// SAFETY: the bridge runs every op on its own MLX stream created with
// new_thread_unsafe_stream (usable from any thread), and `&mut self` on every
// call keeps use from two threads at once out.
unsafe impl Send for MlxBackend {}

impl MlxBackend {
    /// Loads f32 weights (the cpu backend's int8 dequantized to f32 gives the
    /// same numbers on both sides).
    pub fn from_f32(w: &GruWeights<'_, f32>, opts: &MlxOptions) -> Result<Self> {
        w.check()?;
        Self::create(&w.raw(0), w, opts)
    }

    /// Loads bf16 weights (a `bf16` model file as stored).
    pub fn from_bf16(w: &GruWeights<'_, half::bf16>, opts: &MlxOptions) -> Result<Self> {
        w.check()?;
        Self::create(&w.raw(1), w, opts)
    }

    fn create<T>(raw_w: &RawWeights, w: &GruWeights<'_, T>, opts: &MlxOptions) -> Result<Self> {
        if let Some(dir) = &opts.kernel_cache_dir {
            std::fs::create_dir_all(dir)?;
            let c = CString::new(dir.to_string_lossy().as_bytes())?;
            // SAFETY: c is a valid NUL-terminated string for the call.
            check(
                unsafe { laya_mlx_set_kernel_cache_dir(c.as_ptr()) },
                "kernel cache dir",
            )?;
        }
        let raw_o = RawOptions {
            device: match opts.device {
                MlxDevice::Auto => 0,
                MlxDevice::Cpu => 1,
                MlxDevice::Gpu => 2,
            },
            compute: opts.compute.code(),
            compile: opts.compile as i32,
            poll: opts.poll.map_or(-1, |p| p as i32),
            group_size: i32::try_from(opts.group_size)?,
            warmup: opts.warmup.min(1000) as i32,
            mlx_copy: opts.mlx_copy as i32,
            matrix_compute: opts.matrix_compute.map(|c| c.map_or(-1, MlxCompute::code)),
        };
        let mut raw = std::ptr::null_mut();
        // SAFETY: the weight pointers stay valid for the call (borrowed from
        // `w`, lengths checked); the bridge copies them.
        check(unsafe { laya_mlx_create(raw_w, &raw_o, &mut raw) }, "load")?;
        let mut b = MlxBackend {
            raw,
            vocab: w.vocab,
            hidden: w.hidden,
            device: String::new(),
            compute: opts.compute,
            matrix_compute: opts.matrix_compute.map(|c| c.unwrap_or(opts.compute)),
            skew: 0.0,
        };
        let mut buf = [0 as c_char; 256];
        // SAFETY: buf is writable for its length; the bridge NUL-terminates.
        check(
            unsafe { laya_mlx_device_name(b.raw, buf.as_mut_ptr(), buf.len()) },
            "device",
        )?;
        // SAFETY: NUL-terminated by the bridge.
        let name = unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        b.device = format!("mlx {name} {}", b.compute.as_str());
        let own: Vec<String> = MATRICES
            .iter()
            .zip(b.matrix_compute)
            .filter(|&(_, c)| c != b.compute)
            .map(|(n, c)| format!("{n} {}", c.as_str()))
            .collect();
        if !own.is_empty() {
            b.device += &format!(" ({})", own.join(", "));
        }
        Ok(b)
    }

    /// Loads a validated model file (see `open`). `dtype` None keeps the
    /// file's numbers exactly: f32 stays f32, bf16 stays bf16, int8 is
    /// dequantized to f32 (the same weights the cpu backend's f32 view
    /// holds), and a file with affine quantization (`quant_bits`) is
    /// quantized by MLX at load as it says, the model it was trained as
    /// (each matrix with its bits, q4 or q8; the bits most matrices have
    /// are the backend's compute). Asking for int8 gives MLX's 8-bit affine
    /// quantization; asking for another dtype of a file with affine
    /// quantization, its dequantized values in that dtype.
    pub fn from_weights(w: &Weights, dtype: Option<WeightType>, opts: &MlxOptions) -> Result<Self> {
        let c = &w.config;
        let bits = |b: u32| {
            if b == 4 {
                MlxCompute::Q4
            } else {
                MlxCompute::Q8
            }
        };
        let (compute, group, matrix_compute) = match (dtype, c.quant) {
            (None, Some(q)) => {
                let main = bits(q.main_bits());
                let own = q.bits.map(|b| Some(bits(b)).filter(|&m| m != main));
                (main, q.group as u32, own)
            }
            _ => {
                let compute = match dtype.unwrap_or(c.dtype) {
                    WeightType::F32 => MlxCompute::F32,
                    WeightType::Bf16 => MlxCompute::Bf16,
                    WeightType::Int8 if dtype.is_none() => MlxCompute::F32,
                    WeightType::Int8 => MlxCompute::Q8,
                };
                (compute, opts.group_size, [None; 4])
            }
        };
        // MLX quantizes a file's stored numbers itself as the file says;
        // every other mode gets what the model computes with.
        let by_mlx = dtype.is_none() && c.quant.is_some();
        let t = |name: &str| {
            if by_mlx {
                w.stored_f32(name)
            } else {
                w.model_f32(name)
            }
        };
        let (embed_w, gru_wx, gru_wh, proj_w) = (t("embed"), t("gru.wx"), t("gru.wh"), t("proj.w"));
        let (gru_b, gru_bhn, proj_b, out_b) = (t("gru.b"), t("gru.bhn"), t("proj.b"), t("out.b"));
        let view = GruWeights {
            vocab: c.vocab_size,
            embed: c.embed_dim,
            hidden: c.hidden_dim,
            embed_w: &embed_w,
            gru_wx: &gru_wx,
            gru_wh: &gru_wh,
            gru_b: &gru_b,
            gru_bhn: &gru_bhn,
            proj_w: &proj_w,
            proj_b: &proj_b,
            out_b: &out_b,
        };
        let opts = MlxOptions {
            compute,
            group_size: group,
            matrix_compute,
            ..opts.clone()
        };
        Self::from_f32(&view, &opts)
            .with_context(|| format!("mlx backend for {}", w.path.display()))
    }

    pub fn compute(&self) -> MlxCompute {
        self.compute
    }

    /// Each matrix's compute, in `MATRICES` order.
    pub fn matrix_compute(&self) -> [MlxCompute; 4] {
        self.matrix_compute
    }

    fn check_state(&self, h: &[f32], what: &str) -> Result<()> {
        ensure!(
            h.len() == self.hidden,
            "mlx: {what} has {} values, expected {}",
            h.len(),
            self.hidden
        );
        Ok(())
    }

    /// Step, then the `ids.len()` (1..=64) largest logits, largest first, in
    /// one evaluation; the first stage of the selection runs on the device so
    /// only a few thousand values come back instead of all logits.
    pub fn step_topk(
        &mut self,
        h: &[f32],
        token: u32,
        h_out: &mut [f32],
        ids: &mut [u32],
        vals: &mut [f32],
    ) -> Result<()> {
        self.check_state(h, "state")?;
        self.check_state(h_out, "output state")?;
        ensure!(
            ids.len() == vals.len(),
            "mlx: top-k ids and values differ in length"
        );
        let k = i32::try_from(ids.len())?;
        // SAFETY: lengths checked above; the bridge checks k's range.
        let rc = unsafe {
            laya_mlx_step_topk(
                self.raw,
                h.as_ptr(),
                token,
                h_out.as_mut_ptr(),
                k,
                ids.as_mut_ptr(),
                vals.as_mut_ptr(),
            )
        };
        check(rc, "step+top-k")
    }

    /// Advances the device-resident state by `token` and computes its logits
    /// in one evaluation; copies them into `logits` if given (None: nothing
    /// comes back to the host, which isolates the copy's cost in benchmarks).
    pub fn step_resident(&mut self, token: u32, logits: Option<&mut [f32]>) -> Result<()> {
        let rc = match logits {
            Some(l) => {
                ensure!(
                    l.len() == self.vocab,
                    "mlx: logits buffer has {} values, expected {}",
                    l.len(),
                    self.vocab
                );
                // SAFETY: length checked; null state pointers select the resident state.
                unsafe {
                    laya_mlx_step_logits(
                        self.raw,
                        std::ptr::null(),
                        token,
                        std::ptr::null_mut(),
                        l.as_mut_ptr(),
                    )
                }
            }
            // SAFETY: null pointers select the resident state and no copy.
            None => unsafe {
                laya_mlx_step_logits(
                    self.raw,
                    std::ptr::null(),
                    token,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            },
        };
        check(rc, "resident step")
    }

    /// The device-resident state back to zeros (before `<s>`).
    pub fn reset(&mut self) -> Result<()> {
        // SAFETY: raw is live until drop.
        check(unsafe { laya_mlx_reset(self.raw) }, "reset")
    }
}

/// Opens the model at `path` (checked against `vocab`) on MLX with the
/// default options (the GPU when there is one, kernels built at load), then
/// runs the self-check (check.rs) against the cpu backend on the same
/// weights: a `Mismatch` error when MLX computes something else.
pub fn open(path: &Path, vocab: &Vocab, dtype: Option<WeightType>) -> Result<MlxBackend> {
    let w = Weights::open(path, Some(vocab))?;
    let mut b = MlxBackend::from_weights(&w, dtype, &MlxOptions::default())?;
    b.skew = std::env::var("LAYA_TEST_MLX_SKEW")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    let t0 = std::time::Instant::now();
    let mut cpu = CpuBackend::new(w, Some(WeightType::F32));
    let r = check::run(&mut b, &mut cpu)?;
    log::info!(
        "mlx self-check passed: {} steps against the cpu backend, max |delta logit| {:.2e} \
         (tolerance {:.2e}), max |delta state| {:.2e}, top-1 agreed {}/{}, {:.1} ms \
         (first step {:.1} ms; {:.1} ms with the cpu backend's load)",
        r.steps,
        r.max_logit_delta,
        r.logit_tolerance,
        r.max_state_delta,
        r.top1_agreed,
        r.steps,
        r.ms,
        r.first_ms,
        t0.elapsed().as_secs_f64() * 1e3
    );
    Ok(b)
}

impl MlxBackend {
    /// The test-only skew on the logits (see the field).
    fn skewed(&self, logits: &mut [f32]) {
        if self.skew != 0.0 {
            for (i, l) in logits.iter_mut().enumerate() {
                *l += self.skew * ((i % 13) as f32 - 6.0);
            }
        }
    }
}

impl Drop for MlxBackend {
    fn drop(&mut self) {
        // SAFETY: raw came from laya_mlx_create and is destroyed once.
        unsafe { laya_mlx_destroy(self.raw) }
    }
}

impl Backend for MlxBackend {
    fn name(&self) -> &'static str {
        "mlx"
    }

    fn device(&self) -> String {
        self.device.clone()
    }

    fn vocab_size(&self) -> usize {
        self.vocab
    }

    fn hidden_dim(&self) -> usize {
        self.hidden
    }

    /// The weights' type; a file whose matrices differ (an 8-bit embedding
    /// beside 4-bit matrices) says so, as its device string does.
    fn dtype(&self) -> &'static str {
        use MlxCompute::{Q4, Q8};
        if self.matrix_compute.iter().all(|&c| c == self.compute) {
            self.compute.as_str()
        } else if self.compute == Q4 && self.matrix_compute == [Q8, Q4, Q4, Q4] {
            "q4 (embed q8)"
        } else {
            "mixed"
        }
    }

    /// Step and logits in one evaluation and one device-to-host copy.
    fn step_logits(
        &mut self,
        h: &[f32],
        token: u32,
        h_out: &mut [f32],
        logits: &mut [f32],
    ) -> Result<()> {
        self.check_state(h, "state")?;
        self.check_state(h_out, "output state")?;
        ensure!(
            logits.len() == self.vocab,
            "mlx: logits buffer has {} values, expected {}",
            logits.len(),
            self.vocab
        );
        // SAFETY: lengths checked above.
        let rc = unsafe {
            laya_mlx_step_logits(
                self.raw,
                h.as_ptr(),
                token,
                h_out.as_mut_ptr(),
                logits.as_mut_ptr(),
            )
        };
        check(rc, "step+logits")?;
        self.skewed(logits);
        Ok(())
    }

    fn step(&mut self, h: &[f32], token: u32, h_out: &mut [f32]) -> Result<()> {
        self.check_state(h, "state")?;
        self.check_state(h_out, "output state")?;
        // SAFETY: lengths checked above.
        check(
            unsafe { laya_mlx_step(self.raw, h.as_ptr(), token, h_out.as_mut_ptr()) },
            "step",
        )
    }

    fn logits(&mut self, h: &[f32], logits: &mut [f32]) -> Result<()> {
        self.check_state(h, "state")?;
        ensure!(
            logits.len() == self.vocab,
            "mlx: logits buffer has {} values, expected {}",
            logits.len(),
            self.vocab
        );
        // SAFETY: lengths checked above.
        check(
            unsafe { laya_mlx_logits(self.raw, h.as_ptr(), logits.as_mut_ptr()) },
            "logits",
        )?;
        self.skewed(logits);
        Ok(())
    }
}

impl crate::model::reference::OwnedWeights {
    /// The weights as the bridge takes them.
    pub fn view(&self) -> GruWeights<'_, f32> {
        GruWeights {
            vocab: self.vocab,
            embed: self.embed,
            hidden: self.hidden,
            embed_w: &self.embed_w,
            gru_wx: &self.gru_wx,
            gru_wh: &self.gru_wh,
            gru_b: &self.gru_b,
            gru_bhn: &self.gru_bhn,
            proj_w: &self.proj_w,
            proj_b: &self.proj_b,
            out_b: &self.out_b,
        }
    }
}
