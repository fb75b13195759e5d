//! `laya protocol`: the predictor line protocol of METRICS.md §5 on
//! stdin/stdout, so ../shared/eval/ksr.py can score the engine. Each document
//! is its own buffer; `reset` forgets it.

use super::Opts;
use crate::engine::{Engine, Request};
use serde_json::{json, Value};
use std::io::{BufRead, Write};
use std::time::Instant;

pub(crate) fn run(o: &Opts) -> i32 {
    let mut opts = o.engine.clone();
    // Only candidates are scored: the ghost text's continuation is not asked for.
    if !o.flags.iter().any(|f| f == "--ghost-words") {
        opts.ghost_words = 0;
    }
    let mut engine = Engine::new(opts);
    super::describe(&engine);
    let stdin = std::io::stdin();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut line = String::new();
    let mut bad_lines = 0u64;
    loop {
        line.clear();
        match stdin.lock().read_line(&mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                eprintln!("laya protocol: cannot read stdin: {e}");
                return 1;
            }
        }
        let answer = match serde_json::from_str::<Value>(&line) {
            Ok(req) => answer(&mut engine, &req, bad_lines),
            Err(e) => {
                bad_lines += 1;
                eprintln!("laya protocol: bad request line: {e}");
                json!({"candidates": [], "errors": bad_lines + engine.errors()})
            }
        };
        if writeln!(out, "{answer}").and_then(|_| out.flush()).is_err() {
            break;
        }
    }
    0
}

fn answer(engine: &mut Engine, req: &Value, bad_lines: u64) -> Value {
    if req["op"] == "hello" {
        let i = engine.info();
        return json!({
            "name": "laya",
            "protocol": 1,
            "backend": i.backend,
            "dtype": i.dtype,
            "model": i.model_path.map(|p| p.display().to_string()),
            "model_error": i.model_error,
        });
    }
    let t0 = Instant::now();
    let doc = req["doc"].as_u64().unwrap_or(0);
    if req["reset"].as_bool() == Some(true) {
        engine.forget(doc);
    }
    let k = req["k"].as_u64().unwrap_or(3) as usize;
    let p = engine.predict(&Request {
        buffer: doc,
        before: req["context"].as_str().unwrap_or(""),
        after: "",
        filetype: "",
        k,
    });
    // The protocol can only insert at the cursor: corrections are left out.
    let cands: Vec<&str> = p
        .candidates
        .iter()
        .filter(|c| c.replace == 0)
        .map(|c| c.insert.as_str())
        .collect();
    json!({
        "candidates": cands,
        "us": (t0.elapsed().as_secs_f64() * 1e7).round() / 10.0,
        "errors": engine.errors() + bad_lines,
    })
}
