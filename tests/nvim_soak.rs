//! A short soak (benches/soak/driver.lua, which benches/soak.py runs for
//! 100k keys): 2,000 keys of held-out prose and code and non-ASCII prose
//! typed as Insert-mode keys into a real headless Neovim with the real host,
//! with jumps, buffer switches, a 5 MB buffer, a large paste and an undo/redo.
//! Every key typed must be in the buffers at the end, with no error, no
//! panic and no host restart. No timing assertions.

mod common;
use common::{nvim_binary, temp_dir, HOST, PATIENCE, ROOT};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// Runs the driver with `env` in a fresh directory; returns its results and
/// the host's log.
fn soak(name: &str, env: &[(&str, &str)]) -> (Value, String) {
    let dir = temp_dir(name);
    let out = dir.join("soak.json");
    let mut cmd = Command::new(nvim_binary());
    cmd.arg("--headless")
        .arg("--clean")
        .arg("-u")
        .arg(Path::new(ROOT).join("scripts/minimal_init.lua"))
        .arg("-c")
        .arg(format!(
            "luafile {}",
            Path::new(ROOT).join("benches/soak/driver.lua").display()
        ))
        .current_dir(ROOT)
        .env("LAYA_HOST", HOST)
        .env("LAYA_LOG_LEVEL", "info")
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("SOAK_OUT", &out)
        .env_remove("LAYA_TEST_DELAY_MS")
        .env_remove("SOAK_LOSE_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("start nvim");
    // A hang guard, not a timing assertion.
    let started = Instant::now();
    while child.try_wait().expect("wait for nvim").is_none() {
        if started.elapsed() > PATIENCE * 10 {
            let _ = child.kill();
            panic!("the soak driver did not finish: it hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let output = child.wait_with_output().expect("nvim output");
    let text = std::fs::read_to_string(&out).unwrap_or_else(|e| {
        panic!(
            "no results {out:?} ({e}); nvim said: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let log = std::fs::read_to_string(dir.join("state/nvim/laya.log")).unwrap_or_default();
    (serde_json::from_str(&text).expect("results are JSON"), log)
}

fn n(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("`{key}` missing in the results"))
}

#[test]
fn soak_keeps_every_key_with_no_error() {
    let (r, log) = soak(
        "soak-smoke",
        &[
            ("SOAK_KEYS", "2000"),
            ("SOAK_RATE_MS", "5"),
            ("SOAK_BIG_MB", "5"),
            ("SOAK_PASTE_EVERY", "1000"),
            ("SOAK_PASTE_KB", "256"),
            ("SOAK_SAMPLE_EVERY", "500"),
        ],
    );
    assert!(r["aborted"].is_null(), "the soak stopped: {}", r["aborted"]);
    assert_eq!(n(&r, "typed"), 2000);
    assert_eq!(
        r["mismatches"].as_array().map(Vec::len),
        Some(0),
        "keys lost or text wrong: {}",
        r["mismatches"]
    );
    assert!(n(&r, "pastes") >= 1 && n(&r, "undos") >= 1 && n(&r, "redos") >= 1);
    assert!(n(&r, "jumps") >= 1 && n(&r, "switches") >= 1);
    assert!(n(&r, "big_lines") > 0, "no large buffer was loaded");
    let c = &r["status_end"]["counters"];
    assert_eq!(c["engine_panics"], 0, "engine panics: {c}");
    assert_eq!(c["bad_input"], 0, "bad input: {c}");
    assert_eq!(
        n(c, "predict_answered") + n(c, "predict_superseded"),
        n(c, "predict_received"),
        "requests left unanswered: {c}"
    );
    assert_eq!(r["lua_stats"]["starts"], 1, "the host restarted");
    assert_eq!(r["lua_stats"]["exits"], 0, "the host exited");
    let messages = r["messages"].as_str().unwrap_or("");
    assert!(messages.trim().is_empty(), "messages: {messages}");
    let bad: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(" ERROR ") || l.contains(" WARN ") || l.contains("panic"))
        .collect();
    assert!(bad.is_empty(), "log:\n{}", bad.join("\n"));
}

/// The check above can fail: a key counted but never typed is reported.
#[test]
fn soak_reports_a_lost_key() {
    let (r, _) = soak(
        "soak-lost",
        &[
            ("SOAK_KEYS", "300"),
            ("SOAK_RATE_MS", "5"),
            ("SOAK_BIG_MB", "0"),
            ("SOAK_PASTE_EVERY", "0"),
            ("SOAK_LOSE_KEY", "100"),
        ],
    );
    assert_eq!(n(&r, "typed"), 300);
    assert!(
        !r["mismatches"].as_array().unwrap().is_empty(),
        "a lost key went unnoticed"
    );
}
