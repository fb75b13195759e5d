//! Chains of steps (`Backend::steps`): the cpu backend computes a long one on
//! two threads, half of the hidden units each; the states must be exactly
//! those of one step at a time on one thread, in every dtype, for tokens
//! whose input gates are kept and for those computed each time.

use laya::model::cpu::CpuBackend;
use laya::model::testgen::{numbered_vocab, write_random_weights, Rng};
use laya::model::weights::{WeightType, Weights};
use laya::model::{vocab_path_for, Backend};
use laya::text::vocab::Vocab;
use std::path::Path;

#[path = "support/scratch.rs"]
mod scratch;
use scratch::Dir;

/// One step at a time, on one thread.
fn one_by_one(b: &mut dyn Backend, h0: &[f32], tokens: &[u32]) -> Vec<f32> {
    b.set_threads(1);
    let hd = b.hidden_dim();
    let mut out = vec![0.0; tokens.len() * hd];
    let mut h = h0.to_vec();
    for (k, &t) in tokens.iter().enumerate() {
        b.step(&h, t, &mut out[k * hd..(k + 1) * hd]).unwrap();
        h.copy_from_slice(&out[k * hd..(k + 1) * hd]);
    }
    out
}

fn assert_same_bits(a: &[f32], b: &[f32], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert_eq!(x.to_bits(), y.to_bits(), "{what}: value {i}: {x} vs {y}");
    }
}

fn backend(path: &Path, dtype: Option<WeightType>) -> CpuBackend {
    let vocab = Vocab::load(&vocab_path_for(path)).unwrap();
    CpuBackend::new(Weights::open(path, Some(&vocab)).unwrap(), dtype)
}

#[test]
fn a_chain_on_two_threads_gives_the_states_of_one_step_at_a_time() {
    let dir = Dir::new("model-steps");
    // More tokens than the 512 whose input gates are kept.
    let vocab = numbered_vocab(2500);
    let v = vocab.lines().count();
    let mut rng = Rng::new(5);
    let tokens: Vec<u32> = (0..150).map(|_| rng.below(v) as u32).collect();
    assert!(tokens.iter().any(|&t| t < 512) && tokens.iter().any(|&t| t >= 512));
    for (file, run) in [
        (WeightType::F32, None),
        (WeightType::Bf16, None),
        (WeightType::Int8, None),
        (WeightType::F32, Some(WeightType::Int8)),
    ] {
        let path = dir.path.join(format!("m-{}.safetensors", file.as_str()));
        write_random_weights(&vocab, &path, 32, 64, file, 3).unwrap();
        let what = format!("file {} run {:?}", file.as_str(), run);
        let mut paired = backend(&path, run);
        paired.set_threads(2);
        let mut single = backend(&path, run);
        let h0: Vec<f32> = (0..64).map(|i| (i as f32 * 0.37).sin() * 0.5).collect();
        let want = one_by_one(&mut single, &h0, &tokens);
        // Several chains: the second half comes from the partner when it
        // is awake and from the caller when not; either way the same.
        for round in 0..5 {
            let mut got = vec![0.0; want.len()];
            paired.steps(&h0, &tokens, &mut got).unwrap();
            assert_same_bits(&got, &want, &format!("{what}, chain {round}"));
        }
        // Single steps (the partner still awake after the chain takes
        // half) and output layers (its pieces from the back), whole and in
        // ranges that start off the kernels' row groups.
        let mut h = h0.clone();
        let mut next = vec![0.0; 64];
        for (k, &t) in tokens.iter().take(20).enumerate() {
            paired.step(&h, t, &mut next).unwrap();
            assert_same_bits(
                &next,
                &want[k * 64..(k + 1) * 64],
                &format!("{what}, step {k}"),
            );
            h.copy_from_slice(&next);
            for rows in [0..v, 101..1950, 0..2048] {
                let mut a = vec![0.0; rows.len()];
                let mut b = vec![0.0; rows.len()];
                paired.logits_rows(&h, rows.clone(), &mut a).unwrap();
                single.logits_rows(&h, rows.clone(), &mut b).unwrap();
                assert_same_bits(&a, &b, &format!("{what}, rows {rows:?} after step {k}"));
            }
        }
        // A short chain and a bad one.
        let mut got = vec![0.0; 3 * 64];
        paired.steps(&h0, &tokens[..3], &mut got).unwrap();
        assert_same_bits(&got, &want[..3 * 64], &what);
        let mut short = vec![0.0; 64];
        assert!(paired.steps(&h0, &tokens[..3], &mut short).is_err());
        assert!(paired
            .steps(&h0, &[v as u32; 9], &mut vec![0.0; 9 * 64])
            .is_err());
    }
}

#[test]
fn the_default_model_steps_a_re_read_the_same_on_two_threads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/laya-default.safetensors");
    let vocab = Vocab::load(&vocab_path_for(&path)).unwrap();
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/heldout-code.txt"),
    )
    .unwrap();
    let tokens: Vec<u32> = laya::text::tokenizer::tokenize(&text[..4000])
        .map(|t| vocab.id(&t))
        .take(64)
        .collect();
    assert_eq!(tokens.len(), 64);
    let mut paired = backend(&path, None);
    paired.set_threads(2);
    let mut single = backend(&path, None);
    let hd = paired.hidden_dim();
    let h0 = vec![0.0; hd];
    let want = one_by_one(&mut single, &h0, &tokens);
    let mut got = vec![0.0; want.len()];
    paired.steps(&h0, &tokens, &mut got).unwrap();
    assert_same_bits(&got, &want, "laya-default, int8");
}

#[test]
fn an_engine_answers_the_same_with_one_thread_or_two() {
    use laya::engine::{Engine, EngineOptions, Request};
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/heldout-code.txt"),
    )
    .unwrap();
    let at: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    let cuts: Vec<(usize, usize)> = (2000..at.len())
        .step_by(997)
        .take(40)
        .map(|i| (at[i - 2000], at[i]))
        .collect();
    let answers = |threads: usize| {
        let mut e = Engine::new(EngineOptions {
            model_threads: threads,
            ..EngineOptions::default()
        });
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(e.info().device.contains(if threads == 2 && cores >= 2 {
            "2 threads"
        } else {
            "1 thread"
        }));
        // Jumps from place to place: each one a re-read of 64 tokens.
        let mut out = Vec::new();
        for &(from, to) in &cuts {
            let p = e.predict(&Request {
                buffer: 1,
                before: &text[from..to],
                filetype: "",
                kind: Default::default(),
                k: 3,
                seen_last: true,
                learn: true,
            });
            assert!(e.last_cost().steps >= 32, "a far edit re-reads");
            out.push((p.candidates, p.ghost));
        }
        out
    };
    assert_eq!(answers(1), answers(2));
}

/// Output layers of changing row ranges, one after another as fast as the
/// caller can ask: the partner, sometimes a task behind, must never mix one
/// task's rows with another's pieces (it once panicked on a range so
/// mixed), and every answer stays the one thread's.
#[test]
fn output_layers_of_changing_ranges_in_quick_succession_keep_the_partner() {
    let dir = Dir::new("model-steps-ranges");
    let vocab = numbered_vocab(6000);
    let v = vocab.lines().count();
    let path = dir.path.join("m.safetensors");
    write_random_weights(&vocab, &path, 16, 32, WeightType::Int8, 3).unwrap();
    let mut paired = backend(&path, None);
    paired.set_threads(2);
    let mut single = backend(&path, None);
    let mut rng = Rng::new(11);
    let mut h = vec![0.0f32; 32];
    // A step starts the partner.
    paired.step(&h.clone(), 5, &mut h).unwrap();
    let two = paired.threads();
    let (mut a, mut b) = (vec![0.0; v], vec![0.0; v]);
    for round in 0..20_000 {
        if round % 64 == 0 {
            for x in h.iter_mut() {
                *x = (rng.below(2000) as f32 - 1000.0) / 1000.0;
            }
        }
        // At least the 1,024 rows that are shared, from anywhere.
        let len = 1024 + rng.below(v - 1024);
        let start = rng.below(v - len + 1);
        let rows = start..start + len;
        paired.logits_rows(&h, rows.clone(), &mut a[..len]).unwrap();
        if round % 16 == 0 {
            single.logits_rows(&h, rows.clone(), &mut b[..len]).unwrap();
            assert_same_bits(&a[..len], &b[..len], &format!("rows {rows:?}"));
        }
    }
    assert_eq!(paired.threads(), two, "the partner is still there");
}
