//! A raw msgpack-RPC client of a real `laya serve` process, speaking to it
//! the way Neovim does; every byte the host writes to stdout must be an
//! RPC reply or notification. Included by the host tests with
//! `#[path = "support/raw_host.rs"] mod raw_host;`.

#![allow(dead_code)]

use rmpv::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const HOST: &str = env!("CARGO_BIN_EXE_laya");
pub const PATIENCE: Duration = Duration::from_secs(30);

pub struct Host {
    pub child: Child,
    pub stdin: ChildStdin,
    pub messages: Receiver<Value>,
    pub stderr: Arc<Mutex<String>>,
    next_id: u64,
}

impl Host {
    pub fn start(delay_ms: Option<u64>) -> Host {
        Host::start_with(delay_ms, &[])
    }

    /// A host with `args` after the usual ones.
    pub fn start_with(delay_ms: Option<u64>, args: &[&str]) -> Host {
        Host::start_env(delay_ms, args, &[])
    }

    /// A host with `args` after the usual ones and `env` in its environment.
    pub fn start_env(delay_ms: Option<u64>, args: &[&str], env: &[(&str, &str)]) -> Host {
        let mut cmd = Command::new(HOST);
        cmd.envs(env.iter().copied());
        cmd.args([
            "serve",
            "--log-level",
            "debug",
            "--model",
            "/nonexistent/model.safetensors",
        ])
        .args(args)
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

    pub fn send(&mut self, v: Value) {
        let mut bytes = Vec::new();
        rmpv::encode::write_value(&mut bytes, &v).unwrap();
        self.stdin.write_all(&bytes).unwrap();
        self.stdin.flush().unwrap();
    }

    pub fn notify(&mut self, method: &str, params: Vec<Value>) {
        self.send(Value::Array(vec![
            2.into(),
            method.into(),
            Value::Array(params),
        ]));
    }

    /// Sends a request and waits for its reply: Ok(result) or Err(error).
    pub fn request(&mut self, method: &str, params: Vec<Value>) -> Result<Value, Value> {
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
    pub fn answer(&mut self) -> Value {
        loop {
            let m = self
                .messages
                .recv_timeout(PATIENCE)
                .expect("no answer from the host");
            let a = m.as_array().unwrap();
            if a[0].as_u64() == Some(2) {
                assert_eq!(a[1].as_str(), Some("nvim_exec_lua"));
                let params = a[2].as_array().unwrap();
                // Answers to the next keys and replies to `call` come the same way.
                if params[0]
                    .as_str()
                    .unwrap()
                    .contains("require('laya.host').on_answer")
                {
                    return params[1].as_array().unwrap()[0].clone();
                }
            }
        }
    }

    /// Writes raw bytes (garbage, a part of a message).
    pub fn send_bytes(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stdin.write_all(bytes)?;
        self.stdin.flush()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The host's peak resident memory so far (VmHWM), in KB.
    pub fn peak_rss_kb(&self) -> u64 {
        proc_status_kb(self.pid(), "VmHWM:")
    }

    /// Waits for the host to exit; its exit code, or None if it still runs
    /// after `patience` (or died of a signal).
    pub fn wait_exit(&mut self, patience: Duration) -> Option<i32> {
        let start = Instant::now();
        while start.elapsed() < patience {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    pub fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    pub fn status_counter(&mut self, name: &str) -> u64 {
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

pub fn get(map: &Value, key: &str) -> Value {
    map.as_map()
        .and_then(|m| m.iter().find(|(k, _)| k.as_str() == Some(key)))
        .map(|(_, v)| v.clone())
        .unwrap_or(Value::Nil)
}

/// A `kB` field of /proc/PID/status.
pub fn proc_status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The arguments of a `predict` from buffer `buf`.
pub fn predict(buf: u64, seq: u64, before: Value) -> Vec<Value> {
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

/// A stdin handle of a throwaway process, to swap in for the host's.
pub fn spare_stdin() -> ChildStdin {
    Command::new("true")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap()
        .stdin
        .take()
        .unwrap()
}
