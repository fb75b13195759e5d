//! Fuzzing of `laya protocol`'s request lines (src/cli/protocol.rs): any
//! bytes, JSON of any shape and requests with fields of every type and
//! value, through `protocol::serve` and an engine, as the command reads
//! stdin. Every line gets exactly one answer line of JSON, a line that is
//! not a request is counted in `errors`, and the session goes on.
//! See support/fuzz.rs for the runs.

#[path = "support/fuzz.rs"]
mod fuzz;

use laya::cli::protocol;
use laya::engine::{Engine, EngineOptions};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::sync::{Mutex, OnceLock};

/// Object keys of the JSON values: shaped like the protocol's field names
/// (`doc`, `context`, `k`, …).
const KEY: &str = "[a-z]{1,7}";

fn field_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => "[a-z .\n]{0,40}".prop_map(Value::from),
        1 => any::<String>().prop_map(Value::from),
        1 => any::<u64>().prop_map(Value::from),
        1 => (0u64..20).prop_map(Value::from),
        1 => any::<bool>().prop_map(Value::from),
        1 => fuzz::json_value(KEY),
    ]
}

/// One request: the protocol's fields with values of every type.
fn request() -> impl Strategy<Value = Value> {
    let op = prop_oneof![
        Just(json!("predict")),
        Just(json!("hello")),
        Just(json!("learn")),
        field_value(),
    ];
    let fields = prop::sample::select(vec![
        "doc", "context", "k", "reset", "syntax", "text", "pos", "new", "extra",
    ]);
    (op, prop::collection::vec((fields, field_value()), 0..6)).prop_map(|(op, fs)| {
        let mut m = serde_json::Map::new();
        m.insert("op".into(), op);
        for (k, v) in fs {
            m.insert(k.into(), v);
        }
        Value::Object(m)
    })
}

/// A line's bytes (without its newline).
fn line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => request().prop_map(|v| v.to_string().into_bytes()),
        1 => fuzz::json_value(KEY).prop_map(|v| v.to_string().into_bytes()),
        1 => prop::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..64),
        1 => request().prop_map(|v| {
            let mut s = v.to_string().into_bytes();
            s.truncate(s.len() / 2);
            s
        }),
    ]
}

fn engine() -> &'static Mutex<Engine> {
    static E: OnceLock<Mutex<Engine>> = OnceLock::new();
    E.get_or_init(|| {
        // The word sources only: this fuzzes the protocol, and a
        // prediction's own work is fuzz_predict's.
        Mutex::new(Engine::new(EngineOptions {
            model_path: Some("/nonexistent/model.safetensors".into()),
            think_ahead: false,
            ..EngineOptions::default()
        }))
    })
}

fn check(lines: &[Vec<u8>], final_newline: bool) -> Result<(), TestCaseError> {
    let mut input = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        input.extend_from_slice(l);
        // An empty last line without its newline is no line at all.
        if i + 1 < lines.len() || final_newline || l.is_empty() {
            input.push(b'\n');
        }
    }
    let mut engine = engine().lock().unwrap_or_else(|p| p.into_inner());
    let mut out = Vec::new();
    let (result, peak) = fuzz::peak_bytes(|| protocol::serve(&mut engine, &input[..], &mut out));
    prop_assert!(result.is_ok(), "{:?}", result);
    // A new document's entry in the engine costs a few MB at most.
    fuzz::within(peak, 256 * input.len() + (8 << 20), "protocol")?;
    let out = String::from_utf8(out)
        .map_err(|e| TestCaseError::fail(format!("output not UTF-8: {e}")))?;
    let answers: Vec<&str> = out.lines().collect();
    prop_assert_eq!(
        answers.len(),
        lines.len(),
        "one answer per line: {:?}",
        answers
    );
    for a in answers {
        let v: Value = serde_json::from_str(a)
            .map_err(|e| TestCaseError::fail(format!("answer {a:?} is not JSON: {e}")))?;
        prop_assert!(v.is_object(), "{}", a);
    }
    Ok(())
}

fn case() -> impl Strategy<Value = (Vec<Vec<u8>>, bool)> {
    (prop::collection::vec(line(), 1..6), prop::bool::ANY)
}

#[test]
fn protocol_lines() {
    fuzz::run("protocol", fuzz::QUICK, case(), |(l, n)| check(&l, n));
}

#[test]
#[ignore = "long run: LAYA_FUZZ_CASES (default 1M) cases"]
fn protocol_lines_long() {
    fuzz::run("protocol", fuzz::long_cases(), case(), |(l, n)| {
        check(&l, n)
    });
}
