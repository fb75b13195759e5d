//! Keystroke-to-ghost-text latency in a real headless Neovim with the real
//! host, next to a ping round trip (no work) measured in the same run.
//!
//!     cargo bench --bench e2e [-- --chars N --gap-ms G --json out.json --no-ui]
//!
//! With a UI attached (the default) Neovim redraws after every key as it
//! would in a terminal; --no-ui leaves drawing out.
//!
//! Types N (default 2500) characters of prose (doc/laya.txt) one key at a
//! time; benches/e2e.lua measures each with vim.uv.hrtime and the host's
//! clock. Prints p50/p90/p99/max per stage and the ratio to the ping floor.

#[path = "../tests/common/mod.rs"]
mod common;

use common::Session;
use std::time::Duration;

struct Args {
    chars: usize,
    gap_ms: u64,
    json: Option<String>,
    no_ui: bool,
}

fn args() -> Args {
    let mut a = Args {
        chars: 2500,
        gap_ms: 5,
        json: None,
        no_ui: false,
    };
    let v: Vec<String> = std::env::args().skip(1).collect();
    let mut it = v.iter();
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--chars" => a.chars = it.next().and_then(|s| s.parse().ok()).expect("--chars N"),
            "--gap-ms" => a.gap_ms = it.next().and_then(|s| s.parse().ok()).expect("--gap-ms G"),
            "--json" => a.json = it.next().cloned(),
            "--no-ui" => a.no_ui = true,
            _ => {} // cargo bench passes --bench
        }
    }
    a
}

/// Keys for nvim_input: prose lines (leading space stripped: autoindent),
/// each ended by <CR>, until `n` characters.
fn keys(n: usize) -> Vec<String> {
    let doc = std::fs::read_to_string(std::path::Path::new(common::ROOT).join("doc/laya.txt"))
        .expect("doc/laya.txt");
    let mut keys = Vec::new();
    'outer: loop {
        for line in doc.lines().map(str::trim).filter(|l| !l.is_empty()) {
            for c in line.chars() {
                keys.push(if c == '<' {
                    "<lt>".to_string()
                } else {
                    c.to_string()
                });
                if keys.len() >= n {
                    break 'outer;
                }
            }
            keys.push("<CR>".to_string());
        }
    }
    keys
}

fn summary(v: &mut [f64]) -> (usize, f64, f64, f64, f64) {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    if v.is_empty() {
        return (0, 0.0, 0.0, 0.0, 0.0);
    }
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (v.len(), at(0.5), at(0.9), at(0.99), v[v.len() - 1])
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let a = args();
    let s = Session::start_with(
        "bench-e2e",
        common::Options {
            attach_ui: !a.no_ui,
            ..common::Options::default()
        },
    )
    .await;
    s.command("enew").await;
    s.command("setlocal noautoindent nosmartindent textwidth=0")
        .await;
    s.input("i").await;
    s.wait_for("the host", || async { s.host_pid().await.map(|_| ()) })
        .await;
    let keys = keys(a.chars);
    let keys_json = serde_json::to_string(&keys).unwrap();
    let driver = std::path::Path::new(common::ROOT).join("benches/e2e.lua");
    s.lua(&format!(
        "_G.laya_bench_result = nil
         local bench = dofile('{}')
         bench.run(vim.json.decode([==[{keys_json}]==]), {})",
        driver.display(),
        a.gap_ms
    ))
    .await;
    let result = loop {
        let r = s.lua("return _G.laya_bench_result").await;
        if !r.is_null() {
            break r;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let status = s.lua("return require('laya.host').request('status')").await;
    let engine = &status["engine"];
    let typed = s.lines().await.iter().map(|l| l.len() + 1).sum::<usize>();

    let samples = &result["samples"];
    let get = |k: &str| -> Vec<f64> {
        samples[k]
            .as_array()
            .map(|v| v.iter().filter_map(|x| x.as_f64()).collect())
            .unwrap_or_default()
    };
    println!(
        "Laya end to end: {} keys typed ({} bytes in the buffer), {} without an answer to measure",
        result["keys"], typed, result["skipped"]
    );
    println!(
        "host: backend {} ({}), model {}, dtype {}",
        engine["backend"], engine["device"], engine["model"], engine["dtype"]
    );
    println!();
    println!("| stage | n | p50 µs | p90 µs | p99 µs | max µs |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    let rows = [
        ("keystroke → ghost text set (e2e)", "e2e"),
        ("Lua send → ghost text set", "send_to_shown"),
        ("host: receive → decision done", "host"),
        ("  of which: receive → decision thread starts", "wake"),
        ("  of which: the engine's decision", "decide"),
        ("transport (send → back in Lua, minus host)", "transport"),
        (
            "  of which: Lua send → host receive (clock offset from ping)",
            "to_host",
        ),
        (
            "  of which: host done → back in Lua (clock offset from ping)",
            "from_host",
        ),
        ("ping round trip (no work, floor)", "ping"),
    ];
    let mut p50 = std::collections::HashMap::new();
    let mut json = serde_json::Map::new();
    for (label, key) in rows {
        let (n, a50, a90, a99, max) = summary(&mut get(key));
        p50.insert(key, a50);
        println!("| {label} | {n} | {a50:.0} | {a90:.0} | {a99:.0} | {max:.0} |");
        json.insert(
            key.to_string(),
            serde_json::json!({ "n": n, "p50_us": a50, "p90_us": a90, "p99_us": a99, "max_us": max }),
        );
    }
    println!();
    println!(
        "ratio e2e p50 / ping p50 = {:.2}",
        p50["e2e"] / p50["ping"].max(1.0)
    );
    if let Some(path) = a.json {
        json.insert("engine".into(), engine.clone());
        std::fs::write(&path, serde_json::to_string_pretty(&json).unwrap()).unwrap();
        println!("wrote {path}");
    }
    s.quit().await;
}
