//! The model file changing underneath a running host (`laya serve`, a real
//! process, the default model on the cpu backend): truncated to nothing,
//! overwritten in place with garbage, cut in half. The host read the file
//! once at start, so it neither crashes (a memory map of a truncated file
//! would kill it with SIGBUS) nor changes its answers, and it keeps
//! answering every keystroke.

use rmpv::Value;
use std::io::{BufRead, BufReader, Seek, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    fn start(model: &Path) -> Host {
        let mut child = Command::new(HOST)
            .args(["serve", "--backend", "cpu", "--model"])
            .arg(model)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start laya serve");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (tx, messages) = channel();
        std::thread::spawn(move || {
            while let Ok(v) = rmpv::decode::read_value(&mut stdout) {
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

    fn request(&mut self, method: &str) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(Value::Array(vec![
            0.into(),
            id.into(),
            method.into(),
            Value::Array(vec![]),
        ]));
        loop {
            let m = self.next_message();
            let a = m.as_array().unwrap();
            if a[0].as_u64() == Some(1) && a[1].as_u64() == Some(id) {
                assert!(a[2].is_nil(), "{method} failed: {:?}", a[2]);
                return a[3].clone();
            }
        }
    }

    fn next_message(&mut self) -> Value {
        match self.messages.recv_timeout(PATIENCE) {
            Ok(m) => m,
            Err(_) => {
                let status = self.child.try_wait().unwrap();
                panic!(
                    "no message from the host (exit status {status:?}); log:\n{}",
                    self.stderr.lock().unwrap()
                )
            }
        }
    }

    /// Sends a keystroke's predict and returns its answer's words.
    fn predict(&mut self, seq: u64, before: &str) -> Vec<String> {
        self.send(Value::Array(vec![
            2.into(),
            "predict".into(),
            Value::Array(vec![
                1.into(),
                1.into(),
                seq.into(),
                Value::Array(vec![1.into(), 0.into()]),
                before.into(),
                "".into(),
                "text".into(),
            ]),
        ]));
        loop {
            let m = self.next_message();
            let a = m.as_array().unwrap();
            if a[0].as_u64() != Some(2) {
                continue;
            }
            let answer = &a[2].as_array().unwrap()[1].as_array().unwrap()[0];
            if get(answer, "seq").as_u64() != Some(seq) {
                continue;
            }
            return get(answer, "items")
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|i| get(i, "word").as_str().map(String::from))
                .collect();
        }
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

const TEXT: &str = "The results of the experiment were published in the journal, and the ";

#[test]
fn a_model_file_truncated_or_overwritten_under_a_running_host() {
    let dir = std::env::temp_dir().join(format!("laya-model-under-host-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    for ext in [".safetensors", ".vocab.txt", ".words.txt"] {
        std::fs::copy(
            models.join(format!("laya-default{ext}")),
            dir.join(format!("laya-default{ext}")),
        )
        .unwrap();
    }
    let model = dir.join("laya-default.safetensors");
    let mut h = Host::start(&model);
    let t0 = Instant::now();
    while get(&get(&h.request("status"), "engine"), "ready").as_bool() != Some(true) {
        assert!(t0.elapsed() < PATIENCE, "the engine never got ready");
        std::thread::sleep(Duration::from_millis(50));
    }
    let st = h.request("status");
    let engine = get(&st, "engine");
    assert_eq!(get(&engine, "backend").as_str(), Some("cpu"), "{st:?}");
    // Every keystroke of the text, so the model steps through new tokens
    // (and reads the weights) after each change to the file.
    let keys: Vec<usize> = TEXT.char_indices().map(|(i, _)| i).skip(1).collect();
    let chunk = keys.len() / 4;
    let mut seq = 0;
    let mut type_keys = |h: &mut Host, part: &[usize]| -> Vec<Vec<String>> {
        part.iter()
            .map(|&i| {
                seq += 1;
                h.predict(seq, &TEXT[..i])
            })
            .collect()
    };
    let before = type_keys(&mut h, &keys[..chunk]);
    assert!(before.iter().any(|w| !w.is_empty()), "the model answers");

    let size = std::fs::metadata(&model).unwrap().len();
    // Truncated to nothing (what `cp new old` does first).
    std::fs::File::options()
        .write(true)
        .open(&model)
        .unwrap()
        .set_len(0)
        .unwrap();
    type_keys(&mut h, &keys[chunk..2 * chunk]);
    // Overwritten in place with garbage, at its old size.
    let mut f = std::fs::File::options().write(true).open(&model).unwrap();
    f.rewind().unwrap();
    f.write_all(&vec![0xffu8; size as usize]).unwrap();
    f.sync_all().unwrap();
    type_keys(&mut h, &keys[2 * chunk..3 * chunk]);
    // Cut in half.
    f.set_len(size / 2).unwrap();
    type_keys(&mut h, &keys[3 * chunk..]);

    // The same answers as before the file changed: the weights in use are
    // the ones read at start.
    h.send(Value::Array(vec![
        2.into(),
        "forget".into(),
        Value::Array(vec![1.into()]),
    ]));
    let again: Vec<Vec<String>> = keys[..chunk]
        .iter()
        .map(|&i| {
            seq += 1;
            h.predict(seq, &TEXT[..i])
        })
        .collect();
    assert_eq!(again, before);
    assert!(
        h.child.try_wait().unwrap().is_none(),
        "the host is still running"
    );
    assert!(!get(&h.request("ping"), "now_us").is_nil());
    let log = h.stderr.lock().unwrap().clone();
    assert!(!log.contains("panicked"), "{log}");
    drop(h);
    let _ = std::fs::remove_dir_all(&dir);
}
