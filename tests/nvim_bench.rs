//! :LayaBench in a real Neovim with the real host: headless
//! (`nvim --headless -c "LayaBench out.json" -c "qa!"`) it has written a
//! complete, well-formed results file by the time Neovim exits; with a UI it
//! opens the floating report. No timing thresholds: only structure and
//! consistency (p50 <= p90 <= p99 <= max, counts that add up).

mod common;
use common::{nvim_binary, temp_dir, Session, HOST, PATIENCE, ROOT};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Instant;

/// Runs `nvim --headless -c "LayaBench <args>" -c "qa!"` in `dir`.
fn headless_bench(dir: &Path, args: &str, file: Option<&Path>) -> Output {
    let mut cmd = Command::new(nvim_binary());
    cmd.arg("--headless")
        .arg("--clean")
        .arg("-u")
        .arg(Path::new(ROOT).join("scripts/minimal_init.lua"));
    if let Some(f) = file {
        cmd.arg(f);
    }
    cmd.arg("-c")
        .arg(format!("LayaBench {args}"))
        .arg("-c")
        .arg("qa!")
        .current_dir(dir)
        .env("LAYA_HOST", HOST)
        .env("LAYA_LOG_LEVEL", "info")
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env_remove("LAYA_TEST_DELAY_MS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start nvim");
    // A hang guard, not a timing assertion.
    let started = Instant::now();
    loop {
        if child.try_wait().expect("wait for nvim").is_some() {
            break;
        }
        if started.elapsed() > PATIENCE * 4 {
            let _ = child.kill();
            panic!("nvim did not exit: the benchmark hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().expect("nvim output")
}

fn read_results(path: &PathBuf, out: &Output) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "no results file {path:?} ({e}); nvim said: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("results are not JSON ({e}): {text}"))
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("`{key}` is not a number in {v}"))
}

/// n > 0 and min <= p50 <= p90 <= p99 <= max, all finite and >= 0.
fn assert_summary(name: &str, s: &Value) {
    assert!(num(s, "n") > 0.0, "{name}: no samples: {s}");
    let q: Vec<f64> = ["min_us", "p50_us", "p90_us", "p99_us", "max_us"]
        .iter()
        .map(|k| num(s, k))
        .collect();
    assert!(
        q.windows(2).all(|w| w[0] <= w[1]),
        "{name}: percentiles out of order: {s}"
    );
    assert!(q.iter().all(|x| x.is_finite() && *x >= 0.0), "{name}: {s}");
}

#[test]
fn headless_layabench_writes_a_complete_results_file() {
    let dir = temp_dir("bench-headless");
    let path = dir.join("out.json");
    let out = headless_bench(&dir, "out.json keys=150 warmup=5 rate=5", None);
    assert!(out.status.success(), "nvim exited with {:?}", out.status);
    let r = read_results(&path, &out);

    assert_summary("e2e", &r["e2e"]);
    assert_summary("ping", &r["ping"]);
    assert_summary("rpc_roundtrip", &r["rpc_roundtrip"]);
    assert_summary("host_total", &r["host_total"]);
    let order = r["stage_order"].as_array().expect("stage_order");
    assert_eq!(order.len(), 6, "{order:?}");
    for stage in order {
        let name = stage.as_str().unwrap();
        let s = &r["stages"][name];
        if name == "send_to_host" || name == "host_to_lua" {
            // These need the host clock on Lua's clock (Linux: exact).
            if cfg!(target_os = "linux") {
                assert_summary(name, s);
            }
        } else {
            assert_summary(name, s);
        }
    }

    // Decisions split by the kind of key add up to all decisions.
    let by_key = &r["decision_by_key"];
    assert_eq!(
        num(&by_key["word_char"], "n") + num(&by_key["boundary"], "n"),
        num(&r["stages"]["decision"], "n")
    );
    assert_summary("decisions at word ends", &by_key["boundary"]);

    // Every measured key was typed and counted once.
    assert_eq!(num(&r, "keys_measured"), 150.0);
    assert_eq!(num(&r, "keys_typed"), 155.0);
    assert_eq!(
        num(&r, "answered") + num(&r, "missed"),
        num(&r, "keys_measured")
    );
    assert_eq!(num(&r, "answered"), num(&r["e2e"], "n"));
    assert!(r["aborted"].is_null(), "aborted: {}", r["aborted"]);
    // The host really received the keystrokes.
    assert!(num(&r["host_counters"], "predict_received") >= 150.0);
    // The histogram holds every e2e sample.
    let hist_total: f64 = r["histogram"]
        .as_array()
        .expect("histogram")
        .iter()
        .map(|b| num(b, "count"))
        .sum();
    assert_eq!(hist_total, num(&r["e2e"], "n"));
    // The ghost text on screen: one sample per answered key that showed
    // ghost text, some of them there at once (answered in advance by the
    // host), none of them later than that key's answer.
    let screen = &r["ghost_screen"];
    assert_summary("ghost_ready", &r["ghost_ready"]);
    assert_eq!(num(&r["ghost_ready"], "n"), num(screen, "ghost_keys"));
    assert_eq!(num(&r["e2e_ghost"], "n"), num(screen, "ghost_keys"));
    assert!(num(screen, "ready_at_once") > 0.0, "{screen}");
    assert_eq!(num(&r["ghost_at_once"], "n"), num(screen, "ready_at_once"));
    assert!(num(&r["ghost_ready"], "max_us") <= num(&r["e2e_ghost"], "max_us"));
    assert!(num(&r["host_counters"], "next_keys_sent") > 0.0);
    // What ran, and where.
    for key in ["backend", "device", "quantization", "date", "nvim_version"] {
        assert!(r[key].is_string(), "`{key}` missing: {r}");
    }
    assert!(r.get("model").is_some(), "`model` missing (null is fine)");
    assert!(num(&r["machine"], "nproc") >= 1.0);
    assert!(num(&r["ratio_e2e_to_ping"], "p50") > 0.0);
    // The like-for-like floor: echoes went the keystroke's way and came back.
    assert_summary("echo", &r["echo"]);
    assert!(num(&r["echo"], "n") <= num(&r, "echo_sent"));
    assert!(
        num(&r, "echo_sent") >= 50.0,
        "an echo every other key slot: {}",
        r["echo_sent"]
    );
    assert!(num(&r["host_counters"], "echo_received") >= num(&r["echo"], "n"));
    assert!(num(&r["host_counters"], "echo_answered") >= num(&r["echo"], "n"));
    assert_summary("echo host_queue", &r["echo_stages"]["host_queue"]);
    if cfg!(target_os = "linux") {
        assert_summary("echo send_to_host", &r["echo_stages"]["send_to_host"]);
        assert_summary("echo host_to_lua", &r["echo_stages"]["host_to_lua"]);
    }
    assert!(num(&r["ratio_e2e_to_echo"], "p50") > 0.0);
    assert!(num(&r["rss_kb"], "nvim") > 0.0);
    assert!(num(&r, "keystrokes_per_s") > 0.0);
    assert!(num(&r, "capacity_keys_per_s") > 0.0);
}

#[test]
fn layabench_can_type_the_current_buffer() {
    let dir = temp_dir("bench-buffer");
    let text = dir.join("notes.txt");
    std::fs::write(&text, "alpha beta gamma\ndelta alpha beta\n").unwrap();
    let path = dir.join("buf.json");
    let out = headless_bench(
        &dir,
        "buf.json text=buffer keys=60 warmup=0 rate=5",
        Some(&text),
    );
    assert!(out.status.success());
    let r = read_results(&path, &out);
    assert_eq!(r["text"], "buffer");
    assert_eq!(num(&r, "keys_typed"), 60.0);
    assert_summary("e2e", &r["e2e"]);
    assert_summary("ping", &r["ping"]);
    // The file itself was not touched.
    assert_eq!(
        std::fs::read_to_string(&text).unwrap(),
        "alpha beta gamma\ndelta alpha beta\n"
    );
}

#[test]
fn bad_arguments_are_a_clear_error_and_write_nothing() {
    let dir = temp_dir("bench-bad-args");
    let out = headless_bench(&dir, "bad.json rate=fast", None);
    assert!(!dir.join("bad.json").exists());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("LayaBench: `rate` needs a whole number, got `fast`"),
        "stderr: {said}"
    );
}

#[test]
fn layabench_says_so_when_laya_is_off_for_its_buffer() {
    let dir = temp_dir("bench-off");
    // Laya off for every filetype not listed: the scratch buffer gets nothing.
    let setup = format!(
        "lua require('laya').setup({{ host = {{ path = '{HOST}' }}, filetypes = {{ ['*'] = false }} }})"
    );
    let out = Command::new(nvim_binary())
        .args(["--headless", "--clean", "-u"])
        .arg(Path::new(ROOT).join("scripts/minimal_init.lua"))
        .args([
            "-c",
            &setup,
            "-c",
            "LayaBench off.json keys=20",
            "-c",
            "qa!",
        ])
        .current_dir(&dir)
        .env("XDG_STATE_HOME", dir.join("state"))
        .stdin(Stdio::null())
        .output()
        .expect("run nvim");
    assert!(!dir.join("off.json").exists());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("Laya is off for a scratch buffer"),
        "stderr: {said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interactive_layabench_opens_the_floating_report() {
    let s = Session::start_with(
        "bench-float",
        common::Options {
            width: 120,
            height: 40,
            ..Default::default()
        },
    )
    .await;
    // Typed like a user (not through an RPC request, which the replay's
    // Insert mode would otherwise be nested in).
    s.input(":LayaBench keys=40 warmup=2 rate=5<CR>").await;
    s.wait_screen("keystroke → host's answer shown:").await;
    s.wait_screen("ping floor").await;
    let float = s
        .lua(
            "for _, w in ipairs(vim.api.nvim_list_wins()) do \
               if vim.api.nvim_win_get_config(w).relative ~= '' then \
                 return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 0, -1, false) \
               end \
             end return vim.NIL",
        )
        .await;
    let lines: Vec<String> = serde_json::from_value(float.clone())
        .unwrap_or_else(|_| panic!("no floating window: {float}"));
    let all = lines.join("\n");
    for part in [
        "backend",
        "p50",
        "p99",
        "decision",
        "RSS",
        "keys/s",
        "echo floor",
        "keystroke → ghost text on screen",
        "ghost text / ping",
        "answer / echo",
        "replaced by the answer",
    ] {
        assert!(all.contains(part), "report lacks `{part}`:\n{all}");
    }
    assert!(
        all.contains('█') || all.contains('▏'),
        "no histogram bars:\n{all}"
    );
    // The scratch buffer and its tab page are gone, the user is back where
    // they were.
    assert_eq!(s.mode().await, "n");
    assert_eq!(s.lua("return #vim.api.nvim_list_tabpages()").await, 1);
    assert_eq!(
        s.lua("return #vim.tbl_filter(function(b) return vim.api.nvim_buf_get_name(b):find('laya%-bench://') ~= nil end, vim.api.nvim_list_bufs())").await,
        0
    );
    s.input("q").await;
    s.wait_for("the report to close", || async {
        let n = s
            .lua("return #vim.tbl_filter(function(w) return vim.api.nvim_win_get_config(w).relative ~= '' end, vim.api.nvim_list_wins())")
            .await;
        (n == 0).then_some(())
    })
    .await;
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layabench_shows_progress_and_esc_cancels_it() {
    let s = Session::start_with(
        "bench-cancel",
        common::Options {
            width: 120,
            height: 30,
            ..Default::default()
        },
    )
    .await;
    s.input(":LayaBench keys=5000 rate=20<CR>").await;
    s.wait_screen("keys typed").await;
    s.wait_for("progress past 50 keys", || async {
        let g = s.screen();
        (0..g.height)
            .map(|r| g.line(r))
            .find(|l| l.contains("LayaBench: ") && !l.contains("LayaBench: 0 of"))
    })
    .await;
    s.input("<Esc>").await;
    s.wait_screen("LayaBench: cancelled after").await;
    // No report, and the user is back where they were.
    let floats = s
        .lua("return #vim.tbl_filter(function(w) return vim.api.nvim_win_get_config(w).relative ~= '' end, vim.api.nvim_list_wins())")
        .await;
    assert_eq!(floats, 0);
    assert_eq!(s.lua("return #vim.api.nvim_list_tabpages()").await, 1);
    assert_eq!(s.mode().await, "n");
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_layabench_report_leaves_the_status_line_free() {
    // A screen too short for the whole report.
    let s = Session::start_with(
        "bench-float-short",
        common::Options {
            width: 120,
            height: 16,
            ..Default::default()
        },
    )
    .await;
    s.input(":LayaBench keys=30 warmup=2 rate=5<CR>").await;
    s.wait_screen("LayaBench").await;
    let bottom = s
        .wait_for("the report", || async {
            let v = s
                .lua(
                    "for _, w in ipairs(vim.api.nvim_list_wins()) do \
                       local c = vim.api.nvim_win_get_config(w) \
                       if c.relative ~= '' then \
                         local pos = vim.api.nvim_win_get_position(w) \
                         return pos[1] + vim.api.nvim_win_get_height(w) + 2 \
                       end \
                     end return vim.NIL",
                )
                .await;
            v.as_i64()
        })
        .await;
    // Rows 0..bottom hold the float with its border; the status line is the
    // row above the command line.
    let status_row = s
        .lua("return vim.o.lines - vim.o.cmdheight - 1")
        .await
        .as_i64()
        .unwrap();
    assert!(
        bottom <= status_row,
        "the float reaches row {bottom}, the status line is row {status_row}\n{}",
        s.screen().text()
    );
    s.quit().await;
}
