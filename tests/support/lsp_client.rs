//! A raw JSON-RPC client of a real `laya lsp` process (stdin/stdout), for
//! the tests of tests/lsp_*.rs. Every server gets its own data folder
//! (XDG_DATA_HOME), so that none reads or writes the user's personal store.
//! Included with `#[path = "support/lsp_client.rs"] mod lsp_client;`.

#![allow(dead_code)] // each test file uses part of it

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

pub const PATIENCE: Duration = Duration::from_secs(30);
pub const URI: &str = "file:///tmp/laya-lsp-test.txt";
pub const TEXT: &str =
    "The zephyrine breeze came over the quokkalike hills.\nA zephyrine light, a zephyrine sky.\n";

pub struct Client {
    pub child: Child,
    stdin: ChildStdin,
    inbox: Receiver<Value>,
    pub next_id: i64,
}

impl Client {
    /// A server whose data folder is a fresh temporary one.
    pub fn start() -> Client {
        let data = scratch("data");
        Client::start_in(&data)
    }

    /// A server whose data folder (XDG_DATA_HOME) is `data`: its default
    /// personal store is `data`/nvim/laya.
    pub fn start_in(data: &Path) -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_laya"))
            .args(["lsp", "--log-level", "debug"])
            .env("XDG_DATA_HOME", data)
            .env_remove("NVIM_APPNAME")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot start laya lsp");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, inbox) = mpsc::channel();
        std::thread::spawn(move || loop {
            let mut length = None;
            loop {
                let mut line = String::new();
                if stdout.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                let (name, value) = line.split_once(": ").expect("header line");
                assert!(name.eq_ignore_ascii_case("content-length"), "{line}");
                length = Some(value.parse::<usize>().unwrap());
            }
            let mut body = vec![0; length.expect("Content-Length")];
            stdout.read_exact(&mut body).unwrap();
            let msg: Value = serde_json::from_slice(&body).expect("server sent bad JSON");
            if tx.send(msg).is_err() {
                return;
            }
        });
        Client {
            child,
            stdin,
            inbox,
            next_id: 0,
        }
    }

    pub fn raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.flush().unwrap();
    }

    pub fn send(&mut self, msg: &Value) {
        let body = msg.to_string();
        self.raw(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    /// Sends a request; returns its id.
    pub fn ask(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        id
    }

    pub fn recv(&mut self) -> Value {
        self.inbox
            .recv_timeout(PATIENCE)
            .expect("no message from the server in time")
    }

    /// The response to request `id` (responses to anything else, such as
    /// errors about malformed input, are returned by `recv`).
    pub fn response(&mut self, id: i64) -> Value {
        let msg = self.recv();
        assert_eq!(msg["id"], json!(id), "expected the answer to {id}: {msg}");
        msg
    }

    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.ask(method, params);
        self.response(id)
    }

    pub fn initialized() -> Client {
        Client::initialized_in(&scratch("data"), json!({}))
    }

    /// A server in data folder `data`, initialized with these
    /// initializationOptions.
    pub fn initialized_in(data: &Path, options: Value) -> Client {
        let mut c = Client::start_in(data);
        let r = c.call(
            "initialize",
            json!({ "capabilities": {}, "initializationOptions": options }),
        );
        assert_eq!(r["result"]["serverInfo"]["name"], "laya", "{r}");
        c.notify("initialized", json!({}));
        c
    }

    pub fn open(&mut self, text: &str) {
        self.open_at(URI, text);
    }

    pub fn open_at(&mut self, uri: &str, text: &str) {
        self.open_as(uri, "text", text);
    }

    pub fn open_as(&mut self, uri: &str, language: &str, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({ "textDocument": { "uri": uri, "languageId": language, "version": 1, "text": text } }),
        );
    }

    pub fn at(line: u32, character: u32) -> Value {
        Client::at_in(URI, line, character)
    }

    pub fn at_in(uri: &str, line: u32, character: u32) -> Value {
        json!({ "textDocument": { "uri": uri }, "position": { "line": line, "character": character } })
    }

    /// The labels of a completion in `uri`, best first, and the inline
    /// completion's texts there.
    pub fn offers(&mut self, uri: &str, line: u32, character: u32) -> (Vec<String>, Vec<String>) {
        let r = self.call(
            "textDocument/completion",
            Client::at_in(uri, line, character),
        );
        let texts = |r: &Value, list: &str, field: &str| -> Vec<String> {
            r["result"][list]
                .as_array()
                .unwrap_or_else(|| panic!("{r}"))
                .iter()
                .map(|i| i[field].as_str().unwrap().to_string())
                .collect()
        };
        let labels = texts(&r, "items", "label");
        let mut p = Client::at_in(uri, line, character);
        p["context"] = json!({ "triggerKind": 2 });
        let r = self.call("textDocument/inlineCompletion", p);
        (labels, texts(&r, "items", "insertText"))
    }

    pub fn save_and_close(&mut self, uri: &str) {
        let doc = json!({ "textDocument": { "uri": uri } });
        self.notify("textDocument/didSave", doc.clone());
        self.notify("textDocument/didClose", doc);
    }

    pub fn completion(&mut self, line: u32, character: u32) -> Value {
        self.call("textDocument/completion", Client::at(line, character))
    }

    /// The labels of a completion at (line, character), best first.
    pub fn labels(&mut self, line: u32, character: u32) -> Vec<String> {
        let r = self.completion(line, character);
        let items = r["result"]["items"]
            .as_array()
            .unwrap_or_else(|| panic!("{r}"));
        items
            .iter()
            .map(|i| i["label"].as_str().unwrap().to_string())
            .collect()
    }

    pub fn inline(&mut self, line: u32, character: u32) -> Value {
        let mut p = Client::at(line, character);
        p["context"] = json!({ "triggerKind": 2 });
        self.call("textDocument/inlineCompletion", p)
    }

    /// shutdown then exit; returns the exit code.
    pub fn finish(mut self) -> i32 {
        let r = self.call("shutdown", Value::Null);
        assert_eq!(r["result"], Value::Null, "{r}");
        assert!(r.get("error").is_none(), "{r}");
        self.notify("exit", Value::Null);
        self.wait()
    }

    pub fn wait(mut self) -> i32 {
        for _ in 0..300 {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        panic!("laya lsp did not exit");
    }
}

/// A fresh, empty folder for this test process, under Cargo's scratch
/// folder for integration tests (target/tmp), which `cargo clean` empties.
pub fn scratch(name: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("laya-lsp-{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub fn error_code(msg: &Value) -> i64 {
    msg["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected an error: {msg}"))
}
