//! `laya lsp` round trips over typed real text: per keystroke an
//! incremental didChange, then a textDocument/completion or (every other
//! key) textDocument/inlineCompletion at the new cursor, then a no-op
//! request (an unknown method, answered with MethodNotFound by the same
//! reader, queue and writer without the engine): the floor the other two
//! are compared with, measured in the same run.
//!
//!   cargo build --release && cargo bench --bench lsp_latency -- [FILE] [KEYS] [LANGUAGE]
//!
//! FILE defaults to tests/data/heldout-prose.txt, KEYS to 3000, LANGUAGE
//! (the document's languageId) to the file's: heldout-NAME.txt is NAME,
//! `text` for prose and english, `rust` for code. Prints a table.
//! LAYA_BIN names another `laya` binary to time (A/B runs of two builds).

use laya::cli::percentiles::Latencies;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

struct Client {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: i64,
}

impl Client {
    fn send(&mut self, msg: Value) {
        let body = msg.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        self.stdin.flush().unwrap();
    }

    fn recv(&mut self) -> Value {
        let mut length = 0;
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "server closed"
            );
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((_, v)) = line.split_once(": ") {
                length = v.parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        self.stdout.read_exact(&mut body).unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    /// A request's round trip in ns; its answer.
    fn call(&mut self, method: &str, params: Value) -> (u64, Value) {
        self.next_id += 1;
        let id = self.next_id;
        let t = Instant::now();
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        let r = self.recv();
        let ns = t.elapsed().as_nanos() as u64;
        assert_eq!(r["id"], json!(id));
        (ns, r)
    }
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let root = env!("CARGO_MANIFEST_DIR");
    let file = args
        .first()
        .cloned()
        .unwrap_or_else(|| format!("{root}/tests/data/heldout-prose.txt"));
    let keys: usize = args.get(1).map_or(3000, |k| k.parse().unwrap());
    let language = args.get(2).cloned().unwrap_or_else(|| language_of(&file));
    let text: String = std::fs::read_to_string(&file)
        .expect("cannot read the text")
        .chars()
        .take(keys)
        .collect();
    let bin = std::env::var("LAYA_BIN").unwrap_or_else(|_| format!("{root}/target/release/laya"));
    let mut child = Command::new(&bin)
        .arg("lsp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run `cargo build --release` first");
    let mut c = Client {
        stdin: child.stdin.take().unwrap(),
        stdout: BufReader::new(child.stdout.take().unwrap()),
        next_id: 0,
    };
    let caps = json!({ "general": { "positionEncodings": ["utf-16"] } });
    c.call("initialize", json!({ "capabilities": caps }));
    c.send(json!({ "jsonrpc": "2.0", "method": "initialized", "params": {} }));
    let uri = "file:///bench.txt";
    c.send(
        json!({ "jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": { "uri": uri, "languageId": language, "version": 1, "text": "" } } }),
    );
    let (mut completion, mut inline, mut noop) =
        (Latencies::new(), Latencies::new(), Latencies::new());
    let (mut line, mut col) = (0u32, 0u32);
    let mut shown = 0;
    for (i, ch) in text.chars().enumerate() {
        let at = json!({ "line": line, "character": col });
        c.send(json!({ "jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": { "uri": uri, "version": i + 2 },
            "contentChanges": [{ "range": { "start": at, "end": at }, "text": ch.to_string() }] } }));
        if ch == '\n' {
            line += 1;
            col = 0;
        } else {
            col += ch.len_utf16() as u32;
        }
        let pos = json!({ "textDocument": { "uri": uri }, "position": { "line": line, "character": col } });
        if i % 2 == 0 {
            let (ns, r) = c.call("textDocument/completion", pos);
            shown += usize::from(!r["result"]["items"].as_array().unwrap().is_empty());
            completion.record_ns(ns);
        } else {
            let mut p = pos;
            p["context"] = json!({ "triggerKind": 2 });
            let (ns, _) = c.call("textDocument/inlineCompletion", p);
            inline.record_ns(ns);
        }
        let (ns, r) = c.call("laya/noop", json!({}));
        assert_eq!(r["error"]["code"], -32601);
        noop.record_ns(ns);
    }
    c.call("shutdown", Value::Null);
    c.send(json!({ "jsonrpc": "2.0", "method": "exit" }));
    let _ = child.wait();

    println!(
        "laya lsp round trips over {} keys of {file} (languageId {language})",
        text.chars().count()
    );
    println!(
        "(completion lists non-empty: {shown} of {})",
        completion.len()
    );
    println!("| request | n | p50 us | p99 us | p50 / no-op | p99 / no-op |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for (name, l) in [
        ("completion", &completion),
        ("inlineCompletion", &inline),
        ("no-op (unknown method)", &noop),
    ] {
        println!(
            "| {name} | {} | {:.0} | {:.0} | {:.2}x | {:.2}x |",
            l.len(),
            l.us(0.50),
            l.us(0.99),
            l.us(0.50) / noop.us(0.50),
            l.us(0.99) / noop.us(0.99)
        );
    }
}

/// The languageId of a held-out file: heldout-NAME.txt is NAME, but prose
/// and english are `text` and code (Rust) is `rust`.
fn language_of(file: &str) -> String {
    let stem = std::path::Path::new(file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match stem.strip_prefix("heldout-").unwrap_or(&stem) {
        "prose" | "english" | "" => "text".into(),
        "code" => "rust".into(),
        other => other.into(),
    }
}
