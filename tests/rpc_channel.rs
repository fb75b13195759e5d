//! The host's channel under attack, through a real `laya serve` process:
//! messages over the size cap get a clear error at once and the next
//! request is answered; whole but malformed messages are errors and the
//! host goes on; garbage that cannot be cut into messages ends the host
//! with exit code 3 and one log line (the plugin starts a fresh one), and
//! never leaves it stuck; a flood of mixed malformed and valid
//! notifications leaves it answering, within bounded memory and log.
//!
//! The long runs are `#[ignore]`d (see RELIABILITY.md for their figures):
//!   cargo test --release --test rpc_channel -- --ignored --nocapture

#[path = "support/raw_host.rs"]
mod raw_host;

use raw_host::{get, predict, Host, PATIENCE};
use rmpv::Value;
use std::time::{Duration, Instant};

const MODEL: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/models/laya-default.safetensors"
);

fn encode(v: &Value) -> Vec<u8> {
    let mut b = Vec::new();
    rmpv::encode::write_value(&mut b, v).unwrap();
    b
}

fn notification(method: &str, params: Vec<Value>) -> Vec<u8> {
    encode(&Value::Array(vec![
        2.into(),
        method.into(),
        Value::Array(params),
    ]))
}

fn request_bytes(id: u64, method: &str, params: Vec<Value>) -> Vec<u8> {
    encode(&Value::Array(vec![
        0.into(),
        id.into(),
        method.into(),
        Value::Array(params),
    ]))
}

/// The reply to request `id`, skipping other messages; None if none comes
/// within `patience`.
fn reply_to(h: &Host, id: u64, patience: Duration) -> Option<Result<Value, Value>> {
    let start = Instant::now();
    while start.elapsed() < patience {
        let Ok(m) = h.messages.recv_timeout(Duration::from_millis(50)) else {
            continue;
        };
        let a = m.as_array().unwrap();
        if a[0].as_u64() == Some(1) && a[1].as_u64() == Some(id) {
            return Some(if a[2].is_nil() {
                Ok(a[3].clone())
            } else {
                Err(a[2].clone())
            });
        }
    }
    None
}

#[test]
fn a_huge_message_gets_a_clear_error_and_the_next_request_is_answered() {
    let mut h = Host::start(None);
    let rss_start = h.peak_rss_kb();
    for mb in [50, 100] {
        let huge = "h".repeat(mb << 20);
        // A request over the cap: answered with an error naming the cap.
        let e = h.request("status", vec![huge.as_str().into()]).unwrap_err();
        let e = e.as_str().unwrap().to_string();
        assert!(
            e.contains("over the host's limit of 4194304 bytes")
                && e.contains("--max-message-mb")
                && e.contains(&format!("a message of {} bytes", mb * 1048576 + 16)),
            "{e}"
        );
        // A notification over the cap: skipped, logged; the next is answered.
        h.notify("predict", predict(1, mb as u64, huge.as_str().into()));
        h.notify(
            "predict",
            predict(1, 1000 + mb as u64, "zanzibar zanz".into()),
        );
        assert_eq!(get(&h.answer(), "seq").as_u64(), Some(1000 + mb as u64));
        assert!(h.request("ping", vec![]).is_ok());
    }
    // Just under the cap: read and answered (the context cut to its bound).
    let big = format!("{} zanzibar zanz", "x".repeat(3 << 20));
    h.notify("predict", predict(2, 7, big.into()));
    assert_eq!(get(&h.answer(), "prefix").as_str(), Some("zanz"));
    assert_eq!(h.status_counter("oversized"), 4);
    // Skipped, never held: the peak stays far below one such message.
    let grew_mb = (h.peak_rss_kb() - rss_start) / 1024;
    assert!(grew_mb < 40, "peak RSS grew by {grew_mb} MB");
    let log = h.log();
    let lines = log.lines().filter(|l| l.contains("over the host's limit"));
    assert_eq!(lines.count(), 4, "{log}");
    assert!(!log.contains("hhhh"), "message text in the log");
}

#[test]
fn the_cap_is_a_flag() {
    let mut h = Host::start_with(None, &["--max-message-mb", "0.01"]);
    let e = h
        .request("status", vec!["q".repeat(20_000).into()])
        .unwrap_err();
    assert!(e.as_str().unwrap().contains("limit of 10485 bytes"), "{e}");
    assert!(h.request("status", vec!["q".repeat(9_000).into()]).is_ok());
}

#[test]
fn whole_but_malformed_messages_are_errors_and_the_host_goes_on() {
    let mut h = Host::start(None);
    let bad: Vec<(Value, Option<&str>)> = vec![
        // A request whose method is no string: answered with an error.
        (
            Value::Array(vec![0.into(), 501.into(), 5.into(), Value::Array(vec![])]),
            Some("a method name must be a string"),
        ),
        (
            Value::Array(vec![0.into(), 502.into(), "status".into(), "x".into()]),
            Some("the params of `status` must be an array"),
        ),
        (
            Value::Array(vec![0.into(), 503.into(), "status".into()]),
            Some("a message of kind 0 has 3 items, not 4"),
        ),
        (Value::Array(vec![2.into(), 5.into(), Value::Nil]), None),
        (
            Value::Array(vec![2.into(), "predict".into(), 4.into()]),
            None,
        ),
        (
            Value::Array(vec![2.into(), "predict".into(), Value::Nil, Value::Nil]),
            None,
        ),
        // A response to a request the host never sent.
        (
            Value::Array(vec![1.into(), 77.into(), Value::Nil, Value::Nil]),
            None,
        ),
    ];
    for (v, error) in &bad {
        h.send(v.clone());
        if let Some(error) = error {
            let id = v.as_array().unwrap()[1].as_u64().unwrap();
            let e = reply_to(&h, id, PATIENCE).expect("a reply").unwrap_err();
            assert_eq!(e.as_str(), Some(*error));
        }
    }
    // A method name that is not UTF-8 is an unknown method, answered.
    h.send_bytes(&[0x94, 0x00, 0x20, 0xa3, b'p', 0xff, b'g', 0x90])
        .unwrap();
    let e = reply_to(&h, 0x20, PATIENCE).unwrap().unwrap_err();
    assert!(
        e.as_str().unwrap().contains("unknown method `p\u{fffd}g`"),
        "{e}"
    );
    h.notify("predict", predict(1, 9, "zanzibar zanz".into()));
    assert_eq!(get(&h.answer(), "seq").as_u64(), Some(9));
    assert_eq!(h.status_counter("bad_input"), bad.len() as u64 + 1);
    assert!(h.wait_exit(Duration::ZERO).is_none(), "the host still runs");
}

/// A deterministic random stream (splitmix64) for the generators below.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }

    /// A random msgpack value, nested at most `depth` deep; now and then
    /// a huge-ish one (up to 200 KB) or a string that is not UTF-8.
    fn value(&mut self, depth: u32) -> Value {
        match self.below(if depth == 0 { 9 } else { 12 }) {
            0 => Value::Nil,
            1 => Value::Boolean(self.next() & 1 == 1),
            2 => Value::from(self.next()),
            3 => Value::from(self.next() as i64),
            4 => Value::F64(f64::from_bits(self.next())),
            5 => {
                let n = self.below(40) as usize;
                Value::from(String::from_utf8_lossy(&self.bytes(n)).into_owned())
            }
            6 => {
                // A msgpack str whose bytes are not UTF-8.
                let mut b = vec![0xda, 0, 0];
                let n = 1 + self.below(300) as usize;
                b[1..3].copy_from_slice(&(n as u16).to_be_bytes());
                b.extend(self.bytes(n));
                b.push(0xff);
                b[1..3].copy_from_slice(&((n + 1) as u16).to_be_bytes());
                rmpv::decode::read_value(&mut &b[..]).unwrap()
            }
            7 => {
                let n = self.below(64) as usize;
                Value::Binary(self.bytes(n))
            }
            8 => Value::from("é".repeat(self.below(100_000) as usize)),
            9 => {
                let (t, n) = (self.below(100) as i8, self.below(20) as usize);
                Value::Ext(t, self.bytes(n))
            }
            10 => Value::Array((0..self.below(8)).map(|_| self.value(depth - 1)).collect()),
            _ => Value::Map(
                (0..self.below(6))
                    .map(|_| (self.value(depth - 1), self.value(depth - 1)))
                    .collect(),
            ),
        }
    }
}

const METHODS: &[&str] = &[
    "predict",
    "echo",
    "accepted",
    "forget",
    "learn",
    "forget_learnt",
    "call",
    "nvim_error_event",
    "status",
    "ping",
    "",
    "frobnicate",
];

/// One malformed message (whole: the stream stays in sync).
fn malformed(rng: &mut Rng, id: u64) -> (Vec<u8>, Option<u64>) {
    let method = match rng.below(4) {
        0 => {
            let n = rng.below(30) as usize;
            String::from_utf8_lossy(&rng.bytes(n)).into_owned()
        }
        _ => METHODS[rng.below(METHODS.len() as u64) as usize].to_string(),
    };
    let arity = rng.below(11) as usize;
    let mut params: Vec<Value> = (0..arity).map(|_| rng.value(3)).collect();
    match rng.below(10) {
        // A predict with one argument of the wrong type or arity.
        0..=3 => {
            let mut p = predict(1 + rng.below(3), id, "zebra zeb".into());
            match rng.below(3) {
                0 => p.truncate(rng.below(7) as usize),
                1 => p.extend(params),
                _ => {
                    let i = rng.below(p.len() as u64) as usize;
                    p[i] = rng.value(2);
                }
            }
            (notification("predict", p), None)
        }
        // Random method and params.
        4..=6 => (notification(&method, std::mem::take(&mut params)), None),
        // A request: it must get a reply (an error, or status/ping's answer).
        7 => (request_bytes(id, &method, params), Some(id)),
        // Envelopes that are whole but wrong.
        8 => {
            let v = match rng.below(4) {
                0 => Value::Array(vec![2.into(), rng.value(1), Value::Array(params)]),
                1 => Value::Array(vec![2.into(), method.into(), rng.value(1)]),
                2 => Value::Array(vec![1.into(), id.into(), rng.value(1), rng.value(1)]),
                _ => Value::Array(vec![
                    2.into(),
                    method.into(),
                    Value::Array(params),
                    1.into(),
                ]),
            };
            (encode(&v), None)
        }
        _ => (
            notification(
                if rng.below(2) == 0 {
                    "learn"
                } else {
                    "accepted"
                },
                params,
            ),
            None,
        ),
    }
}

/// What came back from the host.
#[derive(Default)]
struct Seen {
    /// Ids of the replies.
    replies: std::collections::HashSet<u64>,
    /// Seqs of the answers.
    answers: std::collections::HashSet<u64>,
}

impl Seen {
    /// Notes the next message, if one comes within `patience`.
    fn take(&mut self, h: &Host, patience: Duration) {
        let Ok(m) = h.messages.recv_timeout(patience) else {
            return;
        };
        let a = m.as_array().unwrap();
        match a[0].as_u64() {
            Some(1) => {
                self.replies.insert(a[1].as_u64().unwrap());
            }
            _ => {
                let params = a[2].as_array().unwrap();
                if params[0].as_str().unwrap().contains("on_answer") {
                    let answer = &params[1].as_array().unwrap()[0];
                    self.answers.insert(get(answer, "seq").as_u64().unwrap());
                }
            }
        }
    }

    /// Sends a ping and waits for its reply.
    fn ping(&mut self, h: &mut Host, id: u64) {
        h.send_bytes(&request_bytes(id, "ping", vec![])).unwrap();
        let start = Instant::now();
        while !self.replies.contains(&id) {
            assert!(start.elapsed() < PATIENCE, "no reply to ping {id}");
            self.take(h, Duration::from_millis(100));
        }
    }
}

/// Sends `total` notifications, malformed ones and valid predicts mixed
/// (one in ten valid), and a ping every 1000; checks that every request
/// is answered, every valid predict is answered or superseded, the last
/// one is answered, and the log and memory stay bounded. Returns a
/// summary line.
fn mixed_flood(total: u64, seed: u64) -> String {
    let mut h = Host::start_with(None, &["--model", MODEL]);
    let mut rng = Rng(seed);
    let t0 = Instant::now();
    let (mut valid, mut requests, mut last_seq) = (0u64, 0u64, 0);
    // Ids of the replies received, seqs of the answers received.
    let mut seen = Seen::default();
    for i in 1..=total {
        let id = 1_000_000 + i;
        if i % 10 == 0 {
            valid += 1;
            last_seq = id;
            let before = format!("the cat sat on the mat and the dog sat on the {}", i % 97);
            h.notify("predict", predict(1 + rng.below(4), id, before.into()));
        } else {
            let (bytes, request) = malformed(&mut rng, id);
            h.send_bytes(&bytes).unwrap();
            requests += u64::from(request.is_some());
        }
        if i % 1000 == 0 {
            seen.ping(&mut h, 5_000_000 + i);
        }
    }
    seen.ping(&mut h, 9_000_000);
    // The last valid predict is answered (the others answered or superseded).
    let patience = Instant::now();
    while !seen.answers.contains(&last_seq) {
        assert!(
            patience.elapsed() < PATIENCE,
            "no answer to the last predict"
        );
        seen.take(&h, Duration::from_millis(100));
    }
    // Predicts of other buffers may still wait in their slots after the
    // last one's answer (the decision thread takes buffers in any order):
    // wait until the host has handled all it received.
    let handled = |st: &Value| {
        let c = |k: &str| get(&get(st, "counters"), k).as_u64().unwrap();
        c("predict_answered") + c("predict_superseded") == c("predict_received")
    };
    let mut st = h.request("status", vec![]).unwrap();
    while !handled(&st) && patience.elapsed() < PATIENCE {
        seen.take(&h, Duration::from_millis(20));
        st = h.request("status", vec![]).unwrap();
    }
    let c = |k: &str| get(&get(&st, "counters"), k).as_u64().unwrap();
    let secs = t0.elapsed().as_secs_f64();
    let log = h.log();
    let log_lines = log
        .lines()
        .filter(|l| l.starts_with("WARN") || l.starts_with("ERROR"))
        .count();
    let peak_mb = h.peak_rss_kb() as f64 / 1024.0;
    assert!(h.wait_exit(Duration::ZERO).is_none(), "the host still runs");
    assert!(!log.contains("panic"), "{log}");
    assert!(c("predict_received") >= valid, "valid predicts counted");
    assert_eq!(
        c("predict_answered") + c("predict_superseded"),
        c("predict_received"),
        "every predict answered or superseded"
    );
    let pings = total / 1000 + 1;
    assert_eq!(
        seen.replies.len() as u64,
        requests + pings,
        "a reply for every request"
    );
    // The bad-input lines are at most 20 a minute, plus one a minute
    // saying how many were left out.
    let minutes = secs / 60.0 + 1.0;
    assert!(
        (log_lines as f64) < 30.0 + 22.0 * minutes,
        "{log_lines} log lines in {secs:.0} s:\n{}",
        log.lines().take(60).collect::<Vec<_>>().join("\n")
    );
    format!(
        "{total} notifications ({valid} valid predicts, {requests} malformed requests, {pings} pings) in {secs:.1} s: \
         predict received {} answered {} superseded {}, bad_input {}, oversized {}, events dropped {}, \
         {log_lines} log lines, peak RSS {peak_mb:.1} MB",
        c("predict_received"),
        c("predict_answered"),
        c("predict_superseded"),
        c("bad_input"),
        c("oversized"),
        c("events_dropped"),
    )
}

#[test]
fn a_flood_of_mixed_malformed_and_valid_notifications() {
    eprintln!("{}", mixed_flood(5_000, 1));
}

/// The 100k run (RELIABILITY.md).
#[test]
#[ignore]
fn a_flood_of_100k_mixed_malformed_and_valid_notifications() {
    eprintln!("{}", mixed_flood(100_000, 2));
}

/// What garbage does to a running host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Outcome {
    /// A later request was answered and the host runs on.
    Recovered,
    /// Exit code 3 with one line saying the input went out of sync.
    EndedCleanly,
    /// Neither within the patience, while requests kept coming: a failure.
    Stuck,
    /// Any other end (a panic, a signal): a failure.
    Crashed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Garbage {
    RandomBytes,
    TruncatedFrame,
    BadEnvelope,
}

fn garbage(kind: Garbage, rng: &mut Rng) -> Vec<u8> {
    match kind {
        Garbage::RandomBytes => {
            let n = 1 + rng.below(4096) as usize;
            rng.bytes(n)
        }
        Garbage::TruncatedFrame => {
            let whole = notification(
                "predict",
                predict(1, 5, "x".repeat(rng.below(5000) as usize).into()),
            );
            whole[..1 + rng.below(whole.len() as u64 - 1) as usize].to_vec()
        }
        Garbage::BadEnvelope => {
            let v = Value::Array(vec![
                (rng.below(3)).into(),
                rng.value(1),
                rng.value(1),
                rng.value(2),
            ]);
            let mut b = encode(&v);
            if rng.below(2) == 0 {
                // Three items for any kind.
                b[0] = 0x93;
                b.truncate(b.len() - encode(&v.as_array().unwrap()[3]).len());
            }
            b
        }
    }
}

/// Starts a host, sends `kind` of garbage between valid messages, then a
/// ping every 50 ms (as keystrokes would keep coming) until one is
/// answered or the host ends.
fn garbage_trial(kind: Garbage, seed: u64) -> Outcome {
    let mut rng = Rng(seed);
    let mut h = Host::start(None);
    assert!(h.request("ping", vec![]).is_ok());
    let junk = garbage(kind, &mut rng);
    if h.send_bytes(&junk).is_err() {
        // The host already ended and closed its end of the pipe.
        return ended(&mut h);
    }
    let start = Instant::now();
    let mut id = 1_000;
    while start.elapsed() < PATIENCE {
        id += 1;
        if h.send_bytes(&request_bytes(id, "ping", vec![])).is_err() {
            return ended(&mut h);
        }
        let Ok(m) = h.messages.recv_timeout(Duration::from_millis(50)) else {
            if h.wait_exit(Duration::ZERO).is_some() {
                return ended(&mut h);
            }
            continue;
        };
        let a = m.as_array().unwrap();
        if a[0].as_u64() == Some(1) && a[1].as_u64().is_some_and(|r| r > 1_000) {
            return Outcome::Recovered;
        }
    }
    Outcome::Stuck
}

fn ended(h: &mut Host) -> Outcome {
    let code = h.wait_exit(PATIENCE);
    std::thread::sleep(Duration::from_millis(50));
    let log = h.log();
    let says = log.lines().filter(|l| l.contains("out of sync")).count();
    if code == Some(3) && says == 1 && !log.contains("panic") {
        Outcome::EndedCleanly
    } else {
        eprintln!("exit {code:?}\n{log}");
        Outcome::Crashed
    }
}

/// Runs `per_kind` trials of each kind of garbage on `threads` threads;
/// returns the count of each (kind, outcome).
fn garbage_trials(per_kind: u64, threads: u64) -> Vec<((Garbage, Outcome), u64)> {
    let kinds = [
        Garbage::RandomBytes,
        Garbage::TruncatedFrame,
        Garbage::BadEnvelope,
    ];
    let jobs: Vec<(Garbage, u64)> = kinds
        .iter()
        .flat_map(|k| (0..per_kind).map(move |i| (*k, i * 7919 + *k as u64)))
        .collect();
    let counts = std::sync::Mutex::new(std::collections::BTreeMap::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(kind, seed)) = jobs.get(i) else {
                    break;
                };
                let outcome = garbage_trial(kind, seed);
                *counts.lock().unwrap().entry((kind, outcome)).or_insert(0) += 1;
            });
        }
    });
    let counts = counts.into_inner().unwrap();
    for ((kind, outcome), n) in &counts {
        eprintln!("{kind:?}: {outcome:?} {n}");
    }
    counts.into_iter().collect()
}

fn assert_no_failures(counts: &[((Garbage, Outcome), u64)]) {
    for ((kind, outcome), n) in counts {
        assert!(
            matches!(outcome, Outcome::Recovered | Outcome::EndedCleanly),
            "{kind:?}: {n} trials {outcome:?}"
        );
    }
}

#[test]
fn garbage_on_the_channel_ends_the_host_cleanly_or_is_recovered_from() {
    let counts = garbage_trials(6, 4);
    assert_no_failures(&counts);
    // Whole messages with bad envelopes never end the host.
    assert!(counts
        .iter()
        .all(|((k, o), _)| *k != Garbage::BadEnvelope || *o == Outcome::Recovered));
}

/// The long run (RELIABILITY.md): 300 trials of each kind.
#[test]
#[ignore]
fn garbage_on_the_channel_300_trials_of_each_kind() {
    let counts = garbage_trials(300, 8);
    assert_no_failures(&counts);
}

/// `--incomplete-message-ms` sets how long a message may stay incomplete
/// before the host gives the stream up (exit code 3, one ERROR line).
#[test]
fn the_incomplete_message_limit_is_an_option() {
    let mut h = Host::start_with(None, &["--incomplete-message-ms", "200"]);
    h.request("status", vec![]).expect("status");
    let mut bytes = Vec::new();
    rmpv::encode::write_value(
        &mut bytes,
        &Value::Array(vec![
            2.into(),
            "predict".into(),
            Value::Array(predict(1, 1, "hello wor".into())),
        ]),
    )
    .unwrap();
    // Half a message, and nothing more.
    h.send_bytes(&bytes[..bytes.len() / 2]).unwrap();
    assert_eq!(h.wait_exit(PATIENCE), Some(3), "{}", h.log());
    let log = h.log();
    assert!(
        log.contains("out of sync (a message stayed incomplete for 200 ms)"),
        "{log}"
    );
}

/// An oversized notification has no reply to carry the error: the plugin
/// is told once (a notice through `nvim_exec_lua`), whatever the count.
#[test]
fn an_oversized_notification_tells_the_plugin_once() {
    let mut h = Host::start_with(None, &["--max-message-mb", "1"]);
    let big = Value::from("z".repeat(3 << 20));
    for _ in 0..3 {
        h.notify("predict", predict(1, 1, big.clone()));
    }
    // The ping's reply comes after anything the three made the host send.
    h.send(Value::Array(vec![
        0.into(),
        999.into(),
        "ping".into(),
        Value::Array(vec![]),
    ]));
    let mut got = Vec::new();
    loop {
        let m = h.messages.recv_timeout(PATIENCE).expect("the ping's reply");
        let a = m.as_array().unwrap();
        if a[0].as_u64() == Some(1) && a[1].as_u64() == Some(999) {
            break;
        }
        got.push(m);
    }
    let notices: Vec<Value> = got
        .into_iter()
        .filter(|m| {
            let a = m.as_array().unwrap();
            a[0].as_u64() == Some(2)
                && a[2].as_array().unwrap()[0]
                    .as_str()
                    .unwrap()
                    .contains("on_notice")
        })
        .collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    let args = notices[0].as_array().unwrap()[2].as_array().unwrap()[1].clone();
    let args = args.as_array().unwrap();
    assert_eq!(args[0].as_str(), Some("oversized"));
    assert!(
        args[1].as_str().unwrap().contains(
            "is over the host's limit of 1048576 bytes (laya serve --max-message-mb); it was skipped"
        ),
        "{args:?}"
    );
    assert_eq!(h.status_counter("oversized"), 3);
}
