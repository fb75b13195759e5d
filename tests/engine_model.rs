//! Model files and the CPU backend: every tensor validated with errors that
//! name the file and the tensor; the GRU step and tied output agree with a
//! plain f64 transcription of models/FORMAT.md; bf16/int8 stay close to f32.

use laya::engine::{Engine, EngineOptions, Request};
use laya::model::cpu::CpuBackend;
use laya::model::reference::{self, OwnedWeights};
use laya::model::testgen::{
    encode, metadata, random_f32_tensors, write_random_model, write_safetensors, RawTensor,
};
use laya::model::weights::{WeightType, Weights};
use laya::model::{load_backend, vocab_path_for, Backend, BackendChoice};
use laya::text::digest::sha256_hex;
use laya::text::vocab::Vocab;
use std::path::{Path, PathBuf};

const E: usize = 24;
const H: usize = 40;
const SEED: u64 = 11;

#[path = "support/scratch.rs"]
mod scratch;
use scratch::Dir;

fn words() -> Vec<String> {
    let mut w: Vec<String> = [
        "the", "of", "and", ".", ",", "(", ")", "fn", "let", "there", "then", "The",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for i in 0..45 {
        w.push(format!("w{i}"));
    }
    w
}

fn model(dir: &Path, stem: &str, dtype: WeightType) -> PathBuf {
    let w = words();
    let refs: Vec<&str> = w.iter().map(String::as_str).collect();
    write_random_model(dir, stem, &refs, E, H, dtype, SEED).unwrap()
}

fn vocab_of(weights: &Path) -> Vocab {
    Vocab::load(&vocab_path_for(weights)).unwrap()
}

/// FORMAT.md's step and output (the crate's one reference), from the f32
/// tensors the model files were written from.
fn reference(v: usize, tokens: &[u32]) -> (Vec<f64>, Vec<f64>) {
    let w = OwnedWeights::from_tensors(v, E, H, &random_f32_tensors(v, E, H, SEED));
    let mut h = vec![0.0; H];
    let mut next = h.clone();
    for &t in tokens {
        reference::step(&w, &h, t, &mut next);
        std::mem::swap(&mut h, &mut next);
    }
    let mut logits = vec![0.0; v];
    reference::logits(&w, &h, &mut logits);
    let f64s = |x: Vec<f32>| x.into_iter().map(f64::from).collect();
    (f64s(h), f64s(logits))
}

fn run(b: &mut dyn Backend, tokens: &[u32]) -> (Vec<f32>, Vec<f32>) {
    let mut h = vec![0.0; b.hidden_dim()];
    let mut next = h.clone();
    for &t in tokens {
        b.step(&h, t, &mut next).unwrap();
        std::mem::swap(&mut h, &mut next);
    }
    let mut logits = vec![0.0; b.vocab_size()];
    b.logits(&h, &mut logits).unwrap();
    (h, logits)
}

fn argmax(v: &[f32]) -> usize {
    (0..v.len()).max_by(|&a, &b| v[a].total_cmp(&v[b])).unwrap()
}

#[test]
fn cpu_backend_matches_the_format_in_every_dtype() {
    let dir = Dir::new("model-dtypes");
    let tokens = [1u32, 3, 9, 10, 2, 4, 57, 8];
    let f32_path = model(&dir.path, "m32", WeightType::F32);
    let vocab = vocab_of(&f32_path);
    let (h_ref, l_ref) = reference(vocab.len(), &tokens);
    for (file_dtype, run_dtype, tol) in [
        (WeightType::F32, None, 1e-4),
        (WeightType::Bf16, None, 0.05),
        (WeightType::Int8, None, 0.05),
        (WeightType::F32, Some(WeightType::Int8), 0.05),
        (WeightType::F32, Some(WeightType::Bf16), 0.05),
        (WeightType::Int8, Some(WeightType::F32), 0.05),
    ] {
        let path = model(&dir.path, &format!("m-{}", file_dtype.as_str()), file_dtype);
        let w = Weights::open(&path, Some(&vocab_of(&path))).unwrap();
        assert_eq!(w.config.dtype, file_dtype);
        let mut b = CpuBackend::new(w, run_dtype);
        assert_eq!(b.dtype(), run_dtype.unwrap_or(file_dtype).as_str());
        let (h, l) = run(&mut b, &tokens);
        let what = format!("file {} run {:?}", file_dtype.as_str(), run_dtype);
        for (a, b) in h.iter().zip(&h_ref) {
            assert!((*a as f64 - b).abs() < tol, "{what}: state {a} vs {b}");
        }
        let scale = l_ref.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        for (a, b) in l.iter().zip(&l_ref) {
            assert!(
                (*a as f64 - b).abs() < tol * scale.max(1.0) * 4.0,
                "{what}: logit {a} vs {b}"
            );
        }
        let best_ref = (0..l_ref.len())
            .max_by(|&a, &b| l_ref[a].total_cmp(&l_ref[b]))
            .unwrap();
        if tol < 1e-3 {
            assert_eq!(argmax(&l), best_ref, "{what}");
        }
    }
}

#[test]
fn backend_rejects_bad_calls_without_panicking() {
    let dir = Dir::new("model-calls");
    let path = model(&dir.path, "m", WeightType::Int8);
    let vocab = vocab_of(&path);
    let mut b = load_backend(&path, &vocab, BackendChoice::Cpu, None).unwrap();
    let h = vec![0.0; b.hidden_dim()];
    let mut out = vec![0.0; b.hidden_dim()];
    assert!(b.step(&h, vocab.len() as u32, &mut out).is_err());
    assert!(b.step(&h[1..], 0, &mut out).is_err());
    assert!(b.logits(&h, &mut [0.0; 3]).is_err());
    assert!(BackendChoice::parse("gpu")
        .unwrap_err()
        .to_string()
        .contains("unknown backend"));
    assert_eq!(BackendChoice::parse("cpu").unwrap(), BackendChoice::Cpu);
    assert!(WeightType::parse("f64").is_err());
}

/// Writes a variant of a valid f32 model with `edit` applied to its tensors
/// and metadata; returns the load error's message.
fn load_error(
    tag: &str,
    edit: impl FnOnce(&mut Vec<RawTensor>, &mut std::collections::HashMap<String, String>),
) -> String {
    let dir = Dir::new(&format!("model-{tag}"));
    let good = model(&dir.path, "good", WeightType::F32);
    let vocab = vocab_of(&good);
    let mut tensors = encode(
        &random_f32_tensors(vocab.len(), E, H, SEED),
        WeightType::F32,
    );
    let mut meta = metadata(vocab.len(), E, H, WeightType::F32, &vocab.sha256);
    edit(&mut tensors, &mut meta);
    let bad = dir.path.join("bad.safetensors");
    write_safetensors(&bad, &tensors, meta).unwrap();
    let err = Weights::open(&bad, Some(&vocab)).err().expect("must fail");
    let msg = format!("{err:#}");
    assert!(
        msg.contains("bad.safetensors"),
        "error names the file: {msg}"
    );
    msg
}

/// `load_error` of a file whose metadata has `pairs` added.
fn meta_error(tag: &str, pairs: &[(&str, &str)]) -> String {
    load_error(tag, |_, meta| {
        for (k, v) in pairs {
            meta.insert((*k).into(), (*v).into());
        }
    })
}

#[test]
fn every_tensor_is_checked_with_an_actionable_error() {
    let m = load_error("shape", |t, _| {
        let e = t.iter_mut().find(|t| t.name == "proj.b").unwrap();
        e.shape = vec![E / 2, 2];
    });
    assert!(
        m.contains("`proj.b`") && m.contains("shape [12, 2]") && m.contains(&format!("[{E}]")),
        "{m}"
    );
    let m = load_error("missing", |t, _| t.retain(|t| t.name != "gru.wh"));
    assert!(m.contains("`gru.wh` is missing"), "{m}");
    let m = load_error("dtype", |t, _| {
        let e = t.iter_mut().find(|t| t.name == "out.b").unwrap();
        e.dtype = safetensors::Dtype::I32;
    });
    assert!(
        m.contains("`out.b`") && m.contains("I32") && m.contains("F32"),
        "{m}"
    );
    let m = load_error("extra", |t, _| {
        t.push(RawTensor {
            name: "lstm.w".into(),
            dtype: safetensors::Dtype::F32,
            shape: vec![1],
            data: vec![0; 4],
        })
    });
    assert!(m.contains("unexpected tensor `lstm.w`"), "{m}");
    let m = load_error("arch", |_, meta| {
        meta.insert("arch".into(), "lstm".into());
    });
    assert!(m.contains("`arch`") && m.contains("gru-tied"), "{m}");
    let m = load_error("nometa", |_, meta| {
        meta.remove("hidden_dim");
    });
    assert!(m.contains("`hidden_dim` is missing"), "{m}");
    let m = load_error("dim", |_, meta| {
        meta.insert("embed_dim".into(), "-3".into());
    });
    assert!(m.contains("`embed_dim`"), "{m}");
    let m = load_error("metadtype", |_, meta| {
        meta.insert("dtype".into(), "int8".into());
    });
    assert!(
        m.contains("`embed.scale` is missing") || m.contains("dtype"),
        "{m}"
    );
    let m = load_error("hash", |_, meta| {
        meta.insert("vocab_sha256".into(), sha256_hex(b"another vocabulary"));
    });
    assert!(m.contains("vocabulary hash mismatch"), "{m}");
    let m = load_error("vsize", |t, meta| {
        let v: usize = meta["vocab_size"].parse().unwrap();
        *t = encode(&random_f32_tensors(v + 1, E, H, SEED), WeightType::F32);
        meta.insert("vocab_size".into(), (v + 1).to_string());
    });
    assert!(m.contains("vocab_size") && m.contains("tokens"), "{m}");
}

#[test]
fn corrupt_truncated_and_missing_files_are_errors() {
    let dir = Dir::new("model-corrupt");
    let good = model(&dir.path, "good", WeightType::Int8);
    let vocab = vocab_of(&good);
    let bytes = std::fs::read(&good).unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("short", bytes[..5].to_vec()),
        ("truncated", bytes[..bytes.len() - 100].to_vec()),
        ("header-cut", bytes[..bytes.len() / 50].to_vec()),
        (
            "garbage",
            (0..4096u32)
                .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
                .collect(),
        ),
        ("huge-header", {
            let mut b = bytes.clone();
            b[..8].copy_from_slice(&u64::MAX.to_le_bytes());
            b
        }),
        ("bad-json", {
            let mut b = bytes.clone();
            b[9] = b'}';
            b
        }),
        ("extra-bytes", {
            let mut b = bytes.clone();
            b.extend_from_slice(&[0; 16]);
            b
        }),
    ];
    for (name, data) in cases {
        let p = dir.path.join(format!("{name}.safetensors"));
        std::fs::write(&p, data).unwrap();
        let err = Weights::open(&p, Some(&vocab))
            .err()
            .unwrap_or_else(|| panic!("{name} must fail"));
        assert!(
            format!("{err:#}").contains(&format!("{name}.safetensors")),
            "{name}: {err:#}"
        );
    }
    assert!(Weights::open(&dir.path.join("absent.safetensors"), None).is_err());
}

#[test]
fn engine_uses_the_model_or_falls_back_with_one_clear_error() {
    let dir = Dir::new("model-engine");
    let path = model(&dir.path, "m", WeightType::Int8);
    let mut e = Engine::new(EngineOptions {
        model_path: Some(path.clone()),
        ..EngineOptions::default()
    });
    let info = e.info();
    assert_eq!(info.model_error, None);
    assert_eq!(
        (info.backend.as_str(), info.dtype.as_str(), info.vocab_size),
        ("cpu", "int8", words().len() + 3)
    );
    let req = Request {
        buffer: 1,
        before: "fn main() {\n    let x = the",
        filetype: "rust",
        kind: Default::default(),
        k: 3,
        seen_last: false,
        learn: false,
    };
    let p = e.predict(&req);
    assert_eq!(p.prefix, "the");
    assert!(!p.candidates.is_empty());
    for c in &p.candidates {
        assert!(
            c.word.to_lowercase().starts_with("the") && c.word.len() > 3,
            "{c:?}"
        );
    }
    // A corrupt weights file: the same vocabulary still gives the word list.
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let mut e = Engine::new(EngineOptions {
        model_path: Some(path),
        ..EngineOptions::default()
    });
    let info = e.info();
    assert_eq!(info.backend, "none");
    let err = info.model_error.unwrap();
    assert_eq!(err.kind(), "model");
    let err = err.to_string();
    assert!(
        err.contains("m.safetensors") && err.contains("truncated"),
        "{err}"
    );
    assert!(!e.predict(&req).candidates.is_empty());
}

#[test]
fn a_directory_or_a_fifo_is_refused_at_once() {
    let dir = Dir::new("model-kinds");
    let good = model(&dir.path, "good", WeightType::F32);
    let vocab = vocab_of(&good);
    let folder = dir.path.join("folder.safetensors");
    std::fs::create_dir(&folder).unwrap();
    let m = format!(
        "{:#}",
        Weights::open(&folder, Some(&vocab))
            .err()
            .expect("a directory")
    );
    assert!(
        m.contains("folder.safetensors") && m.contains("is a directory"),
        "{m}"
    );
    // A FIFO with no writer: opening it for reading would wait forever.
    let fifo = dir.path.join("fifo.safetensors");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (tx, rx) = std::sync::mpsc::channel();
    let f = fifo.clone();
    std::thread::spawn(move || {
        let _ = tx.send(Weights::open(&f, None).err().map(|e| format!("{e:#}")));
    });
    let m = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("opening a FIFO returns at once")
        .expect("a FIFO is refused");
    assert!(
        m.contains("fifo.safetensors") && m.contains("not a regular file"),
        "{m}"
    );
}

#[test]
fn a_nan_an_infinity_or_a_huge_weight_is_refused_naming_its_tensor() {
    for (tag, value) in [("nan", f32::NAN), ("inf", f32::NEG_INFINITY), ("huge", 3e9)] {
        let m = load_error(tag, |t, _| {
            let e = t.iter_mut().find(|t| t.name == "gru.wh").unwrap();
            let at = 4 * (2 * H + 5); // row 2, column 5
            e.data[at..at + 4].copy_from_slice(&value.to_le_bytes());
        });
        assert!(
            m.contains("`gru.wh`") && m.contains("row 2, column 5") && m.contains("NaN, infinity"),
            "{tag}: {m}"
        );
    }
}

type Tensors = Vec<(String, Vec<usize>, Vec<f32>)>;

/// A random model's values rounded to bf16, as a file holds them, with
/// sizes that are multiples of the quantization group: written as files
/// with quantization metadata and as plain f32 files of what they mean.
struct Affine {
    dir: Dir,
    vocab: Vocab,
    bf16: Tensors,
}

impl Affine {
    const E: usize = 32;
    const H: usize = 64;
    const TOKENS: [u32; 6] = [1, 5, 9, 3, 7, 2];

    fn new(tag: &str) -> Affine {
        let dir = Dir::new(tag);
        let vocab = vocab_of(&model(&dir.path, "good", WeightType::F32));
        let bf16 = random_f32_tensors(vocab.len(), Self::E, Self::H, SEED)
            .into_iter()
            .map(|(n, s, x)| {
                let x = x
                    .iter()
                    .map(|&f| half::bf16::from_f32(f).to_f32())
                    .collect();
                (n, s, x)
            })
            .collect();
        Affine { dir, vocab, bf16 }
    }

    fn file(
        &self,
        stem: &str,
        tensors: &Tensors,
        dtype: WeightType,
        quant: &[(&str, &str)],
    ) -> PathBuf {
        let (v, e, h) = (self.vocab.len(), Self::E, Self::H);
        let mut meta = metadata(v, e, h, dtype, &self.vocab.sha256);
        for (key, value) in quant {
            meta.insert(key.to_string(), value.to_string());
        }
        let path = self.dir.path.join(format!("{stem}.safetensors"));
        write_safetensors(&path, &encode(tensors, dtype), meta).unwrap();
        path
    }

    /// A bf16 file of the values with `quant` in its metadata.
    fn write(&self, stem: &str, quant: &[(&str, &str)]) -> PathBuf {
        self.file(stem, &self.bf16, WeightType::Bf16, quant)
    }

    fn open(&self, path: &Path) -> Weights {
        Weights::open(path, Some(&self.vocab)).unwrap()
    }

    /// The logits after `TOKENS` of the cpu backend on `path`.
    fn logits(&self, path: &Path, dtype: Option<WeightType>) -> Vec<f32> {
        run(&mut CpuBackend::new(self.open(path), dtype), &Self::TOKENS).1
    }

    /// The logits of a plain f32 file of the values, each matrix through
    /// MLX's group-32 quantization with its `bits` (`MATRICES` order).
    fn dequantized_logits(&self, stem: &str, bits: [u32; 4]) -> Vec<f32> {
        use laya::model::quant::affine_dequantized;
        use laya::model::weights::MATRICES;
        let deq: Tensors = self
            .bf16
            .iter()
            .map(|(n, s, x)| {
                let x = match MATRICES.iter().position(|m| m == n) {
                    Some(i) => affine_dequantized(x, 32, bits[i]),
                    None => x.clone(),
                };
                (n.clone(), s.clone(), x)
            })
            .collect();
        let path = self.file(stem, &deq, WeightType::F32, &[]);
        self.logits(&path, None)
    }
}

fn max_delta(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

const Q4_G32: [(&str, &str); 2] = [("quant_bits", "4"), ("quant_group", "32")];

/// A file with `quant_bits` / `quant_group` runs its matrices through MLX's
/// affine quantization on the cpu backend too: the same outputs as a plain
/// file holding the dequantized values, and not those of the file's own
/// numbers. Bad quantization metadata is an error naming the key.
#[test]
fn affine_quantization_in_the_metadata_is_applied_at_load() {
    let a = Affine::new("model-affine");
    let quant = a.write("q4", &Q4_G32);
    let lq = a.logits(&quant, None);
    assert_eq!(
        lq,
        a.dequantized_logits("deq", [4; 4]),
        "the quantized file computes with MLX's dequantized values"
    );
    // The plain file's numbers in f32 (no rounding to bf16 on the way).
    let lp = a.logits(&a.write("plain", &[]), Some(WeightType::F32));
    let moved = max_delta(&lq, &lp);
    assert!(
        moved > 1e-4,
        "quantization changed nothing (max |dlogit| {moved})"
    );
    let device = CpuBackend::new(a.open(&quant), None).device();
    assert!(
        device.contains(" of 4-bit group-32 weights (") && !device.contains("8-bit"),
        "{device}"
    );

    let m = meta_error("qgroup", &[("quant_bits", "4"), ("quant_group", "48")]);
    assert!(m.contains("`quant_group`") && m.contains("32 or 64"), "{m}");
    let m = meta_error("qalone", &[("quant_bits", "4")]);
    assert!(m.contains("go together"), "{m}");
    let m = meta_error("qshape", &[("quant_bits", "4"), ("quant_group", "32")]);
    assert!(m.contains("multiples"), "{m}");
}

/// `quant_bits.<matrix>` gives a matrix bits of its own: a file with
/// `quant_bits = 4` and `quant_bits.embed = 8` computes with its embedding
/// dequantized at 8 bits and the other matrices at 4, and says so. Any
/// other `quant_bits.` key, a bad value, or a key without `quant_bits` is
/// an error naming the key.
#[test]
fn a_matrix_with_bits_of_its_own_is_dequantized_with_them() {
    use laya::model::weights::{AffineQuant, MATRICES};
    let a = Affine::new("model-affine-own");
    let mixed = a.write("mixed", &[("quant_bits.embed", "8"), Q4_G32[0], Q4_G32[1]]);
    assert_eq!(
        a.open(&mixed).config.quant,
        Some(AffineQuant {
            bits: [8, 4, 4, 4],
            group: 32
        })
    );
    let lm = a.logits(&mixed, None);
    assert_eq!(
        lm,
        a.dequantized_logits("deq-mixed", [8, 4, 4, 4]),
        "the embedding is dequantized with 8 bits, the rest with 4"
    );
    let moved = max_delta(&lm, &a.logits(&a.write("q4", &Q4_G32), None));
    assert!(
        moved > 1e-4,
        "the embedding's 8 bits changed nothing (max |dlogit| {moved})"
    );
    let device = CpuBackend::new(a.open(&mixed), None).device();
    assert!(
        device.contains(" of 4-bit group-32 weights (embed 8-bit) ("),
        "{device}"
    );
    // Every matrix overridden: the bits the matrices have, not the key's.
    let all8: Vec<(String, &str)> = MATRICES
        .iter()
        .map(|n| (format!("quant_bits.{n}"), "8"))
        .collect();
    let mut quant: Vec<(&str, &str)> = all8.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    quant.extend(Q4_G32);
    let device = CpuBackend::new(a.open(&a.write("all8", &quant)), None).device();
    assert!(
        device.contains(" of 8-bit group-32 weights (") && !device.contains("4-bit"),
        "{device}"
    );

    let m = meta_error("qname", &[Q4_G32[0], Q4_G32[1], ("quant_bits.foo", "8")]);
    assert!(
        m.contains("`quant_bits.foo`")
            && MATRICES
                .iter()
                .all(|n| m.contains(&format!("`quant_bits.{n}`"))),
        "{m}"
    );
    let m = meta_error("qbits", &[Q4_G32[0], Q4_G32[1], ("quant_bits.embed", "5")]);
    assert!(
        m.contains("`quant_bits.embed`") && m.contains("4 or 8"),
        "{m}"
    );
    let m = meta_error("qown", &[("quant_bits.gru.wh", "8")]);
    assert!(
        m.contains("`quant_bits.gru.wh`") && m.contains("`quant_bits` and `quant_group`"),
        "{m}"
    );
}
