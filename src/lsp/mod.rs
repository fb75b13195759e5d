//! `laya lsp`: a Language Server on stdin/stdout from the same engine and
//! model as the Neovim host, for any editor with an LSP client.
//!
//! Path of a keystroke: the client's didChange (`documents`) and its
//! completion / inlineCompletion request → `server` (on the engine's
//! thread) → `answer` (engine request from the text around the cursor, its
//! prediction as LSP items) → `transport` (stdout, the only channel; logs
//! go to stderr). A reader thread frames stdin (`transport`), forgiving of
//! malformed input. `serve_bytes` runs the same server in process, on bytes
//! as a client would write them (tests and fuzzing).

mod answer;
mod documents;
mod options;
mod privacy;
pub mod server;
pub mod transport;

use crate::cli::options::tuning_value;
use crate::cli::{Backend, SimdArg};
use crate::engine::{Engine, EngineOptions, Tuning};
use crate::learn::store::default_dir;
use crate::rpc::log::{self as host_log, Level};
use clap::Args;
use log::{error, info, warn};
use std::io::BufReader;
use std::path::PathBuf;
use std::sync::mpsc;
use transport::Frame;

#[derive(Args, Debug, Clone, PartialEq)]
pub struct LspArgs {
    /// Weights file; its vocabulary is STEM.vocab.txt beside it [default: the shipped model]
    #[arg(long, value_name = "PATH")]
    pub model: Option<PathBuf>,
    /// Where the model runs
    #[arg(long, value_enum, default_value_t)]
    pub backend: Backend,
    /// Least severe messages written to stderr (editors show a server's
    /// stderr in their logs, some as errors)
    #[arg(long, value_name = "error|warn|info|debug", default_value = "warn", value_parser = level)]
    pub log_level: Level,
    /// Ranking constants (see engine::Tuning); repeatable
    #[arg(long, value_name = "KEY=VALUE,...", value_parser = tuning_value)]
    pub tune: Vec<String>,
    /// Widest SIMD instruction set of the CPU kernels
    #[arg(long, value_enum, default_value_t)]
    pub simd: SimdArg,
}

fn level(s: &str) -> Result<Level, String> {
    Level::parse(s).ok_or_else(|| "expected error, warn, info or debug".to_string())
}

/// Runs the server until `exit` or the end of stdin; returns the exit code.
pub fn serve(args: LspArgs) -> i32 {
    host_log::init(args.log_level);
    args.simd.apply();
    host_log::log_panics_without_text();
    let (tx, rx) = mpsc::channel();
    // Reading starts at once, so that nothing the client sends while the
    // model loads waits in the pipe.
    let input = tx.clone();
    let reader = std::thread::Builder::new()
        .name("laya-lsp-read".into())
        .spawn(move || {
            let mut frames = transport::Reader::new(BufReader::new(std::io::stdin().lock()));
            loop {
                match frames.next_frame() {
                    Ok(Some(f)) => {
                        if input.send(f).is_err() {
                            return;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        error!("cannot read stdin: {e}");
                        break;
                    }
                }
            }
            let _ = input.send(Frame::Closed);
        });
    if let Err(e) = reader {
        error!("cannot start the reader thread: {e}");
        return 1;
    }
    on_sigterm(tx);
    let engine = Engine::new(EngineOptions {
        model_path: args.model.clone(),
        backend: args.backend.into(),
        tuning: tuning(&args.tune),
        ..EngineOptions::default()
    });
    let engine_info = engine.info();
    if let Some(e) = &engine_info.model_error {
        warn!("model not loaded, using word sources only: {e}");
    }
    info!(
        "laya {} language server: backend {}, model {:?}",
        env!("CARGO_PKG_VERSION"),
        engine_info.backend,
        engine_info.model_path
    );
    server::Server::new(engine, rx, stdout(), default_dir()).run()
}

/// stdout, where each message goes in one write(2): Rust's stdout is
/// line-buffered and would write a message's header and body apart (two
/// system calls, two wake-ups of the client).
fn stdout() -> Box<dyn std::io::Write> {
    use std::os::fd::AsFd;
    match std::io::stdout().as_fd().try_clone_to_owned() {
        Ok(fd) => Box::new(std::fs::File::from(fd)),
        Err(e) => {
            warn!("cannot write stdout directly ({e}); writing it through Rust's buffer");
            Box::new(std::io::stdout().lock())
        }
    }
}

/// A SIGTERM (an editor stopping its servers) ends serving as the end of
/// input does, so that what was learnt is saved first.
fn on_sigterm(tx: mpsc::Sender<Frame>) {
    let spawned = std::thread::Builder::new()
        .name("laya-lsp-signal".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .build();
            let Ok(runtime) = runtime else {
                return;
            };
            runtime.block_on(async {
                use tokio::signal::unix::{signal, SignalKind};
                if let Ok(mut term) = signal(SignalKind::terminate()) {
                    term.recv().await;
                    info!("terminated, exiting");
                    let _ = tx.send(Frame::Closed);
                }
            });
        });
    if let Err(e) = spawned {
        warn!("cannot watch for SIGTERM: {e}");
    }
}

/// Serves the bytes `input` (messages as a client writes them) in this
/// process, as `laya lsp` serves stdin, answering into `out`; the personal
/// store is `default_store` unless the client names another. With `batch`
/// every message is already waiting when serving starts (as when a client
/// writes faster than the server answers; a request a newer one of its
/// kind follows is answered empty), else each is served before the next is
/// read. Returns the exit code (as at the end of input when there is no
/// `exit`) and the engine.
pub fn serve_bytes(
    engine: Engine,
    input: &[u8],
    out: &mut Vec<u8>,
    default_store: Option<std::path::PathBuf>,
    batch: bool,
) -> (i32, Engine) {
    let (tx, rx) = mpsc::channel();
    let mut server = server::Server::new(engine, rx, out, default_store);
    let mut frames = transport::Reader::new(input);
    let mut code = None;
    while let Ok(Some(f)) = frames.next_frame() {
        if batch {
            let _ = tx.send(f);
        } else if let Some(c) = server.handle(f) {
            code = Some(c);
            break;
        }
    }
    drop(tx);
    let code = match code {
        Some(c) => {
            server.finish_learning();
            c
        }
        None => server.run(),
    };
    (code, server.into_engine())
}

/// The ranking constants, `--tune` applied in order (checked when parsed).
fn tuning(specs: &[String]) -> Tuning {
    let mut t = Tuning::default();
    for spec in specs {
        let _ = t.set(spec);
    }
    t
}
