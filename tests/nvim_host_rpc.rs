//! The host alone (`laya serve`), spoken to in raw msgpack-RPC the way
//! Neovim speaks to it: answers come back as one `nvim_exec_lua`
//! notification carrying the request's seq and the host's timestamps; the
//! latest request per buffer wins; bad input never takes the host down and
//! nothing but RPC ever reaches stdout.

use rmpv::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const HOST: &str = env!("CARGO_BIN_EXE_laya");
const PATIENCE: Duration = Duration::from_secs(30);

struct Host {
    child: Child,
    stdin: ChildStdin,
    messages: Receiver<Value>,
    stderr: Arc<Mutex<String>>,
    next_id: u64,
}

impl Host {
    fn start(delay_ms: Option<u64>) -> Host {
        let mut cmd = Command::new(HOST);
        cmd.args([
            "serve",
            "--log-level",
            "debug",
            "--model",
            "/nonexistent/model.safetensors",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        if let Some(ms) = delay_ms {
            cmd.env("LAYA_TEST_DELAY_MS", ms.to_string());
        }
        let mut child = cmd.spawn().expect("start laya serve");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (tx, messages) = channel();
        std::thread::spawn(move || {
            // Every byte on stdout must be a msgpack-RPC message.
            while let Ok(v) = rmpv::decode::read_value(&mut stdout) {
                let kind = v.as_array().and_then(|a| a.first()).and_then(Value::as_u64);
                assert!(
                    matches!(kind, Some(1) | Some(2)),
                    "not an RPC reply/notification on stdout: {v:?}"
                );
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let log = stderr.clone();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let mut l = log.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        Host {
            child,
            stdin,
            messages,
            stderr,
            next_id: 0,
        }
    }

    fn send(&mut self, v: Value) {
        let mut bytes = Vec::new();
        rmpv::encode::write_value(&mut bytes, &v).unwrap();
        self.stdin.write_all(&bytes).unwrap();
        self.stdin.flush().unwrap();
    }

    fn notify(&mut self, method: &str, params: Vec<Value>) {
        self.send(Value::Array(vec![
            2.into(),
            method.into(),
            Value::Array(params),
        ]));
    }

    /// Sends a request and waits for its reply: Ok(result) or Err(error).
    fn request(&mut self, method: &str, params: Vec<Value>) -> Result<Value, Value> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(Value::Array(vec![
            0.into(),
            id.into(),
            method.into(),
            Value::Array(params),
        ]));
        loop {
            let m = self
                .messages
                .recv_timeout(PATIENCE)
                .expect("no reply from the host");
            let a = m.as_array().unwrap();
            if a[0].as_u64() == Some(1) && a[1].as_u64() == Some(id) {
                return if a[2].is_nil() {
                    Ok(a[3].clone())
                } else {
                    Err(a[2].clone())
                };
            }
        }
    }

    /// The next answer notification (the map passed to the Lua handler).
    fn answer(&mut self) -> Value {
        loop {
            let m = self
                .messages
                .recv_timeout(PATIENCE)
                .expect("no answer from the host");
            let a = m.as_array().unwrap();
            if a[0].as_u64() == Some(2) {
                assert_eq!(a[1].as_str(), Some("nvim_exec_lua"));
                let params = a[2].as_array().unwrap();
                assert!(params[0]
                    .as_str()
                    .unwrap()
                    .contains("require('laya.host').on_answer"));
                return params[1].as_array().unwrap()[0].clone();
            }
        }
    }

    fn status_counter(&mut self, name: &str) -> u64 {
        let st = self.request("status", vec![]).expect("status");
        get(&get(&st, "counters"), name).as_u64().unwrap()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn get(map: &Value, key: &str) -> Value {
    map.as_map()
        .and_then(|m| m.iter().find(|(k, _)| k.as_str() == Some(key)))
        .map(|(_, v)| v.clone())
        .unwrap_or(Value::Nil)
}

fn predict(buf: u64, seq: u64, before: Value) -> Vec<Value> {
    vec![
        buf.into(),
        1.into(),
        seq.into(),
        Value::Array(vec![1.into(), 0.into()]),
        before,
        "".into(),
        "text".into(),
    ]
}

#[test]
fn answers_carry_the_seq_candidates_and_host_timestamps() {
    let mut h = Host::start(None);
    h.notify(
        "predict",
        predict(7, 41, "marmalade marmot marmalade mar".into()),
    );
    let a = h.answer();
    assert_eq!(get(&a, "seq").as_u64(), Some(41));
    assert_eq!(get(&a, "buf").as_u64(), Some(7));
    assert_eq!(get(&a, "prefix").as_str(), Some("mar"));
    let items = get(&a, "items");
    let words: Vec<&str> = items
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i.as_map())
        .filter_map(|m| m.iter().find(|(k, _)| k.as_str() == Some("word")))
        .filter_map(|(_, v)| v.as_str())
        .collect();
    assert!(
        words.contains(&"marmalade"),
        "buffer word proposed: {words:?}"
    );
    let t = |k| get(&a, k).as_u64().unwrap();
    assert!(t("t_recv") <= t("t_start") && t("t_start") <= t("t_done"));
    // ping does nothing but answer with the host clock.
    let ping = h.request("ping", vec![]).unwrap();
    assert!(get(&ping, "now_us").as_u64().unwrap() >= t("t_done"));
    let st = h.request("status", vec![]).unwrap();
    assert_eq!(
        get(&st, "version").as_str(),
        Some(env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(
        get(&get(&st, "counters"), "predict_answered").as_u64(),
        Some(1)
    );
    assert_eq!(get(&get(&st, "latency"), "n").as_u64(), Some(1));
}

#[test]
fn the_latest_request_per_buffer_wins() {
    let mut h = Host::start(Some(300));
    for seq in 1..=20 {
        h.notify("predict", predict(1, seq, format!("word{seq} wo").into()));
    }
    let mut seqs = vec![];
    while seqs.last() != Some(&20) {
        seqs.push(get(&h.answer(), "seq").as_u64().unwrap());
    }
    assert!(
        seqs.len() < 20,
        "superseded requests were answered: {seqs:?}"
    );
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "answers in order: {seqs:?}"
    );
    assert!(h.status_counter("predict_superseded") > 0);
}

#[test]
fn bad_input_gets_an_error_or_a_log_line_and_the_host_keeps_working() {
    let mut h = Host::start(None);
    // Wrong arity, wrong types, unknown names: notifications get log lines.
    h.notify("predict", vec![1.into()]);
    h.notify("predict", predict(1, 1, Value::from(12)));
    let mut bad_cursor = predict(1, 1, "x".into());
    bad_cursor[3] = "not a cursor".into();
    h.notify("predict", bad_cursor);
    h.notify("accepted", vec![]);
    h.notify("frobnicate", vec![]);
    // Requests get error replies that say what is wrong.
    let e = h.request("frobnicate", vec![]).unwrap_err();
    assert!(e.as_str().unwrap().contains("unknown method `frobnicate`"));
    let e = h.request("predict", predict(1, 2, "x".into())).unwrap_err();
    assert!(e.as_str().unwrap().contains("notification"));
    assert!(h.status_counter("bad_input") >= 7);
    // Invalid UTF-8 is decoded lossily and still answered.
    // A msgpack str whose bytes are not UTF-8 (as a buffer may hold).
    let invalid = rmpv::decode::read_value(&mut &b"\xa8caf\xff caf"[..]).unwrap();
    h.notify("predict", predict(2, 3, invalid));
    assert_eq!(get(&h.answer(), "seq").as_u64(), Some(3));
    // A megabyte line is bounded and answered.
    let huge = format!("{} zanzibar zanz", "x".repeat(2_000_000));
    h.notify("predict", predict(2, 4, huge.into()));
    let a = h.answer();
    assert_eq!(get(&a, "seq").as_u64(), Some(4));
    assert_eq!(get(&a, "prefix").as_str(), Some("zanz"));
    // Still alive, and the reasons are in the log.
    assert!(h.request("ping", vec![]).is_ok());
    let log = h.stderr.lock().unwrap().clone();
    assert!(
        log.contains("WARN bad input: predict: expected 7 to 9 arguments, got 1"),
        "{log}"
    );
    assert!(log.contains("unknown notification `frobnicate`"), "{log}");
    assert!(!log.contains("panicked"), "{log}");
}

/// A stdin handle of a throwaway process, to swap in for the host's.
fn spare_stdin() -> ChildStdin {
    Command::new("true")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap()
        .stdin
        .take()
        .unwrap()
}

#[test]
fn closing_the_channel_ends_the_host_cleanly() {
    let mut h = Host::start(None);
    assert!(h.request("ping", vec![]).is_ok());
    // Closing stdin is what Neovim's exit (or jobstop) does.
    drop(std::mem::replace(&mut h.stdin, spare_stdin()));
    let status = h.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn garbage_on_the_channel_is_logged_and_never_a_panic() {
    let mut h = Host::start(None);
    h.stdin.write_all(&[0xc1, 0xc1, 0xc1, 0x93, 0xff]).unwrap();
    h.stdin.flush().unwrap();
    let status = h.child.wait().unwrap();
    assert_ne!(status.code(), Some(101), "exit code 101 means a panic");
    std::thread::sleep(Duration::from_millis(100));
    let log = h.stderr.lock().unwrap().clone();
    assert!(log.contains("ERROR RPC channel failed"), "{log}");
    assert!(!log.contains("panicked"), "{log}");
}

#[test]
fn serve_version_and_bad_arguments() {
    let out = Command::new(HOST)
        .args(["serve", "--version"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("laya {}", env!("CARGO_PKG_VERSION"))
    );
    let out = Command::new(HOST)
        .args(["serve", "--backend", "gpu"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "nothing but RPC on stdout");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("'gpu'") && err.contains("auto, cpu, mlx"),
        "{err}"
    );
}
