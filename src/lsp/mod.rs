//! `laya lsp`: a Language Server on stdin/stdout from the same engine and
//! model as the Neovim host, for any editor with an LSP client.
//!
//! Path of a keystroke: the client's didChange (`documents`) and its
//! completion / inlineCompletion request → `server` (on the engine's
//! thread) → `answer` (engine request from the text around the cursor, its
//! prediction as LSP items) → `transport` (stdout, the only channel; logs
//! go to stderr). A reader thread frames stdin (`transport`), forgiving of
//! malformed input.

mod answer;
mod documents;
mod privacy;
mod server;
mod transport;

use crate::cli::options::tuning_value;
use crate::cli::{Backend, SimdArg};
use crate::engine::{Engine, EngineOptions, Tuning};
use crate::rpc::log::{self as host_log, Level};
use clap::Args;
use log::{error, info, warn};
use std::io::BufReader;
use std::path::PathBuf;
use std::sync::mpsc;

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
    let (tx, rx) = mpsc::channel();
    // Reading starts at once, so that nothing the client sends while the
    // model loads waits in the pipe.
    let reader = std::thread::Builder::new()
        .name("laya-lsp-read".into())
        .spawn(move || {
            let mut frames = transport::Reader::new(BufReader::new(std::io::stdin().lock()));
            loop {
                match frames.next_frame() {
                    Ok(Some(f)) => {
                        if tx.send(f).is_err() {
                            return;
                        }
                    }
                    Ok(None) => return,
                    Err(e) => {
                        error!("cannot read stdin: {e}");
                        return;
                    }
                }
            }
        });
    if let Err(e) = reader {
        error!("cannot start the reader thread: {e}");
        return 1;
    }
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
    let out = std::io::stdout().lock();
    server::Server::new(engine, rx, out).run()
}

/// The ranking constants, `--tune` applied in order (checked when parsed).
fn tuning(specs: &[String]) -> Tuning {
    let mut t = Tuning::default();
    for spec in specs {
        let _ = t.set(spec);
    }
    t
}
