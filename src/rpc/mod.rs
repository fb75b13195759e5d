//! The msgpack-RPC host that Neovim starts as a job (`laya serve`).
//!
//! Knows nothing of tensors: `reader` cuts stdin into whole messages
//! (`framing`, under a size cap) and decodes them (`envelope`), `handler`
//! checks the arguments (`params`) and enqueues (`inbox`), the decision
//! thread (`decide`) asks the engine and answers through `outbox` (stdout,
//! the only RPC channel). Logs go to stderr (`log`).

pub mod args;
pub mod decide;
pub mod envelope;
pub mod framing;
pub mod handler;
pub mod inbox;
pub mod log;
pub mod memory;
pub mod outbox;
pub mod params;
pub mod reader;
pub mod stats;

use crate::engine::EngineOptions;
use ::log::{error, info};
use args::ServeArgs;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The exit code when the input from Neovim went out of sync (garbage on
/// the channel): the plugin starts a fresh host at once.
pub const EXIT_OUT_OF_SYNC: i32 = 3;

/// Runs the host on stdin/stdout until Neovim closes the channel; returns the exit code.
pub fn serve(args: ServeArgs) -> i32 {
    if args.version {
        // Not in RPC mode: a plain `laya serve --version` for :checkhealth.
        println!("laya {}", env!("CARGO_PKG_VERSION"));
        return 0;
    }
    self::log::init(args.log_level);
    args.simd.apply();
    self::log::log_panics_without_text();
    stats::now_us(); // starts the host clock
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            error!("cannot start the async runtime: {e}");
            return 1;
        }
    };
    runtime.block_on(run(args))
}

/// Neovim's end of the channel. When stdin is a pipe (a Neovim job's is)
/// it is read from the runtime's own event loop; tokio's generic stdin would
/// read on a blocking-pool thread and wake the runtime for every message,
/// one more thread hand-off per keystroke.
fn stdin_reader() -> Box<dyn tokio::io::AsyncRead + Send + Unpin> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        if let Ok(fd) = std::io::stdin().as_fd().try_clone_to_owned() {
            match tokio::net::unix::pipe::Receiver::from_owned_fd(fd) {
                Ok(pipe) => return Box::new(pipe),
                Err(e) => info!("stdin is not a pipe ({e}); reading it on a helper thread"),
            }
        }
    }
    Box::new(tokio::io::stdin())
}

fn test_delay() -> Option<Duration> {
    let ms: u64 = std::env::var("LAYA_TEST_DELAY_MS").ok()?.parse().ok()?;
    Some(Duration::from_millis(ms))
}

async fn run(args: ServeArgs) -> i32 {
    let outbox = match outbox::Outbox::stdout() {
        Ok(o) => o,
        Err(e) => {
            error!("cannot open stdout: {e}");
            return 1;
        }
    };
    let inbox = Arc::new(inbox::Inbox::default());
    let stats = Arc::new(stats::Stats::default());
    let info = Arc::new(Mutex::new(None));
    let delay = test_delay();
    if let Some(d) = delay {
        info!("test delay: {} ms before each decision", d.as_millis());
    }
    let learn_status = Arc::new(Mutex::new(crate::learn::learning::LearnStatus::default()));
    let store = args
        .store
        .as_ref()
        .map(|d| crate::learn::store::Store::new(d, args.store_max_bytes()));
    let decider = decide::Decider {
        options: EngineOptions {
            model_path: args.model.clone(),
            backend: args.backend.into(),
            tuning: args.tuning(),
            // Between keystrokes, a lowest-priority thread computes the model's
            // distribution after the ghost's word.
            think_ahead: !args.no_think_ahead,
            threshold: args.threshold,
            code_threshold: args.code_threshold,
            model_threads: args.model_threads as usize,
            ..EngineOptions::default()
        },
        inbox: inbox.clone(),
        outbox: outbox.clone(),
        stats: stats.clone(),
        info: info.clone(),
        test_delay: delay,
        test_panic: std::env::var("LAYA_TEST_PANIC")
            .ok()
            .filter(|s| !s.is_empty()),
        next_keys: !args.no_next_keys,
        learning: crate::learn::learning::Learning::new(store, learn_status.clone()),
    };
    let decision_thread = match decider.spawn() {
        Ok(h) => h,
        Err(e) => {
            error!("cannot start the decision thread: {e}");
            return 1;
        }
    };
    let host = handler::Host {
        inbox: inbox.clone(),
        stats,
        info,
        backend_asked: args.backend.as_str().to_string(),
        outbox: outbox.clone(),
        learn: learn_status,
        bad_input_log: Default::default(),
        max_message_bytes: args.max_message_bytes(),
        told_oversized: Default::default(),
    };
    info!(
        "laya {} serving (pid {})",
        env!("CARGO_PKG_VERSION"),
        std::process::id()
    );
    let read = reader::read_messages(
        stdin_reader(),
        &host,
        host.max_message_bytes,
        std::time::Duration::from_millis(args.incomplete_message_ms),
    );
    // Neovim's jobstop sends SIGTERM: end as when the channel closes, so
    // what was learnt since the last save is saved first.
    let terminated = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => term.recv().await,
            Err(_) => std::future::pending().await,
        }
    };
    let code = tokio::select! {
        end = read => match end {
            // Neovim closed the channel (exit or jobstop): a normal end.
            reader::End::Closed => {
                info!("channel closed, exiting");
                0
            }
            reader::End::OutOfSync(why) => {
                error!("the input from Neovim is out of sync ({why}): exiting with code {EXIT_OUT_OF_SYNC} so that the editor starts a fresh host");
                EXIT_OUT_OF_SYNC
            }
            reader::End::Failed(e) => {
                error!("RPC channel failed: {e}");
                1
            }
        },
        _ = terminated => {
            info!("terminated, exiting");
            0
        }
    };
    inbox.close();
    // The decision thread saves what was learnt since the last save.
    let _ = decision_thread.join();
    code
}
