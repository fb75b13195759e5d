//! Test harness: a real headless Neovim (`nvim --embed --headless --clean`)
//! with Laya on the runtimepath and the freshly built host, driven through
//! nvim-rs as a client, attached as a UI so tests can read the screen.
//!
//! Waiting is polling with a generous timeout; nothing asserts on time.

#![allow(dead_code)]

pub mod screen;

use nvim_rs::{compat::tokio::Compat, create::tokio as create, Handler, Neovim};
use rmpv::Value;
use screen::Grid;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::process::{Child, ChildStdin, Command};

pub type Nv = Neovim<Compat<ChildStdin>>;

pub const ROOT: &str = env!("CARGO_MANIFEST_DIR");
pub const HOST: &str = env!("CARGO_BIN_EXE_laya");
/// How long a wait may take before the test fails (the machine may be busy).
pub const PATIENCE: Duration = Duration::from_secs(30);

#[derive(Clone)]
struct ScreenHandler {
    grid: Arc<Mutex<Grid>>,
}

#[async_trait::async_trait]
impl Handler for ScreenHandler {
    type Writer = Compat<ChildStdin>;

    async fn handle_notify(&self, name: String, args: Vec<Value>, _nvim: Nv) {
        if name == "redraw" {
            self.grid.lock().unwrap().apply(&args);
        }
    }
}

/// Finds `nvim` on PATH (scripts/test.sh puts .venv/bin first).
pub fn nvim_binary() -> PathBuf {
    if let Ok(p) = std::env::var("LAYA_TEST_NVIM") {
        return PathBuf::from(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("nvim"))
        .find(|p| p.is_file())
        .expect("nvim (>= 0.10) not found on PATH: run scripts/test.sh (it installs one)")
}

/// A fresh private directory for one test (state/log files, scratch files),
/// under Cargo's scratch folder for integration tests (target/tmp), not the
/// system's /tmp: `cargo clean` takes whatever a failed test left behind.
pub fn temp_dir(name: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "laya-test-{}-{}-{n}",
        name,
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub struct Session {
    pub nvim: Nv,
    pub child: Child,
    pub grid: Arc<Mutex<Grid>>,
    pub dir: PathBuf,
}

pub struct Options {
    /// LAYA_TEST_DELAY_MS for the host.
    pub delay_ms: Option<u64>,
    /// Use scripts/minimal_init.lua (else only put Laya on the runtimepath).
    pub minimal_init: bool,
    pub width: i64,
    pub height: i64,
    /// Attach as a UI (screen tests); without it Neovim draws nothing.
    pub attach_ui: bool,
    /// More environment for Neovim (LAYA_HOST here replaces the host).
    pub env: Vec<(&'static str, String)>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            delay_ms: None,
            minimal_init: true,
            width: 160,
            height: 20,
            attach_ui: true,
            env: Vec::new(),
        }
    }
}

/// A session that ends without a failure takes its directory with it; a
/// failed test's stays for its log (`laya.log` under `state/nvim`).
impl Drop for Session {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = self.child.start_kill();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl Session {
    pub async fn start(name: &str) -> Session {
        Session::start_with(name, Options::default()).await
    }

    pub async fn start_with(name: &str, o: Options) -> Session {
        let dir = temp_dir(name);
        let mut cmd = Command::new(nvim_binary());
        cmd.arg("--embed").arg("--headless").arg("--clean");
        if o.minimal_init {
            cmd.arg("-u")
                .arg(Path::new(ROOT).join("scripts/minimal_init.lua"));
        } else {
            cmd.arg("--cmd").arg(format!("set rtp^={ROOT}"));
        }
        cmd.current_dir(&dir)
            .env("LAYA_HOST", HOST)
            .env("LAYA_LOG_LEVEL", "debug")
            .env("XDG_STATE_HOME", dir.join("state"))
            .env("XDG_DATA_HOME", dir.join("data"))
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .kill_on_drop(true);
        for (k, v) in &o.env {
            cmd.env(k, v);
        }
        match o.delay_ms {
            Some(ms) => cmd.env("LAYA_TEST_DELAY_MS", ms.to_string()),
            None => cmd.env_remove("LAYA_TEST_DELAY_MS"),
        };
        let grid = Arc::new(Mutex::new(Grid::default()));
        let handler = ScreenHandler { grid: grid.clone() };
        let (nvim, _io, child) = create::new_child_cmd(&mut cmd, handler)
            .await
            .expect("cannot start nvim");
        if o.attach_ui {
            let mut ui = nvim_rs::UiAttachOptions::new();
            ui.set_linegrid_external(true);
            nvim.ui_attach(o.width, o.height, &ui)
                .await
                .expect("nvim_ui_attach");
        }
        Session {
            nvim,
            child,
            grid,
            dir,
        }
    }

    /// Runs Lua in Neovim; the chunk returns a value encoded with vim.json.
    pub async fn lua(&self, code: &str) -> serde_json::Value {
        let wrapped = format!(
            "local r = (function() {code} end)(); return vim.json.encode(r == nil and vim.NIL or r)"
        );
        let call = self.nvim.exec_lua(&wrapped, vec![]);
        let v = match tokio::time::timeout(PATIENCE, call).await {
            Ok(r) => r.unwrap_or_else(|e| panic!("Lua failed: {e}\n{code}")),
            Err(_) => panic!(
                "Neovim did not answer within {PATIENCE:?} (blocked?)\n{code}\n--- screen ---\n{}",
                self.screen().text()
            ),
        };
        serde_json::from_str(v.as_str().unwrap_or("null")).unwrap()
    }

    /// What the Ex command `cmd` prints (`:messages`, `:Laya status`).
    pub async fn output(&self, cmd: &str) -> String {
        let v = self
            .lua(&format!(
                "return vim.api.nvim_exec2([==[{cmd}]==], {{ output = true }}).output"
            ))
            .await;
        v.as_str().unwrap().to_string()
    }

    /// Runs `:checkhealth laya` and returns the report once it is complete
    /// (its last section: the latency, no predictions yet, or no host).
    pub async fn health_report(&self) -> String {
        self.command("checkhealth laya").await;
        self.wait_for("the health report", || async {
            let t = self
                .lua("return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')")
                .await;
            let t = t.as_str().unwrap().to_string();
            (t.contains("recent latency")
                || t.contains("no predictions yet")
                || t.contains("host not running"))
            .then_some(t)
        })
        .await
    }

    pub async fn input(&self, keys: &str) {
        self.nvim.input(keys).await.expect("nvim_input");
    }

    pub async fn command(&self, cmd: &str) {
        self.nvim
            .command(cmd)
            .await
            .unwrap_or_else(|e| panic!("command `{cmd}` failed: {e}"));
    }

    /// Sets the current buffer's lines (an unnamed buffer: no swap prompts).
    pub async fn set_lines(&self, lines: &[&str]) {
        let v: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        let json = serde_json::to_string(&v).unwrap();
        self.lua(&format!(
            "vim.api.nvim_buf_set_lines(0, 0, -1, false, vim.json.decode([==[{json}]==]))"
        ))
        .await;
    }

    pub async fn lines(&self) -> Vec<String> {
        let v = self
            .lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)")
            .await;
        serde_json::from_value(v).unwrap()
    }

    /// Cursor as (row 1-based, col 0-based bytes).
    pub async fn cursor(&self) -> (i64, i64) {
        let v = self.lua("return vim.api.nvim_win_get_cursor(0)").await;
        (v[0].as_i64().unwrap(), v[1].as_i64().unwrap())
    }

    pub async fn mode(&self) -> String {
        self.lua("return vim.api.nvim_get_mode().mode")
            .await
            .as_str()
            .unwrap()
            .to_string()
    }

    /// The ghost extmark in the current buffer: (text, row0, col, hl_group).
    pub async fn ghost(&self) -> Option<(String, i64, i64, String)> {
        let v = self
            .lua(
                "local m = vim.api.nvim_buf_get_extmarks(0, require('laya.ghost').ns, 0, -1, { details = true })[1]
                 if not m then return nil end
                 local d = m[4]
                 return { d.virt_text[1][1], m[2], m[3], d.virt_text[1][2], d.virt_text_pos }",
            )
            .await;
        if v.is_null() {
            return None;
        }
        assert_eq!(v[4], "inline", "ghost text must be inline virtual text");
        Some((
            v[0].as_str()?.to_string(),
            v[1].as_i64()?,
            v[2].as_i64()?,
            v[3].as_str()?.to_string(),
        ))
    }

    pub async fn ghost_text(&self) -> Option<String> {
        self.ghost().await.map(|g| g.0)
    }

    /// Lua-side counters (laya.host.stats).
    pub async fn stats(&self) -> serde_json::Value {
        self.lua("return require('laya.host').stats").await
    }

    pub async fn host_pid(&self) -> Option<i64> {
        self.lua("return require('laya.host').pid").await.as_i64()
    }

    pub fn screen(&self) -> Grid {
        self.grid.lock().unwrap().clone()
    }

    /// Polls `check` until it returns Some, or fails the test after PATIENCE
    /// with `what`, the screen and the log.
    pub async fn wait_for<T, F, Fut>(&self, what: &str, mut check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        let start = Instant::now();
        loop {
            if let Some(v) = check().await {
                return v;
            }
            if start.elapsed() > PATIENCE {
                panic!(
                    "timed out waiting for {what}\n--- screen ---\n{}\n--- laya.log ---\n{}",
                    self.screen().text(),
                    self.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub async fn wait_ghost(&self, expected: &str) {
        self.wait_for(&format!("ghost text {expected:?}"), || async {
            (self.ghost_text().await.as_deref() == Some(expected)).then_some(())
        })
        .await
    }

    /// Waits until a screen row contains `text`; returns the row.
    pub async fn wait_screen(&self, text: &str) -> usize {
        self.wait_for(&format!("{text:?} on the screen"), || async {
            let g = self.screen();
            (0..g.height).find(|r| g.line(*r).contains(text))
        })
        .await
    }

    /// Waits for ghost text that starts with `start` (a trained model may
    /// continue it with further words); returns the whole ghost text.
    pub async fn wait_ghost_starting(&self, start: &str) -> String {
        self.wait_for(&format!("ghost text starting with {start:?}"), || async {
            self.ghost_text().await.filter(|g| g.starts_with(start))
        })
        .await
    }

    /// Waits until the host's engine is ready, every request Lua sent has
    /// arrived and been answered (or superseded), and Lua has received every
    /// answer; returns the host's counters.
    pub async fn wait_idle(&self) -> serde_json::Value {
        self.wait_for("an idle host", || async {
            let st = self
                .lua("return require('laya.host').request('status')")
                .await;
            let c = st["counters"].clone();
            let n = |k: &str| c[k].as_u64().unwrap_or(0);
            let lua = self.stats().await;
            let lua_n = |k: &str| lua[k].as_u64().unwrap_or(0);
            (st["engine"]["ready"] == true
                && lua_n("sent") == n("predict_received")
                && n("predict_answered") + n("predict_superseded") == n("predict_received")
                && lua_n("answers") == n("predict_answered"))
            .then_some(c)
        })
        .await
    }

    /// Waits until screen row `row` reads exactly `text`.
    pub async fn wait_screen_line(&self, row: usize, text: &str) {
        self.wait_for(&format!("screen row {row} to read {text:?}"), || async {
            (self.screen().line(row) == text).then_some(())
        })
        .await
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("state/nvim/laya.log")).unwrap_or_default()
    }

    /// Sends a signal to the host process (STOP/CONT/KILL).
    pub fn signal(pid: i64, sig: &str) {
        let signo = match sig {
            "STOP" => libc::SIGSTOP,
            "CONT" => libc::SIGCONT,
            "KILL" => libc::SIGKILL,
            other => panic!("unknown signal {other}"),
        };
        // SAFETY: kill(2) with a pid the test got from Neovim's jobpid().
        let rc = unsafe { libc::kill(pid as libc::pid_t, signo) };
        assert_eq!(rc, 0, "kill -{sig} {pid} failed");
    }

    /// Opens a fresh buffer holding `lines`, and enters insert mode on a new
    /// last line (so the buffer words are in the context before the cursor).
    pub async fn insert_after(&self, lines: &[&str]) {
        self.command("enew").await;
        self.insert_after_here(lines).await;
    }

    /// `insert_after` in the current buffer (its options, such as the
    /// filetype, set before).
    pub async fn insert_after_here(&self, lines: &[&str]) {
        self.set_lines(lines).await;
        self.input("Go").await;
        self.wait_for("insert mode", || async {
            (self.mode().await == "i").then_some(())
        })
        .await;
        // The host starts on InsertEnter; wait until it runs.
        self.wait_for("the host to start", || async {
            self.host_pid().await.map(|_| ())
        })
        .await;
    }

    pub async fn quit(mut self) {
        let _ = self.nvim.command("qa!").await;
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
    }
}
