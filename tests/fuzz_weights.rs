//! Fuzzing of the model file's reader (src/model/weights.rs): safetensors
//! headers and the model checks on files built from a valid small model
//! with damage of every kind (metadata values, shapes, dtypes, offsets,
//! missing and extra tensors, NaN and infinite weights, cut and flipped
//! bytes, lying header lengths) and on arbitrary bytes. A file is either
//! refused with an error that names it, or it is a model that the cpu
//! backend steps to finite states; a NaN, an infinity or a huge value
//! planted in a valid file is refused naming its tensor.
//! See support/fuzz.rs for the runs.

#[path = "support/fuzz.rs"]
mod fuzz;

use laya::model::cpu::CpuBackend;
use laya::model::testgen::{encode, metadata, random_f32_tensors, RawTensor};
use laya::model::weights::{WeightType, Weights};
use laya::model::Backend;
use laya::text::digest::sha256_hex;
use laya::text::vocab::Vocab;
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use std::path::Path;

const META_KEYS: [&str; 8] = [
    "laya.format",
    "arch",
    "tokenizer",
    "vocab_size",
    "embed_dim",
    "hidden_dim",
    "vocab_sha256",
    "dtype",
];

#[derive(Debug, Clone)]
enum Damage {
    SetMeta(usize, String),
    RemoveMeta(usize),
    Shape(usize, Vec<usize>),
    Dtype(usize, &'static str),
    Drop(usize),
    Extra(String, usize),
    /// A non-finite (or any) f32 bit pattern at a value of a tensor.
    Poison(usize, usize, u32),
    Offsets(usize, i64, i64),
    Cut(usize),
    Flip(usize, u8),
    HeaderLen(u64),
}

fn damage() -> impl Strategy<Value = Damage> {
    let meta_value = prop_oneof![
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("99999999999999999999".to_string()),
        Just("16777217".to_string()),
        "[0-9]{1,3}",
        Just("f32".to_string()),
        Just("bf16".to_string()),
        Just("int8".to_string()),
        any::<String>(),
    ];
    let bits = prop_oneof![
        Just(0x7fc0_0000u32),
        Just(0x7f80_0000),
        Just(0xff80_0000),
        Just(0x7f80_0001),
        Just(0x7f7f_ffff),
        any::<u32>(),
    ];
    prop_oneof![
        (0..8usize, meta_value).prop_map(|(k, v)| Damage::SetMeta(k, v)),
        (0..8usize).prop_map(Damage::RemoveMeta),
        (0..12usize, prop::collection::vec(0usize..20, 0..3))
            .prop_map(|(t, s)| Damage::Shape(t, s)),
        (
            0..12usize,
            prop::sample::select(vec![
                "F32", "BF16", "I8", "F16", "I32", "U8", "BOOL", "F64", "X"
            ])
        )
            .prop_map(|(t, d)| Damage::Dtype(t, d)),
        (0..12usize).prop_map(Damage::Drop),
        ("[a-z.]{1,8}", 0usize..16).prop_map(|(n, len)| Damage::Extra(n, len)),
        (0..12usize, any::<usize>(), bits).prop_map(|(t, i, b)| Damage::Poison(t, i, b)),
        (0..12usize, -8i64..8, -8i64..8).prop_map(|(t, a, b)| Damage::Offsets(t, a, b)),
        any::<usize>().prop_map(Damage::Cut),
        (any::<usize>(), 1u8..=255).prop_map(|(at, x)| Damage::Flip(at, x)),
        prop_oneof![Just(u64::MAX), Just(0), 0u64..4096, Just(100_000_001)]
            .prop_map(Damage::HeaderLen),
    ]
}

#[derive(Debug, Clone)]
struct Case {
    v: usize,
    e: usize,
    h: usize,
    dtype: WeightType,
    seed: u64,
    damage: Vec<Damage>,
    with_vocab: bool,
}

fn case() -> impl Strategy<Value = Case> {
    (
        3usize..9,
        1usize..6,
        1usize..6,
        prop::sample::select(vec![WeightType::F32, WeightType::Bf16, WeightType::Int8]),
        any::<u64>(),
        prop::collection::vec(damage(), 0..4),
        prop::bool::ANY,
    )
        .prop_map(|(v, e, h, dtype, seed, damage, with_vocab)| Case {
            v,
            e,
            h,
            dtype,
            seed,
            damage,
            with_vocab,
        })
}

/// A weight the reader refuses: NaN, infinite or beyond ±1e6.
fn refused(v: f32) -> bool {
    v.is_nan() || v.abs() > 1e6
}

fn vocab_text(v: usize) -> String {
    let mut s = String::from("<unk>\n<s>\n<nl>\n");
    for i in 3..v {
        s.push_str(&format!("w{i}\n"));
    }
    s
}

/// The file's bytes: the 8-byte header length, the JSON header, the data.
fn serialize(
    tensors: &[RawTensor],
    meta: &Map<String, Value>,
    offsets: &[(i64, i64)],
    damage: &[Damage],
) -> Vec<u8> {
    let mut header = Map::new();
    header.insert("__metadata__".into(), Value::Object(meta.clone()));
    let mut data = Vec::new();
    for (i, t) in tensors.iter().enumerate() {
        let (da, db) = offsets.get(i).copied().unwrap_or((0, 0));
        let a = (data.len() as i64 + da).max(0);
        data.extend_from_slice(&t.data);
        let b = (data.len() as i64 + db).max(0);
        header.insert(
            t.name.clone(),
            json!({"dtype": format!("{:?}", t.dtype).to_uppercase(), "shape": t.shape, "data_offsets": [a, b]}),
        );
    }
    let mut json = serde_json::to_vec(&Value::Object(header)).unwrap();
    while !json.len().is_multiple_of(8) {
        json.push(b' ');
    }
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&json);
    out.extend_from_slice(&data);
    for d in damage {
        match d {
            Damage::Cut(n) => {
                let n = n % (out.len() + 1);
                out.truncate(n);
            }
            Damage::Flip(at, x) if !out.is_empty() => {
                let n = out.len();
                out[at % n] ^= x;
            }
            Damage::HeaderLen(l) if out.len() >= 8 => out[..8].copy_from_slice(&l.to_le_bytes()),
            _ => {}
        }
    }
    out
}

/// Builds the damaged file; also the tensors given a non-finite value when
/// that is the only damage (one of them must then be named).
fn build(c: &Case) -> (Vec<u8>, Vec<String>, Vocab) {
    let text = vocab_text(c.v);
    let mut vocab = Vocab::from_lines(text.lines()).unwrap();
    vocab.sha256 = sha256_hex(text.as_bytes());
    let mut tensors = encode(&random_f32_tensors(c.v, c.e, c.h, c.seed), c.dtype);
    let mut meta: Map<String, Value> = metadata(c.v, c.e, c.h, c.dtype, &vocab.sha256)
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    let mut offsets = vec![(0i64, 0i64); 64];
    let mut poisoned = Vec::new();
    let mut other = false;
    for d in &c.damage {
        let n = tensors.len().max(1);
        match d {
            Damage::SetMeta(k, v) => {
                meta.insert(META_KEYS[*k].into(), Value::String(v.clone()));
                other = true;
            }
            Damage::RemoveMeta(k) => {
                meta.remove(META_KEYS[*k]);
                other = true;
            }
            Damage::Shape(t, s) if !tensors.is_empty() => {
                tensors[t % n].shape = s.clone();
                other = true;
            }
            Damage::Dtype(t, d) if !tensors.is_empty() => {
                tensors[t % n].dtype = match *d {
                    "F32" => safetensors::Dtype::F32,
                    "BF16" => safetensors::Dtype::BF16,
                    "I8" => safetensors::Dtype::I8,
                    "F16" => safetensors::Dtype::F16,
                    "I32" => safetensors::Dtype::I32,
                    "U8" => safetensors::Dtype::U8,
                    "F64" => safetensors::Dtype::F64,
                    _ => safetensors::Dtype::BOOL,
                };
                other = true;
            }
            Damage::Drop(t) if !tensors.is_empty() => {
                tensors.remove(t % n);
                other = true;
            }
            Damage::Extra(name, len) => {
                tensors.push(RawTensor {
                    name: name.clone(),
                    dtype: safetensors::Dtype::U8,
                    shape: vec![*len],
                    data: vec![0; *len],
                });
                other = true;
            }
            Damage::Poison(t, i, bits) if !tensors.is_empty() => {
                let t = &mut tensors[t % n];
                let width = match t.dtype {
                    safetensors::Dtype::F32 => 4,
                    safetensors::Dtype::BF16 => 2,
                    _ => 0,
                };
                if width > 0 && t.data.len() >= width {
                    let at = (i % (t.data.len() / width)) * width;
                    let b = bits.to_le_bytes();
                    t.data[at..at + width].copy_from_slice(&b[4 - width..]);
                    poisoned.push(t.name.clone());
                }
            }
            Damage::Offsets(t, a, b) => {
                offsets[t % n] = (*a, *b);
                other = true;
            }
            _ => other = true,
        }
    }
    let bytes = serialize(&tensors, &meta, &offsets, &c.damage);
    // What was planted last decides (a later value may overwrite an earlier
    // one): the tensors that hold a value the reader must refuse now.
    poisoned.retain(|name| {
        tensors
            .iter()
            .filter(|t| &t.name == name)
            .any(|t| match t.dtype {
                safetensors::Dtype::F32 => t
                    .data
                    .chunks_exact(4)
                    .any(|c| refused(f32::from_le_bytes([c[0], c[1], c[2], c[3]]))),
                safetensors::Dtype::BF16 => t.data.chunks_exact(2).any(|c| {
                    refused(f32::from_bits(
                        (u16::from_le_bytes([c[0], c[1]]) as u32) << 16,
                    ))
                }),
                _ => false,
            })
    });
    if other {
        poisoned.clear();
    }
    (bytes, poisoned, vocab)
}

fn check(c: &Case) -> Result<(), TestCaseError> {
    let (bytes, poisoned, vocab) = build(c);
    let path = Path::new("/models/fuzz.safetensors");
    let v = c.with_vocab.then_some(&vocab);
    let (result, peak) = fuzz::peak_bytes(|| Weights::from_slice(path, &bytes, v));
    fuzz::within(peak, 8 * bytes.len() + (64 << 10), "model file")?;
    match result {
        Err(e) => {
            let msg = format!("{e:#}");
            prop_assert!(
                msg.contains("fuzz.safetensors"),
                "the error names the file: {}",
                msg
            );
            if !poisoned.is_empty() {
                prop_assert!(
                    poisoned.iter().any(|n| msg.contains(&format!("`{n}`")))
                        && msg.contains("NaN, infinity or beyond"),
                    "a non-finite weight in {:?} must be named: {}",
                    poisoned,
                    msg
                );
            }
        }
        Ok(w) => {
            prop_assert!(
                poisoned.is_empty(),
                "a NaN or infinity in {:?} was accepted",
                poisoned
            );
            let (vs, hd) = (w.config.vocab_size, w.config.hidden_dim);
            let mut cpu = CpuBackend::new(w, None);
            let mut h = vec![0.0; hd];
            let mut h2 = vec![0.0; hd];
            let mut logits = vec![0.0; vs];
            for t in 0..vs.min(4) as u32 {
                cpu.step(&h, t, &mut h2)
                    .map_err(|e| TestCaseError::fail(format!("{e:#}")))?;
                cpu.logits(&h2, &mut logits)
                    .map_err(|e| TestCaseError::fail(format!("{e:#}")))?;
                std::mem::swap(&mut h, &mut h2);
            }
            prop_assert!(h.iter().all(|x| x.is_finite()), "state {:?}", h);
        }
    }
    Ok(())
}

/// Any bytes at all, sometimes after a plausible header length.
fn raw() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..256),
        (0u64..300, prop::collection::vec(any::<u8>(), 0..300)).prop_map(|(n, rest)| {
            let mut b = n.to_le_bytes().to_vec();
            b.extend(rest);
            b
        }),
        (0u64..300, "\\{.{0,200}").prop_map(|(n, s)| {
            let mut b = n.to_le_bytes().to_vec();
            b.extend(s.into_bytes());
            b
        }),
    ]
}

fn check_raw(bytes: &[u8]) -> Result<(), TestCaseError> {
    let path = Path::new("raw.safetensors");
    let (result, peak) = fuzz::peak_bytes(|| Weights::from_slice(path, bytes, None));
    fuzz::within(peak, 8 * bytes.len() + (64 << 10), "model file")?;
    if let Err(e) = result {
        let msg = format!("{e:#}");
        prop_assert!(msg.contains("raw.safetensors"), "{}", msg);
    }
    Ok(())
}

#[derive(Debug, Clone)]
enum Input {
    Damaged(Case),
    Raw(Vec<u8>),
}

fn input() -> impl Strategy<Value = Input> {
    prop_oneof![4 => case().prop_map(Input::Damaged), 1 => raw().prop_map(Input::Raw)]
}

fn check_input(i: &Input) -> Result<(), TestCaseError> {
    match i {
        Input::Damaged(c) => check(c),
        Input::Raw(b) => check_raw(b),
    }
}

#[test]
fn model_files() {
    fuzz::run("model file", fuzz::QUICK, input(), |i| check_input(&i));
}

#[test]
#[ignore = "long run: LAYA_FUZZ_CASES (default 1M) cases"]
fn model_files_long() {
    fuzz::run("model file", fuzz::long_cases(), input(), |i| {
        check_input(&i)
    });
}
