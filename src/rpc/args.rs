//! Command line of `laya serve`: which model, which backend, how much
//! logging, and the switches of the work done between keystrokes.

use super::log::Level;
use crate::cli::options::tuning_value;
use crate::cli::{Backend, SimdArg};
use crate::engine::Tuning;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone, PartialEq)]
pub struct ServeArgs {
    /// Weights file; its vocabulary is STEM.vocab.txt beside it [default: the shipped model]
    #[arg(long, value_name = "PATH")]
    pub model: Option<PathBuf>,
    /// Where the model runs
    #[arg(long, value_enum, default_value_t)]
    pub backend: Backend,
    /// Least severe messages written to the log (stderr)
    #[arg(long, value_name = "error|warn|info|debug", default_value = "info", value_parser = level)]
    pub log_level: Level,
    /// Ranking constants (see engine::Tuning); repeatable
    #[arg(long, value_name = "KEY=VALUE,...", value_parser = tuning_value)]
    pub tune: Vec<String>,
    /// Between keystrokes, no model work ahead of the next keystroke on a
    /// low-priority thread (for A/B measurements)
    #[arg(long)]
    pub no_think_ahead: bool,
    /// No answers to the next keys sent ahead of time (for A/B measurements)
    #[arg(long)]
    pub no_next_keys: bool,
    /// Threads the model may use on a keystroke: with 2 the cpu backend
    /// shares each word boundary's output layer and a far edit's re-read
    /// with a second thread (1: one core for the model, always)
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=2))]
    pub model_threads: u32,
    /// Ghost text is shown when the top candidate's probability reaches
    /// this, in [0, 1] (lower: more ghosts, more of them wrong) [default: 0.12]
    #[arg(long, value_name = "X", value_parser = unit)]
    pub threshold: Option<f32>,
    /// The same where the editor says the cursor is in code [default: 0.05]
    #[arg(long, value_name = "X", value_parser = unit)]
    pub code_threshold: Option<f32>,
    /// Widest SIMD instruction set of the CPU kernels
    #[arg(long, value_enum, default_value_t)]
    pub simd: SimdArg,
    /// Print the version and exit (:checkhealth laya runs this)
    #[arg(short = 'V', long)]
    pub version: bool,
    /// The personal store's folder [default: none, what is learnt lives in memory until exit]
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
    /// Learn the suggestions the user types past: a word shown after a
    /// previous word and typed past 3 times there, and never written
    /// there, moves down in later buffers and sessions (kept in the
    /// personal store)
    #[arg(long)]
    pub learn_rejections: bool,
    /// Bound on the personal store's size
    #[arg(long, value_name = "MB", default_value_t = 16.0, value_parser = positive)]
    pub store_max_mb: f64,
    /// Largest message read from Neovim; a larger one is skipped unread
    /// (a request gets an error) [the plugin's largest is about 33 KB]
    #[arg(long, value_name = "MB", default_value_t = DEFAULT_MAX_MESSAGE_MB, value_parser = positive)]
    pub max_message_mb: f64,
    /// A message still incomplete this long means the input lost a message
    /// boundary: the host exits with code 3 and the plugin starts a fresh
    /// one (Neovim writes each message whole)
    #[arg(long, value_name = "MS", default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    pub incomplete_message_ms: u64,
}

/// The default of `--max-message-mb` (see `framing::DEFAULT_MAX_MESSAGE_BYTES`).
const DEFAULT_MAX_MESSAGE_MB: f64 = (super::framing::DEFAULT_MAX_MESSAGE_BYTES >> 20) as f64;

fn positive(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|m| *m > 0.0 && m.is_finite())
        .ok_or_else(|| "expected a positive number".to_string())
}

fn unit(s: &str) -> Result<f32, String> {
    s.parse::<f32>()
        .ok()
        .filter(|x| (0.0..=1.0).contains(x))
        .ok_or_else(|| "expected a number in [0, 1]".to_string())
}

fn level(s: &str) -> Result<Level, String> {
    Level::parse(s).ok_or_else(|| "expected error, warn, info or debug".to_string())
}

impl ServeArgs {
    /// The personal store's size bound in bytes.
    pub fn store_max_bytes(&self) -> usize {
        (self.store_max_mb * (1u64 << 20) as f64) as usize
    }

    /// The cap on incoming messages in bytes.
    pub fn max_message_bytes(&self) -> usize {
        (self.max_message_mb * (1u64 << 20) as f64) as usize
    }

    /// The ranking constants, `--tune` applied in order.
    pub fn tuning(&self) -> Tuning {
        let mut t = Tuning::default();
        if self.learn_rejections {
            t.rejected = crate::engine::REJECTED_KEEPS;
        }
        for spec in &self.tune {
            // Checked when parsed.
            let _ = t.set(spec);
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn parse(v: &[&str]) -> Result<ServeArgs, String> {
        let argv = ["laya", "serve"].iter().chain(v);
        match Cli::try_parse_from(argv)
            .map_err(|e| e.to_string())?
            .command
        {
            Command::Serve(a) => Ok(a),
            other => Err(format!("not serve: {other:?}")),
        }
    }

    #[test]
    fn defaults_and_flags() {
        let a = parse(&[]).unwrap();
        assert_eq!(a.backend, Backend::Auto);
        assert_eq!(a.model, None);
        assert!(!a.no_think_ahead && !a.no_next_keys);
        assert_eq!(a.tuning().rejected, 1.0);
        let on = parse(&["--learn-rejections"]).unwrap().tuning();
        assert_eq!(on.rejected, crate::engine::REJECTED_KEEPS);
        assert_eq!(
            a.max_message_bytes(),
            crate::rpc::framing::DEFAULT_MAX_MESSAGE_BYTES
        );
        assert_eq!(
            parse(&["--max-message-mb", "0.5"])
                .unwrap()
                .max_message_bytes(),
            1 << 19
        );
        assert!(parse(&["--max-message-mb", "0"]).is_err());
        assert_eq!(a.incomplete_message_ms, 2000);
        assert_eq!(
            parse(&["--incomplete-message-ms", "250"])
                .unwrap()
                .incomplete_message_ms,
            250
        );
        assert!(parse(&["--incomplete-message-ms", "0"]).is_err());
        let a = parse(&[
            "--model",
            "m.safetensors",
            "--backend=cpu",
            "--log-level",
            "debug",
            "--no-next-keys",
        ])
        .unwrap();
        assert_eq!(a.model, Some(PathBuf::from("m.safetensors")));
        assert_eq!(a.backend, Backend::Cpu);
        assert_eq!(a.log_level, Level::Debug);
        assert!(a.no_next_keys);
        assert_eq!(parse(&["--threshold", "0.2"]).unwrap().threshold, Some(0.2));
        assert!(parse(&["--threshold", "2"]).is_err());
        assert_eq!(
            parse(&["--code-threshold", "0.1"]).unwrap().code_threshold,
            Some(0.1)
        );
        assert!(parse(&["--code-threshold", "-1"]).is_err());
        let a = parse(&["--tune=typed_past=0"]).unwrap();
        assert_eq!(a.tuning().give_way, crate::engine::GiveWay::Off);
        assert_eq!(
            parse(&[]).unwrap().tuning().give_way,
            crate::engine::GiveWay::MovedLast
        );
    }

    #[test]
    fn bad_flags_are_errors_that_name_them() {
        let e = parse(&["--backend", "gpu"]).unwrap_err();
        assert!(e.contains("gpu") && e.contains("cpu"), "{e}");
        assert!(parse(&["--model"]).unwrap_err().contains("--model"));
        assert!(parse(&["--frobnicate"])
            .unwrap_err()
            .contains("--frobnicate"));
        assert!(parse(&["--tune", "typed_thru=0"])
            .unwrap_err()
            .contains("unknown tuning key"));
    }
}
