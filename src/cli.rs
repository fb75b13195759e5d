//! The engine's command line: predict | protocol | eval | bench | --version.
//! (`serve`, the Neovim host, is dispatched by main.rs to src/rpc.)

mod agree;
mod bench;
mod eval;
mod protocol;

use crate::engine::{Engine, EngineOptions, Request};
use std::path::PathBuf;

const USAGE: &str = "usage: laya serve                      the Neovim host (msgpack-RPC on stdio)
       laya predict [OPTIONS] TEXT     top-k for TEXT before the cursor (\\n for newlines)
       laya protocol [OPTIONS]         METRICS.md line protocol on stdin/stdout (ksr.py --cmd) [--no-think-ahead]
       laya eval [OPTIONS] FILE        METRICS.md metrics natively [--json --window W --block-chars N --every N --offset N]
       laya bench [OPTIONS] [FILE]     latency by keystroke kind, load, RSS [--keystrokes N --window W --config=cpu:int8 --next-keys ...]
       laya agree FILE --dtype D       quantized vs f32 top-1/top-3 agreement [--other=PATH --positions N]
       laya random-model VOCAB OUT     random weights for a vocabulary (development)
       laya --version
options: --model PATH  --backend auto|cpu|mlx  --dtype f32|bf16|int8  --no-model  --threshold X  -k N
         --ghost-words N  --tune key=value,...";

/// Runs a CLI subcommand; returns the process exit code.
pub fn run(args: &[String]) -> i32 {
    // Like other Unix tools, end quietly when the reader of stdout goes away
    // (`laya eval ... | head`) instead of panicking in println!.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let Some(cmd) = args.first() else {
        eprintln!("{USAGE}");
        return 2;
    };
    let parsed = match Opts::parse(&args[1..]) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("laya {cmd}: {e}\n{USAGE}");
            return 2;
        }
    };
    match cmd.as_str() {
        "--version" | "-V" | "version" => {
            println!("laya {}", env!("CARGO_PKG_VERSION"));
            0
        }
        "--help" | "-h" | "help" => {
            println!("{USAGE}");
            0
        }
        "predict" => predict(&parsed),
        "protocol" => protocol::run(&parsed),
        "eval" => eval::run(&parsed),
        "bench" => bench::run(&parsed, &args[1..]),
        "agree" => agree::run(&parsed),
        "random-model" => random_model(&parsed),
        other => {
            eprintln!("laya: unknown command {other:?}\n{USAGE}");
            2
        }
    }
}

/// Options shared by the subcommands.
pub(crate) struct Opts {
    pub engine: EngineOptions,
    pub k: usize,
    pub positional: Vec<String>,
    pub flags: Vec<String>,
    pub numbers: Vec<(String, usize)>,
}

impl Opts {
    fn parse(args: &[String]) -> Result<Opts, String> {
        let mut o = Opts {
            engine: EngineOptions::default(),
            k: 3,
            positional: Vec::new(),
            flags: Vec::new(),
            numbers: Vec::new(),
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = |name: &str| it.next().cloned().ok_or(format!("{name} needs a value"));
            match a.as_str() {
                "--model" => o.engine.model_path = Some(PathBuf::from(value(a)?)),
                "--backend" => o.engine.backend = value(a)?,
                "--dtype" => o.engine.dtype = Some(value(a)?),
                "--no-model" => o.engine.neural = false,
                "--threshold" => {
                    let v = value(a)?;
                    o.engine.threshold = Some(
                        v.parse()
                            .map_err(|_| format!("--threshold {v}: not a number"))?,
                    )
                }
                "--tune" => o.engine.tuning.set(&value(a)?)?,
                "--ghost-words" => {
                    o.flags.push("--ghost-words".into());
                    let v = value(a)?;
                    o.engine.ghost_words = v
                        .parse()
                        .map_err(|_| format!("--ghost-words {v}: not a number"))?
                }
                "-k" | "--k" => {
                    let v = value(a)?;
                    o.k = v.parse().map_err(|_| format!("-k {v}: not a number"))?
                }
                "--window" | "--block-chars" | "--every" | "--offset" | "--keystrokes"
                | "--embed" | "--hidden" | "--positions" => {
                    let v = value(a)?;
                    o.numbers.push((
                        a.clone(),
                        v.parse().map_err(|_| format!("{a} {v}: not a number"))?,
                    ))
                }
                s if s.starts_with("--") => o.flags.push(s.to_string()),
                _ => o.positional.push(a.clone()),
            }
        }
        Ok(o)
    }
}

impl Opts {
    /// A numeric option's value, or its default.
    pub fn num(&self, name: &str, default: usize) -> Result<usize, String> {
        Ok(self
            .numbers
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map_or(default, |x| x.1))
    }
}

/// Prints the engine's setup on stderr (what a figure was measured with).
pub(crate) fn describe(engine: &Engine) {
    let i = engine.info();
    eprintln!(
        "laya: backend {} ({}) dtype {} model {} vocab {} ({}) words {} load {:.1} ms{}{}",
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
        i.load_ms,
        i.model_error
            .as_ref()
            .map_or(String::new(), |e| format!("; model not used: {e}")),
        i.words_error
            .as_ref()
            .map_or(String::new(), |e| format!("; word list not used: {e}"))
    );
}

fn predict(o: &Opts) -> i32 {
    let Some(text) = o.positional.first() else {
        eprintln!("laya predict: give the text before the cursor\n{USAGE}");
        return 2;
    };
    let text = text.replace("\\n", "\n");
    let mut engine = Engine::new(o.engine.clone());
    describe(&engine);
    let t0 = std::time::Instant::now();
    let p = engine.predict(&Request {
        buffer: 1,
        before: &text,
        after: "",
        filetype: "",
        k: o.k,
        seen_last: false,
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

/// `laya random-model VOCAB OUT.safetensors [--dtype D] [--embed E] [--hidden H]`:
/// a model file with random weights for an existing vocabulary (development
/// and benchmarks before a trained model exists; predictions are noise).
fn random_model(o: &Opts) -> i32 {
    let (Some(vocab), Some(out)) = (o.positional.first(), o.positional.get(1)) else {
        eprintln!("usage: laya random-model VOCAB.txt OUT.safetensors [--dtype f32|bf16|int8] [--embed 256] [--hidden 512]");
        return 2;
    };
    let made = (|| -> anyhow::Result<()> {
        let text = std::fs::read_to_string(vocab)?;
        let dtype =
            crate::model::weights::WeightType::parse(o.engine.dtype.as_deref().unwrap_or("f32"))?;
        let (e, h) = (
            o.num("--embed", 256).map_err(anyhow::Error::msg)?,
            o.num("--hidden", 512).map_err(anyhow::Error::msg)?,
        );
        crate::model::testgen::write_random_weights(
            &text,
            std::path::Path::new(out),
            e,
            h,
            dtype,
            1,
        )
    })();
    match made {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("laya random-model: {e:#}");
            1
        }
    }
}
