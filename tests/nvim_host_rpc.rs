//! The host alone (`laya serve`), spoken to in raw msgpack-RPC the way
//! Neovim speaks to it: answers come back as one `nvim_exec_lua`
//! notification carrying the request's seq and the host's timestamps; the
//! latest request per buffer wins; bad input never takes the host down and
//! nothing but RPC ever reaches stdout.

#[path = "support/raw_host.rs"]
mod raw_host;

use raw_host::{get, predict, spare_stdin, Host, HOST, PATIENCE};
use rmpv::Value;
use std::process::Command;

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
        log.contains("WARN bad input: predict: expected 7 to 10 arguments, got 1"),
        "{log}"
    );
    assert!(log.contains("unknown notification `frobnicate`"), "{log}");
    assert!(!log.contains("panicked"), "{log}");
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
fn garbage_on_the_channel_ends_the_host_cleanly_with_one_line() {
    let mut h = Host::start(None);
    assert!(h.request("ping", vec![]).is_ok());
    h.send_bytes(&[0xc1, 0xc1, 0xc1, 0x93, 0xff]).unwrap();
    // 3: out of sync, the plugin starts a fresh host at once.
    assert_eq!(h.wait_exit(PATIENCE), Some(3));
    std::thread::sleep(std::time::Duration::from_millis(100));
    let log = h.log();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("out of sync")).collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert!(
        lines[0].starts_with(
            "ERROR the input from Neovim is out of sync (byte 0xc1 is no msgpack marker)"
        ),
        "{log}"
    );
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
