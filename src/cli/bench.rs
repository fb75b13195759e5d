//! `laya bench [FILE]`: decision latency by kind of keystroke (inside a word,
//! at a word boundary, after a far edit), p50/p99 over thousands of keystrokes
//! typed from a real text, plus load + warm-up time, the backend's raw step
//! and output-layer times, and resident memory. Each configuration (backend,
//! dtype) runs in its own child process so memory and caches do not mix.

use super::percentiles::Latencies;
use super::EngineArgs;
use crate::engine::{Engine, Prediction, Request};
use crate::text::tokenizer::is_word_char;
use serde_json::{json, Value};
use std::process::Command;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Text to type [default: tests/data/heldout-prose.txt]
    pub file: Option<String>,
    /// Keystrokes typed per configuration
    #[arg(long, default_value_t = 5000)]
    pub keystrokes: usize,
    /// Most characters of text before the cursor per request
    #[arg(long, default_value_t = 2000)]
    pub window: usize,
    /// A configuration: BACKEND:DTYPE[@MODEL] or `none` (no model); repeatable
    /// [default: cpu in every dtype, and none]
    #[arg(long, value_name = "SPEC")]
    pub config: Vec<String>,
    /// Also time the answers to the next keys after each answer
    #[arg(long)]
    pub next_keys: bool,
    /// Run the engine as the host does: with its helper thread, which
    /// computes part of each output layer alongside the engine and, after
    /// each answer, steps ahead over the likely word (`Engine::think_ahead`).
    /// The next keystroke comes when the helper is done, as it does for
    /// anyone typing slower than a key every few milliseconds
    #[arg(long)]
    pub as_host: bool,
    /// Print per-keystroke costs of slow or re-reading keystrokes on stderr
    #[arg(long)]
    pub debug: bool,
    /// The user's earlier writing, learnt before timing as `laya protocol`
    /// learns protocol 2's `learn` (a line holding only a form feed
    /// separates documents): keystrokes then pay for the user's history
    #[arg(long, value_name = "FILE")]
    pub learn: Option<String>,
    /// Run one configuration in this process and print one JSON line
    #[arg(long, hide = true)]
    pub child: bool,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Every this many keystrokes the cursor jumps to an earlier place and back.
const FAR_EDIT_EVERY: usize = 250;

/// CPU time of the calling thread, microseconds.
pub(crate) fn thread_cpu_us() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e6 + ts.tv_nsec as f64 / 1e3
}

/// Resident set size now and at peak (kB), from /proc (Linux).
fn rss_kb() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// One configuration, in this process: prints one JSON line.
fn child(a: &BenchArgs, text: &str) -> i32 {
    let (keystrokes, window) = (a.keystrokes, a.window);
    let mut options = a.engine.options();
    options.think_ahead = a.as_host;
    let t0 = Instant::now();
    let mut engine = Engine::new(options.clone());
    let new_ms = t0.elapsed().as_secs_f64() * 1e3;
    if let Some(path) = &a.learn {
        match std::fs::read_to_string(path) {
            Ok(history) => super::eval::documents(&history)
                .into_iter()
                .for_each(|doc| super::protocol::learn(&mut engine, doc)),
            Err(e) => {
                log::error!("laya bench: {path}: {e}");
                return 1;
            }
        }
    }
    let info = engine.info();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let n = chars.len().min(keystrokes + 1);
    let byte_at = |i: usize| chars.get(i).map_or(text.len(), |c| c.0);
    let new = Latencies::new;
    let (mut inside, mut boundary, mut far) = (new(), new(), new());
    let mut steps = [0usize; 3];
    let mut rng = crate::model::testgen::Rng::new(7);
    let (mut inside_cpu, mut boundary_cpu, mut far_cpu) = (new(), new(), new());
    // --next-keys: after each answer, the answers to the next keys, as the
    // host works them out between keystrokes (timed on their own; their
    // effect on the next keystroke's decision is in its figures).
    let next_keys = a.next_keys;
    let (mut next, mut next_cpu, mut next_count) = (new(), new(), 0usize);
    // The host asks for 8 candidates (ghost + menu), whose next characters
    // are the keys it answers in advance; without --next-keys, 3 as always.
    let k = if next_keys { 8 } else { 3 };
    // Wall time, and this thread's CPU time (robust on a shared machine).
    let ask = |engine: &mut Engine, end: usize| -> (f64, f64, Prediction) {
        let before = &text[byte_at(end.saturating_sub(window))..byte_at(end)];
        let c = thread_cpu_us();
        let t = Instant::now();
        let p = engine.predict(&Request {
            buffer: 1,
            before,
            filetype: "",
            kind: Default::default(),
            k,
            // Every answer read, as by METRICS.md's user: words typed past
            // give way (the costlier path).
            seen_last: true,
            learn: true,
        });
        let us = t.elapsed().as_secs_f64() * 1e6;
        let cpu = thread_cpu_us() - c;
        if a.as_host {
            // Between keystrokes, untimed: the host's guesswork for the next one.
            engine.think_ahead(1);
            engine.wait_ahead();
        }
        (us, cpu, p)
    };
    for p in 1..n {
        if p % FAR_EDIT_EVERY == 0 && p > 1000 {
            let q = 200 + (rng.next_u64() as usize) % (p - 1000);
            for at in [q, p] {
                let (us, cpu, _) = ask(&mut engine, at);
                far.record_us(us);
                far_cpu.record_us(cpu);
                steps[2] += engine.last_cost().steps;
            }
            continue;
        }
        let (us, cpu, answer) = ask(&mut engine, p);
        if next_keys {
            let c = thread_cpu_us();
            let t = Instant::now();
            let keys = engine.next_keys(1, &answer, 8, 12, &|| false);
            next.record_us(t.elapsed().as_secs_f64() * 1e6);
            next_cpu.record_us(thread_cpu_us() - c);
            next_count += keys.len();
        }
        let kind = if is_word_char(chars[p - 1].1) { 0 } else { 1 };
        if a.debug && (engine.last_cost().reread || (kind == 0 && cpu > 150.0)) {
            let tail = &text[byte_at(p.saturating_sub(40))..byte_at(p)];
            log::info!(
                "p={p} kind={kind} us={us:.0} cost={:?} tail={tail:?}",
                engine.last_cost()
            );
        }
        steps[kind] += engine.last_cost().steps;
        if kind == 0 {
            inside.record_us(us);
            inside_cpu.record_us(cpu);
        } else {
            boundary.record_us(us);
            boundary_cpu.record_us(cpu);
        }
    }
    let (step_us, logits_us) = backend_times(&options);
    let (rss, hwm) = rss_kb();
    let n_of = |l: &Latencies| l.len().max(1) as usize;
    let (ni, nb, nf) = (n_of(&inside), n_of(&boundary), n_of(&far));
    let line = json!({
        "backend": info.backend, "dtype": info.dtype, "device": info.device,
        "model": info.model_path.map(|p| p.display().to_string()), "model_error": info.model_error.map(|e| e.to_string()),
        "words": info.words_path.map(|p| p.display().to_string()), "words_error": info.words_error.map(|e| e.to_string()),
        "load_ms": info.load_ms, "new_ms": new_ms,
        "inside": inside.json(), "boundary": boundary.json(), "far": far.json(),
        "inside_cpu": inside_cpu.json(), "boundary_cpu": boundary_cpu.json(), "far_cpu": far_cpu.json(),
        "steps_per_keystroke": [steps[0] as f64 / ni as f64, steps[1] as f64 / nb as f64, steps[2] as f64 / nf as f64],
        "step_us": step_us, "logits_us": logits_us,
        "rss_kb": rss, "peak_rss_kb": hwm,
        "next_keys": next_keys.then(|| json!({
            "wall": next.json(), "cpu": next_cpu.json(),
            "keys_per_answer": next_count as f64 / n_of(&next) as f64,
        })),
    });
    println!("{line}");
    0
}

/// The backend alone: median of one GRU step and of one full output layer.
fn backend_times(o: &crate::engine::EngineOptions) -> (Option<f64>, Option<f64>) {
    if !o.neural {
        return (None, None);
    }
    let Some(path) = o
        .model_path
        .clone()
        .or_else(crate::model::default_model_path)
    else {
        return (None, None);
    };
    let Ok(vocab) = crate::text::vocab::Vocab::load(&crate::model::vocab_path_for(&path)) else {
        return (None, None);
    };
    let Ok(mut b) = crate::model::load_backend(&path, &vocab, o.backend, o.dtype) else {
        return (None, None);
    };
    let mut h = vec![0.1f32; b.hidden_dim()];
    let mut out = h.clone();
    let mut logits = vec![0.0f32; b.vocab_size()];
    let (mut st, mut lt) = (Latencies::new(), Latencies::new());
    for i in 0..300u32 {
        let t = Instant::now();
        let _ = b.step(&h, 3 + i % 1000, &mut out);
        st.record_us(t.elapsed().as_secs_f64() * 1e6);
        std::mem::swap(&mut h, &mut out);
        let t = Instant::now();
        let _ = b.logits(&h, &mut logits);
        lt.record_us(t.elapsed().as_secs_f64() * 1e6);
    }
    (Some(st.us(50.0)), Some(lt.us(50.0)))
}

fn fmt(v: &Value) -> String {
    match v.as_f64() {
        Some(x) if x >= 100.0 => format!("{x:.0}"),
        Some(x) => format!("{x:.1}"),
        None => "-".into(),
    }
}

pub(crate) fn run(a: &BenchArgs) -> i32 {
    let path = a.file.clone().unwrap_or_else(|| {
        format!(
            "{}/tests/data/heldout-prose.txt",
            env!("CARGO_MANIFEST_DIR")
        )
    });
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t.replace("\u{c}\n", ""),
        Err(e) => {
            log::error!("laya bench: {path}: {e}");
            return 1;
        }
    };
    if a.child {
        return child(a, &text);
    }
    let mut configs = a.config.clone();
    if configs.is_empty() {
        configs = ["cpu:f32", "cpu:bf16", "cpu:int8", "none"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        if cfg!(feature = "mlx") {
            configs.extend(["mlx:f32".to_string(), "mlx:bf16".to_string()]);
        }
    }
    let exe = std::env::current_exe().unwrap_or_else(|_| "laya".into());
    // What every child gets: all but the configuration's own options.
    let mut shared = vec![
        path.clone(),
        "--keystrokes".into(),
        a.keystrokes.to_string(),
        "--window".into(),
        a.window.to_string(),
    ];
    shared.extend(a.engine.shared_args());
    if a.next_keys {
        shared.push("--next-keys".into());
    }
    if a.as_host {
        shared.push("--as-host".into());
    }
    if a.debug {
        shared.push("--debug".into());
    }
    if let Some(l) = &a.learn {
        shared.extend(["--learn".into(), l.clone()]);
    }
    println!(
        "text: {path} ({} chars); window {} chars; far edit every {FAR_EDIT_EVERY} keystrokes",
        text.chars().count(),
        a.window
    );
    println!("Latency: wall p50 / p99 µs, then [thread CPU p50 / p99 µs].");
    if a.as_host {
        println!("As the host runs it: a helper thread beside the engine (its CPU time is not in the brackets), thinking ahead between keystrokes.");
    }
    println!("| backend | dtype | load+warm ms | inside word | word boundary | far edit | steps per boundary / far edit | step µs | output layer µs | RSS MB (peak) |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for c in configs {
        let mut cmd = child_command(&exe, &shared, &c);
        cmd.stderr(std::process::Stdio::inherit());
        let out = match cmd.output() {
            Ok(o) => o,
            Err(e) => {
                log::error!("laya bench: cannot run {}: {e}", exe.display());
                return 1;
            }
        };
        let Ok(r) = serde_json::from_slice::<Value>(&out.stdout) else {
            log::error!("laya bench: {c} failed ({})", out.status);
            continue;
        };
        if let Some(e) = r["model_error"].as_str() {
            if c != "none" {
                log::warn!("laya bench: {c}: model not used: {e}");
            }
        }
        if let Some(e) = r["words_error"].as_str() {
            log::warn!("laya bench: {c}: word list not used: {e}");
        }
        print_row(&r);
        log::info!(
            "{c}: {} inside, {} boundary, {} far-edit keystrokes; device {}",
            r["inside"]["n"],
            r["boundary"]["n"],
            r["far"]["n"],
            r["device"].as_str().unwrap_or("")
        );
    }
    0
}

/// The child process measuring configuration `c` (backend:dtype[@model file],
/// or none): one process each, so load time and memory are its own.
fn child_command(exe: &std::path::Path, shared: &[String], c: &str) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg("bench").args(shared).arg("--child");
    // backend:dtype[@model file]
    let (spec, model) = match c.split_once('@') {
        Some((spec, path)) => (spec, Some(path)),
        None => (c, None),
    };
    match spec.split_once(':') {
        Some((b, d)) => {
            cmd.args(["--backend", b, "--dtype", d]);
        }
        None => {
            cmd.arg("--no-model");
        }
    }
    if let Some(path) = model {
        cmd.args(["--model", path]);
    }
    cmd
}

/// One configuration's row of the table (and its next-keys row).
fn print_row(r: &Value) {
    let spk = &r["steps_per_keystroke"];
    println!(
        "| {} | {} | {} | {} / {} [{} / {}] | {} / {} [{} / {}] | {} / {} [{} / {}] | {:.2} / {:.1} | {} | {} | {:.1} ({:.1}) |",
        r["backend"].as_str().unwrap_or("?"),
        r["dtype"].as_str().filter(|d| !d.is_empty()).unwrap_or("-"),
        fmt(&r["load_ms"]),
        fmt(&r["inside"]["p50"]),
        fmt(&r["inside"]["p99"]),
        fmt(&r["inside_cpu"]["p50"]),
        fmt(&r["inside_cpu"]["p99"]),
        fmt(&r["boundary"]["p50"]),
        fmt(&r["boundary"]["p99"]),
        fmt(&r["boundary_cpu"]["p50"]),
        fmt(&r["boundary_cpu"]["p99"]),
        fmt(&r["far"]["p50"]),
        fmt(&r["far"]["p99"]),
        fmt(&r["far_cpu"]["p50"]),
        fmt(&r["far_cpu"]["p99"]),
        spk[1].as_f64().unwrap_or(0.0),
        spk[2].as_f64().unwrap_or(0.0),
        fmt(&r["step_us"]),
        fmt(&r["logits_us"]),
        r["rss_kb"].as_f64().unwrap_or(0.0) / 1024.0,
        r["peak_rss_kb"].as_f64().unwrap_or(0.0) / 1024.0,
    );
    let nk = &r["next_keys"];
    if !nk.is_null() {
        println!(
            "|  | next keys after each answer: {} / {} [{} / {}], {:.1} keys answered |  |  |  |  |  |  |  |  |",
            fmt(&nk["wall"]["p50"]),
            fmt(&nk["wall"]["p99"]),
            fmt(&nk["cpu"]["p50"]),
            fmt(&nk["cpu"]["p99"]),
            nk["keys_per_answer"].as_f64().unwrap_or(0.0),
        );
    }
}
