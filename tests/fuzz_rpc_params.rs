//! Property-based fuzzing (proptest) of the RPC decoders: every params
//! decoder of src/rpc/params.rs given arbitrary msgpack values as params,
//! and the whole path from bytes (framing, envelope) given arbitrary bytes
//! and arbitrary messages cut anywhere. Invariants: no panic; an error
//! names what is wrong (the argument, or the arity it expected); what is
//! accepted is the input, bounded; whole messages come out whole.
//!
//! A quick pass in `cargo test`; the long run (RELIABILITY.md):
//!   LAYA_FUZZ_CASES=1000000 cargo test --release --test fuzz_rpc_params -- --ignored --nocapture

use laya::rpc::envelope;
use laya::rpc::framing::{Frame, Framer};
use laya::rpc::params::{
    accepted_args, call_args, forget_args, forget_learnt_args, learn_args, PredictParams,
    MAX_AFTER_BYTES, MAX_BEFORE_BYTES,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use rmpv::Value;
use std::time::Instant;

const QUICK: u32 = 500;

fn long_cases() -> u32 {
    std::env::var("LAYA_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000)
}

/// Any msgpack value, nested a few levels, strings sometimes not UTF-8.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Nil),
        any::<bool>().prop_map(Value::Boolean),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (0u64..100).prop_map(Value::from),
        any::<f64>().prop_map(Value::F64),
        any::<f32>().prop_map(Value::F32),
        ".{0,40}".prop_map(Value::from),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(|b| {
            // A msgpack str holding any bytes.
            let mut m = vec![0xd9, b.len() as u8];
            m.extend(&b);
            rmpv::decode::read_value(&mut &m[..]).unwrap()
        }),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Value::Binary),
        (any::<i8>(), proptest::collection::vec(any::<u8>(), 0..9))
            .prop_map(|(t, d)| Value::Ext(t, d)),
        (0usize..40_000).prop_map(|n| Value::from("é".repeat(n))),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((inner.clone(), inner), 0..4).prop_map(Value::Map),
        ]
    })
}

/// Params close to a valid predict (so that deep checks are reached), or
/// anything.
fn predict_params() -> impl Strategy<Value = Vec<Value>> {
    let near = (
        proptest::collection::vec(value(), 0..10),
        0usize..10,
        any::<bool>(),
    )
        .prop_map(|(noise, at, replace)| {
            let mut p: Vec<Value> = vec![
                3.into(),
                17.into(),
                42.into(),
                Value::Array(vec![1.into(), 5.into()]),
                "hello wor".into(),
                "ld".into(),
                "text".into(),
                true.into(),
                "comment".into(),
                false.into(),
            ];
            p.truncate(7 + at % 4);
            for (i, v) in noise.into_iter().enumerate() {
                if replace && (at + i) < p.len() {
                    let n = p.len();
                    p[(at + i) % n] = v;
                } else if !replace && i < at % 4 {
                    p.push(v);
                }
            }
            p
        });
    prop_oneof![near, proptest::collection::vec(value(), 0..12)]
}

const NAMES: &[&str] = &[
    "bufnr",
    "changedtick",
    "seq",
    "cursor",
    "before",
    "after",
    "filetype",
    "seen",
    "syntax",
    "learn",
    "text",
    "path",
    "word",
    "call id",
    "call method",
    "expected",
];

fn names_the_problem(e: &str) -> Result<(), TestCaseError> {
    prop_assert!(
        NAMES.iter().any(|n| e.contains(n)) && e.contains("got"),
        "an error that names neither an argument nor the arity: {e}"
    );
    prop_assert!(e.len() < 300, "a long error: {} bytes", e.len());
    Ok(())
}

fn check_params(p: Vec<Value>) -> Result<(), TestCaseError> {
    match PredictParams::from_args(&p) {
        Ok(d) => {
            prop_assert!((7..=10).contains(&p.len()));
            prop_assert_eq!(Some(d.buffer), p[0].as_u64());
            prop_assert_eq!(Some(d.seq), p[2].as_u64());
            prop_assert!(d.before.len() <= MAX_BEFORE_BYTES);
            prop_assert!(d.after.len() <= MAX_AFTER_BYTES);
            prop_assert!(d.filetype.len() <= 64 && d.syntax.len() <= 64);
        }
        Err(e) => names_the_problem(&e)?,
    }
    for r in [
        accepted_args(&p).map(|_| ()),
        learn_args(&p).map(|_| ()),
        forget_args(&p).map(|_| ()),
        forget_learnt_args(&p).map(|_| ()),
        call_args(&p).map(|_| ()),
    ] {
        if let Err(e) = r {
            names_the_problem(&e)?;
        }
    }
    Ok(())
}

fn encode(v: &Value) -> Vec<u8> {
    let mut b = Vec::new();
    rmpv::encode::write_value(&mut b, v).unwrap();
    b
}

/// Messages (valid envelopes with any params) cut into any chunks come out
/// whole and decode to what was sent; arbitrary bytes after them never
/// panic, never make the framer keep more than the cap.
fn check_stream(
    (params, cuts, junk): (Vec<Vec<Value>>, Vec<usize>, Vec<u8>),
) -> Result<(), TestCaseError> {
    let sent: Vec<Vec<u8>> = params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let v = if i % 2 == 0 {
                Value::Array(vec![2.into(), "predict".into(), Value::Array(p.clone())])
            } else {
                Value::Array(vec![
                    0.into(),
                    (i as u64).into(),
                    "status".into(),
                    Value::Array(p.clone()),
                ])
            };
            encode(&v)
        })
        .collect();
    let stream = sent.concat();
    let cap = 64 << 10;
    let mut framer = Framer::new(cap);
    let mut out = Vec::new();
    let mut at = 0;
    for c in cuts.iter().chain(std::iter::repeat(&4096)) {
        if at >= stream.len() {
            break;
        }
        let end = (at + 1 + c).min(stream.len());
        framer.push(&stream[at..end], &mut out).unwrap();
        at = end;
    }
    prop_assert_eq!(out.len(), sent.len());
    for (frame, bytes) in out.iter().zip(&sent) {
        match frame {
            Frame::Message(m) => {
                prop_assert_eq!(m, bytes);
                prop_assert!(envelope::decode(m).is_ok());
            }
            Frame::Oversized { bytes: n, .. } => {
                prop_assert!(bytes.len() > cap);
                prop_assert_eq!(*n as usize, bytes.len());
            }
        }
    }
    out.clear();
    // Garbage after them: an error or more frames, never a panic.
    let _ = framer.push(&junk, &mut out);
    for f in &out {
        if let Frame::Message(m) = f {
            prop_assert!(m.len() <= cap);
            if let Err(e) = envelope::decode(m) {
                prop_assert!(!e.error.is_empty());
            }
        }
    }
    Ok(())
}

fn run<S: Strategy>(
    name: &str,
    cases: u32,
    strategy: S,
    check: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let t0 = Instant::now();
    let result = runner.run(&strategy, check);
    eprintln!(
        "fuzz {name}: {cases} cases in {:.1} s: {}",
        t0.elapsed().as_secs_f64(),
        if result.is_ok() { "ok" } else { "FAILED" }
    );
    if let Err(e) = result {
        panic!("fuzz {name}: {e}");
    }
}

fn stream_strategy() -> impl Strategy<Value = (Vec<Vec<Value>>, Vec<usize>, Vec<u8>)> {
    (
        proptest::collection::vec(proptest::collection::vec(value(), 0..5), 1..5),
        proptest::collection::vec(0usize..300, 0..20),
        proptest::collection::vec(any::<u8>(), 0..200),
    )
}

#[test]
fn params_decoders_quick() {
    run("rpc params", QUICK, predict_params(), check_params);
}

#[test]
fn framing_and_envelopes_quick() {
    run("rpc stream", QUICK / 2, stream_strategy(), check_stream);
}

#[test]
#[ignore]
fn params_decoders_long() {
    run("rpc params", long_cases(), predict_params(), check_params);
}

#[test]
#[ignore]
fn framing_and_envelopes_long() {
    run("rpc stream", long_cases(), stream_strategy(), check_stream);
}
