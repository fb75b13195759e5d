//! Parity of the MLX backend (real MLX, through our C++ bridge) with the
//! engine's cpu backend on model files (a generated one of the default
//! model's shape, and models/laya-default.safetensors when it is there) and
//! with the plain FORMAT.md reference: same weights, same tokens, same logits
//! (f32: max |delta logit| <= 1e-4 and identical top-8 over 300 steps).
#![cfg(feature = "mlx")]

use std::path::{Path, PathBuf};

use laya::model::cpu::CpuBackend;
use laya::model::mlx::{MlxBackend, MlxCompute, MlxDevice, MlxOptions};
use laya::model::reference::{self, top_k, OwnedWeights};
use laya::model::weights::{WeightType, Weights};
use laya::model::{testgen, vocab_path_for, Backend};
use laya::text::vocab::Vocab;

// The default model's shape (models/FORMAT.md metadata example).
const VOCAB: usize = 16384;
const EMBED: usize = 256;
const HIDDEN: usize = 512;
const STEPS: usize = 300;

/// `<s>` then a reproducible stream of token ids over the whole vocabulary.
fn tokens() -> Vec<u32> {
    let mut rng = testgen::Rng::new(0x2545_F491_4F6C_DD1D);
    let mut out = vec![1u32];
    while out.len() < STEPS {
        out.push(rng.below(VOCAB) as u32);
    }
    out
}

fn cpu_options(compute: MlxCompute) -> MlxOptions {
    MlxOptions {
        device: MlxDevice::Cpu,
        compute,
        ..MlxOptions::default()
    }
}

/// Reference states and logits for every step of `tokens()`.
fn reference_run(w: &OwnedWeights) -> Vec<(Vec<f32>, Vec<f32>)> {
    let mut h = vec![0f32; HIDDEN];
    let mut out = Vec::new();
    for &t in &tokens() {
        let mut h2 = vec![0f32; HIDDEN];
        reference::step(w, &h, t, &mut h2);
        let mut logits = vec![0f32; VOCAB];
        reference::logits(w, &h2, &mut logits);
        h = h2;
        out.push((h.clone(), logits));
    }
    out
}

fn max_abs_delta(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn f32_matches_reference_through_the_backend_trait() {
    let w = OwnedWeights::synthetic(VOCAB, EMBED, HIDDEN, 7);
    let want = reference_run(&w);
    let mut mlx =
        MlxBackend::from_f32(&w.view(), &cpu_options(MlxCompute::F32)).expect("load into mlx");
    assert_eq!(mlx.name(), "mlx");
    assert!(mlx.device().starts_with("mlx cpu"), "{}", mlx.device());

    let mut h = vec![0f32; HIDDEN];
    let mut worst_logit = 0f32;
    let mut worst_state = 0f32;
    for (i, &t) in tokens().iter().enumerate() {
        let mut h2 = vec![0f32; HIDDEN];
        mlx.step(&h, t, &mut h2).expect("step");
        let mut logits = vec![0f32; VOCAB];
        mlx.logits(&h2, &mut logits).expect("logits");
        let (want_h, want_logits) = &want[i];
        worst_state = worst_state.max(max_abs_delta(&h2, want_h));
        worst_logit = worst_logit.max(max_abs_delta(&logits, want_logits));
        assert_eq!(
            top_k(&logits, 8),
            top_k(want_logits, 8),
            "top-8 differs at step {i} (token {t})"
        );
        h = h2;
    }
    eprintln!("mlx f32 vs reference over {STEPS} steps: max |dlogit| {worst_logit:.3e}, max |dh| {worst_state:.3e}");
    assert!(
        worst_logit <= 1e-4,
        "max |delta logit| {worst_logit} > 1e-4"
    );
    assert!(worst_state <= 1e-5, "max |delta h| {worst_state} > 1e-5");
}

/// Steps the cpu backend (f32 view of the file) and the MLX backend (the
/// file's own numbers: int8 dequantized to f32) through `tokens()`.
fn compare_with_cpu_backend(path: &Path) {
    compare_in_dtype(path, None);
}

/// `compare_with_cpu_backend` with MLX running `dtype` of the file.
fn compare_in_dtype(path: &Path, dtype: Option<WeightType>) {
    let vocab = Vocab::load(&vocab_path_for(path)).expect("vocabulary");
    let open = || Weights::open(path, Some(&vocab)).expect("model file");
    let mut cpu = CpuBackend::new(open(), Some(WeightType::F32));
    let mut mlx = MlxBackend::from_weights(&open(), dtype, &cpu_options(MlxCompute::F32))
        .expect("load into mlx");
    let (v, hd) = (cpu.vocab_size(), cpu.hidden_dim());
    assert_eq!((mlx.vocab_size(), mlx.hidden_dim()), (v, hd));
    let (mut hc, mut hm) = (vec![0f32; hd], vec![0f32; hd]);
    let (mut lc, mut lm) = (vec![0f32; v], vec![0f32; v]);
    let mut worst = 0f32;
    for (i, &t) in tokens().iter().enumerate() {
        let t = t % v as u32;
        let (mut hc2, mut hm2) = (vec![0f32; hd], vec![0f32; hd]);
        cpu.step(&hc, t, &mut hc2).expect("cpu step");
        cpu.logits(&hc2, &mut lc).expect("cpu logits");
        mlx.step(&hm, t, &mut hm2).expect("mlx step");
        mlx.logits(&hm2, &mut lm).expect("mlx logits");
        worst = worst.max(max_abs_delta(&lc, &lm));
        assert_eq!(
            top_k(&lm, 8),
            top_k(&lc, 8),
            "{}: top-8 differs at step {i}",
            path.display()
        );
        (hc, hm) = (hc2, hm2);
    }
    eprintln!(
        "{}: mlx vs cpu backend over {STEPS} steps: max |dlogit| {worst:.3e}",
        path.display()
    );
    assert!(
        worst <= 1e-4,
        "{}: max |delta logit| {worst} > 1e-4",
        path.display()
    );
}

/// A generated model of the default shape in a fresh temp folder `tag`:
/// (folder, weights file).
fn random_model(tag: &str, dtype: WeightType, seed: u64) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("laya-mlx-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let words: Vec<String> = (3..VOCAB).map(|i| format!("w{i}")).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let path = testgen::write_random_model(&dir, tag, &words, EMBED, HIDDEN, dtype, seed)
        .expect("write model");
    (dir, path)
}

#[test]
fn f32_matches_the_cpu_backend_on_a_model_file() {
    let (dir, path) = random_model("parity", WeightType::F32, 21);
    compare_with_cpu_backend(&path);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `random_model`'s weights as bf16 in a file `<tag>-q4.safetensors` beside
/// it (sharing its vocabulary) with `quant` added to the metadata:
/// (folder, weights file).
fn quantized_model(tag: &str, seed: u64, quant: &[(&str, &str)]) -> (PathBuf, PathBuf) {
    let (dir, plain) = random_model(tag, WeightType::Bf16, seed);
    let vocab = Vocab::load(&vocab_path_for(&plain)).expect("vocabulary");
    let tensors = testgen::random_f32_tensors(VOCAB, EMBED, HIDDEN, seed);
    let mut meta = testgen::metadata(VOCAB, EMBED, HIDDEN, WeightType::Bf16, &vocab.sha256);
    for (key, value) in quant {
        meta.insert(key.to_string(), value.to_string());
    }
    let path = dir.join(format!("{tag}-q4.safetensors"));
    testgen::write_safetensors(&path, &testgen::encode(&tensors, WeightType::Bf16), meta)
        .expect("write quantized model");
    (dir, path)
}

/// The device string of the MLX backend on `path` as the file says.
fn mlx_device_of(path: &Path) -> String {
    mlx_of(path).device()
}

/// `path` loaded into MLX as the file says.
fn mlx_of(path: &Path) -> MlxBackend {
    let vocab = Vocab::load(&vocab_path_for(path)).expect("vocabulary");
    MlxBackend::from_weights(
        &Weights::open(path, Some(&vocab)).expect("open"),
        None,
        &cpu_options(MlxCompute::F32),
    )
    .expect("load into mlx")
}

/// A file with `quant_bits` / `quant_group` (models/FORMAT.md): MLX
/// quantizes its numbers at load with its own `quantize` and runs 4-bit
/// matmuls; the cpu backend computes with the dequantized values from our
/// port of that quantization. The same model, so the same logits.
#[test]
fn a_4_bit_file_runs_the_same_model_on_both_backends() {
    let (dir, path) = quantized_model("plain", 23, &[("quant_bits", "4"), ("quant_group", "32")]);
    let device = mlx_device_of(&path);
    assert!(device.ends_with(" q4"), "{device}");
    compare_with_cpu_backend(&path);
    // Asked for f32, MLX gets the dequantized numbers (the cpu backend's).
    compare_in_dtype(&path, Some(WeightType::F32));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file whose embedding has bits of its own (`quant_bits.embed = 8`
/// beside `quant_bits = 4`): MLX runs the embedding's lookup and output
/// layer with 8-bit weights and the other matrices with 4-bit ones; the cpu
/// backend dequantizes each matrix with its bits. The same model.
#[test]
fn a_file_with_an_8_bit_embedding_runs_the_same_model_on_both_backends() {
    let quant = [
        ("quant_bits", "4"),
        ("quant_group", "32"),
        ("quant_bits.embed", "8"),
    ];
    let (dir, path) = quantized_model("mixed", 29, &quant);
    let device = mlx_device_of(&path);
    assert!(device.ends_with(" q4 (embed q8)"), "{device}");
    // What `:Laya status` shows as the weights' type.
    assert_eq!(mlx_of(&path).dtype(), "q4 (embed q8)");
    compare_with_cpu_backend(&path);
    compare_in_dtype(&path, Some(WeightType::F32));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The shipped int8 default, and its 4-bit variant (MLX quantizes it at
/// load; the cpu backend dequantizes with our port).
#[test]
fn the_default_model_matches_the_cpu_backend() {
    for name in ["laya-default.safetensors", "laya-default-q4.safetensors"] {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("models")
            .join(name);
        if !path.exists() {
            eprintln!("no {} in this checkout: nothing to compare", path.display());
            continue;
        }
        compare_with_cpu_backend(&path);
    }
}

#[test]
fn fused_and_resident_paths_match_the_plain_step() {
    let w = OwnedWeights::synthetic(VOCAB, EMBED, HIDDEN, 11);
    let want = reference_run(&w);
    let mut mlx =
        MlxBackend::from_f32(&w.view(), &cpu_options(MlxCompute::F32)).expect("load into mlx");
    let mut h = vec![0f32; HIDDEN];
    let mut resident_logits = vec![0f32; VOCAB];
    for (i, &t) in tokens().iter().take(60).enumerate() {
        let mut h2 = vec![0f32; HIDDEN];
        let mut logits = vec![0f32; VOCAB];
        mlx.step_logits(&h, t, &mut h2, &mut logits)
            .expect("step+logits");
        assert!(max_abs_delta(&logits, &want[i].1) <= 1e-4, "fused step {i}");
        h = h2;
    }
    let mut h = vec![0f32; HIDDEN];
    let (mut ids, mut vals) = ([0u32; 8], [0f32; 8]);
    for (i, &t) in tokens().iter().take(60).enumerate() {
        let mut h2 = vec![0f32; HIDDEN];
        mlx.step_topk(&h, t, &mut h2, &mut ids, &mut vals)
            .expect("step+top-k");
        let want_ids: Vec<u32> = top_k(&want[i].1, 8).into_iter().map(|v| v as u32).collect();
        assert_eq!(ids.to_vec(), want_ids, "top-8 ids at step {i}");
        assert!(
            max_abs_delta(&h2, &want[i].0) <= 1e-5,
            "top-k path state at step {i}"
        );
        h = h2;
    }
    // A state other than the last one handed back must be uploaded, not
    // mistaken for the device-resident one.
    let (old_h, t) = (&want[5].0, 77u32);
    let mut want_h = vec![0f32; HIDDEN];
    reference::step(&w, old_h, t, &mut want_h);
    let mut got_h = vec![0f32; HIDDEN];
    mlx.step(old_h, t, &mut got_h)
        .expect("step from an older state");
    assert!(max_abs_delta(&got_h, &want_h) <= 1e-5, "older state");

    mlx.reset().expect("reset");
    for (i, &t) in tokens().iter().take(60).enumerate() {
        mlx.step_resident(t, Some(&mut resident_logits))
            .expect("resident step");
        assert!(
            max_abs_delta(&resident_logits, &want[i].1) <= 1e-4,
            "resident step {i}"
        );
    }
}

#[test]
fn bad_input_is_an_error_not_a_crash() {
    let w = OwnedWeights::synthetic(64, 64, 64, 3);
    let mut mlx =
        MlxBackend::from_f32(&w.view(), &cpu_options(MlxCompute::F32)).expect("load into mlx");
    let h = vec![0f32; 64];
    let mut out = vec![0f32; 64];
    let err = mlx.step(&h, 64, &mut out).unwrap_err().to_string();
    assert!(err.contains("out of range"), "{err}");
    assert!(mlx.step(&h[..10], 1, &mut out).is_err());
    assert!(mlx.logits(&h, &mut out[..3]).is_err());
    // Still usable after the errors.
    mlx.step(&h, 63, &mut out).expect("step after errors");

    let mut short = w.clone();
    short.gru_wh.pop();
    let err = MlxBackend::from_f32(&short.view(), &cpu_options(MlxCompute::F32))
        .err()
        .expect("short tensor");
    assert!(err.to_string().contains("gru.wh"), "{err}");
    let q = MlxBackend::from_f32(
        &OwnedWeights::synthetic(64, 48, 64, 3).view(),
        &cpu_options(MlxCompute::Q4),
    );
    assert!(q.is_err(), "48 is not a multiple of the quantization group");
}

/// Reduced precision and quantized weights still pick the reference's words
/// (agreement of the top-1 with the f32 reference; the measured figures for
/// the real model are in BENCHMARKS.md).
#[test]
fn reduced_precision_agrees_with_f32() {
    let w = OwnedWeights::synthetic(VOCAB, EMBED, HIDDEN, 5);
    let want = reference_run(&w);
    for (compute, floor) in [
        (MlxCompute::Bf16, 0.9),
        (MlxCompute::F16, 0.95),
        (MlxCompute::Q8, 0.9),
        (MlxCompute::Q4, 0.5),
    ] {
        let mut mlx =
            MlxBackend::from_f32(&w.view(), &cpu_options(compute)).expect("load into mlx");
        mlx.reset().expect("reset");
        let mut logits = vec![0f32; VOCAB];
        let mut same = 0;
        for (i, &t) in tokens().iter().enumerate() {
            mlx.step_resident(t, Some(&mut logits)).expect("step");
            same += (top_k(&logits, 1) == top_k(&want[i].1, 1)) as usize;
        }
        let agreement = same as f64 / STEPS as f64;
        eprintln!(
            "mlx {} top-1 agreement with f32 reference: {agreement:.3}",
            compute.as_str()
        );
        assert!(
            agreement >= floor,
            "{}: top-1 agreement {agreement} < {floor}",
            compute.as_str()
        );
    }
}

/// bf16 buffers handed over as such give exactly the numbers of the same
/// values handed over as f32.
#[test]
fn bf16_buffers_load_the_same_numbers() {
    let mut w = OwnedWeights::synthetic(512, 64, 64, 9);
    let round = |v: &mut Vec<f32>| {
        v.iter_mut()
            .for_each(|x| *x = half::bf16::from_f32(*x).to_f32())
    };
    for t in [
        &mut w.embed_w,
        &mut w.gru_wx,
        &mut w.gru_wh,
        &mut w.gru_b,
        &mut w.gru_bhn,
        &mut w.proj_w,
        &mut w.proj_b,
        &mut w.out_b,
    ] {
        round(t);
    }
    let b = |v: &[f32]| {
        v.iter()
            .map(|&x| half::bf16::from_f32(x))
            .collect::<Vec<_>>()
    };
    let (e, x, hh, gb, bhn, pw, pb, ob) = (
        b(&w.embed_w),
        b(&w.gru_wx),
        b(&w.gru_wh),
        b(&w.gru_b),
        b(&w.gru_bhn),
        b(&w.proj_w),
        b(&w.proj_b),
        b(&w.out_b),
    );
    let view16 = laya::model::mlx::GruWeights {
        vocab: w.vocab,
        embed: w.embed,
        hidden: w.hidden,
        embed_w: &e,
        gru_wx: &x,
        gru_wh: &hh,
        gru_b: &gb,
        gru_bhn: &bhn,
        proj_w: &pw,
        proj_b: &pb,
        out_b: &ob,
    };
    let opts = cpu_options(MlxCompute::F32);
    let mut from16 = MlxBackend::from_bf16(&view16, &opts).expect("bf16 load");
    let mut from32 = MlxBackend::from_f32(&w.view(), &opts).expect("f32 load");
    let (mut a, mut b2) = (vec![0f32; 512], vec![0f32; 512]);
    for t in [1u32, 7, 300, 511] {
        from16.step_resident(t, Some(&mut a)).expect("step");
        from32.step_resident(t, Some(&mut b2)).expect("step");
        assert_eq!(a, b2, "token {t}");
    }
}

/// The group size reaches MLX: 32 takes an embedding width that 64 rejects,
/// and q4 with groups of 32 stays closer to the f32 reference than with 64
/// (same weights, same steps; equal errors would mean the option is lost).
#[test]
fn quantization_group_size_is_applied() {
    let with_group = |compute, group_size| MlxOptions {
        group_size,
        ..cpu_options(compute)
    };
    let narrow = OwnedWeights::synthetic(64, 96, 64, 3);
    assert!(MlxBackend::from_f32(&narrow.view(), &with_group(MlxCompute::Q4, 64)).is_err());
    MlxBackend::from_f32(&narrow.view(), &with_group(MlxCompute::Q4, 32))
        .expect("96 is a multiple of 32");

    let w = OwnedWeights::synthetic(VOCAB, EMBED, HIDDEN, 5);
    let want = reference_run(&w);
    let mean_error = |group_size| {
        let mut mlx = MlxBackend::from_f32(&w.view(), &with_group(MlxCompute::Q4, group_size))
            .expect("load into mlx");
        mlx.reset().expect("reset");
        let mut logits = vec![0f32; VOCAB];
        let mut sum = 0f64;
        for (i, &t) in tokens().iter().enumerate() {
            mlx.step_resident(t, Some(&mut logits)).expect("step");
            sum += logits
                .iter()
                .zip(&want[i].1)
                .map(|(a, b)| f64::from((a - b).abs()))
                .sum::<f64>();
        }
        sum / (STEPS * VOCAB) as f64
    };
    let (g32, g64) = (mean_error(32), mean_error(64));
    eprintln!("q4 mean |delta logit|: group 32 {g32:.4e}, group 64 {g64:.4e}");
    assert!(g32 < g64, "group 32 ({g32}) should beat group 64 ({g64})");
}

/// An engine on MLX (whose backend does not fork) still measures learnt
/// text for the user's rates off its own thread: the host's thread loads
/// the same weights on the cpu backend, and gets what MLX measures at once.
#[test]
fn learnt_text_is_measured_for_an_engine_on_mlx() {
    use laya::engine::{Engine, EngineOptions};
    let options = || EngineOptions {
        model_path: Some(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("models/laya-default.safetensors"),
        ),
        backend: laya::model::BackendChoice::Mlx,
        ..EngineOptions::default()
    };
    let text = "Pick a colour for the chart and keep that colour everywhere.\n\
        The colour scheme follows the colour of the logo.\n";
    let mut threaded = Engine::new(options());
    assert_eq!(threaded.info().backend, "mlx");
    let worker = threaded.rates_worker().expect("a thread to measure on");
    assert!(worker.post(text));
    let m = worker.wait().expect("measured");
    threaded.add_rates(&m);
    let mut direct = Engine::new(options());
    direct.learn_rates(text);
    let (a, b) = (
        threaded
            .user_rate("colour")
            .expect("measured on the thread"),
        direct.user_rate("colour").expect("measured on MLX"),
    );
    assert!(a > 1.2 && (a - b).abs() < 0.02 * b, "{a} vs {b}");
}
