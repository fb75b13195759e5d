//! The command line of `laya`, one clap parser for every subcommand.
//! `serve` is the Neovim host (src/rpc), `lsp` the Language Server for
//! other editors (src/lsp); the others run the engine directly.
//!
//! A new subcommand is one variant of `Command` (its arguments a struct
//! deriving `clap::Args`) and one arm in `run`.

mod agree;
mod bench;
mod eval;
pub mod options;
pub mod percentiles;
pub mod protocol;
mod user;

use crate::engine::{Engine, Request};
use clap::{Args, Parser, Subcommand};
pub use options::{Backend, Dtype, EngineArgs, SimdArg};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "laya",
    version,
    about = "Predictive typing for Neovim from a small local language model",
    arg_required_else_help = true,
    args_override_self = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// The Neovim host: msgpack-RPC on stdin/stdout (the plugin starts it)
    Serve(crate::rpc::args::ServeArgs),
    /// A Language Server on stdin/stdout (completion and inline completion)
    Lsp(crate::lsp::LspArgs),
    /// The top candidates for TEXT before the cursor
    Predict(PredictArgs),
    /// The predictor line protocol of METRICS.md on stdin/stdout (ksr.py run --cmd)
    Protocol(protocol::ProtocolArgs),
    /// METRICS.md's metrics for a text file, computed natively
    Eval(eval::EvalArgs),
    /// Latency by kind of keystroke, load time and memory, per configuration
    Bench(bench::BenchArgs),
    /// How often a quantized model proposes what the f32 model proposes
    Agree(agree::AgreeArgs),
    /// A model file with random weights for a vocabulary (development)
    RandomModel(RandomModelArgs),
}

/// Parses the command line, runs the subcommand, returns the exit code.
/// `--help` prints usage and exits 0; a bad argument is named, exit 2.
pub fn run() -> i32 {
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Serve(_) | Command::Lsp(_)) {
        ignore_closed_stdout();
        crate::rpc::log::init(crate::rpc::log::Level::Info);
    }
    match cli.command {
        Command::Serve(a) => crate::rpc::serve(a),
        Command::Lsp(a) => crate::lsp::serve(a),
        Command::Predict(a) => predict(&a),
        Command::Protocol(a) => protocol::run(&a),
        Command::Eval(a) => eval::run(&a),
        Command::Bench(a) => bench::run(&a),
        Command::Agree(a) => agree::run(&a),
        Command::RandomModel(a) => random_model(&a),
    }
}

/// Like other Unix tools, end quietly when the reader of stdout goes away
/// (`laya eval ... | head`) instead of panicking in println!.
fn ignore_closed_stdout() {
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[derive(Args, Debug)]
pub struct PredictArgs {
    /// Text before the cursor (\n for a newline)
    pub text: String,
    /// Number of candidates
    #[arg(short = 'k', long = "k", default_value_t = 3)]
    pub k: usize,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Args, Debug)]
pub struct RandomModelArgs {
    /// Vocabulary file (one token a line)
    pub vocab: PathBuf,
    /// The weights file to write
    pub out: PathBuf,
    #[arg(long, value_enum, default_value = "f32")]
    pub dtype: Dtype,
    #[arg(long, default_value_t = 256)]
    pub embed: usize,
    #[arg(long, default_value_t = 512)]
    pub hidden: usize,
}

/// Prints the engine's setup on stderr (what a figure was measured with).
pub(crate) fn describe(label: &str, engine: &Engine) {
    let i = engine.info();
    log::info!(
        "{label}: backend {} ({}) dtype {} model {} vocab {} ({}) words {} kinds {} load {:.1} ms{}{}{}",
        i.backend,
        i.device,
        if i.dtype.is_empty() { "-" } else { &i.dtype },
        i.model_path
            .as_ref()
            .map_or("-".into(), |p| p.display().to_string()),
        i.vocab_path
            .as_ref()
            .map_or("-".into(), |p| p.display().to_string()),
        i.vocab_size,
        i.words_path.as_ref().map_or("-".into(), |p| format!(
            "{} ({})",
            p.display(),
            i.words_count
        )),
        i.kinds_path.as_ref().map_or("-".into(), |p| format!(
            "{} ({})",
            p.display(),
            i.kinds_count
        )),
        i.load_ms,
        i.model_error
            .as_ref()
            .map_or(String::new(), |e| format!("; model not used: {e}")),
        i.words_error
            .as_ref()
            .map_or(String::new(), |e| format!("; word list not used: {e}")),
        i.kinds_error
            .as_ref()
            .map_or(String::new(), |e| format!("; kinds file not used: {e}"))
    );
}

fn predict(a: &PredictArgs) -> i32 {
    let text = a.text.replace("\\n", "\n");
    let mut engine = Engine::new(a.engine.options());
    describe("laya", &engine);
    let t0 = std::time::Instant::now();
    let p = engine.predict(&Request {
        buffer: 1,
        before: &text,
        filetype: "",
        kind: Default::default(),
        k: a.k,
        seen_last: false,
        learn: false,
    });
    let us = t0.elapsed().as_secs_f64() * 1e6;
    println!(
        "prefix {:?}  ghost {:?}  ({us:.0} us, cold)",
        p.prefix, p.ghost
    );
    for (i, c) in p.candidates.iter().enumerate() {
        let replace = if c.replace > 0 {
            format!("  (replaces {} chars)", c.replace)
        } else {
            String::new()
        };
        println!(
            "{:>2}. {:<24} {:.4}  {}{replace}",
            i + 1,
            c.word,
            c.score,
            c.source.as_str()
        );
    }
    0
}

/// Random weights for an existing vocabulary: benchmarks and tests before a
/// trained model exists (its predictions are noise).
fn random_model(a: &RandomModelArgs) -> i32 {
    let made = (|| -> anyhow::Result<()> {
        let text = std::fs::read_to_string(&a.vocab)?;
        let dtype = crate::model::weights::WeightType::parse(a.dtype.as_str())?;
        crate::model::testgen::write_random_weights(&text, &a.out, a.embed, a.hidden, dtype, 1)
    })();
    match made {
        Ok(()) => 0,
        Err(e) => {
            log::error!("laya random-model: {e:#}");
            1
        }
    }
}
