//! Fuzzing of `laya lsp`'s input (src/lsp), in process through
//! `laya::lsp::serve_bytes`, which serves bytes as `laya lsp` serves stdin:
//! framing and headers (lying, bad and missing Content-Length, junk, cut
//! messages, raw bytes), JSON-RPC envelopes (ids of every type, responses,
//! missing fields, batches), every method's params (valid, mutated, any
//! JSON), didChange sequences against open documents and positions out of
//! range, with every message waiting at once or served one by one.
//!
//! Invariants: no panic; the output is well-framed JSON-RPC responses, each
//! error with a code and a bounded message; a valid request after the
//! fuzzed input is answered (once); shutdown + exit end with the right
//! code; what a case allocates at once stays within a bound of its input.
//! See support/fuzz.rs for the runs:
//!   LAYA_FUZZ_CASES=1000000 cargo test --release --test fuzz_lsp -- --ignored --nocapture

#[path = "support/fuzz.rs"]
mod fuzz;

use laya::engine::{Engine, EngineOptions};
use laya::lsp::serve_bytes;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::sync::{Mutex, OnceLock};

/// Object keys of the JSON values: shaped like LSP field names (camelCase,
/// such as `textDocument`).
const KEY: &str = "[a-zA-Z]{1,12}";

fn uri() -> impl Strategy<Value = Value> {
    prop_oneof![
        8 => prop::sample::select(vec![
            "file:///tmp/a.txt",
            "file:///tmp/b.md",
            "file:///tmp/c.rs",
            "file:///tmp/.env",
            "file:///home/u/.ssh/config",
            "file:///tmp/%2Eenv",
            "untitled:Untitled-1",
            "",
        ])
        .prop_map(Value::from),
        1 => any::<String>().prop_map(Value::from),
        1 => fuzz::json_value(KEY),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "(the |quokka|zeph|yrine |é|😀|日本| |\n|\r\n|\t|password = x\n|[a-z]{1,6}){0,30}",
        2 => "[a-zé😀 .\n\r]{0,80}",
        1 => any::<String>(),
        1 => (0usize..3000).prop_map(|n| "lorem ipsum ".repeat(n)),
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => (0u32..12).prop_map(Value::from),
        2 => (0u32..200).prop_map(Value::from),
        1 => any::<u32>().prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
        1 => fuzz::json_value(KEY),
    ]
}

fn position() -> impl Strategy<Value = Value> {
    prop_oneof![
        9 => (number(), number()).prop_map(|(l, c)| json!({ "line": l, "character": c })),
        1 => fuzz::json_value(KEY),
    ]
}

fn doc_id() -> impl Strategy<Value = Value> {
    (uri(), number()).prop_map(|(u, v)| json!({ "uri": u, "version": v }))
}

fn change() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => (position(), position(), text())
            .prop_map(|(s, e, t)| json!({ "range": { "start": s, "end": e }, "text": t })),
        2 => text().prop_map(|t| json!({ "text": t })),
        1 => (position(), text(), number()).prop_map(
            |(s, t, n)| json!({ "range": { "start": s, "end": s }, "rangeLength": n, "text": t }),
        ),
        1 => fuzz::json_value(KEY),
    ]
}

/// A method and params close to what a client sends.
fn method_and_params() -> impl Strategy<Value = (String, Value)> {
    let m = |s: &str| s.to_string();
    prop_oneof![
        3 => (uri(), prop::sample::select(vec!["text", "markdown", "rust", "gitcommit", ""]), number(), text())
            .prop_map(move |(u, l, v, t)| (m("textDocument/didOpen"),
                json!({ "textDocument": { "uri": u, "languageId": l, "version": v, "text": t } }))),
        4 => (doc_id(), prop::collection::vec(change(), 0..4))
            .prop_map(move |(d, c)| (m("textDocument/didChange"),
                json!({ "textDocument": d, "contentChanges": c }))),
        4 => (uri(), position(), prop::option::of(1u32..4)).prop_map(move |(u, p, k)| {
            let mut v = json!({ "textDocument": { "uri": u }, "position": p });
            if let Some(k) = k {
                v["context"] = json!({ "triggerKind": k, "triggerCharacter": "a" });
            }
            (m("textDocument/completion"), v)
        }),
        3 => (uri(), position()).prop_map(move |(u, p)| (m("textDocument/inlineCompletion"),
                json!({ "textDocument": { "uri": u }, "position": p, "context": { "triggerKind": 1 } }))),
        1 => uri().prop_map(move |u| (m("textDocument/didSave"), json!({ "textDocument": { "uri": u } }))),
        1 => uri().prop_map(move |u| (m("textDocument/didClose"), json!({ "textDocument": { "uri": u } }))),
        1 => number().prop_map(move |id| (m("$/cancelRequest"), json!({ "id": id }))),
        1 => (fuzz::json_value(KEY), prop::collection::vec("[*.a-z]{0,6}", 0..3)).prop_map(move |(o, files)| {
            let caps = json!({ "general": { "positionEncodings": ["utf-8", "utf-16"] } });
            (m("initialize"), json!({ "capabilities": caps, "initializationOptions":
                { "disabled_files": files, "learn": false, "other": o } }))
        }),
        1 => Just((m("initialized"), json!({}))),
        1 => Just((m("shutdown"), Value::Null)),
        // Any other method (`exit` ends serving: the checks send their own).
        1 => ("[a-z$/]{0,20}", fuzz::json_value(KEY))
            .prop_map(|(m, p)| (if m == "exit" { "exit/not".into() } else { m }, p)),
    ]
}

/// One JSON-RPC message: a request or notification (ids of every type,
/// params sometimes replaced by anything), a response, or any JSON.
fn message() -> impl Strategy<Value = Value> {
    let id = prop_oneof![
        4 => (1i64..50).prop_map(Value::from),
        1 => "[a-z0-9]{0,8}".prop_map(Value::from),
        1 => fuzz::json_value(KEY),
    ];
    prop_oneof![
        12 => (method_and_params(), prop::option::of(id), 0u8..10, fuzz::json_value(KEY)).prop_map(
            |((method, params), id, mutate, noise)| {
                let mut msg = json!({ "jsonrpc": "2.0", "method": method, "params": params });
                if let Some(id) = id {
                    msg["id"] = id;
                }
                match mutate {
                    0 => msg["params"] = noise,
                    1 => drop(msg.as_object_mut().map(|o| o.remove("params"))),
                    2 => msg["jsonrpc"] = noise,
                    _ => {}
                }
                msg
            }
        ),
        1 => ((1i64..50), fuzz::json_value(KEY)).prop_map(|(id, r)| json!({ "jsonrpc": "2.0", "id": id, "result": r })),
        1 => prop::collection::vec(fuzz::json_value(KEY), 0..3).prop_map(Value::from),
        1 => fuzz::json_value(KEY),
    ]
}

/// How a message is framed.
#[derive(Debug, Clone)]
enum Framing {
    Good,
    /// Content-Length off by this many bytes.
    Off(i32),
    LowerCase,
    /// A Content-Type header before it, or junk lines.
    Extra(String),
    NoBlankLine,
    BadLength(String),
    /// Only the first n bytes of the frame.
    Cut(usize),
}

fn framing() -> impl Strategy<Value = Framing> {
    prop_oneof![
        12 => Just(Framing::Good),
        1 => (-40i32..40).prop_map(Framing::Off),
        1 => Just(Framing::LowerCase),
        1 => prop_oneof![
            Just("Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n".to_string()),
            "[ -~]{0,30}\r\n",
        ]
        .prop_map(Framing::Extra),
        1 => Just(Framing::NoBlankLine),
        1 => prop_oneof![
            Just("-1".to_string()),
            Just("99999999999999999999999".to_string()),
            "[ -~]{0,12}",
        ]
        .prop_map(Framing::BadLength),
        1 => (0usize..200).prop_map(Framing::Cut),
    ]
}

fn frame(body: &[u8], how: &Framing) -> Vec<u8> {
    let header = |n: usize| format!("Content-Length: {n}\r\n\r\n").into_bytes();
    let mut out = match how {
        Framing::Good | Framing::Cut(_) => header(body.len()),
        Framing::Off(d) => header((body.len() as i64 + *d as i64).max(0) as usize),
        Framing::LowerCase => format!("content-length:{}\r\n\r\n", body.len()).into_bytes(),
        Framing::Extra(e) => [e.as_bytes(), &header(body.len())].concat(),
        Framing::NoBlankLine => format!("Content-Length: {}\r\n", body.len()).into_bytes(),
        Framing::BadLength(v) => format!("Content-Length: {v}\r\n\r\n").into_bytes(),
    };
    out.extend_from_slice(body);
    if let Framing::Cut(n) = how {
        out.truncate(*n);
    }
    out
}

#[derive(Debug, Clone)]
enum Part {
    Message(Value, Framing),
    Raw(Vec<u8>),
}

fn part() -> impl Strategy<Value = Part> {
    prop_oneof![
        12 => (message(), framing()).prop_map(|(m, f)| Part::Message(m, f)),
        1 => prop::collection::vec(any::<u8>(), 0..64).prop_map(Part::Raw),
    ]
}

#[derive(Debug, Clone)]
struct Case {
    /// Starts with a valid initialize, initialized and two open documents
    /// (so that most messages reach the documents and the engine).
    prelude: bool,
    parts: Vec<Part>,
    /// Every message waiting at once (else served one by one).
    batch: bool,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::bool::weighted(0.85),
        prop::collection::vec(part(), 0..14),
        prop::bool::weighted(0.3),
    )
        .prop_map(|(prelude, parts, batch)| Case {
            prelude,
            parts,
            batch,
        })
}

fn engine() -> &'static Mutex<Option<Engine>> {
    static E: OnceLock<Mutex<Option<Engine>>> = OnceLock::new();
    E.get_or_init(|| {
        // The word sources only: this fuzzes the server's input, and a
        // prediction's own work is fuzz_predict's.
        Mutex::new(Some(Engine::new(EngineOptions {
            model_path: Some("/nonexistent/model.safetensors".into()),
            think_ahead: false,
            ..EngineOptions::default()
        })))
    })
}

fn good(msg: Value) -> Vec<u8> {
    frame(msg.to_string().as_bytes(), &Framing::Good)
}

/// The case's bytes: prelude, fuzzed parts, then the checks' own messages.
fn input(case: &Case) -> Vec<u8> {
    let mut out = Vec::new();
    if case.prelude {
        let caps = json!({ "general": { "positionEncodings": ["utf-16"] } });
        out.extend(good(
            json!({ "jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": { "capabilities": caps, "initializationOptions": { "learn": false } } }),
        ));
        out.extend(good(
            json!({ "jsonrpc": "2.0", "method": "initialized", "params": {} }),
        ));
        for (uri, lang) in [("file:///tmp/a.txt", "text"), ("file:///tmp/c.rs", "rust")] {
            out.extend(good(
                json!({ "jsonrpc": "2.0", "method": "textDocument/didOpen",
                "params": { "textDocument": { "uri": uri, "languageId": lang, "version": 1,
                "text": "the quokka sat\nzephyrine é😀 line\n\nthe quo" } } }),
            ));
        }
    }
    for p in &case.parts {
        match p {
            Part::Message(m, how) => out.extend(frame(m.to_string().as_bytes(), how)),
            Part::Raw(b) => out.extend(b),
        }
    }
    out.extend(good(
        json!({ "jsonrpc": "2.0", "id": "sentinel", "method": "laya/sentinel", "params": {} }),
    ));
    out.extend(good(
        json!({ "jsonrpc": "2.0", "id": "last-shutdown", "method": "shutdown" }),
    ));
    out.extend(good(json!({ "jsonrpc": "2.0", "method": "exit" })));
    out
}

/// The server's output as messages (it must be well framed).
fn messages(out: &[u8]) -> Result<Vec<Value>, TestCaseError> {
    let mut rest = out;
    let mut msgs = Vec::new();
    while !rest.is_empty() {
        let text = std::str::from_utf8(rest)
            .map_err(|e| TestCaseError::fail(format!("output not UTF-8: {e}")))?;
        let (head, body) = text
            .split_once("\r\n\r\n")
            .ok_or_else(|| TestCaseError::fail(format!("no header end in {text:.200}")))?;
        let n: usize = head
            .strip_prefix("Content-Length: ")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| TestCaseError::fail(format!("bad header {head:.200}")))?;
        prop_assert!(body.len() >= n, "a body cut short");
        let msg: Value = serde_json::from_str(&body[..n])
            .map_err(|e| TestCaseError::fail(format!("body not JSON: {e}")))?;
        msgs.push(msg);
        rest = &body.as_bytes()[n..];
    }
    Ok(msgs)
}

fn check(case: Case) -> Result<(), TestCaseError> {
    let bytes = input(&case);
    let mut slot = engine().lock().unwrap_or_else(|p| p.into_inner());
    let engine = slot.take().expect("the engine is back after each case");
    let mut out = Vec::new();
    let ((code, engine), peak) =
        fuzz::peak_bytes(|| serve_bytes(engine, &bytes, &mut out, None, case.batch));
    *slot = Some(engine);
    drop(slot);
    // Documents and the engine's caches for them: bounded by the input.
    fuzz::within(peak, 128 * bytes.len() + (16 << 20), "lsp")?;
    let msgs = messages(&out)?;
    let mut sentinel = 0;
    let mut shutdown_ok = false;
    for m in &msgs {
        prop_assert_eq!(&m["jsonrpc"], "2.0", "{}", m);
        prop_assert!(m.get("id").is_some(), "a response without an id: {}", m);
        let answered = m.get("result").is_some() as u8 + m.get("error").is_some() as u8;
        prop_assert_eq!(answered, 1, "result or error: {}", m);
        if let Some(e) = m.get("error") {
            prop_assert!(e["code"].is_i64(), "{}", m);
            let why = e["message"].as_str().unwrap_or_default();
            prop_assert!(!why.is_empty() && why.len() <= 1000, "{}", m);
        }
        if m["id"] == "sentinel" {
            sentinel += 1;
            let code = m["error"]["code"].as_i64();
            prop_assert!(
                matches!(code, Some(-32601 | -32002 | -32600)),
                "the sentinel: {}",
                m
            );
        }
        if m["id"] == "last-shutdown" {
            shutdown_ok = m.get("result").is_some();
        }
    }
    prop_assert_eq!(sentinel, 1, "the request after the fuzzed input");
    prop_assert!(code == 0 || code == 1, "exit code {}", code);
    if shutdown_ok {
        prop_assert_eq!(code, 0, "exit after a shutdown");
    }
    Ok(())
}

#[test]
fn lsp_messages() {
    fuzz::run("lsp", fuzz::QUICK, case(), check);
}

#[test]
#[ignore = "long run: LAYA_FUZZ_CASES (default 1M) cases"]
fn lsp_messages_long() {
    fuzz::run("lsp", fuzz::long_cases(), case(), check);
}
