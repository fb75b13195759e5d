//! The MLX backend's startup self-check through a real host on the real MLX
//! library and the default model: a backend that computes right passes it
//! and runs the model; one that computes wrong (LAYA_TEST_MLX_SKEW skews the
//! logits MLX hands back) is caught at load: the host says so once (one
//! ERROR line; `status`, hence `:Laya status` and `:checkhealth laya`, shows
//! why), and the cpu backend answers, exactly as a cpu host does.
#![cfg(feature = "mlx")]

mod common;
#[path = "support/raw_host.rs"]
mod raw_host;

use common::{Options, Session};
use raw_host::{get, predict, Host, PATIENCE};
use rmpv::Value;
use std::path::Path;
use std::time::Instant;

fn model() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("models/laya-default.safetensors")
        .display()
        .to_string()
}

/// A host on the default model with `backend`, and its engine's status once
/// it has loaded.
fn host(backend: &str, env: &[(&str, &str)]) -> (Host, Value) {
    let model = model();
    let mut h = Host::start_env(None, &["--model", &model, "--backend", backend], env);
    let t0 = Instant::now();
    loop {
        let st = h.request("status", vec![]).expect("status");
        let engine = get(&st, "engine");
        if get(&engine, "ready").as_bool() == Some(true) {
            return (h, engine);
        }
        assert!(t0.elapsed() < PATIENCE, "the engine did not load");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

const CONTEXTS: &[&str] = &[
    "The meeting was moved to the next ",
    "fn main() {\n    let mut ",
    "She opened the door and saw the gar",
    "Le caf\u{e9} est ",
];

/// The candidates' words of each context's answer.
fn answers(h: &mut Host) -> Vec<Vec<String>> {
    CONTEXTS
        .iter()
        .enumerate()
        .map(|(i, text)| {
            h.notify("predict", predict(i as u64 + 1, 1, (*text).into()));
            let a = h.answer();
            get(&a, "items")
                .as_array()
                .expect("items")
                .iter()
                .map(|c| get(c, "word").as_str().unwrap_or("").to_string())
                .collect()
        })
        .collect()
}

fn error_lines(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.starts_with("ERROR")).collect()
}

#[test]
fn mlx_passes_its_self_check_and_runs_the_model() {
    let (mut h, engine) = host("mlx", &[]);
    assert_eq!(get(&engine, "backend").as_str(), Some("mlx"), "{engine}");
    assert!(get(&engine, "backend_error").is_nil(), "{engine}");
    assert!(get(&engine, "model_error").is_nil(), "{engine}");
    let got = answers(&mut h);
    assert!(got.iter().all(|c| !c.is_empty()), "{got:?}");
    let log = h.log();
    assert!(log.contains("mlx self-check passed: 7 steps"), "{log}");
    assert!(error_lines(&log).is_empty(), "{log}");
}

#[test]
fn a_wrong_mlx_result_is_caught_and_the_cpu_backend_answers() {
    let (mut cpu, _) = host("cpu", &[]);
    let want = answers(&mut cpu);
    // 0.01 on logits of up to ~30: small enough to leave most rankings as
    // they were, which a check of the top word alone could miss.
    let (mut h, engine) = host("mlx", &[("LAYA_TEST_MLX_SKEW", "0.01")]);
    assert_eq!(get(&engine, "backend").as_str(), Some("cpu"), "{engine}");
    let why = get(&engine, "backend_error");
    let why = why.as_str().unwrap_or_default();
    assert!(
        why.contains("the mlx backend's self-check failed: the logits differ at step 1 of 7")
            && why.contains("so the cpu backend runs the model instead"),
        "{engine}"
    );
    assert_eq!(
        get(&engine, "backend_error_kind").as_str(),
        Some("backend_fallback")
    );
    assert!(get(&engine, "backend_error_advice").as_str().is_some());
    assert!(get(&engine, "model_error").is_nil(), "{engine}");
    assert_eq!(answers(&mut h), want, "the fallback answers as a cpu host");
    let log = h.log();
    let said: Vec<&str> = log.lines().filter(|l| l.contains("self-check")).collect();
    assert_eq!(said.len(), 1, "{log}");
    assert!(
        said[0].starts_with("ERROR the mlx backend's self-check failed"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn laya_status_and_checkhealth_say_why_the_cpu_backend_runs() {
    let s = Session::start_with(
        "mlx-selfcheck",
        Options {
            env: vec![("LAYA_TEST_MLX_SKEW", "0.01".into())],
            ..Options::default()
        },
    )
    .await;
    s.lua(&format!(
        "require('laya').setup({{ host = {{ path = vim.env.LAYA_HOST, model = [[{}]], backend = 'mlx' }}, log_level = 'debug' }})",
        model()
    ))
    .await;
    s.insert_after(&["The meeting was moved to the next day."])
        .await;
    s.input("The meeting was moved to the ne").await;
    s.wait_ghost_starting("xt").await;
    let out = s.output("Laya status").await;
    assert!(out.contains("Engine: backend cpu (cpu"), "{out}");
    assert!(
        out.contains("Backend error: the mlx backend's self-check failed: the logits differ"),
        "{out}"
    );
    let health = s
        .lua("vim.cmd('checkhealth laya') return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')")
        .await;
    let health = health.as_str().unwrap();
    assert!(
        health.contains("backend not used: the mlx backend's self-check failed"),
        "{health}"
    );
    assert!(
        health.contains("build Laya against the MLX installed"),
        "{health}"
    );
    s.command("tabclose").await;
    s.quit().await;
}
